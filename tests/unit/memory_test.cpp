#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "memory_fixtures.hpp"
#include "planner/model/memory.hpp"
#include "planner/model/params.hpp"
#include "planner/model/check.hpp"
#include "planner/model/shape.hpp"
#include "tests/unit/search_fixtures.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {
double gb(bytes b) { return b.value() / 1e9; }
}  // namespace

TEST_CASE("mixed precision with Adam is 16 bytes per parameter", "[memory][golden]") {
  auto st = model_state_bytes(7e9, precision::bf16, optimizer_kind::adam, 0, 64);
  CHECK(st.weights.value() == 14e9);
  CHECK(st.gradients.value() == 14e9);
  CHECK(st.optimizer.value() == 84e9);
  CHECK(st.total().value() == 112e9);
  CHECK(model_state_bytes(7e9, precision::fp16, optimizer_kind::adamw, 0, 1).total().value() == 112e9);
}

TEST_CASE("ZeRO paper: psi = 7.5B, N = 64", "[memory][golden]") {
  auto total = [](int stage) {
    return three_digits(gb(model_state_bytes(7.5e9, precision::bf16, optimizer_kind::adam, stage, 64).total()));
  };
  CHECK(total(0) == "120");
  CHECK(total(1) == "31.4");
  CHECK(total(2) == "16.6");
  CHECK(total(3) == "1.88");  // the paper rounds 1.875 GB to "1.9 GB"
  CHECK(model_state_bytes(7.5e9, precision::bf16, optimizer_kind::adam, 3, 64).total().value() == 1.875e9);
  CHECK(model_state_bytes(7.5e9, precision::bf16, optimizer_kind::adam, 1, 64).total().value() ==
        4 * 7.5e9 + 12 * 7.5e9 / 64);
  CHECK(model_state_bytes(7.5e9, precision::bf16, optimizer_kind::adam, 2, 64).total().value() ==
        2 * 7.5e9 + 14 * 7.5e9 / 64);
}

TEST_CASE("model state per precision and optimizer", "[memory]") {
  auto fp32 = model_state_bytes(1e9, precision::fp32, optimizer_kind::adam, 0, 1);
  CHECK(fp32.weights.value() == 4e9);
  CHECK(fp32.gradients.value() == 4e9);
  CHECK(fp32.optimizer.value() == 8e9);
  CHECK(model_state_bytes(1e9, precision::bf16, optimizer_kind::sgd_momentum, 0, 1).optimizer.value() == 8e9);
  CHECK(model_state_bytes(1e9, precision::bf16, optimizer_kind::sgd, 0, 1).optimizer.value() == 4e9);
  CHECK(model_state_bytes(1e9, precision::fp32, optimizer_kind::sgd, 0, 1).optimizer.value() == 0);
  CHECK(model_state_bytes(1e9, precision::fp8, optimizer_kind::adam, 0, 1).total().value() == 16e9);
}

namespace {
// Korthikanti et al. 2022, table 2 setting: GPT-3 175B layer, s = 2048, b = 1.
model korthikanti_model() {
  auto m = test::gpt3_175b();
  m.attention = attention_kind::standard;
  m.dropout = true;
  return m;
}
strategy tp_of(std::int64_t t, bool sp, checkpoint_mode c) {
  strategy s;
  s.tp = t;
  s.sequence_parallel = sp;
  s.checkpoint = c;
  return s;
}
}  // namespace

TEST_CASE("activation memory reproduces Korthikanti et al. exactly", "[memory][golden]") {
  auto const m = korthikanti_model();
  double const s = 2048, b = 1, h = 12288, a = 96, t = 8;
  double const sbh = s * b * h;

  CHECK(activations_per_layer(m, tp_of(1, false, checkpoint_mode::none)).value() == sbh * (34 + 5 * a * s / h));
  CHECK(activations_per_layer(m, tp_of(8, false, checkpoint_mode::none)).value() ==
        sbh * (10 + 24 / t + 5 * a * s / (h * t)));
  CHECK(activations_per_layer(m, tp_of(8, true, checkpoint_mode::none)).value() ==
        sbh / t * (34 + 5 * a * s / h));
  CHECK(activations_per_layer(m, tp_of(8, true, checkpoint_mode::selective)).value() == sbh / t * 34);
  CHECK(activations_per_layer(m, tp_of(8, false, checkpoint_mode::selective)).value() == sbh * (10 + 24 / t));
  CHECK(activations_per_layer(m, tp_of(1, false, checkpoint_mode::full)).value() == 2 * sbh);
  CHECK(activations_per_layer(m, tp_of(8, true, checkpoint_mode::full)).value() == 2 * sbh / t);
  CHECK(activations_per_layer(m, tp_of(8, false, checkpoint_mode::full)).value() == 2 * sbh);
}

TEST_CASE("activations generalised: flash, GQA, swiglu, cp, fp32", "[memory]") {
  auto m = korthikanti_model();
  m.attention = attention_kind::flash;
  double const s = 2048, h = 12288, a = 96;
  // Flash keeps 4.a.s bytes of fp32 statistics instead of 5.a.s^2.
  CHECK(activations_per_layer(m, tp_of(1, false, checkpoint_mode::none)).value() == s * h * 34 + 4 * a * s);

  auto llama = test::llama3_8b();  // s = 8192, h = 4096, kv width 1024, ffn 14336, flash, no dropout
  double const ls = 8192, lh = 4096, kv = 1024, f = 14336;
  double const expect = 2 * ls * (lh + lh + (lh + kv) + kv + lh + lh + lh + 3 * f) + 4 * 32 * ls;
  CHECK(activations_per_layer(llama, tp_of(1, false, checkpoint_mode::none)).value() == expect);

  strategy cp2 = tp_of(1, false, checkpoint_mode::none);
  cp2.cp = 2;
  CHECK(activations_per_layer(llama, cp2).value() == expect / 2);

  llama.prec = precision::fp32;
  CHECK(activations_per_layer(llama, tp_of(1, false, checkpoint_mode::full)).value() == 4 * ls * lh);
}

