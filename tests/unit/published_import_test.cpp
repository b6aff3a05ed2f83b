// Real configurations from the frameworks' own repositories
// (tests/data/published/, with their provenance) read with --from and costed
// on the cluster each was written for: what each key becomes, which keys
// are reported unread and where, and that the job is valid and costed. The
// step's figure is not asserted: the catalog's efficiencies are refitted
// apart from this (the accuracy study).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>

#include "dsl/diagnostics.hpp"
#include "dsl/parse.hpp"
#include "planner/import/import.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/model/expected_error.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

std::string const published = std::string(DTPLAN_SOURCE_DIR) + "/tests/data/published/";

struct imported {
  dsl::source_manager sources;
  dsl::diagnostics diags;
  std::optional<program> p;
  std::optional<plan> costed;

  // `settings` as --set gives them ("strategy.micro_batch=2").
  imported(job_format f, std::string const& dtp, std::string const& job,
           std::initializer_list<char const*> settings = {}) {
    auto const file = sources.add(dtp, *dsl::read_file(published + dtp));
    lower_options options;
    for (auto const* text : settings)
      options.settings.push_back(*dsl::parse_setting(sources, sources.add("<--set>", text), diags));
    job_source src{f, sources.add(job, *dsl::read_file(published + job)), {}};
    auto const dir = std::filesystem::path(job).parent_path();
    src.open = [this, dir](std::string const& path) -> std::variant<std::uint32_t, std::string> {
      auto full = (dir / path).string();
      auto text = dsl::read_file(published + full);
      if (!text) return "cannot read " + full;
      return sources.add(full, std::move(*text));
    };
    p = load_job(sources, file, src, options, diags);
    if (p && p->strategies.size() == 1) {
      analytic_cost_model const model;
      auto const& spec = p->strategies.front();
      costed = evaluate(*p, spec, spec.fixed(), model, spec.name);
    }
  }

  // The costed step's error against a measured one (0.1: 10 % slow).
  [[nodiscard]] double error_against(double measured_s) const {
    return costed->time->step.value() / measured_s - 1;
  }

  // Each warning as "line:col message", in order.
  [[nodiscard]] std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    for (auto const& d : diags.list()) {
      auto const pos = sources.file(d.where.file).position_of(d.where.begin);
      out.push_back(fmt::format("{}:{} {}", pos.line, pos.column, d.message));
    }
    return out;
  }
};

// The job is valid and costed, its step a finite time.
void check_costed(imported const& r) {
  REQUIRE(r.costed);
  CHECK(r.costed->valid);
  REQUIRE(r.costed->time);
  CHECK(std::isfinite(r.costed->time->step.value()));
  CHECK(r.costed->time->step.value() > 0);
}

// The key each warning names (its first quoted word), in order.
std::vector<std::string> keys_of(std::vector<std::string> const& warnings) {
  std::vector<std::string> out;
  for (auto const& w : warnings) {
    auto const open = w.find("'", w.find("'s '") == std::string::npos ? 0 : w.find("'s '") + 2);
    auto const close = w.find("'", open + 1);
    out.push_back(w.substr(open + 1, close - open - 1));
  }
  return out;
}

// What a job that does not load says ("" when it loads), costed on `file`.
std::string job_errors(dsl::source_manager& sources, std::uint32_t file, job_format f, std::string name,
                       std::string text) {
  dsl::diagnostics diags;
  job_source job{f, sources.add(std::move(name), std::move(text)), {}};
  if (load_job(sources, file, job, {}, diags)) return "";
  return dsl::format(diags, sources);
}

}  // namespace

TEST_CASE("torchtitan's llama3_8b.toml (v0.2.0) costs on 64 A100s") {
  imported r(job_format::torchtitan, "torchtitan_llama3_8b.dtp", "torchtitan_llama3_8b.toml");
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = *r.p;
  CHECK(p.model.name == "llama3_8b");
  CHECK(p.model.layers == 32);
  CHECK(p.model.kv_heads == 8);
  CHECK(p.model.seq_len == 8192);
  CHECK(p.model.prec == precision::bf16);
  CHECK(p.model.optimizer == optimizer_kind::adamw);
  CHECK(p.training.framework == "torchtitan");
  CHECK(p.training.global_batch == 64);  // local_batch_size 1 x 64 data-parallel ranks
  CHECK(p.training.grad_precision == precision::fp32);
  CHECK_FALSE(p.training.fused_elementwise);  // compile.enable = false
  REQUIRE(p.strategies.size() == 1);
  auto const s = p.strategies.front().fixed();
  CHECK(s.dp == 64);
  CHECK(s.tp == 1);
  CHECK(s.pp == 1);
  CHECK(s.zero == 3);  // FSDP2 over data_parallel_shard_degree = -1: every rank
  CHECK(s.shard == shard_group{});
  CHECK(s.checkpoint == checkpoint_mode::ops);  // selective, selective_ac_option = "op"
  CHECK(s.micro_batch == 1);
  auto const w = r.warnings();
  CHECK(keys_of(w) == std::vector<std::string>{
      "job.dump_folder", "job.description", "profiling.enable_profiling", "profiling.save_traces_folder",
      "profiling.profile_freq", "metrics.log_freq", "metrics.enable_tensorboard", "metrics.save_tb_folder",
      "model.hf_assets_path", "optimizer.lr", "optimizer.eps", "lr_scheduler.warmup_steps",
      "training.max_norm", "training.steps", "training.dataset", "checkpoint.enable", "checkpoint.folder",
      "checkpoint.interval", "checkpoint.last_save_model_only", "checkpoint.export_dtype",
      "checkpoint.async_mode", "quantize.linear.float8.enable_fsdp_float8_all_gather",
      "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp", "quantize.linear.float8.filter_fqns",
      "validation.enable", "validation.dataset", "validation.freq", "validation.steps"});
  CHECK(w.front() == "4:1 torchtitan's 'job.dump_folder' is not read: it does not change a step's time or memory");
  CHECK(w[21] == "62:1 torchtitan's 'quantize.linear.float8.enable_fsdp_float8_all_gather' is not read: it applies only "
                 "with the float8 converter in 'model.converters', which this job does not use");
  check_costed(r);
}

// torchtitan's Qwen3 32B preset ("8 H100 GPUs (with 96GiB memory)"): the
// flavor is the catalog's qwen3_32b, heads 128 wide with q/k norms. As
// written (FSDP over 8, full recomputation, two sequences of 4,096 a
// micro-batch, eager) it does not fit: the model state alone is 68.7 GiB a
// GPU and the unfused loss's fp32 buffers 13.9 GiB more at the loss. Its
// README says the configs are still to be tested; one sequence a micro-
// batch fits.
TEST_CASE("torchtitan's qwen3_32b.toml (v0.2.0): the catalog's Qwen3-32B, out of memory as written") {
  imported r(job_format::torchtitan, "torchtitan_qwen3_32b.dtp", "torchtitan_qwen3_32b.toml");
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = *r.p;
  CHECK(p.model.name == "qwen3_32b");
  CHECK(p.model.head_width() == 128);
  CHECK(p.model.q_width() == 8192);
  CHECK(p.model.qk_norm);
  CHECK(p.model.seq_len == 4096);  // training.seq_len
  CHECK(p.model.optimizer == optimizer_kind::adamw);
  CHECK(p.training.global_batch == 16);  // local_batch_size 2 x 8 data-parallel ranks
  REQUIRE(p.strategies.size() == 1);
  auto const s = p.strategies.front().fixed();
  CHECK(s.dp == 8);
  CHECK(s.zero == 3);
  CHECK(s.checkpoint == checkpoint_mode::full);
  CHECK(s.micro_batch == 2);
  REQUIRE(r.costed);
  CHECK_FALSE(r.costed->valid);
  CHECK(r.costed->memory.total.value() / (1024.0 * 1024 * 1024) == Approx(93.8).margin(0.05));
  imported one(job_format::torchtitan, "torchtitan_qwen3_32b.dtp", "torchtitan_qwen3_32b.toml",
               {"strategy.micro_batch=1"});
  check_costed(one);
  CHECK(one.costed->memory.total.value() / (1024.0 * 1024 * 1024) == Approx(83.1).margin(0.05));
}

