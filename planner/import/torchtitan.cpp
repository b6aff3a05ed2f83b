// A torchtitan job TOML (torchtitan v0.2.0, torchtitan/config/job_config.py
// for every key and default read here).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "planner/import/import.hpp"
#include "planner/import/translate.hpp"
#include "planner/lower/lower.hpp"

namespace dtplan::planner::import_detail {

namespace {

// "every layer", "every 2nd layer", "every 12th layer": torchtitan's
// selective_ac_option as a phrase; a value that is no number as written.
std::string every_nth_layer(std::string const& n) {
  if (n == "1") return "every layer";
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos)
    return fmt::format("every '{}' layer", dsl::escaped(n));
  char const tens = n.size() >= 2 ? n[n.size() - 2] : '0', last = n.back();
  char const* suffix = tens == '1' ? "th" : last == '1' ? "st" : last == '2' ? "nd" : last == '3' ? "rd" : "th";
  return fmt::format("every {}{} layer", n, suffix);
}

// torchtitan's `model` `flavor` where it is a catalog preset (torchtitan_flavors).
std::optional<torchtitan_flavor> flavor_of(std::string const& model, std::string const& flavor) {
  for (auto const& f : torchtitan_flavors())
    if (f.model == model && f.flavor == flavor) return f;
  return std::nullopt;
}

// The flavors the messages name: "llama3 '8B', '70B' and '405B'; qwen3 ...".
std::string catalog_flavors() {
  std::string out;
  auto const all = torchtitan_flavors();
  for (std::size_t i = 0; i < all.size(); ++i) {
    bool const first = i == 0 || all[i - 1].model != all[i].model;
    bool const last = i + 1 == all.size() || all[i + 1].model != all[i].model;
    out += first ? fmt::format("{}{} '{}'", i == 0 ? "" : "; ", all[i].model, all[i].flavor)
                 : fmt::format("{} '{}'", last ? " and" : ",", all[i].flavor);
  }
  return out + " are";
}

// Pipeline schedules (torch.distributed.pipelining get_schedule_class):
// those that run one stage per rank, and those that run several.
constexpr std::array<std::string_view, 2> single_stage{"1F1B", "GPipe"};
constexpr std::array<std::string_view, 5> multi_stage{"Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble",
                                                      "ZBVZeroBubble", "DualPipeV"};

// Keys that moved. Before v0.1.0 torchtitan kept the batch and the degrees
// in [training] and [experimental] and fp8 in [float8] (9dec370, 2025-01,
// the code behind its docs/performance.md: torchtitan/config_manager.py:
// 219-365, 525-560); v0.1.0 still had [float8] and training.compile
// (config_manager.py:235, 476-494). Each of v0.2.0's names, and the older
// one read in its place where the job writes that instead.
constexpr std::array<std::pair<std::string_view, std::string_view>, 13> older_names{{
    {"training.local_batch_size", "training.batch_size"},
    {"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"},
    {"parallelism.data_parallel_shard_degree", "training.data_parallel_shard_degree"},
    {"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"},
    {"parallelism.enable_async_tensor_parallel", "experimental.enable_async_tensor_parallel"},
    {"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree"},
    {"parallelism.pipeline_parallel_schedule", "experimental.pipeline_parallel_schedule"},
    {"parallelism.context_parallel_degree", "experimental.context_parallel_degree"},
    {"parallelism.context_parallel_rotate_method", "experimental.context_parallel_rotate_method"},
    {"compile.enable", "training.compile"},
    {"quantize.linear.float8.enable_fsdp_float8_all_gather", "float8.enable_fsdp_float8_all_gather"},
    {"quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp",
     "float8.precompute_float8_dynamic_scale_for_fsdp"},
    {"quantize.linear.float8.filter_fqns", "float8.filter_fqns"},
}};

struct read_int {
  std::int64_t value = 0;
  entry const* at = nullptr;
  bool ok = true;
};

}  // namespace

