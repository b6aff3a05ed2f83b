#include <catch2/catch.hpp>

#include <set>

#include "bench/calibration.hpp"
#include "planner/check.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {
check_result judge(bench::calibration_run const& run) {
  strategy_spec spec;
  spec.name = run.id;
  return check(run.prog, spec, run.s);
}
}  // namespace

TEST_CASE("published runs are legal and, but for one, fit", "[calibration][memory]") {
  auto runs = bench::load_calibration_runs();
  std::set<std::string> illegal, over;
  int representable = 0;
  for (auto const& run : runs) {
    if (!run.representable()) continue;
    ++representable;
    auto r = judge(run);
    if (!r.legal) illegal.insert(run.id);
    else if (!r.fits) over.insert(run.id);
  }
  CHECK(representable == 90);
  CHECK(illegal.empty());
  // torchtitan's "selective" is op-level selective checkpointing, which
  // recomputes more than Megatron's selective recomputation that
  // `checkpoint = selective` models: its stored activations are
  // overestimated and this run comes out 1.8 GiB over the usable memory.
  CHECK(over == std::set<std::string>{"TT-8B-8gpu-FSDP"});
}

TEST_CASE("predicted peak memory against the published peaks", "[calibration][memory]") {
  auto runs = bench::load_calibration_runs();
  std::vector<std::pair<std::string, double>> errors;
  for (auto const& run : runs) {
    if (!run.representable() || !run.peak_memory) continue;
    auto r = judge(run);
    REQUIRE(r.legal);
    errors.emplace_back(run.id, (r.memory.total - *run.peak_memory) / *run.peak_memory);
  }
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].first == "TT-8B-8gpu-FSDP");
  CHECK(errors[0].second == Approx(0.162).margin(0.001));
  CHECK(errors[1].first == "TT-8B-128gpu-FSDP");
  CHECK(errors[1].second == Approx(0.220).margin(0.001));
  // The difference between the two runs is ZeRO-3 over 8 vs 128 ranks: the
  // model state, which the model gets right to 1 GiB (published: 15.4 GiB).
  auto by_id = [&](std::string_view id) {
    return *std::find_if(runs.begin(), runs.end(), [&](auto const& r) { return r.id == id; });
  };
  double const predicted_gap =
      (judge(by_id("TT-8B-8gpu-FSDP")).memory.total - judge(by_id("TT-8B-128gpu-FSDP")).memory.total).value() /
      1073741824.0;
  CHECK(predicted_gap == Approx(14.1).margin(0.1));
}
