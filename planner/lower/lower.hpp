#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/ir/ir.hpp"

namespace dtplan::planner {

struct lower_options {
  /// `--set` overrides, applied to the syntax tree before lowering so they
  /// are checked exactly like keys written in the file.
  std::vector<dsl::ast::setting> settings;
};

/// Lowers a parsed file to the IR: resolves `BASE` names across the
/// built-in catalog, the presets and the file (reporting cycles), checks
/// every key's type and dimension, fills defaults. Reports every error of
/// the file, not only the first; returns nothing when there was any.
/// Loads the built-in catalog into `sources` on first use.
std::optional<program> lower(dsl::ast::file const& file, dsl::source_manager& sources,
                             lower_options const& options, dsl::diagnostics& diags);

/// parse + lower of one file already added to `sources`.
std::optional<program> load(dsl::source_manager& sources, std::uint32_t file,
                            lower_options const& options, dsl::diagnostics& diags);

/// The names of the built-in GPUs and model presets (for --help and tests).
std::vector<std::string> catalog_gpu_names();
std::vector<std::string> catalog_model_names();

/// A built-in GPU or model preset by name, lowered with its defaults filled;
/// nothing when the catalog has no such name.
std::optional<gpu> catalog_gpu(std::string_view name);
std::optional<model> catalog_model(std::string_view name);

}  // namespace dtplan::planner
