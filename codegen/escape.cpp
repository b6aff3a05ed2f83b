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

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  auto const* b = reinterpret_cast<unsigned char const*>(s.data());
  std::size_t const n = s.size();
  for (std::size_t i = 0; i < n;) {
    unsigned char const c = b[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x20 && c <= 0x7e) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // One UTF-8 sequence, or one byte that is not part of one.
    std::uint32_t code = 0xfffd;
    std::size_t len = 1;
    auto cont = [&](std::size_t k) { return i + k < n && (b[i + k] & 0xc0) == 0x80; };
    if (c < 0x80) {
      code = c;
    } else if (c >= 0xc2 && c <= 0xdf && cont(1)) {
      code = ((c & 0x1fu) << 6) | (b[i + 1] & 0x3fu);
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef && cont(1) && cont(2)) {
      code = ((c & 0x0fu) << 12) | ((b[i + 1] & 0x3fu) << 6) | (b[i + 2] & 0x3fu);
      len = 3;
      if (code < 0x800 || (code >= 0xd800 && code <= 0xdfff)) code = 0xfffd;
    } else if (c >= 0xf0 && c <= 0xf4 && cont(1) && cont(2) && cont(3)) {
      code = ((c & 0x07u) << 18) | ((b[i + 1] & 0x3fu) << 12) | ((b[i + 2] & 0x3fu) << 6) | (b[i + 3] & 0x3fu);
      len = 4;
      if (code < 0x10000 || code > 0x10ffff) code = 0xfffd;
    }
    out += code > 0xffff ? fmt::format("\\U{:08X}", code) : fmt::format("\\u{:04X}", code);
    i += len;
  }
  return out + "\"";
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace dtplan::codegen
