#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/ir/ir.hpp"

/// How far the time model has been off on published runs it was not fitted
/// to, by GPU kind and framework: the error bar a report quotes beside a
/// step time. The figures come from bench_accuracy's leave-one-family-out
/// cross-validation (bench/README.md) and are generated into
/// expected_error.cpp; accuracy_test keeps them current.
namespace dtplan::planner {

struct expected_error {
  std::string_view gpu;        ///< the catalog's GPU name ("H100_SXM")
  gpu_generation generation = gpu_generation::ampere;  ///< that GPU's generation
  std::string_view framework;  ///< the framework preset ("megatron")
  std::size_t runs = 0;        ///< published runs held out
  std::size_t families = 0;    ///< of that many families
  double median = 0;           ///< median |predicted / measured - 1|
  double p90 = 0;              ///< 90th percentile of the same
};

/// Every (GPU, framework) pair with held-out runs.
std::vector<expected_error> const& expected_errors();

/// The pair's figures, if published runs of it were held out.
std::optional<expected_error> expected_error_for(std::string_view gpu, std::string_view framework);

/// Only where the pair has none: the framework's figures on another GPU of
/// the same generation (the one with the most held-out runs, then by name),
/// a proxy the report names as such: H100_SXM with torchtitan takes the
/// torchtitan runs on H100_SXM_96GB_500W, the same Hopper die.
std::optional<expected_error> related_expected_error(std::string_view gpu, gpu_generation generation,
                                                     std::string_view framework);

/// How often the model ordered two published runs of one job (the same
/// model, cluster and batch under two strategies) as they were measured,
/// by how far apart it predicted them: what a predicted difference between
/// two plans of that size is worth. From the same held-out predictions,
/// every pair measured more than 1 % apart.
struct order_agreement {
  double gap_from = 0;       ///< predicted gap (a fraction of the faster prediction) from, up to the next bin's
  std::size_t pairs = 0;     ///< published pairs predicted that far apart
  std::size_t agree = 0;     ///< of them ordered as measured
  std::string_view mostly;   ///< "deepspeed on A100_SXM_80GB" where one framework and GPU hold over half, else empty
  /// agree / pairs (0 without pairs).
  [[nodiscard]] double share() const { return pairs ? static_cast<double>(agree) / static_cast<double>(pairs) : 0; }
};

/// The bins, by gap_from.
std::vector<order_agreement> const& order_agreements();

/// The bin of a predicted gap (a fraction: 0.011 for 1.1 %), if it has pairs.
std::optional<order_agreement> order_agreement_for(double gap);

/// A bin's range as the report and bench_accuracy name it: "0 to 2 %", or
/// "20 % or more" for the last (no `to`).
std::string gap_range(double from, std::optional<double> to);

/// How far apart two predicted steps are, as the bins count it: the
/// difference over the shorter.
double predicted_gap(seconds a, seconds b);

/// "published pairs predicted 0 to 2 % apart: 61.9 % ordered as measured
/// (540 pairs, mostly deepspeed on A100_SXM_80GB)"; empty where the bin has
/// no pairs.
std::string describe_order_agreement(double gap);

/// "typically within 8 % (median of 23 held-out runs of megatron on H100_SXM, 90 % within 14 %)";
/// where the pair has no runs, the related GPU's figures named as such, or
/// a plain statement that no published run measures the pair.
std::string describe_expected_error(std::string_view gpu, gpu_generation generation, std::string_view framework);

}  // namespace dtplan::planner
