#pragma once
// A light entry point that applies a schedule to a real Halide convolution (zero padding,
// a direct convolution into an accumulator Func, bias and ReLU in the output), runs it and
// compares with a naive loop, for tests and tools that must not include Halide.h.
#include <cstdint>
#include <string>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"

namespace tessel {

/// One 2-D convolution, NCHW. Depthwise: one filter per channel (out_channels ignored).
struct ConvCheckShape {
  int64_t batch = 1, in_channels = 64, out_channels = 64;
  int64_t height = 56, width = 56;  ///< of the input
  int64_t kernel = 3, stride = 1, pad = 1;
  bool depthwise = false;

  int64_t out_height() const { return (height + 2 * pad - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * pad - kernel) / stride + 1; }
  int64_t output_channels() const { return depthwise ? in_channels : out_channels; }
};

/// The pipeline lower_conv_with_schedule builds, as a ComputeDesc, Halide order (x, y, c, n):
///   pad(x, y, c, n)  zero-padded input (inlinable)
///   acc(x, y, c, n) = 0; acc += pad(x*s + r.x, y*s + r.y, r.z, n) * w(r.x, r.y, r.z, c)
///       over RDom r whose vars Halide names r$x, r$y, r$z (depthwise: r$x, r$y, channel c)
///   out(x, y, c, n) = max(acc + bias(c), 0)
ComputeDesc conv_check_desc(const ConvCheckShape &shape);

/// Builds that convolution, applies `schedule`, JIT-compiles and runs it on random inputs
/// and compares with a naive loop. Returns Halide's loop nest, or an Error from scheduling,
/// compiling, running or the comparison.
Result<std::string> lower_conv_with_schedule(const ConvCheckShape &shape, const Schedule &schedule);

}  // namespace tessel
