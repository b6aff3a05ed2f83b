#include "dsl/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace dtplan::dsl {

diagnostic& diagnostics::error(span where, std::string message) {
  list_.push_back({severity::error, where, std::move(message), {}});
  return list_.back();
}

diagnostic& diagnostics::warning(span where, std::string message) {
  list_.push_back({severity::warning, where, std::move(message), {}});
  return list_.back();
}

bool diagnostics::has_errors() const { return error_count() > 0; }

std::size_t diagnostics::error_count() const {
  return static_cast<std::size_t>(std::count_if(
      list_.begin(), list_.end(), [](diagnostic const& d) { return d.level == severity::error; }));
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

// Control bytes in a quoted source line would garble the terminal; show
// them as '?' so the caret still lines up byte for byte.
std::string printable(std::string_view line) {
  std::string out(line);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') c = '?';
  return out;
}

// Lines longer than this are shown as a window around the caret, so a
// diagnostic in a 10 MB one-line file stays readable and cheap to print.
constexpr std::size_t max_shown = 160;

void append_snippet(std::string& out, span where, source_manager const& sources) {
  if (!where.valid() || where.file >= sources.size()) return;
  auto const& file = sources.file(where.file);
  auto pos = file.position_of(where.begin);
  auto line = file.line_text(pos.line);
  std::size_t col = pos.column - 1;  // 0-based byte offset of the caret in `line`
  std::string prefix, suffix;
  if (line.size() > max_shown) {
    std::size_t first = col > max_shown / 2 ? col - max_shown / 2 : 0;
    if (first > 0) prefix = "...";
    if (first + max_shown < line.size()) suffix = "...";
    line = line.substr(first, max_shown);
    col -= first;
  }
  std::string number = fmt::format("{:>5}", pos.line);
  out += fmt::format("{} | {}{}{}\n", number, prefix, printable(line), suffix);
  std::string pad = prefix.empty() ? "" : std::string(prefix.size(), ' ');
  for (std::size_t i = 0; i < col && i < line.size(); ++i) pad += line[i] == '\t' ? '\t' : ' ';
  std::size_t width = 1;
  if (where.end > where.begin) {
    auto avail = line.size() > col ? line.size() - col : 0;
    width = std::max<std::size_t>(1, std::min<std::size_t>(where.end - where.begin, avail));
  }
  out += fmt::format("{} | {}^{}\n", std::string(number.size(), ' '), pad, std::string(width - 1, '~'));
}

}  // namespace

std::string location(span where, source_manager const& sources) {
  if (!where.valid() || where.file >= sources.size()) return "<unknown>";
  auto const& file = sources.file(where.file);
  auto pos = file.position_of(where.begin);
  return fmt::format("{}:{}:{}", file.name(), pos.line, pos.column);
}

std::string format(diagnostic const& d, source_manager const& sources) {
  std::string out;
  if (d.where.valid())
    out += fmt::format("{}: {}: {}\n", location(d.where, sources), label(d.level), d.message);
  else
    out += fmt::format("{}: {}\n", label(d.level), d.message);
  append_snippet(out, d.where, sources);
  for (auto const& n : d.notes) {
    if (n.where.valid()) {
      out += fmt::format("{}: note: {}\n", location(n.where, sources), n.message);
      append_snippet(out, n.where, sources);
    } else {
      out += fmt::format("note: {}\n", n.message);
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
