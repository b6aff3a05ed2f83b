#pragma once
#include <boost/fusion/include/adapt_struct.hpp>
#include <boost/optional.hpp>
#include <boost/spirit/home/x3/support/ast/variant.hpp>

#include <cstdint>
#include <string>
#include <vector>

/// The syntax tree as the X3 grammar builds it: boost::optional and
/// x3::variant, offsets relative to the parsed buffer. `dsl/parse.cpp` turns
/// it into the public `dsl::ast` types; nothing outside `dsl/` sees it.
namespace dtplan::dsl::detail::x3ast {

/// Byte offsets [begin, end) of a node in the parsed buffer, filled in by the
/// grammar's on_success handler.
struct tagged {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

struct number : tagged {
  std::string text;
  bool is_integer = true;
};

struct unit : tagged {
  std::string text;
};

struct quantity : tagged {
  boost::optional<number> multiplier;
  number amount;
  unit unit_word;
};

struct identifier : tagged {
  std::string name;
};

struct string_literal : tagged {
  std::string value;
};

struct boolean : tagged {
  bool value = false;
};

struct auto_value : tagged {};

struct scalar : boost::spirit::x3::variant<number, quantity, identifier, string_literal, boolean> {
  using base_type::base_type;
  using base_type::operator=;
};

struct set : tagged {
  std::vector<scalar> items;
};

struct range : tagged {
  number low;
  number high;
};

struct value : boost::spirit::x3::variant<number, quantity, identifier, string_literal, boolean,
                                          auto_value, set, range> {
  using base_type::base_type;
  using base_type::operator=;
};

struct assignment : tagged {
  identifier key;
  value rhs;
};

/// `KIND [NAME] [: BASE] {`
struct header : tagged {
  identifier kind;
  boost::optional<identifier> name;
  boost::optional<identifier> base;
};

struct setting : tagged {
  identifier target;
  identifier key;
  value rhs;
};

}  // namespace dtplan::dsl::detail::x3ast

BOOST_FUSION_ADAPT_STRUCT(dtplan::dsl::detail::x3ast::range, low, high)
BOOST_FUSION_ADAPT_STRUCT(dtplan::dsl::detail::x3ast::assignment, key, rhs)
BOOST_FUSION_ADAPT_STRUCT(dtplan::dsl::detail::x3ast::header, kind, name, base)
BOOST_FUSION_ADAPT_STRUCT(dtplan::dsl::detail::x3ast::setting, target, key, rhs)
