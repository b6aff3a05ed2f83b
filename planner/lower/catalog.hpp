#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/ir/ir.hpp"

/// The built-in catalog (planner/catalog/*.dtp, compiled into the binary):
/// its files, its parsed blocks, and the lowered GPUs, model presets and
/// frameworks that catalog_gpu(), catalog_model() and catalog_framework()
/// serve from a cache (catalog.cpp).
namespace dtplan::planner {

/// One built-in .dtp file compiled into the binary (GPUs, model presets, frameworks).
struct builtin_source {
  std::string_view name;  ///< "<catalog>/gpus.dtp"
  std::string_view text;
};

/// Every built-in catalog file, sorted by name (generated from planner/catalog/*.dtp).
std::vector<builtin_source> const& builtin_sources();

/// The ids of the catalog's files in `sources`, added on first use.
std::vector<std::uint32_t> catalog_files(dsl::source_manager& sources);

/// Every block of the catalog, parsed from `sources`.
std::vector<dsl::ast::block> catalog_blocks(dsl::source_manager& sources, dsl::diagnostics& diags);

/// The catalog lowered on its own: each named gpu, model preset and
/// framework once, in the catalog's order. Defined by lowering (lower.cpp).
struct lowered_catalog {
  std::vector<gpu> gpus;
  std::vector<model> models;
  std::vector<framework> frameworks;
};
lowered_catalog lower_catalog(dsl::source_manager& sources, dsl::diagnostics& diags);

}  // namespace dtplan::planner
