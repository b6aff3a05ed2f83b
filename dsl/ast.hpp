#pragma once
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "dsl/source.hpp"

/// The syntax tree of a .dtp file: what was written, where, and nothing more.
/// Names are not resolved, numbers keep their spelling, units are not checked
/// for dimension; that is lowering's work (planner/lower/lower.hpp).
namespace dtplan::dsl::ast {

/// A number as written: `32`, `1_000_000`, `3e-4`, `0.85`. `is_integer` is
/// true when it has no '.', no exponent; the value is converted (and checked
/// for overflow) by lowering.
struct number {
  span where;
  std::string text;
  bool is_integer = true;
};

/// `80 GiB`, `100 Gbit/s`, `90 %`, `8 x 400 Gbit/s`.
struct quantity {
  span where;
  std::optional<number> multiplier;  // the `8` of `8 x 400 Gbit/s`
  number amount;
  std::string unit;  // as written, e.g. "GiB", "Gbit/s", "%"
  span unit_where;
};

struct identifier {
  span where;
  std::string name;
};

struct string_literal {
  span where;
  std::string value;  // without quotes, escapes resolved
};

struct boolean {
  span where;
  bool value = false;
};

/// The `auto` keyword.
struct auto_value {
  span where;
};

using scalar = std::variant<number, quantity, identifier, string_literal, boolean>;

/// `{1, 2, 4, 8}`
struct set {
  span where;
  std::vector<scalar> items;
};

/// `1..8`
struct range {
  span where;
  number low;
  number high;
};

using value = std::variant<number, quantity, identifier, string_literal, boolean, auto_value, set,
                           range>;

/// `key = value`
struct assignment {
  span where;  // the whole assignment
  identifier key;
  value rhs;
};

/// `KIND [NAME] [: BASE] { assignments }`
struct block {
  span where;         // from KIND to the closing brace
  span header;        // from KIND to the opening brace
  identifier kind;
  std::optional<identifier> name;
  std::optional<identifier> base;
  std::vector<assignment> body;
};

struct file {
  std::vector<block> blocks;
};

/// A command-line override `TARGET.KEY=VALUE` (`--set cluster.nodes=4`):
/// TARGET is a block kind (every block of that kind) or a block name.
struct setting {
  span where;
  identifier target;
  identifier key;
  value rhs;
};

/// The span of any value alternative.
span where_of(value const& v);
span where_of(scalar const& v);

/// Renders the tree as indented text (`dtplan --dump ast`), one node a line
/// with its `line:col`.
std::string dump(file const& f, source_manager const& sources);

}  // namespace dtplan::dsl::ast
