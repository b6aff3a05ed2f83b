#include "planner/model/cost_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>

#include "planner/model/comm.hpp"
#include "planner/model/cost_axes.hpp"
#include "planner/model/compute.hpp"
#include "planner/model/layout.hpp"
#include "planner/model/memory.hpp"

namespace dtplan::planner {

char const* name(collective c) {
  switch (c) {
    case collective::all_reduce: return "all-reduce";
    case collective::reduce_scatter: return "reduce-scatter";
    case collective::all_gather: return "all-gather";
    case collective::all_to_all: return "all-to-all";
    case collective::send_recv: return "send/recv";
  }
  return "?";
}

char const* name(comm_group g) {
  switch (g) {
    case comm_group::dp: return "dp";
    case comm_group::tp: return "tp";
    case comm_group::pp: return "pp";
    case comm_group::cp: return "cp";
    case comm_group::ep: return "ep";
    case comm_group::shard: return "shard";
    case comm_group::replicate: return "replicate";
    case comm_group::embedding: return "embedding";
    case comm_group::expert_dp: return "expert_dp";
    case comm_group::expert_shard: return "expert_shard";
  }
  return "?";
}

char const* name(link_kind k) { return k == link_kind::intra ? "intra" : "inter"; }

char const* name(comm_phase p) {
  switch (p) {
    case comm_phase::layer: return "layer";
    case comm_phase::layer_backward: return "layer_backward";
    case comm_phase::micro_batch: return "micro_batch";
    case comm_phase::grad_sync: return "grad_sync";
    case comm_phase::after_step: return "after_step";
  }
  return "?";
}

seconds dispatch_latency(program const& p) {
  if (p.training.cuda_graphs) return seconds(0);
  return p.cluster.device.dispatch_latency.value_or(p.framework.dispatch_latency);
}

seconds step_overhead(program const& p) {
  return p.cluster.device.step_overhead.value_or(p.framework.step_overhead);
}

namespace {

// The host issues a micro-batch's operators in order and no kernel starts
// before it is issued, so the GPU ends a run of operators at the latest,
// over every operator k, of the host's time to issue the operators before k
// and the GPU's time for k and all after it (max(host, stream) only when
// the ratio of the two is the same throughout). A micro-batch's operators
// come in four runs of like operators, the layers' forward, the head's
// forward, the head's backward, the layers' backward with their
// recomputation; within a run the bound is largest at one of its ends.
// Each micro-batch starts with host and GPU level. A heavy head (a few long
// kernels: the logits over a large vocabulary) after host-bound layers is
// hidden only as far as the operators after it leave the GPU idle; where
// the host waits for the GPU as the forward and the backward end (Megatron's
// timers at --timing-log-level 2, megatron/timers.py Timer.start/stop; every
// timer before Megatron-LM's "Timing levels", 2022-08, e.g.
// microsoft/Megatron-DeepSpeed f01c9e6 megatron/global_vars.py:192-204
// around megatron/schedules.py:53-74, 93-112), nothing after the head's
// forward can hide it.
struct host_run {
  seconds host, gpu;
};

seconds end_of_runs(std::span<host_run const> runs) {
  seconds host_total, left;
  for (auto const& r : runs) {
    host_total += r.host;
    left += r.gpu;
  }
  seconds end = host_total, issued;
  for (auto const& r : runs) {
    end = max(end, issued + left);
    issued += r.host;
    left -= r.gpu;
  }
  return end;
}

/// When a micro-batch's operators end on the stage, from host and GPU level:
/// the layers' forward, the head's forward and backward (left out for a
/// pipeline's fill and drain slots, which hold layers only), the layers'
/// backward; with the passes timed, the forward and the backward apart;
/// with every launch blocking, one after the other: the host issues an
/// operator only once the one before has finished.
seconds micro_batch_end(stage_compute const& sc, cost::in_stream const& tp, seconds dl, bool with_head,
                        bool timed_passes, bool launch_blocking) {
  double const layers = static_cast<double>(sc.layers);
  auto const head_forward = static_cast<double>(with_head ? sc.head_kernels_forward : 0);
  auto const head_backward = static_cast<double>(with_head ? sc.head_kernels_backward : 0);
  std::array<host_run, 4> const runs{{
      {dl * (static_cast<double>(sc.layers_kernels_forward()) + static_cast<double>(tp.forward_calls)),
       sc.layer_forward * layers + tp.forward_time},
      {dl * head_forward, with_head ? sc.head_forward : seconds()},
      {dl * head_backward, with_head ? sc.head_backward : seconds()},
      {dl * (static_cast<double>(sc.layers_kernels_backward()) +
             static_cast<double>(tp.calls - tp.forward_calls)),
       (sc.layer_backward + sc.layer_recompute) * layers + (tp.time - tp.forward_time)},
  }};
  std::span<host_run const> const all(runs);
  if (launch_blocking) {
    seconds serial;
    for (auto const& r : runs) serial += r.host + r.gpu;
    return serial;
  }
  return timed_passes ? end_of_runs(all.first(2)) + end_of_runs(all.last(2)) : end_of_runs(all);
}

}  // namespace

time_breakdown analytic_cost_model::step_time(strategy_shape const& sh) const {
  cost::step_context const x(sh);
  program const& p = *sh.prog;
  gpu const& g = x.g;
  double const md = static_cast<double>(x.micro);
  stage_compute const& sc = x.sc;

  cost::comm_builder cb;
  bool const blocking = p.training.cuda_launch_blocking;
  cb.serial = blocking;
  auto const tp = cost::tensor_parallel(x, cb);
  cost::context_parallel(x, cb);
  cost::pipeline_parallel(x, cb);
  cost::data_parallel(x, cb);
  cost::expert_parallel(x, cb);

  time_breakdown t;
  t.exposed_comm = cb.exposed();
  t.comm = std::move(cb.entries);
  seconds const per_micro = sc.forward_backward();
  seconds const per_micro_recompute = sc.recompute();
  // Overlapped communication competes with the compute under it for SMs and
  // HBM: the hidden part slows that compute by overlap_slowdown.
  // The host issues a micro-batch's operators one by one: when they are
  // shorter than issuing them (small layers, small micro-batches) the GPU
  // waits on the host, and the stage takes the host's time.
  seconds const stream = per_micro + per_micro_recompute + tp.time;
  seconds const dl = dispatch_latency(p);
  bool const timed = p.training.timing_log_level >= 2;
  // micro_batch_end is never under the GPU's own time: the rest is the stall
  // (none where the two sums of the same terms differ in their last bits).
  seconds const beyond_stream = micro_batch_end(sc, tp, dl, true, timed, blocking) - stream;
  seconds const stall = beyond_stream > stream * 1e-9 ? beyond_stream : seconds();
  t.slowdown = cb.hidden * g.overlap_slowdown;
  t.host_wait = stall * md;
  t.compute = (per_micro + stall) * md + t.slowdown;
  t.recompute = per_micro_recompute * md;
  // Fill and drain run pp - 1 stage slots, each a micro-batch of a stage
  // ahead of the one that bounds the step: the last stage takes its m slots
  // with the logits and loss, the first pp - 1 fill it with their layers
  // alone. Its compute, its tensor-parallel collectives, its host stalls.
  // (A head as heavy as a few layers, as small models with a large vocabulary
  // have, would otherwise count pp - 1 more times.)
  auto const& s = sh.s;
  if (s.pp > 1) {
    seconds const body = micro_batch_end(sc, tp, dl, false, timed, blocking);
    t.bubble = body * (static_cast<double>(s.pp - 1) / static_cast<double>(s.virtual_stages));
  }
  t.optimizer = cost::optimizer_step(x);
  // Gradient accumulation costs no pass of its own: the weight-gradient GEMM
  // accumulates into the gradient buffer in its epilogue (beta = 1), as
  // Megatron's gradient-accumulation fusion does.
  t.overhead = step_overhead(p);

  t.model_flops = sh.facts.model_flops;
  t.hardware_flops = hardware_flops_per_step(sh);
  t.step = t.compute + t.recompute + t.exposed_comm + t.bubble + t.optimizer + t.overhead;
  // No step beats its model FLOPs at peak on every GPU (causal attention
  // kernels skip work the model-FLOP convention counts): clamp into compute.
  seconds const floor = t.model_flops / (peak_at(g, p.model.prec) * static_cast<double>(sh.world));
  if (t.step < floor) {
    t.compute += floor - t.step;
    t.step = floor;
  }
  return t;
}

seconds at_peak(program const& p, flops work) {
  return work / (peak_at(p.cluster.device, p.model.prec) * static_cast<double>(p.cluster.gpus()));
}

seconds analytic_cost_model::lower_bound(program const& p) const { return at_peak(p, model_flops_per_step(p)); }

}  // namespace dtplan::planner