void import_torchtitan(job_reader& job, context const& ctx) {
  auto& t = job.out();
  auto const origin = job.origin();
  auto key_at = [&](entry const* e) { return job.key_at(e); };
  auto value_at = [&](entry const* e) { return job.value_at(e); };
  // A key by v0.2.0's name, or by the older one the job writes instead.
  auto find = [&](std::string_view key) -> entry const* {
    if (auto const* e = job.find(key)) return e;
    for (auto const& [now, before] : older_names)
      if (now == key) return job.find(before);
    return nullptr;
  };
  auto integer = [&](std::string_view key, std::int64_t fallback) {
    read_int r{fallback, find(key)};
    if (r.at) {
      auto v = job.integer(*r.at);
      r.ok = v.has_value();
      if (v) r.value = *v;
    }
    return r;
  };
  auto text = [&](std::string_view key, std::string fallback) -> std::pair<std::optional<std::string>, entry const*> {
    auto const* e = find(key);
    if (!e) return {fallback, nullptr};
    return {job.text(*e), e};
  };
  auto flag = [&](std::string_view key, bool fallback) -> std::pair<std::optional<bool>, entry const*> {
    auto const* e = find(key);
    if (!e) return {fallback, nullptr};
    return {job.boolean(*e), e};
  };
  auto choice = [&](std::pair<std::optional<std::string>, entry const*> const& v,
                    std::vector<std::string_view> const& allowed) -> bool {
    if (!v.first) return false;
    if (std::find(allowed.begin(), allowed.end(), *v.first) != allowed.end()) return true;
    std::string list;
    for (std::size_t i = 0; i < allowed.size(); ++i)
      list += fmt::format("{}'{}'", i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ", allowed[i]);
    t.diags.error(value_at(v.second), fmt::format("torchtitan's '{}' is {}, not '{}'", v.second->key, list,
                                                  dsl::escaped(*v.first)));
    return false;
  };

  set(t, "training", "framework", identifier_value("torchtitan", origin), origin);

  // The model: a flavor of the catalog's when the file has no model.
  auto const name = text("model.name", "llama3");
  auto const flavor = text("model.flavor", "debugmodel");
  if (!name.first || !flavor.first) return;
  auto const known = flavor_of(*name.first, *flavor.first);
  auto const flavor_at = key_at(flavor.second ? flavor.second : name.second);
  // The flavor's attention kernel, whichever model block is costed: the
  // job runs the flavor's. Its block-causal mask lets a token attend only
  // within its document, which the data decides.
  if (known && known->flex_attention) {
    set(t, "training", "attention_backend", identifier_value("flex", flavor_at), flavor_at);
    t.diags.warning(flavor_at, fmt::format("torchtitan's {} '{}' runs FlexAttention with a block-causal mask: "
                                           "costed as causal attention over the whole sequence, the most it does "
                                           "(a sequence of several documents attends within each)",
                                           known->model, known->flavor));
  }
  if (!ctx.file_has_model) {
    if (!known) {
      t.diags.error(flavor_at, fmt::format("torchtitan's model '{}' flavor '{}' is not in dtplan's catalog ({}): "
                                           "describe it in a 'model' block of the .dtp file",
                                           dsl::escaped(*name.first), dsl::escaped(*flavor.first), catalog_flavors()));
      return;
    }
    ast::block b;
    b.where = b.header = flavor_at;
    b.kind = {flavor_at, "model"};
    b.name = ast::identifier{flavor_at, std::string(known->preset)};
    b.base = ast::identifier{flavor_at, std::string(known->preset)};
    if (known->ungrouped)
      for (auto key : {"router_groups", "router_group_topk"})
        b.body.push_back({flavor_at, ast::identifier{flavor_at, key}, integer_value(0, flavor_at)});
    t.blocks.push_back(std::move(b));
  } else if (known && ctx.prior) {
    if (auto m = catalog_model(std::string(known->preset)); m && !same_model_shape(*m, ctx.prior->model))
      t.diags.warning(flavor_at, fmt::format("the file's model '{}' is costed: torchtitan's {} '{}' has another shape",
                                             ctx.prior->model.name, dsl::escaped(*name.first),
                                             dsl::escaped(*flavor.first)));
  } else if (ctx.prior && (name.second || flavor.second) && *flavor.first != ctx.prior->model.name) {
    // A model the job names that dtplan cannot compare (llama4, another
    // qwen3, deepseek_v3, ...): the user must know which of the two is costed. A
    // flavor named after the file's model is the one --emit registers.
    t.diags.warning(flavor_at, fmt::format("the file's model '{}' is costed: torchtitan's model '{}' flavor '{}' is "
                                           "not in dtplan's catalog ({}), so its shape is not compared",
                                           ctx.prior->model.name, dsl::escaped(*name.first),
                                           dsl::escaped(*flavor.first), catalog_flavors()));
  }
  bool fp8 = false;
  span fp8_at = origin;
  if (auto const* e = job.find("model.converters")) {
    if (!e->val || e->val->k != dsl::config::value::kind::array) {
      t.diags.error(value_at(e), "expected an array of strings for 'model.converters'");
      return;
    }
    for (auto const& item : e->val->items) {
      if (item.text == "quantize.linear.float8" || item.text == "float8") {
        fp8 = true;
        fp8_at = item.where;
      } else {
        t.diags.warning(item.where, fmt::format("torchtitan's converter '{}' is not modelled: the plan is costed "
                                                "without it",
                                                dsl::escaped(item.text)));
      }
    }
  }
  // Before v0.1.0, fp8 was [float8] enable_float8_linear, not a converter.
  if (auto const enable = flag("float8.enable_float8_linear", false); enable.second) {
    if (!enable.first) return;
    if (*enable.first) fp8 = true, fp8_at = enable.second->key_where;
  }
  // Before v0.1.0 the model named its norm; "rmsnorm" is Llama's, which
  // the model costs (another stays a warning: not modelled).
  if (auto const* norm = find("model.norm_type")) {
    if (auto v = job.text(*norm); !v) return;
    else if (*v != "rmsnorm")
      t.diags.warning(norm->key_where, fmt::format("torchtitan's 'model.norm_type' '{}' is not modelled: costed as "
                                                   "the model's norm",
                                                   dsl::escaped(*v)));
  }
  job.not_costed("model.hf_assets_path");
  job.not_costed("model.tokenizer_path");
  job.not_costed("model.print_after_conversion");

  // Precision, and the sequence.
  auto const param = text("training.mixed_precision_param", "bfloat16");
  if (!choice(param, {"bfloat16", "float32"})) return;
  auto const prec = fp8 ? "fp8" : *param.first == "float32" ? "fp32" : "bf16";
  set(t, "model", "precision", identifier_value(prec, fp8 ? fp8_at : value_at(param.second)),
      fp8 ? fp8_at : key_at(param.second));
  auto const reduce = text("training.mixed_precision_reduce", "float32");
  if (!choice(reduce, {"float32"})) return;
  set(t, "training", "grad_precision", identifier_value("fp32", value_at(reduce.second)), key_at(reduce.second));
  if (auto dtype = text("training.dtype", "float32"); dtype.second) {
    if (!choice(dtype, {"bfloat16", "float32"})) return;
    if (*dtype.first == "bfloat16")
      t.diags.warning(dtype.second->key_where, "torchtitan's 'training.dtype' 'bfloat16' trains without fp32 master "
                                               "weights: not modelled, the plan is costed with them");
  }
  auto const seq = integer("training.seq_len", 2048);
  if (!seq.ok) return;
  set(t, "model", "seq_len", integer_value(seq.value, value_at(seq.at)), key_at(seq.at));
  if (auto opt = text("optimizer.name", "AdamW"); opt.second) {
    if (!opt.first) return;
    if (*opt.first == "AdamW" || *opt.first == "Adam")
      set(t, "model", "optimizer", identifier_value(*opt.first == "AdamW" ? "adamw" : "adam",
                                                    value_at(opt.second)), key_at(opt.second));
    else
      t.diags.warning(opt.second->key_where, fmt::format("torchtitan's optimizer '{}' is not modelled: costed as the "
                                                         "file's model's",
                                                         dsl::escaped(*opt.first)));
  }

  // The parallel degrees: torchtitan's mesh is pp, dp_replicate, dp_shard,
  // cp, tp, outermost first (dtplan's tp-cp-dp-pp).
  auto const replicate = integer("parallelism.data_parallel_replicate_degree", 1);
  auto const shard = integer("parallelism.data_parallel_shard_degree", -1);
  auto const tp = integer("parallelism.tensor_parallel_degree", 1);
  auto const pp = integer("parallelism.pipeline_parallel_degree", 1);
  auto const cp = integer("parallelism.context_parallel_degree", 1);
  // Experts over ep ranks of dp_shard x cp, tensor-parallel at tp (etp = tp)
  // or not at all (etp = 1, its default, which also spreads them over the
  // tp ranks) (TT v0.2.0 config/job_config.py:389-411, distributed/
  // parallel_dims.py:57-64, 79-90: the ep mesh is dp_shard_in_ep x cp x tp,
  // tp fastest, dtplan's expert grid).
  auto const ep = integer("parallelism.expert_parallel_degree", 1);
  auto const etp = integer("parallelism.expert_tensor_parallel_degree", 1);
  if (!replicate.ok || !shard.ok || !tp.ok || !pp.ok || !cp.ok || !ep.ok || !etp.ok) return;
  auto positive = [&](read_int const& r) {
    if (r.value >= 1) return true;
    t.diags.error(value_at(r.at), fmt::format("torchtitan's '{}' must be at least 1, got {}", r.at->key, r.value));
    return false;
  };
  if (!positive(replicate) || !positive(tp) || !positive(pp) || !positive(cp) || !positive(ep) || !positive(etp))
    return;
  // etp = 1 (the default) takes the tp ranks into the expert-parallel
  // group, which then must hold whole tp x cp blocks (parallel_dims.py:58-64).
  bool const experts_whole = ep.value > 1 && etp.value != tp.value;
  if (experts_whole) {
    if (etp.value != 1) {
      t.diags.error(value_at(etp.at), fmt::format("torchtitan runs 'parallelism.expert_tensor_parallel_degree' 1 or "
                                                  "the tensor-parallel degree {}, not {}",
                                                  tp.value, etp.value));
      return;
    }
    auto const block = saturating_product({tp.value, cp.value});
    if (ep.value % block != 0) {
      t.diags.error(value_at(ep.at),
                    fmt::format("torchtitan's 'parallelism.expert_parallel_degree' {} with experts whole on each rank "
                                "(expert_tensor_parallel_degree = 1) must be a multiple of tensor x context degrees "
                                "= {}",
                                ep.value, block));
      return;
    }
  }
  if (shard.value == 0 || shard.value < -1) {
    t.diags.error(value_at(shard.at), fmt::format("torchtitan's 'parallelism.data_parallel_shard_degree' must be -1 "
                                                  "(the ranks left) or at least 1, got {}",
                                                  shard.value));
    return;
  }
  std::optional<std::int64_t> shard_degree;
  if (shard.value >= 1) shard_degree = shard.value;
  else if (auto w = world(ctx)) {
    auto const others = saturating_product({replicate.value, tp.value, pp.value, cp.value});
    if (*w % others != 0) {
      auto const* at = replicate.at ? replicate.at : tp.at ? tp.at : pp.at ? pp.at : cp.at;
      t.diags.error(value_at(at),
                    fmt::format("torchtitan shards over the ranks left, but the cluster's {} GPUs are not a multiple "
                                "of data_parallel_replicate_degree x tensor x pipeline x context degrees = {}",
                                *w, others == std::numeric_limits<std::int64_t>::max() ? std::string("more than 2^63")
                                                                                       : fmt::format("{}", others)));
      return;
    }
    shard_degree = *w / others;
  }
  auto const dp_at = shard.at ? shard.at : replicate.at;
  if (shard_degree)
    set_strategy(t, "dp", integer_value(saturating_product({replicate.value, *shard_degree}), value_at(dp_at)), key_at(dp_at));
  set_strategy(t, "tp", integer_value(tp.value, value_at(tp.at)), key_at(tp.at));
  set_strategy(t, "pp", integer_value(pp.value, value_at(pp.at)), key_at(pp.at));
  set_strategy(t, "cp", integer_value(cp.value, value_at(cp.at)), key_at(cp.at));
  set_strategy(t, "ep", integer_value(ep.value, value_at(ep.at)), key_at(ep.at));
  if (experts_whole) set_strategy(t, "etp", integer_value(1, value_at(etp.at)), key_at(etp.at ? etp.at : ep.at));
  set_strategy(t, "sequence_parallel", boolean_value(tp.value > 1, value_at(tp.at)), key_at(tp.at));
  set_strategy(t, "order", string_value("tp-cp-dp-pp", origin), origin);
  // FSDP2 (ZeRO-3) over dp_shard x cp when either is above 1, HSDP with
  // replicas; DDP when only replicated (parallelize.py:113-146).
  bool const fsdp = (shard_degree ? *shard_degree > 1 : true) || cp.value > 1;
  set_strategy(t, "zero", integer_value(fsdp ? 3 : 0, value_at(dp_at)), key_at(dp_at));
  if (fsdp && replicate.value > 1 && shard_degree) {
    strategy degrees;
    degrees.dp = saturating_product({replicate.value, *shard_degree}), degrees.tp = tp.value, degrees.pp = pp.value,
    degrees.cp = cp.value;
    set_strategy(t, "shard", shard_value(*shard_degree, degrees, ctx, value_at(replicate.at)), key_at(replicate.at));
  }
  else
    set_strategy(t, "shard", identifier_value("all", value_at(dp_at)), key_at(dp_at));
  if (auto rotate = text("parallelism.context_parallel_rotate_method", "allgather"); rotate.second) {
    if (!choice(rotate, {"allgather", "alltoall"})) return;
    set(t, "training", "cp_comm_type", identifier_value(*rotate.first, value_at(rotate.second)), key_at(rotate.second));
  }
  if (auto async = flag("parallelism.enable_async_tensor_parallel", false); async.second) {
    if (!async.first) return;
    set(t, "training", "tp_comm_overlap", boolean_value(*async.first, value_at(async.second)), key_at(async.second));
  }
  // The logits gathered over tp before the loss (T17: v0.2.0
  // config/job_config.py:312, models/llama3/infra/parallelize.py:172-176).
  if (auto off = flag("parallelism.disable_loss_parallel", false); off.second) {
    if (!off.first) return;
    set(t, "training", "loss_parallel", boolean_value(!*off.first, value_at(off.second)), key_at(off.second));
  }
  if (auto reshard = text("parallelism.fsdp_reshard_after_forward", "default"); reshard.second) {
    if (!choice(reshard, {"default", "always", "never"})) return;
    // "default" is not pp_enabled: the preset's fsdp_reshard_with_pp = false.
    // "never" keeps the stage gathered with or without pipelining (dtplan
    // describes it with pipelining only); "always" regathers every
    // micro-batch.
    if (*reshard.first != "default") {
      bool const reshard_with_pp = *reshard.first == "always";
      set(t, "training", "fsdp_reshard_with_pp", boolean_value(reshard_with_pp, value_at(reshard.second)),
          key_at(reshard.second));
      if (!reshard_with_pp && pp.value == 1)
        t.diags.warning(reshard.second->key_where,
                        "torchtitan's 'parallelism.fsdp_reshard_after_forward' 'never' without pipelining is not "
                        "modelled: each layer is costed as resharded after its forward");
    }
  }

  // The pipeline's schedule and the batch.
  auto const local = integer("training.local_batch_size", 8);
  auto const global = integer("training.global_batch_size", -1);
  auto const pp_micro = integer("parallelism.pipeline_parallel_microbatch_size", 1);
  // Before v0.1.0 the pipeline split the local batch into a number of
  // micro-batches, its stages unless written, the stages set by split
  // points (9dec370 config_manager.py:293-353).
  bool const older_pipeline = pp.at && pp.at->key.starts_with("experimental.");
  auto const old_count = integer("experimental.pipeline_parallel_microbatches", 0);
  auto const* splits = find("experimental.pipeline_parallel_split_points");
  std::int64_t old_stages = pp.value;
  if (splits && splits->val && splits->val->k == dsl::config::value::kind::array)
    old_stages = static_cast<std::int64_t>(splits->val->items.size()) + 1;
  if (!local.ok || !global.ok || !pp_micro.ok || !old_count.ok || !positive(local)) return;
  auto micro = pp.value > 1 ? pp_micro : local;
  if (pp.value > 1 && older_pipeline && !pp_micro.at) {
    std::int64_t const n = old_count.at ? old_count.value : old_stages;
    auto const* at = old_count.at ? old_count.at : local.at;
    if (n < 1 || local.value % n != 0) {
      t.diags.error(value_at(at), fmt::format("torchtitan splits the batch of {} into {} micro-batches, which do not "
                                              "divide it",
                                              local.value, n));
      return;
    }
    micro = read_int{local.value / n, at, true};
  }
  if (splits)
    t.diags.warning(splits->key_where, "torchtitan's split points place the stage boundaries at named layers: dtplan "
                                       "splits the layers evenly");
  if (!positive(micro)) return;
  set_strategy(t, "micro_batch", integer_value(micro.value, value_at(micro.at)), key_at(micro.at));
  std::int64_t virtual_stages = 1;
  auto const schedule = text("parallelism.pipeline_parallel_schedule", "1F1B");
  auto const per_stage = integer("parallelism.pipeline_parallel_layers_per_stage", 0);
  auto const first_less = integer("parallelism.pipeline_parallel_first_stage_less_layers", 1);
  auto const last_less = integer("parallelism.pipeline_parallel_last_stage_less_layers", 1);
  if (!schedule.first || !per_stage.ok || !first_less.ok || !last_less.ok) return;
  if (pp.value > 1) {
    auto const& sched = *schedule.first;
    bool const multi = std::find(multi_stage.begin(), multi_stage.end(), sched) != multi_stage.end();
    if (!multi && std::find(single_stage.begin(), single_stage.end(), sched) == single_stage.end()) {
      t.diags.warning(key_at(schedule.second), fmt::format("torchtitan's pipeline schedule '{}' is not modelled: "
                                                           "costed as 1F1B",
                                                           dsl::escaped(sched)));
    } else if (sched == "GPipe") {
      t.diags.warning(key_at(schedule.second), "torchtitan's pipeline schedule 'GPipe' is costed as 1F1B (its "
                                               "bubble, less memory than GPipe keeps)");
    } else if (multi && sched != "Interleaved1F1B") {
      t.diags.warning(key_at(schedule.second), fmt::format("torchtitan's pipeline schedule '{}' is costed as "
                                                           "Interleaved1F1B",
                                                           sched));
    }
    if (multi) {
      virtual_stages = 2;  // torchtitan's default: two stages per rank
      if (older_pipeline && splits) virtual_stages = std::max<std::int64_t>(1, old_stages / pp.value);
      if (per_stage.at) {
        if (ctx.prior) {
          // Summed in doubles: the job's figures can be near 2^63 each.
          double const units = static_cast<double>(ctx.prior->model.layers) + static_cast<double>(first_less.value) +
                               static_cast<double>(last_less.value);
          double const per = static_cast<double>(std::max<std::int64_t>(1, per_stage.value));
          auto const stages = static_cast<std::int64_t>(std::clamp(std::ceil(units / per), 1.0, 9.0e18));
          virtual_stages = std::max<std::int64_t>(1, stages / pp.value);
        }
      }
    }
    // The embedding and the output counted as a layer each (1, torchtitan's
    // defaults): the training block's keys (the torchtitan preset splits
    // them so, the first stages a layer more); other weights dtplan cannot
    // say.
    bool const counted = (first_less.value == 0 || first_less.value == 1) &&
                         (last_less.value == 0 || last_less.value == 1);
    auto const* at = first_less.at ? first_less.at : last_less.at ? last_less.at : schedule.second;
    if (counted) {
      for (auto [less, key] : {std::pair{first_less, "account_for_embedding_in_pipeline_split"},
                               std::pair{last_less, "account_for_loss_in_pipeline_split"}})
        if (less.value == 1)
          set(t, "training", key, boolean_value(true, value_at(less.at ? less.at : at)), key_at(less.at ? less.at : at));
    } else if (first_less.value != 0 || last_less.value != 0) {
      t.diags.warning(key_at(at), "torchtitan counts the embedding and the output as more than a layer each when it "
                                  "splits the pipeline (pipeline_parallel_first_stage_less_layers, "
                                  "pipeline_parallel_last_stage_less_layers); dtplan counts each as one layer at "
                                  "most: costed on dtplan's split of the transformer layers");
    }
  }
  set_strategy(t, "virtual_stages", integer_value(virtual_stages, value_at(schedule.second)), key_at(schedule.second));
  // One schedule of local / micro micro-batches per accumulation step; a
  // global batch of -1 is local x dp (training.global_batch_size).
  if (global.value > 0) {
    set(t, "training", "global_batch", integer_value(global.value, value_at(global.at)), key_at(global.at));
    if (pp.value > 1 && shard_degree && global.value > saturating_product({local.value, replicate.value, *shard_degree}))
      t.diags.warning(key_at(global.at), "torchtitan runs one pipeline schedule per gradient accumulation step; "
                                         "dtplan costs one schedule of every micro-batch of the step (one bubble)");
  } else if (global.value == -1) {
    auto const at = local.at ? local.at : global.at;
    set(t, "training", "global_batch",
        integer_value(shard_degree ? saturating_product({local.value, replicate.value, *shard_degree}) : 1, value_at(at)),
        key_at(at));
  } else {
    t.diags.error(value_at(global.at), fmt::format("torchtitan's 'training.global_batch_size' must be -1 (local batch "
                                                   "x data-parallel ranks) or at least 1, got {}",
                                                   global.value));
    return;
  }

  // Recomputation (activation_checkpoint.mode defaults to 'selective', every
  // second layer: config/job_config.py:588-591).
  auto const mode = text("activation_checkpoint.mode", "selective");
  auto const option = text("activation_checkpoint.selective_ac_option", "2");
  if (!choice(mode, {"selective", "full", "memory_budget", "none"}) || !option.first) return;
  std::string checkpoint = *mode.first;
  auto const mode_at = mode.second ? mode.second : option.second;
  if (*mode.first == "selective") {
    if (*option.first == "op") {
      checkpoint = "ops";
    } else {
      checkpoint = "full";
      t.diags.warning(key_at(mode_at), fmt::format("torchtitan's selective checkpointing of {} is costed as "
                                                   "checkpoint = full",
                                                   every_nth_layer(*option.first)));
    }
  } else if (*mode.first == "memory_budget") {
    checkpoint = "full";
    t.diags.warning(key_at(mode_at), "torchtitan's 'memory_budget' checkpointing is costed as checkpoint = full");
  }
  set_strategy(t, "checkpoint", identifier_value(checkpoint, value_at(mode_at)), key_at(mode_at));
  // The matmuls the op policy always recomputes, named by their weights'
  // modules (by default the router's gate, config/job_config.py:597-599),
  // which is what op_checkpoint_of costs; another list is not.
  if (auto const* forced = job.find("activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns")) {
    auto const names = job.texts(*forced);
    if (names && *names != std::vector<std::string>{"moe.router.gate"})
      t.diags.warning(forced->key_where, "torchtitan's 'activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns' "
                                         "other than [\"moe.router.gate\"] is not costed: costed as that default (the "
                                         "router's gate recomputed, every other matmul kept)");
  }

  // Compile fuses the element-wise operators; float8's all-gather.
  // torchtitan v0.1.0 spelled them `training.compile` (each transformer
  // block) and `[float8]` (v0.1.0 torchtitan/config_manager.py:235,
  // 476-494); v0.2.0 moved them to `[compile]` and `[quantize.linear.float8]`.
  // Only "model" in compile.components compiles the blocks (["model",
  // "loss"] by default, config/job_config.py:637-644; models/llama3/infra/
  // parallelize.py reads model_compile_enabled): without it they run
  // eager, and op-level checkpointing wraps FlexAttention's blocks module
  // by module as uncompiled ones (op_checkpoint_of).
  auto const compile = flag("compile.enable", false);
  if (!compile.first) return;
  auto const* components = job.find("compile.components");
  bool model = true;
  if (components) {
    model = false;
    if (components->val)
      for (auto const& item : components->val->items) model = model || item.text == "model";
  }
  set(t, "training", "fused_elementwise", boolean_value(*compile.first && model, value_at(compile.second)),
      key_at(compile.second));
  if (components && *compile.first && !model)
    t.diags.warning(components->key_where, "torchtitan compiles no transformer block without 'model' in "
                                           "'compile.components': costed with its eager kernels");
  job.not_costed("compile.backend");
  if (fp8) {
    auto const gather = flag("quantize.linear.float8.enable_fsdp_float8_all_gather", false);
    if (!gather.first) return;
    set(t, "training", "fp8_param_gather", boolean_value(*gather.first, value_at(gather.second)),
        key_at(gather.second));
    // The scales' precomputation and the output layer kept in bf16
    // (filter_fqns = ["output"]) are how dtplan costs fp8 already.
    find("quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp");
    find("quantize.linear.float8.filter_fqns");
  }
  if (!fp8)
    for (auto prefix : {"quantize.", "float8."})
      job.not_costed(prefix, "it applies only with the float8 converter in 'model.converters', which this job does not "
                             "use");

  // What does not change a step's time or memory.
  for (auto prefix : {"job.", "profiling.", "metrics.", "optimizer.", "lr_scheduler.", "checkpoint.", "validation.",
                      "comm.", "experimental.", "memory_estimation.", "training.dataset", "training.steps",
                      "training.warmup_steps",
                      "training.max_norm", "training.gc_", "training.seed", "training.deterministic"})
    job.not_costed(prefix);
}

}  // namespace dtplan::planner::import_detail

