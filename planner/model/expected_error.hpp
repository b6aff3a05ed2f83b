#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

/// How far the time model has been off on published runs it was not fitted
/// to, by GPU kind and framework: the error bar a report quotes beside a
/// step time. The figures come from bench_accuracy's leave-one-family-out
/// cross-validation (bench/README.md) and are generated into
/// expected_error.cpp; accuracy_test keeps them current.
namespace dtplan::planner {

struct expected_error {
  std::string_view gpu;        ///< the catalog's GPU name ("h100_sxm")
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

/// "typically within 8 % (median of 23 held-out runs of megatron on h100_sxm, 90 % within 14 %)",
/// or a plain statement that no published run measures the pair.
std::string describe_expected_error(std::string_view gpu, std::string_view framework);

}  // namespace dtplan::planner
