// Predicted memory per GPU of the published runs. First the static check's
// verdict on every representable run (each really ran, so `check` must
// judge it valid); then predicted vs published peak memory for every run
// that publishes one, each with its framework and the behaviours its source
// states (bench::apply_runtime, as the time model costs it). Skipped runs
// are shown as bounds, outside the error statistics. torchtitan, the one
// source of peak memory, logs torch.cuda.max_memory_reserved (the caching
// allocator's reservation), which is never under the tensors alive this
// predicts. `bench_memory_table ID` also prints run ID's terms.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench/calibration.hpp"
#include "bench/fit.hpp"
#include "bench/study.hpp"
#include "planner/model/check.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

constexpr double gib = 1073741824.0;

}  // namespace

int main(int argc, char** argv) {
  std::string const only = argc > 1 ? argv[1] : "";
  auto const runs = bench::load_calibration_runs_applied();
  int representable = 0, valid = 0;
  fmt::print("{:<48} {:>6} {:>11}  {}\n", "case", "valid", "predicted", "most loaded");
  for (auto const& run : runs) {
    if (!run.representable()) continue;
    ++representable;
    strategy_spec spec;
    spec.name = run.id;
    auto r = check(run.prog, spec, run.s);
    if (r.valid()) ++valid;
    fmt::print("{:<48} {:>6} {:>11}  {}\n", run.id, r.valid() ? "yes" : "NO",
               r.legal ? fmt::format("{:.1f} GiB", r.memory.total.value() / gib) : "illegal", r.memory.stage_note);
    if (!r.valid())
      for (auto const& d : r.diags)
        if (d.level == dsl::severity::error) fmt::print("    {}\n", d.message);
  }
  fmt::print("\n{} runs: {} representable, {} judged valid by check\n\n", runs.size(), representable, valid);

  fmt::print("{:<34} {:>11} {:>11} {:>8}  {}\n", "published peak memory", "predicted", "published", "error",
             "note");
  std::vector<double> errors;
  for (auto const& run : runs) {
    if (!run.peak_memory) continue;
    auto s = run.s;
    if (!is_legal(run.prog, s)) continue;
    auto const mem = estimate_memory(run.prog, s);
    double const e = (mem.total - *run.peak_memory) / *run.peak_memory;
    bool const counted = run.representable();
    if (counted) errors.push_back(std::fabs(e));
    fmt::print("{:<34} {:>7.1f} GiB {:>7.1f} GiB {:>+7.1f}%  {}\n", run.id, mem.total.value() / gib,
               run.peak_memory->value() / gib, 100 * e, counted ? "" : "bound only: " + run.skip_reason);
    if (run.id == only)
      for (auto const& t : mem.detail) fmt::print("    {:>9.2f} GiB  {}\n", t.size.value() / gib, t.name);
  }
  if (!errors.empty())
    fmt::print("\npeak memory, {} comparable runs: median |error| {:.1f} %, worst {:.1f} %\n", errors.size(),
               100 * bench::median_of(errors), 100 * *std::max_element(errors.begin(), errors.end()));
  return 0;
}
