#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/units.hpp"

namespace dtplan::planner {

enum class collective { all_reduce, reduce_scatter, all_gather, all_to_all, send_recv };
/// `embedding`: the first and last pipeline stages, which sum the gradients
/// of a tied embedding table.
enum class comm_group { dp, tp, pp, cp, ep, shard, replicate, embedding };
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

/// One distinct (collective, group, size, link) of a step.
struct comm_entry {
  collective op = collective::all_reduce;
  comm_group group = comm_group::dp;
  std::int64_t ranks = 1;  ///< members of the group
  bytes size;              ///< one call's message (the full buffer, not per-rank traffic)
  std::int64_t count = 0;  ///< calls per step
  seconds time;            ///< total over the step's calls
  seconds exposed;         ///< the part overlap does not hide
  link_kind link = link_kind::intra;
  comm_phase phase = comm_phase::grad_sync;
};

/// Where one optimizer step's time goes. step = compute + recompute +
/// exposed_comm + bubble + optimizer + overhead.
struct time_breakdown {
  seconds step;
  seconds compute;       ///< forward + backward (no recomputation), incl. overlap slow-down
  seconds recompute;     ///< recomputation of checkpointed activations
  seconds exposed_comm;  ///< communication not hidden behind compute
  seconds bubble;        ///< pipeline fill and drain
  seconds optimizer;     ///< the optimizer step
  seconds overhead;      ///< fixed per-step overhead
  flops model_flops;     ///< per step, all GPUs: 6 x matmul params x tokens + attention
  flops hardware_flops;  ///< model flops + recomputation
  std::vector<comm_entry> comm;
};

/// Predicts one optimizer step. Implementations must be pure functions of
/// their inputs (the search calls them from several threads).
class cost_model {
 public:
  virtual ~cost_model() = default;
  [[nodiscard]] virtual time_breakdown step_time(program const& p, strategy const& s) const = 0;
  /// A bound no strategy of `p` can beat (for pruning the search).
  [[nodiscard]] virtual seconds lower_bound(program const& p) const = 0;
  /// A bound step_time(p, s) never beats, much cheaper than step_time: the
  /// search skips a candidate whose bound exceeds the k-th best step so far.
  /// It must be a true lower bound (never above step_time(p, s).step), or
  /// the search may miss the optimum. The default is the program-wide
  /// lower_bound(p); a model that can bound one strategy cheaply (compute at
  /// peak, bubble, unavoidable collectives) should override it.
  [[nodiscard]] virtual seconds step_lower_bound(program const& p, strategy const& s) const {
    static_cast<void>(s);
    return lower_bound(p);
  }
};

/// The first-principles model of COSTMODEL.md section 3: operator rooflines,
/// alpha-beta collectives on the links each group crosses, overlap, bubbles.
class analytic_cost_model final : public cost_model {
 public:
  [[nodiscard]] time_breakdown step_time(program const& p, strategy const& s) const override;
  [[nodiscard]] seconds lower_bound(program const& p) const override;
  /// The terms of step_time that do not depend on communication: compute
  /// and recomputation of every micro-batch, the pipeline bubble and the
  /// fixed overhead (planner/cost_bound.cpp); every other term is >= 0.
  [[nodiscard]] seconds step_lower_bound(program const& p, strategy const& s) const override;
};

/// Time of one collective of `size` bytes over `ranks` members, each with
/// `link` bytes/s per direction, `latency` per step; ring algorithms.
seconds collective_time(collective op, bytes size, std::int64_t ranks, bandwidth link, seconds latency);

}  // namespace dtplan::planner
