#include "graph/onnx/onnx_import.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "base/path_inside.h"
#include "graph/infer/shape_inference.h"
#include "graph/onnx/expand_quantization.h"
#include "graph/onnx/expand_recurrent.h"
#include "graph/onnx/expand_training_ops.h"
#include "graph/onnx/inline_onnx_functions.h"
#include "graph/ir/op_registry.h"
#include "graph/onnx/tensor_proto.h"
#include "onnx/checker.h"
#include "onnx/onnx_pb.h"

namespace tessel {
namespace {

/// Converts one GraphProto; nested graphs recurse through the same importer.
class GraphImporter {
 public:
  GraphImporter(std::string base_dir, int64_t opset) : base_dir_(std::move(base_dir)), opset_(opset) {}

  Graph import(const onnx::GraphProto &proto) {
    Graph graph;
    graph.name = proto.name();
    graph.opset = opset_;
    std::unordered_map<std::string, int> ids;
    auto tensor_id = [&](const std::string &name) {
      auto it = ids.find(name);
      if (it != ids.end()) return it->second;
      int id = graph.add_tensor(TensorInfo{name, TensorType{}, std::nullopt});
      ids[name] = id;
      return id;
    };

    for (const auto &init : proto.initializer()) {
      auto t = tensor_from_proto(init, base_dir_);
      if (!t.ok()) throw TesselException("initializer: " + t.error().message);
      int id = tensor_id(init.name());
      graph.tensors[id].type = t->type();
      graph.tensors[id].constant = std::move(t.value());
    }
    if (proto.sparse_initializer_size() > 0)
      throw TesselException("sparse initializers are not supported");
    for (const auto &input : proto.input()) {
      int id = tensor_id(input.name());
      if (graph.tensors[id].constant) continue;  // an initializer listed as input
      graph.tensors[id].type = value_info_type(input);
      graph.inputs.push_back(id);
    }
    for (const auto &node_proto : proto.node()) {
      Node node;
      node.op_type = node_proto.op_type();
      node.name = node_proto.name();
      node.domain = node_proto.domain() == "ai.onnx" ? "" : node_proto.domain();
      for (const auto &attr : node_proto.attribute()) {
        if (!attr.ref_attr_name().empty())
          throw TesselException("node '" + node.name + "': attribute references are not supported");
        node.attributes.set(attr.name(), attribute_value(attr, node));
      }
      std::vector<int> ins, outs;
      for (const auto &name : node_proto.input()) ins.push_back(name.empty() ? kNoTensor : tensor_id(name));
      for (const auto &name : node_proto.output()) outs.push_back(name.empty() ? kNoTensor : tensor_id(name));
      if (node.name.empty())
        node.name = node.op_type + "_" + std::to_string(graph.nodes.size());
      graph.add_node(std::move(node), std::move(ins), std::move(outs));
    }
    for (const auto &output : proto.output()) {
      int id = tensor_id(output.name());
      TensorType declared = value_info_type(output);
      if (graph.tensors[id].type.dtype == DType::Undefined) graph.tensors[id].type = declared;
      graph.outputs.push_back(id);
    }
    for (const auto &vi : proto.value_info()) {
      auto it = ids.find(vi.name());
      if (it != ids.end() && graph.tensors[it->second].type.dtype == DType::Undefined &&
          vi.type().has_tensor_type())
        graph.tensors[it->second].type = value_info_type(vi);
    }
    return graph;
  }

