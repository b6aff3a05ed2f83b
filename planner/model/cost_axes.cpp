#include "planner/model/cost_axes.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

#include "planner/model/comm.hpp"

namespace dtplan::planner::cost {

namespace {


// Whether selective recomputation reruns a mixture's whole MLP
// (recompute_modules has moe).
bool recomputes_whole_moe(strategy_shape const& sh) {
  return sh.s.checkpoint == checkpoint_mode::selective && sh.prog->model.experts > 1 &&
         sh.prog->training.recomputes(recompute_module::moe);
}

// One call of `op` over `g` as NCCL runs it.
seconds call(collective op, bytes size, group_shape const& g) { return nccl::best(op, size, g.net).time; }

// `per_micro` calls of `op` over `over` each micro-batch, on the critical
// path (no compute hides them), `forward` of them in the first forward
// pass: entered in `out`, and in `st` a micro-batch's.
void in_the_open(step_context const& x, comm_builder& out, in_stream& st, collective op, comm_group group,
                 group_shape const& over, bytes size, std::int64_t per_micro, std::int64_t forward) {
  if (per_micro <= 0) return;
  auto const one = call(op, size, over);
  std::int64_t const n = per_micro * x.micro;
  out.add(op, group, over, size, n, one * static_cast<double>(n), one * static_cast<double>(n), comm_phase::layer);
  st.time += one * static_cast<double>(per_micro);
  st.calls += per_micro;
  st.forward_time += one * static_cast<double>(forward);
  st.forward_calls += forward;
}

// Megatron-Core's allgather token dispatcher over `over` (the tp x ep
// ranks: ep with etp = 1, tp with ep = 1), each mixture layer
// `forwards` times forward and `backwards` times backward a micro-batch
// (core_v0.13.0 moe/token_dispatcher.py:196-330): the routing map (a byte
// an expert), the probabilities (16-bit) and the tokens all-gathered, the
// experts' output reduce-scattered back; backward the probabilities' and
// tokens' gradients reduce-scattered and the output's gathered. Every rank
// sends its own tokens once, whatever the top-k. In the open. Returns the
// time a micro-batch, its calls and the first forward's share.
in_stream allgather_dispatch(step_context const& x, comm_builder& out, group_shape const& over, comm_group group,
                             std::int64_t forwards, std::int64_t backwards, std::int64_t layers) {
  in_stream st;
  if (over.size <= 1) return st;
  double const gathered = static_cast<double>(x.sh.tokens) / static_cast<double>(x.sh.sp_divisor) *
                          static_cast<double>(over.size);
  double const experts = static_cast<double>(x.m.experts);
  bytes const hidden(gathered * static_cast<double>(x.m.hidden) * x.e);
  bytes const probs(gathered * experts * x.e), map(gathered * experts);
  auto add = [&](collective op, bytes size, std::int64_t per_micro, bool forward) {
    in_the_open(x, out, st, op, group, over, size, per_micro, forward ? layers : 0);
  };
  add(collective::all_gather, map, forwards, true);
  add(collective::all_gather, probs, forwards, true);
  add(collective::all_gather, hidden, forwards, true);
  add(collective::reduce_scatter, hidden, forwards, true);
  add(collective::reduce_scatter, probs, backwards, false);
  add(collective::reduce_scatter, hidden, backwards, false);
  add(collective::all_gather, hidden, backwards, false);
  return st;
}

bool allgather_dispatcher(step_context const& x) {
  return x.m.experts > 1 && x.sh.prog->training.moe_token_dispatcher == dispatcher_kind::allgather;
}

// Buckets of `bucket` bytes that hold `b`: at least one, and at most 10^18
// (a count no integer conversion overflows; the keys keep a bucket at a
// byte or more, so only a model of 10^18 bytes of gradients reaches it).
std::int64_t buckets_for(bytes b, bytes bucket) {
  double const n = std::ceil(b.value() / bucket.value());
  return static_cast<std::int64_t>(std::clamp(n, 1.0, 1e18));
}

// Optimizer-step bytes per parameter it updates: Adam reads and writes
// fp32 master weights and two moments, reads the gradient, writes the
// 16-bit weight; SGD with momentum one moment, plain SGD none.
double optimizer_bytes_per_param(optimizer_kind o, double moment) {
  switch (o) {
    case optimizer_kind::adam:
    case optimizer_kind::adamw: return 4 * 2 + 2 * moment * 2 + 4 + 2;
    case optimizer_kind::sgd_momentum: return 4 * 2 + moment * 2 + 4 + 2;
    case optimizer_kind::sgd: return 4 * 2 + 4 + 2;
  }
  return 30;
}

}  // namespace

step_context::step_context(strategy_shape const& shape)
    : sh(shape), m(shape.prog->model), c(shape.prog->cluster), g(shape.prog->cluster.device),
      sc(compute_per_micro_batch(shape)) {
  auto const& t = shape.prog->training;
  micro = shape.grad_accum;
  layers = static_cast<double>(sc.layers);
  e = element_bytes(m.prec);
  // fp8 training communicates 16-bit weights; gradients travel in the
  // precision the program keeps them in (fp32 with grad_precision = fp32).
  comm_e = m.prec == precision::fp32 ? 4.0 : 2.0;
  // fp8 layers gathered as fp8 (the LM head stays 16-bit).
  layer_weight_e = t.fp8_param_gather && m.prec == precision::fp8 ? 1.0 : comm_e;
  grad_e = grad_comm_bytes(m, t);
  overlap = t.overlap_grad_sync;
  backward_one = sc.layer_backward * layers + sc.head_backward + sc.recompute();
  forward_one = sc.layer_forward * layers + sc.head_forward;
  activation = bytes(static_cast<double>(shape.tokens) * static_cast<double>(m.hidden) * e);
  // A stage kept gathered defers every gradient sync to the last
  // micro-batch's backward, its replicas' all-reduce with it (PyTorch's
  // pipelining turns requires_gradient_sync off until then: FRAMEWORKS T10).
  sync_per_micro = t.grad_sync == grad_sync_mode::per_micro_batch && !shape.stage_kept_gathered();
  if (t.grad_bucket == bucket_rule::scaled) {
    double const params = std::max(40e6, 1e6 * static_cast<double>(shape.sync.size));
    grad_bucket = overlap ? bytes(params * grad_e) : bytes(std::numeric_limits<double>::infinity());
  } else {
    grad_bucket = t.ddp_bucket_size;
  }
}

void comm_builder::add(collective op, comm_group group, group_shape const& over, bytes size, std::int64_t count,
                       seconds time, seconds exposed, comm_phase phase) {
  if (time.value() <= 0 || count <= 0) return;
  exposed = serial ? time : min(max(exposed, seconds(0)), time);
  auto const how = nccl::best(op, size, over.net);
  entries.push_back({op, group, over.size, size, count, time, exposed, over.link.kind, phase, how.algo, how.proto});
  hidden += time - exposed;
}

seconds comm_builder::exposed() const {
  seconds t;
  for (auto const& e : entries) t += e.exposed;
  return t;
}

// Multi-latent attention under tensor parallelism (core_v0.13.0
// transformer/multi_latent_attention.py:400-460, gpt_layer_specs.py:
// 124-150): its down projections are column-parallel linears each of its
// own, so the layer's input is gathered for the second as well (its
// gradient scattered back: a reduce-scatter with sequence parallelism,
// an all-reduce without); their outputs are gathered over tp along the
// width (the compressed q, the compressed keys and values with the
// rotary key) and, with sequence parallelism, split to the sequence
// again, whose backward all-gathers; the up projections gather their
// inputs and scatter their gradients (all-reduce them without sequence
// parallelism). The first gather of the input and the o projection's
// scatter are every layer's (tensor_parallel). In the open, each layer (the
// modules' too) each micro-batch; full recomputation's forward again.
void mla_gathers(step_context const& x, comm_builder& out, in_stream& stream) {
  auto const& sh = x.sh;
  auto const& s = sh.s;
  if (s.tp <= 1 || !x.m.mla()) return;
  std::int64_t const layers = x.sc.layers, mtp = x.sc.mtp_layers;
  double const rows = static_cast<double>(sh.tokens) * x.e;
  bool const q_down = x.m.q_lora_rank > 0;
  bytes const q(rows * static_cast<double>(x.m.q_lora_rank));
  bytes const kv(rows * static_cast<double>(x.m.kv_lora_rank));
  bytes const kv_rope(rows * static_cast<double>(x.m.kv_lora_rank + x.m.qk_rope_head_dim));
  bool const sp = s.sequence_parallel;
  std::int64_t const forwards = (1 + (s.checkpoint == checkpoint_mode::full ? 1 : 0)) * layers + mtp;
  std::int64_t const backwards = layers + mtp;
  // `times` calls of `op` a layer, in each forward pass (the first's in
  // the forward run; full recomputation's in the backward) or in the backward.
  auto add = [&](collective op, bytes size, std::int64_t times, bool forward) {
    in_the_open(x, out, stream, op, comm_group::tp, sh.tp, size, times * (forward ? forwards : backwards),
                forward ? times * (layers + mtp) : 0);
  };
  auto const back = sp ? collective::reduce_scatter : collective::all_reduce;
  if (sp) add(collective::all_gather, x.activation, 1, true);
  if (q_down) add(collective::all_gather, q, sp ? 2 : 1, true);
  add(collective::all_gather, kv_rope, 1, true);
  if (sp) add(collective::all_gather, kv, 1, true);
  add(back, x.activation, 1, false);
  if (q_down) add(back, q, 1, false);
  add(back, kv, 1, false);
  if (sp && q_down) add(collective::all_gather, q, 1, false);
  if (sp) add(collective::all_gather, kv, 1, false);
}

// A mixture's whole MLP recomputed ('moe') runs its tensor-parallel
// collectives again before the backward: the shared expert's (a dense
// MLP's pair) and, with etp = tp, the dispatcher's gather and scatter of
// the routed tokens. In the open.
void moe_recomputed_again(step_context const& x, comm_builder& out, in_stream& stream) {
  auto const& sh = x.sh;
  auto const& s = sh.s;
  if (s.tp <= 1 || !recomputes_whole_moe(sh)) return;
  bool const shared = x.m.shared_expert_ffn > 0;
  bool const expert_tp = s.expert_tp() == s.tp;
  bytes const routed = x.activation * static_cast<double>(sh.active_experts) * sh.received_share;
  std::int64_t const again = x.sc.layers - x.sc.dense_layers + (x.sc.mtp_moe ? x.sc.mtp_layers : 0);
  auto repeat = [&](collective op, bytes size) {
    in_the_open(x, out, stream, op, comm_group::tp, sh.tp, size, again, 0);
  };
  if (s.sequence_parallel) {
    if (shared) repeat(collective::all_gather, x.activation), repeat(collective::reduce_scatter, x.activation);
    if (expert_tp && !allgather_dispatcher(x))
      repeat(collective::all_gather, routed), repeat(collective::reduce_scatter, routed);
  } else {
    if (shared) repeat(collective::all_reduce, x.activation);
    if (expert_tp && !allgather_dispatcher(x)) repeat(collective::all_reduce, routed);
  }
}

// Each module's projection (core_v0.13.0 transformer/
// multi_token_prediction.py:455-466): a column-parallel linear on the two
// concatenated inputs, 2 hidden wide, whose output is gathered over tp
// (gather_from_tensor_model_parallel_region: its backward a split). With
// sequence parallelism the linear gathers its input first and
// reduce-scatters that input's gradient; without, it all-reduces it. In
// the open.
void mtp_projections(step_context const& x, comm_builder& out, in_stream& stream) {
  auto const& sh = x.sh;
  bool const sp = sh.s.sequence_parallel;
  std::int64_t const mtp = x.sc.mtp_layers;
  if (sh.s.tp <= 1 || mtp <= 0) return;
  bytes const wide = x.activation * 2.0;
  in_the_open(x, out, stream, collective::all_gather, comm_group::tp, sh.tp, x.activation, mtp, mtp);
  if (sp) in_the_open(x, out, stream, collective::all_gather, comm_group::tp, sh.tp, wide, mtp, mtp);
  in_the_open(x, out, stream, sp ? collective::reduce_scatter : collective::all_reduce, comm_group::tp, sh.tp, wide,
              mtp, 0);
}

in_stream tensor_parallel(step_context const& x, comm_builder& out) {
  auto const& sh = x.sh;
  auto const& s = sh.s;
  in_stream stream;
  if (s.tp <= 1) return stream;
  auto const& tp = sh.tp;
  // Two collectives per layer in the forward (after the attention output
  // and the MLP down projection) and two in the backward; full
  // recomputation repeats the forward's. Op-level checkpointing keeps the
  // reduce-scatter outputs (they are in its save list) but re-runs the
  // collectives feeding recomputed matmuls: the two all-gathers of the norm
  // outputs with sequence parallelism, the all-reduce after the o
  // projection without.
  //
  // A mixture's MLP is the token dispatcher's instead (Megatron-Core
  // core_v0.13.0 moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher): with
  // etp = tp it gathers the tokens the all-to-all brought over the tensor-
  // parallel ranks, top-k of each, and reduce-scatters the experts' output
  // back (all-reduces it without sequence parallelism), outside Transformer
  // Engine's userbuffers; with etp = 1 it has no tensor-parallel collective.
  //
  // A mixture's shared expert is a dense MLP of Transformer Engine linears
  // on the layer's tokens (core_v0.13.0 moe/shared_experts.py:35-48): its
  // all-gather and reduce-scatter are a dense MLP's, under its own GEMMs
  // with userbuffers (with --moe-shared-expert-overlap they run on its side
  // stream, which expert_parallel credits to the all-to-alls only: they are
  // still costed here, in line).
  bool const mixture = x.m.experts > 1;
  bool const expert_tp = mixture && s.expert_tp() == s.tp;
  bool const shared = mixture && x.m.shared_expert_ffn > 0;
  std::int64_t const per_pass = mixture && !shared ? 1 : 2;  // of each dense collective, per layer
  std::int64_t const passes = 2 + (s.checkpoint == checkpoint_mode::full ? 1 : 0);
  bool const ops = s.checkpoint == checkpoint_mode::ops;
  std::int64_t const layers = x.sc.layers;
  // A mixture's dense layers (model::dense_layers) run a dense MLP's two
  // collectives a pass; `moe` layers are the mixtures, `units` each dense
  // collective of a pass over the stage's layers.
  std::int64_t const dense_layers = x.sc.dense_layers, moe = layers - dense_layers;
  std::int64_t const units = per_pass * moe + 2 * dense_layers;
  // Multi-token prediction modules (part of the head, stage_compute): each
  // a layer of the last layer's kind, forward and backward, never
  // recomputed.
  std::int64_t const mtp = x.sc.mtp_layers;
  std::int64_t const mtp_moe = x.sc.mtp_moe ? mtp : 0, mtp_dense = mtp - mtp_moe;
  std::int64_t const mtp_units = per_pass * mtp_moe + 2 * mtp_dense;
  std::int64_t const count = (passes * units + 2 * mtp_units) * x.micro;
  double const md = static_cast<double>(x.micro);
  bytes const routed = x.activation * static_cast<double>(sh.active_experts) * sh.received_share;
  if (s.sequence_parallel) {
    std::int64_t const ag_count = ((passes + (ops ? 1 : 0)) * units + 2 * mtp_units) * x.micro;
    // torchtitan's attention under full checkpointing (op_checkpoint_of:
    // FlexAttention's blocks, uncompiled) reduce-scatters its output again
    // when it runs again; under the op policy the output is kept.
    std::int64_t const rs_again = ops && sh.ops.attention_full ? layers : 0;
    std::int64_t const rs_count = count + rs_again * x.micro;
    auto const ag = call(collective::all_gather, x.activation, tp);
    auto const rs = call(collective::reduce_scatter, x.activation, tp);
    auto const ag_total = ag * static_cast<double>(ag_count);
    auto const rs_total = rs * static_cast<double>(rs_count);
    // In the open every collective is on the critical path; overlapped
    // (userbuffers) each runs in tp chunks under the GEMM it feeds or
    // follows: the norm outputs' all-gathers under qkv and the MLP's first
    // GEMM, the reduce-scatters under the o projection and the MLP's last
    // (and in the backward under their dgrad and wgrad GEMMs, about as
    // long), exposing the first chunk and what the GEMM cannot cover.
    seconds ag_layer = ag * static_cast<double>(per_pass), rs_layer = rs * static_cast<double>(per_pass);  // one pass
    // A dense layer's: two of each; its MLP's under the MLP's own GEMMs,
    // ffn wide, with userbuffers, exposing their first chunk.
    seconds ag_dense = ag * 2.0, rs_dense = rs * 2.0;
    if (x.sh.prog->training.tp_comm_overlap && !out.serial) {
      auto const& gf = x.sc.gemm_forward;
      auto const n = static_cast<std::size_t>(x.sh.gemm_count);
      double const t = static_cast<double>(s.tp);
      auto exposed = [&](seconds c, seconds g) { return c / t + max(seconds(0), c - g) * ((t - 1) / t); };
      // The dense MLP's first and last GEMMs, or a mixture's shared expert's.
      auto const mlp_role = mixture ? gemm_role::shared_expert : gemm_role::mlp;
      std::size_t up = n, down = n;
      for (std::size_t i = 0; i < n; ++i)
        if (x.sh.gemms[i].role == mlp_role) (up == n ? up : down) = i;
      bool const mlp = up < n && down < n;
      ag_layer = exposed(ag, gf[0]) + (mlp ? exposed(ag, gf[up]) : seconds(0));
      rs_layer = exposed(rs, gf[1]) + (mlp ? exposed(rs, gf[down]) : seconds(0));
      ag_dense = exposed(ag, gf[0]) + ag / t;
      rs_dense = exposed(rs, gf[1]) + rs / t;
    }
    double const passes_d = static_cast<double>((passes * moe + 2 * mtp_moe) * x.micro);
    double const dense_passes = static_cast<double>((passes * dense_layers + 2 * mtp_dense) * x.micro);
    seconds const ag_exposed = min(ag_total, ag_layer * passes_d + ag_dense * dense_passes +
                                                 ag * static_cast<double>((ops ? units : 0) * x.micro));
    seconds const rs_exposed =
        min(rs_total, rs_layer * passes_d + rs_dense * dense_passes + rs * static_cast<double>(rs_again * x.micro));
    out.add(collective::all_gather, comm_group::tp, tp, x.activation, ag_count, ag_total, ag_exposed, comm_phase::layer);
    out.add(collective::reduce_scatter, comm_group::tp, tp, x.activation, rs_count, rs_total, rs_exposed,
            comm_phase::layer);
    stream.time = (ag_exposed + rs_exposed) / md;
    stream.calls = (2 * passes + (ops ? 1 : 0)) * units + 4 * mtp_units + rs_again;
    stream.forward_time = (ag_layer + rs_layer) * static_cast<double>(moe + mtp_moe) +
                          (ag_dense + rs_dense) * static_cast<double>(dense_layers + mtp_dense);
    stream.forward_calls = 2 * (units + mtp_units);  // the all-gathers and the reduce-scatters
    if (expert_tp && allgather_dispatcher(x)) {
      // Megatron-Core's allgather dispatcher over the tp ranks (ep = 1).
      std::int64_t const again = recomputes_whole_moe(sh) ? 1 : 0;
      std::int64_t const layers_moe = moe + mtp_moe;
      auto const st = allgather_dispatch(x, out, tp, comm_group::tp, (passes - 1 + again) * moe + (1 + again) * mtp_moe,
                                         layers_moe, layers_moe);
      stream.time += st.time;
      stream.calls += st.calls;
      stream.forward_time += st.forward_time;
      stream.forward_calls += st.forward_calls;
    } else if (expert_tp) {
      std::int64_t const e_ag_layer = passes + (ops ? 1 : 0), e_rs_layer = passes;
      std::int64_t const e_ag_calls = e_ag_layer * moe + 2 * mtp_moe, e_rs_calls = e_rs_layer * moe + 2 * mtp_moe;
      auto const e_ag = call(collective::all_gather, routed, tp);
      auto const e_rs = call(collective::reduce_scatter, routed, tp);
      auto const e_ag_total = e_ag * static_cast<double>(e_ag_calls * x.micro);
      auto const e_rs_total = e_rs * static_cast<double>(e_rs_calls * x.micro);
      out.add(collective::all_gather, comm_group::tp, tp, routed, e_ag_calls * x.micro, e_ag_total, e_ag_total,
              comm_phase::layer);
      out.add(collective::reduce_scatter, comm_group::tp, tp, routed, e_rs_calls * x.micro, e_rs_total, e_rs_total,
              comm_phase::layer);
      stream.time += (e_ag_total + e_rs_total) / md;
      stream.calls += e_ag_calls + e_rs_calls;
      stream.forward_time += (e_ag + e_rs) * static_cast<double>(moe + mtp_moe);
      stream.forward_calls += 2 * (moe + mtp_moe);
    }
  } else {
    std::int64_t const ar_stage = passes * units + 2 * mtp_units + (ops ? layers : 0);  // a micro-batch's on the stage
    std::int64_t const ar_count = ar_stage * x.micro;
    auto const ar = call(collective::all_reduce, x.activation, tp);
    auto const total = ar * static_cast<double>(ar_count);
    out.add(collective::all_reduce, comm_group::tp, tp, x.activation, ar_count, total, total, comm_phase::layer);
    stream.time = ar * static_cast<double>(ar_stage);
    stream.calls = ar_stage;
    stream.forward_time = ar * static_cast<double>(units + mtp_units);
    stream.forward_calls = units + mtp_units;
    if (expert_tp) {
      std::int64_t const e_calls = passes * moe + 2 * mtp_moe;
      auto const e_ar = call(collective::all_reduce, routed, tp);
      auto const e_total = e_ar * static_cast<double>(e_calls * x.micro);
      out.add(collective::all_reduce, comm_group::tp, tp, routed, e_calls * x.micro, e_total, e_total,
              comm_phase::layer);
      stream.time += e_ar * static_cast<double>(e_calls);
      stream.calls += e_calls;
      stream.forward_time += e_ar * static_cast<double>(moe + mtp_moe);
      stream.forward_calls += moe + mtp_moe;
    }
  }
  mla_gathers(x, out, stream);
  moe_recomputed_again(x, out, stream);
  mtp_projections(x, out, stream);
  // Without loss parallelism the last stage all-gathers each micro-batch's
  // 16-bit logits over tp before the loss (torchtitan's output layer then
  // returns Replicate, models/llama3/infra/parallelize.py apply_tp); the
  // backward takes its slice of the gradient without a collective.
  if (!x.sh.prog->training.loss_parallel) {
    bytes const logits(static_cast<double>(sh.tokens) * static_cast<double>(sh.padded_vocab) *
                       element_bytes(unquantized(x.m.prec)));
    // (Each multi-token prediction module's logits too.)
    std::int64_t const heads = 1 + mtp;
    double const hd = static_cast<double>(heads);
    auto const one = call(collective::all_gather, logits, tp);
    out.add(collective::all_gather, comm_group::tp, tp, logits, heads * x.micro, one * md * hd, one * md * hd,
            comm_phase::layer);
    stream.time += one * hd;
    stream.calls += heads;
    stream.forward_time += one * hd;
    stream.forward_calls += heads;
  }
  return stream;
}

void context_parallel(step_context const& x, comm_builder& out) {
  auto const& sh = x.sh;
  auto const& s = sh.s;
  if (s.cp <= 1) return;
  // Each pass of a layer's attention exchanges the ranks' keys and values,
  // overlapped with the attention core of the chunk in hand (cp_comm_type;
  // the buffers are memory.cpp's cp_exchange):
  // - p2p, Transformer Engine's ring: cp - 1 sends of a rank's keys and
  //   values (at their own heads) forward; backward the keys and values and
  //   their 16-bit gradients, twice the bytes.
  // - PyTorch's ring attention, on keys and values expanded to the query's
  //   heads: forward one all-gather of every rank's (allgather) or cp - 1
  //   sends (alltoall); backward the same, and the fp32 key/value gradients
  //   passed on at every one of the cp steps
  //   (_templated_ring_attention_backward's dkv_rotater).
  auto const kind = sh.prog->training.cp_comm_type;
  bool const pytorch = pytorch_ring(kind);
  bytes const chunk(2.0 * static_cast<double>(sh.tokens) * static_cast<double>(sh.cp_kv_width) /
                    static_cast<double>(s.tp) * x.e);
  std::int64_t const fwd_passes = s.checkpoint == checkpoint_mode::full ? 2 : 1;
  auto const per_pass = static_cast<double>(x.sc.layers) * static_cast<double>(x.micro);
  bool const gather = kind == cp_comm_kind::allgather;
  seconds const hop = gather ? seconds(0) : call(collective::send_recv, chunk, sh.cp);
  bytes const gathered = chunk * static_cast<double>(s.cp);
  // One pass's key/value exchange, and the backward's gradients.
  seconds const kv = gather ? call(collective::all_gather, gathered, sh.cp) : hop * static_cast<double>(s.cp - 1);
  bytes const fp32_grads = chunk * (4.0 / x.e);
  seconds const grad_hop = pytorch ? call(collective::send_recv, fp32_grads, sh.cp) : seconds(0);
  seconds const grads = pytorch ? grad_hop * static_cast<double>(s.cp) : kv;
  // What the attention core does not hide, per layer, and over the step.
  seconds const exposed_layer =
      max(seconds(0), kv - x.sc.layer_attention_core) * static_cast<double>(fwd_passes) +
      max(seconds(0), kv + grads - x.sc.layer_attention_core_backward);
  seconds const exposed = exposed_layer * per_pass;
  // The key/value calls (with p2p, the gradients' sends too: one entry).
  std::int64_t const kv_calls = gather ? fwd_passes + 1 : (s.cp - 1) * (fwd_passes + (pytorch ? 1 : 2));
  auto const kv_count = kv_calls * static_cast<std::int64_t>(per_pass);
  seconds const kv_time = (gather ? kv : hop) * static_cast<double>(kv_calls) * per_pass;
  seconds const kv_exposed = min(exposed, kv_time);
  if (gather)
    out.add(collective::all_gather, comm_group::cp, sh.cp, gathered, kv_count, kv_time, kv_exposed, comm_phase::layer);
  else
    out.add(collective::send_recv, comm_group::cp, sh.cp, chunk, kv_count, kv_time, kv_exposed, comm_phase::layer);
  if (pytorch) {
    auto const count = s.cp * static_cast<std::int64_t>(per_pass);
    out.add(collective::send_recv, comm_group::cp, sh.cp, fp32_grads, count, grad_hop * static_cast<double>(count),
            exposed - kv_exposed, comm_phase::layer);
  }
}

void pipeline_parallel(step_context const& x, comm_builder& out) {
  auto const& sh = x.sh;
  auto const& s = sh.s;
  if (s.pp <= 1) return;
  // Each micro-batch's activations go forward and their gradients back
  // across each stage boundary (v times with interleaving). With
  // scatter-gather (Megatron 2021, DeepSpeed's pipeline engine) each tensor
  // rank sends 1/tp of the activation and the receiver all-gathers it over
  // the tensor group; Megatron-Core sends the sequence-parallel shard as it
  // is (or the whole activation without sequence parallelism). The sends
  // block the critical path twice per micro-batch (and chunk) plus the fill
  // and drain through the other pp - 1 boundaries; overlapped with compute
  // (overlap_p2p_comm) only the fill and drain wait for them.
  auto const& t = sh.prog->training;
  bool const split = s.tp > 1 && (t.p2p_scatter_gather || s.sequence_parallel);
  bytes const size = split ? x.activation / static_cast<double>(s.tp) : x.activation;
  group_shape pair = sh.pp;
  pair.size = pair.net.ranks = 2;
  seconds hop = call(collective::send_recv, size, pair);
  if (t.p2p_scatter_gather && !s.sequence_parallel && s.tp > 1)
    hop += call(collective::all_gather, x.activation, sh.tp);
  std::int64_t const count = 2 * (x.micro * s.virtual_stages + s.pp - 1);
  seconds const total = hop * static_cast<double>(count);
  seconds const exposed = t.overlap_p2p_comm ? hop * static_cast<double>(2 * (s.pp - 1)) : total;
  out.add(collective::send_recv, comm_group::pp, pair, size, count, total, exposed, comm_phase::micro_batch);

  // A tied embedding split over the pipeline lives on the first stage
  // (input) and the last (logits): their two gradient copies are summed
  // after the backward, before the optimizer step, as Megatron and
  // DeepSpeed's pipeline engine do. Every rank of those stages does so at
  // once over its own pair, in the gradient's precision, or with bf16 in
  // the optimizer's fp32 copy where the framework reduces that
  // (training.tied_hp_grad: DeepSpeed's BF16_Optimizer). The embedding
  // multi-token prediction reads on the last stage is summed the same way
  // (core_v0.13.0 models/common/language_module/language_module.py:
  // 116-150: shared_embedding on both stages).
  if (sh.embedding.active()) {
    bytes const grads(sh.vocab_params * tied_grad_bytes(x.m, t));
    auto const one = call(collective::all_reduce, grads, sh.embedding);
    out.add(collective::all_reduce, comm_group::embedding, sh.embedding, grads, 1, one, one, comm_phase::grad_sync);
  }
}

namespace {

// With an interleaved pipeline (v = virtual_stages > 1) each model chunk's
// gradients are synced as soon as that chunk's last backward is done, and
// its weights gathered just before its first forward (Megatron-Core:
// schedules.py's grad_sync_func / param_sync_func per chunk, one DDP per
// chunk). In the cooldown, chunk j's last backward ends about j x pp chunk
// slots (backward_one / v each) before the stage's last: chunks 1..v-1
// sync under the rest of the cooldown, a window of (v - 1) / v x pp
// micro-batch backwards; the warmup mirrors it for the forward.
double interleaved_window(step_context const& x) {
  auto const& s = x.sh.s;
  if (s.pp <= 1 || s.virtual_stages <= 1) return 0;
  auto const v = static_cast<double>(s.virtual_stages);
  return (v - 1) / v * static_cast<double>(s.pp);
}

// The gradient sync of the last micro-batch in `buckets` buckets hides under
// its backward: the first bucket is ready only after its layers' backward,
// the last bucket's collective always trails the backward; with an
// interleaved pipeline the earlier chunks' syncs also hide under the
// cooldown (interleaved_window). Without overlap (overlap_grad_sync =
// false) the whole sync follows the backward.
seconds bucketed_exposed(step_context const& x, seconds total, std::int64_t buckets) {
  if (!x.overlap) return total;
  auto const n = static_cast<double>(buckets);
  seconds const capacity = x.backward_one * (1.0 - 1.0 / n + interleaved_window(x));
  return max(total - capacity, total / n);
}

// Gradients one group sums: the dense weights' over the sync (or shard)
// group, a mixture's experts' over their own (Megatron-Core keeps the two
// in separate buffers and reduces the experts' over the expert
// data-parallel group: core_v0.13.0 megatron/core/distributed/
// distributed_data_parallel.py:209-212, 378-384).
struct flow {
  comm_group group = comm_group::dp;
  group_shape const* over = nullptr;
  bytes size;  // of the stage on one GPU
};

// The same for the layer-by-layer stages (ZeRO-2/3): one layer's
// parameters and the stage's others (embedding, logits, final norm; none
// in the experts' flow).
struct layer_flow {
  comm_group group = comm_group::dp;
  group_shape const* over = nullptr;
  double layer = 0;
  double head = 0;
  bool has_head = true;
};

// At most two flows: the dense weights' and a mixture's experts'.
constexpr std::size_t max_flows = 2;

// Each flow's share of `total`: all of it for one flow.
double share(seconds part, seconds total, std::size_t flows) {
  if (flows == 1) return 1.0;
  return total.value() > 0 ? part / total : 0.0;
}

// The gradients of a step in buckets, reduced once a step under the last
// micro-batch's backward, or after every micro-batch's backward under its
// own (`sync_per_micro`). The flows' buckets run one after another under
// the same backward: what it does not hide is split over them by time.
void bucketed(step_context const& x, comm_builder& out, collective op, std::span<flow const> flows) {
  std::array<std::int64_t, max_flows> buckets{};
  std::array<seconds, max_flows> one{};
  std::int64_t all_buckets = 0;
  seconds all;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    buckets[i] = buckets_for(flows[i].size, x.grad_bucket);
    one[i] = call(op, flows[i].size / static_cast<double>(buckets[i]), *flows[i].over) *
             static_cast<double>(buckets[i]);
    all_buckets += buckets[i];
    all += one[i];
  }
  seconds const exposed = bucketed_exposed(x, all, all_buckets);
  std::int64_t const times = x.sync_per_micro ? x.micro : 1;
  double const t = static_cast<double>(times);
  for (std::size_t i = 0; i < flows.size(); ++i)
    out.add(op, flows[i].group, *flows[i].over, flows[i].size / static_cast<double>(buckets[i]), buckets[i] * times,
            one[i] * t, exposed * share(one[i], all, flows.size()) * t, comm_phase::grad_sync);
}

// ZeRO-1 as Megatron's and DeepSpeed's distributed optimizers run it:
// bucketed reduce-scatter (or all-reduce) of the gradients over `over`,
// then the updated weights all-gathered: after the optimizer step in the
// open, or (Megatron's --overlap-param-gather) bucket by bucket under the
// next step's first forward (and, interleaved, the later chunks' under the
// warmup), the first bucket exposed (M4); in fp8 with
// fp8 param gather, half the bytes.
void zero1(step_context const& x, comm_builder& out, std::span<flow const> flows) {
  auto const& t = x.sh.prog->training;
  auto const op = t.grad_reduce_scatter ? collective::reduce_scatter : collective::all_reduce;
  bucketed(x, out, op, flows);
  std::array<std::int64_t, max_flows> buckets{};
  std::array<bytes, max_flows> weights_bucket{};
  std::array<seconds, max_flows> ag{};
  seconds first, all;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    buckets[i] = buckets_for(flows[i].size, x.grad_bucket);
    weights_bucket[i] = flows[i].size / static_cast<double>(buckets[i]) * (x.layer_weight_e / x.grad_e);
    seconds const one = call(collective::all_gather, weights_bucket[i], *flows[i].over);
    if (i == 0) first = one;
    ag[i] = one * static_cast<double>(buckets[i]);
    all += ag[i];
  }
  seconds const exposed = t.overlap_param_gather
                              ? first + max(seconds(0), all - first - x.forward_one * (1.0 + interleaved_window(x)))
                              : all;
  for (std::size_t i = 0; i < flows.size(); ++i)
    out.add(collective::all_gather, flows[i].group, *flows[i].over, weights_bucket[i], buckets[i], ag[i],
            exposed * share(ag[i], all, flows.size()), comm_phase::after_step);
}

