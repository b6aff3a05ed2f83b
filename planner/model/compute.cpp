#include "planner/model/compute.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "planner/model/kernels.hpp"
#include "planner/model/op_checkpoint.hpp"
#include "planner/model/params.hpp"

namespace dtplan::planner {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// GEMM tile shapes a library chooses from, with the share of the large-tile
// rate each reaches: smaller tiles reuse each loaded operand fewer times.
struct tile {
  std::int64_t m, n;
  double reuse;
};
constexpr std::array<tile, 4> tiles{{{256, 128, 1.0}, {128, 128, 0.92}, {128, 64, 0.82}, {64, 64, 0.65}}};
constexpr std::int64_t k_tile = 64;

// PyTorch eager element-wise code against fused kernels, per operator of a
// layer: bytes moved per element and kernels, eager over fused. Counted
// from torchtitan's Llama (models/llama3/model.py) with 16-bit activations:
// RMSNorm as float(), pow, mean, rsqrt, multiply, type_as and the weight's
// multiply (36 bytes an element against a fused kernel's 4, eight kernels);
// rotary as float(), the complex multiply and type_as on q and k (20 bytes
// against 4, three kernels each); SwiGLU's silu and multiply apart (10
// bytes against 6, two kernels). LayerNorm (F.layer_norm), GELU and the
// residual adds are one kernel each either way.
constexpr double eager_rmsnorm_bytes = 9.0;
constexpr double eager_rmsnorm_kernels = 8.0;
constexpr double eager_rotary_bytes = 5.0;
constexpr double eager_rotary_kernels = 3.0;
constexpr double eager_swiglu_bytes = 10.0 / 6.0;
constexpr double eager_swiglu_kernels = 2.0;

// Megatron's softmax where its fused kernel does not fit the shape
// (softmax_falls_back): in fp32, as `attention_softmax_in_fp32` (Megatron-
// Core's default; MLM 2021's with query-key layer scaling) asks, PyTorch
// runs float(), the scale's multiply, the mask's masked_fill_, softmax and
// the cast back: 37 bytes a score forward against the kernel's 4; backward
// the casts' copies, softmax's backward, masked_fill and the multiply, 41
// against 6; five kernels each way against one (microsoft/Megatron-
// DeepSpeed 0782d753dd megatron/model/fused_softmax.py `forward`).
constexpr double softmax_fallback_bytes_forward = 37.0 - 4.0;
constexpr double softmax_fallback_bytes_backward = 41.0 - 6.0;
constexpr std::int64_t softmax_fallback_kernels = 5 - 1;

// Flash attention's backward runs five GEMMs for the forward's two.
constexpr double flash_backward_ratio = 2.5;
constexpr std::int64_t flash_block = 128;

// A GPU's matmul figure for precision p: its fp8 figure where it has one
// (0: none), else the 16-bit one; fp4's where it has one, else fp8's.
template <class T>
T matmul_figure(T sixteen_bit, T fp8, T fp4, precision p) {
  if (p == precision::fp4 && fp4 > T{}) return fp4;
  return (p == precision::fp8 || p == precision::fp4) && fp8 > T{} ? fp8 : sixteen_bit;
}

// A tile's fixed cost in K elements: fp4's main loop covers K twice as
// fast as fp8's, so the same fixed time is worth twice the K.
std::int64_t tile_overhead(gpu const& g, precision p) {
  std::int64_t const fp8 = g.matmul_tile_overhead_fp8 > 0 ? g.matmul_tile_overhead_fp8 : g.matmul_tile_overhead;
  if (p == precision::fp4) return g.matmul_tile_overhead_fp4 > 0 ? g.matmul_tile_overhead_fp4 : 2 * fp8;
  return p == precision::fp8 ? fp8 : g.matmul_tile_overhead;
}

}  // namespace

double matmul_element_bytes(precision p) {
  switch (p) {
    case precision::fp8: return 1.0;
    // e2m1, two to a byte, and an e4m3 scale for each 16 elements.
    case precision::fp4: return 0.5 + 1.0 / 16.0;
    case precision::fp32: return 4.0;
    case precision::bf16:
    case precision::fp16: break;
  }
  return 2.0;
}

flop_rate peak_at(gpu const& g, precision p) {
  switch (p) {
    // No fp4 peak: the checker refuses fp4 on such a GPU (lower.cpp).
    case precision::fp4: return matmul_figure(g.peak_flops, g.peak_flops_fp8, g.peak_flops_fp4, p);
    case precision::fp8: return matmul_figure(g.peak_flops, g.peak_flops_fp8, flop_rate(), p);
    case precision::fp32: return g.peak_flops_fp32.value() > 0 ? g.peak_flops_fp32 : g.peak_flops;
    case precision::bf16:
    case precision::fp16: break;
  }
  return g.peak_flops;
}

namespace {

// Compute-limited kernels run at the clock a long run holds; the peak is the
// datasheet's, at boost (memory-bound work does not scale with the clock).
double sustained_peak(gpu const& g, precision p) { return peak_at(g, p).value() * g.sustained_clock; }

}  // namespace

double element_bytes(precision p) { return p == precision::fp32 ? 4.0 : 2.0; }

flops gemm_flops(gemm_shape const& s) {
  return flops(2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
               static_cast<double>(s.batch));
}

