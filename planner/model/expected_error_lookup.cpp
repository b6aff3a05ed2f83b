#include <cmath>

#include <fmt/format.h>

#include "planner/model/expected_error.hpp"

namespace dtplan::planner {

std::optional<expected_error> expected_error_for(std::string_view gpu, std::string_view framework) {
  for (auto const& e : expected_errors())
    if (e.gpu == gpu && e.framework == framework) return e;
  return std::nullopt;
}

std::optional<expected_error> related_expected_error(std::string_view gpu, gpu_generation generation,
                                                     std::string_view framework) {
  std::optional<expected_error> best;
  if (expected_error_for(gpu, framework)) return best;
  for (auto const& e : expected_errors()) {
    if (e.gpu == gpu || e.generation != generation || e.framework != framework) continue;
    if (!best || e.runs > best->runs || (e.runs == best->runs && e.gpu < best->gpu)) best = e;
  }
  return best;
}

std::string describe_expected_error(std::string_view gpu, gpu_generation generation, std::string_view framework) {
  auto const pct = [](double x) { return static_cast<long>(std::lround(x * 100)); };
  auto const figures = [&](expected_error const& e, std::string_view pair) {
    return fmt::format("typically within {} % (median of {} held-out run{}{}, 90 % within {} %)", pct(e.median),
                       e.runs, e.runs == 1 ? "" : "s", pair, pct(e.p90));
  };
  if (auto const e = expected_error_for(gpu, framework))
    return figures(*e, fmt::format(" of {} on {}", framework, gpu));
  if (auto const r = related_expected_error(gpu, generation, framework))
    return fmt::format("no published run of {} on {}; on {}, the same {} generation: {}", framework, gpu, r->gpu,
                       name(generation), figures(*r, ""));
  return fmt::format("no published run of {} on {} measures dtplan's error there; treat the figure as uncalibrated",
                     framework, gpu);
}

}  // namespace dtplan::planner
