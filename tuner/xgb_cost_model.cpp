// XGBoost through its C API. Every call's return code is checked and turned into an Error
// carrying XGBGetLastError(); handles are owned by small RAII wrappers so no error path leaks.
#include "tuner/xgb_cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>

namespace tessel {
namespace {

/// An Error when `status` (an XGBoost return code) says `call` failed.
std::optional<Error> xgboost_failure(int status, const std::string &call) {
  if (status == 0) return std::nullopt;
  // XGBoost appends a native stack trace that names no tessel concept: keep the message.
  std::string message = XGBGetLastError();
  const size_t trace = message.find("Stack trace:");
  if (trace != std::string::npos) message.erase(trace);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return make_error("XGBoost " + call + " failed: " + message);
}

/// An XGBoost DMatrix, freed on every path.
struct Matrix {
  DMatrixHandle handle = nullptr;
  Matrix() = default;
  Matrix(const Matrix &) = delete;
  Matrix &operator=(const Matrix &) = delete;
  ~Matrix() {
    if (handle) XGDMatrixFree(handle);
  }
};

/// A booster; shared so a prediction can finish on the model it started with while a
/// retrain swaps in the next one.
struct Booster {
  BoosterHandle handle = nullptr;
  int feature_width = 0;
  Booster() = default;
  Booster(const Booster &) = delete;
  Booster &operator=(const Booster &) = delete;
  ~Booster() {
    if (handle) XGBoosterFree(handle);
  }
};

const char *xgboost_objective(CostObjective objective) {
  return objective == CostObjective::PairwiseRanking ? "rank:pairwise" : "reg:squarederror";
}

std::string number_text(double value) {
  std::ostringstream s;
  s.precision(17);
  s << value;
  return s.str();
}

// Attributes saved inside the model file so load() can tell what it reads.
constexpr const char *kWidthAttribute = "tessel_feature_width";
constexpr const char *kObjectiveAttribute = "tessel_objective";

Result<std::string> read_attribute(BoosterHandle booster, const char *key) {
  const char *value = nullptr;
  int found = 0;
  if (auto e = xgboost_failure(XGBoosterGetAttr(booster, key, &value, &found), std::string("GetAttr ") + key))
    return *e;
  if (!found || !value)
    return make_error(ErrorKind::InvalidInput,
                      std::string("the model has no '") + key + "' attribute (not saved by tessel?)");
  return std::string(value);
}

/// Samples train() accepts: at least one, all of one non-zero width, throughputs finite and >= 0.
Result<void> check_samples(const std::vector<CostSample> &samples) {
  if (samples.empty()) return make_error(ErrorKind::InvalidInput, "cost model: no samples to train on");
  const size_t width = samples.front().features.size();
  if (width == 0) return make_error(ErrorKind::InvalidInput, "cost model: sample 0 has no features");
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].features.size() != width)
      return make_error(ErrorKind::InvalidInput, "cost model: sample " + std::to_string(i) + " has " +
                        std::to_string(samples[i].features.size()) + " features, sample 0 has " +
                        std::to_string(width));
    if (!std::isfinite(samples[i].throughput) || samples[i].throughput < 0)
      return make_error(ErrorKind::InvalidInput,
                        "cost model: sample " + std::to_string(i) + " (workload '" + samples[i].workload_key +
                        "') has throughput " + number_text(samples[i].throughput) + "; use 0 for a failed candidate");
  }
  return {};
}

/// The samples as an XGBoost matrix with normalized labels and, for ranking, one query
/// group per workload (groups must be contiguous rows, so rows are ordered by workload).
Result<std::unique_ptr<Matrix>> training_matrix(const std::vector<CostSample> &samples, CostObjective objective) {
  const size_t width = samples.front().features.size();
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return samples[a].workload_key < samples[b].workload_key; });
  const std::vector<float> labels_by_sample = normalized_throughputs(samples);
  std::vector<float> data, labels;
  data.reserve(samples.size() * width);
  std::vector<unsigned> group_sizes;
  for (size_t k = 0; k < order.size(); ++k) {
    const CostSample &s = samples[order[k]];
    data.insert(data.end(), s.features.begin(), s.features.end());
    labels.push_back(labels_by_sample[order[k]]);
    if (k == 0 || s.workload_key != samples[order[k - 1]].workload_key) group_sizes.push_back(0);
    ++group_sizes.back();
  }
  auto matrix = std::make_unique<Matrix>();
  if (auto e = xgboost_failure(XGDMatrixCreateFromMat(data.data(), samples.size(), width, NAN, &matrix->handle),
                               "DMatrixCreateFromMat"))
    return *e;
  if (auto e = xgboost_failure(XGDMatrixSetFloatInfo(matrix->handle, "label", labels.data(), labels.size()),
                               "DMatrixSetFloatInfo(label)"))
    return *e;
  if (objective == CostObjective::PairwiseRanking)
    if (auto e = xgboost_failure(XGDMatrixSetUIntInfo(matrix->handle, "group", group_sizes.data(), group_sizes.size()),
                                 "DMatrixSetUIntInfo(group)"))
      return *e;
  return matrix;
}

