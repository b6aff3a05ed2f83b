#include "codegen/escape.hpp"

#include <fmt/format.h>

namespace dtplan::codegen {

namespace {

bool plain(unsigned char c) { return c >= 0x20 && c <= 0x7e && c != '\\'; }

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto const c = static_cast<unsigned char>(ch);
    if (plain(c)) out += ch;
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

std::string comment_text(std::string_view s) {
  std::string out;
  for (char ch : printable(s)) {
    // "??/" is a backslash to a compiler that still reads trigraphs.
    if (ch == '?' && !out.empty() && out.back() == '?') out += "\\x3f";
    else out += ch;
  }
  return out;
}

std::string c_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto const c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\' || ch == '?') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20 && c <= 0x7e) {
      out += ch;
    } else {
      // Octal escapes take at most three digits, so a following digit cannot
      // extend one (a hex escape would take it).
      out += fmt::format("\\{:03o}", c);
    }
  }
  return out + "\"";
}

}  // namespace dtplan::codegen
