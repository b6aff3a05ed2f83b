#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/model/cost_model.hpp"
#include "planner/search/divisors.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

namespace dtplan::planner {


/// Every knob of the search, in one place.
struct search_options {
  int top = 5;                ///< plans to return, best first
  unsigned threads = 0;       ///< 0: one per hardware thread
  bool explain = false;       ///< collect why whole regions were rejected
  bool progress = false;      ///< print progress to stderr when a search runs > 1 s
  /// Progress as whole lines every few seconds (a log, not a terminal)
  /// instead of one line rewritten in place.
  bool progress_lines = false;
  /// A space with more candidates is refused before any is looked at (its
  /// size and how to narrow it are said instead): the work a search may do
  /// is bounded and known up front. 64 M candidates take 2-6 s on one core
  /// (Llama 3 405B on 2^24 GPUs, every key free: 20.6 M in 2 s).
  std::int64_t max_candidates = 64'000'000;
  /// After this long the search stops looking at new structures and ranks
  /// what it has (zero: no limit). A stopped search says so, and its result
  /// depends on how far the threads got.
  seconds time_limit;
  std::int64_t max_micro_batch = 64;    ///< `micro_batch = auto`: divisors of global_batch / dp up to this
  std::int64_t max_virtual_stages = 8;  ///< `virtual_stages = auto`: divisors of layers / pp up to this
  /// Valid candidates that wait for costing at once, over all threads (88
  /// bytes each): past it a thread costs what it holds, best bound first,
  /// so memory does not grow with the number of valid candidates. The
  /// result is the same for any value.
  std::size_t max_waiting = std::size_t{1} << 21;
};

/// One costed candidate of the search, before `evaluate` fills the plan.
struct search_entry {
  seconds step;               ///< cost_model::step_time
  bytes memory;               ///< estimate_memory total
  std::int64_t tp_nodes = 1;  ///< nodes one tensor-parallel group spans
  strategy s;
};

/// The total order of search results, so output is deterministic: faster
/// step first, then tensor parallelism over fewer nodes, then less memory,
/// then the strategy's keys in the order dp, tp, pp, cp, zero, shard (all <
/// node < sizes ascending), checkpoint (none < selective < ops < full,
/// recompute_rank),
/// micro_batch, virtual_stages, sequence_parallel, order (axis by axis,
/// tp < cp < dp < pp), ep; smaller first.
bool better(search_entry const& a, search_entry const& b);

/// The rank orders `order = auto` tries: tensor parallelism innermost, the
/// other three axes in every order, the default "tp-cp-dp-pp" first. Orders
/// that differ only in where axes of size 1 sit are searched once.
std::vector<rank_order> const& search_orders();

/// How many times faster `candidate` is than `baseline` (baseline step /
/// candidate step); nothing when either has no time (not valid).
std::optional<double> speedup(plan const& baseline, plan const& candidate);

struct search_stats {
  std::int64_t candidates = 0;  ///< strategies enumerated
  std::int64_t valid = 0;       ///< legal and fitting in memory
  seconds elapsed;              ///< wall time of the search
  std::int64_t looked_at = 0;   ///< candidates of the structures searched (< candidates when stopped)
};

struct search_result {
  /// Why the space was not searched (more than max_candidates), as the
  /// user should read it; empty when it was.
  std::string refused;
  bool stopped = false;                   ///< the time limit ended it before the whole space was seen
  std::vector<plan> best;                 ///< top plans, best first, deterministic ties
  search_stats stats;
  std::vector<explanation> explanations;  ///< with explain: rejected regions and why
  std::vector<search_entry> ranked;       ///< the entries behind `best`, same order
};

/// The space a strategy spec leaves free: every free key ranges over its
/// values, unset keys keep their defaults. `search_everything()` frees all.
///
/// `auto` domains: tp, pp and cp over the divisors of the GPU count, dp
/// derived (a written dp only filters), zero 0..3, checkpoint none,
/// selective, ops, full; micro_batch over the divisors of global_batch / dp up to
/// max_micro_batch; virtual_stages over the divisors of layers / pp up to
/// max_virtual_stages (1 without pipelining); sequence_parallel both ways
/// when tp > 1 (false otherwise); shard `all`, `node` and every divisor of
/// dp strictly between 1 and dp when zero >= 1 (`all` alone with zero = 0);
/// order over search_orders(); ep over the divisors of experts (1 for a
/// dense model). A range keeps the values of that domain inside it (without
/// the caps); a set is taken as written.
strategy_spec search_everything(std::string name = "search");

/// search_everything() anchored at `p`'s model block: the space the driver
/// searches when a file has no free strategy, so that the warnings of its
/// plans and its "no valid plan" point into the file.
strategy_spec whole_space(program const& p);

/// Finds the fastest valid plans of `space` under `model`: exhaustive over
/// the space, pruned only by legality and by bounds that cannot discard the
/// optimum. Byte-identical results for any thread count.
search_result search(program const& p, strategy_spec const& space, cost_model const& model,
                     search_options const& options);

}  // namespace dtplan::planner
