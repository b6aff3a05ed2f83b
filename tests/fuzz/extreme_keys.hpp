// The keys fuzz_extreme writes, with the kind of value each takes, derived
// from the key table (planner/ir/keys.hpp): a key the table gains is fuzzed
// without a line here. A header so that keys_test can check the derivation.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "planner/ir/keys.hpp"
#include "planner/lower/lower.hpp"

namespace dtplan::fuzz {

enum class kind { count, bytes, bandwidth, rate, time, fraction, real, flag, text, choice };

struct key {
  std::string block;
  std::string name;
  kind k = kind::count;
  std::vector<std::string> choices{};  // for kind::choice: the values to write, valid or not
};

// Values the table has no choices for: the names of gpu and framework
// blocks (the catalog's, and the fuzzer's own `f` and the heads of its
// chains, `cgp0` and `cfr0`), shard groups and rank orders (one naming an
// axis twice), and a near-miss a user writes (ada, which is ampere).
inline std::map<std::pair<std::string, std::string>, std::vector<std::string>> const& extra_values() {
  auto plus = [](std::vector<std::string> names, std::initializer_list<char const*> more) {
    names.insert(names.end(), more.begin(), more.end());
    return names;
  };
  static std::map<std::pair<std::string, std::string>, std::vector<std::string>> const extras{
      {{"cluster", "gpu"}, plus(planner::catalog_gpu_names(), {"cgp0"})},
      {{"training", "framework"}, plus(planner::catalog_framework_names(), {"f", "cfr0"})},
      {{"strategy", "shard"}, {"all", "node", "1", "2", "8"}},
      {{"strategy", "order"}, {"\"tp-cp-dp-pp\"", "\"pp-dp-cp-tp\"", "\"dp-tp\"", "\"tp-tp-dp-pp\""}},
      {{"gpu", "generation"}, {"ada"}},
  };
  return extras;
}

// A key that takes a set (a framework's zero_stages, checkpoint_modes): each
// value alone, all of them in order and reversed, none, one twice, and one
// out of its domain.
inline std::vector<std::string> extreme_sets(planner::key_info const& info) {
  std::vector<std::string> values = info.choices;
  if (info.dom != planner::domain::choice)
    // A set's domain is a few stages; the cap keeps a wide one finite.
    for (std::int64_t v = info.min; v <= info.max && v < info.min + 16; ++v) values.push_back(std::to_string(v));
  auto braced = [](auto first, auto last) {
    std::string s = "{";
    for (auto i = first; i != last; ++i) s += (i == first ? "" : ", ") + *i;
    return s + "}";
  };
  std::vector<std::string> sets;
  for (auto const& v : values) sets.push_back("{" + v + "}");
  sets.push_back(braced(values.begin(), values.end()));
  sets.push_back(braced(values.rbegin(), values.rend()));
  sets.push_back("{}");
  sets.push_back("{" + values.front() + ", " + values.front() + "}");
  sets.push_back(info.dom == planner::domain::choice ? "{nonesuch}" : "{" + std::to_string(info.max + 1) + "}");
  return sets;
}

// Every key of the table, in its order, with its kind. Choices gain the
// table's lacks: `auto` where a strategy frees the key, and `nonesuch`, an
// error at the value, everywhere.
inline std::vector<key> extreme_keys() {
  using planner::dimension;
  using planner::domain;
  std::vector<key> out;
  for (auto const& info : planner::all_keys()) {
    key k{planner::name(info.block), std::string(info.name), kind::choice};
    // No default: a domain or dimension the table gains is a -Wswitch warning here.
    switch (info.dom) {
      case domain::count: k.k = kind::count; break;
      case domain::quantity:
        switch (info.dim) {
          case dimension::bytes: k.k = kind::bytes; break;
          case dimension::bandwidth: k.k = kind::bandwidth; break;
          case dimension::compute_rate: k.k = kind::rate; break;
          case dimension::time: k.k = kind::time; break;
          case dimension::fraction: k.k = kind::fraction; break;
        }
        break;
      case domain::fraction: k.k = kind::fraction; break;
      case domain::real: k.k = kind::real; break;
      case domain::boolean: k.k = kind::flag; break;
      case domain::text: k.k = kind::text; break;
      case domain::choice: k.choices = info.choices; break;
      case domain::gpu_name:
      case domain::framework_name:
      case domain::shard:
      case domain::order: break;  // extra_values() has them
    }
    if (info.takes_set) {
      k.k = kind::choice;
      k.choices = extreme_sets(info);
    }
    if (k.k == kind::choice) {
      if (auto extra = extra_values().find({k.block, k.name}); extra != extra_values().end())
        k.choices.insert(k.choices.end(), extra->second.begin(), extra->second.end());
      if (info.searchable) k.choices.push_back("auto");
      k.choices.push_back("nonesuch");
    }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace dtplan::fuzz
