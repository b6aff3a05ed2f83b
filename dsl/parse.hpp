#pragma once
#include <cstdint>
#include <optional>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"

namespace dtplan::dsl {

/// Whether a file is text every reader can take (the .dtp parser and the
/// framework configuration readers of dsl/config/): under 4 GiB, UTF-8
/// without NUL bytes, no lone carriage return. Reports the first byte that
/// is not, with its line and column.
bool check_text(source_manager const& sources, std::uint32_t file, diagnostics& diags);

/// Parses a whole .dtp file. On a syntax error reports it (with the span of
/// the offending token and what was expected) and returns nothing. Rejects
/// text that is not UTF-8/ASCII text (NUL bytes, invalid UTF-8) and an empty
/// file, each with its own diagnostic. Never throws, never recurses without
/// bound: deeply nested input ends in a diagnostic.
std::optional<ast::file> parse(source_manager const& sources, std::uint32_t file, diagnostics& diags);

/// Parses one value as it would appear on the right of `=` (used by
/// `--set BLOCK.KEY=VALUE`, so the command line shares the file's grammar).
std::optional<ast::value> parse_value(source_manager const& sources, std::uint32_t file,
                                      diagnostics& diags);

/// Parses `TARGET.KEY=VALUE`, the argument of `--set`, with the same value
/// grammar as a file.
std::optional<ast::setting> parse_setting(source_manager const& sources, std::uint32_t file,
                                          diagnostics& diags);

}  // namespace dtplan::dsl
