#include "planner/model/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "planner/model/comm.hpp"
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

namespace {

// DDP's and ZeRO-1/2's gradient buckets (PyTorch DDP default: 25 MiB).
constexpr double bucket_bytes = 25.0 * 1048576.0;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Weight parameters one GPU of the most loaded stage holds before ZeRO
// sharding: its layers split over tp (experts over ep), plus the embedding
// and logits it owns.
struct stage_params {
  double per_layer = 0;  // per layer, per GPU
  double head = 0;       // embedding + logits owned by the stage, per GPU
  std::int64_t layers = 0;
  [[nodiscard]] double total() const { return per_layer * static_cast<double>(layers) + head; }
};

stage_params params_per_gpu(model const& m, strategy const& s) {
  auto const tp = static_cast<double>(std::max<std::int64_t>(1, s.tp));
  auto const heads = std::max<std::int64_t>(1, m.heads);
  auto const kv_heads = m.kv_heads > 0 ? m.kv_heads : heads;
  auto const head_dim = m.hidden / heads;
  auto const ffn = m.ffn > 0 ? m.ffn : 4 * m.hidden;
  auto const experts = std::max<std::int64_t>(1, m.experts);
  auto const ep = static_cast<double>(std::max<std::int64_t>(1, s.ep));
  double const h = static_cast<double>(m.hidden);
  double const attention = h * static_cast<double>(heads * head_dim + 2 * kv_heads * head_dim) +
                           static_cast<double>(heads * head_dim) * h;
  double const mlp = static_cast<double>(m.mlp == mlp_kind::swiglu ? 3 : 2) * h * static_cast<double>(ffn);
  double const expert_share = experts > 1 ? static_cast<double>(experts) / ep : 1.0;
  stage_params sp;
  sp.per_layer = (attention + mlp * expert_share) / tp + 4 * h + (experts > 1 ? h * static_cast<double>(experts) : 0);
  sp.layers = ceil_div(std::max<std::int64_t>(1, m.layers), std::max<std::int64_t>(1, s.pp));
  double const table = static_cast<double>(m.vocab) * h / tp;
  // With one stage it owns both ends; otherwise the heavier end (the input
  // embedding, plus the logits projection when untied, sits on the first or
  // last stage: the larger of the two is one table).
  sp.head = s.pp == 1 ? (m.tied_embeddings ? table : 2 * table) : table;
  return sp;
}

// Optimizer-step bytes per parameter it updates: Adam reads and writes
// fp32 master weights and two moments, reads the gradient, writes the
// 16-bit weight; SGD with momentum one moment, plain SGD none.
double optimizer_bytes_per_param(optimizer_kind o) {
  switch (o) {
    case optimizer_kind::adam:
    case optimizer_kind::adamw: return 4 * 2 + 8 * 2 + 4 + 2;
    case optimizer_kind::sgd_momentum: return 4 * 2 + 4 * 2 + 4 + 2;
    case optimizer_kind::sgd: return 4 * 2 + 4 + 2;
  }
  return 30;
}

// When a collective of a group runs, for ZeRO stage `zero`.
comm_phase phase_of(collective op, comm_group g, int zero) {
  switch (g) {
    case comm_group::tp:
    case comm_group::cp:
    case comm_group::ep: return comm_phase::layer;
    case comm_group::pp: return comm_phase::micro_batch;
    case comm_group::dp:
    case comm_group::shard:
      if (zero >= 3) return op == collective::reduce_scatter ? comm_phase::layer_backward : comm_phase::layer;
      return op == collective::all_gather ? comm_phase::after_step : comm_phase::grad_sync;
    case comm_group::replicate:
      return op == collective::all_gather ? comm_phase::after_step : comm_phase::grad_sync;
    case comm_group::embedding: return comm_phase::grad_sync;
  }
  return comm_phase::grad_sync;
}

struct comm_builder {
  int zero = 0;
  std::vector<comm_entry> entries;
  seconds hidden;  // communication time overlap hides (it slows the compute under it)

