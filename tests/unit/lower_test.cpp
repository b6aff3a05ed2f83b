#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "dsl/parse.hpp"
#include "dsl/source.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/params.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

struct lowered {
  std::optional<program> p;
  std::string errors;  // formatted diagnostics
};

lowered lower_text(std::string const& text, std::vector<std::string> const& settings = {}) {
  dsl::source_manager sources;
  auto id = sources.add("test.dtp", text);
  dsl::diagnostics diags;
  lower_options options;
  for (auto const& s : settings) {
    auto sid = sources.add("<--set>", s);
    if (auto setting = dsl::parse_setting(sources, sid, diags)) options.settings.push_back(*setting);
  }
  lowered out;
  out.p = load(sources, id, options, diags);
  out.errors = dsl::format(diags, sources);
  return out;
}

std::string const plain_cluster =
    "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
    "training { global_batch = 64 }\n";
std::string const plain_model = "model m : llama2_7b { }\n";

/// Lowers a gpu derived from H100_SXM with one key set to `value`.
gpu gpu_with(std::string const& key, std::string const& value) {
  auto r = lower_text("gpu g : H100_SXM { " + key + " = " + value + " }\n" + plain_model +
                      "cluster c { nodes = 1; gpus_per_node = 8; gpu = g }\ntraining { global_batch = 8 }\n");
  INFO(r.errors);
  REQUIRE(r.p);
  return r.p->cluster.device;
}

cluster cluster_with(std::string const& keys) {
  auto r = lower_text(plain_model + "cluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; " + keys +
                      " }\ntraining { global_batch = 8 }\n");
  INFO(r.errors);
  REQUIRE(r.p);
  return r.p->cluster;
}

std::string error_of(std::string const& text) {
  auto r = lower_text(text);
  CHECK_FALSE(r.p);
  return r.errors;
}

}  // namespace

TEST_CASE("byte units are powers of 1000 or 1024, exactly") {
  CHECK(gpu_with("memory", "1 B; reserved = 0 B").memory.value() == 1.0);
  CHECK(gpu_with("memory", "100 KB; reserved = 0 B").memory.value() == 1e5);
  CHECK(gpu_with("memory", "100 MB; reserved = 0 B").memory.value() == 1e8);
  CHECK(gpu_with("memory", "80 GB; reserved = 0 B").memory.value() == 80e9);
  CHECK(gpu_with("memory", "2 TB; reserved = 0 B").memory.value() == 2e12);
  CHECK(gpu_with("memory", "1 KiB; reserved = 0 B").memory.value() == 1024.0);
  CHECK(gpu_with("memory", "1 MiB; reserved = 0 B").memory.value() == 1048576.0);
  CHECK(gpu_with("memory", "80 GiB; reserved = 0 B").memory.value() == 85899345920.0);
  CHECK(gpu_with("memory", "1.5 GiB; reserved = 0 B").memory.value() == 1610612736.0);
  CHECK(gpu_with("memory", "1 TiB; reserved = 0 B").memory.value() == 1099511627776.0);
  CHECK(gpu_with("memory", "81559 MiB; reserved = 0 B").memory.value() == 85520809984.0);
  CHECK(gpu_with("memory", "1_024 MiB; reserved = 0 B").memory.value() == 1073741824.0);
}

TEST_CASE("bandwidth units in bytes and bits, with link multipliers") {
  CHECK(cluster_with("inter_node = 100 Gbit/s").inter_node.value() == 12.5e9);
  CHECK(cluster_with("inter_node = 100 Gb/s").inter_node.value() == 12.5e9);
  CHECK(cluster_with("inter_node = 800 Mbit/s").inter_node.value() == 1e8);
  CHECK(cluster_with("inter_node = 800 Mb/s").inter_node.value() == 1e8);
  CHECK(cluster_with("inter_node = 1.6 Tbit/s").inter_node.value() == 2e11);
  CHECK(cluster_with("inter_node = 8 x 400 Gbit/s").inter_node.value() == 400e9);
  CHECK(cluster_with("inter_node = 4 x 200 Gb/s").inter_node.value() == 100e9);
  CHECK(cluster_with("inter_node = 25 GB/s").inter_node.value() == 25e9);
  CHECK(cluster_with("inter_node = 500 MB/s").inter_node.value() == 5e8);
  CHECK(cluster_with("inter_node = 3.35 TB/s").inter_node.value() == 3.35e12);
  CHECK(cluster_with("inter_node = 1 GB/s; intra_node = 2 x 300 GB/s").intra_node.value() == 600e9);
}

TEST_CASE("compute rate, time and fraction units") {
  CHECK(gpu_with("peak_flops", "989 TFLOP/s").peak_flops.value() == 989e12);
  CHECK(gpu_with("peak_flops", "494.5 TFLOP/s").peak_flops.value() == 494.5e12);
  CHECK(gpu_with("peak_flops", "2.25 PFLOP/s").peak_flops.value() == 2.25e15);
  CHECK(gpu_with("peak_flops", "500 GFLOP/s").peak_flops.value() == 5e11);
  CHECK(gpu_with("intra_latency", "10 ns").intra_latency.value() == 1e-8);
  CHECK(gpu_with("intra_latency", "5 us").intra_latency.value() == 5e-6);
  CHECK(gpu_with("intra_latency", "2 ms").intra_latency.value() == 2e-3);
  CHECK(gpu_with("intra_latency", "1.5 s").intra_latency.value() == 1.5);
  CHECK(gpu_with("intra_latency", "0 us").intra_latency.value() == 0.0);
  CHECK(gpu_with("matmul_efficiency", "90 %").matmul_efficiency == 0.9);
  CHECK(gpu_with("matmul_efficiency", "0.85").matmul_efficiency == 0.85);
  CHECK(gpu_with("matmul_efficiency", "1").matmul_efficiency == 1.0);
  CHECK(gpu_with("matmul_efficiency", "12.5 %").matmul_efficiency == 0.125);
  CHECK(cluster_with("inter_node = 1 GB/s; comm_efficiency = 70 %").comm_efficiency == 0.7);
}

TEST_CASE("integers: underscores, the 64-bit limit and overflow") {
  auto big = lower_text(plain_model + plain_cluster + "strategy s { micro_batch = 9_223_372_036_854_775_807 }\n");
  REQUIRE(big.p);
  CHECK(big.p->strategies.at(0).micro_batch.values.at(0) == INT64_MAX);
  CHECK(error_of(plain_model + plain_cluster + "strategy s { micro_batch = 9223372036854775808 }\n") ==
        "test.dtp:4:28: error: integer '9223372036854775808' does not fit in 64 bits\n"
        "    4 | strategy s { micro_batch = 9223372036854775808 }\n"
        "      |                            ^~~~~~~~~~~~~~~~~~~\n");
  auto mega = lower_text(plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                       "training { global_batch = 1_000_000 }\n");
  REQUIRE(mega.p);
  CHECK(mega.p->training.global_batch == 1000000);
}

TEST_CASE("norm and position_embedding follow the MLP unless written") {
  auto gpt = lower_text("model tiny { layers = 2; hidden = 256; heads = 4; vocab = 1000; seq_len = 128 }\n" +
                        plain_cluster);
  REQUIRE(gpt.p);
  CHECK(gpt.p->model.norm == norm_kind::layernorm);
  CHECK(gpt.p->model.position == position_kind::learned);
  auto llama = lower_text(plain_model + plain_cluster);  // llama2_7b: swiglu
  REQUIRE(llama.p);
  CHECK(llama.p->model.norm == norm_kind::rmsnorm);
  CHECK(llama.p->model.position == position_kind::rotary);
  auto mpt = lower_text("model m : mpt_7b { }\n" + plain_cluster);
  REQUIRE(mpt.p);
  CHECK(mpt.p->model.norm == norm_kind::layernorm);
  CHECK(mpt.p->model.position == position_kind::alibi);  // the preset says it
  auto neox = lower_text("model m : llama2_7b { norm = layernorm; position_embedding = rotary }\n" + plain_cluster);
  REQUIRE(neox.p);
  CHECK(neox.p->model.norm == norm_kind::layernorm);
  CHECK(neox.p->model.position == position_kind::rotary);
  auto bad = lower_text("model m : llama2_7b { norm = batchnorm }\n" + plain_cluster);
  CHECK(bad.errors ==
        "test.dtp:1:30: error: expected 'layernorm' or 'rmsnorm' for 'norm', got 'batchnorm'\n"
        "    1 | model m : llama2_7b { norm = batchnorm }\n"
        "      |                              ^~~~~~~~~\n");
}

