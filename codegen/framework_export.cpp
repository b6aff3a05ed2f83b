#include "codegen/framework_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "codegen/escape.hpp"
#include "codegen/json_writer.hpp"
#include "codegen/launch.hpp"
#include "codegen/report.hpp"
#include "codegen/templates/template_text.hpp"
#include "planner/import/import.hpp"
#include "planner/ir/keys.hpp"
#include "planner/ir/units.hpp"
#include "planner/lower/lower.hpp"

namespace dtplan::codegen {

namespace {

using planner::checkpoint_mode;
using planner::job_format;
using planner::precision;

// The shard group's ranks (dp x cp members) when ZeRO shards over fewer
// ranks than hold the same weights: hybrid sharding.
std::optional<std::int64_t> hybrid_shard(planner::plan const& pl) {
  auto const& sh = *pl.shape;
  if (pl.s.zero == 0 || sh.shard.size >= sh.sync.size) return std::nullopt;
  return sh.shard.size;
}

precision grad_precision(planner::program const& p) {
  return planner::grad_element_bytes(p.model, p.training) == 4 ? precision::fp32
         : p.model.prec == precision::fp16                       ? precision::fp16
                                                                 : precision::bf16;
}

// The framework's preset: what it can run.
std::optional<std::string> preset_refusal(job_format f, planner::program const& p, planner::plan const& pl) {
  auto preset = planner::catalog_framework(planner::preset(f));
  if (!preset) return fmt::format("no built-in framework '{}'", planner::preset(f));
  auto const& lim = preset->limits;
  auto const& s = pl.s;
  auto const fw = std::string(planner::preset(f));
  if (std::find(lim.zero_stages.begin(), lim.zero_stages.end(), s.zero) == lim.zero_stages.end()) {
    std::string stages;
    for (std::size_t i = 0; i < lim.zero_stages.size(); ++i)
      stages += fmt::format("{}{}", i == 0 ? "" : i + 1 == lim.zero_stages.size() ? " or " : ", ", lim.zero_stages[i]);
    return fmt::format("{} does not run ZeRO-{} (zero = {}): it runs zero = {}", fw, s.zero, s.zero, stages);
  }
  if (s.pp > 1 && s.zero > lim.pipeline_max_zero)
    return fmt::format("{} runs a pipeline with ZeRO-{} at most; the plan has zero = {} with pp = {}", fw,
                       lim.pipeline_max_zero, s.zero, s.pp);
  if (p.model.prec == precision::bf16 && s.zero < lim.bf16_min_zero)
    return fmt::format("{} runs bf16 with ZeRO-{} at least; the plan has zero = {}", fw, lim.bf16_min_zero, s.zero);
  if (std::find(lim.checkpoint_modes.begin(), lim.checkpoint_modes.end(), s.checkpoint) == lim.checkpoint_modes.end()) {
    bool const ops = std::find(lim.checkpoint_modes.begin(), lim.checkpoint_modes.end(), checkpoint_mode::ops) !=
                     lim.checkpoint_modes.end();
    if (s.checkpoint == checkpoint_mode::selective && ops)
      return fmt::format("{} has no recomputation of the core attention alone (checkpoint = selective, Megatron's); "
                         "its op-level selective checkpointing is checkpoint = ops",
                         fw);
    return fmt::format("{} has no checkpoint = {}", fw, planner::name(s.checkpoint));
  }
  if (s.tp > 1 && !lim.tensor_parallel) return fmt::format("{} has no tensor parallelism (tp = {})", fw, s.tp);
  if (s.pp > 1 && !lim.pipeline_parallel) return fmt::format("{} has no pipeline parallelism (pp = {})", fw, s.pp);
  if (s.virtual_stages > 1 && !lim.interleaving)
    return fmt::format("{} does not interleave pipeline stages (virtual_stages = {})", fw, s.virtual_stages);
  if (s.cp > 1 && !lim.context_parallel) return fmt::format("{} has no context parallelism (cp = {})", fw, s.cp);
  if (s.tp > 1 && s.sequence_parallel && !lim.sequence_parallel)
    return fmt::format("{} has no sequence parallelism (sequence_parallel = true)", fw);
  if (s.tp > 1 && !s.sequence_parallel && !lim.tp_without_sequence_parallel)
    return fmt::format("{} always runs sequence parallelism with tensor parallelism (sequence_parallel = true)", fw);
  if (!lim.zero0_with_model_parallel && planner::zero0_beside_model_parallel(s))
    return fmt::format("{} replicates with zero = 0 only without tensor, pipeline or context parallelism", fw);
  if (auto grid = planner::expert_grid_refusal(lim, p.model, s)) return fmt::format("{} {}", fw, grid->does);
  if (hybrid_shard(pl) && !lim.hybrid_sharding)
    return fmt::format("{} has no hybrid sharding (a shard group of {} of the {} ranks holding the same weights)", fw,
                       pl.shape->shard.size, pl.shape->sync.size);
  if (!planner::runs_split(lim, pl.shape->split))
    return fmt::format("{} does not split a pipeline with {}", fw, planner::split_keys(p.training));
  // The counted split as this framework places it (a plan costed under
  // torchtitan's rule, the first chunks a layer more, is no Megatron-Core job
  // where the count does not divide).
  if (auto theirs = pl.shape->split; theirs.accounted() && planner::has_split(lim, theirs)) {
    theirs.rest_first = lim.embedding_loss_in_split == planner::counted_split_rule::uneven;
    if (auto why = theirs.refusal(); !why.empty())
      return fmt::format("{} does not split a pipeline with {} so: {}", fw, planner::split_keys(p.training), why);
  }
  // The preset's pipeline_split. Of the presets jobs are written for only
  // torchtitan's restricts it (stage_size): it makes ceil(layers /
  // pipeline_parallel_layers_per_stage) stages and gives the first ones a
  // layer more (TT v0.2.0 torchtitan/distributed/pipeline_parallel.py:69-75,
  // 257-296), dtplan's split, which a chunk count no such size yields it
  // cannot run. (A split of the plan's own that the framework has is its.)
  // The units it sizes stages of: the layers, and the embedding and loss
  // where the plan counts them in a split the framework has (an uneven
  // first/last split of its own is not sized so).
  auto const chunks = s.pp * s.virtual_stages;
  auto const& split = pl.shape->split;
  bool const own = !split.dtplan() && planner::has_split(lim, split);
  bool const counted = own && split.accounted();
  auto const units = counted ? split.slots() : p.model.layers;
  if (s.pp > 1 && (!own || counted) && !planner::splits_layers(lim, units, chunks)) {
    auto const per = planner::stage_size(units, chunks);
    return fmt::format("{} makes ceil({} layers{} / pipeline_parallel_layers_per_stage) stages: no size gives the {} "
                       "pipeline chunks (pp x virtual_stages = {} x {}; {} a stage makes {})",
                       fw, units, counted ? " and counted embedding and loss" : "", chunks, s.pp, s.virtual_stages, per,
                       planner::stage_size(units, per));
  }
  return std::nullopt;
}

// What each configuration cannot express.
std::optional<std::string> torchtitan_refusal(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  auto const& m = p.model;
  if (m.prec == precision::fp16)
    return "torchtitan trains in bfloat16 or float32 (training.mixed_precision_param), not fp16";
  if (m.prec == precision::fp4)
    return "torchtitan's NVFP4 converter (experimental, from 2026; torchtitan/components/quantization/nvfp4.py) is "
           "set in its Python configs, which this TOML job cannot name; its TOML quantizes to float8 (precision = fp8)";
  if (s.order != planner::default_order)
    return fmt::format("torchtitan lays ranks out as tp-cp-dp-pp (its device mesh pp, dp_replicate, dp_shard, cp, "
                       "tp); the plan's order is {}",
                       planner::to_string(s.order));
  if (auto shard = hybrid_shard(pl); shard && *shard % s.cp != 0)
    return fmt::format("torchtitan shards over dp_shard x cp ranks: a shard group of {} ranks is not a multiple of "
                       "cp = {}",
                       *shard, s.cp);
  auto const divisor = s.tp * (s.cp > 1 ? 2 * s.cp : 1);
  if (m.seq_len % divisor != 0)
    return fmt::format("torchtitan needs seq_len divisible by tp x 2 x cp = {}; it is {}", divisor, m.seq_len);
  if (p.training.tp_comm_overlap && s.tp > 1 && !p.training.fused_elementwise)
    return "torchtitan runs asynchronous tensor parallelism only compiled (tp_comm_overlap needs fused_elementwise "
           "= true, compile.enable)";
  // Its shared experts are num_shared_experts of moe_inter_dim each
  // (models/moe/moe.py:378-381); its expert mesh is preset_refusal's.
  if (m.experts > 1 && m.shared_expert_ffn % m.mlp_width() != 0)
    return fmt::format("torchtitan's shared experts are each as wide as the routed ones: shared_expert_ffn = {} is "
                       "not a multiple of the experts' {}",
                       m.shared_expert_ffn, m.mlp_width());
  // Multi-latent attention and a mixture's dense layers are torchtitan's
  // deepseek_v3 model's (v0.2.0 models/deepseek_v3/), written as its flavor
  // where the plan's model has its shape; dtplan registers llama3 and
  // qwen3 flavors only.
  auto const flavor = planner::torchtitan_flavor_of(m);
  bool const deepseek = flavor && flavor->model == "deepseek_v3";
  if (m.mla() && !deepseek)
    return "torchtitan's multi-latent attention is its deepseek_v3 model's, which dtplan writes as its flavor "
           "'671B' only; the plan's model has another shape (the llama3 and qwen3 models it registers are not "
           "multi-latent)";
  // The flavor's FlexAttention does not run under torchtitan's context
  // parallelism (v0.2.0 models/deepseek_v3/infra/parallelize.py:64-66).
  if (flavor && flavor->flex_attention && s.cp > 1)
    return fmt::format("torchtitan's {} '{}' runs FlexAttention, which its context parallelism does not run; the "
                       "plan has cp = {}",
                       flavor->model, flavor->flavor, s.cp);
  // No torchtitan model at v0.2.0 has multi-token prediction.
  if (m.mtp_layers > 0)
    return fmt::format("torchtitan v0.2.0's models have no multi-token prediction; model '{}' has it (mtp_layers = "
                       "{})",
                       m.name, m.mtp_layers);
  // The qwen3 model dtplan writes makes every layer a mixture where its
  // args say moe_enabled (TT v0.2.0 models/qwen3/model/model.py:309-360).
  if (m.mixed_layers() && !deepseek)
    return fmt::format("torchtitan's qwen3 model makes every layer a mixture of experts; model '{}' has {} dense "
                       "layers (dense_layers, moe_layer_freq)",
                       m.name, m.layers - m.moe_layer_count());
  return std::nullopt;
}

// dtplan's uneven split (the first chunks a layer more) as Megatron-Core's
// --pipeline-model-parallel-layout (core_v0.13.0 and later: megatron/core/
// transformer/pipeline_parallel_layer_layout.py): one '|'-separated stage a
// chunk in chunk order (stage k on pipeline rank k % pp, virtual stage k /
// pp), 't' a transformer layer, the embedding 'E' first and the loss 'L'
// last; commas are cosmetic. "E,t*6|t*6|t*5|t*5|t*5|t*5,L" is 32 layers over
// pp 2 x 3 virtual stages.
std::string megatron_layout(planner::layer_split const& split) {
  std::string out = "E,";
  for (std::int64_t c = 0; c < split.chunks(); ++c) {
    if (c > 0) out += '|';
    auto const n = split.chunk_layers(c);
    if (n == 1) out += 't';
    else if (n > 1) out += fmt::format("t*{}", n);
  }
  return out + ",L";
}

// Whether the plan's split needs the layout: dtplan's, uneven.
bool layout_split(planner::program const& p, planner::plan const& pl) {
  auto const chunks = pl.s.pp * pl.s.virtual_stages;
  return pl.s.pp > 1 && pl.shape->split.dtplan() && p.model.layers % chunks != 0;
}

std::optional<std::string> megatron_refusal(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  if (p.model.position == planner::position_kind::alibi)
    return "Megatron-LM has no ALiBi (--position-embedding-type is learned_absolute, rope, mrope, relative or none)";
  using planner::axis;
  planner::rank_order const tp_pp_dp{axis::tp, axis::cp, axis::pp, axis::dp};
  if (s.order != planner::default_order && s.order != tp_pp_dp)
    return fmt::format("Megatron-LM lays ranks out as tp-cp-dp-pp, or tp-cp-pp-dp with --use-tp-pp-dp-mapping; "
                       "the plan's order is {}",
                       planner::to_string(s.order));
  if (auto shard = hybrid_shard(pl); shard && pl.shape->sync.size % *shard != 0)
    return "Megatron-LM's distributed-optimizer instances must split the data-parallel ranks evenly";
  return std::nullopt;
}

std::optional<std::string> deepspeed_refusal(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  if (p.model.position == planner::position_kind::alibi)
    return "Megatron-DeepSpeed 4efb479 has no ALiBi (learned positions, --use-rotary-position-embeddings or "
           "--no-position-embedding); BigScience's fork has";
  if (planner::low_precision(p.model.prec))
    return fmt::format("Megatron-DeepSpeed trains in bf16, fp16 or fp32, not {}", planner::name(p.model.prec));
  if (p.model.mla())
    return "Megatron-DeepSpeed 4efb479 has no multi-latent attention (megatron/arguments.py has no "
           "--multi-latent-attention)";
  if (p.model.qk_norm)
    return "Megatron-DeepSpeed 4efb479 has no q/k norms (megatron/arguments.py has no --qk-layernorm); model '" +
           p.model.name + "' has them (qk_norm)";
  if (p.model.mtp_layers > 0)
    return "Megatron-DeepSpeed 4efb479 has no multi-token prediction (megatron/arguments.py has no "
           "--mtp-num-layers); model '" +
           p.model.name + "' has it (mtp_layers)";
  if (s.order != planner::default_order)
    return fmt::format("Megatron-DeepSpeed lays ranks out as tp-dp-pp; the plan's order is {}",
                       planner::to_string(s.order));
  if (hybrid_shard(pl) && s.zero < 3)
    return "DeepSpeed shards ZeRO-1 and ZeRO-2 state over every data-parallel rank; a smaller shard group "
           "(MiCS, zero_optimization.mics_shard_size) is ZeRO-3's";
  // Layers that do not divide over the stages it runs as dtplan costs them:
  // with pp > 1 pretrain_gpt.py builds GPTModelPipe (MDS 4efb479
  // pretrain_gpt.py:51-55), whose PipelineModule splits by
  // partition_method='type:transformer' (megatron/model/gpt_model.py:463),
  // DeepSpeed's linear partition of the transformer layers (DS v0.17.5
  // runtime/pipe/module.py:409-414, runtime/utils.py:583-620): the first
  // stages a layer more (70 over 12: 6 on stages 0-9, 5 on 10-11, BLOOM's
  // split). Megatron's even-split assertion (megatron/model/transformer.py:1613) is on
  // the path without the pipeline engine.
  return std::nullopt;
}

// ---- torchtitan ----------------------------------------------------------

// The mixtures among a model's layers as Megatron-LM's --moe-layer-freq
// reads them (core_v0.13.0 models/gpt/gpt_layer_specs.py:446-474): its
// integer where no dense layers come first, else a list, 1 a mixture:
// "[0]*3+[1]*58", "[0]*1+([1]+[0]*1)*24".
std::string moe_layer_pattern(planner::model const& m) {
  auto const k = m.dense_layers, n = m.moe_layer_freq, rest = m.layers - m.dense_layers;
  if (k == 0) return fmt::format("{}", n);
  std::string out = fmt::format("[0]*{}", k);
  if (n == 1) return out + fmt::format("+[1]*{}", rest);
  auto const whole = rest / n, left = rest % n;
  if (whole > 0) out += fmt::format("+([1]+[0]*{})*{}", n - 1, whole);
  if (left > 0) out += left == 1 ? std::string("+[1]") : fmt::format("+[1]+[0]*{}", left - 1);
  return out;
}

class toml_text {
 public:
  void comment(std::string_view line) { out_ += line.empty() ? "#\n" : fmt::format("# {}\n", comment_text(line)); }
  void table(std::string_view name) { out_ += fmt::format("\n[{}]\n", name); }
  void raw(std::string_view key, std::string const& value) { out_ += fmt::format("{} = {}\n", key, value); }
  void number(std::string_view key, std::int64_t v) { raw(key, fmt::format("{}", v)); }
  void boolean(std::string_view key, bool v) { raw(key, v ? "true" : "false"); }
  void string(std::string_view key, std::string_view v) { raw(key, toml_string(v)); }
  [[nodiscard]] std::string const& str() const { return out_; }

