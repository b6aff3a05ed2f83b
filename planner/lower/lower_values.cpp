#include "planner/lower/lower_values.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace dtplan::planner::lowering {

namespace ast = dsl::ast;

std::vector<unit_info> const& units() {
  static std::vector<unit_info> const table{
      {"B", dimension::bytes, 0, 0, false},
      {"KB", dimension::bytes, 3, 0, false},
      {"MB", dimension::bytes, 6, 0, false},
      {"GB", dimension::bytes, 9, 0, false},
      {"TB", dimension::bytes, 12, 0, false},
      {"KiB", dimension::bytes, 0, 1, false},
      {"MiB", dimension::bytes, 0, 2, false},
      {"GiB", dimension::bytes, 0, 3, false},
      {"TiB", dimension::bytes, 0, 4, false},
      {"MB/s", dimension::bandwidth, 6, 0, false},
      {"GB/s", dimension::bandwidth, 9, 0, false},
      {"TB/s", dimension::bandwidth, 12, 0, false},
      {"Mbit/s", dimension::bandwidth, 6, 0, true},
      {"Gbit/s", dimension::bandwidth, 9, 0, true},
      {"Tbit/s", dimension::bandwidth, 12, 0, true},
      {"Mb/s", dimension::bandwidth, 6, 0, true},
      {"Gb/s", dimension::bandwidth, 9, 0, true},
      {"Tb/s", dimension::bandwidth, 12, 0, true},
      {"GFLOP/s", dimension::compute_rate, 9, 0, false},
      {"TFLOP/s", dimension::compute_rate, 12, 0, false},
      {"PFLOP/s", dimension::compute_rate, 15, 0, false},
      {"ns", dimension::time, -9, 0, false},
      {"us", dimension::time, -6, 0, false},
      {"ms", dimension::time, -3, 0, false},
      {"s", dimension::time, 0, 0, false},
      {"%", dimension::fraction, -2, 0, false},
  };
  return table;
}

namespace {

// The unit a bare number most likely meant, for "did you mean '450 GB/s'?".
std::string_view typical_unit(dimension d) {
  switch (d) {
    case dimension::bytes: return "GiB";
    case dimension::bandwidth: return "GB/s";
    case dimension::compute_rate: return "TFLOP/s";
    case dimension::time: return "us";
    case dimension::fraction: return "%";
  }
  return "";
}

// Spellings people write for bandwidth that are not ours; closest() would
// not find them (or would find the wrong one).
std::string_view common_misspelling(std::string_view unit) {
  struct alias {
    std::string_view written, meant;
  };
  static constexpr alias aliases[] = {
      {"Gbps", "Gbit/s"},   {"gbps", "Gbit/s"},   {"Mbps", "Mbit/s"},   {"Tbps", "Tbit/s"},
      {"GBps", "GB/s"},     {"MBps", "MB/s"},     {"TBps", "TB/s"},     {"GB/sec", "GB/s"},
      {"TFLOPS", "TFLOP/s"}, {"TFLOPs", "TFLOP/s"}, {"tflops", "TFLOP/s"}, {"PFLOPS", "PFLOP/s"},
      {"GFLOPS", "GFLOP/s"}, {"Gb", "Gbit/s"},    {"µs", "us"},         {"sec", "s"},
      {"G", "GiB"},         {"GiB/s", "GB/s"},    {"Gib/s", "Gbit/s"},  {"Gbit", "Gbit/s"},
  };
  for (auto const& a : aliases)
    if (a.written == unit) return a.meant;
  return {};
}

std::string strip_underscores(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '_') out += c;
  return out;
}

}  // namespace

dsl::span span_of(ast::value const& v) {
  return std::visit([](auto const& x) { return x.where; }, v);
}

dsl::span span_of(ast::scalar const& v) {
  return std::visit([](auto const& x) { return x.where; }, v);
}

std::optional<ast::scalar> as_scalar(ast::value const& v) {
  return std::visit(
      [](auto const& x) -> std::optional<ast::scalar> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ast::auto_value> || std::is_same_v<T, ast::set> ||
                      std::is_same_v<T, ast::range>)
          return std::nullopt;
        else
          return ast::scalar{x};
      },
      v);
}

