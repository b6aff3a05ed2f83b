#pragma once
#include <boost/fusion/include/at_c.hpp>
#include <boost/spirit/home/x3.hpp>

#include <type_traits>
#include <utility>

#include "dsl/detail/ast_internal.hpp"
#include "dsl/detail/grammar.hpp"

// The grammar has no recursive rule (sets hold scalars, blocks hold
// assignments and never blocks), so no input can nest it deeply.
namespace dtplan::dsl::detail::grammar {

namespace x3 = boost::spirit::x3;

/// `with<>` key of the start of the buffer, so spans are offsets into it.
struct buffer_start_tag;
/// `with<>` key of the file's set_budget (a std::reference_wrapper to it).
struct set_budget_tag;

/// Thrown at the first value of a set past the file's set_budget, with its
/// offset in the buffer.
struct set_budget_spent {
  std::uint32_t where;
};

/// Stamps every node deriving from `x3ast::tagged` with its byte range; X3
/// calls it after skipping leading blanks, so the range is the exact token.
struct annotate {
  template <typename Iterator, typename Attribute, typename Context>
  void on_success(Iterator const& first, Iterator const& last, Attribute& node,
                  Context const& context) const {
    if constexpr (std::is_base_of_v<x3ast::tagged, Attribute>) {
      auto const& start = x3::get<buffer_start_tag>(context);
      node.begin = static_cast<std::uint32_t>(first - start);
      node.end = static_cast<std::uint32_t>(last - start);
    }
  }
};

/// Blanks and comments; a newline is significant (it ends an assignment).
auto const blank = x3::lit(' ') | '\t' | '\r' | x3::lexeme['#' >> *~x3::char_('\n')];
/// Inside the braces of a set, newlines are blanks too.
auto const blank_or_newline = blank | '\n';

auto const word_char = x3::char_("A-Za-z0-9_");
auto keyword(char const* word) { return x3::lexeme[x3::lit(word) >> !word_char]; }

auto const digits = x3::char_("0-9") >> *(-x3::lit('_') >> x3::char_("0-9"));

template <typename Class, typename Member>
auto assign_to(Member Class::*member) {
  return [member](auto& ctx) { x3::_val(ctx).*member = x3::_attr(ctx); };
}

auto const set_text = [](auto& ctx) {
  auto const& r = x3::_attr(ctx);
  x3::_val(ctx).text.assign(r.begin(), r.end());
};

struct number_class : annotate {};
struct unit_class : annotate {};
struct quantity_class : annotate {};
struct amount_class : annotate {};
struct identifier_class : annotate {};
struct string_class : annotate {};
struct escape_class {};
struct string_close_class {};
struct string_body_class {};
struct boolean_class : annotate {};
struct auto_class : annotate {};
struct scalar_class : annotate {};
struct set_class : annotate {};
struct set_close_class {};
struct range_class : annotate {};
struct range_high_class : annotate {};
struct value_class : annotate {};
struct value_after_eq_class : annotate {};
struct key_class : annotate {};
struct equals_class {};
struct assignment_class : annotate {};
struct block_kind_class : annotate {};
struct block_name_class : annotate {};
struct base_name_class : annotate {};
struct open_brace_class {};
struct header_class : annotate {};
struct header_probe_class {};
struct target_class : annotate {};
struct dot_class {};
struct setting_key_class : annotate {};
struct setting_class : annotate {};

x3::rule<struct number_body_class, x3ast::number> const number_body = "number";
x3::rule<struct unit_body_class, x3ast::unit> const unit_body = "unit";
x3::rule<struct quantity_body_class, x3ast::quantity> const quantity_body = "quantity";
x3::rule<struct amount_after_x_body_class, x3ast::quantity> const amount_after_x_body = "amount_after_x";
x3::rule<struct identifier_body_class, x3ast::identifier> const identifier_body = "identifier";
x3::rule<struct string_literal_body_class, x3ast::string_literal> const string_literal_body = "string_literal";
x3::rule<struct boolean_body_class, x3ast::boolean> const boolean_body = "boolean";
x3::rule<struct auto_value_body_class, x3ast::auto_value> const auto_value_body = "auto_value";
x3::rule<struct set_body_class, x3ast::set> const set_body = "set";

x3::rule<number_class, x3ast::number> const number = "a number";
x3::rule<unit_class, x3ast::unit> const unit = "a unit such as 'GiB'";
x3::rule<quantity_class, x3ast::quantity> const quantity = "a quantity such as '80 GiB'";
x3::rule<amount_class, x3ast::quantity> const amount_after_x =
    "a quantity such as '400 Gbit/s' after 'x'";
x3::rule<identifier_class, x3ast::identifier> const identifier = "an identifier";
x3::rule<string_class, x3ast::string_literal> const string_literal = "a string";
x3::rule<escape_class, char> const escape = "'\"' or '\\' after '\\'";
x3::rule<string_body_class, std::string> const string_body = "the text of a string";
x3::rule<string_close_class> const string_close = "'\"' to close the string";
x3::rule<boolean_class, x3ast::boolean> const boolean = "'true' or 'false'";
x3::rule<auto_class, x3ast::auto_value> const auto_value = "'auto'";
x3::rule<scalar_class, x3ast::scalar> const scalar = "a number, quantity, name, string or boolean";
x3::rule<set_class, x3ast::set> const set = "a set such as '{1, 2, 4}'";
x3::rule<set_close_class> const set_close = "',' or '}' in the set";
x3::rule<range_class, x3ast::range> const range = "a range such as '1..8'";
x3::rule<range_high_class, x3ast::number> const range_high = "a number after '..'";
x3::rule<value_class, x3ast::value> const value = "a value";
x3::rule<value_after_eq_class, x3ast::value> const value_after_eq = "a value after '='";
x3::rule<key_class, x3ast::identifier> const key = "a key such as 'layers', or '}'";
x3::rule<equals_class> const equals = "'=' after the key";
x3::rule<assignment_class, x3ast::assignment> const assignment = "a key such as 'layers', or '}'";
x3::rule<block_kind_class, x3ast::identifier> const block_kind =
    "a block such as 'model NAME { ... }'";
x3::rule<block_name_class, x3ast::identifier> const block_name = "a block name";
x3::rule<base_name_class, x3ast::identifier> const base_name = "a base name after ':'";
x3::rule<open_brace_class> const open_brace = "'{' to open the block";
x3::rule<header_class, x3ast::header> const header = "a block such as 'model NAME { ... }'";
x3::rule<header_probe_class> const header_probe = "a block header";
x3::rule<target_class, x3ast::identifier> const target = "a block kind or name such as 'cluster'";
x3::rule<dot_class> const dot = "'.' after the block kind or name";
x3::rule<setting_key_class, x3ast::identifier> const setting_key = "a key after '.'";
x3::rule<setting_class, x3ast::setting> const setting = "a setting such as 'cluster.nodes=4'";

// Numbers are read as text: a fraction needs a digit after the point, so
// `1..8` is the range 1 to 8, never the real `1.` followed by `.8`.
auto const number_body_def = x3::lexeme[x3::raw[-x3::lit('-') >> digits >> -('.' >> digits) >>
                                           -(x3::char_("eE") >> -x3::char_("+-") >> digits)]]
    [([](auto& ctx) {
      auto const& r = x3::_attr(ctx);
      auto& n = x3::_val(ctx);
      n.text.assign(r.begin(), r.end());
      n.is_integer = n.text.find_first_of(".eE") == std::string::npos;
    })];

// Any unit-shaped word is accepted; whether it is a known unit is lowering's call.
auto const unit_body_def =
    x3::lexeme[x3::raw[!keyword("x") >> ((+x3::char_("A-Za-z") >> -('/' >> +x3::char_("A-Za-z"))) |
                                         '%')] >>
               !word_char][set_text];

auto const amount_after_x_body_def = (number >> unit)[([](auto& ctx) {
  auto& q = x3::_val(ctx);
  q.amount = boost::fusion::at_c<0>(x3::_attr(ctx));
  q.unit_word = boost::fusion::at_c<1>(x3::_attr(ctx));
})];

auto const quantity_body_def = ((number >> keyword("x")) > amount_after_x)[([](auto& ctx) {
                            auto& q = x3::_val(ctx);
                            q = boost::fusion::at_c<1>(x3::_attr(ctx));
                            q.multiplier = boost::fusion::at_c<0>(x3::_attr(ctx));
                          })] |
                          (number >> unit)[([](auto& ctx) {
                            auto& q = x3::_val(ctx);
                            q.amount = boost::fusion::at_c<0>(x3::_attr(ctx));
                            q.unit_word = boost::fusion::at_c<1>(x3::_attr(ctx));
                          })];

auto const identifier_body_def =
    x3::lexeme[x3::raw[x3::char_("A-Za-z_") >> *word_char]][([](auto& ctx) {
      auto const& r = x3::_attr(ctx);
      x3::_val(ctx).name.assign(r.begin(), r.end());
    })];

auto const escape_def = x3::char_("\"\\");
auto const string_close_def = x3::lit('"');
auto const string_body_def = *(('\\' > escape) | ~x3::char_("\"\\\n"));
auto const string_literal_body_def = x3::lexeme['"' > string_body > string_close]
              [assign_to(&x3ast::string_literal::value)];

auto const boolean_body_def = keyword("true")[([](auto& ctx) { x3::_val(ctx).value = true; })] |
                         keyword("false")[([](auto& ctx) { x3::_val(ctx).value = false; })];

auto const auto_value_body_def = keyword("auto")[([](auto&) {})];

auto const scalar_def = quantity | number | string_literal | boolean | identifier;

// Each value of a set spends one of the file's budget before the next is
// read, so no set grows the tree past it.
auto const spend_budget = [](auto& ctx) {
  auto& budget = x3::get<set_budget_tag>(ctx).get();
  if (budget.left == 0)
    throw set_budget_spent{boost::apply_visitor([](auto const& v) { return v.begin; }, x3::_attr(ctx))};
  --budget.left;
};

auto const set_close_def = x3::lit('}');
auto const set_body_def =
    x3::skip(blank_or_newline)['{' > -(scalar[spend_budget] % ',') > -x3::lit(',') > set_close]
        [([](auto& ctx) {
          if (auto& items = x3::_attr(ctx)) x3::_val(ctx).items = std::move(*items);
        })];

auto const range_high_def = number;
auto const range_def = (number >> "..") > range_high;

auto const value_def =
    auto_value | boolean | set | range | quantity | number | string_literal | identifier;
auto const value_after_eq_def = value;

auto const key_def = identifier;
auto const equals_def = x3::lit('=');
auto const assignment_def = key > equals > value_after_eq;

auto const block_kind_def = identifier;
auto const block_name_def = identifier;
auto const base_name_def = identifier;
auto const open_brace_def = x3::lit('{');
auto const header_def = block_kind > -block_name > -(':' > base_name) > open_brace;
auto const header_probe_def = identifier >> -identifier >> -(':' >> identifier) >> '{';

auto const target_def = identifier;
auto const dot_def = x3::lit('.');
auto const setting_key_def = identifier;
auto const setting_def = target > dot > setting_key > equals > value_after_eq;

// A rule whose definition has a semantic action gets no attribute in its
// on_success handler, so each such rule is wrapped by an annotated one.
auto const number_def = number_body;
auto const unit_def = unit_body;
auto const quantity_def = quantity_body;
auto const amount_after_x_def = amount_after_x_body;
auto const identifier_def = identifier_body;
auto const string_literal_def = string_literal_body;
auto const boolean_def = boolean_body;
auto const auto_value_def = auto_value_body;
auto const set_def = set_body;

BOOST_SPIRIT_DEFINE(number_body, unit_body, quantity_body, amount_after_x_body, identifier_body, string_literal_body, boolean_body, auto_value_body, set_body,
                    number, unit, quantity, amount_after_x, identifier, escape, string_body, string_close,
                    string_literal, boolean, auto_value, scalar, set_close, set, range_high, range,
                    value, value_after_eq, key, equals, assignment, block_kind, block_name,
                    base_name, open_brace, header, header_probe, target, dot, setting_key, setting)

}  // namespace dtplan::dsl::detail::grammar
