// Predicted memory per GPU of every representable published run against
// its published peak (where given), and the static check's verdict: each
// run really ran, so `check` must judge it valid.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/calibration.hpp"
#include "planner/check.hpp"

using namespace dtplan;
using namespace dtplan::planner;

int main() {
  auto runs = bench::load_calibration_runs();
  constexpr double gib = 1073741824.0;
  std::vector<double> errors;
  int representable = 0, valid = 0, skipped = 0;
  fmt::print("{:<48} {:>6} {:>11} {:>11} {:>8}  {}\n", "case", "valid", "predicted", "published", "error",
             "most loaded");
  for (auto const& run : runs) {
    if (!run.representable()) {
      ++skipped;
      continue;
    }
    ++representable;
    strategy_spec spec;
    spec.name = run.id;
    auto r = check(run.prog, spec, run.s);
    if (r.valid()) ++valid;
    std::string published = "-", error = "-";
    if (run.peak_memory && r.legal) {
      double const e = (r.memory.total.value() - run.peak_memory->value()) / run.peak_memory->value();
      errors.push_back(std::fabs(e));
      published = fmt::format("{:.1f} GiB", run.peak_memory->value() / gib);
      error = fmt::format("{:+.1f} %", 100 * e);
    }
    fmt::print("{:<48} {:>6} {:>11} {:>11} {:>8}  {}\n", run.id, r.valid() ? "yes" : "NO",
               r.legal ? fmt::format("{:.1f} GiB", r.memory.total.value() / gib) : "illegal", published, error,
               r.memory.stage_note);
    if (!r.valid())
      for (auto const& d : r.diags)
        if (d.level == dsl::severity::error) fmt::print("    {}\n", d.message);
  }
  fmt::print("\n{} runs: {} representable ({} judged valid), {} skipped\n", runs.size(), representable, valid,
             skipped);
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    double const median = errors.size() % 2 ? errors[errors.size() / 2]
                                            : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
    fmt::print("peak memory: {} published, median |error| {:.1f} %, worst {:.1f} %\n", errors.size(),
               100 * median, 100 * errors.back());
  }
  return 0;
}