namespace {

// The share of the rate a GEMM's tiles reach on the SMs: the best tile's
// reuse, the part of its tiles the shape fills, the part of its last wave
// the tiles fill.
double tile_efficiency(gpu const& g, gemm_shape const& s) {
  auto const m = s.m;
  auto const n = s.n;
  auto const sms = g.sm_count;
  double best = 0;
  for (auto const& t : tiles) {
    auto const tm = ceil_div(m, t.m);
    auto const tn = ceil_div(n, t.n);
    double const fill = static_cast<double>(m * n) / static_cast<double>(tm * t.m * tn * t.n);
    auto const count = tm * tn * s.batch;
    double const waves = static_cast<double>(ceil_div(count, sms));
    double const wave_eff = static_cast<double>(count) / (waves * static_cast<double>(sms));
    best = std::max(best, t.reuse * fill * wave_eff);
  }
  return best;
}

}  // namespace

double shape_efficiency(gpu const& g, gemm_shape const& s, precision p) {
  auto const k = s.k;
  double const k_iters = static_cast<double>(ceil_div(k, k_tile));
  // The prologue and epilogue of a tile (fill the operand pipeline, write
  // C) cost the GPU's matmul_tile_overhead of K: short reductions pay it.
  double const padded = k_iters * static_cast<double>(k_tile);
  double const k_eff = static_cast<double>(k) / (padded + static_cast<double>(tile_overhead(g, p)));
  return std::clamp(tile_efficiency(g, s) * k_eff, 1e-6, 1.0);
}

seconds gemm_time(gpu const& g, gemm_shape const& s, precision p) {
  auto const f = gemm_flops(s);
  double const efficiency = matmul_figure(g.matmul_efficiency, g.matmul_efficiency_fp8, g.matmul_efficiency_fp4, p);
  double const rate = sustained_peak(g, p) * efficiency * shape_efficiency(g, s, p);
  double const e = matmul_element_bytes(p);
  double const moved = e * static_cast<double>(s.batch) *
                       (static_cast<double>(s.m) * static_cast<double>(s.k) +
                        static_cast<double>(s.k) * static_cast<double>(s.n) +
                        static_cast<double>(s.m) * static_cast<double>(s.n));
  double const compute = f.value() / rate;
  double const memory = moved / (g.hbm_bandwidth.value() * g.hbm_efficiency);
  return seconds(std::max(compute, memory)) + g.kernel_latency;
}

seconds memory_time(gpu const& g, bytes moved) {
  return seconds(moved.value() / (g.hbm_bandwidth.value() * g.hbm_efficiency)) + g.kernel_latency;
}

