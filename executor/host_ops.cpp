#include "executor/host_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "executor/graph_executor.h"
#include "executor/grid_sample.h"
#include "executor/spectral_ops.h"
#include "executor/tfidf_vectorizer.h"
#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"
#include "host/host_op.h"

namespace tessel {

bool is_host_op(const std::string &op_type) { return runs_on_host(op_type); }

/// The first sequence_lens[b] steps along the time axis reversed, per batch entry; the rest
/// copied.
static Tensor reverse_sequence(const HostOpContext &ctx) {
  const Tensor &x = *ctx.inputs.at(0), &lengths = *ctx.inputs.at(1);
  const int64_t batch_axis = ctx.node.attributes.get_int("batch_axis", 1);
  const int64_t time_axis = ctx.node.attributes.get_int("time_axis", 0);
  Tensor out(x.dtype(), x.shape());
  const size_t element = dtype_size(x.dtype());
  std::vector<int64_t> strides(x.rank(), 1);
  for (int d = x.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * x.shape()[d + 1];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t b = i / strides[batch_axis] % x.shape()[batch_axis];
    const int64_t t = i / strides[time_axis] % x.shape()[time_axis];
    const int64_t length = std::clamp<int64_t>(lengths.element_as_int64(b), 0, x.shape()[time_axis]);
    const int64_t from = t < length ? i + (length - 1 - 2 * t) * strides[time_axis] : i;
    std::memcpy(static_cast<uint8_t *>(out.data()) + i * element, static_cast<const uint8_t *>(x.data()) + from * element,
                element);
  }
  return out;
}

/// Determinants of the trailing [M, M] matrices, by LU decomposition with partial pivoting.
static Tensor determinant(const Tensor &x, const TensorType &type) {
  const int64_t m = x.shape().back();
  Tensor out(type.dtype, type.shape);
  std::vector<double> a(m * m);
  for (int64_t k = 0; k < out.numel(); ++k) {
    for (int64_t i = 0; i < m * m; ++i) a[i] = x.element_as_double(k * m * m + i);
    double det = 1;
    for (int64_t col = 0; col < m && det != 0; ++col) {
      int64_t pivot = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (std::fabs(a[r * m + col]) > std::fabs(a[pivot * m + col])) pivot = r;
      if (a[pivot * m + col] == 0) {
        det = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t c = 0; c < m; ++c) std::swap(a[pivot * m + c], a[col * m + c]);
        det = -det;
      }
      det *= a[col * m + col];
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = a[r * m + col] / a[col * m + col];
        for (int64_t c = col; c < m; ++c) a[r * m + c] -= f * a[col * m + c];
      }
    }
    out.set_element_from_double(k, det);
  }
  return out;
}

/// X's values written where I says, zeros elsewhere. I holds flat positions in the output
/// of the default size (what the pooling read); a larger output_shape keeps each value at
/// the same coordinates, as the ONNX reference does.
static Tensor max_unpool(const HostOpContext &ctx, const TensorType &type) {
  const Tensor &x = *ctx.inputs.at(0), &indices = *ctx.inputs.at(1);
  const size_t spatial = x.shape().size() - 2;
  const auto kernel = ctx.node.attributes.get_ints("kernel_shape");
  const auto strides = ctx.node.attributes.get_ints("strides", std::vector<int64_t>(spatial, 1));
  const auto pads = ctx.node.attributes.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  Shape pooled_from = {x.shape()[0], x.shape()[1]};
  for (size_t d = 0; d < spatial; ++d)
    pooled_from.push_back((x.shape()[2 + d] - 1) * strides[d] - pads[d] - pads[spatial + d] + kernel[d]);
  Tensor out(type.dtype, type.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t at = indices.element_as_int64(i), flat = 0, stride = 1;
    if (at < 0 || at >= shape_numel(pooled_from))
      throw TesselException("index " + std::to_string(at) + " is outside the pooled input's " +
                            std::to_string(shape_numel(pooled_from)) + " elements");
    for (int64_t d = static_cast<int64_t>(pooled_from.size()) - 1; d >= 0; --d) {
      const int64_t coordinate = at % pooled_from[d];
      at /= pooled_from[d];
      if (coordinate >= type.shape[d]) throw TesselException("output_shape is smaller than the pooled input");
      flat += coordinate * stride;
      stride *= type.shape[d];
    }
    out.set_element_from_double(flat, x.element_as_double(i));
  }
  return out;
}

Result<std::vector<Tensor>> run_host_op(const HostOpContext &ctx, const std::vector<TensorType> &types) {
  const std::string &op = ctx.node.op_type;
  try {
    if (op == "Constant") {
      auto value = constant_node_value(ctx.node);
      if (!value.ok()) return value.error();
      return std::vector<Tensor>{value.value()};
    }
    if (op == "Shape") return std::vector<Tensor>{shape_node_value(ctx.node, ctx.inputs[0]->shape())};
    if (op == "Size") return std::vector<Tensor>{Tensor::scalar(DType::Int64, ctx.inputs[0]->numel())};
    if (op == "Identity") return std::vector<Tensor>{*ctx.inputs[0]};
    if (op == "Dropout") {
      // Inference: the output is the input; the optional mask is all true.
      Tensor mask(DType::Bool, ctx.inputs[0]->shape());
      if (mask.bytes()) std::memset(mask.data(), 1, mask.bytes());
      return std::vector<Tensor>{*ctx.inputs[0], mask};
    }
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
      return std::vector<Tensor>{ctx.inputs[0]->reshaped(types[0].shape)};  // zero-copy view
    if (op == "ReverseSequence") return std::vector<Tensor>{reverse_sequence(ctx)};
    if (op == "Det") return std::vector<Tensor>{determinant(*ctx.inputs.at(0), types[0])};
    if (op == "MaxUnpool") return std::vector<Tensor>{max_unpool(ctx, types[0])};
    if (op == "DFT" || op == "STFT" || op == "MelWeightMatrix") {
      auto spectrum = op == "DFT" ? run_dft(ctx, types[0])
                      : op == "STFT" ? run_stft(ctx, types[0]) : run_mel_weight_matrix(ctx, types[0]);
      if (!spectrum.ok())
        return make_error(spectrum.error().kind,
                          "node '" + ctx.node.name + "' (" + op + "): " + spectrum.error().message);
      return std::vector<Tensor>{spectrum.value()};
    }
    if (op == "TfIdfVectorizer") {
      auto counted = run_tfidf_vectorizer(ctx, types[0]);
      if (!counted.ok())
        return make_error(counted.error().kind,
                          "node '" + ctx.node.name + "' (TfIdfVectorizer): " + counted.error().message);
      return std::vector<Tensor>{counted.value()};
    }
    if (op == "GridSample") {
      auto sampled = run_grid_sample(ctx, types[0]);
      if (!sampled.ok())
        return make_error(sampled.error().kind,
                          "node '" + ctx.node.name + "' (GridSample): " + sampled.error().message);
      return std::vector<Tensor>{sampled.value()};
    }
  } catch (const std::exception &e) {
    return make_error("node '" + ctx.node.name + "' (" + op + "): " + e.what());
  }
  // TopK, RoiAlign: plain C++ shared with the deploy runtime.
  if (has_host_implementation(op)) return evaluate_host_op(HostCall{ctx.node, ctx.opset, ctx.inputs, types});
  return make_error(ErrorKind::Internal, "node '" + ctx.node.name + "': " + op + " is not a host op");
}

}  // namespace tessel
