#include "planner/model/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <limits>
#include <cmath>
#include <type_traits>

#include "planner/model/layout.hpp"
#include "planner/model/params.hpp"

namespace dtplan::planner {

namespace {
// DeepEP v1.2.1 deep_ep/buffer.py:233-242, 261-270: per rank count the
// NVLink receive tokens (dispatch's and combine's alike) and the RDMA send
// tokens of dispatch and combine, whose RDMA receive queue of 128 is
// aligned up to a multiple of them (csrc/config.hpp:31-33).
struct deepep_config {
  std::int64_t ranks, nvl_recv, rdma_send_dispatch, rdma_send_combine;
};
constexpr std::array<deepep_config, 10> deepep_configs{{{2, 256, 6, 6},
                                                        {4, 256, 6, 6},
                                                        {8, 256, 6, 6},
                                                        {16, 288, 20, 12},
                                                        {24, 288, 32, 8},
                                                        {32, 288, 32, 8},
                                                        {64, 288, 28, 20},
                                                        {128, 560, 32, 12},
                                                        {144, 720, 12, 8},
                                                        {160, 720, 12, 8}}};
// The table's rank counts, for the check's message and test.
constexpr auto deepep_ranks = [] {
  std::array<std::int64_t, deepep_configs.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = deepep_configs[i].ranks;
  return out;
}();
}  // namespace

std::span<std::int64_t const> deepep_rank_counts() { return deepep_ranks; }

deepep_bytes deepep_buffer(std::int64_t ranks, std::int64_t hidden) {
  auto const* r = std::find_if(deepep_configs.begin(), deepep_configs.end(),
                               [&](deepep_config const& c) { return c.ranks == ranks; });
  if (r == deepep_configs.end()) return {};
  auto const aligned = [](double n, double to) { return std::ceil(n / to) * to; };
  auto const up128 = [](double b) { return std::ceil(b / 128) * 128; };
  double const channels = 20 / 2;  // moe_deepep_num_sms 20, two SMs a channel
  double const peers = static_cast<double>(deepep_nvl_peers);
  double const n = static_cast<double>(ranks);
  double const nvl = std::min(n, peers), rdma = std::max(n / peers, 1.0);
  double const token = 2 * static_cast<double>(hidden);  // hidden x max(element size, 2)
  double const meta = 8 + 128 * 8 + 128 * 4 + 128 * 4;    // source meta, top-k indices and weights, scales
  deepep_bytes out;
  // csrc/config.hpp:44-66.
  out.nvlink = bytes(up128(channels * nvl * (2 * rdma + 3) * 4 +
                           channels * nvl * static_cast<double>(r->nvl_recv) * (token + meta)));
  if (n > peers) {
    // csrc/config.hpp:68-96, both directions.
    double const recv = std::max(aligned(128, static_cast<double>(r->rdma_send_dispatch)),
                                 aligned(128, static_cast<double>(r->rdma_send_combine)));
    out.rdma = bytes(up128(channels * rdma * (peers * 2 + 2) * 2 * 4 +
                           channels * rdma * recv * (token + meta + 16) * 2 + 1048576));
  }
  return out;
}

namespace {

struct per_param {
  double weights = 2, gradients = 2, master = 4, moments = 8;
};

per_param state_bytes(precision prec, optimizer_kind opt, double grad_bytes, double moment_bytes = 4) {
  per_param b;
  if (prec == precision::fp32) b = {4, 4, 0, 0};
  if (grad_bytes > 0) b.gradients = grad_bytes;
  switch (opt) {
    case optimizer_kind::adam:
    case optimizer_kind::adamw:
      b.moments = 2 * moment_bytes;
      break;
    case optimizer_kind::sgd_momentum:
      b.moments = moment_bytes;
      break;
    case optimizer_kind::sgd:
      b.moments = 0;
      break;
  }
  return b;
}

// Bytes of one stored activation element: 16-bit tensors in bf16/fp16/fp8,
// 32-bit when the model trains in fp32.
double element_bytes(precision prec) { return prec == precision::fp32 ? 4 : 2; }

std::string count_text(double n) {
  if (n >= 1e9) return three_digits(n / 1e9) + "B";
  if (n >= 1e6) return three_digits(n / 1e6) + "M";
  return fmt::format("{:.0f}", n);
}

std::string params_text(double n) { return count_text(n) + " params"; }

std::string sharded_text(int zero, int from_stage, std::int64_t shard) {
  if (zero < from_stage || shard <= 1) return "";
  return fmt::format(", ZeRO-{} over {}", zero, shard);
}

}  // namespace

model_state model_state_bytes(double params, precision prec, optimizer_kind opt, int zero, std::int64_t shard,
                              double grad_bytes, double moment_bytes) {
  auto b = state_bytes(prec, opt, grad_bytes, moment_bytes);
  double const n = shard > 1 ? double(shard) : 1.0;
  model_state st;
  st.weights = bytes(params * b.weights / (zero >= 3 ? n : 1.0));
  st.gradients = bytes(params * b.gradients / (zero >= 2 ? n : 1.0));
  st.optimizer = bytes(params * (b.master + b.moments) / (zero >= 1 ? n : 1.0));
  return st;
}

std::int64_t padded_vocab(std::int64_t vocab, std::int64_t tp) {
  // In 128 bits, held below 2^63: an absurd vocab or tp pads to the largest
  // count, never wraps to a negative one.
  __extension__ using wide = __int128;
  wide const multiple = wide{128} * tp;
  wide const padded = (wide{std::max<std::int64_t>(0, vocab)} + multiple - 1) / multiple * multiple;
  return static_cast<std::int64_t>(std::min<wide>(padded, std::numeric_limits<std::int64_t>::max()));
}

std::vector<std::int64_t> layers_per_chunk(std::int64_t layers, std::int64_t chunks) {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(chunks));
  for (std::int64_t c = 0; c < chunks; ++c) out.push_back(layers_of_chunk(layers, chunks, c));
  return out;
}