// One flow's calls for one layer and for the stage's other weights.
struct layer_calls {
  seconds layer, head;
};
// The weights' gathers move layers at their own element size
// (`layer_element`, 1 with fp8 param gather) and the rest 16-bit.
layer_calls calls_of(layer_flow const& f, collective op, double layer_element, double head_element) {
  return {call(op, bytes(f.layer * layer_element), *f.over),
          f.has_head ? call(op, bytes(f.head * head_element), *f.over) : seconds(0)};
}

// ZeRO-2 as DeepSpeed's stage 2 and FSDP's SHARD_GRAD_OP run it: a rank
// keeps only its shard of the gradients, so every micro-batch's backward
// reduce-scatters each layer's gradients as they are ready (the last
// layer's trails it); nothing accumulates locally across micro-batches
// (DeepSpeed engine.py:2180-2197; FSDP reduces in every backward). Each
// layer's updated weights are all-gathered once a step, ahead of its first
// forward, prefetched under the previous layer. A mixture's experts' calls
// follow the dense weights' in each layer.
void zero2(step_context const& x, comm_builder& out, std::span<layer_flow const> flows, stage_shape const& st) {
  auto const op = x.sh.prog->training.grad_reduce_scatter ? collective::reduce_scatter : collective::all_reduce;
  double const md = static_cast<double>(x.micro);
  double const layers = static_cast<double>(st.layers);
  std::array<layer_calls, max_flows> rs{}, ag{};
  layer_calls rs_all{}, ag_all{};
  for (std::size_t i = 0; i < flows.size(); ++i) {
    rs[i] = calls_of(flows[i], op, x.grad_e, x.grad_e);
    ag[i] = calls_of(flows[i], collective::all_gather, x.layer_weight_e, x.comm_e);
    rs_all = {rs_all.layer + rs[i].layer, rs_all.head + rs[i].head};
    ag_all = {ag_all.layer + ag[i].layer, ag_all.head + ag[i].head};
  }
  seconds const bwd_layer = x.sc.layer_backward + x.sc.layer_recompute;
  auto const total = [&](layer_calls const& c) { return c.layer * layers + c.head; };
  seconds const rs_exposed =
      x.overlap ? rs_all.head + max(seconds(0), rs_all.layer - bwd_layer) * (layers - 1) : total(rs_all);
  seconds const ag_exposed =
      ag_all.head + ag_all.layer + max(seconds(0), ag_all.layer - x.sc.layer_forward) * (layers - 1);
  for (std::size_t i = 0; i < flows.size(); ++i) {
    std::int64_t const calls = st.layers + (flows[i].has_head ? 1 : 0);
    out.add(op, flows[i].group, *flows[i].over, bytes(flows[i].layer * x.grad_e), calls * x.micro,
            total(rs[i]) * md, rs_exposed * share(total(rs[i]), total(rs_all), flows.size()) * md,
            comm_phase::layer_backward);
  }
  for (std::size_t i = 0; i < flows.size(); ++i)
    out.add(collective::all_gather, flows[i].group, *flows[i].over, bytes(flows[i].layer * x.layer_weight_e),
            st.layers + (flows[i].has_head ? 1 : 0), total(ag[i]),
            ag_exposed * share(total(ag[i]), total(ag_all), flows.size()), comm_phase::after_step);
}