std::string suggest(std::string_view word, std::vector<std::string> const& candidates) {
  auto near = dsl::closest(word, candidates);
  if (!near.empty()) return near;
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  auto w = lower(word);
  auto letters = w;
  std::sort(letters.begin(), letters.end());
  for (auto const& c : candidates) {
    auto l = lower(c);
    std::sort(l.begin(), l.end());
    if (l == letters) return c;
  }
  if (w.size() >= 3)
    for (auto const& c : candidates)
      if (lower(c).rfind(w, 0) == 0) return c;
  return {};
}

std::string converter::echo(ast::scalar const& v) const {
  if (auto const* id = std::get_if<ast::identifier>(&v)) return fmt::format("'{}'", id->name);
  return std::string(sources_.text(span_of(v)));
}

std::optional<std::int64_t> converter::integer(ast::number const& n) {
  std::string digits = strip_underscores(n.text);
  bool negative = !digits.empty() && digits.front() == '-';
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.erase(0, 1);
  // Accumulate as unsigned so that INT64_MIN stays representable and any
  // overflow is caught before it wraps.
  std::uint64_t limit = negative ? std::uint64_t(std::numeric_limits<std::int64_t>::max()) + 1
                                 : std::uint64_t(std::numeric_limits<std::int64_t>::max());
  std::uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      diags_.error(n.where, fmt::format("expected an integer, got '{}'", n.text));
      return std::nullopt;
    }
    auto d = std::uint64_t(c - '0');
    if (value > (limit - d) / 10) {
      diags_.error(n.where, fmt::format("integer '{}' does not fit in 64 bits", n.text));
      return std::nullopt;
    }
    value = value * 10 + d;
  }
  if (negative) return value == limit ? std::numeric_limits<std::int64_t>::min()
                                      : -static_cast<std::int64_t>(value);
  return static_cast<std::int64_t>(value);
}

std::optional<double> converter::real(ast::number const& n, int decimal_exponent) {
  std::string text = strip_underscores(n.text);
  // Fold the unit's power of ten into the literal's exponent so strtod
  // rounds once: "3.35" TB/s becomes "3.35e12", exactly the double 3.35e12.
  auto e = text.find_first_of("eE");
  long exponent = decimal_exponent;
  std::string mantissa = text;
  if (e != std::string::npos) {
    mantissa = text.substr(0, e);
    exponent += std::strtol(text.c_str() + e + 1, nullptr, 10);
  }
  std::string folded = fmt::format("{}e{}", mantissa, exponent);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(folded.c_str(), &end);
  if (end != folded.c_str() + folded.size() || !std::isfinite(v) || errno == ERANGE) {
    if (std::isfinite(v) && errno != ERANGE) {
      diags_.error(n.where, fmt::format("expected a number, got '{}'", n.text));
    } else if (std::fabs(v) < 1) {
      diags_.error(n.where, fmt::format("number '{}' is too small to represent", n.text));
    } else {
      diags_.error(n.where, fmt::format("number '{}' is too large to represent", n.text));
    }
    return std::nullopt;
  }
  return v;
}

std::optional<std::int64_t> converter::count(ast::scalar const& v, std::string_view key,
                                             std::string_view what, std::int64_t min,
                                             std::int64_t max) {
  auto const* n = std::get_if<ast::number>(&v);
  if (n == nullptr || !n->is_integer) {
    diags_.error(span_of(v), fmt::format("expected a whole number {}, got {}", what, echo(v)));
    return std::nullopt;
  }
  auto value = integer(*n);
  if (!value) return std::nullopt;
  if (*value < min || *value > max) {
    diags_.error(n->where, count_out_of_range(key, min, max, n->text));
    return std::nullopt;
  }
  return value;
}

std::optional<unit_info> converter::lookup_unit(ast::quantity const& q) {
  for (auto const& u : units())
    if (u.name == q.unit) return u;
  std::string hint(common_misspelling(q.unit));
  if (hint.empty()) {
    std::vector<std::string> names;
    for (auto const& u : units()) names.emplace_back(u.name);
    hint = suggest(q.unit, names);
    // Suggest the unambiguous spelling of bits.
    if (hint == "Gb/s" || hint == "Mb/s" || hint == "Tb/s") hint.insert(2, "it");
  }
  if (hint.empty())
    diags_.error(q.unit_where, fmt::format("unknown unit '{}'", q.unit));
  else
    diags_.error(q.unit_where, fmt::format("unknown unit '{}'; did you mean '{}'?", q.unit, hint));
  return std::nullopt;
}