namespace {

// Calls add(name, bytes) for each stored tensor; names are literals so the
// hot path (activations_per_layer in the search) builds no strings.
template <class F>
void for_each_activation(model const& m, strategy const& s, bool fp32_softmax, unsigned recomputed, op_wrap wrap,
                         F&& add) {
  // What selective checkpointing recomputes (training::recompute_modules):
  // each such module's outputs are not kept.
  auto const rebuilt = [&](recompute_module r) {
    return s.checkpoint == checkpoint_mode::selective && (recomputed & recompute_bit(r)) != 0;
  };
  double const t = double(s.tp);
  bool const sp = s.sequence_parallel && s.tp > 1;
  double const rep = sp ? t : 1.0;  // divisor of the tensors tensor parallelism replicates
  double const e = element_bytes(m.prec);
  double const seq = double(m.seq_len) / double(s.cp);
  double const tokens = seq * double(s.micro_batch);
  double const h = double(m.hidden);
  double const a = double(m.heads);
  double const q_width = double(m.q_width());
  double const kv_width = double(m.kv_width());
  double const ffn = double(m.mlp_width());
  // Routed copies a token's MLP rows take on the busiest GPU: top-k, at a
  // capacity its share, under a skew the busiest GPU's load.
  double const active = double(std::min(m.experts_per_token, m.experts)) * routing_load(m, s.ep, tokens / rep);
  bool const dropout = m.dropout;
  if (s.checkpoint == checkpoint_mode::full) {
    add("layer input (full recomputation keeps only this)", e * tokens * h / rep);
    return;
  }
  if (s.checkpoint == checkpoint_mode::ops) {
    // torchtitan's op-level selective checkpointing (selective_ac_option =
    // 'op', op_checkpoint_of): each checkpoint keeps its input and the
    // outputs of the products its policy keeps; the fused attention
    // kernel's output and log-sum-exp; with sequence parallelism the
    // reduce-scatters' outputs, with ep the all-to-alls'. A row-parallel
    // product's output under tp is the local partial sum, full width.
    // Everything else runs again: the norms (inside a whole-block
    // checkpoint), rotary, activations, the math attention path's batched
    // matmuls, dropout masks (regenerated).
    auto const plan = op_checkpoint_of(m, m.experts > 1 ? m.experts / s.ep : 1, wrap);
    if (plan.whole_layer) {
      add("layer input (kept by the checkpoint)", e * tokens * h / rep);
    } else {
      // FlexAttention's blocks, wrapped module by module: the norms run
      // outside any checkpoint and keep their inputs.
      add("attention norm input", e * tokens * h / rep);
      add(plan.attention_full ? "attention input (kept by its full checkpoint)" : "attention input (kept by its checkpoint)",
          e * tokens * h / rep);
      add("mlp norm input", e * tokens * h / rep);
      add("mlp input (kept by its checkpoint)", e * tokens * h / rep);
    }
    double const expert_t = double(s.expert_tp());
    for (auto const& x : plan) {
      if (x.kept <= 0) continue;
      double const columns = double(x.columns) / (x.full_width ? 1.0 : x.routed ? expert_t : t);
      add(x.output, e * (x.routed ? active : 1.0) * tokens * columns * x.kept);
    }
    if (plan.kernel_kept) {
      add("attention kernel output", e * tokens * double(m.attention_out_width()) / t);
      add("attention kernel log-sum-exp (fp32)", 4 * a * tokens / t);
    }
    if (sp && !plan.attention_full) add("attention output after its reduce-scatter", e * tokens * h / t);
    if (sp) add("mlp output after its reduce-scatter", e * tokens * h / t);
    if (m.experts > 1 && s.ep > 1) {
      // all_to_all_single is in the mixtures' save lists: the tokens this
      // GPU's experts received, and its own tokens' copies back.
      add("routed tokens after the dispatch all-to-all", e * active * tokens * h / rep);
      add("expert outputs after the combine all-to-all",
          e * double(std::min(m.experts_per_token, m.experts)) * tokens * h / rep);
    }
    return;
  }
  add("attention norm input", e * tokens * h / rep);
  if (m.mla()) {
    // Multi-latent attention (core_v0.13.0 transformer/
    // multi_latent_attention.py:400-520): the down projections' one input,
    // each compressed tensor before and after its norm (the norm's input,
    // the up projection's), the shared rotary key, then every head's
    // query, key and value for the core; the fused rotary keeps nothing.
    double const q_lora = double(m.q_lora_rank), kv_lora = double(m.kv_lora_rank);
    double const heads = a, qk = double(m.qk_head_width()), v = double(m.v_head_width());
    if (!rebuilt(recompute_module::layernorm)) add("q and kv down projection input", e * tokens * h / rep);
    if (m.q_lora_rank > 0) add("compressed q, before and after its norm", 2 * e * tokens * q_lora / rep);
    add("compressed keys and values, before and after their norm", 2 * e * tokens * kv_lora / rep);
    add("rotary key (shared by the heads)", e * tokens * double(m.qk_rope_head_dim));
    // Recomputing the up projections and rotary rebuilds the core's inputs.
    if (!rebuilt(recompute_module::mla_up_proj)) {
      add("q and k (for q.k^T)", e * tokens * 2 * heads * qk / t);
      add("v", e * tokens * heads * v / t);
    }
  } else {
    if (!rebuilt(recompute_module::layernorm)) add("q, k, v projection input", e * tokens * h / rep);
    // q/k norms keep their inputs, the projections' q and k, for the backward.
    if (m.qk_norm) add("q and k norm inputs", e * tokens * (q_width + kv_width) / t);
    add("q and k (for q.k^T)", e * tokens * (q_width + kv_width) / t);
    add("v", e * tokens * kv_width / t);
  }
  if (s.checkpoint == checkpoint_mode::none ||
      (s.checkpoint == checkpoint_mode::selective && !rebuilt(recompute_module::core_attn))) {
    double const scores = a * seq * seq * double(s.micro_batch) / t;
    if (m.attention == attention_kind::standard) {
      if (fp32_softmax)
        add("softmax output in fp32 (a.s^2: PyTorch's softmax, where Megatron's fused kernel does not fit)",
            4 * scores);
      else
        add("softmax output (a.s^2)", e * scores);
      if (dropout) {
        add("attention dropout mask (a.s^2)", scores);
        add("attention dropout output (a.s^2)", e * scores);
      }
    } else {
      add("flash attention softmax statistics (fp32)", 4 * a * tokens / t);
    }
  }
  add("attention output (o projection input)", e * tokens * double(m.attention_out_width()) / t);
  if (dropout) add("attention residual dropout mask", tokens * h / rep);
  add("mlp norm input", e * tokens * h / rep);
  if (!rebuilt(recompute_module::layernorm)) add("mlp input", e * tokens * h / rep);
  // A mixture's whole MLP recomputed (Megatron-Core's 'moe' module: router,
  // dispatch, experts, shared expert and combine under one checkpoint,
  // core_v0.13.0 moe/moe_layer.py:115-117, 247-263) keeps only its input.
  bool const moe_rebuilt = m.experts > 1 && rebuilt(recompute_module::moe);
  if (moe_rebuilt) {
    if (dropout) add("mlp residual dropout mask", tokens * h / rep);
    return;
  }
  if (m.experts > 1) {
    // The experts' first GEMM keeps its input for its weight gradient: the
    // top-k copies of the tokens routed to this GPU's experts, as the
    // dispatcher hands them over (gathered over the etp ranks that split
    // an expert under sequence parallelism), not the layer's own tokens
    // (core_v0.13.0 moe/token_dispatcher.py:602-660 gathers them; the
    // expert linears run without a collective of their own).
    double const gathered = sp ? double(s.expert_tp()) : 1.0;
    add("experts' input (top-k copies of the tokens routed to this GPU)", e * active * tokens * h * gathered / rep);
  }
  // A dense MLP recomputed keeps only its input; a mixture's experts'
  // activation recomputed, its output (the second matrix's input).
  bool const mlp_rebuilt = m.experts <= 1 && rebuilt(recompute_module::mlp);
  bool const act_rebuilt = m.experts > 1 && rebuilt(recompute_module::moe_act);
  if (mlp_rebuilt) {
  } else if (m.mlp == mlp_kind::gelu) {
    add("gelu input", e * active * tokens * ffn / t);
    if (!act_rebuilt) add("gelu output (second matrix input)", e * active * tokens * ffn / t);
  } else {
    add("swiglu gate output", e * active * tokens * ffn / t);
    add("swiglu up output", e * active * tokens * ffn / t);
    if (!act_rebuilt) add("swiglu product (down projection input)", e * active * tokens * ffn / t);
  }
  if (m.experts > 1 && m.shared_expert_ffn > 0) {
    // The shared expert: a dense MLP on the same input, split over tp.
    double const shared = double(m.shared_expert_ffn);
    if (m.mlp == mlp_kind::gelu) {
      add("shared expert gelu input", e * tokens * shared / t);
      add("shared expert gelu output", e * tokens * shared / t);
    } else {
      add("shared expert swiglu gate output", e * tokens * shared / t);
      add("shared expert swiglu up output", e * tokens * shared / t);
      add("shared expert swiglu product", e * tokens * shared / t);
    }
  }
  if (dropout) add("mlp residual dropout mask", tokens * h / rep);
  // The router runs on the layer's own tokens: tokens / tp under sequence
  // parallelism.
  if (m.experts > 1) add("router logits (fp32)", 4 * tokens * double(m.experts) / rep);
}

}  // namespace