// ZeRO-3 / FSDP: every micro-batch gathers each layer in the forward and
// again in the backward and reduce-scatters its gradients; the next layer's
// gather is prefetched under the current layer's compute.
void zero3(step_context const& x, comm_builder& out, std::span<layer_flow const> flows, stage_shape const& st) {
  double const md = static_cast<double>(x.micro);
  double const layers = static_cast<double>(st.layers);
  std::array<layer_calls, max_flows> ag_of{}, rs_of{};
  layer_calls ag_sum{}, rs_sum{};
  for (std::size_t i = 0; i < flows.size(); ++i) {
    ag_of[i] = calls_of(flows[i], collective::all_gather, x.layer_weight_e, x.comm_e);
    rs_of[i] = calls_of(flows[i], collective::reduce_scatter, x.grad_e, x.grad_e);
    ag_sum = {ag_sum.layer + ag_of[i].layer, ag_sum.head + ag_of[i].head};
    rs_sum = {rs_sum.layer + rs_of[i].layer, rs_sum.head + rs_of[i].head};
  }
  seconds const ag = ag_sum.layer, rs = rs_sum.layer, ag_head = ag_sum.head, rs_head = rs_sum.head;
  seconds const fwd_compute = x.sc.layer_forward;
  seconds const bwd_compute = x.sc.layer_backward + x.sc.layer_recompute;
  // The embedding/logits unit is gathered first in each pass and its
  // gradients reduced last: never hidden. Without overlap every
  // reduce-scatter waits for the backward.
  seconds const fwd_exposed = ag_head + ag + max(seconds(0), ag - fwd_compute) * (layers - 1);
  // A backward's exposed time when it gathers `g` per layer (`g_head` for
  // the other unit) and reduce-scatters every layer's gradients.
  auto const bwd_exposed = [&](seconds g, seconds g_head) {
    return x.overlap ? g_head + rs_head + rs + max(seconds(0), g + rs - bwd_compute) * (layers - 1)
                     : g_head + rs_head + rs * layers + g + max(seconds(0), g - bwd_compute) * (layers - 1);
  };
  // Each layer and the stage's other unit are gathered in every
  // micro-batch's forward and backward and reduce-scattered in every
  // backward; a stage kept gathered (torchtitan with PyTorch's pipelining)
  // gathers once, under the first forward, and reduce-scatters its
  // accumulated gradients once, under the last backward.
  bool const once = x.sh.stage_kept_gathered();
  std::int64_t const gather_passes = once ? 1 : 2 * x.micro;
  std::int64_t const scatter_passes = once ? 1 : x.micro;
  seconds const exposed_total = once ? fwd_exposed + bwd_exposed(seconds(0), seconds(0))
                                     : (fwd_exposed + bwd_exposed(ag, ag_head)) * md;
  // The exposed time splits over the entries in proportion to their traffic.
  std::array<seconds, max_flows> ag_total{}, rs_total{};
  seconds traffic;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    ag_total[i] = (ag_of[i].layer * layers + ag_of[i].head) * static_cast<double>(gather_passes);
    rs_total[i] = (rs_of[i].layer * layers + rs_of[i].head) * static_cast<double>(scatter_passes);
    traffic += ag_total[i] + rs_total[i];
  }
  if (traffic.value() <= 0) return;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    std::int64_t const units = st.layers + (flows[i].has_head ? 1 : 0);
    out.add(collective::all_gather, flows[i].group, *flows[i].over, bytes(flows[i].layer * x.layer_weight_e),
            units * gather_passes, ag_total[i], exposed_total * (ag_total[i] / traffic), comm_phase::layer);
    double const rs_share = flows.size() == 1 ? 1 - ag_total[i] / traffic : rs_total[i] / traffic;
    out.add(collective::reduce_scatter, flows[i].group, *flows[i].over, bytes(flows[i].layer * x.grad_e),
            units * scatter_passes, rs_total[i], exposed_total * rs_share, comm_phase::layer_backward);
  }
}