TEST_CASE("Megatron-LM's GPT-3 175B example (core_v0.13.0) costs on 1,024 A100s") {
  imported r(job_format::megatron, "megatron_gpt3_175b.dtp", "megatron_gpt3_175b.args");
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = *r.p;
  CHECK(p.model.name == "gpt3");
  CHECK(p.model.layers == 96);
  CHECK(p.model.hidden == 12288);
  CHECK(p.model.heads == 96);
  CHECK(p.model.kv_heads == 96);
  CHECK(p.model.ffn == 4 * 12288);  // Megatron's default: no --ffn-hidden-size
  CHECK(p.model.mlp == mlp_kind::gelu);
  CHECK(p.model.tied_embeddings);  // no --untie-embeddings-and-output-weights
  CHECK(p.model.dropout);          // Megatron's default dropout 0.1
  CHECK(p.model.vocab == 50257);   // the file's: the arguments name a vocabulary file
  CHECK(p.model.seq_len == 2048);
  CHECK(p.model.prec == precision::fp16);
  CHECK(p.training.framework == "megatron");
  CHECK(p.training.global_batch == 1536);
  CHECK(p.training.grad_precision == precision::fp16);  // fp16 without --accumulate-allreduce-grads-in-fp32
  CHECK_FALSE(p.training.overlap_grad_sync);            // no --overlap-grad-reduce
  CHECK(p.training.attention_kernel == attention_backend::flash);  // auto on Ampere
  REQUIRE(p.strategies.size() == 1);
  auto const s = p.strategies.front().fixed();
  CHECK(s.dp == 8);
  CHECK(s.tp == 8);
  CHECK(s.pp == 16);
  CHECK(s.zero == 0);
  CHECK_FALSE(s.sequence_parallel);
  CHECK(s.checkpoint == checkpoint_mode::none);
  CHECK(s.micro_batch == 1);
  auto const w = r.warnings();
  CHECK(keys_of(w) == std::vector<std::string>{
      "--rampup-batch-size", "--train-iters", "--weight-decay", "--adam-beta1", "--adam-beta2",
      "--init-method-std", "--clip-grad", "--lr", "--lr-decay-style", "--min-lr", "--lr-warmup-fraction",
      "--lr-decay-iters", "--data-path", "--vocab-file", "--merge-file", "--split", "--log-interval",
      "--save-interval", "--eval-interval", "--save", "--load", "--eval-iters", "--tensorboard-dir"});
  CHECK(w.front() == "15:5 Megatron-LM's '--rampup-batch-size' is not modelled: the plan is costed at the full global "
                     "batch");
  CHECK(w[12] == "30:5 Megatron-LM's '--data-path' is not read: it does not change a step's time or memory");
  check_costed(r);
  CHECK(r.costed->grad_accum == 192);
}

TEST_CASE("Megatron-LM's GPT-3 175B example script, read whole, is the job of its arguments") {
  // The script as Megatron-LM ships it: its arrays expanded into the
  // torchrun command, each argument where the script writes it.
  imported whole(job_format::megatron, "megatron_gpt3_175b.dtp", "megatron_examples/train_gpt3_175b_distributed.sh");
  imported args(job_format::megatron, "megatron_gpt3_175b.dtp", "megatron_gpt3_175b.args");
  INFO(dsl::format(whole.diags, whole.sources));
  REQUIRE(whole.p);
  REQUIRE(args.p);
  check_costed(whole);
  check_costed(args);
  CHECK(whole.p->strategies.front().fixed() == args.p->strategies.front().fixed());
  CHECK(whole.costed->grad_accum == 192);
  CHECK(whole.costed->time->step.value() == args.costed->time->step.value());
  auto const w = whole.warnings();
  auto keys = keys_of(args.warnings());
  keys.insert(keys.end(), {"dgx_a100_128", "--master_addr", "--master_port"});
  CHECK(keys_of(w) == keys);
  CHECK(w.front() == "40:5 Megatron-LM's '--rampup-batch-size' is not modelled: the plan is costed at the full global "
                     "batch");
  // --nnodes $NUM_NODES: the value where NUM_NODES=1 writes it.
  CHECK(w[w.size() - 3] == "11:11 the launcher starts 1 node; cluster 'dgx_a100_128' has 128: the Megatron-LM job "
                           "is costed on the cluster");
}

TEST_CASE("Megatron-LM's Mixtral 8x7B example script reads as plans/ writes its strategy") {
  imported r(job_format::megatron, "megatron_examples/mixtral.dtp",
             "megatron_examples/train_mixtral_8x7b_distributed.sh");
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = *r.p;
  CHECK(p.model.experts == 8);
  CHECK(p.model.experts_per_token == 2);
  CHECK(p.model.seq_len == 4096);
  CHECK(p.training.global_batch == 256);
  CHECK(p.training.overlap_grad_sync);
  CHECK(p.training.overlap_param_gather);
  auto const s = p.strategies.front().fixed();
  CHECK(s.tp == 1);
  CHECK(s.pp == 4);
  CHECK(s.ep == 8);
  CHECK(s.dp == 8);
  CHECK(s.zero == 1);
  CHECK(s.micro_batch == 1);
  check_costed(r);
  auto const w = r.warnings();
  // The W&B arguments `if [ -n "${WANDB_API_KEY}" ]` adds: not set, as no
  // variable is when the script starts, so not added.
  CHECK(std::none_of(w.begin(), w.end(), [](std::string const& x) { return x.find("--wandb") != std::string::npos; }));
  CHECK(std::none_of(w.begin(), w.end(), [](std::string const& x) { return x.find("not read: it runs") != std::string::npos; }));
  // --moe-grouped-gemm: the local experts as one grouped GEMM (TEGroupedMLP), read.
  CHECK(p.training.grouped_gemm);
  CHECK(p.training.keys.count("grouped_gemm") == 1);
  CHECK(std::none_of(w.begin(), w.end(), [](std::string const& x) { return x.find("--moe-grouped-gemm") != std::string::npos; }));
  CHECK(std::count(w.begin(), w.end(),
                   "11:25 the launcher starts 1 node; cluster 'dgx_h100_4' has 4: the Megatron-LM job is costed "
                   "on the cluster") == 1);
}