unsigned recompute_mask(training const& t) {
  unsigned out = 0;
  for (auto r : t.recompute_modules) out |= recompute_bit(r);
  return out;
}

std::vector<memory_term> activation_terms(model const& m, strategy const& s, bool fp32_softmax, unsigned recomputed,
                                          op_wrap wrap) {
  std::vector<memory_term> out;
  for_each_activation(m, s, fp32_softmax, recomputed, wrap,
                      [&](char const* name, double v) { out.push_back({name, bytes(v)}); });
  return out;
}

bytes activations_per_layer(model const& m, strategy const& s, bool fp32_softmax, unsigned recomputed, op_wrap wrap) {
  double sum = 0;
  for_each_activation(m, s, fp32_softmax, recomputed, wrap, [&](char const*, double v) { sum += v; });
  return bytes(sum);
}

memory_breakdown estimate_memory(program const& p, strategy const& s, bool detail) {
  return estimate_memory(shape_of(p, s), detail);
}

namespace {

// What every stage of a shape shares: a mixture's dense layer, and one
// layer's activations of each kind, as checkpointed and with nothing
// recomputed (what a recomputation rebuilds). Derived once per estimate,
// not once per stage.
class shared_layers {
 public:
  explicit shared_layers(strategy_shape const& sh)
      : own_dense_(sh.prog->model.mixed_layers() && !sh.dense_twin
                       ? std::optional<model>(dense_layer_model(sh.prog->model))
                       : std::nullopt),
        dense(!sh.prog->model.mixed_layers() ? nullptr : sh.dense_twin ? &sh.dense_twin->model : &*own_dense_),
        recomputed(recompute_mask(sh.prog->training)), wrap(op_wrap_of(sh.prog->training)) {
    model const& m = sh.prog->model;
    strategy working = sh.s;
    working.checkpoint = checkpoint_mode::none;
    auto const of = [&](model const& kind, strategy const& s) {
      return activations_per_layer(kind, s, sh.softmax_fp32, recomputed, wrap);
    };
    moe_ = of(m, sh.s);
    if (dense) dense_ = of(*dense, sh.s);
    if (sh.s.checkpoint != checkpoint_mode::none) {
      moe_working_ = of(m, working);
      if (dense) dense_working_ = of(*dense, working);
    }
  }
  shared_layers(shared_layers const&) = delete;
  shared_layers& operator=(shared_layers const&) = delete;

 private:
  std::optional<model> const own_dense_;  ///< dense's storage where the shape keeps no twin

 public:
  model const* const dense;  ///< a mixture's dense layer, where it has some
  unsigned const recomputed;  ///< what selective checkpointing recomputes (recompute_mask)
  op_wrap const wrap;         ///< how op-level checkpointing wraps a layer (op_wrap_of)

