#include "deploy/host_program.h"

#include <limits>

#include <cstring>

#include "base/json.h"
#include "deploy/execution_plan.h"

namespace tessel::deploy {

namespace {

// ---- writing ------------------------------------------------------------------------------

uint32_t float_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::string hex_of(const void *data, size_t bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (size_t i = 0; i < bytes; ++i) {
    const uint8_t b = static_cast<const uint8_t *>(data)[i];
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Json tensor_json(const Tensor &t) {
  Json j;
  j["dtype"] = dtype_name(t.dtype());
  j["shape"] = t.shape();
  j["hex"] = hex_of(t.data(), t.bytes());
  return j;
}

Json graph_json(const Graph &g);

Json attribute_json(const AttributeValue &value) {
  Json j;
  std::visit(
      [&](const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) j["int"] = v;
        else if constexpr (std::is_same_v<T, float>) j["float_bits"] = float_bits(v);
        else if constexpr (std::is_same_v<T, std::string>) j["string"] = hex_of(v.data(), v.size());
        else if constexpr (std::is_same_v<T, Tensor>) j["tensor"] = tensor_json(v);
        else if constexpr (std::is_same_v<T, std::shared_ptr<const Graph>>) j["graph"] = graph_json(*v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) j["ints"] = v;
        else if constexpr (std::is_same_v<T, std::vector<float>>) {
          Json list = Json::array();
          for (float f : v) list.push_back(float_bits(f));
          j["floats_bits"] = list;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          Json list = Json::array();
          for (const std::string &s : v) list.push_back(hex_of(s.data(), s.size()));
          j["strings"] = list;
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          Json list = Json::array();
          for (const Tensor &t : v) list.push_back(tensor_json(t));
          j["tensors"] = list;
        } else {
          Json list = Json::array();
          for (const auto &g : v) list.push_back(graph_json(*g));
          j["graphs"] = list;
        }
      },
      value);
  return j;
}

Json node_json(const Node &node) {
  Json j;
  j["op"] = node.op_type;
  j["name"] = node.name;
  j["domain"] = node.domain;
  j["attributes"] = Json::object();
  for (const auto &[name, value] : node.attributes.all()) j["attributes"][name] = attribute_json(value);
  return j;
}

Json graph_json(const Graph &g) {
  Json j;
  j["name"] = g.name;
  j["opset"] = g.opset;
  j["tensors"] = Json::array();
  for (const TensorInfo &t : g.tensors) {
    Json tj;
    tj["name"] = t.name;
    tj["dtype"] = dtype_name(t.type.dtype);
    tj["rank_known"] = t.type.rank_known;
    tj["shape"] = t.type.shape;
    if (t.constant) tj["constant"] = tensor_json(*t.constant);
    j["tensors"].push_back(tj);
  }
  j["nodes"] = Json::array();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    Json nj = node_json(g.nodes[n]);
    nj["inputs"] = g.node_inputs[n];
    nj["outputs"] = g.node_outputs[n];
    j["nodes"].push_back(nj);
  }
  j["inputs"] = g.inputs;
  j["outputs"] = g.outputs;
  return j;
}

// ---- reading ------------------------------------------------------------------------------
// nlohmann's checked accessors throw on a wrong kind or a missing key; parse_host_program
// turns that into an error, and everything nlohmann does not check is checked here.

std::string bytes_of_hex(const std::string &hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw TesselException("bad hex digit '" + std::string(1, c) + "'");
  };
  if (hex.size() % 2) throw TesselException("hex text of odd length");
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(digit(hex[2 * i]) * 16 + digit(hex[2 * i + 1]));
  return out;
}

DType dtype_of(const Json &j) {
  const std::string name = j.get<std::string>();
  if (name == dtype_name(DType::Undefined)) return DType::Undefined;
  std::optional<DType> d = parse_artifact_dtype(name);
  if (!d) throw TesselException("unknown dtype \"" + name + "\"");
  return *d;
}

/// A JSON integer, exactly: a float (1e89, 2.5) is refused rather than converted, which for
/// values out of range is undefined behaviour.
int64_t int64_of(const Json &v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) throw TesselException("integer out of range");
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  throw TesselException("expected an integer, found " + std::string(v.type_name()));
}

int64_t int64_in(const Json &v, int64_t lo, int64_t hi) {
  const int64_t x = int64_of(v);
  if (x < lo || x > hi) throw TesselException("integer " + std::to_string(x) + " out of range");
  return x;
}

std::vector<int64_t> int64s_of(const Json &v) {
  if (!v.is_array()) throw TesselException("expected a list of integers");
  std::vector<int64_t> out;
  for (const Json &x : v) out.push_back(int64_of(x));
  return out;
}

uint32_t bits_of(const Json &v) {
  return static_cast<uint32_t>(int64_in(v, 0, std::numeric_limits<uint32_t>::max()));
}

Tensor tensor_of(const Json &j) {
  const DType dtype = dtype_of(j.at("dtype"));
  const Shape shape = int64s_of(j.at("shape"));
  if (!artifact_tensor_bytes(dtype, shape)) throw TesselException("tensor of a bad shape");
  const std::string bytes = bytes_of_hex(j.at("hex").get<std::string>());
  Tensor t(dtype, shape);
  if (bytes.size() != t.bytes())
    throw TesselException("tensor of " + std::to_string(t.bytes()) + " bytes holds " + std::to_string(bytes.size()));
  if (!bytes.empty()) std::memcpy(t.data(), bytes.data(), bytes.size());
  return t;
}

