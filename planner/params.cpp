#include "planner/params.hpp"

#include <algorithm>

namespace dtplan::planner {

param_counts count_params(model const& m) {
  param_counts c;
  bool const gpt_style = m.mlp == mlp_kind::gelu;
  std::int64_t const h = m.hidden;
  std::int64_t const kv_heads = m.kv_heads > 0 ? m.kv_heads : m.heads;
  std::int64_t const head_dim = m.heads > 0 ? h / m.heads : 0;
  std::int64_t const kv_width = kv_heads * head_dim;
  std::int64_t const ffn = m.ffn > 0 ? m.ffn : 4 * h;
  std::int64_t const experts = std::max<std::int64_t>(1, m.experts);
  std::int64_t const active = std::min(experts, std::max<std::int64_t>(1, m.experts_per_token));

  c.embedding = m.vocab * h;
  c.output = m.tied_embeddings ? 0 : m.vocab * h;

  std::int64_t const attention_matrices = 2 * h * h + 2 * h * kv_width;
  c.attention = attention_matrices + (gpt_style ? 2 * h + 2 * kv_width : 0);

  std::int64_t const expert_matrices = (gpt_style ? 2 : 3) * h * ffn;
  std::int64_t const expert_params = expert_matrices + (gpt_style ? ffn + h : 0);
  c.mlp = experts * expert_params;
  c.mlp_active = active * expert_params;

  std::int64_t const norm = gpt_style ? 2 * h : h;
  c.norms = 2 * norm;
  c.final_norm = norm;
  c.router = experts > 1 ? h * experts : 0;

  c.per_layer = c.attention + c.mlp + c.norms + c.router;
  c.total = m.layers * c.per_layer + c.embedding + c.output + c.final_norm;
  // The logits are a matrix product whether or not the output is tied.
  c.matmul = m.layers * (attention_matrices + active * expert_matrices + c.router) + m.vocab * h;
  return c;
}

}  // namespace dtplan::planner