namespace {

// Forward, dgrad and wgrad of one weight GEMM [tokens, in] x [in, out].
struct weight_gemm {
  seconds forward;
  seconds backward;
};

weight_gemm weight_op(gpu const& g, std::int64_t tokens, std::int64_t in, std::int64_t out, std::int64_t batch,
                      precision p) {
  weight_gemm w;
  w.forward = gemm_time(g, {tokens, out, in, batch}, p);
  w.backward = gemm_time(g, {tokens, in, out, batch}, p) + gemm_time(g, {in, out, tokens, batch}, p);
  return w;
}

// The attention core of one layer on one GPU (scores, softmax, weighted
// sum), forward and backward: heads / tp heads, the GPU's tokens as queries
// against the whole sequence.
std::pair<seconds, seconds> attention_core(strategy_shape const& sh) {
  model const& m = sh.prog->model;
  gpu const& g = sh.prog->cluster.device;
  auto const tokens = sh.tokens;
  // Scores over query/key heads, the weighted sum over value heads (the
  // same width but under multi-latent attention).
  auto const qk_dim = sh.qk_head_dim, v_dim = sh.v_head_dim;
  auto const local_heads = sh.local_heads;
  auto const seq = m.seq_len;
  double const core_flops = 2.0 * static_cast<double>(tokens) * static_cast<double>(seq) *
                            static_cast<double>(qk_dim + v_dim) * static_cast<double>(local_heads);
  // Attention core precision: fp8 and fp4 training keep attention in 16-bit.
  precision const core_prec = unquantized(m.prec);
  seconds core_fwd, core_bwd;
  if (uses_flash(*sh.prog)) {
    // A causal flash kernel skips the key blocks above the diagonal.
    auto const blocks = ceil_div(seq, flash_block);
    double const causal = static_cast<double>(blocks + 1) / (2.0 * static_cast<double>(blocks));
    // Tiles and waves as for the weighted sum: queries x a value head,
    // reduced over keys.
    gemm_shape const shape{tokens, v_dim, seq, local_heads};
    // Flash kernels also compute exp() and rescale the running softmax on the
    // special-function units, so they reach their own (calibrated) share of
    // the peak, attention_efficiency, not matmul_efficiency.
    // A kernel with a measured fixed cost per query block (kernels.hpp)
    // pays it against the keys a block runs over, half the sequence on
    // average when causal; for the others the GEMM tile's overhead on the
    // whole sequence stands for theirs.
    auto const kernel = sh.prog->training.attention_kernel;
    double const mean_keys = static_cast<double>(seq) * causal;
    auto const block_keys = query_block_keys(kernel);
    double const shape_share = block_keys ? tile_efficiency(g, shape) * mean_keys / (mean_keys + *block_keys)
                                          : shape_efficiency(g, shape, core_prec);
    double const rate = sustained_peak(g, core_prec) * attention_efficiency(g, kernel) * shape_share;
    core_fwd = seconds(core_flops * causal / rate) + g.kernel_latency;
    core_bwd = seconds(core_flops * causal * flash_backward_ratio / rate) + g.kernel_latency;
  } else {
    auto const batch = sh.s.micro_batch * local_heads;
    auto const q_len = sh.seq_local;
    gemm_shape const scores{q_len, seq, qk_dim, batch};
    gemm_shape const weighted{q_len, v_dim, seq, batch};
    double const elems = static_cast<double>(batch) * static_cast<double>(q_len) * static_cast<double>(seq);
    // Scores written, softmax read and written, dropout read, written and masked: ~11 bytes per score.
    core_fwd = gemm_time(g, scores, core_prec) + gemm_time(g, weighted, core_prec) + memory_time(g, bytes(11.0 * elems));
    // dQ and dK over the query/key width, dP and dV over the value width.
    core_bwd = gemm_time(g, {q_len, qk_dim, seq, batch}, core_prec) + gemm_time(g, {qk_dim, seq, q_len, batch}, core_prec) +
               gemm_time(g, {q_len, seq, v_dim, batch}, core_prec) + gemm_time(g, {seq, v_dim, q_len, batch}, core_prec) +
               memory_time(g, bytes(11.0 * elems));
    if (sh.softmax_fp32) {
      // memory_time pays one kernel's latency; the fallback adds four.
      auto const more_kernels = g.kernel_latency * static_cast<double>(softmax_fallback_kernels - 1);
      core_fwd += memory_time(g, bytes(softmax_fallback_bytes_forward * elems)) + more_kernels;
      core_bwd += memory_time(g, bytes(softmax_fallback_bytes_backward * elems)) + more_kernels;
    }
  }

  return {core_fwd, core_bwd};
}

// PyTorch's ring attention (cp_comm_type allgather or alltoall) runs the
// core as cp SDPA calls a pass and merges their results in eager fp32
// operators (torch/distributed/tensor/experimental/_attention.py at
// pytorch 0123248a48). With q the bytes of a rank's queries (its expanded
// keys and values are as large), forward: each of the cp - 1 later steps
// concatenates the keys and values it passes on (4q), casts the block's
// output to fp32 and merges it into the running fp32 output (sub, mul, sub:
// 16q; half of it, and a concatenation of the whole output, 4q, when only
// the queries' second half attends: ~20q a step with the casts), the cast
// of the first block and of the result (6q). Backward: fp32 query, key and
// value gradients zeroed (6q); each of the cp steps adds the block's
// gradients into them (~16q with the half-updates' concatenations), and
// concatenates the key/value gradients it sends (8q), and the keys and
// values (4q); the casts back at the end (9q).
struct ring_merge {
  bytes forward, backward;
  double kernels_forward = 0, kernels_backward = 0;
};

ring_merge pytorch_ring_merges(strategy_shape const& sh) {
  ring_merge r;
  if (sh.s.cp <= 1 || !pytorch_ring(sh.prog->training.cp_comm_type)) return r;
  model const& m = sh.prog->model;
  precision const core_prec = unquantized(m.prec);
  double const cp = static_cast<double>(sh.s.cp);
  double const q = element_bytes(core_prec) * static_cast<double>(sh.tokens) * static_cast<double>(sh.qk_head_dim) *
                   static_cast<double>(sh.local_heads);
  r.forward = bytes(((cp - 1) * 20 + 6) * q);
  r.backward = bytes((cp * 28 + 15) * q);
  // Beside the cp - 1 more SDPA calls each way: a step's concatenation,
  // cast and merge (sub, sigmoid, mul, sub, logsigmoid and the
  // log-sum-exp's sub), the backward's adds and concatenations.
  r.kernels_forward = (cp - 1) * 9;
  r.kernels_backward = (cp - 1) + cp * 6;
  return r;
}

}  // namespace

stage_compute compute_per_micro_batch(program const& p, strategy const& s) {
  return compute_per_micro_batch(shape_of(p, s));
}

expert_moves expert_movement(strategy_shape const& sh) {
  expert_moves out;
  model const& m = sh.prog->model;
  if (m.experts <= 1) return out;
  double const e = element_bytes(m.prec);
  bool const fused = sh.prog->training.permute_fusion;
  double const h = static_cast<double>(m.hidden);
  double const own = static_cast<double>(sh.tokens) / static_cast<double>(sh.sp_divisor);
  double const rows = static_cast<double>(sh.mlp_tokens) * static_cast<double>(sh.local_experts);
  bool const sorted = sh.local_experts > 1;
  double const copies = static_cast<double>(sh.active_experts) * sh.routed_share;  // a token's rows, capacity applied
  out.forward = out.backward = bytes(e * h * (2 * copies * own + (copies + 2) * own + (sorted ? 2 * 2 * rows : 0.0)));
  std::int64_t const sorts = sorted ? 2 : 0;
  out.forward_kernels = (fused ? 2 + 1 : 8 + 2) + sorts;
  out.backward_kernels = (fused ? 1 + 1 : 2 + 1) + sorts;
  if (sh.expert_gemm_calls() > 1) {
    out.forward += bytes(2 * e * rows * h);
    out.forward_kernels += 1;
  }
  return out;
}