  /// One layer's activations: a mixture's (or the model's only kind) or,
  /// `dense_layer`, a mixture's dense one; as checkpointed, or with nothing
  /// recomputed.
  [[nodiscard]] bytes layer(bool dense_layer, bool recomputing = false) const {
    if (recomputing) return dense_layer ? dense_working_ : moe_working_;
    return dense_layer ? dense_ : moe_;
  }

 private:
  bytes moe_, dense_, moe_working_, dense_working_;
};

// The memory of one pipeline stage's most loaded GPU, term by term. The
// readable detail is built only when asked: the search's hot loop needs
// only the totals.
class stage_memory {
 public:
  stage_memory(strategy_shape const& sh, shared_layers const& shared, std::int64_t r, bool detail)
      : sh_(sh), p_(*sh.prog), m_(p_.model), s_(sh.s), placed_(sh.stage(r)), detail_(detail),
        bpp_(state_bytes(m_.prec, m_.optimizer, grad_element_bytes(m_, p_.training),
                         p_.training.optimizer_state_precision == precision::bf16 ? 2.0 : 4.0)),
        e_(element_bytes(m_.prec)), tokens_(double(sh.tokens)), h_(double(m_.hidden)), rep_(double(sh.sp_divisor)),
        shared_(shared), dense_(shared.dense), recomputed_(shared.recomputed), wrap_(shared.wrap),
        act_layer_(mean_layer_activations()) {
    b_.capacity = p_.cluster.device.memory;
    b_.usable = p_.cluster.device.memory - p_.cluster.device.reserved;
    b_.stage = r;
    b_.stage_layers = placed_.layers;
  }

  memory_breakdown run() && {
    model_state();
    activations_in_flight();
    buffers();
    peak_moment();
    b_.total = b_.weights + b_.gradients + b_.optimizer + b_.activations + b_.buffers;
    if (detail_)
      b_.stage_note = fmt::format("stage {} of {} ({}{}{}{})", b_.stage, s_.pp, placed_.embedding ? "embedding, " : "",
                                  placed_.final_norm ? "logits, " : "",
                                  placed_.mtp_layers > 0
                                      ? counted(placed_.mtp_layers, "multi-token prediction module") + ", "
                                      : std::string(),
                                  counted(placed_.layers, "layer"));
    return std::move(b_);
  }

 private:
  template <class Name>
  void add(bytes& into, Name const& name, bytes size) {
    if (size.value() <= 0) return;
    into += size;
    if (!detail_) return;
    if constexpr (std::is_invocable_v<Name>)
      b_.detail.push_back({name(), size});
    else
      b_.detail.push_back({std::string(name), size});
  }

  // Weights, gradients, fp32 master weights and moments under the ZeRO
  // stage, split over the shard group's dp x cp ranks (shape.hpp); the
  // experts' over the fewer of them that hold the same experts.
  void model_state() {
    double const params = placed_.params, experts = placed_.expert_params;
    auto const shard = sh_.shard_ranks(), expert_shard = sh_.expert_shard_ranks();
    double const moment = bpp_.moments / (m_.optimizer == optimizer_kind::sgd_momentum ? 1.0 : 2.0);
    auto const dense = model_state_bytes(params - experts, m_.prec, m_.optimizer, s_.zero, shard, bpp_.gradients, moment);
    auto const routed = model_state_bytes(experts, m_.prec, m_.optimizer, s_.zero, expert_shard, bpp_.gradients, moment);
    planner::model_state const st{dense.weights + routed.weights, dense.gradients + routed.gradients,
                                  dense.optimizer + routed.optimizer};
    // ", ZeRO-1 over 16, experts over 2" from ZeRO stage `from_stage` on.
    auto sharded = [&](int from_stage) {
      auto text = sharded_text(s_.zero, from_stage, shard);
      if (text.empty() || experts <= 0 || expert_shard == shard) return text;
      return text + (expert_shard > 1 ? fmt::format(", experts over {}", expert_shard) : ", experts unsharded");
    };
    add(b_.weights, [&] {
      // fp8 training without fp8 parameters keeps 16-bit weights and casts
      // them for each GEMM. fp8 parameters are Transformer Engine's
      // Float8Tensors: a row-wise copy for the forward and a column-wise
      // (transposed) one for the backward's data gradient, a byte each
      // (TE 006257e54a transformer_engine/pytorch/tensor/float8_tensor.py,
      // Float8Quantizer: rowwise and columnwise by default, make_empty
      // allocates data and data_transpose).
      bool const fp8_params = m_.prec == precision::fp8 && p_.training.fp8_param_gather;
      bool const cast = low_precision(m_.prec) && !fp8_params;
      std::string const kept = cast         ? fmt::format("bf16 for {} GEMMs", name(m_.prec))
                               : fp8_params ? std::string("fp8 row- and column-wise")
                                            : std::string(name(m_.prec));
      return fmt::format("weights ({}, {} x {} B{})", kept, params_text(params), bpp_.weights,
                         sharded(3));
    }, st.weights);
    add(b_.gradients, [&] {
      return fmt::format("gradients ({}{} x {} B{})",
                         p_.training.grad_precision ? fmt::format("{}, ", name(*p_.training.grad_precision)) : "",
                         params_text(params), bpp_.gradients, sharded(2));
    }, st.gradients);
    double const opt_per = bpp_.master + bpp_.moments;
    if (opt_per <= 0) return;
    add(b_.optimizer, [&] {
      return fmt::format("optimizer moments ({} x {} B{})", name(m_.optimizer), bpp_.moments,
                         sharded(1));
    }, st.optimizer * (bpp_.moments / opt_per));
    add(b_.optimizer, [&] {
      return fmt::format("fp32 master weights ({} x {} B{})", params_text(params), bpp_.master,
                         sharded(1));
    }, st.optimizer * (bpp_.master / opt_per));
  }

  // 1F1B: stage r holds min(pp - r, m) micro-batches. Interleaved
  // (Megatron): stage r warms up with 2 (pp - r - 1) + (v - 1) pp chunks
  // and holds one more in the steady state; on stage 0 that is
  // pp (1 + (pp - 1) / (pp v)) micro-batches' worth of its layers
  // (Narayanan et al. 2021). Counted in chunks, a micro-batch's share of
  // one of the GPU's v stages (a micro-batch when v = 1).
  [[nodiscard]] std::int64_t chunks_in_flight() const {
    auto const pp = s_.pp, v = s_.virtual_stages, r = b_.stage;
    if (v == 1) return std::min(pp - r, sh_.grad_accum);
    return std::min(sh_.grad_accum * v, 2 * (pp - r - 1) + (v - 1) * pp + 1);
  }

