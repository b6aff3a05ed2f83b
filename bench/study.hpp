#pragma once
#include <array>
#include <string>
#include <vector>

#include "bench/calibration.hpp"
#include "bench/fit.hpp"
#include "planner/model/cost_model.hpp"

/// The accuracy study over every published run: loading them with their
/// framework, what the fit must reproduce, how runs of one job rank, what
/// the search claims on expert-tuned runs, and the expected-error table
/// the report quotes.
namespace dtplan::bench {

/// calibration_runs.csv's runs, each with its framework preset and the
/// runtime settings its source states applied (the runs that publish their
/// peak memory are all here).
std::vector<calibration_run> load_calibration_runs_applied();

/// Every run of bench/data (calibration_runs.csv, vTrain's two files, the
/// MLPerf runs), each with its framework preset and the runtime settings
/// its source states applied; unrepresentable runs keep their reason.
std::vector<calibration_run> load_everything();

/// Sets `run`'s framework (a built-in preset, its limits, figures and
/// behaviours) and then each runtime setting its source states; a setting
/// dtplan does not know, or a framework it lacks, makes the run skipped.
void apply_runtime(calibration_run& run);

/// The runs that can be costed: representable, with a measured step, and
/// legal for the planner (dp derived, framework limits met).
std::vector<calibration_run> costed(std::vector<calibration_run> const& runs);

/// Fits on every run from the catalog's figures and says whether the
/// catalog (gpus.dtp, frameworks.dtp) already holds the fit and none of its
/// figures is on a bound of its range; prints the figures to write when not.
bool check_catalog_fit(std::vector<calibration_run> const& runs, planner::cost_model const& model);

/// How often the model orders two runs of one job (bench/data/families.csv
/// same_job_group) as they were measured, from the held-out predictions.
struct ranking {
  std::string family;
  std::size_t pairs = 0;
  std::size_t agree = 0;
  [[nodiscard]] double agreement() const { return pairs ? static_cast<double>(agree) / static_cast<double>(pairs) : 0; }
};
/// Per family, then "all but vTrain", "every pair" and "every pair 10 %
/// apart" (the pairs measured more than 10 % apart); pairs within 1 % are
/// ties and left out.
std::vector<ranking> rank_agreement(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs);

/// The strategy keys (in the key table's order), the precision and the
/// framework behaviours two runs of one job differ in, joined by " + "
/// ("tp + pp", "micro_batch", "fused_elementwise"): what a pair's order
/// tests.
std::string what_differs(calibration_run const& a, calibration_run const& b);

/// The same pairs as rank_agreement, every family together, grouped by
/// what_differs (`family` holds it): which choices the model orders as
/// measured and which it does not. Most pairs first.
std::vector<ranking> rank_by_difference(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs);

/// The lower ends of the bins of rank_by_predicted_gap: how far apart the
/// model put the two runs of a pair, as a fraction of the faster prediction.
inline constexpr std::array<double, 5> predicted_gap_bounds{0, 0.02, 0.05, 0.10, 0.20};
/// The same pairs as rank_agreement, every family together, by how far
/// apart the model predicted them (`family` holds the bin, "2 to 5 %"):
/// how much a predicted difference of that size is to be trusted.
std::vector<ranking> rank_by_predicted_gap(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs);

/// What --optimize claims on a run whose strategy experts tuned: the
/// published strategy's predicted step over the best plan's, searching the
/// whole space the run's framework can run with its model, cluster and batch.
struct pick {
  std::string id;
  planner::seconds published;
  planner::seconds best;
  double claimed = 1;
  std::string strategy;  ///< the best plan's keys that differ
};
/// Runs of the families whose strategies were tuned by experts (MLPerf,
/// Narayanan et al., Korthikanti et al., torchtitan), less those whose job was measured faster under
/// another strategy (an ablation's baseline).
std::vector<pick> plausible_picks(std::vector<calibration_run> const& runs, planner::cost_model const& model);

/// planner/model/expected_error.cpp: each (GPU, framework)'s held-out error.
std::string expected_error_source(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs);

}  // namespace dtplan::bench
