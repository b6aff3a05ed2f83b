#include "codegen/templates/template_text.hpp"

#include <stdexcept>

namespace dtplan::codegen {

namespace {

bool placeholder_char(char c, bool first) {
  return (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

}  // namespace

std::string fill(std::string_view tpl, std::vector<template_value> const& values) {
  std::string out;
  out.reserve(tpl.size());
  std::vector<bool> used(values.size(), false);
  std::size_t i = 0;
  while (i < tpl.size()) {
    auto at = tpl.find('@', i);
    if (at == std::string_view::npos) {
      out.append(tpl.substr(i));
      break;
    }
    out.append(tpl.substr(i, at - i));
    auto end = at + 1;
    while (end < tpl.size() && placeholder_char(tpl[end], end == at + 1)) ++end;
    if (end == at + 1 || end >= tpl.size() || tpl[end] != '@') {
      // Not a placeholder ("$@", an e-mail address): kept as written.
      out += '@';
      i = at + 1;
      continue;
    }
    auto name = tpl.substr(at + 1, end - at - 1);
    std::size_t k = 0;
    while (k < values.size() && values[k].name != name) ++k;
    if (k == values.size()) throw std::logic_error("template placeholder @" + std::string(name) + "@ has no value");
    used[k] = true;
    out += values[k].text;
    i = end + 1;
  }
  for (std::size_t k = 0; k < values.size(); ++k)
    if (!used[k]) throw std::logic_error("template value '" + std::string(values[k].name) + "' is not used");
  return out;
}

}  // namespace dtplan::codegen