// Hybrid sharding: each shard's gradient slice (`slice`, bytes a GPU holds
// after its shard group's reduce-scatter) is all-reduced across the
// replicas, once a step under the last backward, or after every
// micro-batch's (torchtitan's HSDP, T3) unless the stage is kept gathered
// through a pipelined step (T10).
void replicas(step_context const& x, comm_builder& out, bytes slice) {
  auto const& sh = x.sh;
  flow const f{comm_group::replicate, &sh.replicate, slice};
  bucketed(x, out, collective::all_reduce, std::span(&f, 1));
}

}  // namespace

void data_parallel(step_context const& x, comm_builder& out) {
  auto const& sh = x.sh;
  auto const& s = sh.s;
  if (sh.sync.size <= 1) return;
  // With context parallelism the cp ranks hold the same weights too: their
  // gradients sync over dp x cp. Every stage syncs at once; the heaviest
  // takes longest. A mixture's expert gradients sum over the dp x cp / ep
  // ranks that hold the same experts (and ZeRO shards them there): a flow
  // of their own, none where each expert has one rank (ep = dp x cp).
  stage_shape const st = sh.stage(sh.heaviest_stage);
  bool const apart = sh.experts_sync_apart();
  double const experts = apart ? st.expert_params : 0.0;
  double const layer_experts = apart ? sh.layer_expert_params : 0.0;
  // ZeRO's collectives run over the shard group ("dp" when it is the whole
  // sync group); a smaller one adds the replicas' all-reduce. The experts'
  // run over the ranks in the shard group that hold the same experts
  // (Megatron-Core's intra-instance expert group, torchtitan's
  // dp_shard_mod_ep mesh), none when that is the rank alone.
  bool const hybrid = sh.hybrid();
  comm_group const group = s.zero == 0 || !hybrid ? comm_group::dp : comm_group::shard;
  group_shape const& over = s.zero == 0 ? sh.sync : sh.shard;
  comm_group const expert_group = hybrid ? comm_group::expert_shard : comm_group::expert_dp;
  group_shape const& expert_over = hybrid ? sh.expert_shard : sh.expert_sync;
  bool const expert_flow = apart && expert_over.size > 1;
  if (s.zero <= 1) {
    std::array<flow, max_flows> flows{flow{group, &over, bytes((st.params - experts) * x.grad_e)},
                              flow{expert_group, &expert_over, bytes(experts * x.grad_e)}};
    auto const used = std::span(flows.data(), expert_flow ? 2 : 1);
    if (s.zero == 0)
      bucketed(x, out, collective::all_reduce, used);
    else
      zero1(x, out, used);
  } else {
    double const head = st.params - sh.layers_params(st.layers, st.moe_layers);
    // A stage of dense and mixture layers (model::dense_layers,
    // moe_layer_freq) moves its layers' weights as so many layers of their
    // mean size.
    double layer_dense = sh.layer_params - layer_experts, layer_routed = layer_experts;
    if (x.m.mixed_layers() && st.layers > 0) {
      double const n = static_cast<double>(st.layers), moe = static_cast<double>(st.moe_layers);
      layer_routed = layer_experts * moe / n;
      layer_dense = sh.layers_params(st.layers, st.moe_layers) / n - layer_routed;
    }
    std::array<layer_flow, max_flows> flows{layer_flow{group, &over, layer_dense, head, true},
                                    layer_flow{expert_group, &expert_over, layer_routed, 0, false}};
    auto const used = std::span(flows.data(), expert_flow ? 2 : 1);
    if (s.zero == 2)
      zero2(x, out, used, st);
    else
      zero3(x, out, used, st);
  }
  // What each GPU holds of the gradients after its shard group's
  // reduce-scatters: the dense weights' 1 / shard, the experts' 1 / their
  // shard group.
  if (hybrid)
    replicas(x, out,
             bytes((st.params - experts) * x.grad_e) / static_cast<double>(sh.shard.size) +
                 bytes(experts * x.grad_e) / static_cast<double>(sh.expert_shard.size));
}

