#pragma once
// Assertions about a kernel's buffers that its caller already guarantees, removed before code
// generation. Halide asserts every buffer argument's type, rank, min, extent and stride, and
// that each input covers what the kernel reads. A host JIT kernel's buffers are declared dense
// with constant shapes (compute/pipeline_layout.h), and JitKernel::bind refuses any other, so
// those assertions hold or fail the same way on every call. Left in, they were half of a
// candidate's compile (ResNet-18 records: 206 ms median with them, 106 ms without; the LLVM
// code of the assertion blocks, not Halide's lowering, is the cost). Include <Halide.h> first.
#ifndef HALIDE_H
#error "include <Halide.h> before codegen/resolve_buffer_assertions.h"
#endif

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

/// One buffer argument as its parameter declares it; dims in Halide order (innermost first).
struct DeclaredBuffer {
  std::string name;
  Halide::Type type;
  std::vector<int64_t> mins, extents, strides;
};

/// The declaration of `parameter`, or nullopt when a dim's min, extent or stride is not
/// constrained to a constant.
std::optional<DeclaredBuffer> declared_buffer(const Halide::Internal::Parameter &parameter);

/// A custom lowering pass: in each assertion, the fields of the declared buffers (min,
/// extent, stride, type, dimensions, device_dirty) become their declared values; an
/// assertion that then simplifies to true is removed. Every other assertion stays, so an
/// input read out of bounds is still caught when the kernel runs (its bounds assertion then
/// simplifies to false, not true).
class ResolveBufferAssertions : public Halide::Internal::IRMutator {
 public:
  explicit ResolveBufferAssertions(const std::vector<DeclaredBuffer> &buffers);
  /// Assertions removed so far (for tests).
  int removed() const { return removed_; }

 private:
  using IRMutator::visit;
  Halide::Internal::Stmt visit(const Halide::Internal::AssertStmt *op) override;

  std::map<std::string, int64_t> known_;
  int removed_ = 0;
};

}  // namespace tessel
