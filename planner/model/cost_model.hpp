#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/units.hpp"
#include "planner/model/collective.hpp"
#include "planner/model/nccl.hpp"
#include "planner/model/shape.hpp"

namespace dtplan::planner {

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
  nccl::algorithm algo = nccl::algorithm::ring;  ///< what NCCL runs for one call
  nccl::protocol proto = nccl::protocol::simple;
};

/// Where one optimizer step's time goes. step = compute + recompute +
/// exposed_comm + bubble + optimizer + overhead.
struct time_breakdown {
  seconds step;
  seconds compute;       ///< forward + backward (no recomputation), incl. the two parts below
  seconds slowdown;      ///< of compute: its slow-down under the communication it hides
  seconds host_wait;     ///< of compute: the GPU waiting on the host to issue operators
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
  /// The step of a checked strategy (its shape: shape.hpp).
  [[nodiscard]] virtual time_breakdown step_time(strategy_shape const& sh) const = 0;
  /// step_time(shape_of(p, s)): `s` must be legal, with dp set.
  [[nodiscard]] time_breakdown step_time(program const& p, strategy const& s) const;
  /// A bound no strategy of `p` can beat (for pruning the search).
  [[nodiscard]] virtual seconds lower_bound(program const& p) const = 0;
  /// A bound step_time(sh) never beats, much cheaper than step_time: the
  /// search skips a candidate whose bound exceeds the k-th best step so far.
  /// It must be a true lower bound (never above step_time(sh).step), or the
  /// search may miss the optimum. The default is the program-wide
  /// lower_bound; a model that can bound one strategy cheaply (compute at
  /// peak, bubble, unavoidable collectives) should override it.
  [[nodiscard]] virtual seconds step_lower_bound(strategy_shape const& sh) const { return lower_bound(*sh.prog); }
};

/// The host's time to issue one operator: the framework's figure (none
/// when the step runs as CUDA graphs); a GPU block that writes its own
/// `dispatch_latency` overrides it.
seconds dispatch_latency(program const& p);
/// The fixed cost of an optimizer step: the framework's figure, or the GPU
/// block's `step_overhead` where it writes one.
seconds step_overhead(program const& p);
/// The time `work` takes spread over every GPU of `p`'s cluster at its
/// peak in the model's precision: no step of that work runs faster.
seconds at_peak(program const& p, flops work);

/// The first-principles model of COSTMODEL.md section 3: operator rooflines,
/// alpha-beta collectives on the links each group crosses, overlap, bubbles.
class analytic_cost_model final : public cost_model {
 public:
  using cost_model::step_time;
  [[nodiscard]] time_breakdown step_time(strategy_shape const& sh) const override;
  [[nodiscard]] seconds lower_bound(program const& p) const override;
  /// The terms of step_time that do not depend on communication: compute
  /// and recomputation of every micro-batch, the pipeline bubble and the
  /// fixed overhead (planner/cost_bound.cpp); every other term is >= 0.
  [[nodiscard]] seconds step_lower_bound(strategy_shape const& sh) const override;
};


}  // namespace dtplan::planner
