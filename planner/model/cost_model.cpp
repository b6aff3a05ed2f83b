#include "planner/model/cost_model.hpp"

#include <algorithm>
#include <cmath>

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
  auto const& g = p.cluster.device;
  return g.keys.count("dispatch_latency") ? g.dispatch_latency : p.framework.dispatch_latency;
}

seconds step_overhead(program const& p) {
  auto const& g = p.cluster.device;
  return g.keys.count("step_overhead") ? g.step_overhead : p.framework.step_overhead;
}

time_breakdown analytic_cost_model::step_time(strategy_shape const& sh) const {
  cost::step_context const x(sh);
  program const& p = *sh.prog;
  gpu const& g = x.g;
  double const md = static_cast<double>(x.micro);
  stage_compute const& sc = x.sc;

  cost::comm_builder cb;
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
  seconds const host = dispatch_latency(p) * static_cast<double>(sc.kernels() + tp.calls);
  seconds const stall = max(seconds(0), host - stream);
  t.compute = (per_micro + stall) * md + cb.hidden * g.overlap_slowdown;
  t.recompute = per_micro_recompute * md;
  // Fill and drain run pp - 1 stage slots, each a micro-batch of a stage
  // ahead of the one that bounds the step: the last stage takes its m slots
  // with the logits and loss, the first pp - 1 fill it with their layers
  // alone. Its compute, its tensor-parallel collectives, its host stalls.
  // (A head as heavy as a few layers, as small models with a large vocabulary
  // have, would otherwise count pp - 1 more times.)
  auto const& s = sh.s;
  if (s.pp > 1) {
    seconds const body = stream - sc.head();
    seconds const body_stall = max(seconds(0), host - dispatch_latency(p) * static_cast<double>(sc.head_kernels) - body);
    t.bubble = (body + body_stall) * (static_cast<double>(s.pp - 1) / static_cast<double>(s.virtual_stages));
  }
  t.optimizer = cost::optimizer_step(x);
  // Gradient accumulation costs no pass of its own: the weight-gradient GEMM
  // accumulates into the gradient buffer in its epilogue (beta = 1), as
  // Megatron's gradient-accumulation fusion does.
  t.overhead = step_overhead(p);

  t.model_flops = model_flops_per_step(p);
  t.hardware_flops = hardware_flops_per_step(p, s);
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

seconds analytic_cost_model::lower_bound(program const& p) const {
  auto const gpus = p.cluster.gpus();
  return model_flops_per_step(p) / (peak_at(p.cluster.device, p.model.prec) * static_cast<double>(gpus));
}

}  // namespace dtplan::planner