  void activations_in_flight() {
    auto const v = s_.virtual_stages, layers = placed_.layers;
    std::int64_t const chunks = chunks_in_flight();
    std::int64_t const in_flight = (chunks + v - 1) / v;
    double const held_layers = double(chunks) * double(layers) / double(v);
    b_.in_flight = in_flight;
    add(b_.activations, [&] {
      // Interleaving holds a fraction of a micro-batch's layers in flight
      // on average ("1.75 micro-batches").
      return fmt::format("activations ({} x {} in flight x {} per layer, checkpoint = {})", counted(layers, "layer"),
                         v == 1 ? counted(in_flight, "micro-batch")
                                : three_digits(held_layers / double(layers)) + " micro-batches",
                         to_string(act_layer_), name(s_.checkpoint));
    }, act_layer_ * held_layers);
    // The embedding's output is the first layer's input, which that layer
    // already keeps (counted in its activations); only an embedding
    // dropout's mask is extra.
    if (placed_.embedding && m_.dropout)
      add(b_.activations, [&] { return fmt::format("embedding dropout mask ({} micro-batches)", in_flight); },
          bytes(tokens_ * h_ / rep_ * double(in_flight)));
    if (placed_.mtp_layers > 0) mtp_activations();
    if (detail_ && layers > 0) {
      model const& kind = working_model();
      b_.layer_detail = activation_terms(kind, s_, sh_.softmax_fp32, recomputed_, wrap_);
      b_.layer_note = !m_.mixed_layers()                   ? std::string("a layer")
                      : placed_.moe_layers == layers       ? std::string("a mixture layer")
                      : placed_.moe_layers == 0            ? std::string("a dense layer")
                                                           : fmt::format("a mixture layer ({} of the stage's {})",
                                                                         placed_.moe_layers, layers);
    }
  }

  // Multi-token prediction modules, on the last stage with the loss: one
  // micro-batch's, whose backward follows its forward there. Each keeps
  // its layer's activations (selective recomputation applies inside the
  // layer; full recomputation is the decoder block's and leaves it whole),
  // and the inputs of its two norms, projection (2 hidden), final norm and
  // logits (core_v0.13.0 transformer/multi_token_prediction.py:444-486).
  void mtp_activations() {
    model const& kind = m_.mtp_moe() || !dense_ ? m_ : *dense_;
    strategy kept = s_;
    if (kept.checkpoint != checkpoint_mode::selective) kept.checkpoint = checkpoint_mode::none;
    bytes const layer = activations_per_layer(kind, kept, sh_.softmax_fp32, recomputed_, wrap_);
    double const modules = double(placed_.mtp_layers);
    add(b_.activations, [&] {
      return fmt::format("multi-token prediction ({}: a layer's {} each, not recomputed{})",
                         counted(placed_.mtp_layers, "module"), to_string(layer),
                         kept.checkpoint == checkpoint_mode::selective ? " but selectively" : "");
    }, layer * modules);
    add(b_.activations, "multi-token prediction's norm, projection and logits inputs (6 x s.b.h a module)",
        bytes(modules * 6 * e_ * tokens_ * h_ / rep_));
  }

  /// Megatron-Core's tensor-parallel overlap runs on Transformer Engine's
  /// userbuffers.
  [[nodiscard]] bool userbuffers() const {
    auto const& t = p_.training;
    return t.tp_comm_overlap && t.framework == "megatron" && t.transformer_impl == transformer_impl_kind::transformer_engine;
  }
  /// Bytes of a 16-bit element, 4 in an fp32 model.
  [[nodiscard]] double comm16() const { return m_.prec == precision::fp32 ? 4.0 : 2.0; }
  [[nodiscard]] bool zero3() const { return s_.zero == 3 && sh_.shard_ranks() > 1; }
  [[nodiscard]] double gathered_layer() const {
    // The larger layer, a mixture's, where the stage holds one.
    double const layer = placed_.moe_layers > 0 ? sh_.layer_params : sh_.dense_layer_params;
    return zero3() && !sh_.stage_kept_gathered() ? layer * bpp_.weights : 0.0;
  }

