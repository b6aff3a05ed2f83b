#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "dsl/diagnostics.hpp"
#include "planner/ir/keys.hpp"

// What the key table's rows share: names of blocks, checks of a value
// against a row, how values are shown, the key reference.
namespace dtplan::planner {

std::vector<std::string> const& block_kind_names() {
  static std::vector<std::string> const names{"model", "gpu", "cluster", "training", "strategy",
                                                    "framework"};
  return names;
}

std::string const& name(block_kind k) { return block_kind_names()[static_cast<std::size_t>(k)]; }

std::optional<block_kind> block_kind_of(std::string_view word) {
  auto const& names = block_kind_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == word) return static_cast<block_kind>(i);
  return std::nullopt;
}

std::string called(block_kind k, std::string_view block_name) {
  if (k == block_kind::training) return "the 'training' block";
  if (block_name.empty()) return fmt::format("this '{}' block", name(k));
  return fmt::format("{} '{}'", name(k), block_name);
}

std::string_view dimension_phrase(dimension d) {
  switch (d) {
    case dimension::bytes: return "an amount of memory";
    case dimension::bandwidth: return "a bandwidth";
    case dimension::compute_rate: return "a compute rate";
    case dimension::time: return "a time";
    case dimension::fraction: return "a fraction in [0, 1] or a percentage";
  }
  return "a quantity";
}

std::size_t key_value_hash::operator()(key_value const& v) const {
  auto mix = [](std::size_t h, std::size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); };
  auto h = std::visit(
      [&](auto const& x) -> std::size_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, shard_group>)
          return mix(std::hash<int>{}(static_cast<int>(x.k)), std::hash<std::int64_t>{}(x.size));
        else if constexpr (std::is_same_v<T, rank_order>) {
          std::size_t r = 0;
          for (auto a : x) r = mix(r, static_cast<std::size_t>(a));
          return r;
        } else if constexpr (std::is_same_v<T, value_set>) {
          std::size_t r = 0;
          for (auto a : x) r = mix(r, std::hash<std::int64_t>{}(a));
          return r;
        } else
          return std::hash<T>{}(x);
      },
      v);
  return mix(h, v.index());
}


std::string count_out_of_range(std::string_view key, std::int64_t min, std::int64_t max, std::string_view shown) {
  if (max == std::numeric_limits<std::int64_t>::max())
    return fmt::format("'{}' must be at least {}, got {}", key, min, shown);
  return fmt::format("'{}' must be between {} and {}, got {}", key, min, max, shown);
}

