#include <catch2/catch.hpp>


#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/lower/embedded.hpp"
#include "planner/lower/lower.hpp"

using namespace dtplan;
using namespace dtplan::planner::edsl;

namespace {

planner::program load_text(std::string const& text) {
  dsl::source_manager sources;
  dsl::diagnostics diags;
  auto id = sources.add("t.dtp", text);
  auto p = planner::load(sources, id, {}, diags);
  INFO(dsl::format(diags, sources));
  REQUIRE(p);
  return *p;
}

planner::program load_plan(char const* name) {
  auto text = dsl::read_file(std::string(DTPLAN_SOURCE_DIR) + "/plans/" + name);
  REQUIRE(text);
  return load_text(*text);
}

std::vector<std::string> key_names(planner::key_spans const& keys) {
  std::vector<std::string> names;
  for (auto const& k : keys) names.push_back(k.first);
  return names;
}

void same_model(planner::model const& a, planner::model const& b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.layers == b.layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.heads == b.heads);
  CHECK(a.kv_heads == b.kv_heads);
  CHECK(a.ffn == b.ffn);
  CHECK(a.mlp == b.mlp);
  CHECK(a.vocab == b.vocab);
  CHECK(a.seq_len == b.seq_len);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.attention == b.attention);
  CHECK(a.prec == b.prec);
  CHECK(a.optimizer == b.optimizer);
  CHECK(a.experts == b.experts);
  CHECK(a.experts_per_token == b.experts_per_token);
  CHECK(a.dropout == b.dropout);
  CHECK(key_names(a.keys) == key_names(b.keys));
}

void same_gpu(planner::gpu const& a, planner::gpu const& b) {
  CHECK(a.name == b.name);
  CHECK(a.memory == b.memory);
  CHECK(a.peak_flops == b.peak_flops);
  CHECK(a.peak_flops_fp8 == b.peak_flops_fp8);
  CHECK(a.peak_flops_fp32 == b.peak_flops_fp32);
  CHECK(a.hbm_bandwidth == b.hbm_bandwidth);
  CHECK(a.intra_node == b.intra_node);
  CHECK(a.matmul_efficiency == b.matmul_efficiency);
  CHECK(a.reserved == b.reserved);
  CHECK(a.intra_latency == b.intra_latency);
  CHECK(a.inter_latency == b.inter_latency);
  CHECK(a.comm_efficiency == b.comm_efficiency);
  CHECK(a.hbm_efficiency == b.hbm_efficiency);
  CHECK(key_names(a.keys) == key_names(b.keys));
}

void same_cluster(planner::cluster const& a, planner::cluster const& b) {
  CHECK(a.name == b.name);
  CHECK(a.nodes == b.nodes);
  CHECK(a.gpus_per_node == b.gpus_per_node);
  same_gpu(a.device, b.device);
  CHECK(a.intra_node == b.intra_node);
  CHECK(a.inter_node == b.inter_node);
  CHECK(a.intra_latency == b.intra_latency);
  CHECK(a.inter_latency == b.inter_latency);
  CHECK(a.comm_efficiency == b.comm_efficiency);
  CHECK(key_names(a.keys) == key_names(b.keys));
}

template <class T>
void same_choice(planner::key_choice<T> const& a, planner::key_choice<T> const& b) {
  CHECK(a.f == b.f);
  CHECK(a.values == b.values);
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
}

void same_strategy(planner::strategy_spec const& a, planner::strategy_spec const& b) {
  INFO(a.name);
  CHECK(a.name == b.name);
  same_choice(a.dp, b.dp);
  same_choice(a.tp, b.tp);
  same_choice(a.pp, b.pp);
  same_choice(a.cp, b.cp);
  same_choice(a.ep, b.ep);
  same_choice(a.zero, b.zero);
  same_choice(a.micro_batch, b.micro_batch);
  same_choice(a.virtual_stages, b.virtual_stages);
  same_choice(a.shard, b.shard);
  same_choice(a.checkpoint, b.checkpoint);
  same_choice(a.sequence_parallel, b.sequence_parallel);
  same_choice(a.order, b.order);
}

