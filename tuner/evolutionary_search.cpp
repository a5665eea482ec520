#include "tuner/evolutionary_search.h"

#include <algorithm>
#include <map>
#include <optional>

#include "base/parallel_for.h"

#include "schedule/schedule_tree.h"
#include "search/cpu/mutation.h"
#include "search/cpu/sampler.h"
#include "tuner/features.h"

namespace tessel {

std::vector<float> candidate_features(const ComputeDesc &compute, const Schedule &schedule, int threads) {
  auto tree = validate_and_replay(compute, schedule);
  if (!tree.ok()) return {};
  return schedule_features(compute, tree.value(), threads);
}

std::optional<Schedule> crossover(const ComputeDesc &compute, const Schedule &a, const Schedule &b,
                                  std::mt19937_64 &rng) {
  if (a.steps.size() != b.steps.size()) return std::nullopt;
  for (size_t i = 0; i < a.steps.size(); ++i)
    if (a.steps[i].index() != b.steps[i].index()) return std::nullopt;
  std::bernoulli_distribution coin(0.5);
  for (int attempt = 0; attempt < 4; ++attempt) {
    Schedule child = a;
    for (size_t i = 0; i < child.steps.size(); ++i)
      if (coin(rng)) child.steps[i] = b.steps[i];
    if (child != a && child != b && validate_and_replay(compute, child).ok()) return child;
  }
  return std::nullopt;
}

namespace {

/// Scores candidates with the model (all 0 when it is untrained or the widths differ).
void score(const CostModel &model, std::vector<Candidate> &candidates) {
  if (!model.trained() || candidates.empty()) return;
  std::vector<std::vector<float>> rows;
  for (const Candidate &c : candidates) rows.push_back(c.features);
  auto scores = model.predict(rows);
  if (!scores.ok()) return;
  for (size_t i = 0; i < candidates.size(); ++i) candidates[i].score = scores.value()[i];
}

/// Index drawn with probability growing with rank (the best of a sorted list most likely).
size_t rank_biased_pick(size_t n, std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> u(0, 1);
  const double x = u(rng);
  return std::min(n - 1, static_cast<size_t>(x * x * n));
}

/// Every distinct schedule the search considered, by hash, with its features; replay and
/// features (most of the search's time) run on all cores.
class CandidatePool {
 public:
  CandidatePool(const ComputeDesc &compute, const ScheduleSpace &space, int threads)
      : compute_(compute), space_(space), threads_(threads) {}

  /// The candidates of `schedules` (new ones added), in order; those that do not replay are
  /// left out.
  std::vector<Candidate> consider(const std::vector<Schedule> &schedules) {
    std::vector<std::string> hashes(schedules.size());
    std::vector<size_t> fresh;
    std::set<std::string> fresh_hashes;
    for (size_t i = 0; i < schedules.size(); ++i) {
      hashes[i] = schedule_hash(schedules[i]);
      if (!seen_.count(hashes[i]) && fresh_hashes.insert(hashes[i]).second) fresh.push_back(i);
    }
    std::vector<std::vector<float>> features(fresh.size());
    parallel_for_each(static_cast<int>(fresh.size()), threads_, [&](int k) {
      features[k] = candidate_features(compute_, schedules[fresh[k]], space_.parallelism());
    });
    for (size_t k = 0; k < fresh.size(); ++k)
      seen_.emplace(hashes[fresh[k]], Candidate{schedules[fresh[k]], std::move(features[k]), 0, hashes[fresh[k]]});
    std::vector<Candidate> result;
    for (const std::string &hash : hashes) {
      const Candidate &c = seen_.at(hash);
      if (!c.features.empty()) result.push_back(c);
    }
    return result;
  }

  const std::map<std::string, Candidate> &seen() const { return seen_; }

