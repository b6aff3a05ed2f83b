#include "planner/search/space.hpp"

#include <fmt/format.h>

namespace dtplan::planner::detail {

std::vector<std::int64_t> dividing(std::vector<std::int64_t> const& candidates, std::int64_t n) {
  std::vector<std::int64_t> out;
  if (n <= 0) return out;
  for (auto d : candidates) {
    if (d > n) break;
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

std::vector<std::int64_t> int_domain(key_choice<std::int64_t> const& c, std::int64_t fallback,
                                     std::vector<std::int64_t> const& valid,
                                     std::vector<std::int64_t> const& automatic) {
  using form = key_choice<std::int64_t>::form;
  switch (c.f) {
    case form::unset: return {fallback};
    case form::single: return c.values.empty() ? std::vector{fallback} : std::vector{c.values.front()};
    case form::set: return sorted_unique(c.values);
    case form::range: {
      std::vector<std::int64_t> out;
      for (auto v : valid)
        if (v >= c.low && v <= c.high) out.push_back(v);
      return out;
    }
    case form::any: return automatic;
  }
  return {fallback};
}

std::vector<std::int64_t> capped(std::vector<std::int64_t> v, std::int64_t cap) {
  std::erase_if(v, [&](std::int64_t x) { return x > cap; });
  return v;
}

std::string structure_text(work_item const& w) {
  // A mixture's structures differ in ep too (dense ones are all ep = 1).
  auto const etp = w.etp != w.tp ? fmt::format(", etp = {}", w.etp) : std::string();
  if (w.ep > 1 || !etp.empty())
    return fmt::format("tp = {}, pp = {}, cp = {}, dp = {}, ep = {}{}", w.tp, w.pp, w.cp, w.dp, w.ep, etp);
  return fmt::format("tp = {}, pp = {}, cp = {}, dp = {}", w.tp, w.pp, w.cp, w.dp);
}

}  // namespace dtplan::planner::detail