TEST_CASE("head_dim: each head's width, which frees hidden from being a multiple of heads; qk_norm") {
  auto r = lower_text("model q : llama3_8b { hidden = 2560; heads = 32; head_dim = 128 }\n" + plain_cluster);
  INFO(r.errors);
  REQUIRE(r.p);
  CHECK(r.p->model.head_dim == 128);
  CHECK(r.p->model.q_width() == 4096);
  CHECK(r.p->model.kv_width() == 1024);
  // 3000 is no multiple of 32; with head_dim written it need not be.
  CHECK(lower_text("model q : llama3_8b { hidden = 3000; head_dim = 128 }\n" + plain_cluster).p);
  // Unwritten, hidden / heads, and hidden must divide.
  auto plain = lower_text(plain_model + plain_cluster);
  REQUIRE(plain.p);
  CHECK(plain.p->model.head_dim == 0);
  CHECK(plain.p->model.head_width() == 128);
  CHECK(lower_text("model q : llama3_8b { head_dim = 0 }\n" + plain_cluster).errors ==
        "test.dtp:1:34: error: 'head_dim' must be at least 1, got 0\n"
        "    1 | model q : llama3_8b { head_dim = 0 }\n"
        "      |                                  ^\n");
  // q/k norms: off unless written; Megatron-LM's name leads to it.
  CHECK_FALSE(plain.p->model.qk_norm);
  auto qk = lower_text("model q : llama3_8b { qk_norm = true }\n" + plain_cluster);
  REQUIRE(qk.p);
  CHECK(qk.p->model.qk_norm);
  CHECK(lower_text("model q : llama3_8b { qk_layernorm = true }\n" + plain_cluster).errors ==
        "test.dtp:1:23: error: unknown key 'qk_layernorm' in model 'q'; did you mean 'qk_norm'?\n"
        "    1 | model q : llama3_8b { qk_layernorm = true }\n"
        "      |                       ^~~~~~~~~~~~\n");
  // Multi-token prediction: none unless written; Megatron-LM's and
  // Hugging Face's names lead to it; rotary positions only, as
  // Megatron-LM asserts.
  CHECK(plain.p->model.mtp_layers == 0);
  auto mtp = lower_text("model q : llama3_8b { mtp_layers = 2 }\n" + plain_cluster);
  INFO(mtp.errors);
  REQUIRE(mtp.p);
  CHECK(mtp.p->model.mtp_layers == 2);
  CHECK(lower_text("model q : llama3_8b { num_nextn_predict_layers = 1 }\n" + plain_cluster).errors ==
        "test.dtp:1:23: error: unknown key 'num_nextn_predict_layers' in model 'q'; did you mean 'mtp_layers'?\n"
        "    1 | model q : llama3_8b { num_nextn_predict_layers = 1 }\n"
        "      |                       ^~~~~~~~~~~~~~~~~~~~~~~~\n");
  CHECK(lower_text("model q : gpt3_175b { mtp_layers = 1 }\n" + plain_cluster).errors ==
        "test.dtp:1:23: error: 'mtp_layers' (1): Megatron-LM runs multi-token prediction with rotary position "
        "embeddings, not learned\n"
        "    1 | model q : gpt3_175b { mtp_layers = 1 }\n"
        "      |                       ^~~~~~~~~~\n");
  // Megatron-LM's name leads to it.
  CHECK(lower_text("model q : llama3_8b { kv_channels = 96 }\n" + plain_cluster).errors ==
        "test.dtp:1:23: error: unknown key 'kv_channels' in model 'q'; did you mean 'head_dim'?\n"
        "    1 | model q : llama3_8b { kv_channels = 96 }\n"
        "      |                       ^~~~~~~~~~~\n");
}

TEST_CASE("model defaults: kv_heads = heads, ffn = 4 x hidden, gelu, flash, bf16, adam") {
  auto r = lower_text("model tiny { layers = 2; hidden = 256; heads = 4; vocab = 1000; seq_len = 128 }\n" +
                      plain_cluster);
  INFO(r.errors);
  REQUIRE(r.p);
  auto const& m = r.p->model;
  CHECK(m.name == "tiny");
  CHECK(m.layers == 2);
  CHECK(m.kv_heads == 4);
  CHECK(m.ffn == 1024);
  CHECK(m.mlp == mlp_kind::gelu);
  CHECK(m.attention == attention_kind::flash);
  CHECK(m.prec == precision::bf16);
  CHECK(m.optimizer == optimizer_kind::adam);
  CHECK(m.experts == 1);
  CHECK(m.experts_per_token == 1);
  CHECK_FALSE(m.tied_embeddings);
  CHECK_FALSE(m.dropout);
  CHECK(m.description.empty());
  CHECK(r.p->file == "test.dtp");
  CHECK_FALSE(r.p->training.base_lr);
  CHECK(r.p->strategies.empty());
}

TEST_CASE("dropout is off unless the model trains with it") {
  auto r = lower_text("model m : llama2_7b { dropout = true }\n" + plain_cluster);
  INFO(r.errors);
  REQUIRE(r.p);
  CHECK(r.p->model.dropout);
  auto bad = lower_text("model m : llama2_7b { dropout = 0.1 }\n" + plain_cluster);
  CHECK_FALSE(bad.p);
  CHECK(bad.errors.find("test.dtp:1:33: error:") != std::string::npos);
}

TEST_CASE("every enum value lowers") {
  auto r = lower_text(
      "model m : llama2_7b { mlp = gelu; attention = standard; precision = fp8; optimizer = sgd_momentum;"
      " tied_embeddings = true; description = \"mine\"; experts = 8; experts_per_token = 2 }\n" +
      plain_cluster);
  INFO(r.errors);
  REQUIRE(r.p);
  CHECK(r.p->model.mlp == mlp_kind::gelu);
  CHECK(r.p->model.attention == attention_kind::standard);
  CHECK(r.p->model.prec == precision::fp8);
  CHECK(r.p->model.optimizer == optimizer_kind::sgd_momentum);
  CHECK(r.p->model.tied_embeddings);
  CHECK(r.p->model.description == "mine");
  CHECK(r.p->model.experts == 8);
  CHECK(r.p->model.experts_per_token == 2);
}

TEST_CASE("checkpoint = ops and cross_entropy lower; the loss is fused unless written") {
  auto plain = lower_text(plain_model + plain_cluster);
  REQUIRE(plain.p);
  CHECK(plain.p->training.cross_entropy == cross_entropy_kind::fused);
  CHECK(dump(*plain.p).find("cross_entropy") == std::string::npos);
  auto r = lower_text(plain_model +
                      "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                      "training { global_batch = 64; cross_entropy = unfused }\n"
                      "strategy s { checkpoint = ops }\n");
  INFO(r.errors);
  REQUIRE(r.p);
  CHECK(r.p->training.cross_entropy == cross_entropy_kind::unfused);
  CHECK(r.p->strategies.at(0).fixed().checkpoint == checkpoint_mode::ops);
  CHECK(dump(*r.p).find("  cross_entropy     unfused\n") != std::string::npos);
  CHECK(dump(*r.p).find("checkpoint        ops") != std::string::npos);
}

TEST_CASE("cluster defaults come from its gpu") {
  auto r = lower_text(plain_model + plain_cluster);
  REQUIRE(r.p);
  auto const& c = r.p->cluster;
  CHECK(c.gpus() == 8);
  CHECK(c.device.name == "H100_SXM");
  CHECK(c.intra_node.value() == 450e9);
  CHECK(c.inter_node.value() == 0.0);
  CHECK(c.intra_latency.value() == c.device.intra_latency.value());
  CHECK(c.inter_latency.value() == c.device.inter_latency.value());
  CHECK(c.comm_efficiency == c.device.comm_efficiency);
  CHECK(c.network_efficiency == c.device.network_efficiency);
  auto own = cluster_with("inter_node = 8 x 400 Gbit/s; intra_node = 300 GB/s; intra_latency = 3 us; "
                          "inter_latency = 12 us; comm_efficiency = 0.6; network_efficiency = 90 %");
  CHECK(own.network_efficiency == 0.9);
  CHECK(own.intra_node.value() == 300e9);
  CHECK(own.intra_latency.value() == 3e-6);
  CHECK(own.inter_latency.value() == 12e-6);
  CHECK(own.comm_efficiency == 0.6);
}

TEST_CASE("a gpu defined from scratch gets default fp8, fp32 peaks, latencies and efficiencies") {
  auto r = lower_text("gpu X { memory = 64 GiB; peak_flops = 400 TFLOP/s; hbm_bandwidth = 2 TB/s; "
                      "intra_node = 200 GB/s }\n" + plain_model +
                      "cluster c { nodes = 1; gpus_per_node = 4; gpu = X }\ntraining { global_batch = 8 }\n");
  INFO(r.errors);
  REQUIRE(r.p);
  auto const& g = r.p->cluster.device;
  CHECK(g.name == "X");
  CHECK(g.peak_flops_fp8.value() == 400e12);
  CHECK(g.peak_flops_fp32.value() == 200e12);
  CHECK(g.intra_latency.value() == 5e-6);
  CHECK(g.inter_latency.value() == 10e-6);
  CHECK(g.matmul_efficiency == 0.7);
  CHECK(g.comm_efficiency == 0.8);
  CHECK(g.hbm_efficiency == 0.8);
  CHECK(g.reserved.value() == 2.0 * 1024 * 1024 * 1024);
  CHECK(g.generation == gpu_generation::ampere);
  CHECK(g.matmul_efficiency_fp8 == 0.0);
  CHECK(g.nvls_bandwidth.value() == 0.0);
  CHECK(g.network_efficiency == 0.95);
  CHECK_FALSE(g.attention_efficiency);
  auto h = gpu_with("generation", "blackwell; matmul_efficiency_fp8 = 0.6; nvls_bandwidth = 480 GB/s; "
                                  "network_efficiency = 0.9");
  CHECK(h.generation == gpu_generation::blackwell);
  CHECK(h.matmul_efficiency_fp8 == 0.6);
  CHECK(h.nvls_bandwidth.value() == 480e9);
  CHECK(h.network_efficiency == 0.9);
}

