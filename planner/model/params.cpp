#include "planner/model/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace dtplan::planner {

namespace {

// Shapes come from user input: products are formed in 128 bits and stored
// saturated, so an absurd model gives huge counts, never overflow.
__extension__ typedef __int128 wide;

constexpr wide top64 = std::numeric_limits<std::int64_t>::max();

std::int64_t clamp64(wide v) { return static_cast<std::int64_t>(std::clamp<wide>(v, 0, top64)); }

}  // namespace

param_counts count_params(model const& m) {
  param_counts c;
  bool const gpt_style = m.mlp == mlp_kind::gelu;
  wide const h = m.hidden;
  wide const q_width = wide{m.heads} * wide{m.head_width()};
  wide const kv_width = wide{m.kv_heads} * wide{m.head_width()};
  wide const ffn = m.mlp_width();
  wide const experts = m.experts;
  wide const active = std::min<wide>(experts, m.experts_per_token);
  wide const layers = std::max<std::int64_t>(0, m.layers);
  wide const vocab = std::max<std::int64_t>(0, m.vocab);

  // The largest product below, estimated in double: beyond 2^120 the
  // 128-bit arithmetic itself could overflow, and every count saturates.
  // (MLA's largest terms are bounded by heads x (head_dim + rope + v) x (hidden + both ranks).)
  double const heads_width = double(m.heads) * (double(m.head_width()) + double(m.qk_rope_head_dim) +
                                                 double(m.v_head_dim));
  double const mtp_modules = double(std::max<std::int64_t>(0, m.mtp_layers));
  double const estimate = (double(layers) + mtp_modules) * (4.0 * double(h) * (double(h) + heads_width) +
                                            4.0 * heads_width * (double(m.q_lora_rank) + double(m.kv_lora_rank)) +
                                            3.0 * double(experts) * double(h) * double(ffn) +
                                            3.0 * double(h) * double(std::max<std::int64_t>(0, m.shared_expert_ffn)) +
                                            (experts > 1 ? 3.0 * double(h) * double(std::max<std::int64_t>(0, m.ffn)) : 0.0) +
                                            double(h) * double(experts) + 6.0 * double(h)) +
                          (2.0 + mtp_modules) * double(vocab) * double(h) +
                          3.0 * double(experts) * (double(ffn) + double(h));
  if (estimate > 0x1p120) {
    constexpr auto most = std::numeric_limits<std::int64_t>::max();
    c.embedding = c.output = c.attention = c.mlp = c.mlp_active = c.norms = c.final_norm = c.router = c.shared = most;
    c.per_layer = c.dense_mlp = c.dense_per_layer = c.total = c.matmul = most;
    c.mtp = c.mtp_matmul = m.mtp_layers > 0 ? most : 0;
    c.attention_up = m.mla() ? most : 0;
    c.mixture_mlp_matmul = experts > 1 ? most : 0;
    c.dense_mlp_matrices = most;
    if (m.tied_embeddings) c.output = 0;
    if (experts == 1) c.router = c.shared = 0;
    c.saturated = true;
    return c;
  }

  wide const embedding = vocab * h;
  wide const output = m.tied_embeddings ? 0 : vocab * h;
  // q, k, v from the hidden state, o back to it; GPT's biases on each.
  // Multi-latent attention (model::mla): q down to q_lora_rank and up to
  // every head's q (or straight up), the keys' and values' down projection
  // (with the shared rotary key) and up to every head's key and value, o
  // from the heads' values; a norm on each compressed tensor.
  wide const heads = m.heads;
  wide const q_lora = m.q_lora_rank, kv_lora = m.kv_lora_rank;
  wide const qk_head = m.qk_head_width(), v_head = m.v_head_width();
  wide const mla_up = (q_lora > 0 ? q_lora : h) * heads * qk_head + kv_lora * heads * (m.head_width() + v_head);
  wide const mla_matrices = (q_lora > 0 ? h * q_lora : 0) + h * (kv_lora + m.qk_rope_head_dim) + mla_up +
                            heads * v_head * h;
  wide const mla_norms = (gpt_style ? 2 : 1) * (q_lora + kv_lora);
  wide const attention_matrices = m.mla() ? mla_matrices : 2 * h * q_width + 2 * h * kv_width;
  // q/k norms: one head_dim wide each for queries and keys (a LayerNorm's
  // bias too), shared by the heads.
  wide const qk_norms = m.qk_norm ? (gpt_style ? 4 : 2) * wide{m.head_width()} : 0;
  wide const attention = m.mla() ? mla_matrices + mla_norms
                                  : attention_matrices + (gpt_style ? q_width + 2 * kv_width + h : 0) + qk_norms;
  wide const expert_matrices = (gpt_style ? 2 : 3) * h * ffn;
  wide const expert_params = expert_matrices + (gpt_style ? ffn + h : 0);
  wide const norm = gpt_style ? 2 * h : h;
  wide const router = experts > 1 ? h * experts : 0;
  wide const shared_ffn = experts > 1 ? std::max<std::int64_t>(0, m.shared_expert_ffn) : 0;
  wide const shared_matrices = (gpt_style ? 2 : 3) * h * shared_ffn;
  wide const shared = shared_ffn > 0 ? shared_matrices + (gpt_style ? shared_ffn + h : 0) : 0;
  wide const per_layer = attention + experts * expert_params + 2 * norm + router + shared;
  // A mixture's dense layers: attention, norms and an MLP ffn wide.
  wide const dense_ffn = m.ffn;
  wide const dense_matrices = (gpt_style ? 2 : 3) * h * dense_ffn;
  wide const dense_mlp = experts > 1 ? dense_matrices + (gpt_style ? dense_ffn + h : 0) : expert_params;
  wide const dense_per_layer = attention + dense_mlp + 2 * norm;
  wide const moe_layers = experts > 1 ? wide{m.moe_layer_count()} : layers;
  wide const dense_layers = layers - moe_layers;

  c.embedding = clamp64(embedding);
  c.output = clamp64(output);
  c.attention = clamp64(attention);
  c.mlp = clamp64(experts * expert_params);
  c.mlp_active = clamp64(active * expert_params);
  c.norms = clamp64(2 * norm);
  c.final_norm = clamp64(norm);
  c.router = clamp64(router);
  c.shared = clamp64(shared);
  c.per_layer = clamp64(per_layer);
  c.dense_mlp = clamp64(dense_mlp);
  c.dense_mlp_matrices = clamp64(experts > 1 ? dense_matrices : expert_matrices);
  c.attention_up = m.mla() ? clamp64(mla_up) : 0;
  c.dense_per_layer = clamp64(dense_per_layer);
  // A layer's matrices one token goes through: a mixture's, a dense one's.
  wide const mixture_mlp = active * expert_matrices + router + shared_matrices;
  c.mixture_mlp_matmul = experts > 1 ? clamp64(mixture_mlp) : 0;
  wide const moe_matmul = attention_matrices + mixture_mlp;
  wide const dense_matmul = attention_matrices + (experts > 1 ? dense_matrices : expert_matrices);
  // Multi-token prediction: a layer of the last layer's kind, the
  // projection of the two normalised inputs (2 h x h, no bias: core_v0.13.0
  // transformer/multi_token_prediction.py:357-372) and three norms.
  wide const mtp_count = std::max<std::int64_t>(0, m.mtp_layers);
  bool const mtp_moe = m.mtp_moe();
  wide const mtp = (mtp_moe ? per_layer : dense_per_layer) + 2 * h * h + 3 * norm;
  wide const mtp_matmul = (mtp_moe ? moe_matmul : dense_matmul) + 2 * h * h;
  c.mtp = mtp_count > 0 ? clamp64(mtp) : 0;
  c.mtp_matmul = mtp_count > 0 ? clamp64(mtp_matmul) : 0;
  wide const total =
      moe_layers * per_layer + dense_layers * dense_per_layer + embedding + output + norm + mtp_count * mtp;
  c.total = clamp64(total);
  // The logits are a matrix product whether or not the output is tied; each
  // module computes them again.
  wide const matmul = moe_layers * moe_matmul + dense_layers * dense_matmul + vocab * h +
                      mtp_count * (mtp_matmul + vocab * h);
  c.matmul = clamp64(matmul);
  // The totals bound every other count.
  c.saturated = total > top64 || matmul > top64;
  return c;
}

model dense_layer_model(model const& m) {
  model d = m;
  d.experts = d.experts_per_token = 1;
  d.expert_ffn = d.shared_expert_ffn = 0;
  d.capacity_factor.reset();
  d.pad_to_capacity = false;
  d.routing_imbalance = 1.0;
  d.dense_layers = 0;
  d.moe_layer_freq = 1;
  return d;
}

program dense_layer_program(program const& p) {
  program d;
  d.file = p.file;
  d.model = dense_layer_model(p.model);
  d.cluster = p.cluster;
  d.training = p.training;
  d.framework = p.framework;
  return d;
}

std::optional<size_limit> beyond_limits(model const& m, std::string const& called) {
  if (!count_params(m).saturated) return std::nullopt;
  return size_limit{nullptr, fmt::format("{} has more parameters than fit in 64 bits", called)};
}

}  // namespace dtplan::planner
