#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>

/// Whole counts a user writes (degrees, batches, micro-batches) multiplied
/// and summed without overflow: a result past 2^63 - 1 is held there. A
/// held product never equals a GPU count, divides a batch or wraps to 0, so
/// the checker and the importers can report it at the value instead of
/// dividing by a wrapped figure.
namespace dtplan::planner {

[[nodiscard]] constexpr std::int64_t saturating_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t out = 1;
  for (auto f : factors)
    if (__builtin_mul_overflow(out, f, &out)) return std::numeric_limits<std::int64_t>::max();
  return out;
}

[[nodiscard]] constexpr std::int64_t saturating_sum(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? std::numeric_limits<std::int64_t>::max() : out;
}

}  // namespace dtplan::planner