TEST_CASE("heads wider than hidden / heads: q's tensors follow heads x head_dim", "[memory]") {
  auto llama = test::llama3_8b();  // s = 8192, h = 4096, 32 heads (8 kv), ffn 14336, flash
  llama.head_dim = 256;            // q 8192 wide, k and v 2048
  double const ls = 8192, lh = 4096, q = 8192, kv = 2048, f = 14336;
  // Norm and projection inputs stay hidden wide; q and k, v, the
  // attention's output (the o projection's input) take q's width.
  double const expect = 2 * ls * (lh + lh + (q + kv) + kv + q + lh + lh + 3 * f) + 4 * 32 * ls;
  CHECK(activations_per_layer(llama, tp_of(1, false, checkpoint_mode::none)).value() == expect);
  // torchtitan's op-level checkpoint keeps q's projection and the kernel's output q wide.
  strategy ops = tp_of(1, false, checkpoint_mode::ops);
  double const kept = 2 * ls * (lh + q + kv + q + 3 * f / 3 + lh) + 4 * 32 * ls;
  CHECK(activations_per_layer(llama, ops).value() == kept);
  // q/k norms keep their inputs, q and k, beside the normalised q and k;
  // torchtitan's op-level checkpoint and full recomputation rebuild them.
  llama.qk_norm = true;
  CHECK(activations_per_layer(llama, tp_of(1, false, checkpoint_mode::none)).value() == expect + 2 * ls * (q + kv));
  auto without = llama;
  without.qk_norm = false;
  auto const selective = tp_of(2, false, checkpoint_mode::selective);
  CHECK(activations_per_layer(llama, selective).value() ==
        activations_per_layer(without, selective).value() + 2 * ls * (q + kv) / 2);
  CHECK(activations_per_layer(llama, ops).value() == kept);
}

TEST_CASE("multi-latent attention keeps its compressed tensors and every head's q, k and v", "[memory]") {
  auto m = test::llama3_8b();  // s = 8192, h = 4096, 32 heads, ffn 14336, flash
  m.kv_heads = 32;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  double const ls = 8192, lh = 4096, f = 14336;
  // The norm's and the down projections' inputs; q's and the keys' and
  // values' compressed tensors before and after their norms; the shared
  // rotary key; q and k at 32 x (128 + 64), v and the output at 32 x 128.
  double const attention = lh + lh + 2 * 1536 + 2 * 512 + 64 + 2 * 32 * 192 + 32 * 128 + 32 * 128;
  double const expect = 2 * ls * (attention + lh + lh + 3 * f) + 4 * 32 * ls;
  CHECK(activations_per_layer(m, tp_of(1, false, checkpoint_mode::none)).value() == expect);
  CHECK(activations_per_layer(m, tp_of(1, false, checkpoint_mode::full)).value() == 2 * ls * lh);
}

TEST_CASE("selective recomputation of Megatron-Core's modules: each drops what it rebuilds", "[memory]") {
  auto const llama = test::llama3_8b();  // s = 8192, h = 4096, kv 1024, ffn 14336, flash
  double const ls = 8192, lh = 4096, f = 14336;
  auto const selective = tp_of(1, false, checkpoint_mode::selective);
  auto const bit = [](recompute_module r) { return recompute_bit(r); };
  double const core = activations_per_layer(llama, selective).value();  // the default: the core attention
  // Without core_attn the flash kernel's statistics are kept (as without recomputation).
  CHECK(activations_per_layer(llama, selective, false, 0).value() == core + 4 * 32 * ls);
  CHECK(activations_per_layer(llama, selective, false, 0).value() ==
        activations_per_layer(llama, tp_of(1, false, checkpoint_mode::none)).value());
  // The two layer norms' outputs: the qkv and the MLP's inputs.
  CHECK(activations_per_layer(llama, selective, false, bit(recompute_module::core_attn) | bit(recompute_module::layernorm))
            .value() == core - 2 * 2 * ls * lh);
  // The dense MLP: all but its input (SwiGLU's gate, up and product).
  CHECK(activations_per_layer(llama, selective, false, bit(recompute_module::core_attn) | bit(recompute_module::mlp))
            .value() == core - 3 * 2 * ls * f);
  // A mixture's expert activation: its output, top-k copies.
  auto moe = llama;
  moe.experts = 8;
  moe.experts_per_token = 2;
  double const moe_core = activations_per_layer(moe, selective).value();
  CHECK(activations_per_layer(moe, selective, false, bit(recompute_module::core_attn) | bit(recompute_module::moe_act))
            .value() == moe_core - 2 * 2 * ls * f);
  // Its whole MLP ('moe'): all but the MLP's input, the experts' top-k
  // copies of it, their gate, up and product, and the router's fp32 logits.
  CHECK(activations_per_layer(moe, selective, false, bit(recompute_module::core_attn) | bit(recompute_module::moe))
            .value() == moe_core - 2 * 2 * ls * lh - 3 * 2 * 2 * ls * f - 4 * ls * 8);
  // mlp does not reach a mixture's experts.
  CHECK(activations_per_layer(moe, selective, false, bit(recompute_module::core_attn) | bit(recompute_module::mlp))
            .value() == moe_core);
  // Multi-latent attention's up projections: every head's q, k and v.
  auto mla = llama;
  mla.kv_heads = 32;
  mla.kv_lora_rank = 512;
  mla.qk_rope_head_dim = 64;
  double const mla_core = activations_per_layer(mla, selective).value();
  CHECK(activations_per_layer(mla, selective, false,
                              bit(recompute_module::core_attn) | bit(recompute_module::mla_up_proj))
            .value() == mla_core - 2 * ls * (2 * 32 * 192 + 32 * 128));
  // Other modes ignore the modules.
  CHECK(activations_per_layer(llama, tp_of(1, false, checkpoint_mode::full), false, bit(recompute_module::layernorm))
            .value() == 2 * ls * lh);
}

