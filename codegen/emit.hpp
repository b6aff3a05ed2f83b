#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "dsl/diagnostics.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

/// Writes the `--emit DIR` bundle of DSL.md section 5.
namespace dtplan::codegen {

/// What emit_bundle did besides writing the text files.
struct emit_result {
  bool svg = false;  ///< sharding.svg rendered by `dot`
};

/// Writes DIR/plan.json (the given `json` text, as codegen::to_json makes
/// it), DIR/sharding.dot, DIR/sharding.svg (when the `dot` command is
/// installed; otherwise a note), DIR/skeleton/{CMakeLists.txt,train_step.cu}
/// and DIR/launch/{slurm.sbatch,mpirun.sh} (executable). Creates DIR and its
/// sub-folders. Failures (a folder or file that cannot be written, `dot`
/// failing) are reported as diagnostics; nothing throws.
std::optional<emit_result> emit_bundle(planner::program const& p, planner::plan const& pl, std::string const& json,
                                       std::filesystem::path const& dir, dsl::diagnostics& diags);

/// Writes only the sharding diagram to `file` (`--dot FILE`).
bool write_dot(planner::program const& p, planner::plan const& pl, std::filesystem::path const& file,
               dsl::diagnostics& diags);

/// Renders `dot_file` to `svg_file` with the `dot` command. Returns false
/// with a diagnostic when it fails; `missing` is set when `dot` is not
/// installed (no diagnostic then: the caller decides).
bool render_svg(std::filesystem::path const& dot_file, std::filesystem::path const& svg_file, bool& missing,
                dsl::diagnostics& diags);

}  // namespace dtplan::codegen
