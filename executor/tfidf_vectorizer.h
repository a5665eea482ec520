#pragma once
// TfIdfVectorizer on the host: counts the n-grams of a pool in each row of integer tokens
// (with skips between a gram's tokens) and weighs the counts. A hash lookup per position;
// there is nothing here a kernel would do better.
#include "base/result.h"
#include "executor/host_ops.h"

namespace tessel {

Result<Tensor> run_tfidf_vectorizer(const HostOpContext &ctx, const TensorType &output_type);

}  // namespace tessel