void same_program(planner::program const& a, planner::program const& b) {
  same_model(a.model, b.model);
  same_cluster(a.cluster, b.cluster);
  CHECK(a.training.global_batch == b.training.global_batch);
  CHECK(a.training.base_lr == b.training.base_lr);
  CHECK(a.training.base_batch == b.training.base_batch);
  CHECK(key_names(a.training.keys) == key_names(b.training.keys));
  CHECK(a.training.framework == b.training.framework);
  CHECK(a.framework.name == b.framework.name);
  CHECK(a.framework.description == b.framework.description);
  CHECK(a.framework.limits == b.framework.limits);
  CHECK(a.framework.dispatch_latency == b.framework.dispatch_latency);
  CHECK(a.framework.step_overhead == b.framework.step_overhead);
  // Every run-time behaviour (the loss, gradient precision and sync, ...), resolved.
  for (auto const& k : planner::keys_of(planner::block_kind::training)) {
    if (!k.behaviour) continue;
    INFO(k.name);
    CHECK(planner::load(k, a.training) == planner::load(k, b.training));
    CHECK(planner::load(k, a.framework.behaviours) == planner::load(k, b.framework.behaviours));
  }
  REQUIRE(a.strategies.size() == b.strategies.size());
  for (std::size_t i = 0; i < a.strategies.size(); ++i) same_strategy(a.strategies[i], b.strategies[i]);
  CHECK(planner::dump(a) == planner::dump(b));
}

}  // namespace

TEST_CASE("the 7b_2node plan built in C++ is the plan lowered from text") {
  auto m = model("llama2_7b").layers(32).hidden(4096).heads(32).ffn(11008).mlp(swiglu)
               .vocab(32000).seq_len(4096).precision(bf16).optimizer(adam);
  auto c = cluster("two_nodes").nodes(2).gpus_per_node(8).gpu(catalog_gpu("H100_SXM"))
               .intra_node(450_GBps).inter_node(100_Gbitps);
  auto current = strategy("current").dp(16).zero(1).checkpoint(selective).micro_batch(1);
  auto search = strategy("search").tp({1, 2, 4, 8}).pp(range(1, 4)).zero(any).checkpoint(any)
                    .micro_batch(any);
  auto p = plan(m, c, training().framework("megatron").global_batch(256), {current, search});
  same_program(p, load_plan("7b_2node.dtp"));
  CHECK(p.file == "<embedded>");
}

TEST_CASE("a GPU of the file, a derived GPU and a derived model") {
  auto gh200 = gpu("GH200_96GB").description("NVIDIA GH200 Grace Hopper Superchip, 96 GB HBM3")
                   .memory(96_GB).peak_flops(989_TFLOPps).peak_flops_fp8(1979_TFLOPps)
                   .peak_flops_fp32(494.5_TFLOPps).hbm_bandwidth(4_TBps).intra_node(150_GBps)
                   .matmul_efficiency(0.75).reserved(4_GiB);
  auto site = gpu("GH200_site", gh200).reserved(6_GiB);
  auto m = model("llama3_8b_8k", preset_model("llama3_8b"));
  auto c = cluster("quad_gh200").nodes(8).gpus_per_node(4).gpu(site).inter_node(4, 200_Gbitps)
               .inter_latency(3_us);
  auto tp4 = strategy("tp4").tp(4).dp(8).zero(1).checkpoint(selective).micro_batch(1);
  auto search = strategy("search").tp({1, 2, 4}).pp({1, 2}).zero(any).checkpoint(any)
                    .micro_batch({1, 2});
  auto p = plan(m, c, training().global_batch(256), {tp4, search});
  same_program(p, load_plan("8b_gh200_own_gpu.dtp"));
}