 private:
  /// A declared shape a tensor can have: no negative dimension, an element count and a
  /// size in bytes that 64 bits hold and no machine's memory is short of by a factor of
  /// thousands (2^48 bytes). These used to abort or wrap around far from the model.
  static void check_declared_shape(const std::string &name, const TensorType &type) {
    constexpr int64_t kMostBytes = int64_t{1} << 48;
    // Strings and undefined types have no fixed size: count their elements as bytes.
    const int64_t element_bytes =
        type.dtype == DType::Undefined ? 1 : std::max<int64_t>(1, static_cast<int64_t>(dtype_size(type.dtype)));
    int64_t elements = 1;
    bool overflow = false;
    for (int64_t d : type.shape) {
      if (d == kUnknownDim) continue;
      if (d < 0)
        throw TesselException("value '" + name + "' declares a negative dimension (" + std::to_string(d) + ")");
      if (d != 0 && elements > std::numeric_limits<int64_t>::max() / d) overflow = true;
      else elements *= d;
    }
    if (overflow || elements > kMostBytes / element_bytes)
      throw TesselException("value '" + name + "' declares a shape " + shape_to_string(type.shape) + " that is too large (" +
                            (overflow ? std::string("its element count overflows 64 bits")
                                      : std::to_string(elements) + " elements") + ")");
  }

  TensorType value_info_type(const onnx::ValueInfoProto &vi) {
    // A value with no type at all (allowed inside bodies) is simply not known yet.
    if (vi.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) return TensorType{DType::Undefined, {}, false};
    if (!vi.type().has_tensor_type())
      throw TesselException("value '" + vi.name() +
                            "' is not a tensor (sequence, map and optional values are not supported)");
    const auto &tt = vi.type().tensor_type();
    TensorType type;
    type.dtype = dtype_from_onnx(tt.elem_type());
    if (!tt.has_shape()) {
      type.rank_known = false;
      return type;
    }
    for (const auto &dim : tt.shape().dim())
      type.shape.push_back(dim.has_dim_value() ? dim.dim_value() : kUnknownDim);
    check_declared_shape(vi.name(), type);
    return type;
  }

  AttributeValue attribute_value(const onnx::AttributeProto &attr, const Node &node) {
    using A = onnx::AttributeProto;
    auto tensor = [&](const onnx::TensorProto &tp) {
      auto t = tensor_from_proto(tp, base_dir_);
      if (!t.ok())
        throw TesselException("node '" + node.name + "' attribute '" + attr.name() + "': " +
                              t.error().message);
      return t.value();
    };
    switch (attr.type()) {
      case A::INT: return static_cast<int64_t>(attr.i());
      case A::FLOAT: return attr.f();
      case A::STRING: return attr.s();
      case A::TENSOR: return tensor(attr.t());
      case A::GRAPH: return std::make_shared<const Graph>(GraphImporter(base_dir_, opset_).import(attr.g()));
      case A::INTS: return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
      case A::FLOATS: return std::vector<float>(attr.floats().begin(), attr.floats().end());
      case A::STRINGS: return std::vector<std::string>(attr.strings().begin(), attr.strings().end());
      case A::TENSORS: {
        std::vector<Tensor> ts;
        for (const auto &tp : attr.tensors()) ts.push_back(tensor(tp));
        return ts;
      }
      case A::GRAPHS: {
        std::vector<std::shared_ptr<const Graph>> gs;
        for (const auto &g : attr.graphs())
          gs.push_back(std::make_shared<const Graph>(GraphImporter(base_dir_, opset_).import(g)));
        return gs;
      }
      default:
        throw TesselException("node '" + node.name + "' attribute '" + attr.name() +
                              "' has an unsupported kind (" + std::to_string(attr.type()) + ")");
    }
  }

