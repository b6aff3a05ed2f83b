#include "dsl/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace dtplan::dsl {

diagnostic& diagnostics::error(span where, std::string message) {
  if (full()) {
    ++dropped_;
    scratch_ = {severity::error, where, std::move(message), {}};
    return scratch_;
  }
  ++errors_;
  list_.push_back({severity::error, where, std::move(message), {}});
  return list_.back();
}

diagnostic& diagnostics::warning(span where, std::string message) {
  list_.push_back({severity::warning, where, std::move(message), {}});
  return list_.back();
}

void diagnostics::add(diagnostic d) {
  if (d.level == severity::error) {
    if (full()) {
      ++dropped_;
      return;
    }
    ++errors_;
  }
  list_.push_back(std::move(d));
}

void diagnostics::clear() {
  list_.clear();
  errors_ = 0;
  dropped_ = 0;
}

namespace {

char const* label(severity s) {
  switch (s) {
    case severity::error: return "error";
    case severity::warning: return "warning";
    case severity::note: return "note";
  }
  return "error";
}

// One UTF-8 character of `text` at byte `i`: its code point and length. A
// byte that starts no valid sequence is one character of its own (the parser
// rejects such files, but diagnostics about them still print).
struct character {
  char32_t code = 0;
  std::size_t size = 1;
  bool valid = true;
};

character decode(std::string_view text, std::size_t i) {
  auto const lead = static_cast<unsigned char>(text[i]);
  std::size_t size = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (size == 1) return {lead, 1, lead < 0x80};
  if (i + size > text.size()) return {lead, 1, false};
  char32_t code = lead & (0x7f >> size);
  for (std::size_t k = 1; k < size; ++k) {
    auto const c = static_cast<unsigned char>(text[i + k]);
    if ((c & 0xc0) != 0x80) return {lead, 1, false};
    code = (code << 6) | (c & 0x3f);
  }
  return {code, size, true};
}

// Characters a terminal acts on instead of showing: C0 and C1 controls,
// DEL, and the bidirectional overrides that reorder what follows them.
bool is_control(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

// Terminal columns a printable character takes: 0 for combining marks and
// zero-width characters, 2 for East Asian wide ones and emoji, else 1.
std::size_t width_of(char32_t c) {
  if (is_control(c)) return 1;  // shown as '?'
  if ((c >= 0x0300 && c <= 0x036f) || (c >= 0x1ab0 && c <= 0x1aff) || (c >= 0x1dc0 && c <= 0x1dff) ||
      (c >= 0x20d0 && c <= 0x20ff) || (c >= 0xfe20 && c <= 0xfe2f) || (c >= 0x200b && c <= 0x200f) ||
      (c >= 0x2060 && c <= 0x2064) || c == 0xfeff)
    return 0;
  if ((c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0x303e) || (c >= 0x3041 && c <= 0x33ff) ||
      (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x4e00 && c <= 0x9fff) || (c >= 0xa000 && c <= 0xa4cf) ||
      (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) || (c >= 0xfe30 && c <= 0xfe4f) ||
      (c >= 0xff00 && c <= 0xff60) || (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1f64f) ||
      (c >= 0x1f900 && c <= 0x1f9ff) || (c >= 0x20000 && c <= 0x3fffd))
    return 2;
  return 1;
}

// A quoted source line with what would garble the terminal shown as '?',
// one '?' a character, so the caret lines up.
std::string printable(std::string_view line) {
  std::string out;
  for (std::size_t i = 0; i < line.size();) {
    auto ch = decode(line, i);
    // An invalid byte is left to the terminal to show as such, except one a
    // Latin-1 terminal would take for a C1 control.
    if (ch.valid ? is_control(ch.code) && ch.code != '\t' : ch.code >= 0x80 && ch.code <= 0x9f)
      out += '?';
    else
      out.append(line.substr(i, ch.size));
    i += ch.size;
  }
  return out;
}

// The terminal columns `text` takes, tabs kept as tabs in `pad`.
std::size_t columns(std::string_view text, std::string* pad = nullptr) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size();) {
    auto ch = decode(text, i);
    auto w = ch.valid ? width_of(ch.code) : 1;
    if (pad) *pad += ch.code == '\t' ? std::string(1, '\t') : std::string(w, ' ');
    n += w;
    i += ch.size;
  }
  return n;
}

// The byte at or after `i` that starts a character.
std::size_t boundary(std::string_view text, std::size_t i) {
  while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80) ++i;
  return i;
}

