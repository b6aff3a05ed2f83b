// Export then import gives the same program: for every plan of plans/ (its
// fixed strategies and the best its search finds) and each framework whose
// job dtplan writes, the job read back lowers to the IR the plan was costed
// from (`--dump ir` equal) and costs the same step. A plan the framework
// cannot run is refused with its reason, and the refusals are the ones
// listed here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "codegen/framework_export.hpp"
#include "dsl/parse.hpp"
#include "planner/import/import.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/session.hpp"
#include "framework_jobs.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

// The strategy as a fixed block writes it: every key one value.
strategy_spec written(strategy const& s, std::string name) {
  strategy_spec spec;
  spec.name = std::move(name);
  spec.dp = key_choice<std::int64_t>::one(s.dp);
  spec.tp = key_choice<std::int64_t>::one(s.tp);
  spec.pp = key_choice<std::int64_t>::one(s.pp);
  spec.cp = key_choice<std::int64_t>::one(s.cp);
  spec.ep = key_choice<std::int64_t>::one(s.ep);
  // Experts whole on a rank under tp (etp 1): the job says so; etp = tp
  // is the default either way.
  if (s.etp > 0 && s.etp != s.tp) spec.etp = key_choice<std::int64_t>::one(s.etp);
  spec.zero = key_choice<std::int64_t>::one(s.zero);
  spec.shard = key_choice<shard_group>::one(s.shard);
  spec.checkpoint = key_choice<checkpoint_mode>::one(s.checkpoint);
  spec.micro_batch = key_choice<std::int64_t>::one(s.micro_batch);
  spec.sequence_parallel = key_choice<bool>::one(s.sequence_parallel);
  spec.virtual_stages = key_choice<std::int64_t>::one(s.virtual_stages);
  spec.order = key_choice<rank_order>::one(s.order);
  return spec;
}

struct outcome {
  int round_trips = 0;
  std::vector<std::string> refused;       // "case: reason"
  std::vector<std::string> approximated;  // "case: warning" of what the job cannot say
};

// Exports `pl` as a `f` job, reads it back against the plan's file, and
// compares.
void round_trip(test::framework_case const& c, outcome& out) {
  auto const& label = c.label;
  auto const& pl = c.plan;
  auto const& p = *c.program;
  auto const f = c.format;
  auto const& path = c.path;
  if (!pl.valid) {
    // The first error (`errors` holds the plan's warnings too).
    auto it = std::find_if(pl.errors.begin(), pl.errors.end(),
                           [](dsl::diagnostic const& d) { return d.level == dsl::severity::error; });
    REQUIRE(it != pl.errors.end());
    out.refused.push_back(fmt::format("{}: {}", label, it->message));
    return;
  }
  if (auto why = codegen::export_refusal(f, p, pl)) {
    out.refused.push_back(fmt::format("{}: {}", label, *why));
    return;
  }
  INFO(label);
  dsl::diagnostics warnings;
  auto files = codegen::export_job(f, p, pl, warnings);
  if (!warnings.empty()) {
    // The job runs otherwise than planned in what it cannot say: no round trip.
    for (auto const& w : warnings.list()) out.approximated.push_back(fmt::format("{}: {}", label, w.message));
    return;
  }

  dsl::source_manager sources;
  dsl::diagnostics diags;
  auto const file = sources.add(path, *dsl::read_file(path));
  auto text_of = [&](std::string const& n) {
    auto it = std::find_if(files.begin(), files.end(), [&](codegen::job_file const& j) { return j.name == n; });
    REQUIRE(it != files.end());
    return it->text;
  };
  job_source job;
  job.format = f;
  std::string const config = f == job_format::torchtitan ? "job.toml" : "args.txt";
  job.file = sources.add(config, text_of(config));
  job.open = [&](std::string const& named) -> std::variant<std::uint32_t, std::string> {
    if (named != "ds_config.json") return "not ds_config.json";
    return sources.add(named, text_of(named));
  };
  // The file as the plan was made from it, its framework the job's: the
  // training keys it writes for another framework stay (import.cpp's
  // fit_training_to_job; the import's own test is frameworks.sh's).
  lower_options as_planned;
  auto const set = sources.add("<--set>", fmt::format("training.framework={}", name(f)));
  as_planned.settings.push_back(*dsl::parse_setting(sources, set, diags));
  auto imported = load_job(sources, file, job, as_planned, diags);
  INFO(dsl::format(diags, sources));
  REQUIRE(imported);
  // Nothing to say but what the flavor always says: its FlexAttention's
  // mask is costed as causal.
  for (auto const& d : diags.list())
    CHECK(d.message ==
          "torchtitan's deepseek_v3 '671B' runs FlexAttention with a block-causal mask: costed as causal attention "
          "over the whole sequence, the most it does (a sequence of several documents attends within each)");

  auto expected = p;
  expected.strategies = {written(pl.s, std::string(name(f)))};
  CHECK(dump(*imported) == dump(expected));

  REQUIRE(imported->strategies.size() == 1);
  analytic_cost_model const model;
  auto const& spec = imported->strategies.front();
  auto again = evaluate(*imported, spec, spec.fixed(), model, spec.name);
  REQUIRE(again.valid);
  CHECK(again.time->step.value() == pl.time->step.value());
  CHECK(again.memory.total.value() == pl.memory.total.value());
  ++out.round_trips;
}

}  // namespace