std::shared_ptr<const Graph> graph_of(const Json &j, int depth);

AttributeValue attribute_of(const Json &j, int depth) {
  if (!j.is_object() || j.size() != 1) throw TesselException("an attribute is an object with one typed member");
  const std::string kind = j.begin().key();
  const Json &v = j.begin().value();
  if (kind == "int") return int64_of(v);
  if (kind == "float_bits") return float_from_bits(bits_of(v));
  if (kind == "string") return bytes_of_hex(v.get<std::string>());
  if (kind == "tensor") return tensor_of(v);
  if (kind == "graph") return graph_of(v, depth + 1);
  if (kind == "ints") return int64s_of(v);
  if (kind == "floats_bits") {
    std::vector<float> out;
    for (const Json &b : v) out.push_back(float_from_bits(bits_of(b)));
    return out;
  }
  if (kind == "strings") {
    std::vector<std::string> out;
    for (const Json &s : v) out.push_back(bytes_of_hex(s.get<std::string>()));
    return out;
  }
  if (kind == "tensors") {
    std::vector<Tensor> out;
    for (const Json &t : v) out.push_back(tensor_of(t));
    return out;
  }
  if (kind == "graphs") {
    std::vector<std::shared_ptr<const Graph>> out;
    for (const Json &g : v) out.push_back(graph_of(g, depth + 1));
    return out;
  }
  throw TesselException("unknown attribute kind \"" + kind + "\"");
}

Node node_of(const Json &j, int depth) {
  Node node;
  node.op_type = j.at("op").get<std::string>();
  node.name = j.at("name").get<std::string>();
  node.domain = j.at("domain").get<std::string>();
  for (const auto &[name, value] : j.at("attributes").items()) node.attributes.set(name, attribute_of(value, depth));
  return node;
}

std::shared_ptr<const Graph> graph_of(const Json &j, int depth) {
  // Bodies nest a few levels in real models; a deeper file is malformed, not a model.
  if (depth > 32) throw TesselException("bodies nested more than 32 deep");
  auto g = std::make_shared<Graph>();
  g->name = j.at("name").get<std::string>();
  g->opset = int64_in(j.at("opset"), 0, 1000);
  for (const Json &tj : j.at("tensors")) {
    TensorInfo info;
    info.name = tj.at("name").get<std::string>();
    info.type.dtype = dtype_of(tj.at("dtype"));
    info.type.rank_known = tj.at("rank_known").get<bool>();
    info.type.shape = int64s_of(tj.at("shape"));
    if (json_find(tj, "constant")) info.constant = tensor_of(tj.at("constant"));
    g->add_tensor(std::move(info));
  }
  const int count = static_cast<int>(g->tensors.size());
  auto ids = [&](const Json &list, bool allow_omitted) {
    if (!list.is_array()) throw TesselException("expected a list of tensor ids");
    std::vector<int> out;
    for (const Json &id : list) out.push_back(static_cast<int>(int64_in(id, kNoTensor, count)));
    for (int t : out)
      if ((t < 0 && !(allow_omitted && t == kNoTensor)) || t >= count)
        throw TesselException("tensor id " + std::to_string(t) + " is outside the body's " + std::to_string(count));
    return out;
  };
  for (const Json &nj : j.at("nodes")) {
    std::vector<int> outputs = ids(nj.at("outputs"), true);
    for (int t : outputs)
      if (t != kNoTensor && g->tensor_producer[t] >= 0)
        throw TesselException("tensor " + std::to_string(t) + " has two producers");
    g->add_node(node_of(nj, depth), ids(nj.at("inputs"), true), std::move(outputs));
  }
  g->inputs = ids(j.at("inputs"), false);
  g->outputs = ids(j.at("outputs"), false);
  g->topological_order();  // throws on a cycle
  return g;
}

}  // namespace

std::string to_json(const HostProgram &program) {
  Json j;
  j["format"] = "tessel-host-program";
  j["opset"] = program.opset;
  j["nodes"] = Json::array();
  for (const HostNode &h : program.nodes) {
    Json nj = node_json(h.node);
    nj["captures"] = h.captures;
    j["nodes"].push_back(nj);
  }
  return dump_json(j, -1) + "\n";
}

Result<HostProgram> parse_host_program(const std::string &text) {
  Result<Json> parsed = parse_json(text);
  if (!parsed.ok()) return make_error(ErrorKind::InvalidInput, "host.json: " + parsed.error().message);
  try {
    const Json &j = parsed.value();
    if (!j.is_object() || j.value("format", "") != "tessel-host-program")
      return make_error(ErrorKind::InvalidInput, "host.json: not a tessel host program");
    HostProgram program;
    program.opset = int64_in(j.at("opset"), 0, 1000);
    for (const Json &nj : j.at("nodes")) {
      HostNode h;
      h.node = node_of(nj, 0);
      h.captures = nj.at("captures").get<std::vector<std::string>>();
      program.nodes.push_back(std::move(h));
    }
    return program;
  } catch (const std::exception &e) {
    return make_error(ErrorKind::InvalidInput, std::string("host.json: ") + e.what());
  }
}

}  // namespace tessel::deploy