  void add(collective op, comm_group g, std::int64_t ranks, bytes size, std::int64_t count, seconds time,
           seconds exposed, link_kind link) {
    if (time.value() <= 0 || count <= 0) return;
    exposed = min(max(exposed, seconds(0)), time);
    entries.push_back({op, g, ranks, size, count, time, exposed, link, phase_of(op, g, zero)});
    hidden += time - exposed;
  }
  [[nodiscard]] seconds exposed() const {
    seconds t;
    for (auto const& e : entries) t += e.exposed;
    return t;
  }
};

}  // namespace

time_breakdown analytic_cost_model::step_time(program const& p, strategy const& s_in) const {
  strategy s = s_in;
  s.tp = std::max<std::int64_t>(1, s.tp);
  s.pp = std::max<std::int64_t>(1, s.pp);
  s.cp = std::max<std::int64_t>(1, s.cp);
  s.micro_batch = std::max<std::int64_t>(1, s.micro_batch);
  s.virtual_stages = std::max<std::int64_t>(1, s.virtual_stages);
  if (s.dp <= 0) s.dp = std::max<std::int64_t>(1, p.cluster.gpus() / (s.tp * s.pp * s.cp));

  model const& m = p.model;
  cluster const& c = p.cluster;
  gpu const& g = c.device;
  double const e = element_bytes(m.prec);
  // fp8 training communicates 16-bit weights; gradients travel in the
  // precision the program keeps them in (fp32 with grad_precision = fp32).
  double const comm_e = m.prec == precision::fp32 ? 4.0 : 2.0;
  double const grad_e = grad_element_bytes(m, p.training);
  bool const overlap = p.training.overlap_grad_sync;

  time_breakdown t;
  auto const micro = std::max<std::int64_t>(1, p.training.global_batch / (s.dp * s.micro_batch));
  double const md = static_cast<double>(micro);
  stage_compute const sc = compute_per_micro_batch(p, s);
  stage_params const sp = params_per_gpu(m, s);
  double const layers = static_cast<double>(sc.layers);
  seconds const per_micro = sc.forward_backward();
  seconds const per_micro_recompute = sc.recompute();
  // The backward of one micro-batch (recomputation runs inside it).
  seconds const backward_one = sc.layer_backward * layers + sc.head_backward + per_micro_recompute;

  rank_layout const layout(s, c.gpus_per_node);
  comm_builder cb;
  cb.zero = s.zero;
  auto const tokens = s.micro_batch * m.seq_len / s.cp;
  double const activation = static_cast<double>(tokens) * static_cast<double>(m.hidden) * e;

  // Tensor parallelism: two collectives per layer in the forward (after the
  // attention output and the MLP down projection) and two in the backward,
  // on the critical path; full recomputation repeats the forward's.
  // Tensor-parallel time and calls of one micro-batch: they sit in the
  // stage's stream between its kernels.
  seconds tp_per_micro;
  std::int64_t tp_calls_per_micro = 0;
  if (s.tp > 1) {
    auto const link = link_for(c, layout.placement(axis::tp));
    std::int64_t const passes = 2 + (s.checkpoint == checkpoint_mode::full ? 1 : 0);
    std::int64_t const per_layer = 2 * passes;
    // Op-level checkpointing keeps the reduce-scatter outputs (they are in
    // its save list) but re-runs the collectives feeding recomputed
    // matmuls: the two all-gathers of the norm outputs with sequence
    // parallelism, the all-reduce after the o projection without.
    bool const ops = s.checkpoint == checkpoint_mode::ops;
    std::int64_t const ag_per_layer = per_layer + (ops ? 2 : 0);
    std::int64_t const ar_per_layer = per_layer + (ops ? 1 : 0);
    std::int64_t const count = per_layer * sc.layers * micro;
    bytes const size(activation);
    if (s.sequence_parallel) {
      std::int64_t const ag_count = ag_per_layer * sc.layers * micro;
      auto const ag = collective_time(collective::all_gather, size, s.tp, link);
      auto const rs = collective_time(collective::reduce_scatter, size, s.tp, link);
      cb.add(collective::all_gather, comm_group::tp, s.tp, size, ag_count, ag * static_cast<double>(ag_count),
             ag * static_cast<double>(ag_count), link.kind);
      cb.add(collective::reduce_scatter, comm_group::tp, s.tp, size, count, rs * static_cast<double>(count),
             rs * static_cast<double>(count), link.kind);
      tp_per_micro = (ag + rs) * static_cast<double>(per_layer * sc.layers) +
                     ag * static_cast<double>((ag_per_layer - per_layer) * sc.layers);
      tp_calls_per_micro = (ag_per_layer + per_layer) * sc.layers;
    } else {
      std::int64_t const ar_count = ar_per_layer * sc.layers * micro;
      auto const ar = collective_time(collective::all_reduce, size, s.tp, link);
      cb.add(collective::all_reduce, comm_group::tp, s.tp, size, ar_count, ar * static_cast<double>(ar_count),
             ar * static_cast<double>(ar_count), link.kind);
      tp_per_micro = ar * static_cast<double>(ar_per_layer * sc.layers);
      tp_calls_per_micro = ar_per_layer * sc.layers;
    }
  }

  // Context parallelism: the ring passes K/V chunks cp-1 times per layer in
  // the forward and K/V plus their gradients in the backward, overlapped
  // with the attention core of the chunk in hand.
  if (s.cp > 1) {
    auto const link = link_for(c, layout.placement(axis::cp));
    auto const heads = std::max<std::int64_t>(1, m.heads);
    auto const kv_heads = m.kv_heads > 0 ? m.kv_heads : heads;
    auto const kv_out = kv_heads * (m.hidden / heads);
    bytes const chunk(2.0 * static_cast<double>(tokens) * static_cast<double>(kv_out) / static_cast<double>(s.tp) * e);
    auto const hop = collective_time(collective::send_recv, chunk, s.cp, link);
    seconds const fwd = hop * static_cast<double>(s.cp - 1);
    seconds const bwd = fwd * 2.0;
    std::int64_t const fwd_passes = s.checkpoint == checkpoint_mode::full ? 2 : 1;
    seconds const exposed_layer = max(seconds(0), fwd - sc.layer_attention_core) * static_cast<double>(fwd_passes) +
                                  max(seconds(0), bwd - sc.layer_attention_core_backward);
    std::int64_t const count = (s.cp - 1) * (fwd_passes + 2) * sc.layers * micro;
    cb.add(collective::send_recv, comm_group::cp, s.cp, chunk, count, hop * static_cast<double>(count),
           exposed_layer * layers * md, link.kind);
  }

  // Pipeline: each micro-batch's activations go forward and their gradients
  // back across each stage boundary (v times with interleaving). Each tensor
  // rank sends only its 1/tp slice and the receiver all-gathers it over the
  // scale-up link (Megatron's scatter-gather). The sends are blocking: the
  // critical path crosses a boundary twice per micro-batch (and chunk) plus
  // the fill and drain through the other pp - 1 boundaries.
  if (s.pp > 1) {
    auto const link = link_for(c, layout.placement(axis::pp));
    bytes const size(activation / static_cast<double>(s.tp));
    auto const hop = collective_time(collective::send_recv, size, 2, link);
    std::int64_t const count = 2 * (micro * s.virtual_stages + s.pp - 1);
    seconds const total = hop * static_cast<double>(count);
    cb.add(collective::send_recv, comm_group::pp, 2, size, count, total, total, link.kind);
  }

  // A tied embedding split over the pipeline lives on the first stage (input)
  // and the last (logits): their two gradient copies are summed after the
  // backward, before the optimizer step, as Megatron and DeepSpeed's pipeline
  // engine do. Every rank of those stages does so at once over its own pair.
  if (s.pp > 1 && m.tied_embeddings) {
    auto const pp_group = layout.placement(axis::pp);
    group_placement pair;
    pair.size = 2;
    pair.nodes = pp_group.crosses_nodes() ? 2 : 1;
    pair.max_per_node = pp_group.crosses_nodes() ? 1 : 2;
    auto const link = link_for(c, pair);
    bytes const size(static_cast<double>(padded_vocab(m.vocab, s.tp)) * static_cast<double>(m.hidden) /
                     static_cast<double>(s.tp) * grad_e);
    auto const one = collective_time(collective::all_reduce, size, 2, link);
    cb.add(collective::all_reduce, comm_group::embedding, 2, size, 1, one, one, link.kind);
  }

  // Data parallelism (with context parallelism the cp ranks hold the same
  // weights too: their gradients sync over dp x cp).
  auto const sync_ranks = s.dp * s.cp;
  if (sync_ranks > 1) {
    auto const placement = layout.placement(axis::dp, axis::cp);
    auto const link = link_for(c, placement);
    bytes const grads(sp.total() * grad_e);
    auto const buckets = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(grads.value() / bucket_bytes)));
    bytes const bucket = grads / static_cast<double>(buckets);
    // Bucketed syncs run during the last micro-batch's backward: the first
    // bucket is ready only after its layers' backward, the last bucket's
    // collective always trails the backward. Without overlap
    // (overlap_grad_sync = false) the whole sync follows the backward.
    // ZeRO-1/2 reduce-scatter the gradients, or with grad_reduce =
    // all_reduce every rank receives every gradient (and updates only its
    // slice).
    auto const op = p.training.grad_reduce_scatter ? collective::reduce_scatter : collective::all_reduce;
    auto const overlapped = [&](seconds total) {
      if (!overlap) return total;
      seconds const capacity = backward_one * (1.0 - 1.0 / static_cast<double>(buckets));
      return max(total - capacity, total / static_cast<double>(buckets));
    };
    if (s.zero == 0) {
      auto const one = collective_time(collective::all_reduce, bucket, sync_ranks, link);
      seconds const total = one * static_cast<double>(buckets);
      cb.add(collective::all_reduce, comm_group::dp, sync_ranks, bucket, buckets, total, overlapped(total), link.kind);
    } else if (s.zero == 1) {
      // ZeRO-1 as Megatron's and DeepSpeed's distributed optimizers run it:
      // bucketed reduce-scatter of the gradients under the last backward, then
      // the updated 16-bit weights all-gathered after the optimizer step, in
      // the open (nothing is left to overlap it with).
      auto const rs_one = collective_time(op, bucket, sync_ranks, link);
      seconds const rs = rs_one * static_cast<double>(buckets);
      cb.add(op, comm_group::dp, sync_ranks, bucket, buckets, rs, overlapped(rs), link.kind);
      bytes const weights_bucket = bucket * (comm_e / grad_e);
      auto const ag_one = collective_time(collective::all_gather, weights_bucket, sync_ranks, link);
      seconds const ag = ag_one * static_cast<double>(buckets);
      cb.add(collective::all_gather, comm_group::dp, sync_ranks, weights_bucket, buckets, ag, ag, link.kind);
    } else if (s.zero == 2) {
      // ZeRO-2 as FSDP SHARD_GRAD_OP runs it: each layer's gradients are
      // reduce-scattered as its backward ends (the last layer's trails it),
      // and each layer's updated weights all-gathered ahead of its first
      // forward of the next step, prefetched under the previous layer.
      bytes const layer_size(sp.per_layer * comm_e);
      bytes const head_size(sp.head * comm_e);
      bytes const layer_grads(sp.per_layer * grad_e);
      auto const rs_layer = collective_time(op, layer_grads, sync_ranks, link);
      auto const rs_head = collective_time(op, bytes(sp.head * grad_e), sync_ranks, link);
      seconds const rs = rs_layer * layers + rs_head;
      seconds const bwd_layer = sc.layer_backward + sc.layer_recompute;
      seconds const rs_exposed = overlap ? rs_head + max(seconds(0), rs_layer - bwd_layer) * (layers - 1) : rs;
      cb.add(op, comm_group::dp, sync_ranks, layer_grads, sc.layers + 1, rs, rs_exposed, link.kind);
      auto const ag_layer = collective_time(collective::all_gather, layer_size, sync_ranks, link);
      auto const ag_head = collective_time(collective::all_gather, head_size, sync_ranks, link);
      seconds const ag = ag_layer * layers + ag_head;
      seconds const exposed = ag_head + ag_layer + max(seconds(0), ag_layer - sc.layer_forward) * (layers - 1);
      cb.add(collective::all_gather, comm_group::dp, sync_ranks, layer_size, sc.layers + 1, ag, exposed, link.kind);
    } else {
      // ZeRO-3 / FSDP: every micro-batch gathers each layer in the forward and
      // again in the backward and reduce-scatters its gradients; the next
      // layer's gather is prefetched under the current layer's compute.
      std::int64_t shard = shard_size(s, c.gpus_per_node);
      if (shard <= 0 || shard > s.dp) shard = s.dp;
      shard *= s.cp;
      auto const shard_group = shard >= sync_ranks ? placement : layout.shard_placement(std::max<std::int64_t>(1, shard / s.cp));
      auto const shard_link = link_for(c, shard_group);
      comm_group const grp = shard >= sync_ranks ? comm_group::dp : comm_group::shard;
      bytes const layer_size(sp.per_layer * comm_e);
      bytes const head_size(sp.head * comm_e);
      bytes const layer_grads(sp.per_layer * grad_e);
      auto const ag = collective_time(collective::all_gather, layer_size, shard, shard_link);
      auto const rs = collective_time(collective::reduce_scatter, layer_grads, shard, shard_link);
      auto const ag_head = collective_time(collective::all_gather, head_size, shard, shard_link);
      auto const rs_head = collective_time(collective::reduce_scatter, bytes(sp.head * grad_e), shard, shard_link);
      seconds const fwd_compute = sc.layer_forward;
      seconds const bwd_compute = sc.layer_backward + sc.layer_recompute;
      // The embedding/logits unit is gathered first in each pass and its
      // gradients reduced last: never hidden. Without overlap every
      // reduce-scatter waits for the backward.
      seconds const fwd_exposed = ag_head + ag + max(seconds(0), ag - fwd_compute) * (layers - 1);
      seconds const bwd_exposed =
          overlap ? ag_head + rs_head + rs + max(seconds(0), ag + rs - bwd_compute) * (layers - 1)
                  : ag_head + rs_head + rs * layers + ag + max(seconds(0), ag - bwd_compute) * (layers - 1);
      std::int64_t const gathers = 2 * sc.layers * micro;
      std::int64_t const scatters = sc.layers * micro;
      // Split the exposed time over the two entries in proportion to their traffic.
      seconds const ag_total = ag * static_cast<double>(gathers) + ag_head * (2 * md);
      seconds const rs_total = rs * static_cast<double>(scatters) + rs_head * md;
      seconds const exposed_total = (fwd_exposed + bwd_exposed) * md;
      double const ag_share = ag_total / (ag_total + rs_total);
      cb.add(collective::all_gather, grp, shard, layer_size, gathers + 2 * micro, ag_total, exposed_total * ag_share, shard_group.crosses_nodes() ? link_kind::inter : link_kind::intra);
      cb.add(collective::reduce_scatter, grp, shard, layer_grads, scatters + micro, rs_total, exposed_total * (1 - ag_share), shard_group.crosses_nodes() ? link_kind::inter : link_kind::intra);
      if (shard < sync_ranks) {
        // Hybrid sharding: each shard's gradient slice is all-reduced across
        // the replicas, once per step, under the last backward.
        auto const replicas = sync_ranks / shard;
        auto const rep_link = link_for(c, layout.replicate_placement(std::max<std::int64_t>(1, shard / s.cp)));
        bytes const slice = grads / static_cast<double>(shard);
        auto const rb = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(slice.value() / bucket_bytes)));
        auto const one = collective_time(collective::all_reduce, slice / static_cast<double>(rb), replicas, rep_link);
        seconds const total = one * static_cast<double>(rb);
        seconds const capacity = backward_one * (1.0 - 1.0 / static_cast<double>(rb));
        cb.add(collective::all_reduce, comm_group::replicate, replicas, slice / static_cast<double>(rb), rb, total,
               overlap ? max(total - capacity, total / static_cast<double>(rb)) : total, rep_link.kind);
      }
    }
  }

  // Mixture of experts: tokens go to their experts and back, forward and backward.
  if (m.experts > 1 && s.ep > 1) {
    group_placement gp;
    gp.size = s.ep;
    auto const span = s.tp * s.cp * s.ep;
    gp.nodes = std::max<std::int64_t>(1, ceil_div(span, c.gpus_per_node));
    gp.max_per_node = std::min(s.ep, std::max<std::int64_t>(1, c.gpus_per_node / (s.tp * s.cp)));
    auto const link = link_for(c, gp);
    bytes const size(activation * static_cast<double>(std::max<std::int64_t>(1, m.experts_per_token)));
    auto const one = collective_time(collective::all_to_all, size, s.ep, link);
    std::int64_t const count = 4 * sc.layers * micro;
    cb.add(collective::all_to_all, comm_group::ep, s.ep, size, count, one * static_cast<double>(count),
           one * static_cast<double>(count), link.kind);
  }

  t.exposed_comm = cb.exposed();
  t.comm = std::move(cb.entries);
  // Overlapped communication competes with the compute under it for SMs and
  // HBM: the hidden part slows that compute by overlap_slowdown.
  // The host issues a micro-batch's operators one by one: when they are
  // shorter than issuing them (small layers, small micro-batches) the GPU
  // waits on the host, and the stage takes the host's time.
  seconds const stream = per_micro + per_micro_recompute + tp_per_micro;
  seconds const host = g.dispatch_latency * static_cast<double>(sc.kernels() + tp_calls_per_micro);
  seconds const stall = max(seconds(0), host - stream);
  t.compute = (per_micro + stall) * md + cb.hidden * g.overlap_slowdown;
  t.recompute = per_micro_recompute * md;
  // Fill and drain run pp - 1 stage slots, each a whole micro-batch of the
  // stage: its compute, its tensor-parallel collectives, its host stalls.
  if (s.pp > 1)
    t.bubble = (stream + stall) * (static_cast<double>(s.pp - 1) / static_cast<double>(s.virtual_stages));

  // The optimizer step streams the parameters this GPU updates.
  double updated = sp.total();
  if (s.zero >= 1) {
    std::int64_t shard = s.zero == 3 ? shard_size(s, c.gpus_per_node) : s.dp;
    if (shard <= 0 || shard > s.dp) shard = s.dp;
    updated /= static_cast<double>(shard * s.cp);
  }
  t.optimizer = memory_time(g, bytes(updated * optimizer_bytes_per_param(m.optimizer)));
  // Gradient accumulation costs no pass of its own: the weight-gradient GEMM
  // accumulates into the gradient buffer in its epilogue (beta = 1), as
  // Megatron's gradient-accumulation fusion does.
  t.overhead = g.step_overhead;

  t.model_flops = model_flops_per_step(p);
  t.hardware_flops = hardware_flops_per_step(p, s);
  t.step = t.compute + t.recompute + t.exposed_comm + t.bubble + t.optimizer + t.overhead;
  // No step beats its model FLOPs at peak on every GPU (causal attention
  // kernels skip work the model-FLOP convention counts): clamp into compute.
  seconds const floor = t.model_flops / (peak_at(g, m.prec) * static_cast<double>(std::max<std::int64_t>(1, s.dp * s.tp * s.pp * s.cp)));
  if (t.step < floor) {
    t.compute += floor - t.step;
    t.step = floor;
  }
  return t;
}

seconds analytic_cost_model::lower_bound(program const& p) const {
  auto const gpus = std::max<std::int64_t>(1, p.cluster.gpus());
  return model_flops_per_step(p) / (peak_at(p.cluster.device, p.model.prec) * static_cast<double>(gpus));
}

}  // namespace dtplan::planner