TEST_CASE("Megatron-DeepSpeed's Llama 2 example with its ds_config.json costs on one node") {
  imported r(job_format::deepspeed, "megatron_deepspeed_llama2/cluster.dtp", "megatron_deepspeed_llama2/args.txt");
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = *r.p;
  CHECK(p.model.name == "llama2_style");
  CHECK(p.model.layers == 24);
  CHECK(p.model.hidden == 2048);
  CHECK(p.model.ffn == 5504);
  CHECK(p.model.heads == 16);
  CHECK(p.model.kv_heads == 4);  // --num-key-value-heads
  CHECK(p.model.mlp == mlp_kind::swiglu);
  CHECK_FALSE(p.model.tied_embeddings);
  CHECK_FALSE(p.model.dropout);  // --attention-dropout 0 --hidden-dropout 0
  CHECK(p.model.prec == precision::bf16);  // ds_config.json's bf16.enabled
  CHECK(p.training.framework == "deepspeed");
  CHECK(p.training.global_batch == 32);  // train_batch_size
  CHECK(p.training.attention_kernel == attention_backend::unfused);
  REQUIRE(p.strategies.size() == 1);
  auto const s = p.strategies.front().fixed();
  CHECK(s.dp == 2);
  CHECK(s.tp == 2);
  CHECK(s.pp == 2);
  CHECK(s.zero == 1);  // stage 0 in bf16: DeepSpeed's BF16_Optimizer shards the optimizer state
  CHECK(p.training.grad_reduce_scatter == false);
  CHECK(p.training.grad_precision == precision::fp32);
  CHECK(p.training.grad_comm_precision == precision::bf16);  // communication_data_type unwritten: bf16
  CHECK_FALSE(p.training.contiguous_gradients);  // the BF16_Optimizer's own fp32 buffers, no ZeRO buckets
  CHECK(s.micro_batch == 4);  // train_micro_batch_size_per_gpu
  CHECK(s.checkpoint == checkpoint_mode::none);
  auto const w = r.warnings();
  CHECK(keys_of(w) == std::vector<std::string>{
      "--train-iters", "--save", "--load", "--data-path", "--data-impl", "--tokenizer-type",
      "--tokenizer-model", "--split", "--distributed-backend", "--lr", "--lr-decay-style", "--min-lr",
      "--weight-decay", "--clip-grad", "--lr-warmup-iters", "--adam-beta1", "--adam-beta2", "--log-interval",
      "--save-interval", "--eval-interval", "--eval-iters", "--no-query-key-layer-scaling",
      "steps_per_print", "--node_rank", "--master_addr", "--master_port"});
  // --disable-bias-linear with --swiglu: the bias-free linears dtplan counts.
  CHECK(w[22] == "4:3 DeepSpeed's 'steps_per_print' is not read: it does not change a step's time or memory");
  CHECK(w[23] == "8:40 the launcher's '--node_rank' is not read: the cluster is the .dtp file's");
  // Llama 2's RMSNorm and rotary embeddings, as the arguments say them.
  CHECK(p.model.norm == norm_kind::rmsnorm);  // --normalization rmsnorm
  CHECK(p.model.position == position_kind::rotary);  // --use-rotary-position-embeddings
  check_costed(r);
  CHECK(r.costed->grad_accum == 4);
}

TEST_CASE("Megatron-DeepSpeed's Llama 2 example script, read whole with the ds_config.json its here-document writes") {
  imported whole(job_format::deepspeed, "megatron_deepspeed_llama2/cluster.dtp",
                 "megatron_deepspeed_llama2/pretrain_llama2_distributed.sh");
  imported args(job_format::deepspeed, "megatron_deepspeed_llama2/cluster.dtp", "megatron_deepspeed_llama2/args.txt");
  INFO(dsl::format(whole.diags, whole.sources));
  REQUIRE(whole.p);
  REQUIRE(args.p);
  check_costed(whole);
  CHECK(whole.p->strategies.front().fixed() == args.p->strategies.front().fixed());
  CHECK(whole.costed->time->step.value() == args.costed->time->step.value());
  CHECK(whole.costed->memory.total == args.costed->memory.total);
  auto const w = whole.warnings();
  // WANDB_ARGS is set under `if [ $LOG_TO_WANDB -eq 1 ]`, undecided.
  CHECK(std::count(w.begin(), w.end(),
                   "145:8 '$WANDB_ARGS' is a shell expansion dtplan cannot resolve: the arguments it gives are not "
                   "read") == 1);
}

TEST_CASE("BLOOM-176B's training job (BigScience tr11) costs within the error dtplan states for DeepSpeed on A100") {
  imported r(job_format::deepspeed, "bigscience_bloom_176b/cluster.dtp", "bigscience_bloom_176b/args.txt");
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = *r.p;
  CHECK(p.model.layers == 70);
  CHECK(p.model.hidden == 14336);
  CHECK(p.model.heads == 112);
  CHECK(p.model.seq_len == 2048);
  CHECK(p.model.prec == precision::bf16);
  CHECK(p.training.framework == "deepspeed");
  CHECK(p.training.global_batch == 2048);
  // ZERO_STAGE=0 with bf16: the BF16_Optimizer, ZeRO-1's memory with an
  // all-reduce of the fp32 gradients cast to bf16 (communication_data_type).
  CHECK_FALSE(p.training.grad_reduce_scatter);
  CHECK(p.training.grad_precision == precision::fp32);
  CHECK(p.training.grad_comm_precision == precision::bf16);
  REQUIRE(p.strategies.size() == 1);
  auto const s = p.strategies.front().fixed();
  CHECK(s.dp == 8);
  CHECK(s.tp == 4);
  CHECK(s.pp == 12);
  CHECK(s.zero == 1);
  CHECK(s.micro_batch == 2);
  CHECK(s.checkpoint == checkpoint_mode::full);  // --checkpoint-activations
  auto const w = r.warnings();
  CHECK(w.size() == 42);
  CHECK(w.front() == "24:5 Megatron-DeepSpeed's '--rampup-batch-size' is not modelled: the plan is costed at the full "
                     "global batch");
  // BLOOM's ALiBi (BigScience's --position-embedding-type alibi) and
  // Megatron's default LayerNorm.
  CHECK(p.model.position == position_kind::alibi);
  CHECK(p.model.norm == norm_kind::layernorm);
  check_costed(r);
  CHECK(r.costed->grad_accum == 128);
  // The log line at iteration 85,376 of tr11's README: 104.70 s per
  // iteration (calibration_runs.csv BLOOM-176B-gbs2048). The error dtplan
  // states for DeepSpeed on A100 is the median of its held-out runs.
  auto const stated = expected_error_for("A100_SXM_80GB", "deepspeed");
  REQUIRE(stated);
  double const error = r.error_against(104.70);
  INFO("predicted " << r.costed->time->step.value() << " s, error " << error);
  CHECK(std::abs(error) <= stated->median);
  // The cluster block's Omni-Path figure and the training block's blocked
  // launches, as the calibration's BLOOM rows: 104.9 s, +0.2 % (103 s,
  // -1.7 %, before Ampere's memory-bound share was the measured 0.89 and
  // its sustained clock fitted).
  CHECK(r.p->cluster.network_efficiency == Approx(0.462));
  CHECK(r.p->training.cuda_launch_blocking);
  CHECK(error == Approx(0.002).margin(0.002));
}

TEST_CASE("Megatron-LM's SC21 Table 1 jobs (2021) read as that code ran them and cost as the calibration prices them") {
  // 39.1B: local DDP, two pipeline stages.
  imported big(job_format::megatron, "megatron_sc21/selene_39b.dtp", "megatron_sc21/table1_39b.args");
  INFO(dsl::format(big.diags, big.sources));
  REQUIRE(big.p);
  auto const& p = *big.p;
  // Arguments today's Megatron-LM exits on: the code of 2021-22, its preset.
  CHECK(p.training.framework == "megatron_2021");
  CHECK(p.model.dropout);
  CHECK(p.model.prec == precision::fp16);
  CHECK(p.training.grad_precision == precision::fp16);
  CHECK_FALSE(p.training.overlap_grad_sync);             // --DDP-impl local: after the backward
  CHECK(p.training.ddp_bucket_size.value() > 1e15);      // in one all-reduce
  CHECK_FALSE(p.training.overlap_p2p_comm);              // the 2021 code's serial sends
  CHECK(p.training.attention_kernel == attention_backend::unfused);
  REQUIRE(p.strategies.size() == 1);
  auto const s = p.strategies.front().fixed();
  CHECK(s.dp == 32);
  CHECK(s.tp == 8);
  CHECK(s.pp == 2);
  CHECK(s.micro_batch == 4);
  CHECK(s.virtual_stages == 1);
  CHECK(s.checkpoint == checkpoint_mode::full);  // --checkpoint-activations
  auto const w = big.warnings();
  REQUIRE_FALSE(w.empty());
  CHECK(w.front() == "7:1 '--checkpoint-activations' is Megatron-LM's of 2021-23, which today's rejects: the job is "
                     "costed with framework = megatron_2021");
  check_costed(big);
  CHECK(big.costed->grad_accum == 12);
  // Table 1: 138 TFLOP/s a GPU, 14.45 s a step (calibration_runs.csv
  // MLM21-39B), which the calibration costs 4.6 % fast: the import is that
  // run to the figure.
  double const error = big.error_against(14.45);
  INFO("predicted " << big.costed->time->step.value() << " s, error " << error);
  CHECK(error == Approx(-0.0456).margin(0.001));

  // 1.7B: PyTorch's DDP under the backward.
  imported small(job_format::megatron, "megatron_sc21/selene_1_7b.dtp", "megatron_sc21/table1_1_7b.args");
  INFO(dsl::format(small.diags, small.sources));
  REQUIRE(small.p);
  CHECK(small.p->training.framework == "megatron_2021");
  CHECK(small.p->training.overlap_grad_sync);
  CHECK(small.p->training.ddp_bucket_size.value() == 25.0 * 1048576);
  CHECK_FALSE(small.p->training.gradient_as_bucket_view);  // torchDDP's copies of the gradients
  CHECK(big.p->training.gradient_as_bucket_view);           // local DDP's buffer
  check_costed(small);
  CHECK(small.error_against(3.53) == Approx(-0.104).margin(0.001));
}

