#pragma once
// The plans the framework-job tests export: every plan of plans/ (its fixed
// strategies and the best its search finds) under each framework dtplan
// writes jobs for, and variants of them set to reach the keys the plans
// alone do not (fp8, fp4, fp16, hybrid sharding, interleaving under FSDP, the
// overlaps, bf16 optimizer state, SGD, every checkpoint mode, context
// parallelism's ring, heads of their own width).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dsl/parse.hpp"
#include "planner/import/job_format.hpp"
#include "planner/lower/lower.hpp"
#include "planner/session.hpp"

namespace dtplan::test {

/// One plan of one program, costed for one framework.
struct framework_case {
  std::string label;  ///< "7b_2node.dtp current megatron"
  std::string path;   ///< the .dtp file
  std::vector<std::string> settings;  ///< the --set values beside training.framework
  planner::job_format format = planner::job_format::torchtitan;
  std::shared_ptr<dsl::source_manager> sources;
  std::shared_ptr<planner::program> program;
  planner::plan plan;
};

inline std::vector<std::string> plan_paths() {
  std::vector<std::string> out;
  for (auto const& e : std::filesystem::directory_iterator(std::string(DTPLAN_SOURCE_DIR) + "/plans"))
    if (e.path().extension() == ".dtp") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// A plan file with --set values, each framework, its fixed strategies and
/// its search's best.
inline void add_cases(std::vector<framework_case>& out, std::string const& path,
                      std::vector<std::string> const& settings, std::string const& tag = {}, bool search = true) {
  for (auto f : planner::job_formats) {
    auto sources = std::make_shared<dsl::source_manager>();
    dsl::diagnostics diags;
    auto const file = sources->add(path, *dsl::read_file(path));
    planner::lower_options lo;
    auto all = settings;
    all.push_back(fmt::format("training.framework={}", planner::name(f)));
    for (auto const& s : all) {
      auto id = sources->add("<--set>", s);
      lo.settings.push_back(*dsl::parse_setting(*sources, id, diags));
    }
    auto p = planner::load(*sources, file, lo, diags);
    if (!p) throw std::runtime_error(path + ": " + dsl::format(diags, *sources));
    auto program = std::make_shared<planner::program>(std::move(*p));
    planner::session_options so;
    so.optimize = search;
    so.search.top = 1;
    so.search.threads = 2;
    dsl::diagnostics session_diags;
    auto run = planner::run_plan(*program, so, session_diags);
    if (!run) throw std::runtime_error(path + ": the session failed");
    for (auto& pl : run->plans) {
      framework_case c;
      c.label = fmt::format("{}{} {} {}", std::filesystem::path(path).filename().string(),
                            tag.empty() ? "" : "[" + tag + "]", pl.name, planner::name(f));
      c.path = path;
      c.settings = settings;
      c.format = f;
      c.sources = sources;
      c.program = program;
      c.plan = std::move(pl);
      out.push_back(std::move(c));
    }
  }
}

inline std::vector<framework_case> framework_cases() {
  std::vector<framework_case> out;
  for (auto const& path : plan_paths()) add_cases(out, path, {});
  auto const plans = std::string(DTPLAN_SOURCE_DIR) + "/plans/";
  // fp8 with its parameter gather and tensor-parallel overlap; fp16.
  add_cases(out, plans + "70b_16node_h100_ib.dtp",
            {"model.precision=fp8", "training.fp8_param_gather=true", "training.tp_comm_overlap=true",
             "training.fused_elementwise=true"},
            "fp8", false);
  add_cases(out, plans + "7b_2node.dtp", {"model.precision=fp16", "current.checkpoint=full"}, "fp16", false);
  // NVFP4 on GB200: Megatron-LM's --fp4-format (torchtitan's TOML and
  // DeepSpeed refuse fp4: tests/cli/frameworks.sh).
  add_cases(out, plans + "405b_gb200_nvl72.dtp", {"model.precision=fp4"}, "fp4", false);
  // FSDP with an interleaved pipeline; hybrid ZeRO-1; op-level checkpointing.
  add_cases(out, plans + "70b_16node_h100_ib.dtp", {"megatron_3d.zero=3", "megatron_3d.checkpoint=full"}, "zero3",
            false);
  add_cases(out, plans + "7b_2node.dtp", {"current.shard=node"}, "hybrid", false);
  add_cases(out, plans + "7b_2node.dtp", {"current.zero=3", "current.checkpoint=ops"}, "ops", false);
  // An uneven interleaved split: Megatron-Core's --pipeline-model-parallel-layout.
  add_cases(out, plans + "7b_2node.dtp", {"current.pp=2", "current.dp=8", "current.virtual_stages=3"}, "uneven",
            false);
  // Rotary as torchtitan's complex numbers run it: no other framework's job
  // can say it.
  add_cases(out, plans + "7b_2node.dtp", {"training.fused_rotary=false"}, "complex_rotary", false);
  // Heads not hidden / heads wide: Megatron's --kv-channels.
  add_cases(out, plans + "7b_2node.dtp", {"model.head_dim=64"}, "head_dim", false);
  // q/k norms: Megatron's --qk-layernorm (Megatron-DeepSpeed has none).
  add_cases(out, plans + "7b_2node.dtp", {"model.qk_norm=true"}, "qk_norm", false);
  // Selective recomputation of more than the core attention: Megatron's
  // --recompute-modules (DeepSpeed's job cannot say it).
  add_cases(out, plans + "7b_2node.dtp", {"training.recompute_modules={core_attn, layernorm, mlp}"}, "modules",
            false);
  // Megatron-LM's default token dispatcher, over the ep ranks (etp 1).
  add_cases(out, plans + "qwen3_30b_a3b_megatron.dtp", {"training.moe_token_dispatcher=allgather"}, "allgather",
            false);
  // A mixture's whole MLP recomputed: --recompute-modules moe.
  add_cases(out, plans + "qwen3_30b_a3b_megatron.dtp",
            {"recipe.checkpoint=selective", "training.recompute_modules={core_attn, moe}"}, "moe_modules", false);
  // Multi-latent attention: Megatron's --multi-latent-attention and its widths.
  add_cases(out, plans + "7b_2node.dtp",
            {"model.head_dim=128", "model.q_lora_rank=1536", "model.kv_lora_rank=512", "model.qk_rope_head_dim=64",
             "model.v_head_dim=128"},
            "mla", false);
  // Multi-token prediction over a pipeline: Megatron's --mtp-num-layers
  // (Megatron-DeepSpeed and torchtitan have none).
  add_cases(out, plans + "7b_2node.dtp", {"model.mtp_layers=1", "current.pp=2", "current.dp=8"}, "mtp", false);
  add_cases(out, plans + "8b_torchtitan_h100.dtp", {"model.mtp_layers=2"}, "mtp", false);
  // Context parallelism passing keys and values round PyTorch's ring
  // (torchtitan's context_parallel_rotate_method = "alltoall").
  add_cases(out, plans + "8b_torchtitan_h100.dtp", {"fsdp.cp=2", "fsdp.dp=32", "training.cp_comm_type=alltoall"},
            "cp_ring", false);
  // bf16 gradients and optimizer state, SGD, a fixed bucket, no overlap.
  add_cases(out, plans + "1b_1node.dtp",
            {"training.grad_precision=bf16", "training.optimizer_state_precision=bf16", "model.optimizer=sgd",
             "training.grad_bucket=fixed", "training.ddp_bucket_size=64MiB", "training.overlap_grad_sync=false"},
            "bf16_state", false);
  return out;
}

}  // namespace dtplan::test