TEST_CASE("bases: presets, the same file, overrides and shadowing") {
  SECTION("a preset as base, one key overridden") {
    auto r = lower_text("model my7b : llama2_7b { seq_len = 8192 }\n" + plain_cluster);
    REQUIRE(r.p);
    CHECK(r.p->model.name == "my7b");
    CHECK(r.p->model.seq_len == 8192);
    CHECK(r.p->model.layers == 32);
    CHECK(r.p->model.ffn == 11008);
    CHECK(r.p->model.mlp == mlp_kind::swiglu);
    CHECK(r.p->model.description == "Llama 2 7B");
  }
  SECTION("a derived default follows the derived value") {
    // llama2_7b sets no kv_heads: it follows the heads the derived block sets.
    auto r = lower_text("model m : llama2_7b { heads = 64 }\n" + plain_cluster);
    REQUIRE(r.p);
    CHECK(r.p->model.kv_heads == 64);
  }
  SECTION("a chain within the file; the block no other uses is the one planned") {
    auto r = lower_text("model small : big { layers = 4 }\n"
                        "model big : llama3_8b { hidden = 2048 }\n" + plain_cluster);
    INFO(r.errors);
    REQUIRE(r.p);
    CHECK(r.p->model.name == "small");
    CHECK(r.p->model.layers == 4);
    CHECK(r.p->model.hidden == 2048);
    CHECK(r.p->model.kv_heads == 8);
    CHECK(r.p->model.vocab == 128256);
  }
  SECTION("a file's block shadows the preset of the same name") {
    auto r = lower_text("model llama2_7b { layers = 2; hidden = 64; heads = 2; vocab = 100; seq_len = 16 }\n"
                        "model m : llama2_7b { }\n" + plain_cluster);
    INFO(r.errors);
    REQUIRE(r.p);
    CHECK(r.p->model.name == "m");
    CHECK(r.p->model.layers == 2);
    CHECK(r.p->model.ffn == 256);
  }
  SECTION("a block named like its base changes the preset") {
    auto r = lower_text("model llama2_7b : llama2_7b { seq_len = 8192 }\n" + plain_cluster);
    INFO(r.errors);
    REQUIRE(r.p);
    CHECK(r.p->model.name == "llama2_7b");
    CHECK(r.p->model.seq_len == 8192);
    CHECK(r.p->model.layers == 32);
  }
  SECTION("a derived gpu") {
    auto r = lower_text("gpu MyH100 : H100_SXM { reserved = 6 GiB }\n" + plain_model +
                        "cluster c { nodes = 1; gpus_per_node = 8; gpu = MyH100 }\ntraining { global_batch = 8 }\n");
    REQUIRE(r.p);
    CHECK(r.p->cluster.device.name == "MyH100");
    CHECK(r.p->cluster.device.reserved.value() == 6.0 * 1024 * 1024 * 1024);
    CHECK(r.p->cluster.device.memory.value() == 85520809984.0);
    CHECK(r.p->cluster.device.peak_flops.value() == 989e12);
  }
  SECTION("inherited keys keep pointing at the text that set them") {
    dsl::source_manager sources;
    auto id = sources.add("k.dtp", "model m : llama2_7b { seq_len = 8192 }\n" + plain_cluster);
    dsl::diagnostics diags;
    auto p = load(sources, id, {}, diags);
    REQUIRE(p);
    CHECK(p->model.keys.at("seq_len").file == id);
    CHECK(sources.file(p->model.keys.at("layers").file).builtin());
    CHECK(sources.text(p->model.keys.at("seq_len")) == "seq_len");
  }
}

TEST_CASE("strategies: single values, sets, ranges, auto; unnamed ones are numbered") {
  auto r = lower_text(plain_model + plain_cluster +
                      "strategy { dp = 8; zero = 3; shard = node; checkpoint = full; order = \"pp-dp-cp-tp\";"
                      " sequence_parallel = false; virtual_stages = 2 }\n"
                      "strategy fixed { tp = 2; shard = 4 }\n"
                      "strategy { tp = {1, 2, 4}; pp = 1..4; zero = auto; checkpoint = {none, full};"
                      " order = auto; shard = {all, node, 16} }\n");
  INFO(r.errors);
  REQUIRE(r.p);
  auto const& s = r.p->strategies;
  REQUIRE(s.size() == 3);
  CHECK(s[0].name == "strategy#1");
  CHECK(s[1].name == "fixed");
  CHECK(s[2].name == "strategy#2");
  CHECK_FALSE(s[0].is_free());
  auto f = s[0].fixed();
  CHECK(f.dp == 8);
  CHECK(f.zero == 3);
  CHECK(f.shard == shard_group{shard_group::kind::node, 0});
  CHECK(f.checkpoint == checkpoint_mode::full);
  CHECK(to_string(f.order) == "pp-dp-cp-tp");
  CHECK_FALSE(f.sequence_parallel);
  CHECK(f.virtual_stages == 2);
  auto g = s[1].fixed();
  CHECK(g.dp == 0);
  CHECK(g.tp == 2);
  CHECK(g.sequence_parallel);
  CHECK(g.shard == shard_group{shard_group::kind::size, 4});
  CHECK(s[2].is_free());
  CHECK(s[2].tp.f == key_choice<std::int64_t>::form::set);
  CHECK(s[2].tp.values == std::vector<std::int64_t>{1, 2, 4});
  CHECK(s[2].pp.f == key_choice<std::int64_t>::form::range);
  CHECK(s[2].pp.low == 1);
  CHECK(s[2].pp.high == 4);
  CHECK(s[2].zero.f == key_choice<std::int64_t>::form::any);
  CHECK(s[2].order.f == key_choice<rank_order>::form::any);
  CHECK(s[2].checkpoint.values ==
        std::vector<checkpoint_mode>{checkpoint_mode::none, checkpoint_mode::full});
  CHECK(s[2].shard.values.size() == 3);
  CHECK(s[2].shard.values[2] == shard_group{shard_group::kind::size, 16});
  CHECK_FALSE(s[2].dp.is_set());
}

TEST_CASE("settings given with --set override keys before lowering") {
  std::string const file = plain_model + plain_cluster + "strategy a { tp = 1 }\nstrategy b { pp = 2 }\n";
  SECTION("a block kind targets every block of that kind") {
    auto r = lower_text(file, {"strategy.tp=2", "cluster.nodes=4", "cluster.inter_node=8 x 400 Gbit/s"});
    INFO(r.errors);
    REQUIRE(r.p);
    CHECK(r.p->strategies[0].fixed().tp == 2);
    CHECK(r.p->strategies[1].fixed().tp == 2);
    CHECK(r.p->strategies[1].fixed().pp == 2);
    CHECK(r.p->cluster.nodes == 4);
    CHECK(r.p->cluster.inter_node.value() == 400e9);
  }
  SECTION("a block name targets that block") {
    auto r = lower_text(file, {"b.zero=3", "b.tp={1,2}"});
    REQUIRE(r.p);
    CHECK(r.p->strategies[0].fixed().zero == 0);
    CHECK(r.p->strategies[1].zero.values.at(0) == 3);
    CHECK(r.p->strategies[1].is_free());
  }
  SECTION("a built-in gpu the file uses") {
    auto r = lower_text(file, {"H100_SXM.reserved=6 GiB"});
    REQUIRE(r.p);
    CHECK(r.p->cluster.device.reserved.value() == 6.0 * 1024 * 1024 * 1024);
  }
  SECTION("a kind the file has no block of") {
    auto r = lower_text(plain_model + plain_cluster, {"strategy.tp=2"});
    CHECK_FALSE(r.p);
    CHECK(r.errors ==
          "<--set>:1:1: error: no 'strategy' block for this setting to change\n"
          "    1 | strategy.tp=2\n"
          "      | ^~~~~~~~\n");
  }
  SECTION("the last of two settings of one key wins") {
    auto r = lower_text(file, {"a.tp=2", "a.tp=4"});
    REQUIRE(r.p);
    CHECK(r.p->strategies[0].fixed().tp == 4);
  }
  SECTION("unknown target, unknown key and a bad value are errors in the setting's own text") {
    auto r = lower_text(file, {"strateg.tp=2", "strategy.tpp=2", "a.tp=0"});
    CHECK_FALSE(r.p);
    CHECK(r.errors ==
          "<--set>:1:1: error: unknown block 'strateg'; did you mean 'strategy'?\n"
          "    1 | strateg.tp=2\n"
          "      | ^~~~~~~\n"
          "<--set>:1:10: error: unknown key 'tpp' for a 'strategy' block; did you mean 'tp'?\n"
          "    1 | strategy.tpp=2\n"
          "      |          ^~~\n"
          "<--set>:1:6: error: 'tp' must be at least 1, got 0\n"
          "    1 | a.tp=0\n"
          "      |      ^\n");
  }
}

TEST_CASE("every error of a file is reported, in reading order") {
  auto r = lower_text("model m : llama2_7b { layers = 0; hidden = 1 GiB }\n"
                      "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100; inter_node = 5 }\n"
                      "training { global_batch = 64 }\nstrategy { tp = {} }\n");
  CHECK_FALSE(r.p);
  CHECK(r.errors ==
        "test.dtp:1:32: error: 'layers' must be at least 1, got 0\n"
        "    1 | model m : llama2_7b { layers = 0; hidden = 1 GiB }\n"
        "      |                                ^\n"
        "test.dtp:1:44: error: expected a whole number for 'hidden', got 1 GiB\n"
        "    1 | model m : llama2_7b { layers = 0; hidden = 1 GiB }\n"
        "      |                                            ^~~~~\n"
        "test.dtp:2:49: error: unknown gpu 'H100'; did you mean 'H100_SXM'?\n"
        "    2 | cluster c { nodes = 1; gpus_per_node = 8; gpu = H100; inter_node = 5 }\n"
        "      |                                                 ^~~~\n"
        "note: the built-in gpus are V100_SXM_32GB, A100_SXM_40GB, A100_SXM_80GB, H100_SXM, H100_SXM_96GB_500W, "
        "H100_PCIE, H200_SXM, B200, GB200, GB300, B300, MI300X, L40S\n"
        "test.dtp:2:68: error: expected a bandwidth for 'inter_node', got 5 with no unit; did you mean '5 GB/s'?\n"
        "    2 | cluster c { nodes = 1; gpus_per_node = 8; gpu = H100; inter_node = 5 }\n"
        "      |                                                                    ^\n"
        "test.dtp:4:17: error: an empty set leaves no value for 'tp'\n"
        "    4 | strategy { tp = {} }\n"
        "      |                 ^~\n");
}

