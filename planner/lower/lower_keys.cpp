#include "planner/lower/lower_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace dtplan::planner::lowering {

namespace ast = dsl::ast;

namespace {

std::optional<key_value> checked(converter& conv, key_info const& k, ast::scalar const& v, key_value value) {
  if (auto problem = invalid(k, value, conv.echo(v))) {
    conv.diags().error(span_of(v), *problem);
    return std::nullopt;
  }
  return value;
}

std::optional<key_value> shard_value(converter& conv, key_info const& k, ast::scalar const& v) {
  if (auto const* id = std::get_if<ast::identifier>(&v)) {
    if (id->name == "all") return shard_group{shard_group::kind::all, 0};
    if (id->name == "node") return shard_group{shard_group::kind::node, 0};
    auto near = suggest(id->name, {"all", "node"});
    conv.diags().error(id->where, fmt::format("expected 'all', 'node' or a number of ranks for '{}', got '{}'{}", k.name,
                                              id->name, near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
    return std::nullopt;
  }
  if (auto const* n = std::get_if<ast::number>(&v); n && n->is_integer) {
    auto size = conv.count(v, k.name, count_phrase(k), k.min, k.max);
    if (!size) return std::nullopt;
    return shard_group{shard_group::kind::size, *size};
  }
  conv.diags().error(span_of(v), fmt::format("expected 'all', 'node' or a number of ranks for '{}', got {}", k.name,
                                             conv.echo(v)));
  return std::nullopt;
}

std::optional<key_value> order_value(converter& conv, key_info const& k, ast::scalar const& v) {
  std::optional<rank_order> order;
  if (auto const* str = std::get_if<ast::string_literal>(&v)) order = parse_order(str->value);
  if (!order) {
    conv.diags().error(span_of(v), fmt::format("expected an order of tp, cp, dp and pp such as \"tp-cp-dp-pp\" for "
                                               "'{}', got {}",
                                               k.name, conv.echo(v)));
    return std::nullopt;
  }
  return *order;
}

}  // namespace

std::optional<key_value> scalar_value(converter& conv, key_info const& k, ast::scalar const& v) {
  switch (k.dom) {
    case domain::count:
      if (auto n = conv.count(v, k.name, count_phrase(k), k.min, k.max)) return *n;
      return std::nullopt;
    case domain::quantity:
    case domain::fraction:
      if (auto x = conv.quantity(v, k.name, k.dom == domain::fraction ? dimension::fraction : k.dim))
        return checked(conv, k, v, *x);
      return std::nullopt;
    case domain::real:
      if (auto x = conv.plain_real(v, k.name)) return checked(conv, k, v, *x);
      return std::nullopt;
    case domain::choice:
      if (auto i = conv.choice(v, k.name, k.choices)) return static_cast<std::int64_t>(*i);
      return std::nullopt;
    case domain::boolean:
      if (auto b = conv.boolean(v, k.name)) return *b;
      return std::nullopt;
    case domain::text:
      if (auto s = conv.text(v, k.name)) return *s;
      return std::nullopt;
    case domain::gpu_name:
      if (auto const* id = std::get_if<ast::identifier>(&v)) return id->name;
      conv.diags().error(span_of(v), fmt::format("expected a gpu name such as 'H100_SXM' for '{}', got {}", k.name,
                                                 conv.echo(v)));
      return std::nullopt;
    case domain::framework_name:
      if (auto const* id = std::get_if<ast::identifier>(&v)) return id->name;
      conv.diags().error(span_of(v), fmt::format("expected a framework name such as 'megatron' for '{}', got {}",
                                                 k.name, conv.echo(v)));
      return std::nullopt;
    case domain::shard: return shard_value(conv, k, v);
    case domain::order: return order_value(conv, k, v);
  }
  return std::nullopt;
}

namespace {

// The items of a set, each converted; duplicates found by hashing, so a set
// of a million values costs a million lookups.
bool set_values(converter& conv, key_info const& k, ast::set const& s, key_choice<key_value>& c) {
  bool ok = true;
  if (s.items.empty()) {
    conv.diags().error(s.where, fmt::format("an empty set leaves no value for '{}'", k.name));
    ok = false;
  }
  std::unordered_set<key_value, key_value_hash> seen;
  c.values.reserve(s.items.size());
  for (auto const& item : s.items) {
    if (auto const* id = std::get_if<ast::identifier>(&item); id && id->name == "auto") {
      conv.diags().error(id->where, k.searchable ? fmt::format("'auto' already means every value: write '{} = auto' "
                                                               "without a set",
                                                               k.name)
                                                 : fmt::format("expected {} for '{}', got 'auto'",
                                                               k.dom == domain::choice ? quoted_alternatives(k.choices)
                                                                                       : takes(k),
                                                               k.name));
      ok = false;
      continue;
    }
    auto x = scalar_value(conv, k, item);
    if (!x) {
      ok = false;
      continue;
    }
    if (!seen.insert(*x).second) {
      conv.diags().error(span_of(item), fmt::format("{} appears twice in the set", conv.echo(item)));
      ok = false;
      continue;
    }
    c.values.push_back(std::move(*x));
  }
  return ok;
}

bool range_values(converter& conv, key_info const& k, ast::range const& r, key_choice<key_value>& c) {
  if (k.dom != domain::count) {
    conv.diags().error(r.where, fmt::format("a range is only allowed for whole-number keys; '{}' takes {}", k.name,
                                            takes(k)));
    return false;
  }
  auto what = fmt::format("for '{}'", k.name);
  auto low = conv.count(ast::scalar{r.low}, k.name, what, k.min, k.max);
  auto high = conv.count(ast::scalar{r.high}, k.name, what, k.min, k.max);
  if (!low || !high) return false;
  if (*low > *high) {
    conv.diags().error(r.where, fmt::format("range {}..{} is empty: its first bound is above its last", r.low.text,
                                            r.high.text));
    return false;
  }
  c.low = *low;
  c.high = *high;
  return true;
}

}  // namespace

std::optional<key_value> block_value(converter& conv, key_info const& k, ast::assignment const& a) {
  if (std::holds_alternative<ast::auto_value>(a.rhs)) return *auto_choice(k);
  if (!k.takes_set) return scalar_value(conv, k, *as_scalar(a.rhs));
  key_choice<key_value> c;
  if (auto const* s = std::get_if<ast::set>(&a.rhs)) {
    if (!set_values(conv, k, *s, c)) return std::nullopt;
  } else {
    auto x = scalar_value(conv, k, *as_scalar(a.rhs));
    if (!x) return std::nullopt;
    c.values.push_back(std::move(*x));
  }
  value_set out;
  for (auto const& v : c.values) out.push_back(std::get<std::int64_t>(v));
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<key_choice<key_value>> choice_value(converter& conv, key_info const& k, ast::assignment const& a) {
  key_choice<key_value> c;
  c.key = a.key.where;
  c.value = span_of(a.rhs);
  auto const scalar = as_scalar(a.rhs);
  if (!k.searchable && !scalar) {
    conv.diags().error(span_of(a.rhs), fmt::format("'{}' takes {}, not a set, range or 'auto'", k.name, takes(k)));
    return std::nullopt;
  }
  using form = choice_form::form;
  if (std::holds_alternative<ast::auto_value>(a.rhs)) {
    c.f = form::any;
  } else if (auto const* s = std::get_if<ast::set>(&a.rhs)) {
    c.f = form::set;
    if (!set_values(conv, k, *s, c)) return std::nullopt;
  } else if (auto const* r = std::get_if<ast::range>(&a.rhs)) {
    c.f = form::range;
    if (!range_values(conv, k, *r, c)) return std::nullopt;
  } else {
    c.f = form::single;
    auto x = scalar_value(conv, k, *scalar);
    if (!x) return std::nullopt;
    c.values.push_back(std::move(*x));
  }
  return c;
}

}  // namespace dtplan::planner::lowering