TEST_CASE("every plan's strategies and best search result survive export and import for each framework") {
  outcome out;
  for (auto const& c : test::framework_cases()) round_trip(c, out);
  std::string listed;
  for (auto const& r : out.refused) listed += "  \"" + r + "\",\n";
  listed += "--\n";
  for (auto const& r : out.approximated) listed += "  \"" + r + "\",\n";
  INFO(listed);
  // Each refusal is a strategy the framework does not run, or cannot write
  // down: the searches pick within the framework presets' limits, which
  // allow a few the job cannot express (torchtitan: Megatron's selective
  // recomputation, DDP beside tensor parallelism).
  std::vector<std::string> const refused{
      "13b_4node_a100_ethernet.dtp tp_in_node torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, "
      "not zero = 1",
      "1b_1node.dtp data_parallel torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "405b_1024_h100.dtp llama3_like torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "405b_1024_h100.dtp sharded megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "405b_1024_h100.dtp llama3_like deepspeed: framework 'deepspeed' does not split a pipeline with "
      "account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split",
      "405b_1024_h100.dtp sharded deepspeed: framework 'deepspeed' runs ZeRO stage 1 at most with a "
      "pipeline, not zero = 3 with pp = 2",
      "405b_gb200_nvl72.dtp mlperf_v50 torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "405b_gb200_nvl72.dtp search#1 torchtitan: torchtitan runs asynchronous tensor parallelism only "
      "compiled (tp_comm_overlap needs fused_elementwise = true, compile.enable)",
      "405b_gb200_nvl72.dtp mlperf_v50 deepspeed: framework 'deepspeed' does not split a pipeline with "
      "account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split",
      "70b_16node_h100_ib.dtp megatron_3d torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not "
      "zero = 1",
      "70b_16node_h100_ib.dtp hsdp megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "70b_16node_h100_ib.dtp megatron_3d deepspeed: framework 'deepspeed' does not run interleaved "
      "pipelines (virtual_stages = 5)",
      "7b_2node.dtp current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "8b_gh200_own_gpu.dtp tp4 torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "8b_torchtitan_h100.dtp fsdp megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "8b_torchtitan_h100.dtp hsdp_tp2 megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "8b_torchtitan_h100.dtp fsdp deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "8b_torchtitan_h100.dtp hsdp_tp2 deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "deepseek_v3_megatron.dtp recipe torchtitan: framework 'torchtitan' does not split a pipeline with "
      "num_layers_in_first_pipeline_stage = 3, num_layers_in_last_pipeline_stage = 2",
      "deepseek_v3_megatron.dtp recipe deepspeed: framework 'deepspeed' does not split a pipeline with "
      "num_layers_in_first_pipeline_stage = 3, num_layers_in_last_pipeline_stage = 2",
      "deepseek_v3_torchtitan.dtp fsdp_ep64 megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "deepseek_v3_torchtitan.dtp fsdp_ep64 deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "deepseek_v3_torchtitan.dtp search#1 deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "gpt3_175b_megatron_h100.dtp mlperf_v41 torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not "
      "zero = 1",
      "gpt3_175b_megatron_h100.dtp search#1 torchtitan: torchtitan runs asynchronous tensor parallelism only "
      "compiled (tp_comm_overlap needs fused_elementwise = true, compile.enable)",
      "gpt3_175b_megatron_h100.dtp mlperf_v41 deepspeed: framework 'deepspeed' does not run interleaved "
      "pipelines (virtual_stages = 6)",
      "gpt3_175b_megatron_h100.dtp search#1 deepspeed: Megatron-DeepSpeed trains in bf16, fp16 or fp32, not fp8",
      "llama4_maverick_megatron.dtp recipe torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "llama4_maverick_megatron.dtp recipe deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "llama4_maverick_megatron.dtp search#1 deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "mixtral_8x7b_4node_h100.dtp example torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "mixtral_8x7b_4node_h100.dtp example deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "mixtral_8x7b_4node_h100.dtp search#1 deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "qwen3_30b_a3b_megatron.dtp recipe torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "qwen3_30b_a3b_megatron.dtp recipe deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "qwen3_30b_a3b_megatron.dtp search#1 deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "qwen_moe_a2_7b_torchtitan.dtp fsdp_ep4 megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "qwen_moe_a2_7b_torchtitan.dtp fsdp_ep4 deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "qwen_moe_a2_7b_torchtitan.dtp search#1 deepspeed: dtplan writes mixture-of-experts jobs for megatron and "
      "torchtitan only, not deepspeed",
      "70b_16node_h100_ib.dtp[fp8] megatron_3d torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, "
      "not zero = 1",
      "70b_16node_h100_ib.dtp[fp8] hsdp megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "70b_16node_h100_ib.dtp[fp8] megatron_3d deepspeed: framework 'deepspeed' does not run interleaved "
      "pipelines (virtual_stages = 5)",
      "70b_16node_h100_ib.dtp[fp8] hsdp deepspeed: Megatron-DeepSpeed trains in bf16, fp16 or fp32, not fp8",
      "7b_2node.dtp[fp16] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "405b_gb200_nvl72.dtp[fp4] mlperf_v50 torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "405b_gb200_nvl72.dtp[fp4] mlperf_v50 deepspeed: framework 'deepspeed' does not split a pipeline with "
      "account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split",
      "70b_16node_h100_ib.dtp[zero3] megatron_3d megatron: framework 'megatron' runs ZeRO stage 0 or 1, "
      "not zero = 3",
      "70b_16node_h100_ib.dtp[zero3] hsdp megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero "
      "= 3",
      "70b_16node_h100_ib.dtp[zero3] megatron_3d deepspeed: framework 'deepspeed' does not run interleaved "
      "pipelines (virtual_stages = 5)",
      "7b_2node.dtp[hybrid] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "7b_2node.dtp[hybrid] current deepspeed: DeepSpeed shards ZeRO-1 and ZeRO-2 state over every "
      "data-parallel rank; a smaller shard group (MiCS, zero_optimization.mics_shard_size) is ZeRO-3's",
      "7b_2node.dtp[ops] current megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "7b_2node.dtp[ops] current deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "7b_2node.dtp[uneven] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "7b_2node.dtp[uneven] current deepspeed: framework 'deepspeed' does not run interleaved pipelines "
      "(virtual_stages = 3)",
      "7b_2node.dtp[complex_rotary] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not "
      "zero = 1",
      "7b_2node.dtp[head_dim] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "7b_2node.dtp[qk_norm] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "7b_2node.dtp[qk_norm] current deepspeed: Megatron-DeepSpeed 4efb479 has no q/k norms (megatron/arguments.py "
      "has no --qk-layernorm); model 'llama2_7b' has them (qk_norm)",
      "7b_2node.dtp[modules] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "qwen3_30b_a3b_megatron.dtp[allgather] recipe torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, "
      "not zero = 1",
      "qwen3_30b_a3b_megatron.dtp[allgather] recipe deepspeed: dtplan writes mixture-of-experts jobs for megatron "
      "and torchtitan only, not deepspeed",
      "qwen3_30b_a3b_megatron.dtp[moe_modules] recipe torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, "
      "not zero = 1",
      "qwen3_30b_a3b_megatron.dtp[moe_modules] recipe deepspeed: dtplan writes mixture-of-experts jobs for megatron "
      "and torchtitan only, not deepspeed",
      "7b_2node.dtp[mla] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "7b_2node.dtp[mla] current deepspeed: Megatron-DeepSpeed 4efb479 has no multi-latent attention "
      "(megatron/arguments.py has no --multi-latent-attention)",
      "7b_2node.dtp[mtp] current torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, not zero = 1",
      "7b_2node.dtp[mtp] current deepspeed: Megatron-DeepSpeed 4efb479 has no multi-token prediction "
      "(megatron/arguments.py has no --mtp-num-layers); model 'llama2_7b' has it (mtp_layers)",
      "8b_torchtitan_h100.dtp[mtp] fsdp torchtitan: torchtitan v0.2.0's models have no multi-token prediction; "
      "model 'llama31_8b' has it (mtp_layers = 2)",
      "8b_torchtitan_h100.dtp[mtp] hsdp_tp2 torchtitan: torchtitan v0.2.0's models have no multi-token prediction; "
      "model 'llama31_8b' has it (mtp_layers = 2)",
      "8b_torchtitan_h100.dtp[mtp] fsdp megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "8b_torchtitan_h100.dtp[mtp] hsdp_tp2 megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "8b_torchtitan_h100.dtp[mtp] fsdp deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "8b_torchtitan_h100.dtp[mtp] hsdp_tp2 deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "8b_torchtitan_h100.dtp[cp_ring] fsdp megatron: framework 'megatron' runs ZeRO stage 0 or 1, not zero = 3",
      "8b_torchtitan_h100.dtp[cp_ring] hsdp_tp2 megatron: framework 'megatron' runs ZeRO stage 0 or 1, not "
      "zero = 3",
      "8b_torchtitan_h100.dtp[cp_ring] fsdp deepspeed: framework 'deepspeed' does not run context parallelism "
      "(cp = 2)",
      "8b_torchtitan_h100.dtp[cp_ring] hsdp_tp2 deepspeed: framework 'deepspeed' does not run checkpoint = ops",
      "1b_1node.dtp[bf16_state] data_parallel torchtitan: framework 'torchtitan' runs ZeRO stage 0 or 3, "
      "not zero = 1",
  };
  CHECK(out.refused == refused);
  // What a job cannot say, where the plan differs from what the framework
  // then runs: a warning at export, and no round trip to compare.
  std::vector<std::string> const approximated{
      "deepseek_v3_torchtitan.dtp search#1 megatron: the plan was costed with attention_backend = flex; a "
      "megatron job cannot say it and runs fused",
      "7b_2node.dtp[complex_rotary] current megatron: the plan was costed with fused_rotary = false; a megatron "
      "job cannot say it and runs true",
      "7b_2node.dtp[complex_rotary] current deepspeed: the plan was costed with fused_rotary = false; a "
      "deepspeed job cannot say it and runs true",
      "7b_2node.dtp[modules] current deepspeed: the plan was costed with recompute_modules other than "
      "{core_attn}; a deepspeed job cannot say it and recomputes the core attention alone",
      "1b_1node.dtp[bf16_state] data_parallel deepspeed: the plan was costed with "
      "optimizer_state_precision = bf16; a deepspeed job cannot say it and runs fp32",
  };
  CHECK(out.approximated == approximated);
  // Among them the Mixtral plan's two as Megatron-LM jobs and its best as
  // torchtitan's; the Qwen mixture's (a shared expert, experts of their own
  // width) as torchtitan's twice and as Megatron-LM's once; Maverick's
  // recipe and best (every other layer dense, --moe-layer-freq) as
  // Megatron-LM's; heads of their own width (--kv-channels) as Megatron-LM's
  // and DeepSpeed's; q/k norms (--qk-layernorm) as Megatron-LM's; Qwen3-30B-A3B's
  // recipe and best (heads 128 wide, q/k norms, experts whole under tp) as
  // Megatron-LM's; multi-latent attention (--multi-latent-attention) and
  // selective recomputation's modules (--recompute-modules) as Megatron-LM's;
  // DeepSeek-V3 as torchtitan's deepseek_v3 '671B' flavor, its fixed
  // strategy and its best (multi-latent attention, dense layers,
  // FlexAttention, op-level checkpointing under it).
  // (Llama 3's split of the 405B plan is Megatron-Core's and torchtitan's,
  // not Megatron-DeepSpeed's: its DeepSpeed search finds no plan.)
  CHECK(out.round_trips == 75);
}

