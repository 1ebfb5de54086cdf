#include "sim/engine/plan_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "sim/core/units.h"

namespace kvtier {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What the search knows, and the runs it asks for.
class Search {
 public:
  Search(const PlanSearchOptions& options, const PlanEvaluator& evaluate)
      : o_(options), evaluate_(evaluate), known_(options.choices.size()) {
    result_.choices.resize(options.choices.size());
  }

  PlanSearchResult run() {
    std::vector<size_t> chosen = bisect();
    confirm(chosen);
    confirm_closest();
    finish();
    return std::move(result_);
  }

 private:
  using Runs = std::map<uint64_t, nlohmann::json>;  // seed -> summary

  void say(const std::string& line) {
    result_.steps.push_back(line);
    if (o_.on_step) o_.on_step(line);
  }

  // Runs what is not run yet, in one call of the evaluator.
  void run_probes(std::vector<PlanProbe> probes) {
    std::vector<PlanProbe> missing;
    for (const PlanProbe& p : probes) {
      const auto& runs = known_[p.choice][p.size];
      bool listed = std::any_of(missing.begin(), missing.end(), [&](const PlanProbe& m) {
        return m.choice == p.choice && m.size == p.size && m.seed == p.seed;
      });
      if (!runs.contains(p.seed) && !listed) missing.push_back(p);
    }
    if (missing.empty()) return;
    std::vector<nlohmann::json> summaries = evaluate_(missing);
    for (size_t i = 0; i < missing.size(); ++i)
      known_[missing[i].choice][missing[i].size][missing[i].seed] = summaries[i];
    result_.simulations += missing.size();
    ++result_.rounds;
  }

  PlanPoint point(size_t c, size_t size, bool all_seeds) const {
    PlanPoint p;
    p.size = size;
    const Runs& runs = known_[c].at(size);
    for (uint64_t seed : o_.seeds) {
      if (!runs.contains(seed)) continue;
      p.seeds.push_back(seed);
      p.summaries.push_back(runs.at(seed));
      if (!all_seeds) break;
    }
    p.pass = true;
    for (const PlanTarget& t : o_.targets) {
      double sum = 0;
      double worst =
          t.at_least ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
      for (const nlohmann::json& s : p.summaries) {
        const double v = summary_figure(s, t.metric);
        sum += v;  // NaN where a run lacks the figure: the mean misses the target
        worst = std::isnan(v) || std::isnan(worst) ? kNaN
                                                   : (t.at_least ? std::min(worst, v) : std::max(worst, v));
      }
      p.mean.push_back(sum / static_cast<double>(p.summaries.size()));
      p.worst.push_back(worst);
      p.pass = p.pass && meets(t, p.mean.back());
    }
    return p;
  }

  // "ttft_p95 2.91 s > 2.00 s" for each target the point misses, or "meets every target".
  std::string verdict(const PlanPoint& p) const {
    std::string misses;
    for (size_t t = 0; t < o_.targets.size(); ++t) {
      const PlanTarget& target = o_.targets[t];
      if (meets(target, p.mean[t])) continue;
      misses +=
          std::string(misses.empty() ? "" : ", ") + target.name + " " + miss_comparison(target, p.mean[t]);
    }
    return misses.empty() ? "meets every target" : "misses " + misses;
  }

  std::string label(size_t c, size_t size) const { return o_.choices[c] + " at " + o_.sizes[size]; }