void expert_parallel(step_context const& x, comm_builder& out) {
  auto const& sh = x.sh;
  if (x.m.experts <= 1 || sh.s.ep <= 1) return;
  // Tokens go to their experts and back, forward and backward: top-k
  // copies of the tokens this rank holds (tokens / tp with sequence
  // parallelism). Under a skew every rank waits for the busiest, which
  // receives (and sends back) its load's share of them (routing_load).
  bytes const size =
      x.activation * static_cast<double>(sh.active_experts) * sh.received_share / static_cast<double>(sh.sp_divisor);
  // NCCL's call for it: its time, and its fixed part for DeepEP's.
  nccl::choice const a2a = nccl::best(collective::all_to_all, size, sh.ep.net);
  seconds const one = a2a.time;
  // Full recomputation dispatches and combines again before the backward;
  // torchtitan's op-level policy keeps the all-to-alls' outputs (its
  // mixtures' save lists hold all_to_all_single: TT v0.2.0
  // models/llama4/infra/parallelize.py:37-43).
  // Megatron-Core's 'moe' recompute module dispatches and combines again
  // too (core_v0.13.0 moe/moe_layer.py:247-263), in the modules' layers as
  // well.
  std::int64_t const again = recomputes_whole_moe(sh) ? 1 : 0;
  std::int64_t const passes = 2 + (sh.s.checkpoint == checkpoint_mode::full ? 1 : 0) + again;
  std::int64_t const moe = x.sc.layers - x.sc.dense_layers;  // a mixture's dense layers send nothing
  // A multi-token prediction module's mixture layer: forward and backward.
  std::int64_t const mtp = x.sc.mtp_moe ? x.sc.mtp_layers : 0;
  if (allgather_dispatcher(x)) {
    // Over the ep ranks: etp = 1 here (the check refuses etp = tp > 1).
    allgather_dispatch(x, out, sh.ep, comm_group::ep, (passes - 1) * moe + (1 + again) * mtp, moe + mtp, moe + mtp);
    return;
  }
  std::int64_t const count = 2 * (passes * moe + (2 + again) * mtp) * x.micro;
  auto const& t = x.sh.prog->training;
  if (t.moe_token_dispatcher == dispatcher_kind::flex) {
    // DeepEP's normal kernels as Megatron-Core's flex dispatcher runs them
    // (core_v0.13.0 moe/token_dispatcher.py:902-1131, moe/fused_a2a.py):
    // each token goes once to each GPU that holds one of its experts, not
    // once an expert; across nodes once to each node, to the GPU of its own
    // index there, which forwards it over NVLink. The network and NVLink
    // legs run at once, the slower the time; the combine sends the same
    // back (summed on the node first), the backward the two again. With the
    // fixed part NCCL's all-to-all of the group would pay, in the open (the
    // compute stream waits on it, fused_a2a.py).
    std::int64_t const n = sh.ep.size;
    std::int64_t const local = std::clamp<std::int64_t>(sh.ep.placement.max_per_node, 1, n);
    std::int64_t const nodes = std::max<std::int64_t>(1, sh.ep.placement.nodes);
    bytes const token = x.activation * sh.received_share / static_cast<double>(sh.sp_divisor);
    double const ranks = routing_reach(x.m, n);
    double const across = routing_reach(x.m, nodes);  // 1 on one node, whose network leg is none
    bytes const nvlink = token * ranks * (static_cast<double>(local - 1) / static_cast<double>(local));
    bytes const network = token * across * (static_cast<double>(nodes - 1) / static_cast<double>(nodes));
    seconds const one_flex = a2a.latency + nccl::all_to_all_transfer(network, nvlink, sh.ep.net);
    seconds const flex_total = one_flex * static_cast<double>(count);
    out.add(collective::all_to_all, comm_group::ep, sh.ep, token * ranks, count, flex_total, flex_total,
            comm_phase::layer);
    return;
  }
  seconds const total = one * static_cast<double>(count);
  seconds exposed = total;
  // Megatron-Core's --moe-shared-expert-overlap runs the shared expert on a
  // stream of its own: its first GEMM and activation from the dispatch's
  // all-to-all on, its second before the combine's (core_v0.13.0
  // moe/token_dispatcher.py:581, 644, 784-802; moe/shared_experts.py:119-240). A
  // pass's two all-to-alls hide under its GEMMs: the forward's, twice them
  // in the backward.
  // torchtitan runs its shared expert's forward between the combine's
  // all-to-all and the use of its output (TT v0.2.0 models/moe/moe.py:
  // 464-470; functional collectives wait on first use): the forward's
  // combine hides under its GEMMs; the dispatch, whose splits the host
  // waits for, and the backward's, which autograd reaches after the shared
  // expert's backward, do not.
  if ((t.shared_expert_overlap || t.shared_expert_combine_overlap) && x.m.shared_expert_ffn > 0) {
    seconds shared;
    for (int i = 0; i < sh.gemm_count; ++i)
      if (sh.gemms[static_cast<std::size_t>(i)].role == gemm_role::shared_expert)
        shared += x.sc.gemm_forward[static_cast<std::size_t>(i)];
    seconds const forward = t.shared_expert_overlap ? max(seconds(0), one * 2.0 - shared)
                                                    : one + max(seconds(0), one - shared);
    seconds const backward = t.shared_expert_overlap ? max(seconds(0), one * 2.0 - shared * 2.0) : one * 2.0;
    exposed = (forward * static_cast<double>(passes - 1) + backward) * static_cast<double>(moe * x.micro) +
              (forward * static_cast<double>(1 + again) + backward) * static_cast<double>(mtp * x.micro);
  }
  out.add(collective::all_to_all, comm_group::ep, sh.ep, size, count, total, exposed, comm_phase::layer);
}

seconds optimizer_step(step_context const& x) {
  auto const& sh = x.sh;
  // Each rank updates its shard: the experts' over their fewer ranks.
  stage_shape const st = sh.stage(sh.heaviest_stage);
  double const updated = (st.params - st.expert_params) / static_cast<double>(sh.shard_ranks()) +
                         st.expert_params / static_cast<double>(sh.expert_shard_ranks());
  double const moment = x.sh.prog->training.optimizer_state_precision == precision::bf16 ? 2.0 : 4.0;
  return memory_time(x.g, bytes(updated * optimizer_bytes_per_param(x.m.optimizer, moment)));
}

}  // namespace dtplan::planner::cost
