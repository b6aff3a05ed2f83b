#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "dsl/config/config.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/import/job_format.hpp"
#include "planner/ir/ir.hpp"
#include "planner/lower/lower.hpp"

/// A framework's own job configuration as a dtplan program: a torchtitan
/// job TOML, a Megatron-LM argument list, a DeepSpeed ds_config.json or the
/// Megatron-DeepSpeed arguments that name one, or the shell script of NeMo
/// variables an MLPerf submission runs Megatron-Core with (`--from`). The job's
/// settings become the keys of the training block and of one fixed
/// strategy, named after the framework, which replaces the file's
/// strategies; the model's shape where the job states it (Megatron's shape
/// arguments, a torchtitan flavor when the file has no model); the cluster
/// is always the file's. Each value keeps the span of where the job writes
/// it, so lowering and the check report a bad one at its place in the job's
/// file, and every key dtplan does not read is a warning there, by name.
/// Nothing is dropped silently.
namespace dtplan::planner {

/// Adds a file the job names (Megatron-DeepSpeed's `--deepspeed_config`, a
/// file a NeMo script sources, as written there) to the sources: its id,
/// or why it cannot be read. The caller resolves the path (relative to the
/// job's own file).
using open_related = dsl::config::open_sourced;

/// The job to read: its format and its file, already in the sources.
struct job_source {
  job_format format = job_format::torchtitan;
  std::uint32_t file = dsl::span::no_file;
  open_related open;  ///< may be empty: a job naming another file is then an error
};

/// Parses the .dtp `file`, reads the job, and lowers the two together (the
/// job's keys first, then `options.settings`, so `--set` still has the
/// last word). Twice when the job leaves a figure to the cluster's size
/// (torchtitan's `data_parallel_shard_degree = -1`, a global batch of
/// local batch x data-parallel ranks): the second lowering has it. Reports
/// in `diags` what the job's file and the .dtp file hold that is wrong, and
/// the job's unread keys as warnings; nothing when there is an error.
std::optional<program> load_job(dsl::source_manager& sources, std::uint32_t file, job_source const& job,
                                lower_options const& options, dsl::diagnostics& diags);

/// A torchtitan model flavor that is a preset of dtplan's catalog (v0.2.0
/// torchtitan/models/llama3/__init__.py, models/qwen3/__init__.py,
/// models/deepseek_v3/__init__.py): read as it by --from torchtitan, written
/// as it by the torchtitan export. `flex_attention`: the flavor sets
/// use_flex_attn with the block-causal mask (deepseek_v3's every flavor);
/// `ungrouped`: torchtitan routes over every expert where the preset's
/// routing is group-limited (it does not read deepseek_v3's groups).
struct torchtitan_flavor {
  std::string_view model, flavor, preset;
  bool flex_attention = false;
  bool ungrouped = false;
};
std::span<torchtitan_flavor const> torchtitan_flavors();
/// The flavor whose preset has `m`'s shape (same_model_shape), if any.
std::optional<torchtitan_flavor> torchtitan_flavor_of(model const& m);
/// Whether two models have the same shape, what a flavor fixes: every width,
/// the layers' kinds, the norms, positions and embeddings (not the sequence,
/// precision, optimizer or kernels).
bool same_model_shape(model const& a, model const& b);

}  // namespace dtplan::planner