TEST_CASE("defaults are lowering's") {
  auto text = load_text(
      "model m { layers = 2; hidden = 64; heads = 4; vocab = 100; seq_len = 16; dropout = true }\n"
      "gpu g : A100_SXM_80GB { peak_flops = 100 TFLOP/s }\n"
      "cluster c { nodes = 1; gpus_per_node = 2; gpu = g }\n"
      "training { global_batch = 8; base_lr = 3e-4; base_batch = 4; grad_precision = fp32;\n"
      "           overlap_grad_sync = false; grad_reduce = all_reduce }\n"
      "strategy { shard = {node, 2}; order = \"pp-dp-cp-tp\"; sequence_parallel = auto }\n"
      "strategy { virtual_stages = 2..3; cp = 2; ep = 1 }\n"
      "strategy named { shard = 4; checkpoint = {none, full} }\n");
  auto m = model("m").layers(2).hidden(64).heads(4).vocab(100).seq_len(16).dropout(true).build();
  CHECK(m.kv_heads == 4);
  CHECK(m.ffn == 256);
  auto g = gpu("g", catalog_gpu("A100_SXM_80GB")).peak_flops(100_TFLOPps);
  auto c = cluster("c").nodes(1).gpus_per_node(2).gpu(g);
  auto p = plan(m, c,
                training().global_batch(8).base_lr(3e-4).base_batch(4).grad_precision(planner::precision::fp32)
                    .overlap_grad_sync(false).grad_reduce_scatter(false),
                {strategy().shard({node, ranks(2)}).order("pp-dp-cp-tp").sequence_parallel(any),
                 strategy().virtual_stages(range(2, 3)).cp(2).ep(1),
                 strategy("named").shard(4).checkpoint({none, full})});
  same_program(p, text);
  CHECK(p.strategies[0].name == "strategy#1");
  CHECK(p.strategies[1].name == "strategy#2");
  // The catalog's A100 writes its own fp8 and fp32 peaks, so they are kept.
  CHECK(p.cluster.device.peak_flops_fp8 == catalog_gpu("A100_SXM_80GB").peak_flops_fp8);
  auto fresh = gpu("x").memory(80_GiB).peak_flops(100_TFLOPps).hbm_bandwidth(2_TBps)
                   .intra_node(300_GBps).build();
  CHECK(fresh.peak_flops_fp8 == 100_TFLOPps);
  CHECK(fresh.peak_flops_fp32 == 50_TFLOPps);
  CHECK(fresh.reserved == 2_GiB);
  CHECK(fresh.intra_latency == 5_us);
  CHECK(fresh.inter_latency == 10_us);
}

TEST_CASE("op-level checkpointing and the unfused loss, in C++ and in text") {
  auto text = load_text(
      "model m : llama3_8b { }\n"
      "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
      "training { global_batch = 16; cross_entropy = unfused }\n"
      "strategy titan { zero = 3; checkpoint = ops; micro_batch = 2 }\n"
      "strategy some { checkpoint = {ops, selective} }\n");
  auto p = plan(model("m", preset_model("llama3_8b")), cluster("c").nodes(1).gpus_per_node(8).gpu(catalog_gpu("H100_SXM")),
                training().global_batch(16).cross_entropy(unfused),
                {strategy("titan").zero(3).checkpoint(ops).micro_batch(2), strategy("some").checkpoint({ops, selective})});
  same_program(p, text);
  CHECK(p.training.cross_entropy == planner::cross_entropy_kind::unfused);
  CHECK(p.strategies[0].fixed().checkpoint == planner::checkpoint_mode::ops);
  CHECK(planner::dump(p).find("  cross_entropy     unfused\n") != std::string::npos);
}