// Lines longer than this many bytes are shown as a window around the caret,
// so a diagnostic in a 10 MB one-line file stays readable and cheap to print.
constexpr std::size_t max_shown = 160;

void append_snippet(std::string& out, span where, source_manager const& sources) {
  if (!where.valid() || where.file >= sources.size()) return;
  auto const& file = sources.file(where.file);
  auto pos = file.position_of(where.begin);
  auto line = file.line_text(pos.line);
  // The caret's byte offset in `line`.
  std::size_t col = std::min<std::size_t>(where.begin - std::min(where.begin, file.line_begin(pos.line)), line.size());
  std::string prefix, suffix;
  if (line.size() > max_shown) {
    std::size_t first = boundary(line, col > max_shown / 2 ? col - max_shown / 2 : 0);
    std::size_t last = std::min(line.size(), first + max_shown);
    while (last < line.size() && last > first && (static_cast<unsigned char>(line[last]) & 0xc0) == 0x80) --last;
    if (first > 0) prefix = "...";
    if (last < line.size()) suffix = "...";
    line = line.substr(first, last - first);
    col = std::min(col - std::min(col, first), line.size());
  }
  std::string number = fmt::format("{:>5}", pos.line);
  out += fmt::format("{} | {}{}{}\n", number, prefix, printable(line), suffix);
  std::string pad(prefix.size(), ' ');
  columns(line.substr(0, col), &pad);
  std::size_t width = 1;
  if (where.end > where.begin) {
    auto spanned = line.substr(col, std::min<std::size_t>(where.end - where.begin, line.size() - col));
    width = std::max<std::size_t>(1, columns(spanned));
  }
  out += fmt::format("{} | {}^{}\n", std::string(number.size(), ' '), pad, std::string(width - 1, '~'));
}

}  // namespace

std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    auto ch = decode(text, i);
    if (ch.valid && !is_control(ch.code))
      out.append(text.substr(i, ch.size));
    else if (!ch.valid || ch.code < 0x80)
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(ch.code));
    else
      out += fmt::format("\\u{{{:x}}}", static_cast<unsigned>(ch.code));
    i += ch.size;
  }
  return out;
}

std::string_view character_at(std::string_view text, std::size_t i) { return text.substr(i, decode(text, i).size); }

std::string grouped(std::int64_t n) {
  auto const digits = fmt::format("{}", n < 0 ? -static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n));
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string quoted(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return "\"" + escaped(out) + '"';
}

std::string location(span where, source_manager const& sources) {
  if (!where.valid() || where.file >= sources.size()) return "<unknown>";
  auto const& file = sources.file(where.file);
  auto pos = file.position_of(where.begin);
  // A file's name may come from the input too (the ds_config.json a job
  // names, a script a NeMo script sources): escaped like a message.
  return fmt::format("{}:{}:{}", escaped(file.name()), pos.line, pos.column);
}

std::string format(diagnostic const& d, source_manager const& sources) {
  std::string out;
  // Messages quote what the user wrote, which may hold control characters.
  if (d.where.valid())
    out += fmt::format("{}: {}: {}\n", location(d.where, sources), label(d.level), escaped(d.message));
  else
    out += fmt::format("{}: {}\n", label(d.level), escaped(d.message));
  append_snippet(out, d.where, sources);
  for (auto const& n : d.notes) {
    if (n.where.valid()) {
      out += fmt::format("{}: note: {}\n", location(n.where, sources), escaped(n.message));
      append_snippet(out, n.where, sources);
    } else {
      out += fmt::format("note: {}\n", escaped(n.message));
    }
  }
  return out;
}

std::string format(diagnostics const& ds, source_manager const& sources) {
  std::string out;
  for (auto const& d : ds.list()) out += format(d, sources);
  return out;
}

std::string closest(std::string_view word, std::vector<std::string> const& candidates) {
  auto lower = [](std::string_view s) {
    std::string r(s);
    for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  std::string w = lower(word);
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (auto const& cand : candidates) {
    std::string c = lower(cand);
    std::vector<std::size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (std::size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= w.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= c.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (w[i - 1] == c[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    std::size_t d = prev[c.size()];
    if (d < best_d) best_d = d, best = cand;
  }
  // A typo changes a few letters; more than a third of the word is another word.
  std::size_t limit = std::max<std::size_t>(1, std::max(w.size(), best.size()) / 3);
  return best_d <= limit ? best : std::string{};
}

}  // namespace dtplan::dsl