/// A new booster trained on `matrix` for `rounds` rounds, tagged with the width and
/// objective that save() writes and load() checks. With `base` (a saved model of the same
/// width and objective), its trees come first and the new rounds fit what they miss.
Result<std::shared_ptr<Booster>> boost(const Matrix &matrix, size_t width, const CostModelOptions &options, int rounds,
                                       const std::string *base = nullptr) {
  auto booster = std::make_shared<Booster>();
  booster->feature_width = static_cast<int>(width);
  DMatrixHandle training[] = {matrix.handle};
  if (auto e = xgboost_failure(XGBoosterCreate(training, 1, &booster->handle), "BoosterCreate")) return *e;
  if (base)
    if (auto e = xgboost_failure(XGBoosterLoadModelFromBuffer(booster->handle, base->data(), base->size()),
                                 "BoosterLoadModelFromBuffer(pretrained)"))
      return *e;
  const std::pair<std::string, std::string> params[] = {
      {"objective", xgboost_objective(options.objective)},
      {"tree_method", "hist"},
      {"max_depth", std::to_string(options.max_depth)},
      {"eta", number_text(options.learning_rate)},
      {"min_child_weight", number_text(options.min_child_weight)},
      {"nthread", std::to_string(options.threads)},
      {"seed", std::to_string(options.seed)},
      {"verbosity", "0"},
  };
  for (const auto &[name, value] : params)
    if (auto e = xgboost_failure(XGBoosterSetParam(booster->handle, name.c_str(), value.c_str()),
                                 "BoosterSetParam(" + name + "=" + value + ")"))
      return *e;
  for (int round = 0; round < rounds; ++round)
    if (auto e = xgboost_failure(XGBoosterUpdateOneIter(booster->handle, round, matrix.handle),
                                 "BoosterUpdateOneIter(round " + std::to_string(round) + ")"))
      return *e;
  const std::pair<const char *, std::string> attributes[] = {
      {kWidthAttribute, std::to_string(width)},
      {kObjectiveAttribute, to_text(options.objective)},
  };
  for (const auto &[key, value] : attributes)
    if (auto e = xgboost_failure(XGBoosterSetAttr(booster->handle, key, value.c_str()),
                                 std::string("BoosterSetAttr(") + key + ")"))
      return *e;
  return booster;
}

/// The booster as XGBoost JSON: what save() writes and train() continues from.
Result<std::string> model_bytes(BoosterHandle handle) {
  bst_ulong length = 0;
  const char *bytes = nullptr;
  if (auto e = xgboost_failure(XGBoosterSaveModelToBuffer(handle, "{\"format\": \"json\"}", &length, &bytes),
                               "BoosterSaveModelToBuffer"))
    return *e;
  return std::string(bytes, length);
}

}  // namespace

struct XgbCostModel::State {
  mutable std::mutex mutex;
  std::shared_ptr<Booster> booster;  // null: untrained
  /// The pretrained model: its saved bytes (what train() continues from) and the booster
  /// that predicts until the first train().
  std::string base_bytes;
  std::shared_ptr<Booster> base;
};

const char *to_text(CostObjective objective) {
  return objective == CostObjective::PairwiseRanking ? "pairwise_ranking" : "squared_error";
}

XgbCostModel::XgbCostModel(CostModelOptions options) : options_(options), state_(std::make_unique<State>()) {}
XgbCostModel::~XgbCostModel() = default;
XgbCostModel::XgbCostModel(XgbCostModel &&other) noexcept = default;
XgbCostModel &XgbCostModel::operator=(XgbCostModel &&other) noexcept = default;

Result<void> XgbCostModel::train(const std::vector<CostSample> &samples) {
  if (auto checked = check_samples(samples); !checked) return checked.error();
  auto matrix = training_matrix(samples, options_.objective);
  if (!matrix) return matrix.error();
  const size_t width = samples.front().features.size();
  std::string base;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->base && static_cast<size_t>(state_->base->feature_width) == width) base = state_->base_bytes;
  }
  // From a pretrained model, a few rounds per few records: the new trees correct it where
  // this machine's records disagree, without washing it out while they are few.
  const int rounds = base.empty() ? options_.rounds
                                  : std::clamp(static_cast<int>(samples.size() / 4), 10, options_.rounds);
  auto booster = boost(*matrix.value(), width, options_, rounds, base.empty() ? nullptr : &base);
  if (!booster) return booster.error();
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->booster = std::move(booster.value());
  return {};
}

