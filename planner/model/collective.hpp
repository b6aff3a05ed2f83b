#pragma once

/// The vocabulary of a step's communication: which collective, over which
/// group, on which link, at which phase of the step.
namespace dtplan::planner {

enum class collective { all_reduce, reduce_scatter, all_gather, all_to_all, send_recv };
/// `embedding`: the first and last pipeline stages, which sum the gradients
/// of a tied embedding table.
/// expert_dp: a mixture's expert gradients over the ranks that hold the same
/// experts (strategy_shape::expert_sync); expert_shard: under hybrid
/// sharding, over those of them in the rank's own shard group
/// (strategy_shape::expert_shard), the replicas' all-reduce taking the rest.
enum class comm_group { dp, tp, pp, cp, ep, shard, replicate, embedding, expert_dp, expert_shard };
enum class link_kind { intra, inter };
/// When in the step a collective runs: what the skeleton schedules it
/// around and what overlap it can hide under.
enum class comm_phase {
  layer,           ///< inside every layer, forward and backward (tp, cp, ep; ZeRO-3 gathers)
  layer_backward,  ///< inside every layer's backward (ZeRO-3 reduce-scatters)
  micro_batch,     ///< between pipeline stages, once per micro-batch and chunk
  grad_sync,       ///< the step's gradient sync, under or after the last backward
  after_step,      ///< after the optimizer step (ZeRO-1/2 weight all-gathers)
};

char const* name(collective);  ///< "all-reduce", "reduce-scatter", ...
char const* name(comm_group);  ///< "dp", "tp", ...
char const* name(link_kind);   ///< "intra", "inter"
char const* name(comm_phase);  ///< "layer", "layer_backward", "micro_batch", "grad_sync", "after_step"

}  // namespace dtplan::planner