  // Buffers alive through the step.
  void buffers() {
    // PyTorch DDP's flat buckets (gradient_as_bucket_view = False, its
    // default) hold a copy of every gradient beside .grad, in the gradient's
    // precision, through the step; views of the gradients (Megatron's
    // contiguous buffer) hold nothing more. ZeRO-2 and 3 reduce in their own
    // per-layer buffers, not DDP's.
    if (!p_.training.gradient_as_bucket_view && s_.zero <= 1 && sh_.sync.active()) {
      double const params = placed_.params;
      add(b_.buffers, [&] {
        return fmt::format("gradient bucket copies (PyTorch DDP, gradient_as_bucket_view = false: {} x {} B)",
                           params_text(params), bpp_.gradients);
      }, bytes(params * bpp_.gradients));
    }
    // DeepSpeed's ZeRO-1/2 (contiguous_gradients, its default) allocate a
    // reduce bucket of reduce_bucket_size elements in the model's 16-bit
    // precision as each backward starts, two with overlap_comm (DS v0.17.5
    // runtime/zero/stage_1_and_2.py:2161-2184); its pipeline engine runs the
    // backward outside ZeRO and allocates them after it (:777-782).
    if (p_.training.contiguous_gradients && (s_.zero == 1 || s_.zero == 2) && s_.pp == 1 && sh_.sync.active()) {
      double const elements = p_.training.ddp_bucket_size.value() / grad_comm_bytes(m_, p_.training);
      int const buckets = p_.training.overlap_grad_sync ? 2 : 1;
      add(b_.buffers, [&] {
        return fmt::format("ZeRO reduce buckets (DeepSpeed's contiguous_gradients: {} x {} elements x {} B)", buckets,
                           count_text(elements), bpp_.weights);
      }, bytes(buckets * elements * bpp_.weights));
    }
    // PyTorch FSDP (1 and 2) keeps the root unit (embedding, final norm,
    // output projection: what a stage holds outside its layers) gathered
    // from its forward to its post-backward, so both moments below hold it.
    // (Multi-token prediction modules are units of their own, resharded
    // after their forward like a layer.)
    double const root_params = placed_.params - sh_.layers_params(placed_.layers, placed_.moe_layers) -
                               double(placed_.mtp_layers) * sh_.mtp_params;
    if (zero3() && root_params > 0)
      add(b_.buffers, "ZeRO-3 gathered embedding/output unit (held through the step)", bytes(root_params * bpp_.weights));
    if (sh_.stage_kept_gathered() && placed_.layers > 0) {
      // torchtitan does not reshard after the forward when it pipelines
      // (reshard_after_forward = not pp_enabled), and PyTorch's pipelining
      // keeps FSDP from resharding or reducing until the last backward: the
      // stage's layers stay gathered, and their gradients accumulate
      // unsharded, in the reduction's precision.
      double const layer_params = sh_.layers_params(placed_.layers, placed_.moe_layers);
      add(b_.buffers, "FSDP with pipelining: the stage's layers gathered through the step",
          bytes(layer_params * bpp_.weights));
      add(b_.buffers, "FSDP with pipelining: the stage's unsharded gradients, accumulated over the micro-batches",
          bytes(layer_params * bpp_.gradients));
    }
    if (s_.tp > 1 && userbuffers()) {
      // Transformer Engine's userbuffers (Megatron-Core's --tp-comm-overlap):
      // one buffer of the layer input's global [s.b / cp, h] for each of ten
      // overlapped GEMMs, registered for the run. With TE v2.5's defaults
      // (pytorch/module/base.py:109-400, initialize_ub; Megatron-Core
      // core_v0.13.0 training/initialize.py:238-290 passes that shape) the
      // four ring-exchange all-gathers and the two bulk all-gathers hold fp8
      // in an fp8 run (1 B) and the pipelined and bulk reduce-scatters 16-bit
      // (common/comm_gemm_overlap/comm_gemm_overlap.cpp:254-276, 591-625).
      // TE gathers into them: no all-gather buffer of its own.
      double const narrow = m_.prec == precision::fp8 || m_.prec == precision::fp4 ? 1.0 : comm16();
      double const per_element = 6 * narrow + 4 * comm16();
      add(b_.buffers, [&] {
        return fmt::format("Transformer Engine's userbuffers (tp_comm_overlap: 6 all-gather x {} B + 4 reduce-scatter "
                           "x {} B, each s.b.h)",
                           narrow, comm16());
      }, bytes(per_element * tokens_ * h_));
    } else if (s_.tp > 1) {
      add(b_.buffers, "tensor-parallel all-gather buffer (s.b.h)", bytes(e_ * tokens_ * h_));
    }
    // The token dispatcher's buffers, where the stage holds a mixture.
    bool const mixture = m_.experts > 1 && placed_.moe_layers + (m_.mtp_moe() ? placed_.mtp_layers : 0) > 0;
    // Megatron-Core's allgather token dispatcher gathers the tp x ep
    // ranks' tokens (its expert-tensor x expert-parallel group, etp x ep)
    // into its global memory buffer, kept for the run (core_v0.13.0
    // moe/token_dispatcher.py:240-262, use_global_buffer).
    if (mixture && p_.training.moe_token_dispatcher == dispatcher_kind::allgather) {
      double const ranks = double(s_.expert_tp() * s_.ep);
      if (ranks > 1)
        add(b_.buffers, [&] {
          return fmt::format("allgather token dispatcher's buffer ({} ranks' tokens, s.b.h/t each)", ranks);
        }, bytes(e_ * tokens_ / rep_ * ranks * h_));
    }
    // DeepEP's buffer (the flex dispatcher), one for the run, outside
    // PyTorch's allocator: NVLink and RDMA receive queues sized for the
    // larger of its dispatch and combine configurations at the group's rank
    // count (Megatron-Core core_v0.13.0 moe/fused_a2a.py:30-60, 20 SMs:
    // transformer_config.py:193).
    if (mixture && p_.training.moe_token_dispatcher == dispatcher_kind::flex && s_.ep > 1) {
      auto const b = deepep_buffer(s_.ep, m_.hidden);
      if (b.nvlink.value() > 0)
        add(b_.buffers, [&] {
          return fmt::format("DeepEP's buffer (flex dispatcher over {} ranks: NVLink {}, RDMA {})", s_.ep,
                             to_string(b.nvlink), to_string(b.rdma));
        }, b.nvlink + b.rdma);
    }
    if (s_.pp > 1) pipeline_buffers();
  }

  // A stage boundary's tensors, each the size of a micro-batch's stage
  // input. Megatron and DeepSpeed hold two in flight. PyTorch's pipelining
  // (torchtitan) makes a receive buffer for every micro-batch's activation
  // (stages but the first) and gradient (stages but the last) when the
  // schedule starts and keeps them through the step; it holds each stage
  // output until that micro-batch's backward and each input gradient (the
  // receive buffer's .grad) until the next step clears it (PyTorch
  // torch/distributed/pipelining/stage.py: PipelineStage._prepare_forward_infra,
  // _prepare_backward_infra, forward_one_chunk's fwd_cache,
  // clear_runtime_states; _backward.py stage_backward). A received input
  // whose micro-batch is in flight is its first layer's saved input,
  // already counted; the peak of a middle stage is its last forward, when
  // the micro-batches not in flight have all run their backward.
  void pipeline_buffers() {
    double const one = e_ * tokens_ * h_ / rep_;
    if (!p_.training.p2p_buffers_per_micro_batch) {
      add(b_.buffers, "pipeline send/recv buffers (2 x s.b.h)", bytes(2 * one));
      return;
    }
    auto const v = s_.virtual_stages, pp = s_.pp, r = b_.stage;
    double const m = double(sh_.grad_accum);
    double const not_first = double(v - (r == 0 ? 1 : 0));
    double const not_last = double(v - (r == pp - 1 ? 1 : 0));
    double const held = double(chunks_in_flight()) / double(v);  // in flight on each of the GPU's stages
    double const received = not_first * (m - held);
    double const input_grads = received;  // each received input whose backward has run keeps its .grad
    double const grads_received = not_last * m;
    double const outputs = not_last * held;
    add(b_.buffers, [&] {
      std::string parts;
      auto part = [&](double n, std::string_view what) {
        if (n > 0) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", three_digits(n), what);
      };
      part(received, "received inputs not in flight");
      part(input_grads, "input gradients");
      part(grads_received, "gradient receive buffers");
      part(outputs, "outputs held");
      return fmt::format("PyTorch pipelining's buffers of {} each: {}", to_string(bytes(one)), parts);
    }, bytes(one * (received + input_grads + grads_received + outputs)));
  }

