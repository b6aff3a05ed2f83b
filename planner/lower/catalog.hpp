#pragma once
#include <string_view>
#include <vector>

namespace dtplan::planner {

/// One built-in .dtp file compiled into the binary (GPUs, model presets).
struct builtin_source {
  std::string_view name;  ///< "<catalog>/gpus.dtp"
  std::string_view text;
};

/// Every built-in catalog file, sorted by name (generated from planner/catalog/*.dtp).
std::vector<builtin_source> const& builtin_sources();

}  // namespace dtplan::planner
