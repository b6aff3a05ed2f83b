// A DeepSpeed job: its ds_config.json (DeepSpeed v0.17.5: runtime/config.py,
// runtime/zero/config.py, runtime/precision_config.py,
// runtime/activation_checkpointing/config.py for every key and default read
// here) and, when given, Megatron-DeepSpeed 4efb479's pretrain_gpt.py
// arguments, which hold what ds_config.json does not: the model, tensor and
// pipeline degrees, recomputation.
#include <fmt/format.h>

#include <algorithm>

#include "planner/import/translate.hpp"

namespace dtplan::planner::import_detail {

void import_deepspeed(job_reader* args, job_reader* config, context const& ctx) {
  auto& t = (args ? args : config)->out();
  auto const origin = (args ? args : config)->origin();
  set(t, "training", "framework", identifier_value("deepspeed", origin), origin);

  megatron_common c;
  c.tp = c.pp = c.cp = 1;
  if (args) {
    c = import_megatron_args(*args, ctx, true);
    if (t.diags.has_errors()) return;
    if (auto const* flash = args->flag("--use-flash-attn-v2"))
      set(t, "training", "attention_backend", identifier_value("flash", flash->key_where), flash->key_where);
    else if (auto const* v1 = args->flag("--use-flash-attn"))
      set(t, "training", "attention_backend", identifier_value("flash", v1->key_where), v1->key_where);
    else
      set(t, "training", "attention_backend", identifier_value("unfused", origin), origin);
    for (auto flag : {"--deepspeed", "--deepspeed_config", "--deepspeed-config", "--deepscale", "--deepscale_config",
                      "--no-pipeline-parallel", "--deepspeed-activation-checkpointing"})
      args->find(flag);
    args->not_costed("--no-query-key-layer-scaling");
  } else {
    for (auto key : {"tp", "pp", "cp", "ep", "virtual_stages"}) set_strategy(t, key, integer_value(1, origin), origin);
    set_strategy(t, "sequence_parallel", boolean_value(false, origin), origin);
    set_strategy(t, "checkpoint", identifier_value("none", origin), origin);
    set_strategy(t, "order", string_value("tp-cp-dp-pp", origin), origin);
    t.diags.warning(origin, "a ds_config.json does not hold the model, the tensor and pipeline degrees or the "
                            "recomputation (Megatron-DeepSpeed's arguments do): costed with tp = pp = 1 and no "
                            "recomputation; give the arguments (naming the ds_config.json with '--deepspeed_config') "
                            "to '--from deepspeed' instead");
  }

  auto const& reader = args ? *args : *config;
  auto key_at = [&](entry const* e) { return reader.key_at(e); };
  auto value_at = [&](entry const* e) { return reader.value_at(e); };
  auto const dp_world = ranks_left(ctx, {*c.tp, *c.pp, *c.cp});

  // ZeRO, the batch and the precision: ds_config.json's where it has them.
  std::optional<std::int64_t> zero;
  entry const* zero_at = nullptr;
  if (args) {
    if (auto const* z = args->find("--zero-stage")) {
      zero = args->integer(*z);
      if (!zero) return;
      zero_at = z;
    }
  }
  std::optional<std::int64_t> train, micro = c.micro_batch, accumulation;
  entry const *train_at = nullptr, *micro_at = nullptr, *accumulation_at = nullptr;
  if (args) {
    if (c.global_batch) train = c.global_batch, train_at = args->find("--global-batch-size");
    micro_at = args->find("--micro-batch-size");
  }
  precision prec = c.prec.value_or(precision::fp32);
  span prec_at = c.prec ? c.prec_where : origin;
  // Hugging Face's Trainer writes its own arguments over "auto" before
  // DeepSpeed reads the file (transformers src/transformers/integrations/
  // deepspeed.py at 0234833, HfTrainerDeepSpeedConfig.trainer_config_process
  // and trainer_config_finalize); dtplan does not see those arguments.
  auto const automatic = [](entry const* e) {
    return e && e->val && e->val->k == dsl::config::value::kind::string && e->val->text == "auto";
  };
  auto const trainer = [&](entry const* e, std::string_view from, std::string const& costed) {
    t.diags.warning(e->val->where, fmt::format("'{}' is 'auto': Hugging Face's Trainer fills it in {}, which dtplan "
                                               "does not see: {}",
                                               e->key, from, costed));
  };
  entry const *auto_micro = nullptr, *auto_accumulation = nullptr, *auto_train = nullptr;
  bool auto_precision = false, precision_from_file = false;
  if (config) {
    auto& j = *config;
    auto read = [&](std::string_view key, std::optional<std::int64_t>& into, entry const*& at,
                    entry const*& automatic_at) {
      if (auto const* e = j.find(key); automatic(e)) {
        automatic_at = e;
      } else if (e) {
        auto v = j.integer(*e);
        if (!v) return false;
        if (into && *into != *v && args)
          t.diags.warning(e->key_where, fmt::format("'{}' is {} here and {} in the arguments: costed with this file's",
                                                    key, *v, *into));
        into = v, at = e;
      }
      return true;
    };
    entry const* auto_stage = nullptr;
    if (!read("zero_optimization.stage", zero, zero_at, auto_stage) ||
        !read("train_batch_size", train, train_at, auto_train) ||
        !read("train_micro_batch_size_per_gpu", micro, micro_at, auto_micro) ||
        !read("gradient_accumulation_steps", accumulation, accumulation_at, auto_accumulation))
      return;
    if (auto_stage) {
      t.diags.error(auto_stage->val->where, "'zero_optimization.stage' is 'auto', which no Trainer fills in: write "
                                            "the stage, 0 to 3");
      return;
    }
    if (auto_train)
      trainer(auto_train, "as the world's size x the batch per GPU x the accumulation",
              "costed as the job's other figures give it");
    auto enabled = [&](std::string_view key) -> std::optional<bool> {
      auto const* e = j.find(key);
      if (automatic(e)) {
        // The Trainer's --bf16 / --fp16 (default off): the file's precision.
        auto_precision = true;
        trainer(e, fmt::format("from its '--{}' argument", key.substr(0, key.find('.'))),
                "costed in the .dtp file's precision");
        return false;
      }
      return e ? j.boolean(*e) : std::optional<bool>(false);
    };
    auto bf16 = enabled("bf16.enabled");
    auto old_bf16 = enabled("bfloat16.enabled");
    auto fp16 = enabled("fp16.enabled");
    if (!bf16 || !fp16 || !old_bf16) return;
    if (*bf16 || *old_bf16 || *fp16) {
      auto const* at = j.find(*fp16 ? "fp16.enabled" : *bf16 ? "bf16.enabled" : "bfloat16.enabled");
      auto const from_config = *fp16 ? precision::fp16 : precision::bf16;
      if (prec == precision::fp8 && from_config == precision::bf16) {
        // Transformer Engine's fp8 runs on a bf16 engine.
      } else {
        prec = from_config;
        prec_at = at->key_where;
      }
    } else if (auto_precision && !c.prec) {
      prec = ctx.prior ? ctx.prior->model.prec : precision::bf16;
      precision_from_file = true;
    } else if (args && c.prec && *c.prec != precision::fp32) {
      t.diags.warning(origin, fmt::format("the arguments train in {} but ds_config.json enables neither 'bf16' nor "
                                          "'fp16': costed in fp32, as DeepSpeed runs it",
                                          name(*c.prec)));
      prec = precision::fp32;
    }
    if (auto const* comm = j.find("communication_data_type")) {
      auto v = j.text(*comm);
      if (!v) return;
      if (*v == "fp32" || *v == "bf16" || *v == "fp16")
        set(t, "training", "grad_comm_precision", identifier_value(*v, value_at(comm)), comm->key_where);
      else {
        t.diags.error(value_at(comm), fmt::format("DeepSpeed's 'communication_data_type' is 'fp16', 'bf16' or 'fp32', "
                                                  "not '{}'",
                                                  dsl::escaped(*v)));
        return;
      }
    }
  }
  // "auto" leaves the file's precision (the first pass's stand-in unset).
  if (!precision_from_file) set(t, "model", "precision", identifier_value(name(prec), prec_at), prec_at);
  std::int64_t const stage = zero.value_or(0);
  if (stage < 0 || stage > 3) {
    t.diags.error(value_at(zero_at), fmt::format("DeepSpeed's ZeRO stage is 0, 1, 2 or 3, not {}", stage));
    return;
  }
  // bf16 without ZeRO runs DeepSpeed's BF16_Optimizer (engine.py:1085-1100,
  // 1376-1426; bf16_optimizer.py:47-60, FRAMEWORKS.md D8): gradients
  // accumulate in fp32 and are all-reduced whole, then each data-parallel
  // rank updates its slice of the fp32 master weights and moments and the
  // weights are all-gathered: ZeRO-1's memory with an all-reduce
  // (BigScience's tr11 script: "bf16 must use z0! it implements its own zero
  // stage 1 equivalent"). Kept in fp32; the all-reduce casts them to
  // communication_data_type first, bf16 unless written (v0.17.5
  // engine.py:1011-1022, 2647-2648; the 2022 engine BLOOM ran, 56c522386,
  // the same: engine.py:712-721, 2068-2069).
  bool const bf16_optimizer = stage == 0 && prec == precision::bf16;
  set_strategy(t, "zero", integer_value(bf16_optimizer ? 1 : stage, value_at(zero_at)), key_at(zero_at));
  if (bf16_optimizer) {
    set(t, "training", "grad_reduce", identifier_value("all_reduce", key_at(zero_at)), key_at(zero_at));
    set(t, "training", "grad_precision", identifier_value("fp32", key_at(zero_at)), key_at(zero_at));
    // Its fp32 gradients are its own buffers: no ZeRO reduce buckets.
    set(t, "training", "contiguous_gradients", boolean_value(false, key_at(zero_at)), key_at(zero_at));
    bool const comm_written = config && config->find("communication_data_type");
    if (!comm_written)
      set(t, "training", "grad_comm_precision", identifier_value("bf16", key_at(zero_at)), key_at(zero_at));
  }

  // The Trainer's accumulation and batch per GPU where the file says
  // "auto" (TrainingArguments' defaults 1 and 8): the batch per GPU is the
  // .dtp file's global batch over the data-parallel ranks where that
  // divides (the first pass, which knows no world, takes 8).
  if (auto_accumulation && !accumulation) {
    accumulation = 1, accumulation_at = auto_accumulation;
    trainer(auto_accumulation, "from its '--gradient_accumulation_steps' argument (default 1)", "costed at 1");
  }
  if (auto_micro && !micro) {
    std::int64_t const acc = accumulation.value_or(1);
    std::int64_t const batch = train ? *train : ctx.prior ? ctx.prior->training.global_batch : 0;
    // Divided in turn: no product of the file's figures to overflow.
    bool const divides =
        dp_world && *dp_world > 0 && acc > 0 && batch > 0 && batch % acc == 0 && (batch / acc) % *dp_world == 0;
    micro = divides ? batch / acc / *dp_world : 8;
    micro_at = auto_micro;
    trainer(auto_micro, "from its '--per_device_train_batch_size' argument (default 8)",
            divides ? fmt::format("costed at {}, the global batch {} over {} data-parallel ranks{}", *micro, batch,
                                  *dp_world, acc > 1 ? fmt::format(" and {} accumulation steps", acc) : "")
                    : std::string("costed at the Trainer's default, 8"));
  }

  // dp: the batch's when ds_config.json gives all three figures, else the
  // ranks the tensor and pipeline degrees leave.
  std::optional<std::int64_t> dp;
  auto const per_rank = micro && accumulation ? saturating_product({*micro, *accumulation}) : 0;
  if (train && per_rank > 0 && *train % per_rank == 0)
    dp = *train / per_rank;
  else dp = dp_world;
  // With all three written DeepSpeed asserts they multiply out on the
  // data-parallel ranks (v0.17.5 runtime/config.py:870-885, _batch_assertion).
  if (train && micro && accumulation && dp_world && *train != saturating_product({per_rank, *dp_world})) {
    t.diags.error(value_at(accumulation_at),
                  fmt::format("DeepSpeed refuses this batch: train_batch_size {} is not train_micro_batch_size_per_gpu "
                              "{} x gradient_accumulation_steps {} x the {} data-parallel ranks",
                              *train, *micro, *accumulation, *dp_world));
    return;
  }
  if (dp) set_strategy(t, "dp", integer_value(*dp, value_at(train_at ? train_at : micro_at)), key_at(train_at));
  if (!micro) {
    t.diags.error(origin, args ? "the job writes neither '--micro-batch-size' nor ds_config.json's "
                                 "'train_micro_batch_size_per_gpu'"
                               : "the job does not write 'train_micro_batch_size_per_gpu'");
    return;
  }
  set_strategy(t, "micro_batch", integer_value(*micro, value_at(micro_at)), key_at(micro_at));
  if (train) {
    set(t, "training", "global_batch", integer_value(*train, value_at(train_at)), key_at(train_at));
  } else if (auto_micro && !ctx.prior) {
    // The first pass leaves the .dtp file's global batch for the second.
  } else if (micro) {
    auto const at = accumulation_at ? accumulation_at : micro_at;
    set(t, "training", "global_batch",
        integer_value(saturating_product({*micro, accumulation.value_or(1), dp.value_or(1)}), value_at(at)), key_at(at));
  }

  // What DeepSpeed does with the gradients and the shards.
  std::string shard = "all";
  entry const* shard_at = nullptr;
  std::int64_t mics_ranks = 0;
  if (config) {
    auto& j = *config;
    // A bucket of reduce_bucket_size elements as the reduction moves them.
    auto const grad_bytes = [&] {
      for (auto const* key : {"grad_comm_precision", "grad_precision"})
        for (auto const& s : t.settings)
          if (s.key.name == key)
            if (auto const* id = std::get_if<ast::identifier>(&s.rhs)) return id->name == "fp32" ? 4.0 : 2.0;
      return prec == precision::fp32 ? 4.0 : 2.0;
    }();
    if (stage >= 1) {
      auto const* overlap = j.find("zero_optimization.overlap_comm");
      auto o = overlap ? j.boolean(*overlap) : std::optional<bool>(stage == 3);  // zero/config.py:354-358
      if (!o) return;
      set(t, "training", "overlap_grad_sync", boolean_value(*o, key_at(overlap)), key_at(overlap));
      if (auto const* bucket = j.find("zero_optimization.reduce_bucket_size"); automatic(bucket)) {
        // The Trainer's hidden_size x hidden_size elements.
        if (ctx.prior) {
          double const h = static_cast<double>(ctx.prior->model.hidden);
          t.diags.warning(bucket->val->where,
                          fmt::format("'zero_optimization.reduce_bucket_size' is 'auto': Hugging Face's Trainer fills "
                                      "it in as the model's hidden size squared, {:.0f} elements: costed so",
                                      h * h));
          set(t, "training", "grad_bucket", identifier_value("fixed", bucket->key_where), bucket->key_where);
          set(t, "training", "ddp_bucket_size", bytes_value(h * h * grad_bytes, value_at(bucket)), bucket->key_where);
        }
      } else if (bucket) {
        auto n = j.integer(*bucket);
        if (!n) return;
        set(t, "training", "grad_bucket", identifier_value("fixed", bucket->key_where), bucket->key_where);
        set(t, "training", "ddp_bucket_size", bytes_value(static_cast<double>(*n) * grad_bytes, value_at(bucket)),
            bucket->key_where);
      }
    }
    if (stage == 1 || stage == 2) {
      if (auto const* contiguous = j.find("zero_optimization.contiguous_gradients")) {
        auto v = j.boolean(*contiguous);
        if (!v) return;
        set(t, "training", "contiguous_gradients", boolean_value(*v, value_at(contiguous)), contiguous->key_where);
      }
      auto const* multi = j.find("zero_optimization.use_multi_rank_bucket_allreduce");
      auto const* scatter = j.find("zero_optimization.reduce_scatter");
      auto m = multi ? j.boolean(*multi) : std::optional<bool>(true);
      auto s = scatter ? j.boolean(*scatter) : std::optional<bool>(true);
      if (!m || !s) return;
      // Each bucket is all-reduced unless reduced to its owner (zero/config.py:105-121).
      bool const all_reduce = *m || !*s;
      auto const* at = multi ? multi : scatter;
      set(t, "training", "grad_reduce", identifier_value(all_reduce ? "all_reduce" : "reduce_scatter", key_at(at)),
          key_at(at));
    }
    for (auto key : {"zero_optimization.offload_optimizer.device", "zero_optimization.offload_param.device"})
      if (auto const* off = j.find(key)) {
        auto v = j.text(*off);
        if (!v) return;
        if (*v != "none")
          t.diags.warning(off->key_where, fmt::format("DeepSpeed's '{}' '{}' is not modelled: the plan is costed "
                                                      "without offloading",
                                                      key, dsl::escaped(*v)));
      }
    if (auto const* mics = j.find("zero_optimization.mics_shard_size")) {
      auto n = j.integer(*mics);
      if (!n) return;
      if (*n > 0 && stage == 3) {
        shard = fmt::format("{}", *n);
        shard_at = mics;
        mics_ranks = *n;
      } else if (*n > 0) {
        t.diags.warning(mics->key_where, "'zero_optimization.mics_shard_size' is read only at ZeRO stage 3");
      }
    }
    if (c.pp.value_or(1) > 1) {
      auto const* pipe = j.find("pipeline.pipe_partitioned");
      auto const* grad = j.find("pipeline.grad_partitioned");
      auto p = pipe ? j.boolean(*pipe) : std::optional<bool>(true);
      auto g = grad ? j.boolean(*grad) : std::optional<bool>(true);
      if (!p || !g) return;
      if (*p != *g)
        t.diags.warning(key_at(grad), "'pipeline.pipe_partitioned' and 'pipeline.grad_partitioned' differ: costed "
                                      "with the first for both");
      set(t, "training", "p2p_scatter_gather", boolean_value(*p, key_at(pipe)), key_at(pipe));
    }
    for (auto key : {"activation_checkpointing.partition_activations", "activation_checkpointing.cpu_checkpointing"})
      if (auto const* e = j.find(key)) {
        auto v = j.boolean(*e);
        if (!v) return;
        if (*v)
          t.diags.warning(e->key_where, fmt::format("DeepSpeed's '{}' is not modelled: the plan is costed without it",
                                                    key));
      }
    j.find("activation_checkpointing.contiguous_memory_optimization");
    for (auto prefix : {"steps_per_print", "wall_clock_breakdown", "gradient_clipping", "optimizer.", "scheduler.",
                        "zero_allow_untested_optimizer", "fp16.loss_scale", "fp16.initial_scale_power",
                        "fp16.hysteresis", "fp16.min_loss_scale", "fp16.loss_scale_window", "tensorboard.",
                        "wandb.", "csv_monitor.", "flops_profiler.", "dump_state", "aio.", "memory_breakdown",
                        "activation_checkpointing.number_checkpoints", "activation_checkpointing.profile",
                        "activation_checkpointing.synchronize_checkpoint_boundary", "checkpoint.",
                        "zero_optimization.offload_optimizer.pin_memory", "zero_optimization.offload_param.pin_memory",
                        "zero_optimization.offload_optimizer.buffer_count", "zero_optimization.offload_param.buffer_count",
                        "zero_optimization.offload_optimizer.pipeline_read",
                        "zero_optimization.offload_optimizer.pipeline_write"})
      j.not_costed(prefix);
  }
  if (mics_ranks > 0) {
    strategy degrees;
    degrees.dp = dp.value_or(0), degrees.tp = *c.tp, degrees.pp = *c.pp;
    set_strategy(t, "shard", shard_value(mics_ranks, degrees, ctx, value_at(shard_at)), key_at(shard_at));
  } else {
    set_strategy(t, "shard", identifier_value("all", origin), origin);
  }
}

}  // namespace dtplan::planner::import_detail
