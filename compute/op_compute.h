#pragma once
// Internal to schedule/ and codegen/: how one ONNX op becomes Halide Funcs.
// Include <Halide.h> before this header; it is never included by other modules' headers,
// so only the .cpp files that already pay for Halide.h see these declarations.
#ifndef HALIDE_H
#error "include <Halide.h> before compute/op_compute.h"
#endif

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/ir/graph.h"

namespace tessel {

/// Where a rule's register-tiled accumulation is computed, decided once the whole kernel is
/// known: into the tiles of the one output that applies elementwise ops to it (a fused
/// epilogue: bias, activation, residual add work on the tile while it is in registers), or
/// on its own, at root, which the epilogue then reads back. Exactly one of them must run.
struct DeferredTiles {
  /// Tiles `consumer` (same shape and Halide order as the rule's result) as the rule's own
  /// schedule would tile its result, and computes the accumulation inside each tile.
  std::function<void(Halide::Func consumer)> into;
  /// The rule's result at root, tiled and parallel as on its own.
  std::function<void()> alone;
};

/// A tensor as a Halide Func, indexed in ONNX axis order (outermost first). Halide's
/// dimension 0 is the innermost, so at() reverses the index list.
struct TensorFunc {
  Halide::Func func;
  DType dtype = DType::Undefined;
  Shape shape;
  /// The rule scheduled `func` itself (a product's tiles written straight into the output):
  /// the default schedule of outputs leaves it alone.
  bool scheduled = false;
  /// Each element reads a window of its input at a stride (a pool): fused with the next
  /// axis, a row's vector loads would become gathers, so the default schedule keeps rows.
  bool windowed = false;
  /// Set where the rule left the placement of its accumulation to the kernel's builder.
  std::shared_ptr<DeferredTiles> tiles = nullptr;

  int rank() const { return static_cast<int>(shape.size()); }
  bool defined() const { return func.defined(); }
  Halide::Expr at(const std::vector<Halide::Expr> &onnx_index) const;
};

/// What a compute rule sees for one node: inputs as Funcs, the concrete values of inputs
/// (for value inputs such as shapes, axes and pads), and the inferred output types.
struct ComputeContext {
  const Node &node;
  int64_t opset;
  std::vector<TensorFunc> inputs;      // undefined Func for omitted optional inputs
  std::vector<const Tensor *> values;  // nullptr unless the value is known
  std::vector<TensorType> output_types;
  /// Tunable form: rules that have one (Conv, MatMul, Gemm) define a plain algorithm with
  /// no schedule of their own, an accumulator Func (exposed through expose_stage) and a pure
  /// output reading it, so a tessel Schedule decides every loop. Other rules ignore it.
  bool plain = false;
  /// With plain: for Halide's autoschedulers, which refuse a pipeline with any scheduling
  /// directive. Rules that materialize an internal stage leave its placement to them.
  bool unscheduled = false;
  /// The kernels run on a CUDA GPU: calls into the C math library name libdevice's
  /// functions instead (__nv_erff for erff), which Halide's PTX backend links.
  bool gpu = false;
  std::vector<TensorFunc> *exposed_stages = nullptr;
  std::vector<TensorFunc> *exposed_sources = nullptr;

  const Attributes &attrs() const { return node.attributes; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].defined(); }
  const TensorFunc &input(size_t i) const;
  /// The value of input i; fails when not known.
  const Tensor &value(size_t i) const;
  std::vector<int64_t> ints_value(size_t i, std::vector<int64_t> fallback = {}) const;
  const TensorType &output_type(size_t i) const { return output_types.at(i); }
  [[noreturn]] void fail(const std::string &message) const;
  /// Offers a Func with an update definition to the schedule (plain mode): its axes are
  /// named like the output's (make_vars) and `shape` is the region it covers.
  void expose_stage(const TensorFunc &stage) const {
    if (exposed_stages) exposed_stages->push_back(stage);
  }
  /// Offers a materialized input of an exposed stage (a convolution's zero-padded copy,
  /// computed at root by its rule) to the schedule, which may only move it inside the
  /// loops of the output that stage is computed in; `shape` is the region the stage reads.
  void expose_source(const TensorFunc &source) const {
    if (exposed_sources) exposed_sources->push_back(source);
  }
};

/// Builds the output Funcs of one node (one per ONNX output that is requested). A rule may
/// schedule its own internal stages (compute_root of a reduction, say); the outputs get
/// the default schedule afterwards.
using ComputeFn = std::function<std::vector<TensorFunc>(const ComputeContext &)>;

class ComputeRegistry {
 public:
  void add(const std::string &op_type, ComputeFn fn);
  const ComputeFn *find(const std::string &op_type) const;

 private:
  std::vector<std::pair<std::string, ComputeFn>> rules_;
};

const ComputeFn *find_compute_rule(const std::string &op_type);

// Registration hooks, one per family file (compute_*.cpp).
void register_elementwise_compute(ComputeRegistry &r);
void register_nn_compute(ComputeRegistry &r);
void register_conv_compute(ComputeRegistry &r);
void register_conv_nhwc_compute(ComputeRegistry &r);
void register_pool_compute(ComputeRegistry &r);
void register_normalization_compute(ComputeRegistry &r);
void register_reduction_compute(ComputeRegistry &r);
void register_shape_ops_compute(ComputeRegistry &r);
void register_index_ops_compute(ComputeRegistry &r);
void register_misc_compute(ComputeRegistry &r);
void register_resize_compute(ComputeRegistry &r);
void register_winograd_compute(ComputeRegistry &r);

// Helpers shared by compute rules (compute_helpers.cpp).

Halide::Type halide_type(DType dtype);
/// A valid Halide Func/RDom name from a node name ('.' and '/' are reserved in Halide).
std::string halide_name(const std::string &name);
/// Fresh pure variables, one per ONNX axis.
std::vector<Halide::Var> make_vars(size_t rank, const std::string &prefix = "i");
std::vector<Halide::Expr> to_exprs(const std::vector<Halide::Var> &vars);
/// A Func of the given type and shape whose element at an ONNX index is body(index).
TensorFunc define_tensor(const std::string &name, DType dtype, const Shape &shape,
                         const std::function<Halide::Expr(const std::vector<Halide::Expr> &)> &body);
/// Reads `in` at the element that numpy broadcasting maps to out_index (trailing-aligned;
/// size-1 dimensions read index 0).
Halide::Expr broadcast_read(const TensorFunc &in, const std::vector<Halide::Expr> &out_index);
/// Converts with ONNX Cast semantics (float->int truncates toward zero, to bool is != 0).
Halide::Expr cast_to(DType dtype, Halide::Expr e);
/// Arithmetic type used for float math on this dtype (float16 computes in float32).
Halide::Type math_type(DType dtype);
/// Float constant of the tensor's compute type.
Halide::Expr lowest_value(DType dtype);
Halide::Expr highest_value(DType dtype);
/// Schedules the update stage of a reduction computed at root over output Vars `onnx_vars`
/// (ONNX order, extents `shape`). Output elements fold independently, so with
/// `vectorize_inner` the innermost output axis moves inside the reduction loops, vectorized;
/// and when outputs x reduction_count is large, the outermost output axis with more than
/// one element runs in parallel.
void schedule_independent_fold(Halide::Stage update, const std::vector<Halide::Var> &onnx_vars, const Shape &shape,
                               const Halide::RDom &r, bool vectorize_inner, int64_t reduction_count);
/// Clamps an index into [0, extent-1].
Halide::Expr clamp_index(Halide::Expr i, int64_t extent);

}  // namespace tessel