  // The peak is a moment, not a sum of maxima: the loss (the last stage at
  // the end of a micro-batch's forward: the logits and the loss buffers are
  // alive, no layer is being recomputed yet) or the backward of a layer
  // (its recomputed activations and, under ZeRO-3, it and the prefetched
  // next layer gathered; the loss buffers are freed by then). Saved
  // activations and the terms above are alive at both. At the loss ZeRO-3
  // holds one gathered layer, the last, whose backward comes next.
  void peak_moment() {
    bool const unfused = p_.training.cross_entropy == cross_entropy_kind::unfused;
    // PyTorch's cross entropy on vocab-sharded logits is DTensor's
    // loss_parallel (torchtitan's default with tensor parallelism). Without
    // it the logits are gathered over tp: every rank holds and computes the
    // whole vocabulary's.
    bool const gathered_logits = s_.tp > 1 && !p_.training.loss_parallel;
    bool const loss_parallel = unfused && s_.tp > 1 && !gathered_logits;
    double const unfused_buffers = loss_parallel ? 4.0 : 3.0;
    // Bytes per logit element taken at the loss: the 16-bit logits (alive,
    // or their block kept by the allocator: below) and the fp32 bytes, the
    // unfused loss's buffers or the fused loss's one copy.
    double const fp32_loss_bytes = unfused ? 4 * unfused_buffers : 4.0;
    double const loss_bytes = e_ + fp32_loss_bytes;
    auto const layers = placed_.layers;
    bytes const recompute_working =
        s_.checkpoint == checkpoint_mode::none
            ? bytes{}
            : max(bytes{}, shared_.layer(works_dense(), true) - (dense_ ? shared_.layer(works_dense()) : act_layer_));
    double const vocab_elems = tokens_ * double(gathered_logits ? sh_.padded_vocab : sh_.local_vocab);
    char const* const per_rank = gathered_logits ? "s.b.vocab, gathered over tp" : "s.b.vocab/t";
    double const gathered = gathered_layer();
    // Each multi-token prediction module's loss keeps its fp32 softmax
    // until its backward, after the model's.
    double const mtp_loss = double(placed_.mtp_layers) * (4 * vocab_elems + 8 * tokens_);
    double const at_loss = !placed_.final_norm ? 0.0
                                               : e_ * tokens_ * h_ / rep_ + loss_bytes * vocab_elems +
                                                     8 * tokens_ + (layers > 0 ? gathered : 0.0) + mtp_loss;
    double const exchange = layers > 0 ? cp_exchange() : 0.0;
    double const in_layer = layers > 0 ? recompute_working.value() + 2 * gathered + exchange : 0.0;
    if (!(placed_.final_norm && at_loss >= in_layer)) {
      b_.peak_moment = "the backward of a layer";
      if (layers > 0) {
        add(b_.activations, "recomputed layer's activations during backward (one layer, one micro-batch)",
            recompute_working);
        add(b_.buffers, "ZeRO-3 gathered layer + prefetched next layer", bytes(2 * gathered));
        add(b_.buffers, [&] {
          return fmt::format("context-parallel key/value exchange in a layer's attention (cp_comm_type = {}: {})",
                             name(p_.training.cp_comm_type),
                             p_.training.cp_comm_type == cp_comm_kind::p2p
                                 ? "the forward's received keys and values, or the backward's two send/receive "
                                   "buffers of keys, values and their gradients"
                                 : "keys and values expanded to the query's heads, their fp32 gradients passed "
                                   "round the ring, an fp32 query gradient");
        }, bytes(exchange));
      }
      return;
    }
    b_.peak_moment = "the loss (end of the forward, start of the backward)";
    add(b_.activations, "final norm input", bytes(e_ * tokens_ * h_ / rep_));
    auto const vocab = sh_.padded_vocab;
    if (unfused) {
      // cross_entropy(logits.float(), labels) as torchtitan runs it.
      // log_softmax's own backward keeps its output, its incoming gradient
      // from nll_loss and the gradient it produces alive at once.
      // loss_parallel's (torch/distributed/tensor/parallel/loss.py,
      // _nll_loss_and_log_softmax_backward) builds the one-hot gradient,
      // then (one_hot + exp(x)) * grad: beside the kept output x, the
      // one-hot buffer, exp(x) or the sum, and the sum or the product. Its
      // forward peaks lower (the 16-bit logits, their fp32 copy, the shifted
      // logits and exp or the result: 3.5 buffers).
      add(b_.activations, [&] {
        return fmt::format("{} ({} x fp32 x {}, vocab padded to {})",
                           loss_parallel ? "loss-parallel cross entropy backward: log_softmax output, the one-hot "
                                           "gradient and two temporaries of (one_hot + exp) x grad"
                                         : "unfused cross entropy backward: log_softmax output, its gradient and "
                                           "the logits' gradient",
                           unfused_buffers, per_rank, vocab);
      }, bytes(fp32_loss_bytes * vocab_elems));
      // The 16-bit logits' memory stays taken at the backward's peak either
      // way: Composer holds them (state.outputs, through the backward:
      // composer/trainer/trainer.py `_train_microbatch`); torchtitan frees
      // them first (`del pred`, d4c86e375 train.py:309-314) but PyTorch's
      // caching allocator keeps their memory, which the backward's fp32
      // requests, each twice as large, cannot reuse: a free block serves
      // only a request no larger than itself, and is not returned to the
      // device unless an allocation fails (c10/cuda/CUDACachingAllocator.cpp
      // get_free_block, release_cached_blocks). With expandable segments
      // (torchtitan's launcher sets them) the block merges with the freed
      // fp32 copy beside it, and the backward's buffers still leave one
      // logit-sized 16-bit hole: the reservation is the buffers plus it.
      add(b_.activations, "16-bit logits' memory (held by the caller, or freed before the backward and kept by "
                          "PyTorch's caching allocator: the backward's fp32 buffers do not fit in it)",
          bytes(e_ * vocab_elems));
    } else {
      // The LM head stays 16-bit in fp8 and fp4 training.
      add(b_.activations,
          [&] { return fmt::format("logits ({}, vocab padded to {}, {})", per_rank, vocab, name(unquantized(m_.prec))); },
          bytes(e_ * vocab_elems));
      add(b_.activations, "logits in fp32 for the loss (softmax kept for backward)",
          bytes(fp32_loss_bytes * vocab_elems));
    }
    add(b_.activations, "loss (fp32 per token)", bytes(8 * tokens_));
    add(b_.activations, [&] {
      return fmt::format("multi-token prediction's losses ({}: the fp32 softmax of {} and the loss, kept for their "
                         "backward)",
                         counted(placed_.mtp_layers, "module"), per_rank);
    }, bytes(mtp_loss));
    if (layers > 0) add(b_.buffers, "ZeRO-3 gathered last layer (its backward comes next)", bytes(gathered));
  }

