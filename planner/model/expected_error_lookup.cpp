#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
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

std::optional<order_agreement> order_agreement_for(double gap) {
  std::optional<order_agreement> bin;
  if (!std::isfinite(gap) || gap < 0) return bin;
  for (auto const& b : order_agreements())
    if (gap >= b.gap_from) bin = b;
  if (bin && bin->pairs == 0) bin.reset();
  return bin;
}

double predicted_gap(seconds a, seconds b) { return std::fabs(a.value() - b.value()) / std::min(a.value(), b.value()); }

namespace {
// A fraction as a per cent to a tenth: 0.619 -> "61.9", 0.02 -> "2".
std::string tenths(double x) { return fmt::format("{:g}", std::round(x * 1000) / 10); }
}  // namespace

std::string gap_range(double from, std::optional<double> to) {
  return to ? fmt::format("{} to {} %", tenths(from), tenths(*to)) : fmt::format("{} % or more", tenths(from));
}

std::string describe_order_agreement(double gap) {
  auto const bin = order_agreement_for(gap);
  if (!bin) return {};
  auto const& all = order_agreements();
  auto const next = std::find_if(all.begin(), all.end(), [&](auto const& b) { return b.gap_from > bin->gap_from; });
  std::string const range =
      gap_range(bin->gap_from, next == all.end() ? std::nullopt : std::optional<double>(next->gap_from));
  return fmt::format("published pairs predicted {} apart: {} % ordered as measured ({} pairs{})", range,
                     tenths(bin->share()), dsl::grouped(static_cast<std::int64_t>(bin->pairs)),
                     bin->mostly.empty() ? std::string() : fmt::format(", mostly {}", bin->mostly));
}

}  // namespace dtplan::planner