std::optional<std::string> invalid(key_info const& k, key_value const& v, std::string_view shown) {
  if (auto const* set = std::get_if<value_set>(&v)) {
    if (set->empty()) return fmt::format("an empty set leaves no value for '{}'", k.name);
    for (auto x : *set) {
      auto item = k;
      item.takes_set = false;
      auto text = k.dom == domain::choice && x >= 0 && x < static_cast<std::int64_t>(k.choices.size())
                      ? k.choices[static_cast<std::size_t>(x)]
                      : std::to_string(x);
      if (auto problem = invalid(item, x, text)) return problem;
    }
    return std::nullopt;
  }
  switch (k.dom) {
    case domain::count: {
      auto n = std::get<std::int64_t>(v);
      if (n < k.min || n > k.max) return count_out_of_range(k.name, k.min, k.max, shown);
      return std::nullopt;
    }
    case domain::quantity:
    case domain::fraction:
    case domain::real: {
      double x = std::get<double>(v);
      if (k.dom == domain::real && std::isnan(x)) return fmt::format("expected a number for '{}', got {}", k.name, shown);
      if (k.dom != domain::real && (!(x >= 0) || (k.dom == domain::fraction && x > 1)))
        return fmt::format("expected {} for '{}', got {}", dimension_phrase(k.dom == domain::fraction ? dimension::fraction : k.dim),
                           k.name, shown);
      if (k.range.above_zero && !(x > 0)) return fmt::format("'{}' must be above zero, got {}", k.name, shown);
      if (x < k.range.low) return fmt::format("'{}' must be at least {}, got {}", k.name, k.range.low_text, shown);
      if (x > k.range.high) return fmt::format("'{}' must be at most {}, got {}", k.name, k.range.high_text, shown);
      return std::nullopt;
    }
    case domain::choice: {
      auto i = std::get<std::int64_t>(v);
      if (i < 0 || i >= static_cast<std::int64_t>(k.choices.size()))
        return fmt::format("expected {} for '{}', got {}", quoted_alternatives(k.choices), k.name, shown);
      return std::nullopt;
    }
    case domain::shard: {
      auto const& g = std::get<shard_group>(v);
      if (g.k == shard_group::kind::size && (g.size < k.min || g.size > k.max))
        return count_out_of_range(k.name, k.min, k.max, std::to_string(g.size));
      return std::nullopt;
    }
    case domain::order: {
      auto const& o = std::get<rank_order>(v);
      if (!parse_order(to_string(o)))
        return fmt::format("expected an order of tp, cp, dp and pp such as \"tp-cp-dp-pp\" for '{}', got {}", k.name,
                           shown);
      return std::nullopt;
    }
    case domain::boolean:
    case domain::text:
    case domain::gpu_name:
    case domain::framework_name: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::int64_t> auto_choice(key_info const& k) {
  if (k.dom != domain::choice) return std::nullopt;
  auto at = std::find(k.choices.begin(), k.choices.end(), "auto");
  if (at == k.choices.end()) return std::nullopt;
  return static_cast<std::int64_t>(at - k.choices.begin());
}

bool takes_auto(key_info const& k) { return auto_choice(k).has_value(); }

std::string wrong_form(key_info const& k, std::string_view form) {
  bool const set = form == "a set";
  bool const any = form == "'auto'";
  std::vector<std::string> takers;
  for (auto const& other : keys_of(k.block))
    if (set ? other.takes_set : any && takes_auto(other)) takers.emplace_back(other.name);
  if (!k.takes_set && takers.empty()) return "sets, ranges and 'auto' are only allowed in a 'strategy' block";
  auto message = fmt::format("'{}' takes {}, not {}", k.name, takes(k), form);
  // "'a', 'b' or 'c'" reads as a choice; these are all the keys that do.
  auto list = quoted_alternatives(takers);
  if (auto pos = list.rfind(" or "); pos != std::string::npos) list.replace(pos, 4, " and ");
  if (!k.takes_set)
    message += fmt::format("; in {} only {} take{} {}",
                           k.block == block_kind::training ? std::string("the 'training' block")
                                                           : fmt::format("a '{}' block", name(k.block)),
                           list, takers.size() == 1 ? "s" : "", form);
  return message;
}

std::string quoted_alternatives(std::vector<std::string> const& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += fmt::format("'{}'", names[i]);
  }
  return out;
}

std::string takes(key_info const& k) {
  if (k.takes_set) {
    if (k.dom == domain::count)
      return fmt::format("a set of whole numbers from {} to {}, such as {{{}, {}}}", k.min, k.max, k.min, k.min + 1);
    auto among = quoted_alternatives(k.choices);
    among.replace(among.rfind(" or "), 4, " and ");
    return fmt::format("a set of values among {}, such as {{{}, {}}}", among, k.choices[0], k.choices[1]);
  }
  switch (k.dom) {
    case domain::count: return "a whole number";
    case domain::quantity: return std::string(dimension_phrase(k.dim));
    case domain::fraction: return std::string(dimension_phrase(dimension::fraction));
    case domain::real: return "a number";
    case domain::choice: return quoted_alternatives(k.choices);
    case domain::boolean: return "'true' or 'false'";
    case domain::text: return "one string";
    case domain::gpu_name: return "a gpu name";
    case domain::framework_name: return "a framework name";
    case domain::shard: return "'all', 'node' or a number of ranks (a set such as {node, 16} searches several)";
    case domain::order: return "an order such as \"tp-cp-dp-pp\"";
  }
  return "a value";
}

std::string count_phrase(key_info const& k) {
  return k.what.empty() ? fmt::format("for '{}'", k.name) : std::string(k.what);
}

std::string shown(key_info const& k, key_value const& v) {
  if (auto const* set = std::get_if<value_set>(&v)) {
    auto item = k;
    item.takes_set = false;
    std::string out = "{";
    for (std::size_t i = 0; i < set->size(); ++i) out += (i ? ", " : "") + shown(item, (*set)[i]);
    return out + "}";
  }
  switch (k.dom) {
    case domain::count: return fmt::format("{}", std::get<std::int64_t>(v));
    case domain::quantity: {
      double x = std::get<double>(v);
      switch (k.dim) {
        case dimension::bytes: return fmt::format("{} ({:.0f} B)", to_string(bytes(x)), x);
        case dimension::bandwidth: return to_string(bandwidth(x));
        case dimension::compute_rate: return to_string(flop_rate(x));
        case dimension::time: return to_string(seconds(x));
        case dimension::fraction: break;
      }
      return fmt::format("{}", x);
    }
    case domain::fraction:
    case domain::real: return fmt::format("{}", std::get<double>(v));
    case domain::choice: {
      auto i = std::get<std::int64_t>(v);
      return i >= 0 && i < static_cast<std::int64_t>(k.choices.size()) ? k.choices[i] : "?";
    }
    case domain::boolean: return std::get<bool>(v) ? "true" : "false";
    case domain::text: return dsl::quoted(std::get<std::string>(v));
    case domain::gpu_name:
    case domain::framework_name: return dsl::escaped(std::get<std::string>(v));
    case domain::shard: return to_string(std::get<shard_group>(v));
    case domain::order: return fmt::format("\"{}\"", to_string(std::get<rank_order>(v)));
  }
  return "?";
}

std::optional<rank_order> parse_order(std::string_view text) {
  rank_order order{};
  std::size_t n = 0;
  bool seen[4] = {false, false, false, false};
  std::size_t start = 0;
  while (true) {
    auto dash = text.find('-', start);
    auto part = text.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start);
    if (n == 4) return std::nullopt;
    axis a;
    if (part == "tp") a = axis::tp;
    else if (part == "cp") a = axis::cp;
    else if (part == "dp") a = axis::dp;
    else if (part == "pp") a = axis::pp;
    else return std::nullopt;
    if (seen[static_cast<int>(a)]) return std::nullopt;
    seen[static_cast<int>(a)] = true;
    order[n++] = a;
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  if (n != 4) return std::nullopt;
  return order;
}

namespace {

std::string values_text(key_info const& k);

// A set's values: "set of whole numbers, 0 to 3", "set of `none` \| `full`".
std::string set_text(key_info const& k) {
  auto item = k;
  item.takes_set = false;
  auto each = values_text(item);
  if (each.starts_with("whole number,")) each.insert(std::string("whole number").size(), "s");
  return "set `{...}` of " + each;
}

std::string values_text(key_info const& k) {
  if (k.takes_set) return set_text(k);
  auto range_text = [&](std::string_view noun) {
    if (!std::isfinite(k.range.high))
      return k.range.low > 0 ? fmt::format("{}, at least {}", noun, k.range.low_text)
                             : fmt::format("{}, {}", noun, k.range.above_zero ? "above 0" : "0 or more");
    auto low = k.range.low > 0 ? fmt::format("{} to ", k.range.low_text)
                               : std::string(k.range.above_zero ? "above 0, up to " : "0 to ");
    return fmt::format("{}, {}{}", noun, low, k.range.high_text);
  };
  switch (k.dom) {
    case domain::count:
      if (k.max == std::numeric_limits<std::int64_t>::max()) return fmt::format("whole number, at least {}", k.min);
      return fmt::format("whole number, {} to {}", k.min, k.max);
    case domain::quantity:
      switch (k.dim) {
        case dimension::bytes: return range_text("memory");
        case dimension::bandwidth: return range_text("bandwidth");
        case dimension::compute_rate: return range_text("compute rate");
        case dimension::time: return range_text("time");
        case dimension::fraction: break;
      }
      return "quantity";
    case domain::fraction: return range_text("fraction or percentage");
    case domain::real: return range_text("number");
    case domain::choice: {
      std::string out;
      for (std::size_t i = 0; i < k.choices.size(); ++i) out += (i ? " \\| `" : "`") + k.choices[i] + "`";
      return out;
    }
    case domain::boolean: return "`true` \\| `false`";
    case domain::text: return "string";
    case domain::gpu_name: return "gpu name";
    case domain::framework_name: return "framework name";
    case domain::shard: return "`all` \\| `node` \\| number of ranks";
    case domain::order: return "string of `tp`, `cp`, `dp`, `pp` joined by `-`";
  }
  return "";
}

}  // namespace

std::string keys_reference() {
  std::string out =
      "# Keys\n\n"
      "Every key of every block, generated from the key table (planner/ir/keys.cpp;\n"
      "`DTPLAN_REBASE=1 build/tests/keys_test` rewrites this file). Values outside\n"
      "a key's range are errors at the value. Strategy keys also take a set\n"
      "`{...}`, a range `a..b` (whole numbers) or `auto`, which `--optimize` searches.\n"
      "The training block's run-time behaviours (`attention_backend` to `nvls`) start\n"
      "from its framework's and are overridden by each one it writes; a framework\n"
      "block has the same rows, plus what the framework can run and its figures.\n";
  for (std::size_t b = 0; b < block_kind_count; ++b) {
    auto kind = static_cast<block_kind>(b);
    out += fmt::format("\n## {}\n\n| key | values | default | other names | meaning |\n|---|---|---|---|---|\n", name(kind));
    for (auto const& k : keys_of(kind)) {
      std::string aliases;
      for (auto a : k.aliases) aliases += fmt::format("{}`{}`", aliases.empty() ? "" : ", ", a);
      out += fmt::format("| `{}` | {} | {} | {} | {} |\n", k.name, values_text(k), k.default_text, aliases, k.meaning);
    }
  }
  return out;
}

}  // namespace dtplan::planner