namespace {

// One micro-batch on the costed stage, every layer of the shape's kind (a
// mixture's or a dense model's).
stage_compute compute_one_kind(strategy_shape const& sh) {
  program const& p = *sh.prog;
  model const& m = p.model;
  strategy const& s = sh.s;
  gpu const& g = p.cluster.device;
  precision const prec = m.prec;
  double const e = element_bytes(prec);
  auto const tp = s.tp;
  auto const pp = s.pp;
  auto const tokens = sh.tokens;
  // Norms, residual adds and the embedding run on tokens/tp with sequence parallelism.
  double const sp_tokens = static_cast<double>(tokens) / static_cast<double>(sh.sp_divisor);
  double const h = static_cast<double>(m.hidden);
  auto const q_out = sh.q_width;
  auto const kv_out = sh.kv_width;
  auto const ffn = m.mlp_width();

  stage_compute out;
  out.layers = sh.max_stage_layers;

  // Attention projections, router and MLP matrices: forward, dgrad, wgrad.
  // In fp8 training only the layer's linear GEMMs run in fp8 (Transformer
  // Engine modules); the router, like the LM head, stays 16-bit (M11).
  seconds weights_fwd, weights_bwd, ops_recompute;
  double cast_bytes = 0;  // fp8, fp4: each linear's input and weight cast (and transposed), forward
  double cast_bytes_bwd = 0;  // and its output gradient, backward
  // A mixture's local experts one after another (grouped_gemm = false): each
  // expert's GEMMs are calls of their own on its rows (Megatron-Core
  // core_v0.13.0 moe/experts.py:954-970 SequentialMLP, torchtitan v0.2.0
  // models/moe/moe.py:72-100); grouped, one call for all of them
  // (strategy_shape::calls_of).
  std::int64_t gemm_calls = 0;       // weight GEMM calls of a layer's forward
  std::int64_t recompute_calls = 0;  // and of what checkpoint = ops recomputes
  for (int i = 0; i < sh.gemm_count; ++i) {
    auto const& gm = sh.gemms[static_cast<std::size_t>(i)];
    precision const gp = gm.role == gemm_role::router ? unquantized(prec) : prec;
    auto const calls = sh.calls_of(gm);
    gemm_calls += calls;
    auto const per_call = gm.forward.batch / calls;
    auto w = weight_op(g, gm.forward.m, gm.forward.k, gm.forward.n, per_call, gp);
    w.forward = w.forward * static_cast<double>(calls);
    w.backward = w.backward * static_cast<double>(calls);
    if (low_precision(gp)) {
      // Read 16-bit, write fp8 twice (row- and column-wise for the backward):
      // 4 bytes per element of the input and the weight, then of the
      // output gradient (TE pytorch/module/linear.py:160-240, 594-713).
      // NVFP4 the same, each copy half a byte and a scale per 16 elements,
      // its column-wise copy through the random Hadamard transform in the
      // same kernel (TE v2.8 NVFP4Quantizer, hadamard_transform_cast_fusion).
      double const cast = 2 + 2 * matmul_element_bytes(gp);
      double const batch = static_cast<double>(gm.forward.batch);
      double const mk = static_cast<double>(gm.forward.m) * static_cast<double>(gm.forward.k);
      double const kn = static_cast<double>(gm.forward.k) * static_cast<double>(gm.forward.n);
      double const mn = static_cast<double>(gm.forward.m) * static_cast<double>(gm.forward.n);
      cast_bytes += cast * batch * (mk + kn);
      cast_bytes_bwd += cast * batch * mn;
    }
    weights_fwd += w.forward;
    out.gemm_forward[static_cast<std::size_t>(i)] = w.forward;
    weights_bwd += w.backward;
    if (gm.recompute_n > 0) {
      // Of its calls, those holding the recomputed batch (an expert loop's
      // experts; a grouped or plain GEMM's one call).
      double const again = static_cast<double>(calls) * static_cast<double>(gm.recompute_batch) /
                           static_cast<double>(gm.forward.batch);
      ops_recompute += gemm_time(g, {gm.forward.m, gm.recompute_n, gm.forward.k, per_call}, prec) * again;
      recompute_calls += std::max<std::int64_t>(1, static_cast<std::int64_t>(again));
    }
  }
  auto const n_ops = static_cast<std::size_t>(gemm_calls);
  auto const active = sh.active_experts;

  auto const [flash_fwd, flash_bwd] = attention_core(sh);
  auto const ring = pytorch_ring_merges(sh);
  double const hbm = g.hbm_bandwidth.value() * g.hbm_efficiency;
  seconds const core_fwd = flash_fwd + seconds(ring.forward.value() / hbm) + g.kernel_latency * ring.kernels_forward;
  seconds const core_bwd =
      flash_bwd + seconds(ring.backward.value() / hbm) + g.kernel_latency * ring.kernels_backward;

  // Memory-bound operators of a layer (forward; the backward moves about
  // twice as much): two norms, two residual adds, the activation and, with
  // rotary embeddings, q's and k's rotation (ALiBi's bias is inside the
  // attention kernel, learned positions are added once at the embedding).
  // PyTorch's eager code (no fusion, no compile) runs some of them as
  // several kernels, each reading and writing its tensors.
  bool const eager = !p.training.fused_elementwise;
  double const t = static_cast<double>(tokens);
  bool const swiglu = m.mlp == mlp_kind::swiglu;
  double const act_out = static_cast<double>(swiglu ? 3 * ffn : 2 * ffn) / static_cast<double>(tp);
  double const mlp_share = static_cast<double>(active) * sh.received_share;
  bool const rms = m.norm == norm_kind::rmsnorm;
  bool const rotary = m.position == position_kind::rotary;
  double const norm_bytes = 2 * 2 * sp_tokens * h * (eager && rms ? eager_rmsnorm_bytes : 1.0);
  double const residual_bytes = 2 * 3 * sp_tokens * h;
  // A shared expert's activation too, over tp like a dense MLP's.
  double const shared_out = m.experts > 1 ? static_cast<double>((swiglu ? 3 : 2) * m.shared_expert_ffn) /
                                                static_cast<double>(tp)
                                          : 0.0;
  double const act_bytes = t * (act_out * mlp_share + shared_out) * (eager && swiglu ? eager_swiglu_bytes : 1.0);
  // Rotary in complex numbers stays eager under torch.compile: Inductor
  // does not lower complex tensors and runs their operators as fallback
  // kernels (torch/_inductor unsupported_input_tensor), so the
  // cast to fp32, the complex multiply and the cast back remain three
  // kernels of 20 bytes an element.
  bool const eager_rotary = eager || !p.training.fused_rotary;
  // Multi-latent attention's rotary is Megatron-Core's two fused kernels
  // (core_v0.13.0 fusions/fused_mla_yarn_rope_apply.py): q's read and
  // written; each head's key built from its up-projected part and the
  // shared rotary key, and its value split off (read kv-up's output and the
  // rotary key, write keys and values).
  double const heads_local = static_cast<double>(sh.local_heads);
  double const mla_rotary = 2 * heads_local * static_cast<double>(sh.qk_head_dim) +
                            heads_local * static_cast<double>(m.head_width() + sh.v_head_dim) +
                            static_cast<double>(m.qk_rope_head_dim) +
                            heads_local * static_cast<double>(sh.qk_head_dim + sh.v_head_dim);
  // The micro-batch's queries and keys on this GPU, read and written once.
  double const qk_elems = 2 * t * static_cast<double>(q_out + kv_out) / static_cast<double>(tp);
  double const rotary_elems = m.mla() ? t * mla_rotary : qk_elems;
  double const rotary_bytes = rotary ? rotary_elems * (eager_rotary ? eager_rotary_bytes : 1.0) : 0.0;
  // And its norms of the compressed queries and keys/values, on the
  // sequence-parallel rows as the layer's norms.
  double const mla_norm_bytes =
      m.mla() ? 2 * sp_tokens * static_cast<double>(m.q_lora_rank + m.kv_lora_rank) *
                    (eager && rms ? eager_rmsnorm_bytes : 1.0)
              : 0.0;
  // q/k norms (model::qk_norm): each head's queries and keys normalised,
  // read and written once each way, as the layer's norms are.
  double const qk_norm_bytes = m.qk_norm ? qk_elems * (eager && rms ? eager_rmsnorm_bytes : 1.0) : 0.0;
  double const mem_fwd_bytes =
      e * (norm_bytes + residual_bytes + act_bytes + rotary_bytes + qk_norm_bytes + mla_norm_bytes);
  auto const moved = expert_movement(sh);
  auto const moved_fwd_kernels = static_cast<double>(moved.forward_kernels);
  auto const moved_bwd_kernels = static_cast<double>(moved.backward_kernels);
  // Fused, one kernel each: the two norms (four with q's and k's; MLA's
  // one or two more), the two residual adds, the activation (each expert's
  // of experts one after another, and the shared expert's), and q's and
  // k's rotation together (MLA: q's, then keys' and values').
  double const activations = static_cast<double>(sh.expert_gemm_calls()) + (shared_out > 0 ? 1.0 : 0.0);
  double const mla_norms = m.mla() ? (m.q_lora_rank > 0 ? 2.0 : 1.0) : 0.0;
  double const fwd_kernels = ((m.qk_norm ? 4 : 2) + mla_norms) * (eager && rms ? eager_rmsnorm_kernels : 1.0) + 2 +
                             (eager && swiglu ? eager_swiglu_kernels : 1.0) * activations +
                             (rotary ? (eager_rotary ? 2 * eager_rotary_kernels : m.mla() ? 2.0 : 1.0) : 0.0);
  seconds const mem_fwd =
      seconds((mem_fwd_bytes + moved.forward.value() + cast_bytes) / hbm) +
      g.kernel_latency * (fwd_kernels + moved_fwd_kernels + (cast_bytes > 0 ? 2.0 * static_cast<double>(n_ops) : 0.0));
  seconds const mem_bwd =
      seconds((2 * mem_fwd_bytes + moved.backward.value() + cast_bytes_bwd) / hbm) +
      g.kernel_latency * (2 * fwd_kernels + moved_bwd_kernels + (cast_bytes > 0 ? static_cast<double>(n_ops) : 0.0));

  out.layer_attention_core = core_fwd;
  out.layer_attention_core_backward = core_bwd;
  out.layer_forward = weights_fwd + core_fwd + mem_fwd;
  out.layer_backward = weights_bwd + core_bwd + mem_bwd;
  // Operators issued: one per weight GEMM (two in the backward), the
  // attention core (flash: one kernel each way; otherwise scores, softmax,
  // dropout and weighted sum forward, twice that backward, and the eager
  // softmax's four more each way where Megatron's kernel does not fit), the
  // memory-bound operators (twice as many backward).
  auto const n = static_cast<std::int64_t>(n_ops);
  bool const flash = uses_flash(p);
  std::int64_t const core_kernels = flash ? 1 : 4 + (sh.softmax_fp32 ? softmax_fallback_kernels : 0);
  out.layer_kernels =
      n + core_kernels + static_cast<std::int64_t>(fwd_kernels + moved_fwd_kernels + ring.kernels_forward);
  out.layer_kernels_backward = 2 * n + (flash ? 1 : core_kernels + 4) +
                               static_cast<std::int64_t>(2 * fwd_kernels + moved_bwd_kernels + ring.kernels_backward);
  if (cast_bytes > 0) {
    out.layer_kernels += 2 * n;
    out.layer_kernels_backward += n;
  }
  switch (s.checkpoint) {
    case checkpoint_mode::none: break;
    case checkpoint_mode::selective: {
      // What the training recomputes (recompute_modules; Megatron's default
      // the core attention), each module's forward again: the two layer
      // norms, a mixture's experts' activation, MLA's up projections and
      // rotary, the dense MLP's GEMMs and activation.
      auto const& tr = p.training;
      auto const gemm_named = [&](std::string_view name) {
        for (int i = 0; i < sh.gemm_count; ++i)
          if (name == sh.gemms[static_cast<std::size_t>(i)].name) return out.gemm_forward[static_cast<std::size_t>(i)];
        return seconds();
      };
      double const norm_kernels = eager && rms ? eager_rmsnorm_kernels : 1.0;
      double const act_kernels = eager && swiglu ? eager_swiglu_kernels : 1.0;
      double const act_factor = eager && swiglu ? eager_swiglu_bytes : 1.0;
      seconds rec;
      double kernels = 0;
      if (tr.recomputes(recompute_module::core_attn)) {
        rec += core_fwd;
        kernels += static_cast<double>(core_kernels);
      }
      if (tr.recomputes(recompute_module::layernorm)) {
        rec += seconds(e * norm_bytes / hbm) + g.kernel_latency * (2 * norm_kernels);
        kernels += 2 * norm_kernels;
      }
      // A mixture's whole MLP ('moe'): the router, the experts' and the
      // shared expert's GEMMs, their activations and the dispatcher's
      // permutations again (its collectives: cost_axes); it holds the
      // experts' activation, so moe_act adds nothing more.
      bool const whole_moe = tr.recomputes(recompute_module::moe) && m.experts > 1;
      if (whole_moe) {
        double calls = 0;
        for (int i = 0; i < sh.gemm_count; ++i) {
          auto const& gm = sh.gemms[static_cast<std::size_t>(i)];
          if (gm.role == gemm_role::attention) continue;
          rec += out.gemm_forward[static_cast<std::size_t>(i)];
          calls += static_cast<double>(sh.calls_of(gm));
        }
        double const activations_run = static_cast<double>(sh.expert_gemm_calls()) + (shared_out > 0 ? 1.0 : 0.0);
        rec += seconds((e * act_bytes + moved.forward.value()) / hbm) +
               g.kernel_latency * (act_kernels * activations_run + moved_fwd_kernels);
        kernels += calls + act_kernels * activations_run + moved_fwd_kernels;
      }
      if (tr.recomputes(recompute_module::moe_act) && m.experts > 1 && !whole_moe) {
        double const calls = static_cast<double>(sh.expert_gemm_calls());
        rec += seconds(e * t * act_out * mlp_share * act_factor / hbm) + g.kernel_latency * (act_kernels * calls);
        kernels += act_kernels * calls;
      }
      if (tr.recomputes(recompute_module::mla_up_proj) && m.mla()) {
        rec += gemm_named("q-up") + gemm_named("q") + gemm_named("kv-up") + seconds(e * rotary_bytes / hbm) +
               g.kernel_latency * (rotary ? 2.0 : 0.0);
        kernels += 2 + (rotary ? 2.0 : 0.0);
      }
      if (tr.recomputes(recompute_module::mlp) && m.experts <= 1) {
        rec += gemm_named("mlp-up") + gemm_named("mlp-down") + seconds(e * t * act_out * act_factor / hbm) +
               g.kernel_latency * act_kernels;
        kernels += 2 + act_kernels;
      }
      out.layer_recompute = rec;
      out.layer_kernels_recompute = static_cast<std::int64_t>(kernels);
      break;
    }
    case checkpoint_mode::full:
      out.layer_recompute = out.layer_forward;
      out.layer_kernels_recompute = out.layer_kernels;
      break;
    case checkpoint_mode::ops: {
      // torchtitan's op-level policy (op_checkpoint_of): the GEMM columns
      // the shape marks run again, with the memory-bound operators of the
      // checkpointed modules (rotary, the activation, the experts'
      // permutations; the block's norms and residual adds only when one
      // checkpoint wraps it whole), and the attention core unless its fused
      // kernel's output is kept.
      auto const& plan = sh.ops;
      double const norm_kernels = eager && rms ? eager_rmsnorm_kernels : 1.0;
      double const outside_kernels = plan.whole_layer ? 0.0 : 2 * norm_kernels + 2;
      seconds const outside = plan.whole_layer ? seconds()
                                               : seconds(e * (norm_bytes + residual_bytes) / hbm) +
                                                     g.kernel_latency * outside_kernels;
      out.layer_recompute = ops_recompute + mem_fwd - outside + (plan.kernel_kept ? seconds() : core_fwd);
      out.layer_kernels_recompute = recompute_calls +
                                    static_cast<std::int64_t>(fwd_kernels + moved_fwd_kernels - outside_kernels) +
                                    (plan.kernel_kept ? 0 : core_kernels);
      break;
    }
  }

  // The head: embedding lookup, final norm, logits over vocab/tp and the loss.
  auto const vocab_local = sh.local_vocab;
  auto const logits = weight_op(g, tokens, m.hidden, vocab_local, 1, unquantized(prec));
  // Without loss parallelism every rank runs the whole vocabulary's loss
  // on the gathered logits.
  bool const gathered = tp > 1 && !p.training.loss_parallel;
  double const logit_elems = t * static_cast<double>(gathered ? sh.padded_vocab : vocab_local);
  seconds const embed = memory_time(g, bytes(2 * e * sp_tokens * h));
  seconds const norm = memory_time(g, bytes(2 * e * sp_tokens * h));
  seconds const loss = memory_time(g, bytes(logit_elems * (2 * e + 4)));
  out.head_forward = logits.forward + norm + loss + (pp == 1 ? embed : seconds());
  out.head_backward = logits.backward + norm * 2.0 + loss + (pp == 1 ? embed : seconds());
  // Final norm, logits, loss; backward the loss, the logits' dgrad and
  // wgrad, the norm; the embedding one each way on the first stage.
  std::int64_t const embedding_kernels = pp == 1 ? 1 : 0;
  out.head_kernels_forward = 3 + embedding_kernels;
  out.head_kernels_backward = 4 + embedding_kernels;
  // A multi-token prediction module's own work (core_v0.13.0 transformer/
  // multi_token_prediction.py:385-490, 640-690): the four inputs rolled a
  // token on (roll_tensor: a roll, a fill, a sum each), the embedding of
  // the tokens one further on, its norm and the previous depth's, the two
  // concatenated (2 hidden), projected to hidden / tp (a column-parallel
  // linear of the layer's precision), the final norm, the logits and the
  // loss again; backward the same but the rolls and the concatenation,
  // whose gradient is two views. Its layer is added by
  // compute_per_micro_batch.
  if (m.mtp_layers > 0) {
    auto const& pg = sh.mtp_projection;
    auto const proj = weight_op(g, pg.m, pg.k, pg.n, 1, prec);
    seconds const concat = memory_time(g, bytes(2 * 2 * e * sp_tokens * h));
    seconds const rolls = g.kernel_latency * 12.0;
    out.mtp_forward = rolls + embed + norm * 3.0 + concat + proj.forward + logits.forward + loss;
    out.mtp_backward = embed + norm * 6.0 + proj.backward + logits.backward + loss;
  }
  return out;
}

// The costed stage's multi-token prediction modules (model::mtp_layers),
// each its own work and a layer of kind `layer`, added to the head: its
// forward, backward and, under selective recomputation, what its layer
// recomputes (Megatron-Core's module-level recomputation runs inside the
// layer; full recomputation is the transformer block's and leaves the
// modules' layers out: core_v0.13.0 transformer/transformer_block.py
// _checkpointed_forward, multi_token_prediction.py has none).
void add_mtp(stage_compute& out, stage_compute const& layer, strategy const& s, model const& m) {
  bool const selective = s.checkpoint == checkpoint_mode::selective;
  auto const modules = m.mtp_layers;
  double const k = static_cast<double>(modules);
  out.mtp_layers = modules;
  out.mtp_moe = m.mtp_moe();
  out.mtp_forward += layer.layer_forward;
  out.mtp_backward += layer.layer_backward + (selective ? layer.layer_recompute : seconds());
  out.head_forward += out.mtp_forward * k;
  out.head_backward += out.mtp_backward * k;
  // Its own operators (rolls 12, embedding, three norms, concatenation,
  // projection, logits, loss; backward the embedding, norms, projection's
  // two, logits' two, loss) and its layer's.
  out.mtp_kernels_forward = 12 + 1 + 3 + 1 + 1 + 1 + 1 + layer.layer_kernels;
  out.mtp_kernels_backward =
      1 + 3 + 2 + 2 + 1 + layer.layer_kernels_backward + (selective ? layer.layer_kernels_recompute : 0);
  out.head_kernels_forward += modules * out.mtp_kernels_forward;
  out.head_kernels_backward += modules * out.mtp_kernels_backward;
}

}  // namespace

