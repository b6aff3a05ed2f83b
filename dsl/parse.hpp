#pragma once
#include <cstddef>
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

/// The most values all the sets of one file may hold together. Each costs
/// some 350 bytes while it is parsed and kept, so a 16 MiB file of one-digit
/// values would otherwise take some 3 GB; a set of a million values (a
/// search no one runs) still reads.
inline constexpr std::size_t max_set_values = std::size_t{1} << 20;

/// Parses a whole .dtp file. On a syntax error reports it (with the span of
/// the offending token and what was expected) and returns nothing. Rejects
/// text that is not UTF-8/ASCII text (NUL bytes, invalid UTF-8), an empty
/// file and sets of more than `max_set_values` values in all, each with its
/// own diagnostic. Never throws, never recurses without bound: deeply nested
/// input ends in a diagnostic.
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