  std::string base_dir_;
  int64_t opset_;
};

/// Points every external-data location in `graph` (nested graphs included) at its real
/// path inside `base_dir`: the ONNX checker looks the files up itself, relative to the
/// current directory. Fails on a location outside the model's folder.
void anchor_external_data(onnx::GraphProto &graph, const std::string &base_dir) {
  const auto anchor = [&](onnx::TensorProto &tensor) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return;
    for (auto &entry : *tensor.mutable_external_data()) {
      if (entry.key() != "location") continue;
      auto real = resolve_inside(base_dir, entry.value(), "tensor '" + tensor.name() + "': external data file");
      if (!real.ok()) throw TesselException(real.error().message);
      entry.set_value(real.value());
    }
  };
  for (auto &tensor : *graph.mutable_initializer()) anchor(tensor);
  for (auto &node : *graph.mutable_node())
    for (auto &attribute : *node.mutable_attribute()) {
      if (attribute.has_t()) anchor(*attribute.mutable_t());
      for (auto &tensor : *attribute.mutable_tensors()) anchor(tensor);
      if (attribute.has_g()) anchor_external_data(*attribute.mutable_g(), base_dir);
      for (auto &body : *attribute.mutable_graphs()) anchor_external_data(body, base_dir);
    }
}

bool has_external_data(const onnx::GraphProto &graph) {
  for (const auto &tensor : graph.initializer())
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL) return true;
  for (const auto &node : graph.node())
    for (const auto &attribute : node.attribute()) {
      if (attribute.has_t() && attribute.t().data_location() == onnx::TensorProto::EXTERNAL) return true;
      for (const auto &tensor : attribute.tensors())
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL) return true;
      if (attribute.has_g() && has_external_data(attribute.g())) return true;
      for (const auto &body : attribute.graphs())
        if (has_external_data(body)) return true;
    }
  return false;
}

std::string folder_of(const std::string &path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

Result<Graph> import_onnx_bytes(const std::string &bytes, const std::string &base_dir,
                                bool run_checker) {
  onnx::ModelProto model;
  if (bytes.empty()) return make_error(ErrorKind::InvalidInput, "the file is empty");
  if (!model.ParseFromString(bytes))
    return make_error(ErrorKind::InvalidInput, "not a valid ONNX model (the protobuf is truncated or corrupt)");
  if (!model.has_graph()) return make_error(ErrorKind::InvalidInput, "not a valid ONNX model (it has no graph)");
  if (run_checker) {
    std::optional<onnx::ModelProto> anchored;
    if (has_external_data(model.graph())) {
      anchored = model;  // only the protobuf: external weights stay in their files
      try {
        anchor_external_data(*anchored->mutable_graph(), base_dir);
      } catch (const TesselException &e) {
        return make_error(e.what());
      }
    }
    try {
      onnx::checker::check_model(anchored ? *anchored : model);
    } catch (const std::exception &e) {
      std::string msg = e.what();
      // The checker appends a multi-line dump of the offending proto; keep the first line.
      auto nl = msg.find('\n');
      return make_error(ErrorKind::InvalidInput, "the ONNX checker rejects the model: " + msg.substr(0, nl));
    }
  }
  int64_t opset = 0;
  for (const auto &op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
  try {
    inline_onnx_functions(model, [](const std::string &op) { return find_op_schema(op) != nullptr; }, run_checker);
    Graph graph = GraphImporter(base_dir, opset).import(model.graph());
    graph.topological_order();  // reject cycles now, with the node's name
    auto training_expanded = expand_training_ops(std::move(graph));
    if (!training_expanded.ok()) return training_expanded.error();
    auto recurrent_expanded = expand_recurrent_ops(std::move(training_expanded).value());
    if (!recurrent_expanded.ok()) return recurrent_expanded.error();
    return expand_quantized_ops(std::move(recurrent_expanded).value());
  } catch (const std::exception &e) {
    return make_error(e.what());
  }
}

Result<Graph> import_onnx_file(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return make_error(ErrorKind::NotFound, path + ": cannot open file");
  std::stringstream buffer;
  buffer << file.rdbuf();
  auto graph = import_onnx_bytes(buffer.str(), folder_of(path));
  if (!graph.ok()) return make_error(graph.error().kind, path + ": " + graph.error().message);
  return graph;
}

Result<Graph> load_model(const std::string &path) {
  auto graph = import_onnx_file(path);
  if (!graph.ok()) return graph.error();
  auto inferred = infer_shapes(std::move(graph.value()));
  if (!inferred.ok()) return make_error(inferred.error().kind, path + ": " + inferred.error().message);
  return inferred;
}

}  // namespace tessel
