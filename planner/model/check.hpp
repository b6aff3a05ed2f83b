#pragma once
#include <cstdint>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "planner/ir/ir.hpp"
#include "planner/model/memory.hpp"

namespace dtplan::planner {

/// The static check of one concrete strategy against the model and cluster.
struct check_result {
  strategy s;                   ///< with dp derived (when it was 0) and defaults resolved
  std::int64_t grad_accum = 0;  ///< global_batch / (dp x micro_batch); 0 where that is not a whole number
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
/// Errors (the plan is illegal): a degree below 1 or a ZeRO stage outside
/// 0..3; dp x tp x pp x cp != GPUs (or dp not derivable); tp not dividing
/// heads, kv_heads or ffn (the vocabulary is padded to a multiple of
/// 128 x tp as Megatron does, never an error); more pipeline chunks
/// (pp x virtual_stages) than layers; virtual_stages > 1 without pp > 1 or
/// with micro-batches per step not a multiple of pp; global_batch not a
/// multiple of dp x micro_batch; cp not dividing seq_len; an integer shard
/// not dividing dp, or `shard = node` when rank_layout::node_sync_members() is 0; ep not
/// dividing experts or dp x cp, or ep > 1 on a dense model.
/// Warnings: layers spread unevenly (the first chunks take one more, and
/// the memory is counted for the most loaded stage); a tensor-parallel
/// group crossing nodes; sequence_parallel = true with tp = 1 (ignored);
/// a shard group with zero = 0.
/// When a legal plan does not fit, the error sits at the `zero` key if
/// written, else at the key of the dominant term, and its notes list up to
/// three single-key changes (zero, checkpoint, micro_batch,
/// sequence_parallel, shard, tp, pp, cp; each key's mildest change that
/// works), each re-checked legal and fitting, ordered by resulting total.
/// That search re-checks a few dozen strategies: the search's hot loop
/// should use is_legal + estimate_memory instead.
check_result check(program const& p, strategy_spec const& spec, strategy s);

/// The same legality rules without diagnostics, for the search's hot loop.
/// `s.dp` must be set.
bool is_legal(program const& p, strategy const& s);

}  // namespace dtplan::planner
