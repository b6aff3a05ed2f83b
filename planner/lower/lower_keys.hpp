#pragma once
#include <optional>

#include "dsl/ast.hpp"
#include "planner/ir/keys.hpp"
#include "planner/lower/lower_values.hpp"

/// One written key's value, converted the way the key table says: its
/// domain, its bounds and physical range, its choices. Every failure is
/// reported at what was written; nothing is stored here (lowering stores the
/// value through the table's field).
namespace dtplan::planner::lowering {

/// The value of one scalar for `k` (not a strategy's set, range or auto).
std::optional<key_value> scalar_value(converter& conv, key_info const& k, dsl::ast::scalar const& v);

/// The value of a key of any block but a strategy: one scalar, `auto` for a
/// key with a choice named "auto" (stored as that choice), a set of values
/// (each checked, none twice; kept ascending) for a key that takes a set. The
/// caller has checked that the form fits the key (lowering's check_keys).
std::optional<key_value> block_value(converter& conv, key_info const& k, dsl::ast::assignment const& a);

/// A strategy key as written: one value, a set (each value checked, none
/// twice), a whole-number range or `auto`; a key the search may not free
/// (the description) takes one value only.
std::optional<key_choice<key_value>> choice_value(converter& conv, key_info const& k,
                                                  dsl::ast::assignment const& a);

}  // namespace dtplan::planner::lowering