Result<std::vector<float>> XgbCostModel::predict(const std::vector<std::vector<float>> &rows) const {
  std::shared_ptr<Booster> booster;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    booster = state_->booster ? state_->booster : state_->base;
  }
  if (!booster) return std::vector<float>(rows.size(), 0.0f);
  if (rows.empty()) return std::vector<float>();
  const size_t width = static_cast<size_t>(booster->feature_width);
  std::vector<float> data;
  data.reserve(rows.size() * width);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != width)
      return make_error(ErrorKind::InvalidInput,
                        "cost model: row " + std::to_string(i) + " has " + std::to_string(rows[i].size()) +
                        " features, the model was trained on " + std::to_string(width));
    data.insert(data.end(), rows[i].begin(), rows[i].end());
  }
  // In-place prediction from the dense array: no DMatrix to build.
  std::ostringstream array;
  array << "{\"data\": [" << reinterpret_cast<uintptr_t>(data.data()) << ", true], \"shape\": [" << rows.size() << ", "
        << width << "], \"typestr\": \"<f4\", \"version\": 3}";
  const char *config =
      "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, \"iteration_end\": 0, \"strict_shape\": false, "
      "\"missing\": NaN, \"cache_id\": 0}";
  const bst_ulong *shape = nullptr;
  bst_ulong dimensions = 0;
  const float *scores = nullptr;
  // The output buffer belongs to the booster until its next call: copy it out under the lock.
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (auto e = xgboost_failure(XGBoosterPredictFromDense(booster->handle, array.str().c_str(), config, nullptr, &shape,
                                                         &dimensions, &scores),
                               "BoosterPredictFromDense"))
    return *e;
  bst_ulong count = 1;
  for (bst_ulong d = 0; d < dimensions; ++d) count *= shape[d];
  if (count != rows.size())
    return make_error(ErrorKind::Internal,
                      "XGBoost returned " + std::to_string(count) + " predictions for " + std::to_string(rows.size()) +
                          " rows");
  return std::vector<float>(scores, scores + count);
}

bool XgbCostModel::trained() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->booster != nullptr || state_->base != nullptr;
}

int XgbCostModel::feature_width() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const auto &current = state_->booster ? state_->booster : state_->base;
  return current ? current->feature_width : 0;
}

Result<void> XgbCostModel::start_from(const std::string &path) {
  TESSEL_TRY(XgbCostModel pretrained, load(path, options_));
  if (pretrained.options_.objective != options_.objective)
    return make_error(ErrorKind::InvalidInput,
                      "cost model '" + path + "' was trained for " + to_text(pretrained.options_.objective) +
                      ", this one uses " + to_text(options_.objective));
  TESSEL_TRY(std::string bytes, model_bytes(pretrained.state_->booster->handle));
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->base = pretrained.state_->booster;
  state_->base_bytes = std::move(bytes);
  return {};
}

bool XgbCostModel::pretrained() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->base != nullptr;
}

Result<void> XgbCostModel::save(const std::string &path) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const auto &current = state_->booster ? state_->booster : state_->base;
  if (!current)
    return make_error(ErrorKind::Internal, "cost model: nothing to save to '" + path + "', the model is untrained");
  TESSEL_TRY(const std::string bytes, model_bytes(current->handle));
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      return make_error(ErrorKind::Io, "cost model: cannot write '" + temporary + "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return make_error(ErrorKind::Io, "cost model: cannot rename '" + temporary + "' to '" + path + "'");
  }
  return {};
}

Result<XgbCostModel> XgbCostModel::load(const std::string &path, CostModelOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorKind::NotFound, "cost model: cannot open '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return make_error(ErrorKind::InvalidInput, "cost model: '" + path + "' is empty");

  auto booster = std::make_shared<Booster>();
  auto in_file = [&](const Error &e) { return make_error(e.kind, "cost model '" + path + "': " + e.message); };
  if (auto e = xgboost_failure(XGBoosterCreate(nullptr, 0, &booster->handle), "BoosterCreate")) return in_file(*e);
  if (auto e = xgboost_failure(XGBoosterLoadModelFromBuffer(booster->handle, bytes.data(), bytes.size()),
                               "BoosterLoadModelFromBuffer"))
    return in_file(*e);
  auto width = read_attribute(booster->handle, kWidthAttribute);
  if (!width) return in_file(width.error());
  try {
    booster->feature_width = std::stoi(width.value());
  } catch (const std::exception &) {
    return make_error(ErrorKind::InvalidInput,
                      "cost model '" + path + "': feature width '" + width.value() + "' is not a number");
  }
  if (booster->feature_width <= 0)
    return make_error(ErrorKind::InvalidInput,
                      "cost model '" + path + "': feature width " + width.value() + " is not positive");
  auto objective = read_attribute(booster->handle, kObjectiveAttribute);
  if (!objective) return in_file(objective.error());
  if (objective.value() == to_text(CostObjective::PairwiseRanking))
    options.objective = CostObjective::PairwiseRanking;
  else if (objective.value() == to_text(CostObjective::SquaredError))
    options.objective = CostObjective::SquaredError;
  else
    return make_error(ErrorKind::InvalidInput,
                      "cost model '" + path + "': unknown objective '" + objective.value() + "'");
  if (auto e = xgboost_failure(XGBoosterSetParam(booster->handle, "nthread", std::to_string(options.threads).c_str()),
                               "BoosterSetParam(nthread)"))
    return in_file(*e);

  XgbCostModel model(options);
  model.state_->booster = std::move(booster);
  return model;
}

}  // namespace tessel
