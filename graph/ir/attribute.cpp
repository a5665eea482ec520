#include "graph/ir/attribute.h"

#include <cstdio>
#include <sstream>

#include "base/result.h"

namespace tessel {

const AttributeValue &Attributes::require(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw TesselException("missing required attribute '" + name + "'");
  return it->second;
}

template <typename T>
static const T &expect(const AttributeValue &v, const std::string &name, const char *kind) {
  if (auto p = std::get_if<T>(&v)) return *p;
  throw TesselException("attribute '" + name + "' is not " + kind);
}

int64_t Attributes::get_int(const std::string &name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}
int64_t Attributes::get_int(const std::string &name) const {
  return expect<int64_t>(require(name), name, "an int");
}
float Attributes::get_float(const std::string &name, float fallback) const {
  if (!has(name)) return fallback;
  const AttributeValue &v = require(name);
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<float>(*p);
  return expect<float>(v, name, "a float");
}
std::string Attributes::get_string(const std::string &name, const std::string &fallback) const {
  return has(name) ? expect<std::string>(require(name), name, "a string") : fallback;
}
std::vector<int64_t> Attributes::get_ints(const std::string &name,
                                          const std::vector<int64_t> &fallback) const {
  return has(name) ? expect<std::vector<int64_t>>(require(name), name, "a list of ints") : fallback;
}
std::vector<float> Attributes::get_floats(const std::string &name,
                                          const std::vector<float> &fallback) const {
  return has(name) ? expect<std::vector<float>>(require(name), name, "a list of floats")
                   : fallback;
}
std::vector<std::string> Attributes::get_strings(const std::string &name) const {
  return has(name) ? expect<std::vector<std::string>>(require(name), name, "a list of strings")
                   : std::vector<std::string>{};
}
const Tensor &Attributes::get_tensor(const std::string &name) const {
  return expect<Tensor>(require(name), name, "a tensor");
}
std::shared_ptr<const Graph> Attributes::get_graph(const std::string &name) const {
  return expect<std::shared_ptr<const Graph>>(require(name), name, "a graph");
}

static std::string exact_float(float f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%a", static_cast<double>(f));
  return buf;
}

std::string Attributes::canonical_text() const {
  std::ostringstream os;
  for (const auto &[name, value] : values_) {
    os << name << "=";
    std::visit(
        [&](const auto &v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, int64_t>) os << v;
          else if constexpr (std::is_same_v<V, float>) os << exact_float(v);
          else if constexpr (std::is_same_v<V, std::string>) os << '"' << v << '"';
          else if constexpr (std::is_same_v<V, Tensor>) os << tensor_canonical_text(v);
          else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
            os << "[";
            for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
            os << "]";
          } else if constexpr (std::is_same_v<V, std::vector<float>>) {
            os << "[";
            for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << exact_float(v[i]);
            os << "]";
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            os << "[";
            for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << '"' << v[i] << '"';
            os << "]";
          } else if constexpr (std::is_same_v<V, std::vector<Tensor>>) {
            os << "[";
            for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << tensor_canonical_text(v[i]);
            os << "]";
          } else {
            os << "<graph@" << static_cast<const void *>(&v) << ">";
          }
        },
        value);
    os << ";";
  }
  return os.str();
}

}  // namespace tessel