TEST_CASE("Megatron-LM's arguments of two versions, or a DDP it does not have, are errors where the job writes them") {
  dsl::source_manager sources;
  auto const file = sources.add("c.dtp", "cluster c { nodes = 1; gpus_per_node = 8; gpu = A100_SXM_80GB }\n"
                                         "model m : gpt3_1_3b { }\n");
  CHECK(job_errors(sources, file, job_format::megatron, "mixed.txt",
                   "--micro-batch-size 1\n--recompute-granularity full\n--activations-checkpoint-method uniform\n") ==
        "mixed.txt:3:1: error: '--activations-checkpoint-method' is Megatron-LM's before v3.0 (2022-07) and "
        "'--recompute-granularity' from it: the job mixes two versions' arguments\n"
        "    3 | --activations-checkpoint-method uniform\n"
        "      | ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");

  // From v3.0 until 2023-04 --checkpoint-activations stood beside the new
  // names and meant full, uniform recomputation whatever the granularity.
  dsl::diagnostics both;
  job_source v3{job_format::megatron,
                sources.add("v3.txt", "--micro-batch-size 1\n--recompute-granularity selective\n"
                                      "--checkpoint-activations\n"),
                {}};
  auto const overridden = load_job(sources, file, v3, {}, both);
  REQUIRE(overridden);
  CHECK(overridden->strategies.front().fixed().checkpoint == checkpoint_mode::full);
  CHECK(dsl::format(both, sources).find("v3.txt:2:1: warning: '--checkpoint-activations' is read as full "
                                        "recomputation over '--recompute-granularity', as Megatron-LM did from v3.0 "
                                        "until it refused the flag") != std::string::npos);
  // --recompute-activations, read after it, made it selective.
  dsl::diagnostics later;
  job_source selective{job_format::megatron,
                       sources.add("sel.txt", "--micro-batch-size 1\n--checkpoint-activations\n--recompute-activations\n"),
                       {}};
  auto const sel = load_job(sources, file, selective, {}, later);
  REQUIRE(sel);
  CHECK(sel->strategies.front().fixed().checkpoint == checkpoint_mode::selective);
  CHECK(job_errors(sources, file, job_format::megatron, "ddp.txt", "--micro-batch-size 1\n--DDP-impl apex\n") ==
        "ddp.txt:2:12: error: '--DDP-impl' is 'local' or 'torch', not 'apex'\n"
        "    2 | --DDP-impl apex\n"
        "      |            ^~~~\n");

  // The v2 method alone recomputes every layer, as that code did, and names
  // the code: v2.x, which had neither sequence parallelism nor selective
  // recomputation (both came with cfd2e21607, 2022-04, which renamed it).
  dsl::diagnostics method;
  job_source uniform{job_format::megatron,
                     sources.add("method.txt", "--micro-batch-size 1\n--activations-checkpoint-method uniform\n"), {}};
  auto const p = load_job(sources, file, uniform, {}, method);
  REQUIRE(p);
  CHECK(p->training.framework == "megatron_v2");
  CHECK_FALSE(p->framework.limits.sequence_parallel);
  CHECK(p->strategies.front().fixed().checkpoint == checkpoint_mode::full);
  CHECK(dsl::format(method, sources).find("method.txt:2:1: warning: '--activations-checkpoint-method' is Megatron-LM "
                                          "v2's (2021-22), which today's rejects: the job is costed with framework = "
                                          "megatron_v2") != std::string::npos);
  CHECK(job_errors(sources, file, job_format::megatron, "sp.txt",
                   "--micro-batch-size 1\n--tensor-model-parallel-size 2\n--sequence-parallel\n"
                   "--activations-checkpoint-method uniform\n") ==
        "sp.txt:4:1: error: '--activations-checkpoint-method' is Megatron-LM's before cfd2e21607 (2022-04) and "
        "'--sequence-parallel' from it: the job mixes two versions' arguments\n"
        "    4 | --activations-checkpoint-method uniform\n"
        "      | ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");

  // Its chunk of layers is read with it, and named where it is not one.
  dsl::diagnostics chunk;
  job_source two{job_format::megatron,
                 sources.add("chunk.txt", "--micro-batch-size 1\n--checkpoint-activations\n--checkpoint-num-layers 2\n"),
                 {}};
  REQUIRE(load_job(sources, file, two, {}, chunk));
  auto const messages = dsl::format(chunk, sources);
  CHECK(messages.find("chunk.txt:3:1: warning: recomputing 2 layers at a time ('uniform') is costed as checkpoint = "
                      "full, every layer") != std::string::npos);
}

TEST_CASE("llama3_8b.toml at torchtitan's own measurement costs within the error dtplan states for it") {
  // torchtitan's docs/performance.md (git d4c86e375, 2025-01-30; calibration_runs.csv
  // TT-8B-128gpu-FSDP): the TOML's FSDP with op-level selective
  // recomputation on 128 H100s of 96 GB at 500 W, local batch 2, 2.92 s
  // per step, 67.0 GiB at the most loaded GPU. v0.2.0's TOML writes local
  // batch 1: the measurement's 2 is set over it. The measurement's torch
  // nightly picked FlashAttention-2 where v0.2.0's SDPA picks cuDNN
  // (frameworks.dtp's header): that is set too.
  imported r(job_format::torchtitan, "torchtitan_grand_teton.dtp", "torchtitan_llama3_8b.toml",
             {"strategy.micro_batch=2", "training.global_batch=256", "training.attention_backend=flash"});
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = r.p;
  REQUIRE(p->strategies.size() == 1);
  auto const s = p->strategies.front().fixed();
  CHECK(s.dp == 128);
  CHECK(s.zero == 3);
  CHECK(s.micro_batch == 2);
  CHECK(s.checkpoint == checkpoint_mode::ops);
  CHECK(p->training.attention_kernel == attention_backend::flash);
  REQUIRE(r.costed);
  auto const& pl = *r.costed;
  REQUIRE(pl.valid);
  // torchtitan's eighteen measurements on this GPU are a family of the fit:
  // the error stated is the median of their held-out predictions.
  auto const stated = expected_error_for(p->cluster.device.name, "torchtitan");
  REQUIRE(stated);
  double const error = r.error_against(2.92);
  double const memory_error = pl.memory.total.value() / (67.0 * 1024 * 1024 * 1024) - 1;
  INFO("predicted " << pl.time->step.value() << " s (" << error << "), " << pl.memory.total.value() / (1 << 30)
                    << " GiB (" << memory_error << "), stated " << stated->median);
  CHECK(std::abs(error) <= stated->median);
  CHECK(std::abs(memory_error) < 0.15);
}

