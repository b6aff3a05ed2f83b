#pragma once
#include <cstdint>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "planner/ir.hpp"
#include "planner/memory.hpp"

namespace dtplan::planner {

/// The static check of one concrete strategy against the model and cluster.
struct check_result {
  strategy s;                   ///< with dp derived (when it was 0) and defaults resolved
  std::int64_t grad_accum = 1;  ///< global_batch / (dp x micro_batch)
  bool legal = false;           ///< divisibility, world size, shard group, ...
  memory_breakdown memory;      ///< computed when legal
  bool fits = false;            ///< legal and memory.total <= memory.usable
  /// Errors at the key that breaks the plan (spec.key_span), with notes that
  /// name the smallest verified changes that make it valid; and warnings
  /// (e.g. tensor parallelism across nodes).
  std::vector<dsl::diagnostic> diags;

  [[nodiscard]] bool valid() const { return legal && fits; }
};

/// Checks `s` (dp = 0 means derive it) as written by `spec` (for spans).
check_result check(program const& p, strategy_spec const& spec, strategy s);

/// The same legality rules without diagnostics, for the search's hot loop.
/// `s.dp` must be set.
bool is_legal(program const& p, strategy const& s);

}  // namespace dtplan::planner
