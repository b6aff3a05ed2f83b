#include "dsl/ast.hpp"

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"

namespace dtplan::dsl::ast {

span where_of(value const& v) {
  return std::visit([](auto const& x) { return x.where; }, v);
}

span where_of(scalar const& v) {
  return std::visit([](auto const& x) { return x.where; }, v);
}

namespace {

std::string describe(number const& n) {
  return fmt::format("{} {}", n.is_integer ? "integer" : "real", n.text);
}

struct describer {
  std::string operator()(number const& n) const { return describe(n); }
  std::string operator()(quantity const& q) const {
    return q.multiplier ? fmt::format("quantity {} x {} '{}'", q.multiplier->text, q.amount.text, q.unit)
                        : fmt::format("quantity {} '{}'", q.amount.text, q.unit);
  }
  std::string operator()(identifier const& i) const { return fmt::format("identifier '{}'", i.name); }
  std::string operator()(string_literal const& s) const { return "string " + dsl::quoted(s.value); }
  std::string operator()(boolean const& b) const { return b.value ? "boolean true" : "boolean false"; }
  std::string operator()(auto_value const&) const { return "auto"; }
  std::string operator()(set const& s) const { return fmt::format("set of {}", s.items.size()); }
  std::string operator()(range const& r) const {
    return fmt::format("range {}..{}", r.low.text, r.high.text);
  }
};

}  // namespace

std::string dump(file const& f, source_manager const& sources) {
  auto at = [&](span s) {
    if (!s.valid() || s.file >= sources.size()) return std::string("?:?");
    auto p = sources.file(s.file).position_of(s.begin);
    return fmt::format("{}:{}", p.line, p.column);
  };
  std::string out;
  for (auto const& b : f.blocks) {
    out += fmt::format("{} block '{}'", at(b.where), b.kind.name);
    if (b.name) out += fmt::format(" name '{}'", b.name->name);
    if (b.base) out += fmt::format(" base '{}'", b.base->name);
    out += '\n';
    for (auto const& a : b.body) {
      out += fmt::format("  {} assignment '{}' = {}\n", at(a.where), a.key.name,
                         std::visit(describer{}, a.rhs));
      if (auto const* s = std::get_if<set>(&a.rhs))
        for (auto const& item : s->items)
          out += fmt::format("    {} {}\n", at(where_of(item)), std::visit(describer{}, item));
    }
  }
  return out;
}

}  // namespace dtplan::dsl::ast
