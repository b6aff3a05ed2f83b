#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "dsl/detail/ast_internal.hpp"

/// The interface of the X3 grammar: one entry point per rule the parser
/// drives. Each parses `text` from offset `pos`, skipping blanks and
/// comments (and newlines only inside a set), and on success moves `pos`
/// past what it read. The definitions live in grammar_def.hpp and are
/// instantiated once, in grammar.cpp.
namespace dtplan::dsl::detail {

/// Where a rule failed and what it expected there, as a human phrase
/// ("a value after '='"). `where` is the offset the failing rule started
/// from, before skipping blanks.
struct syntax_error {
  std::uint32_t where = 0;
  std::string expected;
};

/// `KIND [NAME] [: BASE] {`, up to and including the brace.
bool parse_header(std::string_view text, std::uint32_t& pos, x3ast::header& out, syntax_error& err);

/// Whether a block header starts at `pos` (used to notice a block that
/// starts before the previous one was closed). Never reports.
bool looks_like_header(std::string_view text, std::uint32_t pos);

/// `key = value`, without its terminator.
bool parse_assignment(std::string_view text, std::uint32_t& pos, x3ast::assignment& out,
                      syntax_error& err);

/// One value as it appears on the right of `=`.
bool parse_value(std::string_view text, std::uint32_t& pos, x3ast::value& out, syntax_error& err);

/// `TARGET.KEY=VALUE`.
bool parse_setting(std::string_view text, std::uint32_t& pos, x3ast::setting& out,
                   syntax_error& err);

}  // namespace dtplan::dsl::detail
