#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"

/// What the configuration readers share: a position in one source file,
/// spans of what was read, and errors in the house's words. Internal to
/// dsl/config/.
namespace dtplan::dsl::config::detail {

class scanner {
 public:
  /// At the file's start, after a byte-order mark.
  scanner(source_manager const& sources, std::uint32_t file, diagnostics& diags)
      : text_(sources.file(file).text()), file_(file), diags_(diags) {
    if (at("\xef\xbb\xbf")) advance(3);
  }

  [[nodiscard]] bool done() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  [[nodiscard]] bool at(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  [[nodiscard]] std::uint32_t pos() const { return static_cast<std::uint32_t>(pos_); }
  void advance(std::size_t n = 1) { pos_ = std::min(pos_ + n, text_.size()); }
  void seek(std::uint32_t p) { pos_ = p; }
  [[nodiscard]] std::string_view text() const { return text_; }
  [[nodiscard]] std::string_view slice(std::uint32_t begin, std::uint32_t end) const {
    return text_.substr(begin, end - begin);
  }
  [[nodiscard]] span span_of(std::uint32_t begin, std::uint32_t end) const { return span{file_, begin, end}; }
  /// One character (a whole UTF-8 sequence) from here.
  [[nodiscard]] span here() const {
    std::uint32_t end = pos() + (done() ? 0 : 1);
    while (end < text_.size() && (static_cast<unsigned char>(text_[end]) & 0xc0) == 0x80) ++end;
    return span_of(pos(), end);
  }
  [[nodiscard]] std::uint32_t file() const { return file_; }

  /// How an error names what was found here: `'x'`, "the end of the line",
  /// "the end of the file".
  [[nodiscard]] std::string found() const {
    if (done()) return "the end of the file";
    char const c = peek();
    if (c == '\n' || c == '\r') return "the end of the line";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return fmt::format("the control character \\x{:02x}", c);
    return fmt::format("'{}'", escaped(std::string(text().substr(here().begin, here().size()))));
  }

  /// Reports an error at `where`; returns false for `return fail(...)`.
  bool fail(span where, std::string message) {
    diags_.error(where, std::move(message));
    return false;
  }
  /// "expected WHAT, got <found>" at the current character.
  bool expected(std::string_view what) { return fail(here(), fmt::format("expected {}, got {}", what, found())); }

  diagnostics& diags() { return diags_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::uint32_t file_;
  diagnostics& diags_;
};

/// Appends the UTF-8 encoding of `code` (a Unicode scalar value).
inline void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xe0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
}

/// The value of `n` hexadecimal digits at the scanner, or -1.
inline long hex_digits(scanner const& s, std::size_t n) {
  long v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    char const c = s.peek(i);
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace dtplan::dsl::config::detail
