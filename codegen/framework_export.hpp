#pragma once
#include <optional>
#include <string>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "planner/import/job_format.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

/// A plan written in a framework's own language, to run it there: a
/// torchtitan job TOML, Megatron-LM's pretrain_gpt.py arguments, or a
/// DeepSpeed ds_config.json with Megatron-DeepSpeed's arguments; each with
/// its launch script. Every key written is one the framework's source
/// defines at the version named in planner/import/job_format.hpp (recorded,
/// with the file each comes from, in tests/data/framework_keys/, which a
/// test holds the output to). Reading them back (`--from`) gives the same
/// program (planner/import/import.hpp).
namespace dtplan::codegen {

/// One file of an exported job, named relative to the bundle's framework
/// directory (`DIR/torchtitan/job.toml`).
struct job_file {
  std::string name;
  std::string text;
  bool executable = false;
};

/// Why `f` cannot run `pl` as planned, in one sentence naming what it
/// lacks ("torchtitan has no ZeRO-1: it shards with FSDP (zero = 3) or
/// replicates (zero = 0)"), or nothing when it can. The framework's preset
/// limits (planner/catalog/frameworks.dtp) are read first, then what the
/// configuration cannot express (a rank order, uneven pipeline chunks, a
/// mixture of experts).
std::optional<std::string> export_refusal(planner::job_format f, planner::program const& p,
                                          planner::plan const& pl);

/// The files that run `pl` under `f`: torchtitan/{job.toml, launch.sh},
/// megatron/{args.txt, launch.sh}, deepspeed/{ds_config.json, args.txt,
/// launch.sh}. `pl` must be valid and `export_refusal` empty. A run-time
/// behaviour the plan was costed with that the framework has no setting for
/// (torchtitan's fp32-only gradient reduction, its own attention kernel
/// choice) is a warning in `diags`, at the training key that set it where
/// one did.
std::vector<job_file> export_job(planner::job_format f, planner::program const& p, planner::plan const& pl,
                                 dsl::diagnostics& diags);

}  // namespace dtplan::codegen
