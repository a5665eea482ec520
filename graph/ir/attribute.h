#pragma once
// Node attributes: the ONNX attribute kinds as one value type.
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tensor/tensor.h"

namespace tessel {

struct Graph;

/// One attribute value. Subgraphs (If/Loop bodies) are shared immutable graphs.
using AttributeValue =
    std::variant<int64_t, float, std::string, Tensor, std::shared_ptr<const Graph>,
                 std::vector<int64_t>, std::vector<float>, std::vector<std::string>,
                 std::vector<Tensor>, std::vector<std::shared_ptr<const Graph>>>;

/// A node's attributes by name, with typed accessors that give a default or a clear error.
class Attributes {
 public:
  void set(const std::string &name, AttributeValue value) { values_[name] = std::move(value); }
  bool has(const std::string &name) const { return values_.count(name) != 0; }
  const std::map<std::string, AttributeValue> &all() const { return values_; }

  int64_t get_int(const std::string &name, int64_t fallback) const;
  int64_t get_int(const std::string &name) const;
  float get_float(const std::string &name, float fallback) const;
  std::string get_string(const std::string &name, const std::string &fallback) const;
  std::vector<int64_t> get_ints(const std::string &name,
                                const std::vector<int64_t> &fallback = {}) const;
  std::vector<float> get_floats(const std::string &name,
                                const std::vector<float> &fallback = {}) const;
  std::vector<std::string> get_strings(const std::string &name) const;
  const Tensor &get_tensor(const std::string &name) const;
  std::shared_ptr<const Graph> get_graph(const std::string &name) const;

  /// Canonical text of all attributes (sorted, exact floats), for kernel and workload keys.
  std::string canonical_text() const;

 private:
  const AttributeValue &require(const std::string &name) const;
  std::map<std::string, AttributeValue> values_;
};

}  // namespace tessel
