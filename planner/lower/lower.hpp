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
/// every key's type and dimension, fills defaults; resolves the training
/// block's framework (`generic` unless it names one) into `program::framework`
/// and the run's behaviours (the framework's, then each the block writes), and
/// `attention_backend = auto` for the cluster's GPU. Reports every error of
/// the file, not only the first; returns nothing when there was any.
/// Loads the built-in catalog into `sources` on first use.
std::optional<program> lower(dsl::ast::file const& file, dsl::source_manager& sources,
                             lower_options const& options, dsl::diagnostics& diags);

/// parse + lower of one file already added to `sources`.
std::optional<program> load(dsl::source_manager& sources, std::uint32_t file,
                            lower_options const& options, dsl::diagnostics& diags);

/// The names of the built-in GPUs, model presets and frameworks (for --help
/// and tests), in the catalog's order.
std::vector<std::string> catalog_gpu_names();
std::vector<std::string> catalog_model_names();
std::vector<std::string> catalog_framework_names();

/// A built-in GPU, model preset or framework by name, lowered with its
/// defaults filled (a framework's `attention_backend` may still be `auto`:
/// it is resolved for a cluster's GPU); nothing when the catalog has no such
/// name.
std::optional<gpu> catalog_gpu(std::string_view name);
std::optional<model> catalog_model(std::string_view name);
std::optional<framework> catalog_framework(std::string_view name);

}  // namespace dtplan::planner