TEST_CASE("misuse is reported as lowering reports the same text") {
  CHECK_THROWS_WITH(model("m").layers(2).build(),
                    "model 'm' is missing required keys 'hidden', 'heads', 'vocab' and 'seq_len'");
  CHECK_THROWS_WITH(model("m").layers(0), "'layers' must be at least 1, got 0");
  CHECK_THROWS_WITH(training().grad_precision(planner::precision::fp8),
                    "expected 'bf16', 'fp16' or 'fp32' for 'grad_precision', got 'fp8'");
  CHECK_THROWS_WITH(model("m").layers(2).hidden(64).heads(3).vocab(1).seq_len(1).build(),
                    "'hidden' (64) must be a multiple of 'heads' (3) unless 'head_dim' gives each head's width");
  CHECK_THROWS_WITH(cluster("c").nodes(2).gpus_per_node(8).gpu("H100_SXM").build(),
                    "cluster 'c' has 2 nodes but no 'inter_node' bandwidth (e.g. 'inter_node = 8 x "
                    "400 Gbit/s')");
  CHECK_THROWS_WITH(cluster("c").gpu("H100_SMX"), "unknown gpu 'H100_SMX'; did you mean 'H100_SXM'?");
  CHECK_THROWS_WITH(preset_model("lama2_7b"), "unknown model 'lama2_7b'; did you mean 'llama2_7b'?");
  CHECK_THROWS_WITH(training().build(), "the 'training' block is missing required key 'global_batch'");
  CHECK_THROWS_WITH(strategy().zero(4), "'zero' must be between 0 and 3, got 4");
  CHECK_THROWS_WITH(strategy().tp({1, 2, 2}), "2 appears twice in the set");
  CHECK_THROWS_WITH(strategy().tp({}), "an empty set leaves no value for 'tp'");
  CHECK_THROWS_WITH(strategy().pp(range(4, 1)), "range 4..1 is empty: its first bound is above its last");
  CHECK_THROWS_WITH(strategy().order("tp-dp-pp"),
                    "expected an order of tp, cp, dp and pp such as \"tp-cp-dp-pp\" for 'order', got "
                    "\"tp-dp-pp\"");
  CHECK_THROWS_WITH(gpu("g").memory(80_GiB).peak_flops(1_TFLOPps).hbm_bandwidth(1_TBps)
                        .intra_node(1_GBps).reserved(80_GiB).build(),
                    "'reserved' (80.0 GiB) leaves nothing of 'memory' (80.0 GiB) for the job");
  CHECK_THROWS_AS(gpu("g").matmul_efficiency(1.5), error);
  // What cannot be planned exactly, as lowering rejects it.
  CHECK_THROWS_WITH(cluster("c").nodes(1).gpus_per_node(5000).gpu("H100_SXM").build(),
                    "gpus_per_node = 5000: dtplan plans nodes of at most 4,096 GPUs");
  CHECK_THROWS_WITH(cluster("c").nodes(300'000'000'000).gpus_per_node(8).gpu("H100_SXM").build(),
                    "cluster 'c' has 300000000000 nodes of 8 GPUs; dtplan plans clusters of at most 16,777,216 GPUs");
  CHECK_THROWS_WITH(model("m").layers(2).hidden(4096).heads(32).vocab(INT64_MAX).seq_len(8).build(),
                    "model 'm' has more parameters than fit in 64 bits");
  auto const small = model("m").layers(2).hidden(64).heads(2).vocab(128).seq_len(1 << 20).build();
  auto const one = cluster("c").nodes(1).gpus_per_node(8).gpu("H100_SXM").build();
  CHECK_THROWS_WITH(plan(small, one, training().global_batch(std::int64_t{1} << 50).build(), {}),
                    "global_batch = 1125899906842624 sequences of 1048576 tokens: more tokens per step than fit in "
                    "64 bits");
  // fp4 on a GPU without fp4 tensor cores, as lowering says it; a GPU built
  // with an fp4 peak runs it.
  auto const fp4_model = model("m", preset_model("llama3_8b")).precision(fp4).build();
  CHECK_THROWS_WITH(plan(fp4_model, one, training().global_batch(16).build(), {}),
                    "precision = fp4 needs a GPU with fp4 tensor cores; gpu 'H100_SXM' has none (it sets no "
                    "peak_flops_fp4)");
  auto const own = cluster("c").nodes(1).gpus_per_node(8)
                       .gpu(gpu("H100_fp4", catalog_gpu("H100_SXM")).peak_flops_fp4(3958_TFLOPps)).build();
  CHECK(plan(fp4_model, own, training().global_batch(16).build(), {}).cluster.device.peak_flops_fp4 == 3958_TFLOPps);
}

TEST_CASE("the time-model figures of a gpu, in C++ and in text") {
  auto text = load_text(
      "model m : llama3_8b { }\n"
      "gpu g : H100_SXM { sm_count = 132; attention_efficiency = 40 %; kernel_latency = 4 us;\n"
      "                   overlap_slowdown = 0.2; step_overhead = 30 ms; dispatch_latency = 8 us }\n"
      "cluster c { nodes = 1; gpus_per_node = 8; gpu = g }\n"
      "training { global_batch = 16 }\n");
  auto g = gpu("g", catalog_gpu("H100_SXM")).sm_count(132).attention_efficiency(0.4).kernel_latency(4_us)
               .overlap_slowdown(0.2).step_overhead(30_ms).dispatch_latency(8_us);
  auto p = plan(model("m", preset_model("llama3_8b")), cluster("c").nodes(1).gpus_per_node(8).gpu(g),
                training().global_batch(16));
  same_program(p, text);
  CHECK(p.cluster.device.sm_count == 132);
  CHECK(p.cluster.device.dispatch_latency == 8_us);
  CHECK_THROWS_WITH(gpu("g").attention_efficiency(0), "'attention_efficiency' must be above zero, got 0");
  CHECK_THROWS_WITH(gpu("g").step_overhead(planner::seconds(-1)), "expected a time for 'step_overhead', got -1.00 s");
}

TEST_CASE("any key is set by its name, checked as the text is") {
  using namespace dtplan::planner::edsl;
  using namespace dtplan::planner::literals;
  planner::training const t = training().global_batch(64).with("grad_precision", "fp32").with("overlap_grad_sync", false);
  CHECK(t.grad_precision == planner::precision::fp32);
  CHECK_FALSE(t.overlap_grad_sync);
  planner::gpu const g = gpu("g", catalog_gpu("H100_SXM")).with("reserved", 6_GiB).with("sm_count", 114);
  CHECK(g.reserved == 6_GiB);
  CHECK(g.sm_count == 114);
  auto thrown = [](auto const& f) {
    try {
      f();
    } catch (error const& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  CHECK(thrown([] { training().with("grad_precison", "fp32"); }) ==
        "unknown key 'grad_precison' in the 'training' block; did you mean 'grad_precision'?");
  CHECK(thrown([] { training().with("reduce_dtype", "fp32"); }) ==
        "unknown key 'reduce_dtype' in the 'training' block; did you mean 'grad_precision'?");
  CHECK(thrown([] { training().with("grad_precision", "fp64"); }) ==
        "expected 'bf16', 'fp16' or 'fp32' for 'grad_precision', got 'fp64'");
}

TEST_CASE("a framework by name, in C++ and in text, resolved by plan() as lowering resolves it") {
  auto text = load_text(
      "model m : llama3_8b { }\n"
      "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
      "training { global_batch = 16; framework = megatron; tp_comm_overlap = true; grad_precision = bf16 }\n"
      "strategy s { tp = 2; zero = 1 }\n");
  auto const m = model("m", preset_model("llama3_8b")).build();
  auto const c = cluster("c").nodes(1).gpus_per_node(8).gpu(catalog_gpu("H100_SXM")).build();
  auto p = plan(m, c,
                training().global_batch(16).framework("megatron").with("tp_comm_overlap", true)
                    .grad_precision(planner::precision::bf16),
                {strategy("s").tp(2).zero(1)});
  same_program(p, text);
  CHECK(p.training.attention_kernel == planner::attention_backend::fused);  // auto on Hopper
  CHECK(p.training.grad_bucket == planner::bucket_rule::scaled);
  CHECK(p.training.tp_comm_overlap);
  auto q = plan(m, c,
                training().global_batch(16).with("framework", "megatron").with("tp_comm_overlap", true)
                    .with("grad_precision", "bf16"),
                {strategy("s").tp(2).zero(1)});
  same_program(q, text);
  // Without a framework a run is generic, the catalog's.
  auto plain = plan(m, c, training().global_batch(16));
  CHECK(plain.framework.name == "generic");
  CHECK(plain.framework.limits == planner::framework_limits{});
  CHECK(planner::dump(plain).find("framework generic\n") != std::string::npos);
}

TEST_CASE("a framework of the program's own, built in C++ as the text writes it") {
  auto text = load_text(
      "framework mine : megatron { description = \"ours\"; zero_stages = {0, 1, 3}; checkpoint_modes = {none, full}\n"
      "  hybrid_sharding = false; sequence_parallel = false; pipeline_max_zero = 0; dispatch_latency = 6 us; step_overhead = 50 ms\n"
      "  attention_backend = auto; grad_sync = per_micro_batch; ddp_bucket_size = 64 MiB }\n"
      "model m : llama3_8b { }\n"
      "cluster c { nodes = 1; gpus_per_node = 8; gpu = V100_SXM_32GB }\n"
      "training { global_batch = 16; framework = mine; nvls = true }\n");
  planner::framework const mine = framework("mine", catalog_framework("megatron"))
                                      .description("ours")
                                      .zero_stages({0, 1, 3})
                                      .checkpoint_modes({none, full})
                                      .hybrid_sharding(false)
                                      .sequence_parallel(false)
                                      .pipeline_max_zero(0)
                                      .dispatch_latency(6_us)
                                      .step_overhead(50_ms)
                                      .with("attention_backend", "auto")
                                      .with("grad_sync", "per_micro_batch")
                                      .with("ddp_bucket_size", 64_MiB);
  auto p = plan(model("m", preset_model("llama3_8b")),
                cluster("c").nodes(1).gpus_per_node(8).gpu(catalog_gpu("V100_SXM_32GB")),
                training().global_batch(16).with("framework", "mine").with("nvls", true), {}, mine);
  same_program(p, text);
  CHECK(p.framework.limits.zero_stages == std::vector<int>{0, 1, 3});
  CHECK_FALSE(p.framework.limits.sequence_parallel);
  CHECK(p.training.attention_kernel == planner::attention_backend::unfused);  // auto on Volta
  CHECK(p.framework.behaviours.attention_kernel == planner::attention_backend::unfused);
  CHECK(p.training.grad_sync == planner::grad_sync_mode::per_micro_batch);
  CHECK(p.training.nvls);
  // The same sets by name.
  planner::framework const named = framework("n").with("zero_stages", {3, 0}).with("checkpoint_modes", {"full", "none"});
  CHECK(named.limits.zero_stages == std::vector<int>{0, 3});
  CHECK(named.limits.checkpoint_modes ==
        std::vector<planner::checkpoint_mode>{planner::checkpoint_mode::none, planner::checkpoint_mode::full});
  CHECK(framework("n").with("zero_stages", 1).build().limits.zero_stages == std::vector<int>{1});
}

TEST_CASE("a framework misused is reported in lowering's words") {
  CHECK_THROWS_WITH(catalog_framework("megatorn"), "unknown framework 'megatorn'; did you mean 'megatron'?");
  auto const m = model("m", preset_model("llama3_8b")).build();
  auto const c = cluster("c").nodes(1).gpus_per_node(8).gpu("H100_SXM").build();
  CHECK_THROWS_WITH(plan(m, c, training().global_batch(8).framework("torchtitn")),
                    "unknown framework 'torchtitn'; did you mean 'torchtitan'?");
  CHECK_THROWS_WITH(framework("f").zero_stages({0, 4}), "'zero_stages' must be between 0 and 3, got 4");
  CHECK_THROWS_WITH(framework("f").zero_stages({1, 1}), "1 appears twice in the set");
  CHECK_THROWS_WITH(framework("f").zero_stages({}), "an empty set leaves no value for 'zero_stages'");
  CHECK_THROWS_WITH(framework("f").with("checkpoint_modes", {"none", "partial"}),
                    "expected 'none', 'selective', 'full' or 'ops' for 'checkpoint_modes', got 'partial'");
  CHECK_THROWS_WITH(framework("f").with("tensor_parallel", {1, 2}),
                    "'tensor_parallel' takes 'true' or 'false', not a set; in a 'framework' block only "
                    "'zero_stages' and 'checkpoint_modes' take a set");
  CHECK_THROWS_WITH(training().with("attention_backend", "flash4"),
                    "expected 'flash', 'flash3', 'fused', 'triton', 'unfused', 'auto' or 'flex' for 'attention_backend', got "
                    "'flash4'");
  CHECK_THROWS_WITH(framework("f").with("tensor_paralel", false),
                    "unknown key 'tensor_paralel' in this 'framework' block; did you mean 'tensor_parallel'?");
  CHECK_THROWS_WITH(training().with("cuda_graphs", 1), "expected 'true' or 'false' for 'cuda_graphs', got 1");
  CHECK_THROWS_WITH(training().with("timing_log_level", 3), "'timing_log_level' must be between 0 and 2, got 3");
  CHECK_THROWS_WITH(gpu("g").with("generation", "kepler"),
                    "expected 'volta', 'ampere', 'hopper', 'blackwell' or 'cdna3' for 'generation', got 'kepler'");
}
