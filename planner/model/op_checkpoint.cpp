#include "planner/model/op_checkpoint.hpp"

#include <algorithm>

namespace dtplan::planner {

op_wrap op_wrap_of(training const& t) {
  return {.flex = t.attention_kernel == attention_backend::flex,
          .compiled = t.fused_elementwise,
          .grouped = t.grouped_gemm,
          .unfused = t.attention_kernel == attention_backend::unfused};
}

namespace {

// Counts a checkpointed module's matmuls as the policy does and appends
// them to the layer's.
class counter {
 public:
  explicit counter(op_checkpoint& out) : out_(out) {}
  // A new checkpointed module: its count starts again.
  void restart() { n_ = 0; }
  // A counted aten.mm: kept when it is an odd one.
  void mm(op_matmul m) {
    ++n_;
    m.kept = n_ % 2 == 1 ? 1.0 : 0.0;
    push(m);
  }
  // Runs again, not counted: the router's gate, a grouped GEMM, or any
  // product of a fully checkpointed module.
  void again(op_matmul m) {
    m.kept = 0;
    push(m);
  }
  // `experts` experts one after another, each running `parts` (its matmuls
  // in order): the j-th expert's i-th is the (n + parts j + i)-th.
  void loop(std::int64_t experts, std::initializer_list<op_matmul> parts) {
    std::int64_t i = 0;
    auto const per = static_cast<std::int64_t>(parts.size());
    for (auto m : parts) {
      ++i;
      std::int64_t odd = 0;
      for (std::int64_t j = 0; j < std::min<std::int64_t>(experts, 2); ++j)
        if ((n_ + per * j + i) % 2 == 1) odd += (experts - j + 1) / 2;  // experts j, j + 2, ...
      m.kept = experts > 0 ? static_cast<double>(odd) / static_cast<double>(experts) : 0.0;
      push(m);
    }
    n_ += per * experts;
  }

 private:
  void push(op_matmul const& m) { out_.matmuls[static_cast<std::size_t>(out_.count++)] = m; }
  op_checkpoint& out_;
  std::int64_t n_ = 0;
};

// A FeedForward's products and their outputs' names.
struct feed_forward_names {
  char const *up_gemm, *down_gemm, *gate, *up, *down;
};

// A FeedForward, w2(silu(w1 x) * w3 x) (models/llama3/model/model.py):
// w1, w3, then w2; a GELU MLP's two, up and down.
void feed_forward(counter& c, bool swiglu, std::int64_t hidden, std::int64_t width, feed_forward_names n) {
  if (swiglu) c.mm({.gemm = n.up_gemm, .output = n.gate, .columns = width, .inputs = hidden});
  c.mm({.gemm = n.up_gemm, .output = n.up, .columns = width, .inputs = hidden});
  c.mm({.gemm = n.down_gemm, .output = n.down, .columns = hidden, .inputs = width, .full_width = true});
}

}  // namespace

op_checkpoint op_checkpoint_of(model const& m, std::int64_t local_experts, op_wrap w, bool dense_layer) {
  op_checkpoint out;
  bool const mixture = m.experts > 1 && !dense_layer;
  out.whole_layer = !w.flex || (w.compiled && !mixture);
  out.attention_full = w.flex && !w.compiled;
  out.kernel_kept = !out.attention_full && (w.flex || (m.attention == attention_kind::flash && !w.unfused));
  counter c(out);
  auto const attention = [&](op_matmul x) { out.attention_full ? c.again(x) : c.mm(x); };
  std::int64_t const h = m.hidden;
  if (m.mla()) {
    // Multi-latent attention (TT v0.2.0 models/deepseek_v3/model/model.py:
    // 212-262): the q down and up projections (or one q), the kv down and
    // up projections, the o projection.
    std::int64_t const qk = m.heads * m.qk_head_width();
    if (m.q_lora_rank > 0) {
      attention({.gemm = "q-down", .output = "compressed q (q down projection output)", .columns = m.q_lora_rank,
                 .inputs = h});
      attention({.gemm = "q-up", .output = "q up projection output", .columns = qk, .inputs = m.q_lora_rank});
    } else {
      attention({.gemm = "q", .output = "q projection output", .columns = qk, .inputs = h});
    }
    attention({.gemm = "kv-down",
               .output = "compressed keys and values (kv down projection output)",
               .columns = m.kv_lora_rank + m.qk_rope_head_dim,
               .inputs = h});
    attention({.gemm = "kv-up",
               .output = "kv up projection output",
               .columns = m.heads * (m.head_width() + m.v_head_width()),
               .inputs = m.kv_lora_rank});
  } else {
    // Separate q, k and v projections (models/llama3/model/model.py), one
    // GEMM in dtplan's shape.
    attention({.gemm = "qkv", .output = "q projection output", .columns = m.q_width(), .inputs = h});
    attention({.gemm = "qkv", .output = "k projection output", .columns = m.kv_width(), .inputs = h});
    attention({.gemm = "qkv", .output = "v projection output", .columns = m.kv_width(), .inputs = h});
  }
  attention({.gemm = "o-proj",
             .output = "o projection output (partial sums under tp)",
             .columns = h,
             .inputs = m.attention_out_width(),
             .full_width = true});
  if (!out.whole_layer) c.restart();

  bool const swiglu = m.mlp == mlp_kind::swiglu;
  std::int64_t const ffn = mixture ? m.mlp_width() : m.ffn;
  if (mixture) {
    c.again({.gemm = "router", .output = "router logits", .columns = m.experts, .inputs = h, .full_width = true});
    op_matmul const up{.gemm = "mlp-up",
                       .output = swiglu ? "experts' gate projection outputs" : "experts' up projection outputs",
                       .columns = ffn,
                       .inputs = h,
                       .routed = true};
    op_matmul gate_up = up;
    gate_up.output = "experts' up projection outputs";
    op_matmul const down{.gemm = "mlp-down",
                         .output = "experts' down projection outputs (partial sums under tp)",
                         .columns = h,
                         .inputs = ffn,
                         .full_width = true,
                         .routed = true};
    if (w.grouped) {
      c.again(up);
      if (swiglu) c.again(gate_up);
      c.again(down);
    } else if (swiglu) {
      c.loop(local_experts, {up, gate_up, down});
    } else {
      c.loop(local_experts, {up, down});
    }
    // torchtitan's shared experts: a FeedForward after the routed ones
    // (moe.py:465-470).
    if (auto const shared = m.shared_expert_ffn; shared > 0)
      feed_forward(c, swiglu, h, shared,
                   {"shared-up", "shared-down", "shared expert gate projection output",
                    "shared expert up projection output",
                    "shared expert down projection output (partial sums under tp)"});
  } else {
    feed_forward(c, swiglu, h, ffn,
                 {"mlp-up", "mlp-down", "swiglu gate projection output",
                  swiglu ? "swiglu up projection output" : "mlp up projection output",
                  "mlp down projection output (partial sums under tp)"});
  }
  return out;
}

}  // namespace dtplan::planner