TEST_CASE("uneven layers: the first chunks take one more", "[memory]") {
  CHECK(layers_per_chunk(10, 4) == std::vector<std::int64_t>{3, 3, 2, 2});
  CHECK(layers_per_chunk(48, 5) == std::vector<std::int64_t>{10, 10, 10, 9, 9});
  CHECK(padded_vocab(32000, 1) == 32000);
  CHECK(padded_vocab(50257, 1) == 50304);
  CHECK(padded_vocab(50257, 8) == 51200);
}

TEST_CASE("llama2_7b on one node: terms and most loaded stage", "[memory]") {
  auto p = test::program_of(test::llama2_7b(), test::nodes_of("one_node", 1, test::h100_sxm()), 64);
  strategy s;
  s.dp = 8;
  s.zero = 1;
  s.checkpoint = checkpoint_mode::selective;
  auto mem = estimate_memory(p, s);
  double const params = 6'738'415'616.0;
  CHECK(mem.weights.value() == 2 * params);
  CHECK(mem.gradients.value() == 2 * params);
  CHECK(mem.optimizer.value() == 12 * params / 8);
  CHECK(mem.usable.value() == 74.0 * 1073741824.0);
  CHECK(mem.in_flight == 1);
  CHECK(mem.stage_note == "stage 0 of 1 (embedding, logits, 32 layers)");
  bytes sum;
  for (auto const& t : mem.detail) sum += t.size;
  CHECK(sum == mem.total);
  CHECK(mem.total == mem.weights + mem.gradients + mem.optimizer + mem.activations + mem.buffers);
  CHECK(to_string(mem.total) == "51.3 GiB");

  // With pp = 4 stage 0 holds 4 micro-batches of 8 layers.
  s.dp = 2;
  s.pp = 4;
  auto piped = estimate_memory(p, s);
  CHECK(piped.stage == 0);
  CHECK(piped.in_flight == 4);
  CHECK(piped.stage_layers == 8);

  // Interleaving with v = 2: pp (1 + (pp-1)/(pp v)) = 5.5 micro-batches' worth.
  s.virtual_stages = 2;
  auto inter = estimate_memory(p, s);
  CHECK(inter.in_flight == 6);
  auto const act = activations_per_layer(p.model, s);
  CHECK(inter.detail[4].size == act * (8 * 5.5));
}

TEST_CASE("the logits can make the last stage the most loaded", "[memory]") {
  auto m = test::llama3_8b();
  auto p = test::program_of(m, test::nodes_of("one_node", 1, test::h100_sxm()), 16);
  strategy s;
  s.dp = 1;
  s.pp = 8;
  s.checkpoint = checkpoint_mode::full;
  auto mem = estimate_memory(p, s);
  CHECK(mem.stage == 7);
  CHECK(mem.stage_note == "stage 7 of 8 (logits, 4 layers)");
}