TEST_CASE("a reduce precision apart from the kept one survives a DeepSpeed job, and only a DeepSpeed job") {
  // communication_data_type written by the export is read back as
  // grad_comm_precision; Megatron-LM reduces in the precision it keeps
  // (fp32 main gradients in its preset), so its job runs otherwise than
  // planned and says so.
  std::vector<test::framework_case> cases;
  test::add_cases(cases, std::string(DTPLAN_SOURCE_DIR) + "/plans/7b_2node.dtp",
                  {"training.grad_comm_precision=bf16"}, {}, false);
  outcome out;
  for (auto const& c : cases) round_trip(c, out);
  CHECK(out.round_trips == 1);  // deepspeed
  REQUIRE(out.approximated.size() == 1);
  CHECK(out.approximated.front() ==
        "7b_2node.dtp current megatron: the plan was costed with grad_comm_precision = bf16; a megatron job cannot "
        "say it and runs grad_precision's");
}

TEST_CASE("PyTorch pipelining's buffers are a behaviour a Megatron job cannot say, and only with a pipeline") {
  // The plan costed with a receive buffer per micro-batch: its pipelined
  // strategy exports to Megatron-LM with a warning (Megatron frees what it
  // sends); for a strategy without a pipeline the key changes nothing and
  // the export says nothing of it.
  std::vector<test::framework_case> cases;
  test::add_cases(cases, std::string(DTPLAN_SOURCE_DIR) + "/plans/7b_2node.dtp",
                  {"training.p2p_buffers_per_micro_batch=true", "current.pp=2", "current.dp=8"}, {}, false);
  test::add_cases(cases, std::string(DTPLAN_SOURCE_DIR) + "/plans/7b_2node.dtp",
                  {"training.p2p_buffers_per_micro_batch=true"}, "pp1", false);
  std::vector<std::string> warned;
  for (auto const& c : cases) {
    if (c.format != job_format::megatron) continue;
    REQUIRE(c.plan.valid);
    REQUIRE_FALSE(codegen::export_refusal(c.format, *c.program, c.plan));
    dsl::diagnostics warnings;
    codegen::export_job(c.format, *c.program, c.plan, warnings);
    for (auto const& w : warnings.list()) warned.push_back(fmt::format("{}: {}", c.label, w.message));
  }
  CHECK(warned == std::vector<std::string>{"7b_2node.dtp current megatron: the plan was costed with "
                                           "p2p_buffers_per_micro_batch = true; a megatron job cannot say it and "
                                           "runs false"});
}
