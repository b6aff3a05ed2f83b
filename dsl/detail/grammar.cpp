#include "dsl/detail/grammar.hpp"

#include "dsl/detail/grammar_def.hpp"

#include <functional>

namespace dtplan::dsl::detail {

namespace {

namespace x3 = boost::spirit::x3;

// Runs one rule from `pos`. A rule that fails without an expectation point
// failed on its first token, so the rule itself is what was expected there.
template <typename Rule, typename Attribute>
bool run(Rule const& rule, std::string_view text, std::uint32_t& pos, Attribute& out,
         syntax_error& err, set_budget& budget) {
  char const* const start = text.data();
  char const* first = start + pos;
  char const* const last = start + text.size();
  try {
    if (x3::phrase_parse(
            first, last,
            x3::with<grammar::buffer_start_tag>(start)[x3::with<grammar::set_budget_tag>(std::ref(budget))[rule]],
            grammar::blank, out)) {
      pos = static_cast<std::uint32_t>(first - start);
      return true;
    }
    err = {pos, rule.name};
  } catch (x3::expectation_failure<char const*> const& e) {
    err = {static_cast<std::uint32_t>(e.where() - start), e.which()};
  } catch (grammar::set_budget_spent const& e) {
    err = {e.where, {}, true};
  }
  return false;
}

}  // namespace

bool parse_header(std::string_view text, std::uint32_t& pos, x3ast::header& out,
                  syntax_error& err) {
  set_budget none;  // a header holds no set
  return run(grammar::header, text, pos, out, err, none);
}

bool looks_like_header(std::string_view text, std::uint32_t pos) {
  char const* const start = text.data();
  char const* first = start + pos;
  return x3::phrase_parse(first, start + text.size(),
                          x3::with<grammar::buffer_start_tag>(start)[grammar::header_probe],
                          grammar::blank);
}

bool parse_assignment(std::string_view text, std::uint32_t& pos, x3ast::assignment& out,
                      syntax_error& err, set_budget& budget) {
  return run(grammar::assignment, text, pos, out, err, budget);
}

bool parse_value(std::string_view text, std::uint32_t& pos, x3ast::value& out, syntax_error& err,
                 set_budget& budget) {
  return run(grammar::value, text, pos, out, err, budget);
}

bool parse_setting(std::string_view text, std::uint32_t& pos, x3ast::setting& out,
                   syntax_error& err, set_budget& budget) {
  return run(grammar::setting, text, pos, out, err, budget);
}

}  // namespace dtplan::dsl::detail
