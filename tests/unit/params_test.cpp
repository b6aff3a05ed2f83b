#include <catch2/catch.hpp>

#include "memory_fixtures.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/params.hpp"

using namespace dtplan;
using planner::count_params;

namespace {
double billions(planner::model const& m) { return double(count_params(m).total) / 1e9; }
// `m` as a mixture: `experts` of `width`, `k` a token, a shared expert as wide as `shared`.
planner::model mixture(planner::model m, std::int64_t experts, std::int64_t k, std::int64_t width,
                       std::int64_t shared) {
  m.experts = experts;
  m.experts_per_token = k;
  m.expert_ffn = width;
  m.shared_expert_ffn = shared;
  return m;
}
}  // namespace

TEST_CASE("published parameter counts within 0.5 %", "[params]") {
  CHECK(billions(test::llama2_7b()) == Approx(6.74).epsilon(0.005));
  CHECK(billions(test::llama3_8b()) == Approx(8.03).epsilon(0.005));
  CHECK(billions(test::llama3_70b()) == Approx(70.6).epsilon(0.005));
  CHECK(billions(test::llama3_405b()) == Approx(405.9).epsilon(0.005));
  CHECK(billions(test::gpt3_175b()) == Approx(174.6).epsilon(0.005));
}

TEST_CASE("llama2_7b counted term by term", "[params]") {
  auto c = count_params(test::llama2_7b());
  CHECK(c.embedding == 32000 * 4096);
  CHECK(c.output == 32000 * 4096);
  CHECK(c.attention == 4 * 4096 * 4096);
  CHECK(c.mlp == 3 * 4096 * 11008);
  CHECK(c.mlp_active == c.mlp);
  CHECK(c.norms == 2 * 4096);
  CHECK(c.final_norm == 4096);
  CHECK(c.router == 0);
  CHECK(c.total == 6'738'415'616);
  CHECK(c.matmul == 32 * (4LL * 4096 * 4096 + 3LL * 4096 * 11008) + 32000 * 4096);
}

TEST_CASE("grouped-query attention shrinks k and v", "[params]") {
  auto c = count_params(test::llama3_8b());
  // head_dim 128, 8 kv heads: k and v are 4096 x 1024 each.
  CHECK(c.attention == 2 * 4096 * 4096 + 2 * 4096 * 1024);
  CHECK(c.total == 8'030'261'248);
}

TEST_CASE("gpt convention: biases and layernorm weight+bias", "[params]") {
  auto m = test::decoder("tiny", 2, 8, 2, 2, 32, planner::mlp_kind::gelu, 10);
  auto c = count_params(m);
  CHECK(c.attention == 4 * 64 + 4 * 8);
  CHECK(c.mlp == 2 * 8 * 32 + 32 + 8);
  CHECK(c.norms == 4 * 8);
  CHECK(c.final_norm == 16);
  CHECK(c.total == 2 * (288 + 552 + 32) + 80 + 80 + 16);
  m.tied_embeddings = true;
  CHECK(count_params(m).output == 0);
  CHECK(count_params(m).total == c.total - 80);
  CHECK(count_params(m).matmul == c.matmul);
}

TEST_CASE("mixture of experts stores every expert, a token uses experts_per_token", "[params]") {
  auto m = test::decoder("moe", 4, 1024, 8, 8, 4096, planner::mlp_kind::swiglu, 1000);
  m.experts = 8;
  m.experts_per_token = 2;
  auto c = count_params(m);
  CHECK(c.mlp == 8LL * 3 * 1024 * 4096);
  CHECK(c.mlp_active == 2LL * 3 * 1024 * 4096);
  CHECK(c.router == 1024 * 8);
  CHECK(c.per_layer == c.attention + c.mlp + c.norms + c.router);
  CHECK(c.matmul == 4 * (4LL * 1024 * 1024 + c.mlp_active + c.router) + 1000 * 1024);
}

TEST_CASE("a mixture's experts are expert_ffn wide: OLMoE-1B-7B's 6.9B parameters, 1.3B active", "[params]") {
  // allenai/OLMoE-1B-7B-0924 config.json: 16 layers, hidden 2048, 16 heads,
  // 64 experts of width 1024, 8 a token, vocab 50304, untied (Muennighoff et
  // al. 2024: 6.9B total, 1.3B active; its q/k norms, 4k a layer, are not
  // counted). The dense ffn is another figure, unused by a mixture.
  auto m = test::decoder("olmoe", 16, 2048, 16, 16, 8192, planner::mlp_kind::swiglu, 50304);
  m.experts = 64;
  m.experts_per_token = 8;
  m.expert_ffn = 1024;
  auto const c = count_params(m);
  CHECK(c.mlp == 64LL * 3 * 2048 * 1024);
  CHECK(c.mlp_active == 8LL * 3 * 2048 * 1024);
  CHECK(double(c.total) / 1e9 == Approx(6.92).epsilon(0.005));
  auto const active = c.total - 16 * (c.mlp - c.mlp_active);
  CHECK(double(active) / 1e9 == Approx(1.28).epsilon(0.01));
  // Unset, the experts are ffn wide.
  m.expert_ffn = 0;
  CHECK(count_params(m).mlp == 64LL * 3 * 2048 * 8192);
}

TEST_CASE("a shared expert beside the routed ones: Qwen1.5-MoE-A2.7B's 14.3B parameters, 2.7B active", "[params]") {
  // Qwen/Qwen1.5-MoE-A2.7B config.json: 24 layers, hidden 2048, 16 heads,
  // 60 experts of width 1408, 4 a token, a shared expert of 5632, vocab
  // 151936, untied (its model card: 14.3B in all, 2.7B activated; its q, k,
  // v biases and the shared expert's one-row gate, 8k a layer, are not
  // counted).
  auto m = mixture(test::decoder("qwen_moe", 24, 2048, 16, 16, 5632, planner::mlp_kind::swiglu, 151936), 60, 4,
                   1408, 5632);
  auto const c = count_params(m);
  CHECK(c.shared == 3LL * 2048 * 5632);
  CHECK(c.per_layer == c.attention + c.mlp + c.norms + c.router + c.shared);
  CHECK(double(c.total) / 1e9 == Approx(14.32).epsilon(0.005));
  auto const active = c.total - 24 * (c.mlp - c.mlp_active);
  CHECK(double(active) / 1e9 == Approx(2.69).epsilon(0.01));
  CHECK(c.matmul == 24 * (4LL * 2048 * 2048 + c.mlp_active + c.router + c.shared) + 151936LL * 2048);
}

TEST_CASE("the catalog presets count as published", "[params][catalog]") {
  auto preset = [](std::string const& name) {
    dsl::source_manager sources;
    auto id = sources.add("t.dtp", "model m : " + name +
                                       " {}\ncluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                       "training { global_batch = 8 }\n");
    dsl::diagnostics diags;
    auto p = planner::load(sources, id, {}, diags);
    REQUIRE(p);
    return double(count_params(p->model).total) / 1e9;
  };
  CHECK(preset("llama2_7b") == Approx(6.74).epsilon(0.005));
  CHECK(preset("llama2_13b") == Approx(13.0).epsilon(0.005));
  CHECK(preset("llama2_70b") == Approx(69.0).epsilon(0.005));
  CHECK(preset("llama3_8b") == Approx(8.03).epsilon(0.005));
  CHECK(preset("llama3_70b") == Approx(70.6).epsilon(0.005));
  CHECK(preset("llama3_405b") == Approx(405.9).epsilon(0.005));
  CHECK(preset("gpt3_175b") == Approx(174.6).epsilon(0.005));
  CHECK(preset("gpt3_1_3b") == Approx(1.31).epsilon(0.005));
}

TEST_CASE("a mixture's dense layers: Llama 4 Maverick's 400.7 B, 17.2 B a token with the embedding", "[params]") {
  // meta-llama/Llama-4-Maverick-17B-128E's text model: 48 layers, hidden
  // 5120, 40 heads (8 kv, head_dim 128), 128 experts of 8192 and a shared
  // one, top 1, vocabulary 202048, untied; every other layer from the
  // second a mixture (interleave_moe_layer_step 2), the others a dense MLP
  // 16384 wide: dense_layers = 1, moe_layer_freq = 2.
  auto m = mixture(test::decoder("maverick", 48, 5120, 40, 8, 16384, planner::mlp_kind::swiglu, 202048), 128, 1,
                   8192, 8192);
  m.dense_layers = 1;
  m.moe_layer_freq = 2;
  CHECK(m.moe_layer_count() == 24);
  CHECK(!m.moe_layer(0));
  CHECK(m.moe_layer(1));
  CHECK(!m.moe_layer(46));
  CHECK(m.moe_layer(47));
  CHECK(m.moe_layers_in(0, 12) == 6);
  CHECK(m.moe_layers_in(1, 2) == 1);
  CHECK(m.moe_layers_in(2, 3) == 0);
  auto const c = count_params(m);
  std::int64_t const attention = 2LL * 5120 * 5120 + 2LL * 5120 * 1024;
  CHECK(c.attention == attention);
  CHECK(c.dense_mlp == 3LL * 5120 * 16384);
  CHECK(c.dense_per_layer == attention + 3LL * 5120 * 16384 + 2 * 5120);
  // 24 mixtures of 128 x 3 x 5120 x 8192, a router 5120 x 128 and a shared
  // expert 3 x 5120 x 8192; 24 dense layers; both embeddings; the norm.
  std::int64_t const moe_layer = attention + 128LL * 3 * 5120 * 8192 + 5120LL * 128 + 3LL * 5120 * 8192 + 2 * 5120;
  CHECK(c.per_layer == moe_layer);
  CHECK(c.total == 24 * moe_layer + 24 * c.dense_per_layer + 2LL * 202048 * 5120 + 5120);
  CHECK(c.total == 400'711'848'960);
  // A token's matrix products: the mixture's one expert, shared expert and
  // router, the dense MLP, and the logits: 16.1 B (17.2 B with the input
  // embedding, Meta's "17B active").
  CHECK(c.matmul == 24 * (2LL * 5120 * 5120 + 2LL * 5120 * 1024 + 2 * 3LL * 5120 * 8192 + 5120LL * 128) +
                        24 * (2LL * 5120 * 5120 + 2LL * 5120 * 1024 + 3LL * 5120 * 16384) + 202048LL * 5120);
  CHECK(c.matmul == 16'149'708'800);
  // DeepSeek-V3's first three dense: 58 of 61 mixtures.
  m.layers = 61, m.dense_layers = 3, m.moe_layer_freq = 1;
  CHECK(m.moe_layer_count() == 58);
  CHECK(m.moe_layers_in(0, 4) == 1);
  CHECK(m.moe_layers_in(4, 8) == 4);
  // Without dense layers every layer is a mixture; a dense model has none.
  m.dense_layers = 0;
  CHECK(m.moe_layer_count() == 61);
  CHECK(!m.mixed_layers());
  m.experts = 1;
  CHECK(m.moe_layer_count() == 0);
}

TEST_CASE("heads wider than hidden / heads: Qwen3-30B-A3B's 30.5 B, 3.3 B a token with the embedding", "[params]") {
  // Qwen/Qwen3-30B-A3B config.json: 48 layers, hidden 2048, 32 heads of
  // head_dim 128 (4 kv), 128 experts of 768, 8 a token, vocabulary 151936,
  // untied, q/k norms (its model card: 30.5 B, 3.3 B activated). q is 32 x
  // 128 = 4096 wide, twice hidden.
  auto m = mixture(test::decoder("qwen3_moe", 48, 2048, 32, 4, 6144, planner::mlp_kind::swiglu, 151936), 128, 8, 768,
                   0);
  CHECK(m.head_width() == 64);  // unwritten: hidden / heads
  m.head_dim = 128;
  CHECK(m.head_width() == 128);
  CHECK(m.q_width() == 4096);
  CHECK(m.kv_width() == 512);
  auto const c = count_params(m);
  // q and o are hidden x 4096, k and v hidden x 512.
  CHECK(c.attention == 2LL * 2048 * 4096 + 2LL * 2048 * 512);
  CHECK(c.per_layer == c.attention + 128LL * 3 * 2048 * 768 + 2048LL * 128 + 2 * 2048);
  CHECK(c.total == 48 * c.per_layer + 2LL * 151936 * 2048 + 2048);
  CHECK(c.total == 30'532'110'336);
  CHECK(c.matmul == 48 * (c.attention + 8LL * 3 * 2048 * 768 + 2048LL * 128) + 151936LL * 2048);
  CHECK(c.matmul + 151936LL * 2048 == 3'352'821'760);
  // Its q/k norms, RMSNorms 128 wide for queries and keys: 30,532,122,624
  // (the checkpoint's count); no matrix product more.
  m.qk_norm = true;
  CHECK(count_params(m).attention == c.attention + 2 * 128);
  CHECK(count_params(m).total == 30'532'122'624);
  CHECK(count_params(m).matmul == c.matmul);
  // GPT's biases follow q's width: q, k, v and o's own (hidden); its q/k
  // norms are LayerNorms, a weight and a bias each.
  auto g = test::decoder("gpt", 2, 1024, 8, 8, 4096, planner::mlp_kind::gelu, 1000);
  g.head_dim = 256;
  CHECK(count_params(g).attention == 2LL * 1024 * 2048 + 2LL * 1024 * 2048 + 2048 + 2 * 2048 + 1024);
  g.qk_norm = true;
  CHECK(count_params(g).attention == 2LL * 1024 * 2048 + 2LL * 1024 * 2048 + 2048 + 2 * 2048 + 1024 + 4 * 256);
}

TEST_CASE("multi-latent attention: DeepSeek-V3's 671.0 B, 37.5 B a token with the embedding", "[params]") {
  // deepseek-ai/DeepSeek-V3 config.json: 61 layers, hidden 7168, 128 heads;
  // q down to 1536 and up to 128 x (128 + 64), keys and values down to 512
  // (+ the 64-wide rotary key) and up to 128 x (128 + 128), o from 128 x 128;
  // 256 experts of 2048, 8 a token, one shared expert, the first 3 layers
  // dense (18432); vocabulary 129280, untied. Its multi-token prediction
  // module is counted below; the router's correction bias is not.
  auto m = mixture(test::decoder("v3", 61, 7168, 128, 128, 18432, planner::mlp_kind::swiglu, 129280), 256, 8, 2048,
                   2048);
  m.dense_layers = 3;
  m.head_dim = 128;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  CHECK(m.mla());
  CHECK(m.qk_head_width() == 192);
  CHECK(m.v_head_width() == 128);
  auto const c = count_params(m);
  std::int64_t const matrices = 7168LL * 1536 + 1536LL * 128 * 192 + 7168LL * (512 + 64) + 512LL * 128 * (128 + 128) +
                                128LL * 128 * 7168;
  CHECK(c.attention == matrices + 1536 + 512);  // and the two compressed tensors' RMSNorms
  CHECK(c.attention == 187'107'328);
  std::int64_t const moe_layer =
      c.attention + 256LL * 3 * 7168 * 2048 + 7168LL * 256 + 3LL * 7168 * 2048 + 2 * 7168;
  CHECK(c.per_layer == moe_layer);
  CHECK(c.dense_per_layer == c.attention + 3LL * 7168 * 18432 + 2 * 7168);
  CHECK(c.total == 58 * moe_layer + 3 * c.dense_per_layer + 2LL * 129280 * 7168 + 7168);
  CHECK(c.total == 671'026'404'352);
  // A token's: the attention's five matrices, eight experts, the shared one
  // and the router in 58 layers, the dense MLP in 3, the logits; with the
  // input embedding 37.55 B (DeepSeek: 37 B activated).
  CHECK(c.matmul == 58 * (matrices + 8LL * 3 * 7168 * 2048 + 3LL * 7168 * 2048 + 7168LL * 256) +
                        3 * (matrices + 3LL * 7168 * 18432) + 129280LL * 7168);
  CHECK(c.matmul + c.embedding == 37'551'276'032);
  CHECK(c.mixture_mlp_matmul == 8LL * 3 * 7168 * 2048 + 3LL * 7168 * 2048 + 7168LL * 256);
  CHECK(c.mtp == 0);
  // DeepSeek-V3's multi-token prediction module (num_nextn_predict_layers
  // 1): a mixture layer (the last layer's kind), the projection 2 x 7168 x
  // 7168 and three RMSNorms, the embedding and output shared. 11.61 B; the
  // checkpoint stores its own embedding and head copies besides (2 x 0.93
  // B), 13.46 B, DeepSeek's "14B of the MTP module" (DeepSeek-V3 README:
  // 671 B main model + 14 B MTP module = 685 B).
  {
    auto w = m;
    w.mtp_layers = 1;
    auto const d = count_params(w);
    CHECK(d.mtp == moe_layer + 2LL * 7168 * 7168 + 3 * 7168);
    CHECK(d.mtp == 11'610'067'968);
    CHECK(d.total == 682'636'472'320);
    CHECK(d.mtp + 2LL * 129280 * 7168 == 13'463'426'048);
    // A token goes through the module's attention, eight experts, the
    // shared one, the router, the projection and the logits again.
    CHECK(d.mtp_matmul == matrices + 8LL * 3 * 7168 * 2048 + 3LL * 7168 * 2048 + 7168LL * 256 + 2LL * 7168 * 7168);
    CHECK(d.matmul == c.matmul + d.mtp_matmul + 129280LL * 7168);
    // With a dense last layer the module's layer is dense.
    w.moe_layer_freq = 2;  // layers 3, 5, ..., 59 mixtures; 60 dense
    CHECK_FALSE(w.mtp_moe());
    CHECK(count_params(w).mtp == count_params(w).dense_per_layer + 2LL * 7168 * 7168 + 3 * 7168);
  }
  // Queries projected straight to the heads (DeepSeek-V2-Lite: no q_lora_rank).
  m.q_lora_rank = 0;
  CHECK(count_params(m).attention ==
        7168LL * 128 * 192 + 7168LL * (512 + 64) + 512LL * 128 * (128 + 128) + 128LL * 128 * 7168 + 512);
}