TEST_CASE("the catalog: every gpu with its datasheet figures") {
  auto names = catalog_gpu_names();
  CHECK(names == std::vector<std::string>{"V100_SXM_32GB", "A100_SXM_40GB", "A100_SXM_80GB", "H100_SXM",
                                          "H100_SXM_96GB_500W", "H100_PCIE", "H200_SXM", "B200", "GB200", "GB300", "B300",
                                          "MI300X", "L40S"});
  for (auto const& n : names) {
    INFO(n);
    auto g = catalog_gpu(n);
    REQUIRE(g);
    CHECK(g->name == n);
    CHECK(g->memory.value() > 30e9);
    CHECK(g->reserved < g->memory);
    CHECK(g->peak_flops_fp8 >= g->peak_flops);
    CHECK(g->peak_flops_fp32 < g->peak_flops);
    CHECK(g->matmul_efficiency > 0.5);
    // Every key of DSL.md and of the IR's extensions is written, none defaulted.
    for (char const* key : {"memory", "peak_flops", "peak_flops_fp8", "peak_flops_fp32", "hbm_bandwidth",
                            "intra_node", "matmul_efficiency", "reserved", "comm_efficiency", "hbm_efficiency",
                            "sm_count", "kernel_latency", "overlap_slowdown", "generation"})
      CHECK(g->keys.count(key) == 1);
    // NCCL's latencies, the kernel table's attention and the framework's host
    // figures are not the GPU's to write.
    for (char const* key : {"intra_latency", "inter_latency", "attention_efficiency", "step_overhead",
                            "dispatch_latency"})
      CHECK(g->keys.count(key) == 0);
    // The plan file also loads each one by name.
    auto r = lower_text(plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = " + n +
                        " }\ntraining { global_batch = 8 }\n");
    REQUIRE(r.p);
    CHECK(r.p->cluster.device.memory == g->memory);
  }
  auto h = *catalog_gpu("H100_SXM");
  CHECK(h.memory.value() == 81559.0 * 1024 * 1024);
  CHECK(h.peak_flops.value() == 989e12);
  CHECK(h.peak_flops_fp8.value() == 1979e12);
  CHECK(h.peak_flops_fp32.value() == 494.5e12);
  CHECK(h.hbm_bandwidth.value() == 3.35e12);
  CHECK(h.intra_node.value() == 450e9);
  CHECK(h.reserved.value() == 4.0 * 1024 * 1024 * 1024);
  // Grand Teton's H100: the HBM2e part's 94 GiB and 2.41 TB/s, the peaks at
  // the clock a 500 W cap sustains ((500 / 700)^(1/3) = 0.894 of H100's),
  // the rest H100_SXM's.
  auto gt = *catalog_gpu("H100_SXM_96GB_500W");
  CHECK(gt.memory.value() == 94.0 * 1024 * 1024 * 1024);
  CHECK(gt.hbm_bandwidth.value() == 2.41e12);
  CHECK(gt.peak_flops.value() == 884e12);
  CHECK(gt.peak_flops_fp8.value() == 1769e12);
  CHECK(gt.peak_flops_fp32.value() == 442e12);
  CHECK(gt.peak_flops.value() / h.peak_flops.value() == Approx(0.894).margin(0.001));
  CHECK(gt.matmul_efficiency == h.matmul_efficiency);
  CHECK(gt.matmul_efficiency_fp8 == h.matmul_efficiency_fp8);
  CHECK(gt.intra_node == h.intra_node);
  CHECK(gt.generation == gpu_generation::hopper);
  auto a = *catalog_gpu("A100_SXM_80GB");
  CHECK(a.peak_flops.value() == 312e12);
  CHECK(a.peak_flops_fp32.value() == 156e12);
  CHECK(a.hbm_bandwidth.value() == 2039e9);
  CHECK(a.intra_node.value() == 300e9);
  CHECK(catalog_gpu("A100_SXM_40GB")->hbm_bandwidth.value() == 1555e9);
  auto v = *catalog_gpu("V100_SXM_32GB");
  CHECK(v.peak_flops.value() == 125e12);
  CHECK(v.hbm_bandwidth.value() == 900e9);
  CHECK(v.intra_node.value() == 150e9);
  // Blackwell in NVL72 racks and Blackwell Ultra: the memory the MLPerf
  // systems JSONs report, the dense peaks, the measured GEMM shares.
  auto gb2 = *catalog_gpu("GB200");
  CHECK(gb2.memory.value() == 189471.0 * 1024 * 1024);
  CHECK(gb2.peak_flops.value() == 2500e12);
  CHECK(gb2.peak_flops_fp8.value() == 5000e12);
  CHECK(gb2.hbm_bandwidth.value() == 8e12);
  CHECK(gb2.intra_node.value() == 900e9);
  CHECK(gb2.matmul_efficiency == 0.73);
  CHECK(gb2.matmul_efficiency_fp8 == 0.72);
  CHECK(gb2.nvls_bandwidth.value() == 840e9);
  auto gb3 = *catalog_gpu("GB300");
  CHECK(gb3.memory.value() == 284208.0 * 1024 * 1024);
  CHECK(gb3.peak_flops.value() == 2500e12);
  CHECK(gb3.sm_count == 160);
  auto b3 = *catalog_gpu("B300");
  CHECK(b3.memory.value() == 275040.0 * 1024 * 1024);
  CHECK(b3.peak_flops.value() == 2250e12);
  CHECK(b3.peak_flops_fp8.value() == 4500e12);
  CHECK(b3.matmul_efficiency == 0.79);
  CHECK(b3.matmul_efficiency_fp8 == 0.75);
  // fp4 (NVFP4) dense peaks: Blackwell's parts only (hardware.md s.1); each
  // takes B200's measured share, Blackwell Ultra's tile overhead 1.5 x its.
  CHECK(gb2.peak_flops_fp4.value() == 10000e12);
  CHECK(gb3.peak_flops_fp4.value() == 15000e12);
  CHECK(b3.peak_flops_fp4.value() == 13125e12);
  for (auto const* g : {&gb2, &gb3, &b3}) CHECK(g->matmul_efficiency_fp4 == 0.82);
  CHECK(gb2.matmul_tile_overhead_fp4 == 3200);
  CHECK(gb3.matmul_tile_overhead_fp4 == 4800);
  CHECK(b3.matmul_tile_overhead_fp4 == 4800);
  for (char const* none : {"H100_SXM", "H200_SXM", "A100_SXM_80GB", "MI300X"})
    CHECK(catalog_gpu(none)->peak_flops_fp4.value() == 0);
  CHECK_FALSE(catalog_gpu("H100"));
  std::vector<std::pair<char const*, gpu_generation>> const generations{
      {"V100_SXM_32GB", gpu_generation::volta},  {"A100_SXM_40GB", gpu_generation::ampere},
      {"A100_SXM_80GB", gpu_generation::ampere}, {"H100_SXM", gpu_generation::hopper},
      {"H100_PCIE", gpu_generation::hopper},     {"H200_SXM", gpu_generation::hopper},
      {"H100_SXM_96GB_500W", gpu_generation::hopper},
      {"B200", gpu_generation::blackwell},       {"GB200", gpu_generation::blackwell},
      {"GB300", gpu_generation::blackwell},      {"B300", gpu_generation::blackwell},
      {"MI300X", gpu_generation::cdna3},
      {"L40S", gpu_generation::ampere}};
  for (auto const& [n, g] : generations) CHECK(catalog_gpu(n)->generation == g);
}

namespace {
// Weights of a decoder as the presets' comments count them: attention
// (q, o full width; k, v at kv_heads), the MLP's 2 or 3 matrices, two
// norms a layer, embeddings (once if tied) and the final norm.
double parameters(model const& m) {
  double h = double(m.hidden), head = h / double(m.heads);
  double attention = 2 * h * h + 2 * h * double(m.kv_heads) * head;
  double mlp = (m.mlp == mlp_kind::swiglu ? 3 : 2) * h * double(m.ffn);
  double embed = double(m.vocab) * h * (m.tied_embeddings ? 1 : 2);
  return double(m.layers) * (attention + mlp + 2 * h) + embed + h;
}
}  // namespace