  // What context parallelism's attention holds in a layer beyond the
  // layer's own keys and values, by cp_comm_type; q is a rank's queries.
  // - p2p, Transformer Engine's ring (AttnFuncWithCPAndKVP2P, TE d0067d0da
  //   transformer_engine/pytorch/attention/dot_product_attention/
  //   context_parallel.py): the forward keeps every step's received keys
  //   and values, at their own heads, until it ends (:1690-1717, the list
  //   p2p_comm_buffers); the backward two send/receive buffers of keys,
  //   values and their gradients, and a query-gradient buffer (:2392-2400).
  //   The larger of the two.
  // - allgather and alltoall, PyTorch's ring attention (torch/distributed/
  //   tensor/experimental/_attention.py at pytorch 0123248a48,
  //   _templated_ring_attention_backward): on SDPA's inputs, which
  //   torchtitan expands to the query's heads (repeat_kv, TT v0.2.0
  //   models/llama3/model/model.py:236-237, the shape's cp_kv_width), so
  //   keys and values are 2q.
  //   The backward holds the gathered keys and values (allgather: all cp
  //   ranks'; alltoall: the current and the next), the concatenation it
  //   sends, an fp32 query gradient, and the fp32 key/value gradients
  //   rotated as all-to-alls (received, sent and receiving: three of
  //   2 x 2q). Its forward holds less.
  [[nodiscard]] double cp_exchange() const {
    if (s_.cp <= 1) return 0.0;
    double const cp = double(s_.cp), t = double(s_.tp);
    double const q = e_ * tokens_ * double(sh_.q_width) / t;
    double const kv = 2 * e_ * tokens_ * double(sh_.cp_kv_width) / t;
    switch (p_.training.cp_comm_type) {
      case cp_comm_kind::p2p: return std::max(cp * kv, 2 * 2 * kv + q);
      case cp_comm_kind::allgather: return cp * kv + kv + 2 * q + 3 * (2 * kv);
      case cp_comm_kind::alltoall: return 2 * kv + kv + 2 * q + 3 * (2 * kv);
    }
    return 0.0;
  }

  strategy_shape const& sh_;
  program const& p_;
  model const& m_;
  strategy const& s_;
  stage_shape const placed_;
  bool const detail_;
  per_param const bpp_;
  double const e_, tokens_, h_, rep_;
  shared_layers const& shared_;
  model const* const dense_;  ///< a mixture's dense layer, where it has some
  unsigned const recomputed_;  ///< what selective checkpointing recomputes (recompute_mask)
  op_wrap const wrap_;         ///< how op-level checkpointing wraps a layer (op_wrap_of)
  bytes const act_layer_;

  // The layer a recomputation works on: a mixture's where the stage holds
  // one, else its dense layer.
  [[nodiscard]] bool works_dense() const { return dense_ && placed_.moe_layers == 0; }
  [[nodiscard]] model const& working_model() const { return works_dense() ? *dense_ : m_; }
  // One layer's activations on this stage: a mixture's and a dense layer's
  // in the stage's proportion where it holds both.
  [[nodiscard]] bytes mean_layer_activations() const {
    bytes const moe = shared_.layer(false);
    if (!dense_ || placed_.layers == 0 || placed_.moe_layers == placed_.layers) return moe;
    bytes const dense = shared_.layer(true);
    if (placed_.moe_layers == 0) return dense;
    double const n = double(placed_.layers), k = double(placed_.moe_layers);
    return (moe * k + dense * (n - k)) / n;
  }
  memory_breakdown b_;
};

}  // namespace

memory_breakdown estimate_memory(strategy_shape const& sh, bool detail) {
  // Totals of every stage that can be the most loaded first; the readable
  // detail only for that one.
  shared_layers const shared(sh);
  // PyTorch pipelining's buffers grow from the first stage to the middle
  // ones (pipeline_buffers): every stage counts there.
  bool const ends_only = sh.ends_only() && !sh.prog->training.p2p_buffers_per_micro_batch;
  auto const pp = sh.s.pp;
  std::int64_t worst = 0;
  memory_breakdown most;
  for (std::int64_t r = 0; r < pp; r = ends_only && r < pp - 1 ? pp - 1 : r + 1) {
    auto b = stage_memory(sh, shared, r, false).run();
    if (r == 0 || most.total < b.total) worst = r, most = std::move(b);
  }
  return detail ? stage_memory(sh, shared, worst, true).run() : most;
}

memory_breakdown estimate_stage_memory(strategy_shape const& sh, std::int64_t stage, bool detail) {
  return stage_memory(sh, shared_layers(sh), stage, detail).run();
}

}  // namespace dtplan::planner