 private:
  std::string out_;
};

// Names the plan, not its figures (plan.json has those): a job stays the
// same file while the cost model is refined.
std::string header_line(planner::program const& p, planner::plan const& pl) {
  return fmt::format("plan '{}' of {}: model '{}' on cluster '{}' ({} nodes x {} {})", pl.name, p.file,
                     p.model.name, p.cluster.name, p.cluster.nodes, p.cluster.gpus_per_node, p.cluster.device.name);
}

// The values every launch template takes; `environment` is shell code the
// plan needs exported first.
std::vector<template_value> launch_values(planner::program const& p, planner::plan const& pl,
                                          std::string environment = {}) {
  environment += launch_blocking_env(p);
  return {
      {"PLAN", comment_text(pl.name)},
      {"FILE", comment_text(p.file)},
      {"NODES", fmt::format("{}", p.cluster.nodes)},
      {"GPUS_PER_NODE", fmt::format("{}", p.cluster.gpus_per_node)},
      {"ENVIRONMENT", std::move(environment)},
  };
}

std::vector<job_file> torchtitan_job(planner::program const& p, planner::plan const& pl, dsl::diagnostics& diags) {
  auto const& s = pl.s;
  auto const& m = p.model;
  auto const& t = p.training;
  toml_text o;
  o.comment(fmt::format("torchtitan job for {}.", header_line(p, pl)));
  o.comment(fmt::format("Written by dtplan {} for torchtitan v0.2.0 (keys of torchtitan/config/job_config.py); run "
                        "it with launch.sh.",
                        tool_version()));
  o.comment("The dataset, tokenizer, optimizer and checkpoint settings are yours to add.");

  o.table("model");
  auto const flavor = planner::torchtitan_flavor_of(m);
  if (flavor) {
    // One of torchtitan's own flavors, a preset of the catalog: named,
    // nothing to register.
    o.string("name", flavor->model);
    o.string("flavor", flavor->flavor);
  } else if (m.experts > 1 || m.q_width() != m.hidden || m.qk_norm) {
    // torchtitan's mixtures are model code of their own; Qwen3's is the one
    // with dtplan's attention (GQA, rotary, q/k norms or none), and the one
    // whose heads need not be hidden / heads wide (head_dim, qk_norm: v0.2.0
    // models/qwen3/model/args.py:30-35).
    o.string("name", "qwen3");
    o.comment(fmt::format("Register a Qwen3ModelArgs flavor named '{}' in torchtitan/models/qwen3/__init__.py:", m.name));
    if (m.experts > 1) {
      o.comment(fmt::format("(dim={}, n_layers={}, n_heads={}, n_kv_heads={}, head_dim={}, vocab_size={}, "
                            "moe_enabled=True,",
                            m.hidden, m.layers, m.heads, m.kv_heads, m.head_width(), m.vocab));
      o.comment(fmt::format("qk_norm={}, moe_inter_dim={}, moe_args=MoEArgs(num_experts={}, num_shared_experts={}, "
                            "top_k={})).",
                            m.qk_norm ? "True" : "False", m.mlp_width(), m.experts,
                            m.shared_expert_ffn / m.mlp_width(), std::min(m.experts_per_token, m.experts)));
    } else {
      o.comment(fmt::format("(dim={}, n_layers={}, n_heads={}, n_kv_heads={}, head_dim={}, vocab_size={}, "
                            "hidden_dim={}, qk_norm={}).",
                            m.hidden, m.layers, m.heads, m.kv_heads, m.head_width(), m.vocab, m.ffn,
                            m.qk_norm ? "True" : "False"));
    }
    o.string("flavor", m.name);
  } else {
    o.string("name", "llama3");
    o.comment(fmt::format("No torchtitan llama3 flavor has this shape: register one named '{}' in "
                          "torchtitan/models/llama3/__init__.py",
                          m.name));
    o.comment(fmt::format("(dim={}, n_layers={}, n_heads={}, n_kv_heads={}, vocab_size={}, FFN hidden {}).", m.hidden,
                          m.layers, m.heads, m.kv_heads, m.vocab, m.ffn));
    o.string("flavor", m.name);
  }
  if (m.prec == precision::fp8) o.raw("converters", "[\"quantize.linear.float8\"]");

  // With a pipeline, one schedule runs every micro-batch of the step (as
  // dtplan costs it): local_batch_size = micro_batch x grad_accum.
  std::int64_t const local = s.pp > 1 ? s.micro_batch * pl.grad_accum : s.micro_batch;
  o.table("training");
  o.number("local_batch_size", local);
  o.number("global_batch_size", t.global_batch);
  o.number("seq_len", m.seq_len);
  o.string("mixed_precision_param", m.prec == precision::fp32 ? "float32" : "bfloat16");
  o.string("mixed_precision_reduce", "float32");

  o.table("parallelism");
  auto const shard = hybrid_shard(pl);
  std::int64_t replicate = 1, shard_degree = s.dp;
  if (s.zero == 0) replicate = s.dp, shard_degree = 1;
  else if (shard) shard_degree = *shard / s.cp, replicate = s.dp / shard_degree;
  o.number("data_parallel_replicate_degree", replicate);
  o.number("data_parallel_shard_degree", shard_degree);
  o.number("tensor_parallel_degree", s.tp);
  o.number("pipeline_parallel_degree", s.pp);
  o.number("context_parallel_degree", s.cp);
  if (m.experts > 1 && s.ep > 1) {
    o.number("expert_parallel_degree", s.ep);
    o.number("expert_tensor_parallel_degree", s.expert_tp());
  }
  o.boolean("enable_async_tensor_parallel", t.tp_comm_overlap);
  if (s.tp > 1 && !t.loss_parallel) o.boolean("disable_loss_parallel", true);
  // Said where it matters or differs from torchtitan's default (allgather).
  if (t.cp_comm_type != planner::cp_comm_kind::p2p && (s.cp > 1 || t.cp_comm_type != planner::cp_comm_kind::allgather))
    o.string("context_parallel_rotate_method", planner::name(t.cp_comm_type));
  if (s.pp > 1 && s.zero == 3 && t.fsdp_reshard_with_pp) o.string("fsdp_reshard_after_forward", "always");
  if (s.pp > 1) {
    o.string("pipeline_parallel_schedule", s.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B");
    o.number("pipeline_parallel_microbatch_size", s.micro_batch);
    auto const& split = pl.shape->split;
    if (split.accounted()) {
      // The embedding and the output counted as a layer each where the plan
      // says so: torchtitan's split of layers + 1 + 1, the first stages a
      // layer more (TT v0.2.0 torchtitan/distributed/pipeline_parallel.py:
      // 262-330).
      o.number("pipeline_parallel_layers_per_stage", planner::stage_size(split.slots(), s.pp * s.virtual_stages));
      o.comment("The plan's split: the embedding and the output each counted as a layer where it says so.");
      o.number("pipeline_parallel_first_stage_less_layers", split.embedding ? 1 : 0);
      o.number("pipeline_parallel_last_stage_less_layers", split.loss ? 1 : 0);
    } else {
      o.number("pipeline_parallel_layers_per_stage", planner::stage_size(m.layers, s.pp * s.virtual_stages));
      o.comment("dtplan's split: neither the embedding nor the output counts as a layer; where the layers do not "
                "divide, the first stages take one more.");
      o.number("pipeline_parallel_first_stage_less_layers", 0);
      o.number("pipeline_parallel_last_stage_less_layers", 0);
    }
  }

  o.table("activation_checkpoint");
  switch (s.checkpoint) {
    case checkpoint_mode::none: o.string("mode", "none"); break;
    case checkpoint_mode::full: o.string("mode", "full"); break;
    default:
      o.string("mode", "selective");
      o.string("selective_ac_option", "op");
      break;
  }

  o.table("compile");
  o.boolean("enable", t.fused_elementwise);
  if (t.fused_elementwise) o.raw("components", "[\"model\", \"loss\"]");

  if (m.prec == precision::fp8) {
    o.table("quantize.linear.float8");
    bool const gather = t.fp8_param_gather && s.zero == 3;
    o.boolean("enable_fsdp_float8_all_gather", gather);
    o.boolean("precompute_float8_dynamic_scale_for_fsdp", gather);
    o.raw("filter_fqns", "[\"output\"]");
  }

  // What torchtitan decides itself, where the plan was costed otherwise.
  auto warn = [&](std::string_view key, std::string message) {
    auto it = t.keys.find(key);
    diags.warning(it == t.keys.end() ? dsl::span{} : it->second, std::move(message));
  };
  if (m.dropout) warn("dropout", "torchtitan's Llama has no dropout; the plan was costed with dropout masks");
  // torchtitan v0.2.0 does not read deepseek_v3's expert groups
  // (models/deepseek_v3/model/args.py:69-71): it routes over every expert.
  if (flavor && flavor->ungrouped && m.router_groups > 0) {
    auto it = m.keys.find("router_groups");
    diags.warning(it == m.keys.end() ? dsl::span{} : it->second,
                  fmt::format("the plan was costed with router_groups = {} (each token's experts from {} of them); "
                              "torchtitan's {} '{}' routes over every expert",
                              m.router_groups, m.router_group_topk, flavor->model, flavor->flavor));
  }

  return {{"job.toml", o.str(), false},
          {"launch.sh", fill(template_text("torchtitan_launch.sh"), launch_values(p, pl)), true}};
}

// ---- Megatron-LM and Megatron-DeepSpeed ----------------------------------

struct argument {
  std::string flag;
  std::string value;  ///< empty for a flag written alone
};

class argument_list {
 public:
  void comment(std::string_view line) { lines_ += fmt::format("# {}\n", comment_text(line)); }
  // A value the shell would split or expand is one quoted word (launch.sh
  // reads args.txt as the shell splits it).
  void add(std::string flag, std::string value = {}) {
    bool const plain = std::all_of(value.begin(), value.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-+.,:/=@%").find(c) != std::string_view::npos;
    });
    lines_ += value.empty() ? flag + "\n" : fmt::format("{} {}\n", flag, plain ? value : shell_quote(value));
  }
  void add(std::string flag, std::int64_t v) { add(std::move(flag), fmt::format("{}", v)); }
  // A flag of several values (argparse's nargs), each a word of its own;
  // the values are dtplan's names, which the shell leaves alone.
  void add_words(std::string const& flag, std::vector<std::string> const& words) {
    lines_ += flag;
    for (auto const& w : words) lines_ += " " + w;
    lines_ += "\n";
  }
  [[nodiscard]] std::string const& str() const { return lines_; }

 private:
  std::string lines_;
};

// The modules selective recomputation recomputes, as the key's choices
// spell them.
std::vector<std::string> recompute_names(planner::training const& t) {
  std::vector<std::string> out;
  for (auto r : t.recompute_modules) out.emplace_back(planner::name(r));
  return out;
}

// The model, batch and parallel arguments pretrain_gpt.py shares in
// Megatron-LM and Megatron-DeepSpeed (`deepspeed`: the latter's spelling).
void model_arguments(argument_list& a, planner::program const& p, planner::plan const& pl, bool deepspeed) {
  auto const& m = p.model;
  auto const& s = pl.s;
  a.comment("The model");
  a.add("--num-layers", m.layers);
  a.add("--hidden-size", m.hidden);
  a.add("--ffn-hidden-size", m.ffn);
  a.add("--num-attention-heads", m.heads);
  // Heads not hidden / heads wide (Qwen3's 128): --kv-channels, in both
  // (MLM core_v0.13.0 megatron/training/arguments.py:771-773, 1378;
  // Megatron-DeepSpeed 4efb479 megatron/arguments.py:625).
  if (m.mla()) {
    // Multi-latent attention and its widths (MLM core_v0.13.0 arguments.py:
    // 1458, 2819-2828); --qk-layernorm gives its compressed tensors their
    // norms (gpt_layer_specs.py:124-150).
    a.add("--multi-latent-attention");
    if (m.q_lora_rank > 0) a.add("--q-lora-rank", m.q_lora_rank);
    a.add("--kv-lora-rank", m.kv_lora_rank);
    a.add("--qk-head-dim", m.head_width());
    a.add("--qk-pos-emb-head-dim", m.qk_rope_head_dim);
    a.add("--v-head-dim", m.v_head_width());
    a.add("--qk-layernorm");
  } else if (m.q_width() != m.hidden) {
    a.add("--kv-channels", m.head_width());
  }
  // q/k norms of the model's kind, head_dim wide (MLM core_v0.13.0
  // arguments.py:2690, transformer/attention.py:828-846); deepspeed_refusal
  // refuses them.
  if (m.qk_norm) a.add("--qk-layernorm");
  // Multi-token prediction modules after the last layer (MLM core_v0.13.0
  // arguments.py:1460-1464), on the last stage; deepspeed_refusal refuses
  // them.
  if (m.mtp_layers > 0) a.add("--mtp-num-layers", m.mtp_layers);
  if (m.kv_heads != m.heads) {
    if (deepspeed) {
      a.add("--num-key-value-heads", m.kv_heads);
    } else {
      a.add("--group-query-attention");
      a.add("--num-query-groups", m.kv_heads);
    }
  }
  a.add("--seq-length", m.seq_len);
  a.add("--max-position-embeddings", m.seq_len);
  a.add("--vocab-size", m.vocab);
  if (m.mlp == planner::mlp_kind::swiglu) a.add("--swiglu");
  if (m.norm == planner::norm_kind::rmsnorm) a.add("--normalization", deepspeed ? "rmsnorm" : "RMSNorm");
  if (m.position == planner::position_kind::rotary) {
    if (deepspeed) a.add("--use-rotary-position-embeddings");
    else a.add("--position-embedding-type", "rope");
  }
  if (!m.tied_embeddings) a.add("--untie-embeddings-and-output-weights");
  if (!m.dropout) {
    a.add("--attention-dropout", "0.0");
    a.add("--hidden-dropout", "0.0");
  }
  if (m.experts > 1 && !deepspeed) {
    // Every layer's MLP a mixture, its experts expert_ffn wide, the tokens
    // sent to them by the plan's dispatcher (core_v0.13.0
    // arguments.py:2700-2793).
    a.add("--num-experts", m.experts);
    a.add("--moe-router-topk", std::min(m.experts_per_token, m.experts));
    if (m.mixed_layers()) a.add("--moe-layer-freq", moe_layer_pattern(m));
    if (m.mlp_width() != m.ffn) a.add("--moe-ffn-hidden-size", m.mlp_width());
    if (m.shared_expert_ffn > 0) a.add("--moe-shared-expert-intermediate-size", m.shared_expert_ffn);
    if (m.capacity_factor) a.add("--moe-expert-capacity-factor", fmt::format("{}", *m.capacity_factor));
    if (m.pad_to_capacity) a.add("--moe-pad-expert-input-to-capacity");
    if (m.router_groups > 0 && m.router_group_topk > 0) {
      a.add("--moe-router-num-groups", m.router_groups);
      a.add("--moe-router-group-topk", m.router_group_topk);
    }
    a.add("--moe-token-dispatcher-type", planner::name(p.training.moe_token_dispatcher));
    if (p.training.moe_token_dispatcher == planner::dispatcher_kind::flex) a.add("--moe-enable-deepep");
    if (p.training.grouped_gemm) a.add("--moe-grouped-gemm");
    if (p.training.permute_fusion) a.add("--moe-permute-fusion");
    if (m.shared_expert_ffn > 0 && p.training.shared_expert_overlap &&
        p.training.moe_token_dispatcher != planner::dispatcher_kind::flex)
      a.add("--moe-shared-expert-overlap");
  }
  a.comment("The batch");
  a.add("--micro-batch-size", s.micro_batch);
  a.add("--global-batch-size", p.training.global_batch);
  a.comment("The parallelism");
  a.add("--tensor-model-parallel-size", s.tp);
  a.add("--pipeline-model-parallel-size", s.pp);
  // The split dtplan costs: Megatron-Core's own where the plan sets it
  // (Megatron-DeepSpeed's preset refuses it), else dtplan's, evenly or as a
  // layout.
  auto const& split = pl.shape->split;
  if (!deepspeed && layout_split(p, pl)) {
    // The layout names the virtual stages too: Megatron takes it alone
    // (core_v0.13.0 megatron/training/arguments.py:496-519).
    a.comment(fmt::format("{} layers over {} pipeline chunks, the first {} a layer more: a stage a chunk, "
                          "core_v0.13.0 or later.",
                          m.layers, s.pp * s.virtual_stages, m.layers % (s.pp * s.virtual_stages)));
    a.add("--pipeline-model-parallel-layout", megatron_layout(split));
  } else if (s.virtual_stages > 1 && !split.dtplan()) {
    // With an uneven first or last stage Megatron takes the virtual stages
    // a rank (arguments.py:521-524).
    a.add("--num-virtual-stages-per-pipeline-rank", s.virtual_stages);
  } else if (s.virtual_stages > 1) {
    a.add("--num-layers-per-virtual-pipeline-stage", m.layers / (s.pp * s.virtual_stages));
  }
  if (split.ends()) {
    a.comment("Megatron-Core's uneven first and last stages (training.num_layers_in_first/last_pipeline_stage).");
    if (split.first > 0) a.add("--decoder-first-pipeline-num-layers", split.first);
    if (split.last > 0) a.add("--decoder-last-pipeline-num-layers", split.last);
  } else if (split.accounted()) {
    if (split.embedding) a.add("--account-for-embedding-in-pipeline-split");
    if (split.loss) a.add("--account-for-loss-in-pipeline-split");
  }
  if (!deepspeed) a.add("--context-parallel-size", s.cp);
  if (m.experts > 1 && !deepspeed) a.add("--expert-model-parallel-size", s.ep);
  // Unwritten, Megatron splits each expert over the tp ranks.
  if (m.experts > 1 && !deepspeed && s.expert_tp() != s.tp) a.add("--expert-tensor-parallel-size", s.expert_tp());
  if (s.sequence_parallel && s.tp > 1) a.add("--sequence-parallel");
  switch (s.checkpoint) {
    case checkpoint_mode::selective:
      a.add("--recompute-granularity", "selective");
      // What it recomputes where not Megatron's default, the core attention
      // (core_v0.13.0 arguments.py:1768).
      if (!deepspeed && !p.training.recomputes_core_attention_only())
        a.add_words("--recompute-modules", recompute_names(p.training));
      break;
    case checkpoint_mode::full:
      a.add("--recompute-granularity", "full");
      a.add("--recompute-method", "uniform");
      a.add("--recompute-num-layers", 1);
      break;
    default: break;
  }
  a.comment("The precision");
  if (m.prec == precision::fp16) a.add("--fp16");
  if (m.prec == precision::bf16 || planner::low_precision(m.prec)) a.add("--bf16");
  if (m.prec == precision::fp8) a.add("--fp8-format", "hybrid");
  if (m.prec == precision::fp4) {
    // Transformer Engine's NVFP4BlockScaling, every layer (no
    // --first-last-layers-bf16): Megatron-LM core_v0.15.0 and later
    // (megatron/training/arguments.py:1353-1360).
    a.comment("NVFP4 GEMMs: Megatron-LM core_v0.15.0 or later, Transformer Engine 2.7 or later.");
    a.add("--fp4-format", "e2m1");
    a.add("--fp4-recipe", "nvfp4");
  }
}

std::vector<job_file> megatron_job(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  auto const& m = p.model;
  auto const& t = p.training;
  argument_list a;
  a.comment(fmt::format("Megatron-LM arguments for {}.", header_line(p, pl)));
  a.comment(fmt::format("Written by dtplan {} for pretrain_gpt.py at core_v0.13.0 (megatron/training/arguments.py); "
                        "launch.sh runs it.",
                        tool_version()));
  a.comment("The data, tokenizer, learning-rate and checkpoint arguments are yours to add.");
  model_arguments(a, p, pl, false);
  if (m.optimizer == planner::optimizer_kind::sgd || m.optimizer == planner::optimizer_kind::sgd_momentum) {
    a.add("--optimizer", "sgd");
    if (m.optimizer == planner::optimizer_kind::sgd) a.add("--sgd-momentum", "0.0");
  }
  auto const grads = grad_precision(p);
  if (grads == precision::bf16 && m.prec != precision::fp32) a.add("--grad-reduce-in-bf16");
  if (grads == precision::fp32 && m.prec == precision::fp16) a.add("--accumulate-allreduce-grads-in-fp32");
  if (m.prec == precision::fp8 && t.fp8_param_gather && s.zero == 1) a.add("--fp8-param-gather");
  using planner::axis;
  if (s.order == planner::rank_order{axis::tp, axis::cp, axis::pp, axis::dp}) a.add("--use-tp-pp-dp-mapping");

  a.comment("The distributed optimizer and what overlaps what");
  if (s.zero == 1) {
    a.add("--use-distributed-optimizer");
    if (auto shard = hybrid_shard(pl)) a.add("--num-distributed-optimizer-instances", pl.shape->sync.size / *shard);
    if (t.overlap_param_gather) a.add("--overlap-param-gather");
  }
  if (t.overlap_grad_sync) a.add("--overlap-grad-reduce");
  if (t.grad_bucket == planner::bucket_rule::fixed) {
    auto const params = std::llround(t.ddp_bucket_size.value() / planner::grad_element_bytes(m, t));
    a.add("--ddp-bucket-size", std::max<std::int64_t>(1, params));
  }
  if (t.tp_comm_overlap && s.tp > 1 && s.sequence_parallel) a.add("--tp-comm-overlap");
  if (s.virtual_stages > 1 && !t.overlap_p2p_comm) a.add("--no-overlap-p2p-communication");
  if (t.optimizer_state_precision == precision::bf16) {
    a.add("--use-precision-aware-optimizer");
    a.add("--exp-avg-dtype", "bf16");
    a.add("--exp-avg-sq-dtype", "bf16");
  }
  switch (t.attention_kernel) {
    case planner::attention_backend::flash: a.add("--attention-backend", "flash"); break;
    case planner::attention_backend::fused: a.add("--attention-backend", "fused"); break;
    case planner::attention_backend::unfused: a.add("--attention-backend", "unfused"); break;
    default: break;  // no such backend: a warning says what the job runs
  }
  if (s.cp > 1 && t.cp_comm_type == planner::cp_comm_kind::p2p) a.add("--cp-comm-type", "p2p");
  if (t.cuda_graphs) a.add("--enable-cuda-graph");
  if (t.timing_log_level > 0) a.add("--timing-log-level", t.timing_log_level);
  if (t.transformer_impl == planner::transformer_impl_kind::local) a.add("--transformer-impl", "local");

  std::string env;
  if (s.tp > 1 || s.cp > 1)
    env = "# Megatron-LM asserts one CUDA stream connection with tensor or context parallelism before Blackwell\n"
          "# (megatron/training/arguments.py).\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  return {{"args.txt", a.str(), false},
          {"launch.sh", fill(template_text("megatron_launch.sh"), launch_values(p, pl, env)), true}};
}

// ---- DeepSpeed -----------------------------------------------------------

std::string ds_config(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  auto const& m = p.model;
  auto const& t = p.training;
  json_writer w;
  w.begin_object();
  w.key("train_batch_size").value(t.global_batch);
  w.key("train_micro_batch_size_per_gpu").value(s.micro_batch);
  w.key("gradient_accumulation_steps").value(pl.grad_accum);
  if (m.prec == precision::bf16) w.key("bf16").begin_object().key("enabled").value(true).end_object();
  if (m.prec == precision::fp16) w.key("fp16").begin_object().key("enabled").value(true).end_object();
  if (auto comm = t.grad_comm_precision ? t.grad_comm_precision : t.grad_precision)
    w.key("communication_data_type").value(planner::name(*comm));
  w.key("zero_optimization").begin_object();
  w.key("stage").value(s.zero);
  if (s.zero >= 1) {
    auto const elements = std::llround(t.ddp_bucket_size.value() / planner::grad_comm_bytes(m, t));
    w.key("reduce_bucket_size").value(static_cast<std::int64_t>(std::max<long long>(1, elements)));
    w.key("overlap_comm").value(t.overlap_grad_sync);
    // ZeRO-1/2 all-reduce each bucket unless told to reduce it to its
    // owner (DeepSpeed zero/config.py:116, use_multi_rank_bucket_allreduce).
    if (s.zero <= 2) w.key("use_multi_rank_bucket_allreduce").value(!t.grad_reduce_scatter);
    if (s.zero <= 2) w.key("contiguous_gradients").value(t.contiguous_gradients);
    w.key("offload_optimizer").begin_object().key("device").value("none").end_object();
    if (s.zero == 3) w.key("offload_param").begin_object().key("device").value("none").end_object();
    if (auto shard = hybrid_shard(pl)) w.key("mics_shard_size").value(*shard);
  }
  w.end_object();
  if (s.pp > 1)
    w.key("pipeline")
        .begin_object()
        .key("pipe_partitioned")
        .value(t.p2p_scatter_gather)
        .key("grad_partitioned")
        .value(t.p2p_scatter_gather)
        .end_object();
  if (s.checkpoint != checkpoint_mode::none)
    w.key("activation_checkpointing")
        .begin_object()
        .key("partition_activations")
        .value(false)
        .key("cpu_checkpointing")
        .value(false)
        .key("contiguous_memory_optimization")
        .value(false)
        .end_object();
  w.end_object();
  return w.str() + "\n";
}

std::vector<job_file> deepspeed_job(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  auto const& t = p.training;
  argument_list a;
  a.comment(fmt::format("Megatron-DeepSpeed arguments for {}.", header_line(p, pl)));
  a.comment(fmt::format("Written by dtplan {} for pretrain_gpt.py of Megatron-DeepSpeed 4efb479 "
                        "(megatron/arguments.py) on DeepSpeed v0.17.5; launch.sh runs it.",
                        tool_version()));
  a.comment("The data, tokenizer, learning-rate and checkpoint arguments are yours to add.");
  model_arguments(a, p, pl, true);
  if (t.attention_kernel == planner::attention_backend::flash) a.add("--use-flash-attn-v2");
  a.comment("DeepSpeed");
  a.add("--deepspeed");
  a.add("--deepspeed_config", "ds_config.json");
  a.add("--zero-stage", s.zero);
  if (s.pp == 1) a.add("--no-pipeline-parallel");
  if (s.checkpoint != checkpoint_mode::none) a.add("--deepspeed-activation-checkpointing");
  return {{"ds_config.json", ds_config(p, pl), false},
          {"args.txt", a.str(), false},
          {"launch.sh", fill(template_text("deepspeed_launch.sh"), launch_values(p, pl)), true}};
}

// Whether a job of `f` says the run-time behaviour `key` of the plan: the
// ones it has a setting for, where the setting applies (Megatron-LM
// asserts --overlap-param-gather only with its distributed optimizer).
bool carried(job_format f, std::string_view key, planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  auto const& t = p.training;
  auto const prec = p.model.prec;
  using planner::attention_backend;
  // A gradient reduced in another precision than it is kept in: DeepSpeed
  // says it (communication_data_type); Megatron-LM and torchtitan reduce
  // in the precision they keep.
  if (key == "grad_comm_precision")
    return f == job_format::deepspeed || !t.grad_comm_precision || *t.grad_comm_precision == grad_precision(p);
  switch (f) {
    case job_format::torchtitan:
      return key == "fused_elementwise" || key == "tp_comm_overlap" ||
             (key == "cp_comm_type" && t.cp_comm_type != planner::cp_comm_kind::p2p) ||
             (key == "grad_precision" && grad_precision(p) == precision::fp32) ||
             (key == "fp8_param_gather" && prec == precision::fp8 && s.zero == 3) ||
             (key == "fsdp_reshard_with_pp" && s.pp > 1 && s.zero == 3) || key == "loss_parallel";
    case job_format::megatron:
      if (key == "attention_backend")
        return t.attention_kernel == attention_backend::flash || t.attention_kernel == attention_backend::fused ||
               t.attention_kernel == attention_backend::unfused;
      if (key == "grad_precision")
        return grad_precision(p) == precision::fp32 || (grad_precision(p) == precision::bf16 && prec != precision::fp16) ||
               (grad_precision(p) == precision::fp16 && prec == precision::fp16);
      return key == "overlap_grad_sync" || key == "cuda_graphs" || key == "grad_bucket" || key == "timing_log_level" ||
             key == "transformer_impl" || key == "grouped_gemm" || key == "permute_fusion" ||
             key == "moe_token_dispatcher" ||
             key == "shared_expert_overlap" ||
             key == "optimizer_state_precision" ||
             (key == "cp_comm_type" && t.cp_comm_type == planner::cp_comm_kind::p2p) ||
             (key == "ddp_bucket_size" && t.grad_bucket == planner::bucket_rule::fixed) ||
             (key == "overlap_param_gather" && s.zero == 1) ||
             (key == "tp_comm_overlap" && s.tp > 1 && s.sequence_parallel) ||
             (key == "overlap_p2p_comm" && s.virtual_stages > 1) ||
             (key == "fp8_param_gather" && prec == precision::fp8 && s.zero == 1);
    case job_format::deepspeed:
      if (key == "attention_backend")
        return t.attention_kernel == attention_backend::flash || t.attention_kernel == attention_backend::unfused;
      // DeepSpeed's ZeRO keeps the model's 16-bit gradients (its
      // BF16_Optimizer, fp32 ones, runs without ZeRO, which dtplan writes as
      // stage 1 and reads back so).
      if (key == "grad_precision") return grad_precision(p) != precision::fp32 || prec == precision::fp32;
      // Megatron-DeepSpeed's layers are Megatron's own.
      if (key == "transformer_impl") return t.transformer_impl == planner::transformer_impl_kind::local;
      return ((key == "overlap_grad_sync" || key == "ddp_bucket_size") && s.zero >= 1) ||
             (key == "grad_bucket" && s.zero >= 1 && t.grad_bucket == planner::bucket_rule::fixed) ||
             (key == "grad_reduce" && (s.zero == 1 || s.zero == 2)) ||
             (key == "contiguous_gradients" && (s.zero == 1 || s.zero == 2)) || (key == "p2p_scatter_gather" && s.pp > 1);
    case job_format::nemo: return false;  // read only: export_refusal refuses it
  }
  return false;
}

// Whether the behaviour `key` changes anything for this plan: the pipeline's
// sends without a pipeline, tensor-parallel overlap without tensor
// parallelism, ZeRO-1's gather without ZeRO-1, ... do not.
bool applies(std::string_view key, planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  if (key == "overlap_p2p_comm") return s.pp > 1 && s.virtual_stages > 1;
  if (key == "p2p_scatter_gather") return s.pp > 1 && s.tp > 1;
  if (key == "tp_comm_overlap") return s.tp > 1;
  if (key == "cp_comm_type") return s.cp > 1;
  if (key == "loss_parallel") return s.tp > 1;
  if (key == "grouped_gemm") return p.model.experts > 1 && p.model.experts / s.ep > 1;
  if (key == "permute_fusion") return p.model.experts > 1;
  if (key == "moe_token_dispatcher") return p.model.experts > 1 && (s.ep > 1 || s.tp > 1);
  if (key == "shared_expert_overlap" || key == "shared_expert_combine_overlap")
    return p.model.experts > 1 && p.model.shared_expert_ffn > 0 && s.ep > 1;
  if (key == "fused_rotary") return p.model.position == planner::position_kind::rotary && p.training.fused_elementwise;
  // Whose fused softmax matters on the unfused attention path only.
  if (key == "transformer_impl")
    return p.training.fused_elementwise && (p.model.attention == planner::attention_kind::standard ||
                                            p.training.attention_kernel == planner::attention_backend::unfused);
  if (key == "overlap_param_gather") return s.zero >= 1;
  if (key == "fp8_param_gather") return p.model.prec == precision::fp8 && s.zero >= 1;
  if (key == "grad_reduce") return s.zero == 1 || s.zero == 2;
  if (key == "fsdp_reshard_with_pp") return s.pp > 1 && s.zero == 3;
  if (key == "p2p_buffers_per_micro_batch") return s.pp > 1;
  if (key == "tied_hp_grad") return pl.shape->embedding.active() && p.model.prec == precision::bf16;
  if (key == "ddp_bucket_size") return p.training.grad_bucket == planner::bucket_rule::fixed;
  if (key == "gradient_as_bucket_view") return s.zero <= 1 && pl.shape->sync.size > 1;
  if (key == "contiguous_gradients") return (s.zero == 1 || s.zero == 2) && s.pp == 1 && pl.shape->sync.size > 1;
  if (key == "overlap_grad_sync" || key == "grad_sync" || key == "grad_bucket" || key == "grad_comm_precision")
    return pl.shape->sync.size > 1;
  return true;
}

// A warning for each run-time behaviour the plan was costed with that the
// job cannot say, that matters to the plan, and that differs from what the
// framework then does (its preset's): the job runs otherwise than planned
// there.
void uncarried_behaviours(job_format f, planner::program const& p, planner::plan const& pl, dsl::diagnostics& diags) {
  auto preset = planner::catalog_framework(planner::preset(f));
  if (!preset) return;
  auto runs = preset->behaviours;
  if (runs.attention_kernel == planner::attention_backend::automatic)
    runs.attention_kernel = planner::resolved_attention(p.cluster.device.generation);
  // A torchtitan flavor that sets use_flex_attn runs FlexAttention whatever
  // the job says (models/deepseek_v3/__init__.py).
  if (auto const flavor = planner::torchtitan_flavor_of(p.model);
      f == job_format::torchtitan && flavor && flavor->flex_attention)
    runs.attention_kernel = planner::attention_backend::flex;
  for (auto const& key : planner::keys_of(planner::block_kind::training)) {
    if (!key.behaviour || carried(f, key.name, p, pl) || !applies(key.name, p, pl)) continue;
    auto const planned = planner::load(key, p.training);
    auto const run = planner::load(key, runs);
    if (planned == run) continue;
    auto it = p.training.keys.find(key.name);
    // An unset value is the key's default, which its table row names
    // ("grad_precision's", "the model's 16-bit").
    auto const shown = [&](auto const& v) { return v ? planner::shown(key, *v) : std::string(key.default_text); };
    diags.warning(it == p.training.keys.end() ? dsl::span{} : it->second,
                  fmt::format("the plan was costed with {} = {}; a {} job cannot say it and runs {}", key.name,
                              shown(planned), name(f), shown(run)));
  }
}

}  // namespace

