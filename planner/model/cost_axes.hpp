#pragma once
#include <cstdint>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/units.hpp"
#include "planner/model/compute.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/model/shape.hpp"

/// The time model's parts, one per parallel axis: each adds its collectives
/// (with the phase of the step they run in and what overlap leaves exposed)
/// to a `comm_builder`. `analytic_cost_model::step_time` sums them with the
/// compute, the bubble and the optimizer step. Internal to planner/model.
namespace dtplan::planner::cost {

/// What every part reads: the shape and what follows from it for one step.
struct step_context {
  strategy_shape const& sh;
  model const& m;
  cluster const& c;
  gpu const& g;
  stage_compute sc;             ///< one micro-batch on the most loaded stage
  std::int64_t micro = 1;       ///< micro-batches per step (grad_accum)
  double layers = 0;            ///< layers of the most loaded stage
  double e = 2;                 ///< bytes of an activation element
  double comm_e = 2;            ///< bytes of a weight element as gathered (16-bit; fp32 models 4)
  double layer_weight_e = 2;    ///< of a layer's weight: 1 with fp8 param gather
  double grad_e = 2;            ///< bytes of a gradient element as the data-parallel reduction moves it
  bool overlap = true;          ///< training.overlap_grad_sync
  seconds backward_one;         ///< one micro-batch's backward on the stage, recomputation included
  bytes activation;             ///< one micro-batch's [tokens, hidden] activation on one GPU
  /// The framework's gradient bucket: fixed bytes, or Megatron-Core's
  /// max(40 M, 1 M x dp x cp) parameters (one bucket when the sync does not
  /// overlap the backward: distributed_data_parallel.py:58-68, 181-189).
  bytes grad_bucket;
  /// Gradients synced after every micro-batch (FSDP, torchtitan, DDP
  /// without no_sync) or once a step.
  bool sync_per_micro = false;
  seconds forward_one;          ///< one micro-batch's forward on the stage

  explicit step_context(strategy_shape const& shape);
};

/// Collects a step's collectives and the time overlap hides.
struct comm_builder {
  std::vector<comm_entry> entries;
  seconds hidden;  ///< communication time overlap hides (it slows the compute under it)
  /// Nothing overlaps (training.cuda_launch_blocking): every call is exposed.
  bool serial = false;

  /// Records `count` calls of `op` over `group` taking `time` in all, of
  /// which `exposed` (clamped into [0, time]) is not hidden.
  void add(collective op, comm_group group, group_shape const& over, bytes size, std::int64_t count, seconds time,
           seconds exposed, comm_phase phase);
  [[nodiscard]] seconds exposed() const;
};

/// Tensor-parallel time one micro-batch spends in the stage's stream and
/// the calls it issues there (they sit between its kernels).
struct in_stream {
  seconds time;
  std::int64_t calls = 0;
  /// Of which in the forward pass (the rest is in the backward, with the
  /// recomputation).
  seconds forward_time;
  std::int64_t forward_calls = 0;
};

/// Tensor parallelism: the all-gathers and reduce-scatters (sequence
/// parallelism) or all-reduces of every layer, on the critical path.
in_stream tensor_parallel(step_context const& x, comm_builder& out);
/// Context parallelism: the K/V ring of every layer under the attention core.
void context_parallel(step_context const& x, comm_builder& out);
/// Pipeline parallelism: activations and gradients across stage boundaries,
/// and a tied embedding's gradient sum between the first and last stage.
void pipeline_parallel(step_context const& x, comm_builder& out);
/// Data parallelism over dp x cp: DDP, ZeRO-1/2/3 and hybrid sharding.
void data_parallel(step_context const& x, comm_builder& out);
/// Mixture of experts: tokens to their experts and back.
void expert_parallel(step_context const& x, comm_builder& out);
/// The optimizer step: the state this GPU updates, streamed through HBM.
seconds optimizer_step(step_context const& x);

}  // namespace dtplan::planner::cost