TEST_CASE("torchtitan's TOMLs of January 2025 (d4c86e375) read as v0.2.0's") {
  // The code behind torchtitan's docs/performance.md kept the batch and the
  // degrees in [training] and [experimental] and fp8 in [float8]. Its
  // llama3_8b.toml is v0.2.0's but for those names: it costs the same at the
  // measurement's settings.
  std::initializer_list<char const*> const measured{"strategy.micro_batch=2", "training.global_batch=256",
                                                    "training.attention_backend=flash"};
  imported before(job_format::torchtitan, "torchtitan_2025_01/grand_teton_16.dtp", "torchtitan_2025_01/llama3_8b.toml",
                  measured);
  imported now(job_format::torchtitan, "torchtitan_grand_teton.dtp", "torchtitan_llama3_8b.toml", measured);
  INFO(dsl::format(before.diags, before.sources));
  REQUIRE(before.p);
  REQUIRE(now.p);
  check_costed(before);
  check_costed(now);
  CHECK(before.p->strategies.front().fixed() == now.p->strategies.front().fixed());
  CHECK(before.costed->time->step.value() == now.costed->time->step.value());
  CHECK(before.costed->memory.total.value() == now.costed->memory.total.value());
  // Nothing is left "not modelled" but the norm it names (Llama's: read).
  for (auto const& w : before.warnings()) CHECK(w.find("not modelled") == std::string::npos);

  // llama3_405b.toml: tp 8, Float8 linears with their FSDP all-gather,
  // async TP, compiled blocks, full recomputation, two sequences a GPU.
  imported big(job_format::torchtitan, "torchtitan_2025_01/grand_teton_64.dtp", "torchtitan_2025_01/llama3_405b.toml");
  INFO(dsl::format(big.diags, big.sources));
  REQUIRE(big.p);
  auto const s = big.p->strategies.front().fixed();
  CHECK(s.tp == 8);
  CHECK(s.dp == 64);
  CHECK(s.zero == 3);
  CHECK(s.micro_batch == 2);
  CHECK(s.checkpoint == checkpoint_mode::full);
  CHECK(big.p->model.name == "llama3_405b");
  CHECK(big.p->model.prec == precision::fp8);
  CHECK(big.p->training.fp8_param_gather);
  CHECK(big.p->training.tp_comm_overlap);
  CHECK(big.p->training.fused_elementwise);
  CHECK(big.p->training.global_batch == 128);
  check_costed(big);
  for (auto const& w : big.warnings()) CHECK(w.find("not modelled") == std::string::npos);
}