std::optional<std::string> export_refusal(job_format f, planner::program const& p, planner::plan const& pl) {
  if (!pl.valid || !pl.shape || !pl.time) return fmt::format("strategy '{}' is not valid", pl.name);
  if (p.model.experts > 1 && f != job_format::megatron && f != job_format::torchtitan)
    return fmt::format("dtplan writes mixture-of-experts jobs for megatron and torchtitan only, not {}", name(f));
  if (auto why = preset_refusal(f, p, pl)) return why;
  switch (f) {
    case job_format::torchtitan: return torchtitan_refusal(p, pl);
    case job_format::megatron: return megatron_refusal(p, pl);
    case job_format::deepspeed: return deepspeed_refusal(p, pl);
    case job_format::nemo: return "dtplan reads NeMo's MLPerf scripts but does not write them";
  }
  return std::nullopt;
}

std::vector<job_file> export_job(job_format f, planner::program const& p, planner::plan const& pl,
                                 dsl::diagnostics& diags) {
  std::vector<job_file> files;
  switch (f) {
    case job_format::torchtitan: files = torchtitan_job(p, pl, diags); break;
    case job_format::megatron: files = megatron_job(p, pl); break;
    case job_format::deepspeed: files = deepspeed_job(p, pl); break;
    case job_format::nemo: break;
  }
  uncarried_behaviours(f, p, pl, diags);
  // Megatron-DeepSpeed's selective recomputation is the core attention's.
  if (f == job_format::deepspeed && pl.s.checkpoint == checkpoint_mode::selective &&
      !p.training.recomputes_core_attention_only()) {
    auto it = p.training.keys.find("recompute_modules");
    diags.warning(it == p.training.keys.end() ? dsl::span{} : it->second,
                  "the plan was costed with recompute_modules other than {core_attn}; a deepspeed job cannot say it "
                  "and recomputes the core attention alone");
  }
  return files;
}

}  // namespace dtplan::codegen
