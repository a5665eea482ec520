#include "tuner/evolutionary_search.h"

#include <algorithm>
#include <map>

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

}  // namespace

std::vector<Candidate> propose_candidates(const ComputeDesc &compute, const ScheduleSpace &space,
                                          const CostModel &model, const std::vector<Schedule> &seeds,
                                          const std::set<std::string> &measured, int batch,
                                          const SearchOptions &options, std::mt19937_64 &rng) {
  std::map<std::string, Candidate> seen;  // by hash: every distinct schedule considered
  auto consider = [&](const Schedule &s) -> Candidate * {
    const std::string hash = schedule_hash(s);
    auto it = seen.find(hash);
    if (it != seen.end()) return &it->second;
    std::vector<float> features = candidate_features(compute, s, space.parallelism());
    if (features.empty()) return nullptr;
    return &seen.emplace(hash, Candidate{s, std::move(features), 0}).first->second;
  };

  std::vector<Candidate> population;
  for (const Schedule &s : seeds)
    if (Candidate *c = consider(s)) population.push_back(*c);
  const int fresh = std::max(0, options.population - static_cast<int>(population.size()));
  for (const Schedule &s : space.sample(compute, fresh, rng))
    if (Candidate *c = consider(s)) population.push_back(*c);
  score(model, population);

  for (int generation = 0; generation < options.generations && !population.empty(); ++generation) {
    std::stable_sort(population.begin(), population.end(),
                     [](const Candidate &a, const Candidate &b) { return a.score > b.score; });
    std::vector<Candidate> children;
    std::uniform_real_distribution<double> u(0, 1);
    for (int i = 0; i < options.population; ++i) {
      const Candidate &parent = population[rank_biased_pick(population.size(), rng)];
      std::optional<Schedule> child;
      if (u(rng) < options.crossover_fraction) {
        const Candidate &other = population[rank_biased_pick(population.size(), rng)];
        child = crossover(compute, parent.schedule, other.schedule, rng);
        if (child && space.gpu() && !space.admits(compute, *child).ok()) child.reset();
      } else {
        auto mutated = space.mutate(compute, parent.schedule, rng);
        if (mutated.ok()) child = mutated.value();
      }
      if (!child) continue;
      if (Candidate *c = consider(*child)) children.push_back(*c);
    }
    score(model, children);
    // The next generation: the best of parents and children.
    population.insert(population.end(), children.begin(), children.end());
    std::stable_sort(population.begin(), population.end(),
                     [](const Candidate &a, const Candidate &b) { return a.score > b.score; });
    std::vector<Candidate> next;
    std::set<std::string> kept;
    for (const Candidate &c : population)
      if (static_cast<int>(next.size()) < options.population && kept.insert(schedule_hash(c.schedule)).second)
        next.push_back(c);
    population = std::move(next);
  }

  // Everything considered that was never measured, best predicted first.
  std::vector<Candidate> pool;
  for (auto &[hash, c] : seen)
    if (!measured.count(hash)) pool.push_back(c);
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