 private:
  const ComputeDesc &compute_;
  const ScheduleSpace &space_;
  int threads_;
  std::map<std::string, Candidate> seen_;  // features empty: does not replay
};

/// One generation's children of `population` (sorted best first): each drawn with its own
/// generator seeded from `rng`, so the result does not depend on the thread count.
std::vector<Schedule> breed(const ComputeDesc &compute, const ScheduleSpace &space,
                            const std::vector<Candidate> &population, const SearchOptions &options,
                            std::mt19937_64 &rng) {
  std::vector<uint64_t> seeds(static_cast<size_t>(options.population));
  for (uint64_t &seed : seeds) seed = rng();
  std::vector<std::optional<Schedule>> children(seeds.size());
  parallel_for_each(static_cast<int>(seeds.size()), options.threads, [&](int i) {
    std::mt19937_64 own(seeds[i]);
    std::uniform_real_distribution<double> u(0, 1);
    const Candidate &parent = population[rank_biased_pick(population.size(), own)];
    if (u(own) < options.crossover_fraction) {
      const Candidate &other = population[rank_biased_pick(population.size(), own)];
      children[i] = crossover(compute, parent.schedule, other.schedule, own);
      // A child of two admitted parents can still unroll past the cap (one parent's unrolled
      // taps around the other's register tile: a 12 s compile on ResNet-18).
      if (children[i] && !space.admits(compute, *children[i]).ok()) children[i].reset();
    } else if (auto mutated = space.mutate(compute, parent.schedule, own); mutated.ok()) {
      children[i] = mutated.value();
    }
  });
  std::vector<Schedule> made;
  for (std::optional<Schedule> &child : children)
    if (child) made.push_back(std::move(*child));
  return made;
}

/// `count` samples of the space, drawn on all cores in chunks of fixed size, each chunk with
/// its own generator seeded from `rng`, so the result does not depend on the thread count.
std::vector<Schedule> fresh_samples(const ComputeDesc &compute, const ScheduleSpace &space, int count, int threads,
                                    std::mt19937_64 &rng) {
  constexpr int kChunk = 32;
  const int chunks = (count + kChunk - 1) / kChunk;
  std::vector<uint64_t> seeds(static_cast<size_t>(chunks));
  for (uint64_t &seed : seeds) seed = rng();
  std::vector<std::vector<Schedule>> drawn(seeds.size());
  parallel_for_each(chunks, threads, [&](int i) {
    std::mt19937_64 own(seeds[i]);
    drawn[i] = space.sample(compute, std::min(kChunk, count - i * kChunk), own);
  });
  std::vector<Schedule> samples;
  for (std::vector<Schedule> &chunk : drawn)
    for (Schedule &s : chunk) samples.push_back(std::move(s));
  return samples;
}

}  // namespace

std::vector<Candidate> propose_candidates(const ComputeDesc &compute, const ScheduleSpace &space,
                                          const CostModel &model, const std::vector<Schedule> &seeds,
                                          const std::set<std::string> &measured, int batch,
                                          const SearchOptions &options, std::mt19937_64 &rng) {
  CandidatePool considered(compute, space, options.threads);
  std::vector<Candidate> population = considered.consider(seeds);
  const int fresh = std::max(0, options.population - static_cast<int>(population.size()));
  for (Candidate &c : considered.consider(fresh_samples(compute, space, fresh, options.threads, rng)))
    population.push_back(std::move(c));
  score(model, population);

  const auto by_score = [](const Candidate &a, const Candidate &b) { return a.score > b.score; };
  for (int generation = 0; generation < options.generations && !population.empty(); ++generation) {
    std::stable_sort(population.begin(), population.end(), by_score);
    std::vector<Candidate> children = considered.consider(breed(compute, space, population, options, rng));
    score(model, children);
    // The next generation: the best of parents and children.
    population.insert(population.end(), children.begin(), children.end());
    std::stable_sort(population.begin(), population.end(), by_score);
    std::vector<Candidate> next;
    std::set<std::string> kept;
    for (const Candidate &c : population)
      if (static_cast<int>(next.size()) < options.population &&
          kept.insert(c.hash.empty() ? schedule_hash(c.schedule) : c.hash).second)
        next.push_back(c);
    population = std::move(next);
  }

  // Everything considered that was never measured, best predicted first.
  std::vector<Candidate> pool;
  for (const auto &[hash, c] : considered.seen())
    if (!c.features.empty() && !measured.count(hash)) pool.push_back(c);
  if (model.trained()) score(model, pool);
  std::shuffle(pool.begin(), pool.end(), rng);  // ties (an untrained model) fall randomly
  std::stable_sort(pool.begin(), pool.end(), [](const Candidate &a, const Candidate &b) { return a.score > b.score; });
  std::vector<Candidate> picked;
  const int greedy = model.trained() ? static_cast<int>(batch * (1 - options.epsilon) + 0.5) : 0;
  size_t next_best = 0;
  for (; next_best < pool.size() && static_cast<int>(picked.size()) < greedy; ++next_best) picked.push_back(pool[next_best]);
  // The rest at random from what is left: exploration the model cannot bias.
  std::vector<Candidate> rest(pool.begin() + next_best, pool.end());
  std::shuffle(rest.begin(), rest.end(), rng);
  for (size_t i = 0; i < rest.size() && static_cast<int>(picked.size()) < batch; ++i) picked.push_back(rest[i]);
  return picked;
}

}  // namespace tessel
