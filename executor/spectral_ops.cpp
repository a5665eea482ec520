#include "executor/spectral_ops.h"

#include <cmath>
#include <complex>

namespace tessel {
namespace {

using Complex = std::complex<double>;

/// The first `bins` coefficients of the length-`length` transform of `x` (zero-padded or
/// truncated to `length`); the inverse one is scaled by 1 / length.
std::vector<Complex> transform(const std::vector<Complex> &x, int64_t length, int64_t bins, bool inverse) {
  std::vector<Complex> out(bins);
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t used = std::min<int64_t>(length, static_cast<int64_t>(x.size()));
  for (int64_t k = 0; k < bins; ++k) {
    Complex acc = 0;
    for (int64_t n = 0; n < used; ++n) {
      // k * n mod length keeps the angle small, so large transforms stay accurate.
      const double angle = sign * 2 * M_PI * static_cast<double>((k * n) % length) / static_cast<double>(length);
      acc += x[n] * Complex(std::cos(angle), std::sin(angle));
    }
    out[k] = inverse ? acc / static_cast<double>(length) : acc;
  }
  return out;
}

/// Element i of a tensor whose last axis holds 1 (real) or 2 (real, imaginary) values.
Complex complex_at(const Tensor &x, int64_t i) {
  const int64_t parts = x.shape().back();
  return {x.element_as_double(i * parts), parts == 2 ? x.element_as_double(i * parts + 1) : 0.0};
}

void store(Tensor &out, int64_t i, Complex v) {
  out.set_element_from_double(2 * i, v.real());
  out.set_element_from_double(2 * i + 1, v.imag());
}

}  // namespace

Result<Tensor> run_dft(const HostOpContext &ctx, const TensorType &type) {
  const Tensor &x = *ctx.inputs.at(0);
  const int64_t rank = x.rank();
  int64_t axis = ctx.node.attributes.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return make_error(ErrorKind::InvalidInput, "axis is outside the signal's dimensions");
  const bool inverse = ctx.node.attributes.get_int("inverse", 0) != 0;
  const int64_t n = x.shape()[axis];
  const int64_t length = ctx.inputs.size() > 1 && ctx.inputs[1] ? ctx.inputs[1]->element_as_int64(0) : n;
  if (length < 1) return make_error(ErrorKind::InvalidInput, "dft_length must be positive");
  const int64_t bins = type.shape[axis];
  // Axes before `axis` are outer, those after (without the real/imaginary one) inner.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.shape()[d];
  Tensor out(type.dtype, type.shape);
  std::vector<Complex> signal(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) signal[j] = complex_at(x, (o * n + j) * inner + i);
      const std::vector<Complex> spectrum = transform(signal, length, bins, inverse);
      for (int64_t k = 0; k < bins; ++k) store(out, (o * bins + k) * inner + i, spectrum[k]);
    }
  return out;
}

Result<Tensor> run_stft(const HostOpContext &ctx, const TensorType &type) {
  const Tensor &signal = *ctx.inputs.at(0);
  const int64_t step = ctx.inputs.at(1)->element_as_int64(0);
  const Tensor *window = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  const int64_t frames = type.shape[1], bins = type.shape[2];
  const int64_t frame_length = window ? window->numel() : ctx.inputs.at(3)->element_as_int64(0);
  const int64_t samples = signal.shape()[1];
  Tensor out(type.dtype, type.shape);
  std::vector<Complex> frame(frame_length);
  for (int64_t b = 0; b < signal.shape()[0]; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frame_length; ++j) {
        const Complex v = complex_at(signal, b * samples + f * step + j);
        frame[j] = window ? v * window->element_as_double(j) : v;
      }
      const std::vector<Complex> spectrum = transform(frame, frame_length, bins, false);
      for (int64_t k = 0; k < bins; ++k) store(out, (b * frames + f) * bins + k, spectrum[k]);
    }
  return out;
}

/// Triangular filters on the mel scale: filter i rises linearly from bin edge i to edge
/// i + 1 and falls to edge i + 2, where the num_mel_bins + 2 edges are spaced evenly in mel
/// between the two frequencies and mapped to DFT bins by floor((dft_length + 1) * hz / rate).
Result<Tensor> run_mel_weight_matrix(const HostOpContext &ctx, const TensorType &type) {
  const int64_t mel_bins = ctx.inputs.at(0)->element_as_int64(0), dft_length = ctx.inputs.at(1)->element_as_int64(0);
  const int64_t sample_rate = ctx.inputs.at(2)->element_as_int64(0);
  const double lower_hz = ctx.inputs.at(3)->element_as_double(0), upper_hz = ctx.inputs.at(4)->element_as_double(0);
  if (sample_rate <= 0) return make_error(ErrorKind::InvalidInput, "sample_rate must be positive");
  const auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = to_mel(lower_hz), mel_step = (to_mel(upper_hz) - low_mel) / static_cast<double>(mel_bins + 2);
  const int64_t spectrum_bins = dft_length / 2 + 1;
  std::vector<int64_t> edges(mel_bins + 2);
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * mel_step + low_mel) / 2595) - 1);
    edges[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    if (edges[i] < 0 || edges[i] >= spectrum_bins)
      return make_error(ErrorKind::InvalidInput,
                        "the frequency range maps outside the " + std::to_string(spectrum_bins) + " spectrum bins");
  }
  Tensor out(type.dtype, type.shape);
  const auto set = [&](int64_t bin, int64_t filter, double w) { out.set_element_from_double(bin * mel_bins + filter, w); };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left) set(center, i, 1);
    else
      for (int64_t j = left; j <= center; ++j) set(j, i, static_cast<double>(j - left) / static_cast<double>(center - left));
    for (int64_t j = center; j < right; ++j) set(j, i, static_cast<double>(right - j) / static_cast<double>(right - center));
  }
  return out;
}

}  // namespace tessel
