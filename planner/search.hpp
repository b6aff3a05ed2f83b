#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/cost_model.hpp"
#include "planner/ir.hpp"
#include "planner/plan.hpp"

namespace dtplan::planner {

/// Every knob of the search, in one place.
struct search_options {
  int top = 5;                ///< plans to return, best first
  unsigned threads = 0;       ///< 0: one per hardware thread
  bool explain = false;       ///< collect why whole regions were rejected
  bool progress = false;      ///< print progress to stderr when a search runs > 1 s
};

struct search_stats {
  std::int64_t candidates = 0;  ///< strategies enumerated
  std::int64_t valid = 0;       ///< legal and fitting in memory
  seconds elapsed;              ///< wall time of the search
};

struct search_result {
  std::vector<plan> best;                 ///< top plans, best first, deterministic ties
  search_stats stats;
  std::vector<std::string> explanations;  ///< with explain: rejected regions and why
};

/// The space a strategy spec leaves free: every free key ranges over its
/// values, unset keys keep their defaults. `search_everything()` frees all.
strategy_spec search_everything(std::string name = "search");

/// Finds the fastest valid plans of `space` under `model`: exhaustive over
/// the space, pruned only by legality and by bounds that cannot discard the
/// optimum. Byte-identical results for any thread count.
search_result search(program const& p, strategy_spec const& space, cost_model const& model,
                     search_options const& options);

}  // namespace dtplan::planner
