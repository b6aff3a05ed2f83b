#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "dsl/diagnostics.hpp"
#include "planner/import/job_format.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

/// Writes the `--emit DIR` bundle of DSL.md section 5.
namespace dtplan::codegen {

/// What emit_bundle did besides writing the text files.
struct emit_result {
  bool svg = false;  ///< sharding.svg rendered by `dot`
};

/// How emit_bundle treats what is already at DIR.
struct emit_options {
  bool force = false;  ///< replace a DIR that is not empty (`--force`)
  /// Also write the plan as this framework's own job (DIR/torchtitan/,
  /// DIR/megatron/ or DIR/deepspeed/: codegen/framework_export.hpp). A plan
  /// the framework cannot run is an error and nothing is written.
  std::optional<planner::job_format> job;
};

/// Writes DIR/plan.json (the given `json` text, as codegen::to_json makes
/// it), DIR/sharding.dot, DIR/sharding.svg (when the `dot` command is
/// installed; otherwise a note), DIR/skeleton/{CMakeLists.txt,train_step.cu}
/// and DIR/launch/{slurm.sbatch,mpirun.sh} (executable); with `options.job`,
/// the framework's job in DIR/<framework>/.
///
/// The bundle is written whole or not at all: into a new directory beside
/// DIR (DIR's parents are created), which is then renamed to DIR. DIR must
/// not exist or be an empty directory; a DIR that is not empty is refused
/// unless `options.force`, and then replaced in one step (the old bundle is
/// never mixed with the new one). Every file is created new, so nothing
/// planted in DIR (a symbolic link) is followed or written through; a DIR
/// that is itself a symbolic link is refused. Of two emits into one DIR at
/// the same time, one writes the bundle and the other fails without
/// touching it (with `force`, the last one's bundle stays, whole).
///
/// Failures (a folder or file that cannot be written, with the system's
/// reason and the path; `dot` failing) are reported as diagnostics and leave
/// nothing behind; nothing throws.
std::optional<emit_result> emit_bundle(planner::program const& p, planner::plan const& pl, std::string const& json,
                                       std::filesystem::path const& dir, dsl::diagnostics& diags,
                                       emit_options const& options = {});

/// Writes only the sharding diagram to `file` (`--dot FILE`): a new file
/// beside it renamed over it, so a symbolic link at `file` is replaced, not
/// written through. The directory of `file` must exist.
bool write_dot(planner::program const& p, planner::plan const& pl, std::filesystem::path const& file,
               dsl::diagnostics& diags);

/// Renders `dot_file` to `svg_file` with the `dot` command. Returns false
/// with a diagnostic when it fails; `missing` is set when `dot` is not
/// installed (no diagnostic then: the caller decides). No path reaches
/// `dot` as an option, whatever its first character.
bool render_svg(std::filesystem::path const& dot_file, std::filesystem::path const& svg_file, bool& missing,
                dsl::diagnostics& diags);

}  // namespace dtplan::codegen
