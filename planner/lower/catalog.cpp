#include "planner/lower/catalog.hpp"

#include <map>
#include <optional>
#include <string>

#include "dsl/parse.hpp"
#include "planner/lower/lower.hpp"

namespace dtplan::planner {

std::vector<std::uint32_t> catalog_files(dsl::source_manager& sources) {
  std::vector<std::uint32_t> ids;
  for (auto const& b : builtin_sources()) {
    std::optional<std::uint32_t> id;
    for (std::uint32_t f = 0; f < sources.size(); ++f)
      if (sources.file(f).builtin() && sources.file(f).name() == b.name) id = f;
    if (!id) id = sources.add(std::string(b.name), std::string(b.text), true);
    ids.push_back(*id);
  }
  return ids;
}

std::vector<dsl::ast::block> catalog_blocks(dsl::source_manager& sources, dsl::diagnostics& diags) {
  std::vector<dsl::ast::block> blocks;
  for (auto id : catalog_files(sources))
    if (auto f = dsl::parse(sources, id, diags))
      for (auto& b : f->blocks) blocks.push_back(std::move(b));
  return blocks;
}

namespace {

// The catalog lowered once per process; its spans point into its own
// source manager, which lives as long as the cache.
struct catalog_cache {
  dsl::source_manager sources;
  std::vector<std::string> gpu_names, model_names, framework_names;
  std::map<std::string, gpu, std::less<>> gpus;
  std::map<std::string, model, std::less<>> models;
  std::map<std::string, framework, std::less<>> frameworks;
};

catalog_cache const& cache() {
  static catalog_cache const c = [] {
    catalog_cache c;
    dsl::diagnostics diags;
    auto lowered = lower_catalog(c.sources, diags);
    for (auto& g : lowered.gpus) {
      c.gpu_names.push_back(g.name);
      c.gpus.emplace(g.name, std::move(g));
    }
    for (auto& m : lowered.models) {
      c.model_names.push_back(m.name);
      c.models.emplace(m.name, std::move(m));
    }
    for (auto& f : lowered.frameworks) {
      c.framework_names.push_back(f.name);
      c.frameworks.emplace(f.name, std::move(f));
    }
    return c;
  }();
  return c;
}

}  // namespace

std::vector<std::string> catalog_gpu_names() { return cache().gpu_names; }
std::vector<std::string> catalog_model_names() { return cache().model_names; }
std::vector<std::string> catalog_framework_names() { return cache().framework_names; }

std::optional<gpu> catalog_gpu(std::string_view name) {
  auto const& c = cache();
  auto it = c.gpus.find(name);
  if (it == c.gpus.end()) return std::nullopt;
  return it->second;
}

std::optional<model> catalog_model(std::string_view name) {
  auto const& c = cache();
  auto it = c.models.find(name);
  if (it == c.models.end()) return std::nullopt;
  return it->second;
}

std::optional<framework> catalog_framework(std::string_view name) {
  auto const& c = cache();
  auto it = c.frameworks.find(name);
  if (it == c.frameworks.end()) return std::nullopt;
  return it->second;
}

}  // namespace dtplan::planner
