#include "executor/tfidf_vectorizer.h"

#include <map>

namespace tessel {
namespace {

/// The pool's n-grams of each length, each mapped to its output position.
struct GramPool {
  std::vector<std::map<std::vector<int64_t>, int64_t>> by_length;  // [n - 1]
};

/// Splits pool_int64s into grams: ngram_counts[i] is where the grams of length i + 1 start,
/// and ngram_indexes gives each gram's output position, in pool order.
GramPool read_pool(const Node &node, int64_t output_size) {
  const auto pool = node.attributes.get_ints("pool_int64s", {});
  const auto starts = node.attributes.get_ints("ngram_counts", {});
  const auto positions = node.attributes.get_ints("ngram_indexes", {});
  GramPool grams;
  size_t gram = 0;
  for (size_t level = 0; level < starts.size(); ++level) {
    const int64_t length = static_cast<int64_t>(level) + 1;
    const int64_t begin = starts[level];
    const int64_t end = level + 1 < starts.size() ? starts[level + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % length != 0)
      throw TesselException("ngram_counts does not split pool_int64s into whole grams");
    grams.by_length.emplace_back();
    for (int64_t at = begin; at < end; at += length, ++gram) {
      if (gram >= positions.size()) throw TesselException("ngram_indexes has fewer entries than the pool has grams");
      if (positions[gram] < 0 || positions[gram] >= output_size)
        throw TesselException("ngram_indexes entry " + std::to_string(positions[gram]) + " is out of range");
      grams.by_length.back().emplace(std::vector<int64_t>(pool.begin() + at, pool.begin() + at + length), positions[gram]);
    }
  }
  return grams;
}

/// The counts of one row's grams of lengths [min_length, max_length]: a gram of length n
/// with skip s takes every (s + 1)-th token from its start. Unigrams are counted once,
/// whatever the skip.
void count_row(const Tensor &x, int64_t offset, int64_t length, const GramPool &pool, int64_t min_length,
               int64_t max_length, int64_t max_skip, float *counts) {
  std::vector<int64_t> gram;
  for (int64_t n = std::max<int64_t>(min_length, 1); n <= max_length && n <= static_cast<int64_t>(pool.by_length.size());
       ++n) {
    const auto &grams = pool.by_length[n - 1];
    if (grams.empty()) continue;
    for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip) {
      const int64_t step = skip + 1;
      for (int64_t start = 0; start + (n - 1) * step < length; ++start) {
        gram.clear();
        for (int64_t k = 0; k < n; ++k) gram.push_back(x.element_as_int64(offset + start + k * step));
        if (auto hit = grams.find(gram); hit != grams.end()) counts[hit->second] += 1;
      }
    }
  }
}

}  // namespace

Result<Tensor> run_tfidf_vectorizer(const HostOpContext &ctx, const TensorType &output_type) {
  const Node &node = ctx.node;
  const Tensor &x = *ctx.inputs.at(0);
  if (x.dtype() != DType::Int32 && x.dtype() != DType::Int64)
    return make_error(ErrorKind::Unsupported,
                      "the input must be int32 or int64 tokens (string tokens are not supported)");
  const int64_t output_size = output_type.shape.back();
  const GramPool pool = read_pool(node, output_size);
  const int64_t min_length = node.attributes.get_int("min_gram_length", 1);
  const int64_t max_length = node.attributes.get_int("max_gram_length", 1);
  const int64_t max_skip = node.attributes.get_int("max_skip_count", 0);
  const std::string mode = node.attributes.get_string("mode", "TF");
  const auto weights = node.attributes.get_floats("weights", {});
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return make_error(ErrorKind::InvalidInput, "mode must be TF, IDF or TFIDF, got " + mode);
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < output_size)
    return make_error(ErrorKind::InvalidInput, "weights has fewer entries than the output");
  const int64_t rows = x.rank() == 2 ? x.shape()[0] : 1;
  const int64_t row_length = x.rank() == 0 ? 1 : x.shape().back();
  Tensor out(DType::Float32, output_type.shape);
  float *counts = out.data_as<float>();
  for (int64_t r = 0; r < rows; ++r)
    count_row(x, r * row_length, row_length, pool, min_length, max_length, max_skip, counts + r * output_size);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const float weight = weights.empty() ? 1.f : weights[i % output_size];
    if (mode == "IDF") counts[i] = counts[i] > 0 ? weight : 0.f;
    else if (mode == "TFIDF") counts[i] *= weight;
  }
  return out;
}

}  // namespace tessel