namespace dtplan::planner {

std::span<torchtitan_flavor const> torchtitan_flavors() {
  static constexpr torchtitan_flavor all[] = {
      {"llama3", "8B", "llama3_8b"},      {"llama3", "70B", "llama3_70b"},
      {"llama3", "405B", "llama3_405b"},  {"qwen3", "32B", "qwen3_32b"},
      {"qwen3", "30B-A3B", "qwen3_30b_a3b"}, {"qwen3", "235B-A22B", "qwen3_235b_a22b"},
      // Its n_expert_groups and n_limited_groups are not read in v0.2.0
      // (models/deepseek_v3/model/args.py:69-71: "node-limited routing is
      // not supported yet"): torchtitan routes over all 256 experts, which
      // its all-to-all dispatch does not see. No multi-token prediction.
      {"deepseek_v3", "671B", "deepseek_v3", true, true},
  };
  return all;
}

bool same_model_shape(model const& a, model const& b) {
  return a.layers == b.layers && a.hidden == b.hidden && a.heads == b.heads && a.kv_heads == b.kv_heads &&
         a.head_width() == b.head_width() && a.qk_norm == b.qk_norm && a.ffn == b.ffn && a.mlp == b.mlp &&
         a.norm == b.norm && a.position == b.position && a.vocab == b.vocab && a.tied_embeddings == b.tied_embeddings &&
         a.experts == b.experts && a.experts_per_token == b.experts_per_token && a.mlp_width() == b.mlp_width() &&
         a.shared_expert_ffn == b.shared_expert_ffn && a.moe_layer_count() == b.moe_layer_count() &&
         a.dense_layers == b.dense_layers && a.mtp_layers == b.mtp_layers && a.q_lora_rank == b.q_lora_rank &&
         a.kv_lora_rank == b.kv_lora_rank &&
         a.qk_rope_head_dim == b.qk_rope_head_dim && a.v_head_width() == b.v_head_width();
}

std::optional<torchtitan_flavor> torchtitan_flavor_of(model const& m) {
  for (auto const& f : torchtitan_flavors())
    if (auto preset = catalog_model(std::string(f.preset)); preset && same_model_shape(*preset, m)) return f;
  return std::nullopt;
}

}  // namespace dtplan::planner