stage_compute compute_per_micro_batch(strategy_shape const& sh) {
  stage_compute out = compute_one_kind(sh);
  model const& m = sh.prog->model;
  auto const n = out.layers, moe = sh.costed_moe_layers;
  bool const mtp = m.mtp_layers > 0;
  bool const needs_dense = m.mixed_layers() && ((n > 0 && moe < n) || (mtp && !m.mtp_moe()));
  if (!needs_dense) {
    if (mtp) add_mtp(out, stage_compute(out), sh.s, m);
    return out;
  }
  // A mixture with dense layers (model::dense_layers, moe_layer_freq): the
  // costed stage's dense ones as the same model with one dense MLP, on the
  // same groups; the per-layer times become the stage's mean layer.
  std::optional<program> own;
  program const* dense = sh.dense_twin;
  if (!dense) dense = &own.emplace(dense_layer_program(*sh.prog));
  stage_compute const d = compute_one_kind(shape_of(*dense, sh.s, sh));
  if (mtp) add_mtp(out, m.mtp_moe() ? stage_compute(out) : d, sh.s, m);
  if (n <= 0 || moe >= n) return out;
  double const k = static_cast<double>(moe), rest = static_cast<double>(n - moe), all = static_cast<double>(n);
  auto const mean = [&](seconds a, seconds b) { return (a * k + b * rest) / all; };
  // (The attention core is the same in both kinds.)
  out.layer_forward = mean(out.layer_forward, d.layer_forward);
  out.layer_backward = mean(out.layer_backward, d.layer_backward);
  out.layer_recompute = mean(out.layer_recompute, d.layer_recompute);
  out.dense_layers = n - moe;
  out.dense_layer_kernels = d.layer_kernels;
  out.dense_layer_kernels_backward = d.layer_kernels_backward;
  out.dense_layer_kernels_recompute = d.layer_kernels_recompute;
  return out;
}

