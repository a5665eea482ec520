#include "graph/fusion/workload_graph.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"

namespace tessel {

namespace {

const DType kNamedDTypes[] = {DType::Float32, DType::UInt8,   DType::Int8,    DType::UInt16,  DType::Int16,
                              DType::Int32,   DType::Int64,   DType::Bool,    DType::Float16, DType::Float64,
                              DType::UInt32,  DType::UInt64,  DType::BFloat16};

/// A cursor over the text; every failure names the byte offset.
class WorkloadParser {
 public:
  explicit WorkloadParser(const std::string &text) : text_(text) {}

  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  Result<void> expect(char c) {
    if (accept(c)) return {};
    return fail(std::string("expected '") + c + "'");
  }
  Error fail(const std::string &what) const {
    const std::string near = text_.substr(pos_, 24);
    return make_error(ErrorKind::InvalidInput, "workload text, offset " + std::to_string(pos_) + ": " + what +
                                               (near.empty() ? " at the end" : " near \"" + near + "\""));
  }

  /// Letters, digits and '_' (op types, tensor names, attribute names).
  std::string identifier() {
    const size_t start = pos_;
    while (!done() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  /// Everything up to (not including) the first character in `stops`.
  std::string until_any(const char *stops) {
    const size_t start = pos_;
    while (!done() && !std::strchr(stops, peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  /// "float32[1,64,56,56]" (TensorType::to_string).
  Result<TensorType> tensor_type() {
    const std::string name = identifier();
    DType dtype = DType::Undefined;
    for (DType d : kNamedDTypes)
      if (dtype_name(d) == name) dtype = d;
    if (dtype == DType::Undefined) return fail("unknown element type '" + name + "'");
    if (auto ok = expect('['); !ok.ok()) return ok.error();
    TensorType type{dtype, {}, true};
    if (accept(']')) return type;
    do {
      if (peek() == '?' || peek() == '*') return fail("the workload has a dimension that is not static");
      auto dim = integer();
      if (!dim.ok()) return dim.error();
      type.shape.push_back(dim.value());
    } while (accept(','));
    if (auto ok = expect(']'); !ok.ok()) return ok.error();
    // Every later size computation may then multiply dims without overflowing.
    if (auto bytes = checked_tensor_bytes(dtype, type.shape); !bytes.ok()) return fail(bytes.error().message);
    return type;
  }

  Result<int64_t> integer() {
    const std::string word = until_any(",;]}){");
    char *end = nullptr;
    errno = 0;
    const long long value = std::strtoll(word.c_str(), &end, 10);
    if (word.empty() || *end != '\0') return fail("expected an integer, got '" + word + "'");
    if (errno == ERANGE) return fail("integer " + word + " does not fit in 64 bits");
    return static_cast<int64_t>(value);
  }

  /// A float as "%a" prints it (also inf/nan).
  Result<double> real() {
    const std::string word = until_any(",;]}");
    char *end = nullptr;
    const double value = std::strtod(word.c_str(), &end);
    if (word.empty() || *end != '\0') return fail("expected a number, got '" + word + "'");
    return value;
  }

  /// "float32[2]{0x1p+0,0x1.8p+1}" (tensor_canonical_text).
  Result<Tensor> tensor_value() {
    auto type = tensor_type();
    if (!type.ok()) return type.error();
    // Each element is written out, so a tensor cannot hold more elements than the text has bytes.
    if (shape_numel(type->shape) > static_cast<int64_t>(text_.size() - pos_) + 1)
      return fail("a tensor of " + std::to_string(shape_numel(type->shape)) + " elements in " +
                  std::to_string(text_.size()) + " bytes of text");
    Tensor tensor(type->dtype, type->shape);
    if (auto ok = expect('{'); !ok.ok()) return ok.error();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (i > 0)
        if (auto ok = expect(','); !ok.ok()) return ok.error();
      if (dtype_is_float(tensor.dtype())) {
        auto value = real();
        if (!value.ok()) return value.error();
        tensor.set_element_from_double(i, value.value());
      } else {
        auto value = integer();
        if (!value.ok()) return value.error();
        set_integer_element(tensor, i, value.value());
      }
    }
    if (auto ok = expect('}'); !ok.ok()) return ok.error();
    return tensor;
  }

  /// One attribute value in Attributes::canonical_text form. Floats print as hex ("0x1p-1"),
  /// so a word with an 'x', a 'p' or inf/nan is a float and a plain one an integer.
  Result<AttributeValue> attribute_value() {
    if (peek() == '"') {
      auto text = quoted();
      if (!text.ok()) return text.error();
      return AttributeValue{text.value()};
    }
    if (peek() == '[') {
      ++pos_;
      if (accept(']')) return AttributeValue{std::vector<int64_t>{}};
      if (peek() == '"') {
        std::vector<std::string> strings;
        do {
          auto text = quoted();
          if (!text.ok()) return text.error();
          strings.push_back(text.value());
        } while (accept(','));
        if (auto ok = expect(']'); !ok.ok()) return ok.error();
        return AttributeValue{strings};
      }
      if (std::isalpha(static_cast<unsigned char>(peek())) && !looks_like_float_word()) {
        std::vector<Tensor> tensors;
        do {
          auto t = tensor_value();
          if (!t.ok()) return t.error();
          tensors.push_back(t.value());
        } while (accept(','));
        if (auto ok = expect(']'); !ok.ok()) return ok.error();
        return AttributeValue{tensors};
      }
      const size_t start = pos_;
      const std::string items = until_any("]");
      pos_ = start;
      if (is_float_text(items)) {
        std::vector<float> floats;
        do {
          auto v = real();
          if (!v.ok()) return v.error();
          floats.push_back(static_cast<float>(v.value()));
        } while (accept(','));
        if (auto ok = expect(']'); !ok.ok()) return ok.error();
        return AttributeValue{floats};
      }
      std::vector<int64_t> ints;
      do {
        auto v = integer();
        if (!v.ok()) return v.error();
        ints.push_back(v.value());
      } while (accept(','));
      if (auto ok = expect(']'); !ok.ok()) return ok.error();
      return AttributeValue{ints};
    }
    if (std::isalpha(static_cast<unsigned char>(peek())) && !looks_like_float_word()) {
      auto t = tensor_value();
      if (!t.ok()) return t.error();
      return AttributeValue{t.value()};
    }
    const size_t start = pos_;
    const std::string word = until_any(";");
    pos_ = start;
    if (is_float_text(word)) {
      auto v = real();
      if (!v.ok()) return v.error();
      return AttributeValue{static_cast<float>(v.value())};
    }
    auto v = integer();
    if (!v.ok()) return v.error();
    return AttributeValue{v.value()};
  }

 private:
  /// Attribute strings are written between quotes with no escaping.
  Result<std::string> quoted() {
    if (auto ok = expect('"'); !ok.ok()) return ok.error();
    const std::string value = until_any("\"");
    if (auto ok = expect('"'); !ok.ok()) return ok.error();
    return value;
  }

  static bool is_float_text(const std::string &word) {
    return word.find_first_of("xpPn") != std::string::npos;  // hex floats, inf, nan
  }

  /// "inf", "-inf", "nan" start with letters too, but are floats, not tensor types.
  bool looks_like_float_word() const {
    return text_.compare(pos_, 3, "inf") == 0 || text_.compare(pos_, 3, "nan") == 0;
  }

  static void set_integer_element(Tensor &tensor, int64_t i, int64_t value) {
    // Through double, int64 values past 2^53 (INT64_MAX as a Slice end) would change.
    if (tensor.dtype() == DType::Int64) tensor.data_as<int64_t>()[i] = value;
    else if (tensor.dtype() == DType::UInt64) tensor.data_as<uint64_t>()[i] = static_cast<uint64_t>(value);
    else tensor.set_element_from_double(i, static_cast<double>(value));
  }

  const std::string &text_;
  size_t pos_ = 0;
};

}  // namespace

Result<WorkloadGraph> graph_from_workload_text(const std::string &text) {
  WorkloadParser in(text);
  Graph graph;
  graph.name = "workload";
  graph.opset = kWorkloadOpset;
  std::map<std::string, int> tensors;  // "in0", "t3" -> tensor id
  std::set<int> read;
  std::vector<int> produced;
  FusedGroup group;
  while (!in.done()) {
    Node node;
    node.op_type = in.identifier();
    if (node.op_type.empty()) return in.fail("expected an op type");
    node.name = "n" + std::to_string(graph.nodes.size());
    if (auto ok = in.expect('('); !ok.ok()) return ok.error();
    std::vector<int> inputs;
    while (!in.accept(')')) {
      if (!inputs.empty())
        if (auto ok = in.expect(','); !ok.ok()) return ok.error();
      if (in.accept('_')) {
        inputs.push_back(kNoTensor);
        continue;
      }
      const std::string name = in.identifier();
      if (name.empty()) return in.fail("expected a tensor name");
      if (in.accept(':')) {  // first read of an external input: its type, maybe its value
        if (tensors.count(name)) return in.fail("tensor '" + name + "' is declared twice");
        auto type = in.tensor_type();
        if (!type.ok()) return type.error();
        TensorInfo info{name, type.value(), std::nullopt};
        if (in.accept('=')) {
          auto value = in.tensor_value();
          if (!value.ok()) return value.error();
          info.constant = value.value();
        }
        const int id = graph.add_tensor(info);
        if (!info.constant) graph.inputs.push_back(id);
        tensors[name] = id;
      }
      auto found = tensors.find(name);
      if (found == tensors.end()) return in.fail("tensor '" + name + "' is read before it is defined");
      inputs.push_back(found->second);
      read.insert(found->second);
    }
    if (auto ok = in.expect('{'); !ok.ok()) return ok.error();
    while (!in.accept('}')) {
      const std::string name = in.identifier();
      if (name.empty()) return in.fail("expected an attribute name");
      if (auto ok = in.expect('='); !ok.ok()) return ok.error();
      auto value = in.attribute_value();
      if (!value.ok()) return value.error();
      node.attributes.set(name, value.value());
      if (auto ok = in.expect(';'); !ok.ok()) return ok.error();
    }
    if (auto ok = in.expect('-'); !ok.ok()) return ok.error();
    if (auto ok = in.expect('>'); !ok.ok()) return ok.error();
    std::vector<int> outputs;
    do {
      if (in.accept('_')) {
        outputs.push_back(kNoTensor);
        continue;
      }
      const std::string name = in.identifier();
      if (name.empty()) return in.fail("expected an output tensor name");
      if (tensors.count(name)) return in.fail("tensor '" + name + "' is produced twice");
      if (auto ok = in.expect(':'); !ok.ok()) return ok.error();
      auto type = in.tensor_type();
      if (!type.ok()) return type.error();
      const int id = graph.add_tensor({name, type.value(), std::nullopt});
      tensors[name] = id;
      outputs.push_back(id);
      produced.push_back(id);
    } while (in.accept(','));
    if (auto ok = in.expect(';'); !ok.ok()) return ok.error();
    group.nodes.push_back(graph.add_node(node, inputs, outputs));
  }
  if (group.nodes.empty()) return make_error(ErrorKind::InvalidInput, "workload text is empty");
  for (int t : produced)
    if (!read.count(t)) graph.outputs.push_back(t);

  auto inferred = infer_shapes(std::move(graph));
  if (!inferred.ok())
    return make_error(ErrorKind::InvalidInput, "workload text describes an invalid graph: " + inferred.error().message);
  auto result = std::make_shared<const Graph>(std::move(inferred.value()));
  // The anchor and pattern as partition_graph gives them to a group.
  group.anchor = group_anchor(*result, group.nodes);
  group.pattern = OpPattern::Elementwise;
  for (int n : group.nodes) group.pattern = std::max(group.pattern, node_pattern(result->nodes[n]));
  const std::string again = workload_text(*result, group);
  if (again != text)
    return make_error(ErrorKind::InvalidInput,
                      "the graph rebuilt from the workload text does not describe the same workload (it reads \"" +
                      again.substr(0, 200) + "\")");
  return WorkloadGraph{result, group};
}

}  // namespace tessel