std::optional<double> converter::quantity(ast::scalar const& v, std::string_view key,
                                          dimension d) {
  auto phrase = dimension_phrase(d);
  if (auto const* n = std::get_if<ast::number>(&v)) {
    if (d == dimension::fraction) {
      auto x = real(*n);
      if (!x) return std::nullopt;
      if (*x < 0 || *x > 1) {
        diags_.error(n->where, fmt::format("expected {} for '{}', got {}", phrase, key, n->text));
        return std::nullopt;
      }
      return x;
    }
    diags_.error(n->where, fmt::format("expected {} for '{}', got {} with no unit; did you mean '{} {}'?",
                                       phrase, key, n->text, n->text, typical_unit(d)));
    return std::nullopt;
  }
  auto const* q = std::get_if<ast::quantity>(&v);
  if (q == nullptr) {
    diags_.error(span_of(v), fmt::format("expected {} for '{}', got {}", phrase, key, echo(v)));
    return std::nullopt;
  }
  auto u = lookup_unit(*q);
  if (!u) return std::nullopt;
  if (u->dim != d) {
    diags_.error(q->where, fmt::format("expected {} for '{}', got {}", phrase, key, echo(v)));
    return std::nullopt;
  }
  auto amount = real(q->amount, u->decimal_exponent);
  if (!amount) return std::nullopt;
  double value = *amount * std::pow(1024.0, u->binary_power) / (u->bits ? 8.0 : 1.0);
  if (q->multiplier) {
    auto const& m = *q->multiplier;
    if (!m.is_integer) {
      diags_.error(m.where, fmt::format("expected a whole number of links before 'x', got {}", m.text));
      return std::nullopt;
    }
    auto k = integer(m);
    if (!k) return std::nullopt;
    if (*k < 1) {
      diags_.error(m.where, fmt::format("expected at least 1 link before 'x', got {}", m.text));
      return std::nullopt;
    }
    value *= static_cast<double>(*k);
  }
  if (value < 0 || (d == dimension::fraction && value > 1)) {
    diags_.error(q->where, fmt::format("expected {} for '{}', got {}", phrase, key, echo(v)));
    return std::nullopt;
  }
  return value;
}

std::optional<double> converter::plain_real(ast::scalar const& v, std::string_view key) {
  auto const* n = std::get_if<ast::number>(&v);
  if (n == nullptr) {
    diags_.error(span_of(v), fmt::format("expected a number for '{}', got {}", key, echo(v)));
    return std::nullopt;
  }
  return real(*n);
}

std::optional<bool> converter::boolean(ast::scalar const& v, std::string_view key) {
  if (auto const* b = std::get_if<ast::boolean>(&v)) return b->value;
  diags_.error(span_of(v), fmt::format("expected 'true' or 'false' for '{}', got {}", key, echo(v)));
  return std::nullopt;
}

std::optional<std::string> converter::text(ast::scalar const& v, std::string_view key) {
  if (auto const* s = std::get_if<ast::string_literal>(&v)) return s->value;
  diags_.error(span_of(v), fmt::format("expected a quoted string for '{}', got {}", key, echo(v)));
  return std::nullopt;
}

std::optional<std::size_t> converter::choice(ast::scalar const& v, std::string_view key,
                                             std::vector<std::string> const& names) {
  auto const* id = std::get_if<ast::identifier>(&v);
  if (id != nullptr)
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == id->name) return i;
  std::string message =
      fmt::format("expected {} for '{}', got {}", quoted_alternatives(names), key, echo(v));
  if (id != nullptr) {
    auto near = suggest(id->name, names);
    if (!near.empty()) message += fmt::format("; did you mean '{}'?", near);
  }
  diags_.error(span_of(v), message);
  return std::nullopt;
}

}  // namespace dtplan::planner::lowering
