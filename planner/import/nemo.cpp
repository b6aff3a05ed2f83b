// NeMo's variables as NVIDIA's MLPerf Training v4.0 GPT-3 scripts set them
// (mlcommons/training_results_v4.0 6fe954378e,
// NVIDIA/benchmarks/gpt3/implementations/nemo/): conf/custom.yaml reads
// each with `${oc.env:VAR,default}`, conf/optim/distributed_fused_adam.yaml
// the optimizer's, run_and_time.sh picks that optimizer. Megatron-Core runs
// the job, so what it means is written as import_megatron writes Megatron-LM's
// arguments.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "planner/import/translate.hpp"
#include "planner/ir/ir.hpp"

namespace dtplan::planner::import_detail {

namespace {

// Variables that do not change a step's time or memory: devices, data,
// checkpoints, logging, the wall-clock limit, delayed fp8 scaling's amax
// history (a few kilobytes a tensor).
constexpr std::string_view not_costed_variables[] = {
    "CUDA_VISIBLE_DEVICES", "TRAIN_ONLY", "CHECKPOINT_NAME", "LOAD_CHECKPOINT", "LOAD_MINIMAL_NUM_SAMPLES",
    "NEMO_MANUAL_GC_IN_VALIDATION", "NEMO_LOG_TRAIN_LOSS", "WALLTIME_MINUTES", "DGXSYSTEM", "SEED",
    "MAX_STEPS", "LR", "MIN_LR", "WARMUP_STEPS", "FP8_AMAX_HISTORY", "FP8_AMAX_ALGO"};

}  // namespace

void import_nemo(job_reader& job, context const& ctx) {
  auto& t = job.out();
  auto const origin = job.origin();
  auto key_at = [&](entry const* e) { return job.key_at(e); };
  auto value_at = [&](entry const* e) { return job.value_at(e); };
  auto const& doc = job.document();
  bool failed = false;
  std::set<std::string, std::less<>> warned;

  // A variable the import reads, and a warning where a line dtplan does not
  // evaluate sets it: the job is costed as if that line were not there.
  auto var = [&](std::string_view name) -> entry const* {
    for (auto const& u : doc.unevaluated)
      if (u.key == name && warned.emplace(name).second)
        t.diags.warning(u.key_where, fmt::format("NeMo's '{}' is set to '{}' by a line dtplan does not run: the job "
                                                 "is costed without that line",
                                                 name, dsl::escaped(u.val->text)));
    return job.find(name);
  };
  // A whole number, else `fallback` (custom.yaml's default; nothing when it
  // has none and NeMo fails without it).
  auto integer = [&](std::string_view name, std::optional<std::int64_t> fallback) -> std::optional<std::int64_t> {
    auto const* e = var(name);
    if (!e) {
      if (!fallback) {
        t.diags.error(origin, fmt::format("the job does not set '{}', which NeMo's custom.yaml needs", name));
        failed = true;
      }
      return fallback;
    }
    auto v = job.integer(*e);
    if (!v) failed = true;
    return v;
  };
  // True or False as oc.decode reads them; "null" is the default. oc.decode
  // reads 1 and 0 as integers, which NeMo's `if cfg.<flag>:` takes as true
  // and false (the v4.0 scale-out scripts write LAYER_CUDA_GRAPH=1).
  auto boolean = [&](std::string_view name, bool fallback) -> bool {
    auto const* e = var(name);
    if (!e || e->val->text == "null") return fallback;
    if (e->val->text == "1") return true;
    if (e->val->text == "0") return false;
    auto v = job.boolean(*e);
    if (!v) failed = true;
    return v.value_or(fallback);
  };
  // A text that may be "null" (custom.yaml's default for it).
  auto text = [&](std::string_view name) -> std::optional<std::string> {
    auto const* e = var(name);
    if (!e || e->val->text == "null") return std::nullopt;
    return job.text(*e);
  };

  set(t, "training", "framework", identifier_value(std::string(preset(job_format::nemo)), origin), origin);

  // The model: custom.yaml:66-74 (GPT-3 175B unless the variables say
  // otherwise; no dropout). The vocabulary (a sentencepiece model file) and
  // the MLP are the .dtp file's.
  auto model_int = [&](std::string_view name, std::string_view key, std::optional<std::int64_t> fallback) {
    auto const v = integer(name, fallback);
    auto const* e = job.find(name);
    if (v) set(t, "model", key, integer_value(*v, value_at(e)), key_at(e));
    return v;
  };
  model_int("NUM_LAYERS", "layers", 96);
  auto const hidden = model_int("HIDDEN_SIZE", "hidden", 12288);
  auto const heads = model_int("NUM_ATTENTION_HEADS", "heads", 96);
  if (heads) set(t, "model", "kv_heads", integer_value(*heads, value_at(job.find("NUM_ATTENTION_HEADS"))),
                 key_at(job.find("NUM_ATTENTION_HEADS")));
  if (hidden) model_int("FFN_HIDDEN_SIZE", "ffn", 4 * *hidden);
  set(t, "model", "seq_len", integer_value(2048, origin), origin);
  set(t, "model", "dropout", boolean_value(false, origin), origin);

  // Precision: bf16 (custom.yaml:12), fp8 GEMMs with FP8 (Transformer
  // Engine's hybrid or E4M3 format, costed alike, as Megatron-LM's
  // --fp8-format is).
  bool const fp8 = boolean("FP8", false);
  bool const hybrid = boolean("FP8_HYBRID", false);
  auto const* fp8_at = job.find("FP8");
  if (hybrid && !fp8)
    t.diags.warning(key_at(job.find("FP8_HYBRID")), "'FP8_HYBRID' is read only with 'FP8=True'");
  // FP4 with FP4_RECIPE=nvfp4 (MLPerf v5.1's config_common_fp4.sh, with
  // FP8=False): Transformer Engine's NVFP4BlockScaling on every layer.
  bool const fp4 = boolean("FP4", false);
  auto const* fp4_at = job.find("FP4");
  if (fp4 && fp8) t.diags.error(key_at(fp4_at), "'FP4=True' and 'FP8=True' are both written: choose one");
  if (auto recipe = text("FP4_RECIPE"); fp4 && recipe && *recipe != "nvfp4")
    t.diags.warning(key_at(job.find("FP4_RECIPE")),
                    fmt::format("the fp4 recipe '{}' is not modelled: costed as 'nvfp4'", dsl::escaped(*recipe)));
  auto const prec = fp4 ? precision::fp4 : fp8 ? precision::fp8 : precision::bf16;
  auto const* prec_at = fp4 ? fp4_at : fp8 ? fp8_at : nullptr;
  set(t, "model", "precision", identifier_value(name(prec), key_at(prec_at)), key_at(prec_at));

  // The parallel degrees and the batch (custom.yaml:41-63, 105).
  auto degree = [&](std::string_view name, std::string_view key, std::optional<std::int64_t> fallback) {
    auto const v = integer(name, fallback);
    auto const* e = job.find(name);
    if (v) set_strategy(t, key, integer_value(*v, value_at(e)), key_at(e));
    return v;
  };
  auto const tp = degree("TENSOR_MODEL_PARALLEL", "tp", std::nullopt);
  auto const pp = degree("PIPELINE_MODEL_PARALLEL", "pp", std::nullopt);
  auto const cp = degree("CONTEXT_PARALLEL", "cp", 1);
  set_strategy(t, "ep", integer_value(1, origin), origin);
  auto const micro = degree("MICRO_BATCH_SIZE", "micro_batch", std::nullopt);
  auto const minibs = integer("MINIBS", std::nullopt);
  auto const nodes = integer("DGXNNODES", 1);
  auto const per_node = integer("DGXNGPU", 8);
  if (failed || t.diags.has_errors() || !tp || !pp || !cp || !micro || !minibs || !nodes || !per_node) {
    if (!t.diags.has_errors()) t.diags.error(origin, "the job's variables could not be read");
    return;
  }
  // A degree below one is reported by lowering, where the job writes it.
  bool const degrees = *tp >= 1 && *pp >= 1 && *cp >= 1;
  bool const sp = boolean("SEQ_PARALLEL", true) && *tp > 1;
  set_strategy(t, "sequence_parallel", boolean_value(sp, key_at(job.find("SEQ_PARALLEL"))),
               key_at(job.find("SEQ_PARALLEL")));
  // Interleaving: 12 chunks unless set; 0 (run_and_time.sh makes it null)
  // is none, as is a pipeline of one stage.
  std::int64_t virtual_stages = 1;
  {
    auto const* e = var("INTERLEAVED_PIPELINE");
    std::optional<std::int64_t> v = 12;
    if (e && e->val->text == "null") v = 0;
    else if (e) v = job.integer(*e);
    if (!v) return;
    virtual_stages = *pp > 1 && *v > 1 ? *v : 1;
    if (e && *pp == 1 && *v > 1)
      t.diags.warning(e->key_where, "'INTERLEAVED_PIPELINE' does not apply to a pipeline of one stage: not read");
    set_strategy(t, "virtual_stages", integer_value(virtual_stages, value_at(e)), key_at(e));
  }
  // The global batch: MINIBS x floor(DGXNGPU x DGXNNODES / (tp x pp))
  // (custom.yaml:45).
  {
    auto const* at = job.find("MINIBS");
    auto const gpus = saturating_product({*nodes, *per_node});
    auto const model = degrees ? saturating_product({*tp, *pp}) : 1;
    auto const ranks = model > 0 ? gpus / model : 1;
    set(t, "training", "global_batch", integer_value(saturating_product({*minibs, ranks}), value_at(at)), key_at(at));
    if (auto w = world(ctx); w && *w != gpus) {
      auto const* n = job.find("DGXNNODES");
      t.diags.error(value_at(n), fmt::format("the job runs on DGXNNODES x DGXNGPU = {} x {} = {} GPUs; cluster '{}' "
                                             "has {}",
                                             *nodes, *per_node, gpus, ctx.prior->cluster.name, *w));
      return;
    }
    if (auto dp = degrees ? ranks_left(ctx, {*tp, *pp, *cp}) : std::nullopt)
      set_strategy(t, "dp", integer_value(*dp, origin), origin);
  }
  set_strategy(t, "order", string_value(boolean("TP_PP_DP_MAPPING", false) ? "tp-cp-pp-dp" : "tp-cp-dp-pp",
                                        key_at(job.find("TP_PP_DP_MAPPING"))),
               key_at(job.find("TP_PP_DP_MAPPING")));

  // Recomputation (custom.yaml:102-104): none unless a granularity is set.
  {
    auto const* granularity = var("ACT_CKPT_GRANULARITY");
    auto const g = text("ACT_CKPT_GRANULARITY");
    std::string mode = "none";
    if (g) {
      if (*g == "full" || *g == "selective") {
        mode = *g;
      } else {
        t.diags.error(value_at(granularity),
                      fmt::format("'ACT_CKPT_GRANULARITY' is 'full', 'selective' or 'null', not '{}'",
                                  dsl::escaped(*g)));
        return;
      }
    }
    auto const* method = text("ACT_CKPT_METHOD") ? job.find("ACT_CKPT_METHOD") : nullptr;
    auto const* layers = text("ACT_CKPT_NUM_LAYERS") ? job.find("ACT_CKPT_NUM_LAYERS") : nullptr;
    if (t.diags.has_errors()) return;
    if (!set_megatron_recomputation(job, mode, g ? granularity : nullptr, g.has_value(), method, layers,
                                    "ACT_CKPT_GRANULARITY=full"))
      return;
  }

  // The optimizer: distributed_fused_adam (ZeRO-1) unless
  // USE_DIST_OPTIMIZER is not True (run_and_time.sh:57, 116-118), which
  // reduces bf16 gradients (grad_sync_dtype) in buckets of BUCKET_CAP_MB,
  // overlapped with the backward and the next forward.
  auto const* dist_at = var("USE_DIST_OPTIMIZER");
  bool const dist = boolean("USE_DIST_OPTIMIZER", true);
  int const zero = dist ? 1 : 0;
  set_strategy(t, "zero", integer_value(zero, key_at(dist_at)), key_at(dist_at));
  set_strategy(t, "shard", identifier_value("all", key_at(dist_at)), key_at(dist_at));
  set(t, "training", "grad_precision", identifier_value(dist ? "bf16" : "fp32", key_at(dist_at)), key_at(dist_at));
  auto flag = [&](std::string_view name, std::string_view key, bool applies, bool fallback) {
    auto const* e = var(name);
    bool const v = boolean(name, fallback);
    set_megatron_behaviour(job, e, key, applies, v);
  };
  flag("OVERLAP_GRAD_SYNC", "overlap_grad_sync", dist, true);
  flag("OVERLAP_PARAM_SYNC", "overlap_param_gather", dist, true);
  {
    auto const* bucket = var("BUCKET_CAP_MB");
    if (dist) {
      auto const mb = bucket ? job.real(*bucket) : std::optional<double>(100);
      if (!mb) return;
      // Megabytes of the gradients, as the calibration's MLPerf rows read
      // bucket_cap_mb (bench/calibration.cpp, bucket_setting).
      set_megatron_bucket(job, *mb * 1e6, bucket);
    } else if (bucket) {
      t.diags.warning(bucket->key_where, "'BUCKET_CAP_MB' does not apply to this job: not read");
    }
  }

  // What else overlaps (custom.yaml:78-82, 116).
  flag("TP_COMM_OVERLAP", "tp_comm_overlap", *tp > 1 && sp, false);
  flag("OVERLAP_P2P_COMM", "overlap_p2p_comm", virtual_stages > 1, true);
  // The embedding and the loss counted as a layer each in the pipeline's
  // split (the 405B configs' custom.yaml account_for_embedding/loss_in_
  // pipeline_split: ../shared/data/mlperf/README.md, the 405B pipeline split).
  flag("ASYM_PP_EMBED", "account_for_embedding_in_pipeline_split", *pp > 1, false);
  flag("ASYM_PP_LOSS", "account_for_loss_in_pipeline_split", *pp > 1, false);
  flag("LAYER_CUDA_GRAPH", "cuda_graphs", true, false);
  flag("FP8_PARAMS", "fp8_param_gather", prec == precision::fp8 && zero == 1, false);
  if (auto const* nvls = var("NCCL_NVLS_ENABLE")) {
    auto v = job.integer(*nvls);
    if (!v) return;
    set(t, "training", "nvls", boolean_value(*v != 0, value_at(nvls)), nvls->key_where);
  }
  for (auto name : not_costed_variables) job.not_costed(name);
  // Which userbuffers kernels overlap tensor-parallel communication: the
  // overlap is costed the same whichever.
  job.not_costed("MC_TP_OVERLAP_", "it picks the kernels that overlap tensor-parallel communication, which is "
                                   "costed the same whichever");
  job.not_costed("NCCL_", "NCCL's tuning is not modelled: collectives are costed at the catalog's measured figures");
  job.not_costed("NVTE_", "Transformer Engine's tuning is not modelled: kernels are costed at the catalog's "
                          "measured figures");
}

}  // namespace dtplan::planner::import_detail
