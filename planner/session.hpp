#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/search/search.hpp"

/// The driver's policy between lowering and output: which strategies of a
/// program are checked and which are searched, the searches, how their
/// results merge, and which plan a bundle is written for. A front end (the
/// CLI, a test, a program using the C++ API) fills one session_options and
/// prints or writes what comes back.
namespace dtplan::planner {

/// The search as a session calls it: planner::search, or a stand-in in tests.
using search_function = search_result (*)(program const&, strategy_spec const&, cost_model const&,
                                          search_options const&);

/// Everything a session is asked to do, in one place.
struct session_options {
  /// Search the program's free strategies; when it has none, the whole
  /// strategy space, with its fixed strategies as baselines (`--optimize`).
  bool optimize = false;
  /// Only this strategy (`--strategy`): checked when fixed, searched when
  /// free. A named fixed strategy is also the plan chosen for a bundle,
  /// with or without `optimize`.
  std::optional<std::string> strategy;
  /// The search's knobs. `search.explain` also asks for the chosen plan's
  /// scaling (planner::explain_scaling).
  search_options search;
  /// The cost model; nullptr: the analytic model.
  cost_model const* model = nullptr;
  /// The search to run; tests substitute one (e.g. one whose threads
  /// cannot start).
  search_function run_search = &planner::search;
};

/// The strategies a session works on, in the program's order.
struct selection {
  std::vector<strategy_spec const*> fixed;  ///< checked and costed as written
  std::vector<strategy_spec const*> free;   ///< searched with `optimize`
};

/// What a session found.
struct session_outcome {
  /// The fixed strategies' plans in the program's order, then each
  /// searched space's results, best first.
  std::vector<plan> plans;
  /// The searches' figures summed over the spaces (only with `optimize`).
  std::optional<search_stats> stats;
  /// With `search.explain`: the searches' rejected regions, then where the
  /// chosen plan loses scaling.
  std::vector<explanation> explanations;
  /// Index in `plans` of the plan a bundle is written for: the named fixed
  /// strategy's when one is named, else the best search result, else the
  /// first valid plan of the program; none when that plan is not valid.
  std::optional<std::size_t> chosen;

  /// Whether any plan is valid (the exit status of dtplan says so).
  [[nodiscard]] bool any_valid() const;
};

/// Resolves `options.strategy` against `p`. Fails, with one error without a
/// location (it is the command line's, not the file's), when no strategy
/// has that name (with a did-you-mean), or when `options.optimize` is off
/// and nothing is fixed: the named strategy is free, or the file has only
/// free ones.
std::optional<selection> select_strategies(program const& p, session_options const& options, dsl::diagnostics& diags);

/// Checks and costs the fixed strategies of `chosen`, searches the free
/// ones (or the whole space) when `options.optimize`, and picks the plan to
/// emit. Adds, in this order: a note per free strategy left unsearched, an
/// error per searched space without a valid plan, every plan's errors and
/// warnings; each distinct diagnostic once (an override's error that every
/// strategy shares), at most 20 errors, 20 warnings and 20 notes, the last
/// one shown with a note counting the rest. When the search's threads cannot be created it warns and
/// searches again with one; fails (an error without a location) only when
/// not even one can.
std::optional<session_outcome> run(program const& p, selection const& chosen, session_options const& options,
                                   dsl::diagnostics& diags);

/// select_strategies, then run.
std::optional<session_outcome> run_plan(program const& p, session_options const& options, dsl::diagnostics& diags);

}  // namespace dtplan::planner