  // The smallest menu index at which the first seed's run passes, per choice; sizes.size() when none does.
  std::vector<size_t> bisect() {
    const long n = static_cast<long>(o_.sizes.size());
    std::vector<long> lo(o_.choices.size(), -1), hi(o_.choices.size(), n);
    const uint64_t seed = o_.seeds[0];
    say("Bisection over " + std::to_string(n) + " sizes with seed " + std::to_string(seed) + " (assuming a " +
        o_.direction.easier + " size never hurts):");
    while (true) {
      std::vector<size_t> active;
      for (size_t c = 0; c < o_.choices.size(); ++c) {
        if (hi[c] - lo[c] > 1) active.push_back(c);
      }
      if (active.empty()) break;
      const long per_choice = std::max<long>(1, static_cast<long>(o_.parallel / active.size()));
      std::vector<PlanProbe> probes;
      std::map<size_t, std::vector<size_t>> sizes;  // per choice, its probes this round
      for (size_t c : active) {
        const long k = std::min(per_choice, hi[c] - lo[c] - 1);
        for (long j = 1; j <= k; ++j) {
          const auto s = static_cast<size_t>(lo[c] + (hi[c] - lo[c]) * j / (k + 1));
          if (std::find(sizes[c].begin(), sizes[c].end(), s) != sizes[c].end()) continue;
          sizes[c].push_back(s);
          probes.push_back({c, s, seed});
        }
      }
      run_probes(probes);
      for (size_t c : active) {
        long new_hi = hi[c];
        for (size_t s : sizes[c]) {
          if (point(c, s, false).pass) new_hi = std::min(new_hi, static_cast<long>(s));
        }
        long new_lo = lo[c];
        for (size_t s : sizes[c]) {
          if (!point(c, s, false).pass && static_cast<long>(s) < new_hi)
            new_lo = std::max(new_lo, static_cast<long>(s));
        }
        for (size_t s : sizes[c]) say("  " + label(c, s) + ": " + verdict(point(c, s, false)));
        lo[c] = new_lo;
        hi[c] = new_hi;
        if (hi[c] - lo[c] > 1) {
          say("    " + o_.choices[c] + ": the answer lies between " +
              (lo[c] < 0 ? "the menu's start" : o_.sizes[lo[c]]) + " and " +
              (hi[c] == n ? "the menu's end" : o_.sizes[hi[c]]));
        } else if (hi[c] == n) {
          say("    " + o_.choices[c] + ": no size on the menu meets every target with seed " +
              std::to_string(seed));
        } else {
          say("    " + o_.choices[c] + ": " + o_.direction.best + " passing size " + o_.sizes[hi[c]] +
              " with seed " + std::to_string(seed));
        }
      }
    }
    std::vector<size_t> chosen;
    for (long h : hi) chosen.push_back(static_cast<size_t>(h));
    return chosen;
  }

  std::vector<PlanProbe> all_seeds(size_t c, size_t size) const {
    std::vector<PlanProbe> probes;
    for (uint64_t seed : o_.seeds) probes.push_back({c, size, seed});
    return probes;
  }

