#pragma once
#include <vector>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"

namespace dtplan::planner {

/// Applies `--set TARGET.KEY=VALUE` overrides to the syntax tree before
/// lowering, so they are checked exactly like keys written in the file.
/// TARGET is a block kind (every block of that kind) or a block's name; a
/// built-in block is changed only when the file defines no block it names.
/// An unknown target or key (by the key table) is an error in the setting's
/// own text; its value is checked by lowering.
void apply_settings(std::vector<dsl::ast::block>& user, std::vector<dsl::ast::block>& builtin,
                    std::vector<dsl::ast::setting> const& settings, dsl::diagnostics& diags);

}  // namespace dtplan::planner