TEST_CASE("a job's bad value is reported where the job writes it") {
  dsl::source_manager sources;
  dsl::diagnostics diags;
  auto const file = sources.add("c.dtp", "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                         "model m : llama3_8b { }\n");
  job_source job{job_format::torchtitan,
                 sources.add("job.toml", "[parallelism]\ntensor_parallel_degree = \"2\"\n[training]\nlocal_batch_size = 0\n"),
                 {}};
  CHECK_FALSE(load_job(sources, file, job, {}, diags));
  CHECK(dsl::format(diags, sources) ==
        "job.toml:2:26: error: expected a whole number for 'parallelism.tensor_parallel_degree', got a string\n"
        "    2 | tensor_parallel_degree = \"2\"\n"
        "      |                          ^~~\n");

  CHECK(job_errors(sources, file, job_format::megatron, "args.txt",
                   "--tensor-model-parallel-size 0\n--bf16\n--micro-batch-size 1\n") ==
        "args.txt:1:30: error: 'tp' must be at least 1, got 0\n"
        "    1 | --tensor-model-parallel-size 0\n"
        "      |                              ^\n");
  CHECK(job_errors(sources, file, job_format::megatron, "b.txt", "--bf16\n") ==
        "b.txt:1:1: error: the job does not write '--micro-batch-size', which Megatron-LM needs\n"
        "    1 | --bf16\n"
        "      | ^\n");
}

TEST_CASE("context parallelism's exchange is read from torchtitan's rotate method and Megatron-LM's --cp-comm-type") {
  dsl::source_manager sources;
  auto const file = sources.add("c.dtp", "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                         "model m : llama3_8b { }\n");
  auto torchtitan = [&](std::string const& rotate, dsl::diagnostics& diags) {
    job_source job{job_format::torchtitan,
                   sources.add("job.toml", "[parallelism]\ncontext_parallel_degree = 2\n" + rotate +
                                               "[training]\nlocal_batch_size = 1\n[activation_checkpoint]\n"
                                               "mode = \"full\"\n"),
                   {}};
    return load_job(sources, file, job, {}, diags);
  };
  dsl::diagnostics quiet;
  auto const preset = torchtitan("", quiet);
  REQUIRE(preset);
  CHECK(preset->training.cp_comm_type == cp_comm_kind::allgather);
  auto const ring = torchtitan("context_parallel_rotate_method = \"alltoall\"\n", quiet);
  REQUIRE(ring);
  CHECK(ring->training.cp_comm_type == cp_comm_kind::alltoall);
  CHECK(dsl::format(quiet, sources) == "");
  dsl::diagnostics bad;
  CHECK_FALSE(torchtitan("context_parallel_rotate_method = \"ring\"\n", bad));
  CHECK(dsl::format(bad, sources) ==
        "job.toml:3:34: error: torchtitan's 'parallelism.context_parallel_rotate_method' is 'allgather' or "
        "'alltoall', not 'ring'\n"
        "    3 | context_parallel_rotate_method = \"ring\"\n"
        "      |                                  ^~~~~~\n");

  auto megatron = [&](std::string const& comm, dsl::diagnostics& diags) {
    job_source job{job_format::megatron,
                   sources.add("args.txt", "--bf16\n--micro-batch-size 1\n--context-parallel-size 2\n" + comm), {}};
    return load_job(sources, file, job, {}, diags);
  };
  dsl::diagnostics per_layer;
  auto const p2p = megatron("--cp-comm-type p2p p2p\n", per_layer);
  REQUIRE(p2p);
  CHECK(p2p->training.cp_comm_type == cp_comm_kind::p2p);
  CHECK(per_layer.empty());
  dsl::diagnostics ulysses;
  auto const a2a = megatron("--cp-comm-type p2p a2a\n", ulysses);
  REQUIRE(a2a);
  CHECK(a2a->training.cp_comm_type == cp_comm_kind::p2p);
  CHECK(dsl::format(ulysses, sources) ==
        "args.txt:4:1: warning: Megatron-LM's context-parallel communication 'a2a' is not modelled: costed as "
        "'p2p'\n"
        "    4 | --cp-comm-type p2p a2a\n"
        "      | ^~~~~~~~~~~~~~\n");
}

TEST_CASE("Megatron-LM's attention backend and transformer implementation are read or named as not modelled") {
  dsl::source_manager sources;
  auto const file = sources.add("c.dtp", "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                         "model m : llama3_8b { }\n");
  auto megatron = [&](std::string const& flags, dsl::diagnostics& diags) {
    job_source job{job_format::megatron, sources.add("args.txt", "--bf16\n--micro-batch-size 1\n" + flags), {}};
    return load_job(sources, file, job, {}, diags);
  };
  dsl::diagnostics quiet;
  auto const read = megatron("--attention-backend unfused\n--transformer-impl local\n", quiet);
  REQUIRE(read);
  CHECK(read->training.attention_kernel == attention_backend::unfused);
  CHECK(read->training.transformer_impl == transformer_impl_kind::local);
  CHECK(quiet.empty());
  dsl::diagnostics other;
  auto const unknown = megatron("--attention-backend sliding\n--transformer-impl inference_optimized\n", other);
  REQUIRE(unknown);
  CHECK(unknown->training.transformer_impl == transformer_impl_kind::transformer_engine);
  CHECK(dsl::format(other, sources) ==
        "args.txt:3:1: warning: Megatron-LM's attention backend 'sliding' is not modelled: costed as 'auto'\n"
        "    3 | --attention-backend sliding\n"
        "      | ^~~~~~~~~~~~~~~~~~~\n"
        "args.txt:4:1: warning: Megatron-LM's transformer implementation 'inference_optimized' is not modelled: "
        "costed as 'transformer_engine'\n"
        "    4 | --transformer-impl inference_optimized\n"
        "      | ^~~~~~~~~~~~~~~~~~\n");
}

TEST_CASE("Megatron-LM's and NeMo's NVFP4 flags read as precision = fp4") {
  dsl::source_manager sources;
  auto const file = sources.add("c.dtp", "cluster c { nodes = 1; gpus_per_node = 8; gpu = B200 }\n"
                                         "model m : llama3_8b { }\n");
  auto job = [&](job_format f, std::string const& name, std::string const& text, dsl::diagnostics& diags) {
    job_source j{f, sources.add(name, text), {}};
    return load_job(sources, file, j, {}, diags);
  };
  // core_v0.15.0 and later: --fp4-format e2m1, --fp4-recipe nvfp4 (its default).
  dsl::diagnostics quiet;
  auto const mg = job(job_format::megatron, "args.txt", "--bf16\n--micro-batch-size 1\n--fp4-format e2m1\n"
                                                        "--fp4-recipe nvfp4\n", quiet);
  REQUIRE(mg);
  CHECK(mg->model.prec == precision::fp4);
  CHECK(quiet.empty());
  // A Megatron-LM job refused: what lowering reports.
  auto refused = [&](std::string const& text) {
    dsl::diagnostics diags;
    CHECK_FALSE(job(job_format::megatron, "args.txt", "--bf16\n" + text, diags));
    return dsl::format(diags, sources);
  };
  CHECK(refused("--fp8-format hybrid\n--fp4-format e2m1\n") ==
        "args.txt:3:1: error: '--fp4-format' and '--fp8-format' are both written (Megatron-LM refuses both)\n"
        "    3 | --fp4-format e2m1\n"
        "      | ^~~~~~~~~~~~\n");
  CHECK(refused("--fp4-format e3m0\n") ==
        "args.txt:2:14: error: expected 'e2m1' for '--fp4-format', got 'e3m0'\n"
        "    2 | --fp4-format e3m0\n"
        "      |              ^~~~\n");
  // MLPerf v5.1's NeMo scripts: FP4=True with FP4_RECIPE=nvfp4 and FP8=False.
  dsl::diagnostics nemo_diags;
  std::string const degrees = "export TENSOR_MODEL_PARALLEL=1\nexport PIPELINE_MODEL_PARALLEL=1\n"
                              "export MICRO_BATCH_SIZE=1\nexport MINIBS=8\n";
  auto const nemo = job(job_format::nemo, "config.sh",
                        "export FP8=False\nexport FP4=True\nexport FP4_RECIPE=nvfp4\n" + degrees, nemo_diags);
  REQUIRE(nemo);
  CHECK(nemo->model.prec == precision::fp4);
  dsl::diagnostics nemo_both;
  CHECK_FALSE(job(job_format::nemo, "config.sh", "export FP8=True\nexport FP4=True\n" + degrees, nemo_both));
  CHECK(dsl::format(nemo_both, sources).find("error: 'FP4=True' and 'FP8=True' are both written: choose one") !=
        std::string::npos);
}

TEST_CASE("torchtitan's selective checkpointing of every n-th layer is named in English") {
  dsl::source_manager sources;
  auto const file = sources.add("c.dtp", "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
                                         "model m : llama3_8b { }\n");
  auto warning = [&](std::string const& option) {
    dsl::diagnostics diags;
    job_source job{job_format::torchtitan,
                   sources.add("job.toml", "[activation_checkpoint]\nselective_ac_option = \"" + option + "\"\n"),
                   {}};
    REQUIRE(load_job(sources, file, job, {}, diags));
    REQUIRE(diags.list().size() == 1);
    return diags.list().front().message;
  };
  CHECK(warning("1") == "torchtitan's selective checkpointing of every layer is costed as checkpoint = full");
  CHECK(warning("2") == "torchtitan's selective checkpointing of every 2nd layer is costed as checkpoint = full");
  CHECK(warning("3") == "torchtitan's selective checkpointing of every 3rd layer is costed as checkpoint = full");
  CHECK(warning("11") == "torchtitan's selective checkpointing of every 11th layer is costed as checkpoint = full");
  CHECK(warning("21") == "torchtitan's selective checkpointing of every 21st layer is costed as checkpoint = full");
  CHECK(warning("x") == "torchtitan's selective checkpointing of every 'x' layer is costed as checkpoint = full");
}

TEST_CASE("NVIDIA's MLPerf v4.0 GPT-3 script (NeMo, Megatron-Core) on 512 GPUs costs as the calibration prices its "
          "run: 10 % slow, beyond the median error dtplan states for Megatron-Core on H100") {
  // The row's run ran with MINIBS=144 (its log: global batch 2304,
  // gradient accumulation 72; mlperf_runs.csv MLPv40-NV-gpt3-H100-512g),
  // set here over the script's ${MINIBS:=128}.
  imported r(job_format::nemo, "mlperf_nemo_gpt3/cluster.dtp", "mlperf_nemo_gpt3/config_DGXH100_64x8x128x4x8_mbs2.sh",
             {"training.global_batch=2304"});
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  auto const& p = *r.p;
  CHECK(p.model.layers == 96);  // custom.yaml's defaults: the script sets no shape
  CHECK(p.model.hidden == 12288);
  CHECK(p.model.heads == 96);
  CHECK(p.model.ffn == 4 * 12288);
  CHECK(p.model.seq_len == 2048);
  CHECK_FALSE(p.model.dropout);
  CHECK(p.model.prec == precision::fp8);  // FP8=True, FP8_HYBRID=True
  CHECK(p.training.framework == "megatron");
  CHECK(p.training.global_batch == 2304);
  // The behaviours the calibration gives the row (bench/calibration.cpp,
  // load_mlperf).
  CHECK(p.training.grad_precision == precision::bf16);  // distributed_fused_adam's grad_sync_dtype
  CHECK(p.training.grad_bucket == bucket_rule::fixed);
  CHECK(p.training.ddp_bucket_size.value() == 200e6);  // BUCKET_CAP_MB=200
  CHECK(p.training.overlap_grad_sync);
  CHECK(p.training.overlap_param_gather);
  CHECK(p.training.tp_comm_overlap);
  CHECK(p.training.overlap_p2p_comm);
  CHECK(p.training.fp8_param_gather);
  CHECK_FALSE(p.training.cuda_graphs);
  CHECK_FALSE(p.training.nvls);  // NCCL_NVLS_ENABLE=0
  REQUIRE(p.strategies.size() == 1);
  CHECK(p.strategies.front().name == "nemo");
  auto const s = p.strategies.front().fixed();
  CHECK(s.tp == 4);
  CHECK(s.pp == 8);
  CHECK(s.virtual_stages == 4);
  CHECK(s.dp == 16);
  CHECK(s.cp == 1);
  CHECK(s.sequence_parallel);  // SEQ_PARALLEL's default True
  CHECK(s.micro_batch == 2);
  CHECK(s.zero == 1);  // USE_DIST_OPTIMIZER=True
  CHECK(s.checkpoint == checkpoint_mode::none);
  CHECK(s.order == default_order);
  auto const w = r.warnings();
  CHECK(w.size() == 29);
  CHECK(w.front() == "12:8 NeMo's 'WALLTIME_MINUTES' is not read: it does not change a step's time or memory");
  CHECK(std::find(w.begin(), w.end(),
                  "14:8 NeMo's 'NCCL_MIN_NCHANNELS' is not read: NCCL's tuning is not modelled: collectives are "
                  "costed at the catalog's measured figures") != w.end());
  CHECK(w.back() == "6:8 NeMo's 'FP8_REDUCE_AMAX' is not modelled: the plan is costed without it");
  check_costed(r);
  CHECK(r.costed->grad_accum == 72);
  // The median of every result file's steady-state throughput: 10.9819 s
  // per step. dtplan costs it as the calibration costs the same row (12.12
  // s with the catalog of this commit): +10.4 %, beyond the median error it
  // states for Megatron-Core on H100 (7.7 %) and within its 90th
  // percentile (13.1 %). v3.0's run of the same model and cluster (GBS 2048,
  // 12 interleaved chunks) costs within 0.2 %; what NeMo and Transformer
  // Engine gained from v3.0 to v4.0 (the NVTE_* userbuffers and amax
  // settings this import reports unread) is not in the model.
  auto const stated = expected_error_for("H100_SXM", "megatron");
  REQUIRE(stated);
  double const error = r.error_against(10.9819);
  INFO("predicted " << r.costed->time->step.value() << " s, error " << error << ", stated median "
                    << stated->median << ", 90th percentile " << stated->p90);
  CHECK(std::abs(error) <= stated->p90);
  // The miss this row has in the accuracy study: a change of the model that
  // closes it changes this test.
  CHECK(error > stated->median);
}

TEST_CASE("NVIDIA's three v4.0 GPT-3 scripts cost, at their median, within the error dtplan states for Megatron-Core "
          "on H100") {
  // Every GPT-3 script of the submission's directory (mlcommons/
  // training_results_v4.0 NVIDIA/benchmarks/gpt3/implementations/nemo), each
  // with the run that used it (mlperf_runs.csv): 512 GPUs at MINIBS=144
  // (MLPv40-NV-gpt3-H100-512g, 10.9819 s), 10,752 and 11,616 GPUs at the
  // scripts' own MINIBS 6 with per-layer CUDA graphs (-10752g, 0.9207 s;
  // -11616g, 0.9214 s).
  struct run {
    char const* cluster;
    char const* script;
    char const* setting;  ///< a --set, or none
    std::int64_t dp, global_batch;
    double measured;
  };
  std::vector<run> const runs{
      {"mlperf_nemo_gpt3/cluster.dtp", "mlperf_nemo_gpt3/config_DGXH100_64x8x128x4x8_mbs2.sh",
       "training.global_batch=2304", 16, 2304, 10.9819},
      {"mlperf_nemo_gpt3/eos_dfw_1344.dtp", "mlperf_nemo_gpt3/config_DGXH100_1344x8x6x4x6_mbs1_cg.sh", nullptr, 448, 2688,
       0.9207},
      {"mlperf_nemo_gpt3/eos_dfw_1452.dtp", "mlperf_nemo_gpt3/config_DGXH100_1452x8x6x4x6_mbs1_cg.sh", nullptr, 484, 2904,
       0.9214},
  };
  auto const stated = expected_error_for("H100_SXM", "megatron");
  REQUIRE(stated);
  std::vector<double> errors;
  for (auto const& x : runs) {
    imported r = x.setting ? imported(job_format::nemo, x.cluster, x.script, {x.setting})
                           : imported(job_format::nemo, x.cluster, x.script);
    INFO(x.script << "\n" << dsl::format(r.diags, r.sources));
    REQUIRE(r.p);
    auto const s = r.p->strategies.front().fixed();
    CHECK(s.dp == x.dp);
    CHECK(r.p->training.global_batch == x.global_batch);
    check_costed(r);
    double const error = r.error_against(x.measured);
    INFO("predicted " << r.costed->time->step.value() << " s, error " << error << ", stated median "
                      << stated->median << ", 90th percentile " << stated->p90);
    CHECK(std::abs(error) <= stated->p90);
    errors.push_back(std::abs(error));
  }
  std::sort(errors.begin(), errors.end());
  INFO("median |error| " << errors[1]);
  CHECK(errors[1] <= stated->median);
}

TEST_CASE("the MLPerf script without the run's override trains MINIBS 128 x 16 data-parallel ranks") {
  imported r(job_format::nemo, "mlperf_nemo_gpt3/cluster.dtp", "mlperf_nemo_gpt3/config_DGXH100_64x8x128x4x8_mbs2.sh");
  INFO(dsl::format(r.diags, r.sources));
  REQUIRE(r.p);
  CHECK(r.p->training.global_batch == 128 * 16);
  check_costed(r);
  CHECK(r.costed->grad_accum == 64);
}

namespace {

// A job and the files it names or sources, all in memory (the first is the
// job), read against a cluster of `nodes` x 8 H100s and GPT-3 175B; the
// diagnostics, and whether the job loaded.
struct job_result {
  bool loaded = false;
  std::string diagnostics;
};
job_result load_in_memory(job_format format, std::vector<std::pair<std::string, std::string>> const& files,
                          int nodes = 2) {
  dsl::source_manager sources;
  dsl::diagnostics diags;
  auto const file = sources.add(
      "c.dtp", fmt::format("cluster c {{ nodes = {}; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }}\n"
                           "model m : gpt3_175b {{ }}\n",
                           nodes));
  job_source job{format, sources.add(files.front().first, files.front().second), {}};
  job.open = [&](std::string const& path) -> std::variant<std::uint32_t, std::string> {
    for (auto const& [name, text] : files)
      if (name == path) return sources.add(name, text);
    return fmt::format("cannot read '{}': No such file or directory", path);
  };
  bool const loaded = load_job(sources, file, job, {}, diags).has_value();
  return {loaded, dsl::format(diags, sources)};
}

// A NeMo script that does not load; its diagnostics.
std::string nemo_diagnostics(std::vector<std::pair<std::string, std::string>> const& files, int nodes = 2) {
  auto const r = load_in_memory(job_format::nemo, files, nodes);
  CHECK_FALSE(r.loaded);
  return r.diagnostics;
}

}  // namespace

TEST_CASE("a NeMo script's bad value, missing file, source cycle and GPU count are reported where it writes them") {
  std::string const beside = "source $(dirname ${BASH_SOURCE[0]})/";
  std::string const job = "export MINIBS=\"${MINIBS:=128}\"\nexport MICRO_BATCH_SIZE=1\nexport DGXNNODES=2\n";
  CHECK(nemo_diagnostics({{"config.sh", job + "export TENSOR_MODEL_PARALLEL=four\nexport PIPELINE_MODEL_PARALLEL=2\n"}}) ==
        "config.sh:4:30: error: expected a whole number for 'TENSOR_MODEL_PARALLEL', got 'four'\n"
        "    4 | export TENSOR_MODEL_PARALLEL=four\n"
        "      |                              ^~~~\n");
  // A value copied from another variable is reported where that one is
  // written.
  CHECK(nemo_diagnostics({{"config.sh", "export TP=0\n" + job +
                                            "export TENSOR_MODEL_PARALLEL=\"${TP}\"\nexport PIPELINE_MODEL_PARALLEL=2\n"}}) ==
        "config.sh:1:8: warning: NeMo's 'TP' is not modelled: the plan is costed without it\n"
        "    1 | export TP=0\n"
        "      |        ^~\n"
        "config.sh:1:11: error: 'tp' must be at least 1, got 0\n"
        "    1 | export TP=0\n"
        "      |           ^\n");
  CHECK(nemo_diagnostics({{"config.sh", beside + "config_common.sh\n"}}) ==
        "config.sh:1:8: error: cannot read 'config_common.sh': No such file or directory\n"
        "    1 | source $(dirname ${BASH_SOURCE[0]})/config_common.sh\n"
        "      |        ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");
  CHECK(nemo_diagnostics({{"config.sh", beside + "a.sh\n"}, {"a.sh", "export A=1\n" + beside + "config.sh\n"}}) ==
        "a.sh:2:8: error: sourcing 'config.sh' again is a cycle: config.sh -> a.sh -> config.sh\n"
        "    2 | source $(dirname ${BASH_SOURCE[0]})/config.sh\n"
        "      |        ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");
  CHECK(nemo_diagnostics({{"config.sh", job + "export TENSOR_MODEL_PARALLEL=4\nexport PIPELINE_MODEL_PARALLEL=2\n"}},
                         4) ==
        "config.sh:3:18: error: the job runs on DGXNNODES x DGXNGPU = 2 x 8 = 16 GPUs; cluster 'c' has 32\n"
        "    3 | export DGXNNODES=2\n"
        "      |                  ^\n");
}

TEST_CASE("a NeMo script's lines dtplan cannot evaluate are reported only where they set what it reads") {
  dsl::source_manager sources;
  dsl::diagnostics diags;
  auto const file = sources.add("c.dtp", "cluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; "
                                         "inter_node = 8 x 400 Gbit/s }\nmodel m : gpt3_175b { }\n");
  job_source job{job_format::nemo,
                 sources.add("config.sh", "export DGXSYSTEM=$(basename $(readlink -f ${BASH_SOURCE[0]}))\n"
                                          "export MINIBS=64 TENSOR_MODEL_PARALLEL=4 PIPELINE_MODEL_PARALLEL=2\n"
                                          "export DGXNNODES=2 MICRO_BATCH_SIZE=1\n"
                                          "if [[ \"${MLPERF_VERSION:-}\" == \"v31\" ]]; then\n"
                                          "  export MICRO_BATCH_SIZE=8\n"
                                          "else\n"
                                          "  unset SEQ_PARALLEL\n"
                                          "fi\n"
                                          "if [ $MINIBS -eq 128 ]; then\n"
                                          "  export VBOOST_VALUE=1\n"
                                          "  export INTERLEAVED_PIPELINE=2\n"
                                          "fi\n"
                                          "if [[ $(($MINIBS % PIPELINE_MODEL_PARALLEL)) != 0 ]]; then\n"
                                          "  echo \"MINIBS should be divisble by PP\"\n"
                                          "  exit 1\n"
                                          "fi\n"),
                 {}};
  auto p = load_job(sources, file, job, {}, diags);
  INFO(dsl::format(diags, sources));
  REQUIRE(p);
  auto const s = p->strategies.front().fixed();
  CHECK(s.micro_batch == 1);       // the v31 branch is not taken
  CHECK(s.virtual_stages == 12);   // custom.yaml's default: the VBOOST block is not run
  CHECK(p->training.global_batch == 64 * 2);
  REQUIRE(diags.list().size() == 1);
  CHECK(dsl::format(diags.list().front(), sources) ==
        "config.sh:11:10: warning: NeMo's 'INTERLEAVED_PIPELINE' is set to '2' by a line dtplan does not run: the job "
        "is costed without that line\n"
        "   11 |   export INTERLEAVED_PIPELINE=2\n"
        "      |          ^~~~~~~~~~~~~~~~~~~~\n");
}

TEST_CASE("a pair without runs states the error of its framework on a GPU of the same generation", "[accuracy]") {
  // torchtitan's runs are on Grand Teton's H100 (96 GB, 500 W), a variant of
  // the H100 SXM die: a torchtitan plan on H100_SXM quotes them, named as
  // such; a pair whose framework has no run of that generation stays
  // uncalibrated.
  auto const own = expected_error_for("H100_SXM", "torchtitan");
  CHECK_FALSE(own);
  auto const related = related_expected_error("H100_SXM", gpu_generation::hopper, "torchtitan");
  REQUIRE(related);
  CHECK(related->gpu == "H100_SXM_96GB_500W");
  auto const pct = [](double x) { return std::lround(x * 100); };
  CHECK(describe_expected_error("H100_SXM", gpu_generation::hopper, "torchtitan") ==
        fmt::format("no published run of torchtitan on H100_SXM; on H100_SXM_96GB_500W, the same hopper generation: "
                    "typically within {} % (median of {} held-out runs, 90 % within {} %)",
                    pct(related->median), related->runs, pct(related->p90)));
  // The GPU's own pair, where it has runs, is what is quoted.
  auto const megatron = expected_error_for("H100_SXM", "megatron");
  REQUIRE(megatron);
  CHECK(describe_expected_error("H100_SXM", gpu_generation::hopper, "megatron") ==
        fmt::format("typically within {} % (median of {} held-out runs of megatron on H100_SXM, 90 % within {} %)",
                    pct(megatron->median), megatron->runs, pct(megatron->p90)));
  // No related figure where the GPU has its own (H200's Megatron runs are
  // not quoted for H100), and none where the framework has no run of the
  // generation (torchtitan on Ampere).
  CHECK_FALSE(related_expected_error("H100_SXM", gpu_generation::hopper, "megatron"));
  auto const pcie = related_expected_error("H100_PCIE", gpu_generation::hopper, "megatron");
  REQUIRE(pcie);
  CHECK(pcie->gpu == "H100_SXM");
  CHECK_FALSE(related_expected_error("A100_SXM_80GB", gpu_generation::ampere, "torchtitan"));
  CHECK(describe_expected_error("A100_SXM_80GB", gpu_generation::ampere, "torchtitan") ==
        "no published run of torchtitan on A100_SXM_80GB measures dtplan's error there; treat the figure as "
        "uncalibrated");
  // Megatron on Blackwell: B200 (13 runs) before GB200 and GB300.
  auto const blackwell = related_expected_error("B300_site", gpu_generation::blackwell, "megatron");
  REQUIRE(blackwell);
  CHECK(blackwell->gpu == "B200");
}

TEST_CASE("a launcher's count past 2^63 and a number in hexadecimal are reported where they stand, not thrown") {
  auto const diagnostics = [](std::string const& args) {
    return load_in_memory(job_format::megatron, {{"args.txt", args}}).diagnostics;
  };
  CHECK(diagnostics("torchrun --nproc_per_node 18446744073709551616 pretrain_gpt.py --micro-batch-size 1\n") ==
        "args.txt:1:27: warning: the launcher starts 18446744073709551616 processes per node; cluster 'c' has 8: "
        "the Megatron-LM job is costed on the cluster\n"
        "    1 | torchrun --nproc_per_node 18446744073709551616 pretrain_gpt.py --micro-batch-size 1\n"
        "      |                           ^~~~~~~~~~~~~~~~~~~~\n");
  // strtod reads C's hexadecimal; Python's int() and argparse do not.
  CHECK(diagnostics("pretrain_gpt.py --num-layers 0x18 --micro-batch-size 1\n") ==
        "args.txt:1:30: error: expected a whole number for '--num-layers', got '0x18'\n"
        "    1 | pretrain_gpt.py --num-layers 0x18 --micro-batch-size 1\n"
        "      |                              ^~~~\n");
  CHECK(diagnostics("pretrain_gpt.py --num-layers 24 --hidden-dropout 0x1p-3 --micro-batch-size 1\n").starts_with(
      "args.txt:1:50: error: expected a number for '--hidden-dropout', got '0x1p-3'\n"));
}

TEST_CASE("a DeepSpeed reduce bucket whose bytes pass 2^63 is held to the key's range, not wrapped") {
  // 9 x 10^18 fp32 elements: 3.6 x 10^19 B, past what an int64 holds.
  auto const r = load_in_memory(
      job_format::deepspeed,
      {{"args.txt", "pretrain_gpt.py --deepspeed --deepspeed_config ds_config.json --micro-batch-size 1\n"},
       {"ds_config.json", "{\"zero_optimization\": {\"stage\": 1, \"reduce_bucket_size\": 9000000000000000000}}\n"}});
  CHECK_FALSE(r.loaded);
  CHECK(r.diagnostics ==
        "ds_config.json:1:58: error: 'ddp_bucket_size' must be at most 1024 TiB, got 9000000000000000000\n"
        "    1 | {\"zero_optimization\": {\"stage\": 1, \"reduce_bucket_size\": 9000000000000000000}}\n"
        "      |                                                          ^~~~~~~~~~~~~~~~~~~\n");
}
