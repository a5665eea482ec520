#include <Halide.h>

#include "codegen/resolve_buffer_assertions.h"

namespace tessel {
namespace {

using namespace Halide::Internal;

std::optional<int64_t> constant(const Halide::Expr &e) {
  if (!e.defined()) return std::nullopt;
  if (const int64_t *value = as_const_int(e)) return *value;
  return std::nullopt;
}

/// Variables named in `known` become constants of their own type.
class SubstituteKnown : public IRMutator {
 public:
  explicit SubstituteKnown(const std::map<std::string, int64_t> &known) : known_(known) {}

 private:
  using IRMutator::visit;
  Halide::Expr visit(const Variable *op) override {
    auto it = known_.find(op->name);
    if (it == known_.end() || !(op->type.is_int() || op->type.is_uint()) || op->type.lanes() != 1) return op;
    return make_const(op->type, it->second);
  }

  const std::map<std::string, int64_t> &known_;
};

/// Halide's packed halide_type_t as the lowered code reads it (code | bits << 8 | lanes << 16).
int64_t packed_type(const Halide::Type &t) {
  return static_cast<int64_t>(t.code()) | (static_cast<int64_t>(t.bits()) << 8) | (int64_t{1} << 16);
}

}  // namespace

std::optional<DeclaredBuffer> declared_buffer(const Halide::Internal::Parameter &parameter) {
  if (!parameter.defined() || !parameter.is_buffer()) return std::nullopt;
  DeclaredBuffer b;
  b.name = parameter.name();
  b.type = parameter.type();
  for (int d = 0; d < parameter.dimensions(); ++d) {
    const std::optional<int64_t> min = constant(parameter.min_constraint(d)),
                                 extent = constant(parameter.extent_constraint(d)),
                                 stride = constant(parameter.stride_constraint(d));
    if (!min || !extent || !stride) return std::nullopt;
    b.mins.push_back(*min);
    b.extents.push_back(*extent);
    b.strides.push_back(*stride);
  }
  return b;
}

ResolveBufferAssertions::ResolveBufferAssertions(const std::vector<DeclaredBuffer> &buffers) {
  for (const DeclaredBuffer &b : buffers) {
    for (size_t d = 0; d < b.extents.size(); ++d) {
      const std::string dim = "." + std::to_string(d);
      known_[b.name + ".min" + dim] = b.mins[d];
      known_[b.name + ".extent" + dim] = b.extents[d];
      known_[b.name + ".stride" + dim] = b.strides[d];
    }
    known_[b.name + ".type"] = packed_type(b.type);
    known_[b.name + ".dimensions"] = static_cast<int64_t>(b.extents.size());
    known_[b.name + ".device_dirty"] = 0;
  }
}

Halide::Internal::Stmt ResolveBufferAssertions::visit(const AssertStmt *op) {
  const Halide::Expr condition = simplify(SubstituteKnown(known_).mutate(op->condition));
  if (!is_const_one(condition)) return op;
  ++removed_;
  return Evaluate::make(0);
}

}  // namespace tessel