flops model_flops_per_step(program const& p) { return model_flops_per_step(p, count_params(p.model)); }

flops model_flops_per_step(program const& p, param_counts const& counts) {
  model const& m = p.model;
  double const tokens = static_cast<double>(p.training.global_batch) * static_cast<double>(m.seq_len);
  // The attention core's 6 L s x heads x (a query/key head's width + a
  // value head's): 12 L s x q's width (hidden unless head_dim says
  // otherwise), as Megatron-LM counts it (query_projection_size,
  // core_v0.13.0 megatron/training/training.py:233; with MLA its
  // q_head_dim + v_head_dim).
  // Multi-token prediction modules' layers count as layers, their
  // projections and logits as matrices (training.py:265-269, 385-401).
  double const per_token = 6.0 * static_cast<double>(counts.matmul) +
                           6.0 * static_cast<double>(m.layers + m.mtp_layers) * static_cast<double>(m.seq_len) *
                               static_cast<double>(m.heads) * static_cast<double>(m.qk_head_width() + m.v_head_width());
  return flops(per_token * tokens);
}

namespace {

flops hardware_flops(program const& p, strategy const& s, program_facts const& facts) {
  model const& m = p.model;
  double const tokens = static_cast<double>(p.training.global_batch) * static_cast<double>(m.seq_len);
  // One layer's attention core forward, and the model's layers'.
  double const core_per_layer = 2.0 * static_cast<double>(m.seq_len) * static_cast<double>(m.heads) *
                                static_cast<double>(m.qk_head_width() + m.v_head_width()) * tokens;
  double const attention_fwd = core_per_layer * static_cast<double>(m.layers);
  // The layers' matrices: neither the logits nor the multi-token
  // prediction modules, which full recomputation leaves out.
  auto const& counts = facts.params;
  double const layer_matmul =
      static_cast<double>(counts.matmul) -
      static_cast<double>(m.vocab) * static_cast<double>(m.hidden) * static_cast<double>(1 + m.mtp_layers) -
      static_cast<double>(m.mtp_layers) * static_cast<double>(counts.mtp_matmul);
  double const mtp = static_cast<double>(m.mtp_layers);
  double extra = 0;
  switch (s.checkpoint) {
    case checkpoint_mode::none: break;
    case checkpoint_mode::selective: {
      // The recomputed modules' matrix products (recompute_modules): the
      // core, MLA's up projections, the dense MLP's.
      auto const& tr = p.training;
      double const up = static_cast<double>(counts.attention_up);
      double const dense = static_cast<double>(m.experts > 1 ? m.layers - m.moe_layer_count() : m.layers) +
                           (m.mtp_moe() ? 0.0 : mtp);
      double const mlp = static_cast<double>(counts.dense_mlp_matrices);
      if (tr.recomputes(recompute_module::core_attn)) extra += attention_fwd + core_per_layer * mtp;  // the modules' layers too
      if (tr.recomputes(recompute_module::mla_up_proj))
        extra += 2.0 * up * (static_cast<double>(m.layers) + mtp) * tokens;
      if (tr.recomputes(recompute_module::mlp)) extra += 2.0 * mlp * dense * tokens;
      // A mixture's whole MLP: its router, active experts and shared
      // expert, in every mixture layer (the modules' too).
      if (tr.recomputes(recompute_module::moe) && m.experts > 1) {
        double const moe_layers = static_cast<double>(m.moe_layer_count()) + (m.mtp_moe() ? mtp : 0.0);
        extra += 2.0 * static_cast<double>(counts.mixture_mlp_matmul) * moe_layers * tokens;
      }
      break;
    }
    case checkpoint_mode::full: extra = 2.0 * layer_matmul * tokens + attention_fwd; break;
    case checkpoint_mode::ops: {
      // What torchtitan's policy runs again (op_checkpoint_of) in each
      // kind of layer, a product's 2 x rows x columns x inputs (a routed
      // one's rows the k copies of the tokens), and the attention core
      // where its kernel's output is not kept.
      auto const wrap = op_wrap_of(p.training);
      auto const again = [&](bool dense_layer) {
        auto const plan = op_checkpoint_of(m, m.experts > 1 ? m.experts / s.ep : 1, wrap, dense_layer);
        double const copies = static_cast<double>(std::min(m.experts_per_token, m.experts));
        double per_token = 0;
        for (auto const& x : plan)
          per_token += 2.0 * (1 - x.kept) * (x.routed ? copies : 1.0) * static_cast<double>(x.columns) *
                       static_cast<double>(x.inputs);
        return per_token * tokens + (plan.kernel_kept ? 0.0 : core_per_layer);
      };
      double const moe = static_cast<double>(m.experts > 1 ? m.moe_layer_count() : m.layers);
      double const dense = static_cast<double>(m.layers) - moe;
      extra = again(false) * moe + (dense > 0 ? again(true) * dense : 0.0);
      break;
    }
  }
  return facts.model_flops + flops(extra);
}

}  // namespace

flops hardware_flops_per_step(program const& p, strategy const& s) { return hardware_flops(p, s, facts_of(p)); }

flops hardware_flops_per_step(strategy_shape const& sh) { return hardware_flops(*sh.prog, sh.s, sh.facts); }

}  // namespace dtplan::planner
