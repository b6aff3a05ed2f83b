#pragma once
#include <cstddef>
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
  /// Set where the text parses but goes past a limit: the values the sets
  /// may still hold were spent at `where`, the first value beyond them.
  bool past_set_budget = false;
};

/// The values the sets of a file may still hold: each value a set parses
/// takes one, and a value past the last is an error (`past_set_budget`), so
/// that no input builds a tree larger than the budget allows.
struct set_budget {
  std::size_t left = 0;
};

/// `KIND [NAME] [: BASE] {`, up to and including the brace.
bool parse_header(std::string_view text, std::uint32_t& pos, x3ast::header& out, syntax_error& err);

/// Whether a block header starts at `pos` (used to notice a block that
/// starts before the previous one was closed). Never reports.
bool looks_like_header(std::string_view text, std::uint32_t pos);

/// `key = value`, without its terminator.
bool parse_assignment(std::string_view text, std::uint32_t& pos, x3ast::assignment& out,
                      syntax_error& err, set_budget& budget);

/// One value as it appears on the right of `=`.
bool parse_value(std::string_view text, std::uint32_t& pos, x3ast::value& out, syntax_error& err,
                 set_budget& budget);

/// `TARGET.KEY=VALUE`.
bool parse_setting(std::string_view text, std::uint32_t& pos, x3ast::setting& out,
                   syntax_error& err, set_budget& budget);

}  // namespace dtplan::dsl::detail