  // Confirms each choice's candidate and the entry below it with every seed, moving the candidate one
  // entry at a time until it passes and the one below fails (or it is the menu's first, or its last fails).
  void confirm(const std::vector<size_t>& bisected) {
    const size_t n = o_.sizes.size();
    std::vector<size_t> candidate(o_.choices.size());
    std::vector<bool> settled(o_.choices.size(), false);
    for (size_t c = 0; c < candidate.size(); ++c) candidate[c] = std::min(bisected[c], n - 1);
    say("Confirmation with seeds " + seed_list_text(o_.seeds) +
        " (a point passes when the mean over its seeds meets "
        "every target):");
    for (size_t step = 0; step <= n + 1; ++step) {
      std::vector<PlanProbe> probes;
      for (size_t c = 0; c < candidate.size(); ++c) {
        if (settled[c]) continue;
        for (const PlanProbe& p : all_seeds(c, candidate[c])) probes.push_back(p);
        if (candidate[c] > 0) {
          for (const PlanProbe& p : all_seeds(c, candidate[c] - 1)) probes.push_back(p);
        }
      }
      if (probes.empty()) break;
      run_probes(probes);
      for (size_t c = 0; c < candidate.size(); ++c) {
        if (settled[c]) continue;
        ChoiceOutcome& out = result_.choices[c];
        const size_t s = candidate[c];
        PlanPoint here = point(c, s, true);
        say("  " + label(c, s) + ": " + verdict(here));
        if (here.pass) {
          if (s == 0) {
            out.chosen = s;
            settled[c] = true;
            say("    " + o_.choices[c] + ": " + o_.sizes[s] + ", the " + o_.direction.best +
                " size on the menu, already meets every target");
            continue;
          }
          PlanPoint below = point(c, s - 1, true);
          say("  " + label(c, s - 1) + ": " + verdict(below));
          if (below.pass) {
            say("    " + o_.choices[c] + ": the seeds pass " + o_.sizes[s - 1] + " too; trying it");
            candidate[c] = s - 1;
            continue;
          }
          out.chosen = s;
          out.binding = s - 1;
          settled[c] = true;
          say("    " + o_.choices[c] + ": " + o_.sizes[s] + " confirmed; " + o_.sizes[s - 1] + " misses");
        } else if (s + 1 < n) {
          say("    " + o_.choices[c] + ": the seeds fail " + o_.sizes[s] + "; trying " + o_.sizes[s + 1]);
          candidate[c] = s + 1;
        } else {
          settled[c] = true;
          say("    " + o_.choices[c] + ": no size on the menu meets every target");
        }
      }
    }
  }

  void finish() {
    for (size_t c = 0; c < o_.choices.size(); ++c) {
      ChoiceOutcome& out = result_.choices[c];
      for (const auto& [size, runs] : known_[c]) out.points.push_back(point(c, size, true));
      // Non-monotone: a smaller size that passes and a larger one that fails, with the same seeds.
      std::set<std::pair<size_t, size_t>> reported;
      for (bool first_seed_only : {true, false}) {
        std::vector<PlanPoint> level;
        for (const PlanPoint& p : out.points) {
          if (first_seed_only) {
            level.push_back(point(c, p.size, false));
          } else if (p.seeds.size() == o_.seeds.size() && o_.seeds.size() > 1) {
            level.push_back(p);
          }
        }
        for (size_t i = 0; i < level.size(); ++i) {
          for (size_t j = i + 1; j < level.size(); ++j) {
            if (!level[i].pass || level[j].pass || !reported.insert({level[i].size, level[j].size}).second)
              continue;
            out.non_monotone.push_back(
                o_.choices[c] + ": " + o_.sizes[level[i].size] + " meets every target but the " +
                o_.direction.easier + " " + o_.sizes[level[j].size] + " " + verdict(level[j]) +
                (first_seed_only ? " (seed " + std::to_string(o_.seeds[0]) + ")" : " (mean over the seeds)"));
          }
        }
      }
      if (!out.chosen) out.closest = closest(c);
    }
  }

  // The menu index, among the points run, whose worst target is missed by the least (ties: the smaller).
  size_t closest(size_t c) const {
    double best = std::numeric_limits<double>::infinity();
    std::optional<size_t> found;
    for (const auto& [size, runs] : known_[c]) {
      const double worst = worst_shortfall(o_.targets, point(c, size, true));
      if (!found || worst < best) {
        best = worst;
        found = size;
      }
    }
    return *found;
  }

  // A choice without an answer is judged by its closest point, so that point is run with every seed too
  // (which may make another point the closest: repeated until the closest has every seed).
  void confirm_closest() {
    for (size_t round = 0; round < o_.sizes.size(); ++round) {
      std::vector<PlanProbe> probes;
      for (size_t c = 0; c < o_.choices.size(); ++c) {
        if (result_.choices[c].chosen) continue;
        const size_t size = closest(c);
        if (point(c, size, true).seeds.size() == o_.seeds.size()) continue;
        say("  " + label(c, size) + " is the closest to the targets so far: run with every seed");
        for (const PlanProbe& p : all_seeds(c, size)) probes.push_back(p);
      }
      if (probes.empty()) return;
      run_probes(probes);
    }
  }

