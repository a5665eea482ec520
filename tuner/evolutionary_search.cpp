#include "tuner/evolutionary_search.h"

#include <algorithm>
#include <map>
#include <memory>
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

namespace {

/// A crossover child with its replayed tree.
std::optional<CoveredSchedule> replayed_crossover(const ComputeDesc &compute, const Schedule &a, const Schedule &b,
                                                  std::mt19937_64 &rng) {
  if (a.steps.size() != b.steps.size()) return std::nullopt;
  for (size_t i = 0; i < a.steps.size(); ++i)
    if (a.steps[i].index() != b.steps[i].index()) return std::nullopt;
  std::bernoulli_distribution coin(0.5);
  for (int attempt = 0; attempt < 4; ++attempt) {
    Schedule child = a;
    for (size_t i = 0; i < child.steps.size(); ++i)
      if (coin(rng)) child.steps[i] = b.steps[i];
    if (child == a || child == b) continue;
    if (Result<ScheduleTree> tree = validate_and_replay(compute, child); tree.ok())
      return CoveredSchedule{std::move(child), std::move(tree.value())};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Schedule> crossover(const ComputeDesc &compute, const Schedule &a, const Schedule &b,
                                  std::mt19937_64 &rng) {
  std::optional<CoveredSchedule> child = replayed_crossover(compute, a, b, rng);
  if (!child) return std::nullopt;
  return std::move(child->schedule);
}

namespace {

/// A schedule the search considers, with its replayed tree when the step that made it
/// replayed it already (null: replay it to score it): what the sampler returns, too.
using Proposal = SampledSchedule;

std::vector<Proposal> without_trees(const std::vector<Schedule> &schedules) {
  std::vector<Proposal> proposals;
  for (const Schedule &s : schedules) proposals.push_back({s, nullptr});
  return proposals;
}

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

/// Every distinct schedule the search considered, by hash, with its features and replayed
/// tree; replay and features (most of the search's time) run on all cores. The trees let a
/// mutation start from its parent without replaying it.
class CandidatePool {
 public:
  CandidatePool(const ComputeDesc &compute, const ScheduleSpace &space, int threads)
      : compute_(compute), space_(space), threads_(threads) {}

  /// The candidates of `proposals` (new ones added), in order; those that do not replay are
  /// left out.
  std::vector<Candidate> consider(std::vector<Proposal> proposals) {
    std::vector<std::string> hashes(proposals.size());
    std::vector<size_t> fresh;
    std::set<std::string> fresh_hashes;
    for (size_t i = 0; i < proposals.size(); ++i) {
      hashes[i] = schedule_hash(proposals[i].schedule);
      if (!seen_.count(hashes[i]) && fresh_hashes.insert(hashes[i]).second) fresh.push_back(i);
    }
    std::vector<std::vector<float>> features(fresh.size());
    parallel_for_each(static_cast<int>(fresh.size()), threads_, [&](int k) {
      Proposal &p = proposals[fresh[k]];
      if (!p.tree) {
        Result<ScheduleTree> tree = validate_and_replay(compute_, p.schedule);
        if (!tree.ok()) return;
        p.tree = std::make_shared<const ScheduleTree>(std::move(tree.value()));
      }
      features[k] = schedule_features(compute_, *p.tree, space_.parallelism());
    });
    for (size_t k = 0; k < fresh.size(); ++k) {
      Proposal &p = proposals[fresh[k]];
      if (features[k].empty()) p.tree.reset();
      seen_.emplace(hashes[fresh[k]],
                    Entry{Candidate{std::move(p.schedule), std::move(features[k]), 0, hashes[fresh[k]]}, std::move(p.tree)});
    }
    std::vector<Candidate> result;
    for (const std::string &hash : hashes) {
      const Candidate &c = seen_.at(hash).candidate;
      if (!c.features.empty()) result.push_back(c);
    }
    return result;
  }

  /// The replayed tree of a considered candidate; null if it is not one.
  const ScheduleTree *tree_of(const std::string &hash) const {
    auto found = seen_.find(hash);
    return found == seen_.end() ? nullptr : found->second.tree.get();
  }

  /// Every candidate considered that replays and is not in `measured`.
  std::vector<Candidate> unmeasured(const std::set<std::string> &measured) const {
    std::vector<Candidate> pool;
    for (const auto &[hash, entry] : seen_)
      if (!entry.candidate.features.empty() && !measured.count(hash)) pool.push_back(entry.candidate);
    return pool;
  }

 private:
  struct Entry {
    Candidate candidate;  // features empty: does not replay
    std::shared_ptr<const ScheduleTree> tree;
  };
  const ComputeDesc &compute_;
  const ScheduleSpace &space_;
  int threads_;
  std::map<std::string, Entry> seen_;
};

/// One generation's children of `population` (sorted best first): each drawn with its own
/// generator seeded from `rng`, so the result does not depend on the thread count. Parents'
/// trees come from `considered`, which is only read here.
std::vector<Proposal> breed(const ComputeDesc &compute, const ScheduleSpace &space, const CandidatePool &considered,
                            const std::vector<Candidate> &population, const SearchOptions &options,
                            std::mt19937_64 &rng) {
  std::vector<uint64_t> seeds(static_cast<size_t>(options.population));
  for (uint64_t &seed : seeds) seed = rng();
  std::vector<std::optional<Proposal>> children(seeds.size());
  parallel_for_each(static_cast<int>(seeds.size()), options.threads, [&](int i) {
    std::mt19937_64 own(seeds[i]);
    std::uniform_real_distribution<double> u(0, 1);
    const Candidate &parent = population[rank_biased_pick(population.size(), own)];
    std::optional<CoveredSchedule> child;
    if (u(own) < options.crossover_fraction) {
      const Candidate &other = population[rank_biased_pick(population.size(), own)];
      child = replayed_crossover(compute, parent.schedule, other.schedule, own);
      // A child of two admitted parents can still unroll past the cap (one parent's unrolled
      // taps around the other's register tile: a 12 s compile on ResNet-18).
      if (child && !space.admits_replayed(compute, child->schedule, child->tree).ok()) child.reset();
    } else if (const ScheduleTree *tree = considered.tree_of(parent.hash)) {  // every parent was considered
      if (auto mutated = space.mutate_replayed(compute, parent.schedule, *tree, own); mutated.ok())
        child = std::move(mutated.value());
    }
    if (child)
      children[i] = Proposal{std::move(child->schedule), std::make_shared<const ScheduleTree>(std::move(child->tree))};
  });
  std::vector<Proposal> made;
  for (std::optional<Proposal> &child : children)
    if (child) made.push_back(std::move(*child));
  return made;
}

/// `count` samples of the space, drawn on all cores in chunks of fixed size, each chunk with
/// its own generator seeded from `rng`, so the result does not depend on the thread count.
std::vector<Proposal> fresh_samples(const ComputeDesc &compute, const ScheduleSpace &space, int count, int threads,
                                    std::mt19937_64 &rng) {
  constexpr int kChunk = 32;
  const int chunks = (count + kChunk - 1) / kChunk;
  std::vector<uint64_t> seeds(static_cast<size_t>(chunks));
  for (uint64_t &seed : seeds) seed = rng();
  std::vector<std::vector<SampledSchedule>> drawn(seeds.size());
  parallel_for_each(chunks, threads, [&](int i) {
    std::mt19937_64 own(seeds[i]);
    drawn[i] = space.sample_with_trees(compute, std::min(kChunk, count - i * kChunk), own);
  });
  // The sampler's check replayed each one already: its tree comes along.
  std::vector<Proposal> samples;
  for (std::vector<SampledSchedule> &chunk : drawn)
    for (SampledSchedule &s : chunk) samples.push_back(std::move(s));
  return samples;
}

}  // namespace

std::vector<Candidate> propose_candidates(const ComputeDesc &compute, const ScheduleSpace &space,
                                          const CostModel &model, const std::vector<Schedule> &seeds,
                                          const std::set<std::string> &measured, int batch,
                                          const SearchOptions &options, std::mt19937_64 &rng) {
  CandidatePool considered(compute, space, options.threads);
  std::vector<Candidate> population = considered.consider(without_trees(seeds));
  const int fresh = std::max(0, options.population - static_cast<int>(population.size()));
  for (Candidate &c : considered.consider(fresh_samples(compute, space, fresh, options.threads, rng)))
    population.push_back(std::move(c));
  score(model, population);

  const auto by_score = [](const Candidate &a, const Candidate &b) { return a.score > b.score; };
  for (int generation = 0; generation < options.generations && !population.empty(); ++generation) {
    std::stable_sort(population.begin(), population.end(), by_score);
    std::vector<Candidate> children = considered.consider(breed(compute, space, considered, population, options, rng));
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
  std::vector<Candidate> pool = considered.unmeasured(measured);
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
