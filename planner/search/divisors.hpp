#pragma once
#include <cstdint>
#include <vector>

namespace dtplan::planner {

/// Every divisor of `n`, ascending; none for n <= 0. Any 64-bit n in
/// microseconds (factorised, not trial-divided), so a huge global_batch or
/// GPU count never stalls the search.
std::vector<std::int64_t> divisors(std::int64_t n);

}  // namespace dtplan::planner