  const PlanSearchOptions& o_;
  const PlanEvaluator& evaluate_;
  std::vector<std::map<size_t, Runs>> known_;  // per choice, per menu index
  PlanSearchResult result_;
};

}  // namespace

const PlanPoint* ChoiceOutcome::point(size_t size) const {
  for (const PlanPoint& p : points) {
    if (p.size == size) return &p;
  }
  return nullptr;
}

double summary_figure(const nlohmann::json& summary, const std::string& dotted) {
  const nlohmann::json* node = &summary;
  size_t start = 0;
  while (start <= dotted.size()) {
    size_t dot = std::min(dotted.find('.', start), dotted.size());
    std::string key = dotted.substr(start, dot - start);
    if (!node->is_object() || !node->contains(key)) return kNaN;
    node = &(*node)[key];
    start = dot + 1;
  }
  return node->is_number() ? node->get<double>() : kNaN;
}

bool meets(const PlanTarget& target, double value) {
  if (std::isnan(value)) return false;
  return target.at_least ? value >= target.limit : value <= target.limit;
}

double shortfall(const PlanTarget& target, double value) {
  if (std::isnan(value)) return std::numeric_limits<double>::infinity();
  if (meets(target, value)) return 0;
  return target.at_least ? (target.limit - value) / target.limit : (value - target.limit) / target.limit;
}

std::string format_target_value(const PlanTarget& target, double value) {
  if (std::isnan(value)) return "none";
  if (target.at_least) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", value);
    return text;
  }
  return format_duration(value);
}

std::string miss_comparison(const PlanTarget& target, double value) {
  return format_target_value(target, value) + (target.at_least ? " < " : " > ") +
         format_target_value(target, target.limit);
}

double worst_shortfall(const std::vector<PlanTarget>& targets, const PlanPoint& point) {
  double worst = 0;
  for (size_t t = 0; t < targets.size(); ++t) worst = std::max(worst, shortfall(targets[t], point.mean[t]));
  return worst;
}

std::string seed_list_text(const std::vector<uint64_t>& seeds) {
  std::string text;
  for (uint64_t s : seeds) text += std::string(text.empty() ? "" : ",") + std::to_string(s);
  return text;
}

double mean_figure(const PlanPoint& point, const std::string& dotted) {
  double sum = 0;
  size_t count = 0;
  for (const nlohmann::json& s : point.summaries) {
    double v = summary_figure(s, dotted);
    if (std::isnan(v)) continue;
    sum += v;
    ++count;
  }
  return count == 0 ? kNaN : sum / static_cast<double>(count);
}

PlanSearchResult search_plan(const PlanSearchOptions& options, const PlanEvaluator& evaluate) {
  return Search(options, evaluate).run();
}

std::optional<size_t> recommended_choice(
    const PlanSearchResult& result, PlanObjective objective,
    const std::vector<std::vector<std::optional<double>>>& usd_per_hour) {
  auto cost = [&](size_t c) -> double {
    const std::optional<double>& price =
        usd_per_hour.size() > c ? usd_per_hour[c][*result.choices[c].chosen] : std::optional<double>{};
    return price ? *price : std::numeric_limits<double>::infinity();
  };
  std::optional<size_t> best;
  for (size_t c = 0; c < result.choices.size(); ++c) {
    if (!result.choices[c].chosen) continue;
    if (!best) {
      best = c;
      continue;
    }
    const size_t size = *result.choices[c].chosen, best_size = *result.choices[*best].chosen;
    const bool better = objective == PlanObjective::kLeastCost
                            ? cost(c) < cost(*best) || (cost(c) == cost(*best) && size < best_size)
                            : size < best_size || (size == best_size && cost(c) < cost(*best));
    if (better) best = c;
  }
  return best;
}

}  // namespace kvtier