TEST_CASE("the catalog: presets have their published shapes and parameter counts") {
  auto names = catalog_model_names();
  CHECK(names == std::vector<std::string>{"llama2_7b", "llama2_13b", "llama2_70b", "llama3_1b", "llama3_3b",
                                          "llama3_8b", "llama3_70b", "llama3_405b", "mpt_7b", "gpt3_1_3b",
                                          "gpt3_175b", "mixtral_8x7b", "qwen1_5_moe_a2_7b", "llama4_maverick",
                                          "qwen3_32b", "qwen3_30b_a3b", "qwen3_235b_a22b", "deepseek_v3"});
  for (auto const& n : names) {
    INFO(n);
    auto m = catalog_model(n);
    REQUIRE(m);
    CHECK(m->name == n);
    // Heads hidden / heads wide, or their own width (Qwen3's 128).
    CHECK((m->hidden % m->heads == 0 || m->head_dim > 0));
  }
  auto within = [](std::string const& name, double billions) {
    INFO(name);
    double p = parameters(*catalog_model(name)) / 1e9;
    CHECK(p == Approx(billions).epsilon(0.005));
  };
  within("llama2_7b", 6.74);
  within("llama3_8b", 8.03);
  within("llama3_70b", 70.6);
  within("llama3_405b", 405.9);
  within("gpt3_175b", 174.6);
  within("llama2_13b", 13.0);
  within("llama2_70b", 69.0);
  // Mixtures, by the planner's own count: Mixtral's paper gives 47B (46.7B)
  // and 13B a token, Qwen's card 14.3B, Meta's 400B and 17B a token with
  // the input embedding.
  auto counted = [](std::string const& name) { return count_params(*catalog_model(name)); };
  CHECK(double(counted("mixtral_8x7b").total) / 1e9 == Approx(46.70).epsilon(0.001));
  CHECK(double(counted("mixtral_8x7b").matmul + counted("mixtral_8x7b").embedding) / 1e9 ==
        Approx(12.88).epsilon(0.001));
  CHECK(double(counted("qwen1_5_moe_a2_7b").total) / 1e9 == Approx(14.32).epsilon(0.001));
  CHECK(counted("llama4_maverick").total == 400'711'848'960);
  CHECK(catalog_model("llama4_maverick")->moe_layer_count() == 24);
  // Qwen3's heads 128 wide with q/k norms: 32.8B, 30.5B (3.3B activated),
  // 235B (22B activated) on Qwen's cards; 3.35B and 22.19B counting the
  // input embedding.
  CHECK(counted("qwen3_32b").total == 32'762'123'264);
  CHECK(counted("qwen3_30b_a3b").total == 30'532'122'624);
  CHECK(counted("qwen3_30b_a3b").matmul + counted("qwen3_30b_a3b").embedding == 3'352'821'760);
  CHECK(double(counted("qwen3_235b_a22b").total) / 1e9 == Approx(235.09).epsilon(0.0001));
  CHECK(double(counted("qwen3_235b_a22b").matmul + counted("qwen3_235b_a22b").embedding) / 1e9 ==
        Approx(22.19).epsilon(0.0005));
  // DeepSeek-V3: 671 B, 37 B activated on its card (its multi-token
  // prediction module aside).
  CHECK(counted("deepseek_v3").total == 671'026'404'352);
  CHECK(counted("deepseek_v3").matmul + counted("deepseek_v3").embedding == 37'551'276'032);
  CHECK(catalog_model("deepseek_v3")->mla());
  CHECK(catalog_model("deepseek_v3")->moe_layer_count() == 58);
  auto const q = *catalog_model("qwen3_235b_a22b");
  CHECK(q.q_width() == 8192);
  CHECK(q.kv_width() == 512);
  CHECK(q.qk_norm);
  auto l = *catalog_model("llama3_405b");
  CHECK(l.layers == 126);
  CHECK(l.hidden == 16384);
  CHECK(l.heads == 128);
  CHECK(l.kv_heads == 8);
  CHECK(l.ffn == 53248);
  CHECK(l.vocab == 128256);
  CHECK(l.seq_len == 8192);
  auto g = *catalog_model("gpt3_175b");
  CHECK(g.mlp == mlp_kind::gelu);
  CHECK(g.tied_embeddings);
  CHECK(g.seq_len == 2048);
  CHECK(g.vocab == 50257);
  CHECK_FALSE(catalog_model("llama2_8b"));
}

TEST_CASE("every plan in plans/ lowers, with a fixed and a free strategy") {
  namespace fs = std::filesystem;
  std::vector<fs::path> plans;
  for (auto const& e : fs::directory_iterator(fs::path(DTPLAN_SOURCE_DIR) / "plans"))
    if (e.path().extension() == ".dtp") plans.push_back(e.path());
  REQUIRE(plans.size() >= 6);
  for (auto const& path : plans) {
    INFO(path.filename().string());
    auto text = dsl::read_file(path.string());
    REQUIRE(text);
    auto r = lower_text(*text);
    CHECK(r.errors.empty());
    REQUIRE(r.p);
    bool fixed = false, free = false;
    for (auto const& s : r.p->strategies) (s.is_free() ? free : fixed) = true;
    CHECK(fixed);
    CHECK(free);
  }
}

TEST_CASE("lower() on a parsed file names the file and loads the catalog once per source manager") {
  dsl::source_manager sources;
  auto id = sources.add("direct.dtp", plain_model + plain_cluster);
  dsl::diagnostics diags;
  auto parsed = dsl::parse(sources, id, diags);
  REQUIRE(parsed);
  auto p = lower(*parsed, sources, {}, diags);
  REQUIRE(p);
  CHECK(p->file == "direct.dtp");
  auto after_first = sources.size();
  CHECK(after_first == std::size_t{4});  // the file and the three catalog files
  auto again = lower(*parsed, sources, {}, diags);
  REQUIRE(again);
  CHECK(sources.size() == after_first);
  CHECK(sources.file(1).builtin());
  CHECK(sources.file(1).name() == "<catalog>/frameworks.dtp");
  CHECK(sources.file(2).name() == "<catalog>/gpus.dtp");
  CHECK(diags.empty());
}

TEST_CASE("training: how gradients are kept and synchronised") {
  std::string const cluster = "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n";
  auto plain = lower_text(plain_model + cluster + "training { global_batch = 64 }\n");
  REQUIRE(plain.p);
  CHECK_FALSE(plain.p->training.grad_precision);
  CHECK(plain.p->training.overlap_grad_sync);
  CHECK(plain.p->training.grad_reduce_scatter);
  CHECK(grad_element_bytes(plain.p->model, plain.p->training) == 2);

  auto set = lower_text(plain_model + cluster +
                        "training { global_batch = 64; grad_precision = fp32; overlap_grad_sync = false; "
                        "grad_reduce = all_reduce }\n");
  INFO(set.errors);
  REQUIRE(set.p);
  CHECK(set.p->training.grad_precision == precision::fp32);
  CHECK_FALSE(set.p->training.overlap_grad_sync);
  CHECK_FALSE(set.p->training.grad_reduce_scatter);
  CHECK(grad_element_bytes(set.p->model, set.p->training) == 4);

  // An fp32 model keeps fp32 gradients; an fp8 one bf16 gradients.
  auto fp8 = lower_text("model m : llama2_7b { precision = fp8 }\n" + cluster + "training { global_batch = 64 }\n");
  REQUIRE(fp8.p);
  CHECK(grad_element_bytes(fp8.p->model, fp8.p->training) == 2);
  auto fp32 = lower_text("model m : llama2_7b { precision = fp32 }\n" + cluster + "training { global_batch = 64 }\n");
  REQUIRE(fp32.p);
  CHECK(grad_element_bytes(fp32.p->model, fp32.p->training) == 4);

  CHECK(error_of(plain_model + cluster + "training { global_batch = 64; grad_reduce = reduce }\n") ==
        "test.dtp:3:45: error: expected 'reduce_scatter' or 'all_reduce' for 'grad_reduce', got 'reduce'; did you "
        "mean 'reduce_scatter'?\n"
        "    3 | training { global_batch = 64; grad_reduce = reduce }\n"
        "      |                                             ^~~~~~\n");
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("a base chain of 10,000 links lowers without recursion") {
  std::string text = plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = g0 }\ntraining { global_batch = 8 }\n";
  for (int i = 0; i < 10000; ++i) text += fmt::format("gpu g{} : g{} {{ }}\n", i, i + 1);
  auto chain = lower_text(text + "gpu g10000 : H100_SXM { reserved = 5 GiB }\n");
  INFO(chain.errors);
  REQUIRE(chain.p);
  CHECK(chain.p->cluster.device.name == "g0");
  CHECK(chain.p->cluster.device.reserved.value() == 5.0 * 1024 * 1024 * 1024);
  // The end of the chain names no gpu: one error, at the name.
  auto unknown = lower_text(text + "gpu g10000 : H100_SMX { }\n");
  CHECK(unknown.errors ==
        "test.dtp:10004:14: error: unknown base gpu 'H100_SMX'; did you mean 'H100_SXM'?\n"
        "10004 | gpu g10000 : H100_SMX { }\n"
        "      |              ^~~~~~~~\n");
}

TEST_CASE("a base cycle of 10,000 blocks is one error naming its first links") {
  std::string text = plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = g0 }\ntraining { global_batch = 8 }\n";
  for (int i = 0; i < 10000; ++i) text += fmt::format("strategy s{} : s{} {{ }}\n", i, (i + 1) % 10000);
  text += "gpu g0 : H100_SXM { }\n";
  auto r = lower_text(text);
  CHECK_FALSE(r.p);
  CHECK(r.errors.rfind("test.dtp:4:15: error: base cycle: 's0' -> 's1' -> 's2' -> 's3' -> 's4' -> 's5' -> 's6' -> "
                       "'s7' -> ... (10,000 blocks) -> 's0'\n",
                       0) == 0);
  CHECK(r.errors.find("test.dtp:11:15: note: 's7' is based on 's8' here\n") != std::string::npos);
  CHECK(r.errors.find("note: and 9,992 more blocks of the cycle\n") != std::string::npos);
  CHECK(r.errors.find("'s8' is based") == std::string::npos);
}

TEST_CASE("a set of 1,000,000 values is checked for duplicates by hashing") {
  std::string set = "{";
  for (int i = 1; i <= 1'000'000; ++i) set += std::to_string(i) + ", ";
  auto start = std::chrono::steady_clock::now();
  auto r = lower_text(plain_model + plain_cluster + "strategy s { micro_batch = " + set + "7, 0 } }\n");
  INFO(seconds_since(start) << " s");
  CHECK(seconds_since(start) < 60);  // a pairwise check took over 100 s
  CHECK_FALSE(r.p);
  CHECK(r.errors.find("error: 7 appears twice in the set\n") != std::string::npos);
  CHECK(r.errors.find("error: 'micro_batch' must be at least 1, got 0\n") != std::string::npos);
}

TEST_CASE("past 20 errors a file's diagnostics end in a count of the rest, and did-you-mean stops searching") {
  std::string text = plain_model + plain_cluster;
  for (int i = 0; i < 20000; ++i) text += fmt::format("strategy s{} : nothere{} {{ }}\n", i, i);
  auto start = std::chrono::steady_clock::now();
  auto r = lower_text(text);
  INFO(seconds_since(start) << " s");
  CHECK(seconds_since(start) < 30);  // comparing every unknown name with every name took 84 s
  CHECK_FALSE(r.p);
  CHECK(r.errors.rfind("test.dtp:4:15: error: unknown base strategy 'nothere0'\n", 0) == 0);
  std::size_t errors = 0;
  for (auto at = r.errors.find("error: "); at != std::string::npos; at = r.errors.find("error: ", at + 1)) ++errors;
  CHECK(errors == 20);
  CHECK(r.errors.size() < 4000);
  CHECK(r.errors.ends_with("note: 19,980 more errors not shown\n"));
  CHECK(lower_text(text).errors == r.errors);  // the same 20, every time

  std::string duplicates = plain_model + plain_cluster;
  for (int i = 0; i < 50000; ++i) duplicates += "strategy s { }\n";
  auto d = lower_text(duplicates);
  CHECK(d.errors.ends_with("note: 49,979 more errors not shown\n"));
  CHECK(d.errors.size() < 4000);
}

TEST_CASE("the IR dump shows strings from the input escaped") {
  auto r = lower_text("model m : llama2_7b { description = \"\x1b[2Jgone\" }\n" + plain_cluster);
  REQUIRE(r.p);
  auto text = dump(*r.p);
  CHECK(text.find("  description       \"\\x1b[2Jgone\"\n") != std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
}

namespace {

/// The plan lowered with `training_keys` in its training block, on `gpu`,
/// with `extra` blocks before it.
program with_training(std::string const& training_keys, std::string const& gpu = "H100_SXM",
                      std::string const& extra = "") {
  auto r = lower_text(extra + plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = " + gpu +
                      " }\ntraining { global_batch = 64; " + training_keys + " }\n");
  INFO(r.errors);
  REQUIRE(r.p);
  return *r.p;
}

std::vector<int> stages(std::initializer_list<int> v) { return v; }
std::vector<checkpoint_mode> modes(std::initializer_list<checkpoint_mode> v) { return v; }

}  // namespace

TEST_CASE("a run that names no framework is generic: today's behaviour, every strategy") {
  auto p = with_training("");
  CHECK(p.framework.name == "generic");
  CHECK(p.training.framework == "generic");
  CHECK(p.framework.limits == framework_limits{});
  // PyTorch's host figures, fitted across frameworks (frameworks.dtp).
  CHECK(p.framework.dispatch_latency.value() == Approx(58e-6).epsilon(1e-12));
  CHECK(p.framework.step_overhead.value() == 0.02);
  // The behaviours are the IR's defaults, which the physics had before frameworks.
  auto const t = p.training;
  training const before;
  CHECK(t.attention_kernel == attention_backend::flash);
  CHECK(t.fused_elementwise == before.fused_elementwise);
  CHECK(t.cuda_graphs == before.cuda_graphs);
  CHECK(t.grad_sync == grad_sync_mode::per_step);
  CHECK(t.grad_bucket == bucket_rule::fixed);
  CHECK(t.ddp_bucket_size.value() == 25.0 * 1024 * 1024);
  CHECK(t.overlap_grad_sync);
  CHECK(t.grad_reduce_scatter);
  CHECK_FALSE(t.overlap_param_gather);
  CHECK_FALSE(t.tp_comm_overlap);
  CHECK_FALSE(t.overlap_p2p_comm);
  CHECK(t.p2p_scatter_gather);
  CHECK_FALSE(t.fp8_param_gather);
  CHECK(t.optimizer_state_precision == precision::fp32);
  CHECK_FALSE(t.nvls);
  CHECK_FALSE(t.grad_precision);
  CHECK(t.cross_entropy == cross_entropy_kind::fused);
  // The dump's training block is as it was; the framework follows it.
  auto text = dump(p);
  CHECK(text.find("training\n  global_batch      64\nframework generic\n") != std::string::npos);
  CHECK(text.find("  zero_stages       {0, 1, 2, 3}\n") != std::string::npos);
  CHECK(text.find("  checkpoint_modes  {none, selective, full, ops}\n") != std::string::npos);
  CHECK(text.find("  step_overhead     20.0 ms\n") != std::string::npos);
}

TEST_CASE("the catalog: every framework preset, its behaviours and what it runs") {
  CHECK(catalog_framework_names() ==
        std::vector<std::string>{"generic", "megatron", "megatron_2021", "megatron_v2", "torchtitan", "deepspeed", "fsdp", "ddp"});
  for (auto const& n : catalog_framework_names()) {
    INFO(n);
    auto f = catalog_framework(n);
    REQUIRE(f);
    CHECK(f->name == n);
    CHECK_FALSE(f->description.empty());
    // PyTorch's host figures: one fit across every framework.
    CHECK(f->dispatch_latency.value() == Approx(58e-6).epsilon(1e-12));
    CHECK(f->step_overhead.value() == 0.02);
    auto p = with_training("framework = " + n);
    CHECK(p.framework.name == n);
    CHECK(p.training.framework == n);
    CHECK(p.framework.limits == f->limits);
  }
  SECTION("megatron: Megatron-Core as NeMo runs it") {
    auto p = with_training("framework = megatron");
    auto const& t = p.training;
    CHECK(t.attention_kernel == attention_backend::fused);  // auto on Hopper
    CHECK(t.grad_precision == precision::fp32);
    CHECK(t.grad_sync == grad_sync_mode::per_step);
    CHECK(t.grad_bucket == bucket_rule::scaled);
    CHECK(t.overlap_grad_sync);
    CHECK(t.overlap_param_gather);
    CHECK_FALSE(t.tp_comm_overlap);
    CHECK(t.overlap_p2p_comm);
    CHECK_FALSE(t.p2p_scatter_gather);
    CHECK(t.fused_elementwise);
    CHECK(t.cross_entropy == cross_entropy_kind::fused);
    CHECK(t.fsdp_reshard_with_pp);
    CHECK(t.timing_log_level == 0);
    CHECK(t.transformer_impl == transformer_impl_kind::transformer_engine);
    CHECK_FALSE(t.p2p_buffers_per_micro_batch);  // a sent output's data freed
    CHECK(t.gradient_as_bucket_view);  // main_grad views of the contiguous buffer
    auto const& l = p.framework.limits;
    CHECK(l.zero_stages == stages({0, 1}));
    CHECK(l.pipeline_max_zero == 1);
    CHECK(l.hybrid_sharding);
    CHECK(l.context_parallel);
    CHECK(l.interleaving);
    CHECK(l.checkpoint_modes == modes({checkpoint_mode::none, checkpoint_mode::selective, checkpoint_mode::full}));
    CHECK(l.tp_without_sequence_parallel);
    CHECK(l.zero0_with_model_parallel);
    CHECK(with_training("framework = megatron", "A100_SXM_80GB").training.attention_kernel == attention_backend::flash);
  }
  SECTION("megatron_2021: Megatron-LM of Narayanan 2021 and Korthikanti 2022") {
    auto p = with_training("framework = megatron_2021");
    auto const& t = p.training;
    CHECK(t.attention_kernel == attention_backend::unfused);
    CHECK_FALSE(t.overlap_grad_sync);
    CHECK(t.p2p_scatter_gather);
    CHECK(t.grad_precision == precision::fp32);
    CHECK(t.ddp_bucket_size.value() == 1024.0 * 1024 * 1024 * 1024 * 1024);  // one bucket
    CHECK(t.timing_log_level == 2);  // every timer synchronises
    CHECK(t.transformer_impl == transformer_impl_kind::local);  // Megatron's own layers and fused softmax
    CHECK(t.gradient_as_bucket_view);  // local DDP's contiguous buffer
    auto const& l = p.framework.limits;
    CHECK(l.zero_stages == stages({0}));
    CHECK_FALSE(l.context_parallel);
    CHECK(l.interleaving);
    CHECK(l.checkpoint_modes == modes({checkpoint_mode::none, checkpoint_mode::selective, checkpoint_mode::full}));
    CHECK(l.sequence_parallel);
  }
  SECTION("megatron_v2: megatron_2021's behaviours, before sequence parallelism and selective recomputation") {
    auto p = with_training("framework = megatron_v2");
    auto const base = with_training("framework = megatron_2021");
    CHECK(p.training.framework == "megatron_v2");
    CHECK(p.training.attention_kernel == attention_backend::unfused);
    CHECK(p.training.timing_log_level == 2);
    CHECK(p.training.ddp_bucket_size == base.training.ddp_bucket_size);
    CHECK(p.framework.dispatch_latency == base.framework.dispatch_latency);
    CHECK(p.framework.step_overhead == base.framework.step_overhead);
    auto const& l = p.framework.limits;
    CHECK_FALSE(l.sequence_parallel);
    CHECK(l.checkpoint_modes == modes({checkpoint_mode::none, checkpoint_mode::full}));
    CHECK(l.zero_stages == stages({0}));
    CHECK(l.interleaving);
  }
  SECTION("torchtitan: FSDP2, every micro-batch reduced in fp32") {
    auto p = with_training("framework = torchtitan");
    auto const& t = p.training;
    CHECK(t.attention_kernel == attention_backend::fused);
    CHECK_FALSE(t.gradient_as_bucket_view);  // replicate's DDP with PyTorch's defaults
    CHECK(t.grad_sync == grad_sync_mode::per_micro_batch);
    CHECK(t.grad_precision == precision::fp32);
    CHECK(t.cross_entropy == cross_entropy_kind::unfused);
    CHECK_FALSE(t.fused_elementwise);
    // Complex-number rotary: eager even when compile fuses the rest.
    CHECK_FALSE(t.fused_rotary);
    CHECK(with_training("framework = torchtitan; fused_rotary = true").training.fused_rotary);
    CHECK(with_training("framework = megatron").training.fused_rotary);
    // PyTorch's ring attention gathers every rank's keys and values;
    // Megatron's (Transformer Engine's) passes them on.
    CHECK(t.cp_comm_type == cp_comm_kind::allgather);
    CHECK(with_training("framework = torchtitan; cp_comm_type = alltoall").training.cp_comm_type ==
          cp_comm_kind::alltoall);
    CHECK(with_training("framework = megatron").training.cp_comm_type == cp_comm_kind::p2p);
    CHECK(with_training("").training.cp_comm_type == cp_comm_kind::p2p);
    CHECK(t.ddp_bucket_size.value() == 100.0 * 1024 * 1024);
    // reshard_after_forward = not pp_enabled (frameworks.md T12)
    CHECK_FALSE(t.fsdp_reshard_with_pp);
    // PyTorch's pipelining keeps a buffer per micro-batch (frameworks.md T13)
    CHECK(t.p2p_buffers_per_micro_batch);
    auto const& l = p.framework.limits;
    CHECK(l.zero_stages == stages({0, 3}));
    CHECK(l.hybrid_sharding);
    CHECK(l.pipeline_max_zero == 3);
    // Its 'selective' per layer is not Megatron's core-attention recomputation;
    // its per-operator one is checkpoint = ops.
    CHECK(l.checkpoint_modes == modes({checkpoint_mode::none, checkpoint_mode::full, checkpoint_mode::ops}));
    CHECK_FALSE(l.tp_without_sequence_parallel);  // SequenceParallel on the norms whenever tp > 1
    CHECK_FALSE(l.zero0_with_model_parallel);     // its DDP is 1-D
    CHECK(l.sequence_parallel);
  }
  SECTION("deepspeed: the pipeline engine with ZeRO <= 1, gradients all-reduced after the backward") {
    auto p = with_training("framework = deepspeed");
    auto const& t = p.training;
    CHECK(t.attention_kernel == attention_backend::unfused);
    CHECK(t.timing_log_level == 2);  // Megatron-DeepSpeed's timers before its 2023-07 rebase
    CHECK(with_training("framework = deepspeed; timing_log_level = 0").training.timing_log_level == 0);
    CHECK(t.transformer_impl == transformer_impl_kind::local);
    CHECK(with_training("framework = deepspeed; transformer_impl = transformer_engine").training.transformer_impl ==
          transformer_impl_kind::transformer_engine);
    CHECK_FALSE(t.grad_reduce_scatter);
    CHECK_FALSE(t.overlap_grad_sync);
    CHECK_FALSE(t.grad_precision);  // the model's 16-bit
    CHECK(t.p2p_scatter_gather);
    CHECK(t.ddp_bucket_size.value() == 1e9);
    CHECK(t.gradient_as_bucket_view);  // no PyTorch DDP
    auto const& l = p.framework.limits;
    CHECK(l.zero_stages == stages({0, 1, 2, 3}));
    CHECK(l.pipeline_max_zero == 1);
    CHECK_FALSE(l.interleaving);
    CHECK_FALSE(l.context_parallel);
  }
  SECTION("fsdp: Composer and llm-foundry") {
    auto p = with_training("framework = fsdp");
    auto const& t = p.training;
    CHECK(t.attention_kernel == attention_backend::triton);
    CHECK(t.grad_sync == grad_sync_mode::per_micro_batch);
    CHECK(t.grad_precision == precision::fp32);
    CHECK_FALSE(t.fused_elementwise);
    CHECK(t.gradient_as_bucket_view);  // zero = 0 is FSDP's NO_SHARD, not PyTorch's DDP
    auto const& l = p.framework.limits;
    CHECK(l.zero_stages == stages({0, 2, 3}));
    CHECK_FALSE(l.tensor_parallel);
    CHECK_FALSE(l.pipeline_parallel);
    CHECK_FALSE(l.context_parallel);
    CHECK(l.hybrid_sharding);
    CHECK(l.checkpoint_modes == modes({checkpoint_mode::none, checkpoint_mode::full}));
  }
  SECTION("ddp: plain PyTorch") {
    auto p = with_training("framework = ddp");
    CHECK(p.training.attention_kernel == attention_backend::flash);
    CHECK(p.training.grad_sync == grad_sync_mode::per_micro_batch);
    CHECK_FALSE(p.training.gradient_as_bucket_view);  // PyTorch's default: bucket copies
    CHECK(with_training("framework = ddp; gradient_as_bucket_view = true").training.gradient_as_bucket_view);
    auto const& l = p.framework.limits;
    CHECK(l.zero_stages == stages({0}));
    CHECK_FALSE(l.tensor_parallel);
    CHECK_FALSE(l.pipeline_parallel);
    CHECK_FALSE(l.context_parallel);
    CHECK_FALSE(l.hybrid_sharding);
  }
}

TEST_CASE("each behaviour the training block writes overrides its framework's") {
  auto p = with_training("framework = megatron; tp_comm_overlap = true; grad_precision = bf16; "
                         "overlap_param_gather = false; attention_backend = flash3; ddp_bucket_size = 256 MiB");
  auto const& t = p.training;
  CHECK(t.tp_comm_overlap);
  CHECK(t.grad_precision == precision::bf16);
  CHECK_FALSE(t.overlap_param_gather);  // written as the table's default, still an override
  CHECK(t.attention_kernel == attention_backend::flash3);
  CHECK(t.ddp_bucket_size.value() == 256.0 * 1024 * 1024);
  CHECK(t.grad_bucket == bucket_rule::scaled);  // the rest is megatron's
  CHECK(t.overlap_p2p_comm);
  // The framework itself keeps its own values.
  CHECK_FALSE(p.framework.behaviours.tp_comm_overlap);
  CHECK(p.framework.behaviours.overlap_param_gather);
  // The dump shows every resolved behaviour of a named framework.
  auto text = dump(p);
  CHECK(text.find("  framework         megatron\n") != std::string::npos);
  CHECK(text.find("  tp_comm_overlap   true\n") != std::string::npos);
  CHECK(text.find("  cuda_graphs       false\n") != std::string::npos);
  CHECK(text.find("framework megatron\n  description") != std::string::npos);
  CHECK(text.find("  zero_stages       {0, 1}\n") != std::string::npos);
}

TEST_CASE("a file's framework: its own, derived from a preset, or shadowing one") {
  SECTION("derived") {
    auto p = with_training("framework = mine", "H100_SXM",
                           "framework mine : megatron { tp_comm_overlap = true; zero_stages = {0, 1, 3}\n"
                           "  checkpoint_modes = {full, none}; dispatch_latency = 5 us; step_overhead = 0.1 s }\n");
    CHECK(p.framework.name == "mine");
    CHECK(p.training.tp_comm_overlap);
    CHECK(p.training.grad_bucket == bucket_rule::scaled);
    CHECK(p.framework.limits.zero_stages == stages({0, 1, 3}));
    CHECK(p.framework.limits.checkpoint_modes == modes({checkpoint_mode::none, checkpoint_mode::full}));
    CHECK(p.framework.limits.pipeline_max_zero == 1);
    CHECK(p.framework.dispatch_latency.value() == 5e-6);
    CHECK(p.framework.step_overhead.value() == 0.1);
  }
  SECTION("from scratch: the table's defaults, which are generic's") {
    auto p = with_training("framework = bare", "H100_SXM", "framework bare { zero_stages = 1 }\n");
    CHECK(p.framework.limits.zero_stages == stages({1}));
    CHECK(p.training.attention_kernel == attention_backend::flash);
  }
  SECTION("shadowing a preset, which a training block then names") {
    auto p = with_training("framework = megatron", "H100_SXM", "framework megatron : megatron { nvls = true }\n");
    CHECK(p.training.nvls);
    CHECK(p.training.grad_bucket == bucket_rule::scaled);
    auto q = with_training("framework = megatron", "H100_SXM", "framework megatron { nvls = true }\n");
    CHECK(q.training.nvls);
    CHECK(q.training.grad_bucket == bucket_rule::fixed);  // not the preset: the file's block replaces it
  }
  SECTION("--set changes the framework used, or a key of it") {
    auto file = plain_model + plain_cluster;
    auto r = lower_text(file, {"training.framework=torchtitan", "torchtitan.fp8_param_gather=true"});
    INFO(r.errors);
    REQUIRE(r.p);
    CHECK(r.p->framework.name == "torchtitan");
    CHECK(r.p->training.fp8_param_gather);
    auto s = lower_text(file + "framework f : ddp { }\n", {"training.framework=f", "framework.zero_stages={0, 2}"});
    INFO(s.errors);
    REQUIRE(s.p);
    CHECK(s.p->framework.limits.zero_stages == stages({0, 2}));
  }
}

TEST_CASE("an unknown framework is an error at its name, with the built-in ones") {
  auto text = plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                            "training { global_batch = 64; framework = megatorn }\n";
  CHECK(error_of(text) ==
        "test.dtp:3:43: error: unknown framework 'megatorn'; did you mean 'megatron'?\n"
        "    3 | training { global_batch = 64; framework = megatorn }\n"
        "      |                                           ^~~~~~~~\n"
        "note: the built-in frameworks are generic, megatron, megatron_2021, megatron_v2, torchtitan, deepspeed, fsdp, ddp\n");
  // Also when another key of the block is wrong; the file's own are candidates.
  auto both = error_of("framework mine { }\n" + plain_model +
                       "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                       "training { global_batch = 0; framework = mein }\n");
  CHECK(both.find("'global_batch' must be at least 1, got 0") != std::string::npos);
  CHECK(both.find("unknown framework 'mein'; did you mean 'mine'?") != std::string::npos);
  CHECK(error_of(plain_model + plain_cluster + "framework { }\n").find(
            "a 'framework' block needs a name, as in 'framework NAME { ... }'") != std::string::npos);
  CHECK(error_of(plain_model + plain_cluster + "framework f : nothere { }\n")
            .find("unknown base framework 'nothere'") != std::string::npos);
  CHECK(error_of(plain_model + plain_cluster + "framework f : g { }\nframework g : f { }\n")
            .find("base cycle: 'f' -> 'g' -> 'f'") != std::string::npos);
  CHECK(error_of(plain_model + plain_cluster + "framework f { }\nframework f { }\n")
            .find("duplicate framework 'f'") != std::string::npos);
  CHECK(error_of(plain_model + plain_cluster + "framework f { tensor_paralel = false }\n")
            .find("unknown key 'tensor_paralel' in framework 'f'; did you mean 'tensor_parallel'?") !=
        std::string::npos);
}

TEST_CASE("attention_backend = auto is the framework's kernel on the cluster's GPU") {
  std::vector<std::pair<char const*, attention_backend>> const by_gpu{
      {"V100_SXM_32GB", attention_backend::unfused}, {"A100_SXM_80GB", attention_backend::flash},
      {"H100_SXM", attention_backend::fused},        {"H200_SXM", attention_backend::fused},
      {"B200", attention_backend::fused},            {"MI300X", attention_backend::flash},
      {"L40S", attention_backend::flash}};
  for (auto const& [gpu, kernel] : by_gpu) {
    INFO(gpu);
    auto p = with_training("attention_backend = auto", gpu);
    CHECK(p.training.attention_kernel == kernel);
    auto q = with_training("framework = f", gpu, "framework f { attention_backend = auto }\n");
    CHECK(q.training.attention_kernel == kernel);
    CHECK(q.framework.behaviours.attention_kernel == kernel);  // no program holds auto
    CHECK(dump(q).find("auto") == std::string::npos);
  }
  // A kernel written in the training block is not the framework's auto.
  CHECK(with_training("framework = megatron; attention_backend = triton").training.attention_kernel ==
        attention_backend::triton);
  CHECK(resolved_attention(gpu_generation::hopper) == attention_backend::fused);
}

TEST_CASE("a set outside a strategy: a framework's zero_stages and checkpoint_modes, the training's recompute_modules") {
  auto fw = [](std::string const& keys) {
    return error_of("framework f { " + keys + " }\n" + plain_model +
                    "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                    "training { global_batch = 64; framework = f }\n");
  };
  CHECK(fw("zero_stages = {0, 4}") == "test.dtp:1:33: error: 'zero_stages' must be between 0 and 3, got 4\n"
                                      "    1 | framework f { zero_stages = {0, 4} }\n"
                                      "      |                                 ^\n");
  CHECK(fw("zero_stages = {1, 1}").find("error: 1 appears twice in the set") != std::string::npos);
  CHECK(fw("zero_stages = {}").find("error: an empty set leaves no value for 'zero_stages'") != std::string::npos);
  CHECK(fw("zero_stages = 0..3").find("error: 'zero_stages' takes a set of whole numbers from 0 to 3, such as "
                                      "{0, 1}, not a range\n") != std::string::npos);
  CHECK(fw("checkpoint_modes = auto").find("error: 'checkpoint_modes' takes a set of values among 'none', "
                                           "'selective', 'full' and 'ops', such as {none, selective}, not 'auto'\n") !=
        std::string::npos);
  CHECK(fw("checkpoint_modes = {none, partial}").find("error: expected 'none', 'selective', 'full' or 'ops' for "
                                                      "'checkpoint_modes', got 'partial'") != std::string::npos);
  CHECK(fw("tensor_parallel = {true, false}") ==
        "test.dtp:1:33: error: 'tensor_parallel' takes 'true' or 'false', not a set; in a 'framework' block only "
        "'zero_stages' and 'checkpoint_modes' take a set\n"
        "    1 | framework f { tensor_parallel = {true, false} }\n"
        "      |                                 ^~~~~~~~~~~~~\n");
  CHECK(fw("cuda_graphs = auto").find("error: 'cuda_graphs' takes 'true' or 'false', not 'auto'; in a 'framework' "
                                      "block only 'attention_backend' takes 'auto'\n") != std::string::npos);
  auto training = error_of(plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                         "training { global_batch = 64; nvls = {true} }\n");
  CHECK(training.find("error: 'nvls' takes 'true' or 'false', not a set; in the 'training' block only "
                      "'recompute_modules' takes a set\n") != std::string::npos);
  auto training_auto = error_of(plain_model + "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                              "training { global_batch = 64; grad_sync = auto }\n");
  CHECK(training_auto.find("error: 'grad_sync' takes 'per_step' or 'per_micro_batch', not 'auto'; in the "
                           "'training' block only 'attention_backend' takes 'auto'\n") != std::string::npos);
}

TEST_CASE("multi-latent attention: its keys need kv_lora_rank, every head's keys, no q/k norms") {
  auto errors = [](std::string const& keys) {
    return lower_text("model m : llama3_8b { " + keys + " }\n" + plain_cluster).errors;
  };
  auto first_line = [](std::string const& text) { return text.substr(0, text.find('\n')); };
  CHECK(first_line(errors("q_lora_rank = 64")) ==
        "test.dtp:1:23: error: 'q_lora_rank' (64) is a multi-latent attention's, but 'kv_lora_rank' is not set");
  CHECK(first_line(errors("v_head_dim = 64")) ==
        "test.dtp:1:23: error: 'v_head_dim' (64) is a multi-latent attention's, but 'kv_lora_rank' is not set");
  // llama3_8b's 8 kv heads, written in its block: the error is at kv_lora_rank.
  CHECK(first_line(errors("kv_lora_rank = 512")) ==
        "test.dtp:1:23: error: multi-latent attention projects keys and values up for every head: 'kv_heads' (8) "
        "must be 'heads' (32) or unwritten");
  auto ok = lower_text("model m : llama3_8b { kv_heads = 32; kv_lora_rank = 512; qk_rope_head_dim = 64 }\n" +
                       plain_cluster);
  INFO(ok.errors);
  REQUIRE(ok.p);
  CHECK(ok.p->model.mla());
  CHECK(ok.p->model.qk_head_width() == 128 + 64);
  CHECK(ok.p->model.v_head_width() == 128);
  CHECK(first_line(errors("kv_heads = 32; kv_lora_rank = 512; qk_norm = true")) ==
        "test.dtp:1:58: error: multi-latent attention normalises its compressed queries and keys itself: 'qk_norm' "
        "does not apply");
}

TEST_CASE("recompute_modules: a set of Megatron-Core's modules, each of them in the model") {
  auto with = [](std::string const& model, std::string const& modules) {
    return lower_text("model m : " + model + "\ncluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                      "training { global_batch = 64; recompute_modules = " + modules + " }\n");
  };
  auto ok = with("llama3_8b { }", "{core_attn, layernorm, mlp}");
  INFO(ok.errors);
  REQUIRE(ok.p);
  CHECK(ok.p->training.recompute_modules ==
        std::vector<recompute_module>{recompute_module::core_attn, recompute_module::layernorm, recompute_module::mlp});
  CHECK(ok.p->training.recomputes(recompute_module::layernorm));
  CHECK_FALSE(ok.p->training.recomputes(recompute_module::moe_act));
  auto plain = lower_text(plain_model + plain_cluster);
  REQUIRE(plain.p);
  CHECK(plain.p->training.recompute_modules == std::vector<recompute_module>{recompute_module::core_attn});
  CHECK(with("llama3_8b { }", "{moe_act}").errors ==
        "test.dtp:3:31: error: recompute_modules has moe_act, a mixture's expert activation, but model 'm' has no "
        "experts\n"
        "    3 | training { global_batch = 64; recompute_modules = {moe_act} }\n"
        "      |                               ^~~~~~~~~~~~~~~~~\n");
  CHECK(with("llama3_8b { }", "{mla_up_proj}").errors.find(
            "error: recompute_modules has mla_up_proj, but model 'm' has no multi-latent attention (kv_lora_rank)") !=
        std::string::npos);
  CHECK(with("mixtral_8x7b { }", "{mlp}").errors.find("error: recompute_modules has mlp, a dense MLP, but every layer "
                                                       "of model 'm' is a mixture of experts") != std::string::npos);
  CHECK(with("mixtral_8x7b { }", "{moe_act}").p);
  CHECK(lower_text("model m : mixtral_8x7b { }\ncluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                   "training { global_batch = 64; grouped_gemm = false; recompute_modules = {moe_act} }\n")
            .errors.find("error: recompute_modules has moe_act, which Megatron-Core runs with grouped experts only "
                         "(grouped_gemm = true)") != std::string::npos);
  // A mixture's whole MLP: a mixture's only.
  CHECK(with("llama3_8b { }", "{core_attn, moe}").errors.find(
            "error: recompute_modules has moe, a mixture's whole MLP, but model 'm' has no experts") !=
        std::string::npos);
  CHECK(with("mixtral_8x7b { }", "{core_attn, moe}").p);
  CHECK(with("llama3_8b { }", "{core_attn, moe_all}").errors.find(
            "error: expected 'core_attn', 'moe_act', 'layernorm', 'mla_up_proj', 'mlp' or 'moe' for "
            "'recompute_modules', got 'moe_all'") != std::string::npos);
}
