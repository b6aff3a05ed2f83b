#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/source.hpp"

namespace dtplan::dsl {

enum class severity { error, warning, note };

/// A secondary message; with a valid span it is printed with its own
/// location and source line, without one as a bare `note: ...` line.
struct note {
  span where;
  std::string message;
};

/// One finding about the input. Diagnostics are values: stages append them
/// and the driver prints the whole list once.
struct diagnostic {
  severity level = severity::error;
  span where;
  std::string message;
  std::vector<note> notes;
};

/// The diagnostics of one run, in the order they were reported.
class diagnostics {
 public:
  diagnostic& error(span where, std::string message);
  diagnostic& warning(span where, std::string message);
  void add(diagnostic d);

  /// Keeps at most `n` errors: later ones are counted (`dropped`) and the
  /// diagnostic `error` returns for them is a scratch one that is thrown
  /// away, so a file of a million mistakes costs no more than `n` of them.
  void limit_errors(std::size_t n) { limit_ = n; }
  /// Errors reported past the limit and not kept.
  [[nodiscard]] std::size_t dropped() const { return dropped_; }
  /// Whether another error would be dropped: the work of composing one
  /// (a did-you-mean search) can be skipped.
  [[nodiscard]] bool full() const { return errors_ >= limit_; }

  [[nodiscard]] bool has_errors() const { return errors_ > 0; }
  [[nodiscard]] std::size_t error_count() const { return errors_; }
  [[nodiscard]] std::vector<diagnostic> const& list() const { return list_; }
  [[nodiscard]] bool empty() const { return list_.empty(); }
  void clear();

 private:
  std::vector<diagnostic> list_;
  std::size_t errors_ = 0;
  std::size_t limit_ = static_cast<std::size_t>(-1);
  std::size_t dropped_ = 0;
  diagnostic scratch_;
};

/// Renders one diagnostic clang-style:
/// `FILE:LINE:COL: error: message`, the source line prefixed by its number,
/// a caret under the span (`^~~~`), then the notes. Ends with a newline.
std::string format(diagnostic const& d, source_manager const& sources);

/// Renders every diagnostic in order.
std::string format(diagnostics const& ds, source_manager const& sources);

/// The `file:line:col` of a span, or "<unknown>" for an invalid one.
std::string location(span where, source_manager const& sources);

/// `text` safe to print on a terminal: control characters (C0, DEL, C1)
/// and bidirectional overrides become `\x1b`, `\u{9b}`, `\u{202e}`;
/// everything else, UTF-8 included, is kept. Diagnostics, `--dump ast` and
/// `--dump ir` pass every string from the input through it.
std::string escaped(std::string_view text);
/// The character of `text` that starts at byte `i` (< text.size()): its
/// whole UTF-8 sequence, or the one byte where none valid starts there.
std::string_view character_at(std::string_view text, std::size_t i);
/// A count with thousands separators ("12,288"), the same in every locale.
std::string grouped(std::int64_t n);
/// A string from the input as the language writes it: between double
/// quotes, `"` and `\` escaped with a backslash, the rest as `escaped`.
std::string quoted(std::string_view text);

/// The closest of `candidates` to `word` by edit distance, if close enough
/// to be a plausible typo (for "did you mean 'x'?").
std::string closest(std::string_view word, std::vector<std::string> const& candidates);

}  // namespace dtplan::dsl
