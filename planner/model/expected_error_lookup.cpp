#include <cmath>

#include <fmt/format.h>

#include "planner/model/expected_error.hpp"

namespace dtplan::planner {

std::optional<expected_error> expected_error_for(std::string_view gpu, std::string_view framework) {
  for (auto const& e : expected_errors())
    if (e.gpu == gpu && e.framework == framework) return e;
  return std::nullopt;
}

std::string describe_expected_error(std::string_view gpu, std::string_view framework) {
  auto const e = expected_error_for(gpu, framework);
  if (!e)
    return fmt::format("no published run of {} on {} measures this model's error; treat the figure as uncalibrated",
                       framework, gpu);
  auto const pct = [](double x) { return static_cast<long>(std::lround(x * 100)); };
  return fmt::format("typically within {} % (median of {} held-out run{} of {} on {}, 90 % within {} %)",
                     pct(e->median), e->runs, e->runs == 1 ? "" : "s", framework, gpu, pct(e->p90));
}

}  // namespace dtplan::planner
