#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/ir/keys.hpp"

/// Conversion of written values (numbers, quantities, identifiers) to typed
/// values for lowering: integer overflow, units and their dimensions, enum
/// names. Every failure is reported with the span of what was written.
namespace dtplan::planner::lowering {

using planner::dimension;
using planner::dimension_phrase;
using planner::quoted_alternatives;

/// One unit of the units table: value = amount * 10^decimal_exponent *
/// 1024^binary_power / (bits ? 8 : 1).
struct unit_info {
  std::string_view name;
  dimension dim;
  int decimal_exponent;
  int binary_power;
  bool bits;
};

/// Every unit the language knows, in the order of DSL.md's table.
std::vector<unit_info> const& units();

/// The span of any value alternative.
dsl::span span_of(dsl::ast::value const& v);
dsl::span span_of(dsl::ast::scalar const& v);
/// The value as a single scalar, or nothing for `auto`, sets and ranges.
std::optional<dsl::ast::scalar> as_scalar(dsl::ast::value const& v);

/// Reports conversion failures into one diagnostics list, quoting the
/// source text the user wrote.
class converter {
 public:
  converter(dsl::source_manager const& sources, dsl::diagnostics& diags)
      : sources_(sources), diags_(diags) {}

  /// What was written, as it should appear after "got": identifiers
  /// quoted, numbers and quantities as typed.
  [[nodiscard]] std::string echo(dsl::ast::scalar const& v) const;

  /// An integer literal, checked for 64-bit overflow.
  std::optional<std::int64_t> integer(dsl::ast::number const& n);
  /// A number as a double, scaled by 10^decimal_exponent without rounding
  /// twice (`3.35` with `TB/s` is exactly 3.35e12).
  std::optional<double> real(dsl::ast::number const& n, int decimal_exponent = 0);

  /// A whole number of at least `min` (and at most `max`); `what` completes
  /// "expected a whole number ...", e.g. "of layers" or "for 'ffn'".
  std::optional<std::int64_t> count(dsl::ast::scalar const& v, std::string_view key,
                                    std::string_view what, std::int64_t min,
                                    std::int64_t max = INT64_MAX);
  /// A quantity of dimension `d`, in base units (bytes, bytes/s, FLOP/s,
  /// seconds, or a fraction in [0, 1]).
  std::optional<double> quantity(dsl::ast::scalar const& v, std::string_view key, dimension d);
  /// A plain real number (`base_lr`).
  std::optional<double> plain_real(dsl::ast::scalar const& v, std::string_view key);
  std::optional<bool> boolean(dsl::ast::scalar const& v, std::string_view key);
  std::optional<std::string> text(dsl::ast::scalar const& v, std::string_view key);
  /// One of `names` (an identifier); returns its index.
  std::optional<std::size_t> choice(dsl::ast::scalar const& v, std::string_view key,
                                    std::vector<std::string> const& names);

  dsl::diagnostics& diags() { return diags_; }
  dsl::source_manager const& sources() const { return sources_; }

 private:
  std::optional<unit_info> lookup_unit(dsl::ast::quantity const& q);

  dsl::source_manager const& sources_;
  dsl::diagnostics& diags_;
};

/// The candidate a misspelt `word` most likely meant: the nearest by edit
/// distance (dsl::closest), else one with the same letters swapped, else
/// one that `word` begins (at least three letters): "" when none.
std::string suggest(std::string_view word, std::vector<std::string> const& candidates);

}  // namespace dtplan::planner::lowering