TEST_CASE("buffers: DDP buckets, ZeRO-3 gathered layers, TP and pipeline buffers", "[memory]") {
  auto p = test::program_of(test::llama2_7b(), test::nodes_of("one_node", 1, test::h100_sxm()), 64);
  strategy s;
  s.dp = 8;
  // The buckets are views of the gradients (Megatron's buffer): nothing more.
  auto views = estimate_memory(p, s);
  CHECK(views.buffers.value() == 0);
  // PyTorch DDP's default copies every gradient into its flat buckets: one
  // more gradient-sized buffer, in the gradients' precision (bf16 here:
  // 6,738,415,616 x 2 B), without ZeRO and with ZeRO-1; not with ZeRO-2.
  p.training.gradient_as_bucket_view = false;
  auto copies = estimate_memory(p, s);
  CHECK(copies.buffers.value() == 6'738'415'616.0 * 2);
  CHECK(copies.buffers == copies.gradients);
  auto const term = std::find_if(copies.detail.begin(), copies.detail.end(),
                                 [](auto const& t) { return t.name.starts_with("gradient bucket copies"); });
  REQUIRE(term != copies.detail.end());
  CHECK(term->name == "gradient bucket copies (PyTorch DDP, gradient_as_bucket_view = false: 6.74B params x 2 B)");
  s.zero = 1;
  CHECK(estimate_memory(p, s).buffers.value() == 6'738'415'616.0 * 2);
  s.zero = 2;
  CHECK(estimate_memory(p, s).buffers.value() == 0);
  s.dp = 1;
  s.zero = 0;
  CHECK(estimate_memory(p, s).buffers.value() == 0);  // nothing to reduce
  s.dp = 8;
  p.training.gradient_as_bucket_view = true;

  // DeepSpeed's ZeRO-1/2 allocate a reduce bucket of reduce_bucket_size
  // elements (5e8: 1 GB of bf16 gradients) in the model's 16-bit precision
  // as each backward starts, two with overlap_comm; not its pipeline engine.
  p.training.contiguous_gradients = true;
  p.training.ddp_bucket_size = bytes(1e9);
  p.training.overlap_grad_sync = false;
  s.zero = 2;
  auto ds = estimate_memory(p, s);
  CHECK(ds.buffers.value() == 5e8 * 2);
  auto const bucket = std::find_if(ds.detail.begin(), ds.detail.end(),
                                   [](auto const& t) { return t.name.starts_with("ZeRO reduce buckets"); });
  REQUIRE(bucket != ds.detail.end());
  CHECK(bucket->name == "ZeRO reduce buckets (DeepSpeed's contiguous_gradients: 1 x 500M elements x 2 B)");
  p.training.overlap_grad_sync = true;
  CHECK(estimate_memory(p, s).buffers.value() == 2 * 5e8 * 2);
  s.zero = 1;
  s.dp = 4;
  s.pp = 2;  // the pipeline engine's backward allocates none
  auto piped = estimate_memory(p, s);
  CHECK(std::none_of(piped.detail.begin(), piped.detail.end(),
                     [](auto const& t) { return t.name.starts_with("ZeRO reduce buckets"); }));
  s.dp = 8;
  s.pp = 1;
  s.zero = 0;
  CHECK(estimate_memory(p, s).buffers.value() == 0);
  p.training.contiguous_gradients = false;

  s.zero = 3;
  auto fsdp = estimate_memory(p, s);
  auto const layer = count_params(p.model).per_layer;
  // The peak is at the loss: the root unit (embedding, output projection,
  // final norm) stays gathered through the step, plus the last layer.
  CHECK(std::string(fsdp.peak_moment) == "the loss (end of the forward, start of the backward)");
  CHECK(fsdp.buffers.value() == (2.0 * 32000 * 4096 + 4096) * 2 + double(layer) * 2);
  CHECK(fsdp.weights.value() == Approx(2 * 6'738'415'616.0 / 8));
  // The first of four pipeline stages has no loss: its peak is a layer's
  // backward, with that layer and the prefetched next one gathered, and of
  // the root unit only the embedding.
  s.dp = 2;
  s.pp = 4;
  auto middle = estimate_memory(p, s);
  CHECK(middle.stage == 0);
  CHECK(std::string(middle.peak_moment) == "the backward of a layer");
  CHECK(middle.buffers.value() == 32000.0 * 4096 * 2 + 2.0 * double(layer) * 2 + 2 * 2 * 4096.0 * 4096);

  s.zero = 1;
  s.dp = 2;
  s.tp = 2;
  s.pp = 2;
  s.sequence_parallel = true;
  auto mixed = estimate_memory(p, s);
  double const sbh = 4096.0 * 4096;
  CHECK(mixed.buffers.value() == 2 * sbh + 2 * 2 * sbh / 2);
}

TEST_CASE("PyTorch's pipelining keeps a buffer per micro-batch; Megatron's two", "[memory][pipeline]") {
  // 32 micro-batches of one 4,096-token sequence over 4 stages, full
  // checkpointing: a stage-boundary tensor and a layer's saved input are
  // both s.b.h = 32 MiB.
  auto p = test::program_of(test::llama2_7b(), test::nodes_of("one_node", 1, test::h100_sxm()), 64);
  strategy s;
  s.dp = 2;
  s.pp = 4;
  s.zero = 1;
  s.checkpoint = checkpoint_mode::full;
  double const sbh = 4096.0 * 4096 * 2;
  auto two = estimate_memory(p, s);
  CHECK(two.stage == 0);
  CHECK(two.buffers.value() == 2 * sbh);

  // Stage 0 (4 in flight) keeps 32 gradient receive buffers and 4 outputs,
  // 36; stage 1 (3 in flight) also the 29 received inputs not in flight and
  // their 29 input gradients, 93; the last stage 31 received inputs and 31
  // input gradients, 62, and its loss buffers make it the most loaded.
  p.training.p2p_buffers_per_micro_batch = true;
  auto kept = estimate_memory(p, s);
  CHECK(kept.stage == 3);
  CHECK(kept.buffers.value() == 62 * sbh);
  auto const term = std::find_if(kept.detail.begin(), kept.detail.end(),
                                 [](auto const& t) { return t.name.starts_with("PyTorch pipelining"); });
  REQUIRE(term != kept.detail.end());
  CHECK(term->name ==
        "PyTorch pipelining's buffers of 32.0 MiB each: 31.0 received inputs not in flight, 31.0 input gradients");
  // Without its loss (a vocabulary of 128), stage 1's 93 decide.
  p.model.vocab = 128;
  auto middle = estimate_memory(p, s);
  CHECK(middle.stage == 1);
  CHECK(middle.buffers.value() == 93 * sbh);
}

TEST_CASE("tied embeddings: one copy with pp = 1, a copy on the last stage with pp > 1", "[memory]") {
  auto m = test::llama2_7b();
  m.tied_embeddings = true;
  auto p = test::program_of(m, test::nodes_of("one_node", 1, test::h100_sxm()), 8);
  strategy s;
  s.dp = 8;
  s.zero = 0;
  // One micro-batch per step: stage 0 holds a single micro-batch, so the
  // logits make the last stage the most loaded.
  double const params = double(count_params(m).total);
  CHECK(estimate_memory(p, s).weights.value() == 2 * params);
  p.training.global_batch = 1;
  s.dp = 1;
  s.pp = 8;
  auto piped = estimate_memory(p, s);
  // Stage 0: 4 layers and the embedding; the last stage: 4 layers, the
  // final norm and its copy of the embedding for the logits.
  CHECK(piped.stage == 7);
  CHECK(piped.weights.value() == 2 * (4.0 * double(count_params(m).per_layer) + 32000.0 * 4096 + 4096));
}

TEST_CASE("fp32 doubles the stored activations", "[memory]") {
  auto m = test::llama2_7b();  // no dropout masks: every stored tensor is 16-bit
  m.attention = attention_kind::standard;
  strategy s;
  auto const half = activations_per_layer(m, s);
  m.prec = precision::fp32;
  CHECK(activations_per_layer(m, s) == half * 2);
}

TEST_CASE("ZeRO shards over the context-parallel ranks too", "[memory]") {
  auto p = test::program_of(test::llama2_7b(), test::nodes_of("one_node", 1, test::h100_sxm()), 8);
  double const params = 6'738'415'616.0;
  strategy by_dp;
  by_dp.dp = 8;
  by_dp.zero = 3;
  strategy by_cp = by_dp;
  by_cp.dp = 1;
  by_cp.cp = 8;
  auto a = estimate_memory(p, by_dp);
  auto b = estimate_memory(p, by_cp);
  CHECK(b.weights.value() == 2 * params / 8);
  CHECK(b.optimizer.value() == 12 * params / 8);
  CHECK(a.weights == b.weights);
  CHECK(a.gradients == b.gradients);
  CHECK(a.optimizer == b.optimizer);
  by_cp.zero = 1;
  CHECK(estimate_memory(p, by_cp).optimizer.value() == 12 * params / 8);
  CHECK(estimate_memory(p, by_cp).weights.value() == 2 * params);
}

TEST_CASE("totals without the readable detail are the same totals", "[memory]") {
  auto p = test::program_of(test::llama2_7b(), test::nodes_of("one_node", 1, test::h100_sxm()), 64);
  strategy s;
  s.dp = 4;
  s.pp = 2;
  s.zero = 1;
  s.checkpoint = checkpoint_mode::selective;
  auto full = estimate_memory(p, s);
  auto totals = estimate_memory(p, s, false);
  CHECK(totals.total == full.total);
  CHECK(totals.activations == full.activations);
  CHECK(totals.stage == full.stage);
  CHECK(totals.detail.empty());
  CHECK(totals.stage_note.empty());
  CHECK_FALSE(full.detail.empty());
  CHECK(full.stage_note == "stage 0 of 2 (embedding, 16 layers)");
}

TEST_CASE("op-level checkpointing keeps 31,744 values per token of a Llama 3 8B layer", "[memory][ops]") {
  auto m = test::llama3_8b();
  strategy s;
  s.checkpoint = checkpoint_mode::ops;
  double const tokens = 8192;
  // Layer input h, q output h, v output kv = 1024, attention output h, gate
  // output ffn = 14336, down projection output h: 4 x 4096 + 1024 + 14336
  // = 31,744.
  auto terms = activation_terms(m, s);
  double bf16 = 0;
  for (auto const& t : terms)
    if (t.name != "attention kernel log-sum-exp (fp32)") bf16 += t.size.value();
  CHECK(bf16 == tokens * 31744 * 2);
  // The flash kernel's log-sum-exp: fp32 per head per token.
  CHECK(activations_per_layer(m, s).value() == tokens * (31744 * 2 + 4 * 32));
  // Less than Megatron's selective (69,632 values) and more than full (h).
  s.checkpoint = checkpoint_mode::selective;
  CHECK(activations_per_layer(m, s).value() == tokens * 69632 * 2);
  s.checkpoint = checkpoint_mode::full;
  CHECK(activations_per_layer(m, s).value() == tokens * 4096 * 2);

  // tp = 2 with sequence parallelism: the layer input and the two
  // reduce-scatter outputs are split over the sequence, the column-parallel
  // outputs over the heads and ffn; the row-parallel down projection's
  // output is the full-width partial sum.
  s.checkpoint = checkpoint_mode::ops;
  s.tp = 2;
  s.sequence_parallel = true;
  CHECK(activations_per_layer(m, s).value() ==
        tokens * (2 * (4096 / 2 + 4096 / 2 + 1024 / 2 + 4096 / 2 + 4096 / 2 + 14336 / 2 + 4096 + 4096 / 2) + 4 * 16));
  // A GELU MLP runs two matmuls: the first (5th of the layer) is kept, the second not.
  auto g = test::decoder("gelu", 2, 1024, 16, 16, 4096, mlp_kind::gelu, 32000, 2048);
  s.tp = 1;
  s.sequence_parallel = false;
  CHECK(activations_per_layer(g, s).value() == 2048 * (2 * (1024 + 1024 + 1024 + 1024 + 4096) + 4 * 16));
}

namespace {
// The size of the breakdown's first term whose label starts with `prefix`,
// -1 when there is none.
double term(memory_breakdown const& b, std::string_view prefix) {
  for (auto const& t : b.detail)
    if (t.name.rfind(prefix, 0) == 0) return t.size.value();
  return -1.0;
}
}  // namespace

TEST_CASE("the unfused cross entropy keeps three fp32 logit-sized buffers and the 16-bit logits' memory at the loss", "[memory][loss]") {
  auto p = test::program_of(test::llama3_8b(), test::nodes_of("one_node", 1, test::h100_sxm()), 16);
  strategy s;
  s.dp = 8;
  s.zero = 3;
  s.micro_batch = 2;
  s.checkpoint = checkpoint_mode::ops;
  double const logits = 2 * 8192.0 * 128256;
  auto fused = estimate_memory(p, s);
  p.training.cross_entropy = cross_entropy_kind::unfused;
  auto unfused = estimate_memory(p, s);
  CHECK(term(unfused, "unfused cross entropy backward") == 12 * logits);
  // torchtitan frees the 16-bit logits before the backward, but the caching
  // allocator keeps their memory: the fp32 buffers are larger than it.
  CHECK(term(unfused, "16-bit logits' memory") == 2 * logits);
  CHECK(term(fused, "logits (s.b.vocab/t") == 2 * logits);
  CHECK(term(fused, "logits in fp32") == 4 * logits);
  CHECK(term(fused, "16-bit logits' memory") == -1.0);
  CHECK(unfused.total.value() - fused.total.value() == 8 * logits);
  // At the loss, not during a layer's recomputation: no recomputed layer is counted.
  CHECK(std::string(unfused.peak_moment) == "the loss (end of the forward, start of the backward)");
  CHECK(term(unfused, "recomputed layer") == -1.0);
  // FSDP: the gathered root unit (embedding + output + final norm) and the last layer.
  CHECK(term(unfused, "ZeRO-3 gathered embedding/output unit") == (2.0 * 128256 * 4096 + 4096) * 2);
  CHECK(term(unfused, "ZeRO-3 gathered last layer") == double(count_params(p.model).per_layer) * 2);
  bytes sum;
  for (auto const& t : unfused.detail) sum += t.size;
  CHECK(sum == unfused.total);
}

TEST_CASE("PyTorch's loss-parallel cross entropy keeps four fp32 logit-sized buffers at the loss", "[memory][loss]") {
  // torchtitan with tensor parallelism computes the loss on vocab-sharded
  // logits through DTensor's loss_parallel, whose backward is
  // (one_hot + exp(log_softmax)) x grad: the kept log_softmax output, the
  // one-hot buffer and two temporaries.
  auto p = test::program_of(test::llama3_8b(), test::nodes_of("one_node", 1, test::h100_sxm()), 16);
  p.training.cross_entropy = cross_entropy_kind::unfused;
  strategy s;
  s.dp = 4;
  s.tp = 2;
  s.sequence_parallel = true;
  s.zero = 3;
  s.micro_batch = 2;
  s.checkpoint = checkpoint_mode::full;
  double const local_logits = 2 * 8192.0 * (128256 / 2);  // 128,256 is a multiple of 128 x 2: no padding
  auto const sharded = estimate_memory(p, s);
  CHECK(std::string(sharded.peak_moment) == "the loss (end of the forward, start of the backward)");
  CHECK(term(sharded, "loss-parallel cross entropy backward") == 16 * local_logits);
  CHECK(term(sharded, "16-bit logits' memory") == 2 * local_logits);
  CHECK(term(sharded, "unfused cross entropy backward") == -1.0);
  // Without tensor parallelism log_softmax's own backward kernel: three.
  s.dp = 8;
  s.tp = 1;
  s.sequence_parallel = false;
  auto const whole = estimate_memory(p, s);
  CHECK(term(whole, "unfused cross entropy backward") == 12 * (2 * 8192.0 * 128256));
  CHECK(term(whole, "loss-parallel cross entropy backward") == -1.0);
}

TEST_CASE("context parallelism's exchange in a layer's attention, by cp_comm_type", "[memory][cp]") {
  // Llama 3 8B (32 heads, 8 key/value heads of 128), 8,192 tokens over
  // cp 4 at tp 2: a rank's queries are q = 2 B x 2,048 x 4,096 / 2 = 8 MiB,
  // its own keys and values 4 MiB. With a vocabulary of 1,024 the loss is
  // small: the peak is a layer's backward.
  auto m = test::llama3_8b();
  m.vocab = 1024;
  auto p = test::program_of(m, test::nodes_of("two_nodes", 2, test::h100_sxm()), 16);
  strategy s;
  s.tp = 2;
  s.cp = 4;
  s.dp = 2;
  s.sequence_parallel = true;
  s.checkpoint = checkpoint_mode::full;
  double const q = 2 * 2048.0 * 4096 / 2;
  auto exchange = [&](cp_comm_kind kind) {
    p.training.cp_comm_type = kind;
    auto const b = estimate_memory(p, s);
    CHECK(std::string(b.peak_moment) == "the backward of a layer");
    return std::pair{term(b, "context-parallel key/value exchange"), b.total.value()};
  };
  // Transformer Engine's ring: the larger of the forward's four received
  // key/value buffers (4 x 4 MiB) and the backward's two send/receive
  // pairs of keys, values and their gradients plus a query gradient
  // (4 x 4 + 8 MiB).
  auto const [p2p, p2p_total] = exchange(cp_comm_kind::p2p);
  CHECK(p2p == 3 * q);
  // PyTorch's, on keys and values expanded to 32 heads (2q): gathered from
  // the four ranks (8q) or the current and the next (4q), the concatenation
  // sent (2q), the fp32 query gradient (2q) and three fp32 key/value
  // gradient buffers (12q).
  auto const [gathered, gathered_total] = exchange(cp_comm_kind::allgather);
  CHECK(gathered == 24 * q);
  auto const [ring, ring_total] = exchange(cp_comm_kind::alltoall);
  CHECK(ring == 20 * q);
  CHECK(gathered_total - p2p_total == 21 * q);
  CHECK(gathered_total - ring_total == 4 * q);
  // Without context parallelism nothing is exchanged.
  s.cp = 1;
  s.dp = 8;
  p.training.cp_comm_type = cp_comm_kind::allgather;
  CHECK(term(estimate_memory(p, s), "context-parallel key/value exchange") == -1.0);
}

TEST_CASE("fp32 gradients of a 16-bit model: 18 bytes per parameter, as Megatron's distributed optimizer notes") {
  auto const st = model_state_bytes(1e9, precision::bf16, optimizer_kind::adam, 0, 1, 4);
  CHECK(st.gradients.value() == 4e9);
  CHECK(st.total().value() == 18e9);
  // ZeRO-2 shards them like any gradient.
  CHECK(model_state_bytes(1e9, precision::bf16, optimizer_kind::adam, 2, 8, 4).gradients.value() == 0.5e9);
}

TEST_CASE("fp8 training keeps 16-bit weights, and says so, unless its parameters are fp8", "[memory]") {
  auto p = test::program_of(test::llama3_8b(), test::nodes_of("one_node", 1, test::h100_sxm()), 16);
  strategy s;
  s.dp = 8;
  s.zero = 1;
  auto const bf16 = estimate_memory(p, s);
  p.model.prec = precision::fp8;
  auto const fp8 = estimate_memory(p, s);
  double const params = double(count_params(p.model).total);
  CHECK(term(fp8, "weights (bf16 for fp8 GEMMs, ") == 2 * params);
  CHECK(term(fp8, "weights (bf16 for fp8 GEMMs, ") == term(bf16, "weights (bf16, "));
  p.training.fp8_param_gather = true;
  // Float8Tensors: the forward's row-wise byte and the backward's
  // column-wise one.
  CHECK(term(estimate_memory(p, s), "weights (fp8 row- and column-wise, ") == 2 * params);
}

TEST_CASE("experts' optimizer state is sharded over the ranks that hold the same experts", "[memory][golden]") {
  // A Mixtral-like model (Llama 3 8B's shapes, 8 experts, top 2) on 32 H100:
  // dp 32, ep 8, ZeRO-1. The dense weights' state splits over the 32 ranks;
  // each expert is held by 32 / 8 = 4 of them, over which Megatron-Core's
  // distributed optimizer shards its state (the expert data-parallel group).
  auto m = test::llama3_8b();
  m.experts = 8;
  m.experts_per_token = 2;
  auto p = test::program_of(m, test::nodes_of("c", 4, test::h100_sxm()), 512);
  strategy s;
  s.dp = 32, s.ep = 8, s.zero = 1, s.checkpoint = checkpoint_mode::none;
  auto const sh = shape_of(p, s);
  CHECK(sh.shard_ranks() == 32);
  CHECK(sh.expert_shard_ranks() == 4);
  auto const counts = count_params(m);
  double const experts = double(m.layers) * double(counts.mlp) / 8;  // one GPU's
  auto const st = sh.stage(0);
  CHECK(st.expert_params == experts);
  double const dense = st.params - experts;
  // bf16 weights, fp32 main gradients and master weights, two fp32 moments.
  auto const mem = estimate_memory(sh);
  CHECK(mem.optimizer.value() == Approx(12 * dense / 32 + 12 * experts / 4).epsilon(1e-12));
  CHECK(mem.weights.value() == Approx(2 * st.params).epsilon(1e-12));
  // Not the 12 x params / 32 of a dense model of that size: 12 B x 5.64 B
  // expert parameters x (1/4 - 1/32) = 13.8 GiB more.
  CHECK(experts == 32.0 * 3 * 4096 * 14336);
  CHECK((mem.optimizer.value() - 12 * st.params / 32) / (1 << 30) == Approx(13.78).epsilon(1e-3));
  auto const detail = std::find_if(mem.detail.begin(), mem.detail.end(),
                                   [](auto const& d) { return d.name.starts_with("optimizer moments"); });
  REQUIRE(detail != mem.detail.end());
  CHECK(detail->name == "optimizer moments (adam x 8 B, ZeRO-1 over 32, experts over 4)");
  // Without ep every rank holds every expert: one group, as for a dense model.
  s.ep = 1;
  CHECK(shape_of(p, s).expert_shard_ranks() == 32);
}

TEST_CASE("a mixture's experts keep the top-k copies of the tokens routed to them", "[memory][golden]") {
  // Llama 3 8B's shapes, 8 experts, top 2, one sequence of 8192 tokens: the
  // experts' first GEMM keeps its input, 2 x 8192 rows of 4096 in bf16,
  // beside the MLP's own input; the router's fp32 logits, 8 a token.
  auto m = test::llama3_8b();
  m.experts = 8;
  m.experts_per_token = 2;
  strategy s;
  s.dp = 8, s.ep = 8, s.checkpoint = checkpoint_mode::selective;
  auto const routed = "experts' input (top-k copies of the tokens routed to this GPU)";
  auto const of = [&](char const* name) {
    for (auto const& t : activation_terms(m, s))
      if (t.name == name) return t.size.value();
    return -1.0;
  };
  double const tokens = 8192, h = 4096;
  CHECK(of(routed) == 2 * 2 * tokens * h);
  CHECK(of("mlp input") == 2 * tokens * h);
  CHECK(of("router logits (fp32)") == 4 * tokens * 8);
  // tp 2 with sequence parallelism, each expert split over both (etp = tp):
  // the dispatcher gathers the copies over tp, so each GPU keeps them all;
  // the router sees the GPU's half of the tokens.
  s.dp = 4, s.tp = 2, s.ep = 4, s.sequence_parallel = true;
  CHECK(of(routed) == 2 * 2 * tokens * h);
  CHECK(of("mlp input") == 2 * tokens * h / 2);
  CHECK(of("router logits (fp32)") == 4 * tokens * 8 / 2);
  // Each expert whole on a GPU (etp = 1): the GPU's own tokens' copies.
  s.etp = 1;
  CHECK(of(routed) == 2 * 2 * tokens * h / 2);
  // Full recomputation keeps the layer input alone; a dense model has none.
  s.checkpoint = checkpoint_mode::full;
  CHECK(of(routed) == -1.0);
  s.checkpoint = checkpoint_mode::selective;
  m.experts = 1;
  CHECK(of(routed) == -1.0);
}

TEST_CASE("Megatron-Core's tensor-parallel overlap holds Transformer Engine's ten userbuffers", "[memory][golden]") {
  // GPT-3 175B at tp 4, seq 2048, one sequence a micro-batch (MLPerf's
  // shape). TE v2.5's initialize_ub registers a [2048, 12288] buffer for
  // each of ten GEMMs: in fp8 the six all-gathers' at 1 B, the four
  // reduce-scatters' at 2 B: 14 x 2048 x 12288 = 352,321,536 B.
  auto m = test::decoder("gpt3_175b", 96, 12288, 96, 96, 49152, planner::mlp_kind::gelu, 50257, 2048);
  m.prec = precision::fp8;
  auto p = test::program_of(m, test::nodes_of("c", 64, test::h100_sxm()), 512);
  p.training.framework = "megatron";
  p.training.tp_comm_overlap = true;
  strategy s;
  s.dp = 16, s.tp = 4, s.pp = 8, s.zero = 1, s.sequence_parallel = true, s.micro_batch = 1;
  auto const ub = "Transformer Engine's userbuffers (tp_comm_overlap: 6 all-gather x 1 B + 4 reduce-scatter x 2 B, each "
                  "s.b.h)";
  CHECK(term(estimate_memory(p, s), ub) == 352321536.0);
  CHECK(term(estimate_memory(p, s), "tensor-parallel all-gather buffer") == -1.0);
  // In bf16 all ten at 2 B.
  p.model.prec = precision::bf16;
  CHECK(term(estimate_memory(p, s), "Transformer Engine's userbuffers (tp_comm_overlap: 6 all-gather x 2 B + 4 "
                                    "reduce-scatter x 2 B, each s.b.h)") == 20.0 * 2048 * 12288);
  // Without the overlap, or outside Megatron-Core, one all-gather buffer.
  p.training.tp_comm_overlap = false;
  CHECK(term(estimate_memory(p, s), "tensor-parallel all-gather buffer (s.b.h)") == 2.0 * 2048 * 12288);
  p.training.tp_comm_overlap = true;
  p.training.framework = "torchtitan";
  CHECK(term(estimate_memory(p, s), "Transformer Engine's userbuffers") == -1.0);
}

// estimate_memory estimates only the first and last stages where dtplan
// splits a model of one layer kind; every stage, estimated alone, must
// agree: the same worst stage and the same bytes, on random small problems
// with random framework keys, over every legal strategy with a pipeline.
TEST_CASE("a middle pipeline stage never needs more memory than the first or the last", "[memory]") {
  std::mt19937_64 rng(20261207);
  std::int64_t compared = 0, middle_stages = 0;
  for (int i = 0; i < 40; ++i) {
    auto p = test::random_problem(rng);
    p.model.dropout = rng() % 2;
    p.model.tied_embeddings = rng() % 2;
    p.training.fsdp_reshard_with_pp = rng() % 2;
    p.training.loss_parallel = rng() % 2;
    p.training.contiguous_gradients = rng() % 2;
    p.training.p2p_buffers_per_micro_batch = rng() % 2;
    auto const gpus = p.cluster.gpus();
    for (auto tp : test::divisors_of(gpus))
      for (auto pp : test::divisors_of(gpus / tp)) {
        if (pp < 2) continue;
        for (int zero = 0; zero <= 3; ++zero)
          for (auto ckpt : {checkpoint_mode::none, checkpoint_mode::selective, checkpoint_mode::ops, checkpoint_mode::full})
            for (std::int64_t vs : {1, 2})
              for (std::int64_t mb : {1, 2}) {
                strategy s;
                s.tp = tp, s.pp = pp, s.dp = gpus / (tp * pp), s.zero = zero, s.checkpoint = ckpt;
                s.sequence_parallel = tp > 1, s.virtual_stages = vs, s.micro_batch = mb;
                if (!is_legal(p, s)) continue;
                auto const sh = shape_of(p, s);
                REQUIRE(sh.split.dtplan());
                auto const got = estimate_memory(sh, false);
                std::int64_t worst = 0;
                bytes most;
                for (std::int64_t r = 0; r < pp; ++r) {
                  auto const b = estimate_stage_memory(sh, r, false);
                  if (r == 0 || most < b.total) worst = r, most = b.total;
                }
                INFO("problem " << i << ": tp " << tp << " pp " << pp << " zero " << zero << " checkpoint "
                                << name(ckpt) << " vs " << vs << " mb " << mb);
                CHECK(got.stage == worst);
                CHECK(got.total.value() == most.value());
                ++compared;
                middle_stages += pp - 2;
              }
      }
  }
  CHECK(compared > 1000);
  CHECK(middle_stages > 1000);
}
