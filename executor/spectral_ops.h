#pragma once
// DFT and STFT on the host (audio front ends): direct O(n^2) transforms in double
// precision, every attribute of opset 17 (axis, inverse, onesided, dft_length; STFT's
// window, frame_step and frame_length); MelWeightMatrix, the filter bank that maps a
// spectrum to mel bins.
#include "base/result.h"
#include "executor/host_ops.h"

namespace tessel {

Result<Tensor> run_dft(const HostOpContext &ctx, const TensorType &output_type);
Result<Tensor> run_stft(const HostOpContext &ctx, const TensorType &output_type);
Result<Tensor> run_mel_weight_matrix(const HostOpContext &ctx, const TensorType &output_type);

}  // namespace tessel
