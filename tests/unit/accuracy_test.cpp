#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "bench/calibration.hpp"
#include "planner/model/cost_model.hpp"

using namespace dtplan;
using namespace dtplan::planner;

// The time model against the published runs of bench/data/calibration_runs.csv,
// with the catalog's calibrated figures: a regression of the model or of the
// figures fails here. The targets are COSTMODEL.md's (median at most 10 %,
// every run within 25 %); the tighter bounds are the accuracy reached
// (bench_accuracy: 227 runs, median 2.6 %, worst 22.3 % for MPT-70B on 64
// A100 40GB), with a little room.
TEST_CASE("step time within the accuracy targets over the published runs") {
  auto const runs = bench::load_calibration_runs();
  analytic_cost_model const model;
  auto const acc = bench::measure_accuracy(runs, model);
  CHECK(acc.rows.size() == 227);
  CHECK(acc.median <= 0.03);
  CHECK(acc.median_a <= 0.03);
  CHECK(acc.within_target == 227);
  CHECK(acc.worst <= 0.23);
}

// Narayanan et al.'s Table 1 (GPT 1.7B to 1T on up to 3,072 A100s) leaves out
// each run's micro-batch and interleaving: the ten runs are costed at the
// choice of those two keys --optimize finds fastest with tp, pp, dp and
// recomputation as published. None of them is in the calibration, so this
// is an out-of-sample check of the model and the search together; the best
// choice is optimistic by nature (bench_accuracy: 1.5 % to 10.0 % too fast,
// median 5.9 %).
TEST_CASE("Megatron's Table 1 runs at the planner's best micro-batch and interleaving") {
  auto const runs = bench::load_calibration_runs();
  analytic_cost_model const model;
  int costed = 0;
  for (auto const& run : runs) {
    if (run.id.rfind("MLM21-", 0) != 0) continue;
    REQUIRE(run.only_unpublished());
    auto const chosen = bench::at_best_choice(run, model);
    REQUIRE(chosen);
    ++costed;
    // What was published stays as published.
    CHECK(chosen->s.tp == run.s.tp);
    CHECK(chosen->s.pp == run.s.pp);
    CHECK(chosen->s.dp == run.s.dp);
    CHECK(chosen->s.checkpoint == run.s.checkpoint);
    CHECK(chosen->grad_accum * chosen->s.dp * chosen->s.micro_batch == chosen->prog.training.global_batch);
    if (run.s.pp == 1) CHECK(chosen->s.virtual_stages == 1);
    auto const t = model.step_time(chosen->prog, chosen->s);
    double const error = (t.step - *run.step_time) / *run.step_time;
    INFO(run.id << " error " << error);
    CHECK(error <= 0.0);
    CHECK(error >= -0.12);
  }
  CHECK(costed == 10);
  // A run with another gap is not guessed at.
  for (auto const& run : runs)
    if (run.id == "MLM20-A100-1B") CHECK_FALSE(bench::at_best_choice(run, model));
}

// BLOOM-176B at its batch-size ramp-up (one micro-batch per pipeline, 12
// stages) is dominated by what follows the backward: DeepSpeed's
// BF16_Optimizer all-reduces fp32 gradients after the last micro-batch
// (training.grad_precision = fp32, grad_reduce = all_reduce,
// overlap_grad_sync = false) and the tied embedding's two copies are summed
// between the first and last stage. Without those it was predicted 37.8 %
// too fast; with them 15.2 %.
TEST_CASE("BLOOM-176B's gradient synchronisation after the backward") {
  auto const runs = bench::load_calibration_runs();
  analytic_cost_model const model;
  auto const acc = bench::measure_accuracy(runs, model);
  bool seen = false;
  for (auto const& r : acc.rows) {
    if (r.id != "BLOOM-176B-gbs16" && r.id != "BLOOM-176B-gbs2048") continue;
    seen = true;
    INFO(r.id << " error " << r.error);
    CHECK(std::abs(r.error) <= 0.20);
  }
  CHECK(seen);
}

// vTrain's measured Megatron runs (A100, 8 GPUs per node, full
// checkpointing, no gradient bucketing: the all-reduce follows the
// backward): bench_accuracy --vtrain reaches a median of 8.0 % (worst 35.6 %)
// over the 1,440 single-node runs and 10.4 % (worst 41.2 %) over the 109
// multi-node ones.
TEST_CASE("step time within the accuracy targets over vTrain's runs") {
  analytic_cost_model const model;
  auto const single = bench::measure_accuracy(
      bench::load_vtrain(std::string(DTPLAN_SOURCE_DIR) + "/bench/data/vtrain/ground_truth_single.csv"), model);
  CHECK(single.rows.size() == 1440);
  CHECK(single.median <= 0.083);
  CHECK(single.worst <= 0.37);
  auto const multi = bench::measure_accuracy(
      bench::load_vtrain(std::string(DTPLAN_SOURCE_DIR) + "/bench/data/vtrain/ground_truth_multi.csv"), model);
  CHECK(multi.rows.size() == 109);
  CHECK(multi.median <= 0.107);
  CHECK(multi.worst <= 0.42);
}
