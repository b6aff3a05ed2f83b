#include "dsl/parse.hpp"

#include <fmt/format.h>

#include <limits>
#include <string_view>

#include "dsl/detail/grammar.hpp"

namespace dtplan::dsl {

namespace {

namespace x3ast = detail::x3ast;
using detail::syntax_error;

// Past this many errors the rest is most likely fallout of the first ones.
constexpr std::size_t max_errors = 20;

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Blanks and comments, as the grammar's skipper sees them; stops at a newline.
std::uint32_t skip_blanks(std::string_view text, std::uint32_t pos) {
  while (pos < text.size()) {
    char c = text[pos];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos;
    } else if (c == '#') {
      while (pos < text.size() && text[pos] != '\n') ++pos;
    } else {
      break;
    }
  }
  return pos;
}

std::uint32_t skip_blank_lines(std::string_view text, std::uint32_t pos) {
  for (pos = skip_blanks(text, pos); pos < text.size() && text[pos] == '\n';)
    pos = skip_blanks(text, pos + 1);
  return pos;
}

// What the parser found where it expected something: the text shown after
// "got" and the span the caret underlines.
struct token {
  std::string shown;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

token token_at(std::string_view text, std::uint32_t pos) {
  pos = skip_blanks(text, pos);
  auto const size = static_cast<std::uint32_t>(text.size());
  if (pos >= size) return {"end of file", pos, pos};
  if (text[pos] == '\n') return {"end of line", pos, pos};
  std::uint32_t end = pos + 1;
  char c = text[pos];
  if (is_word_char(c)) {
    bool numeric = c >= '0' && c <= '9';
    while (end < size && (is_word_char(text[end]) || (numeric && text[end] == '.'))) ++end;
  } else if (c == '"') {
    while (end < size && text[end] != '"' && text[end] != '\n') ++end;
    if (end < size && text[end] == '"') ++end;
  } else {
    end = pos + static_cast<std::uint32_t>(character_at(text, pos).size());
  }
  auto word = text.substr(pos, end - pos);
  if (!word.empty() && word.back() == '\r') word.remove_suffix(1);
  // A runaway token (a 10 MB word) is shown by its start only.
  constexpr std::size_t shown_max = 40;
  if (word.size() > shown_max) {
    auto cut = shown_max;
    while (cut > 0 && (static_cast<unsigned char>(word[cut]) & 0xc0) == 0x80) --cut;
    return {fmt::format("'{}...'", word.substr(0, cut)), pos, end};
  }
  return {fmt::format("'{}'", word), pos, end};
}

// The offset of the first byte that is not text (NUL or invalid UTF-8) and
// what is wrong with it.
struct bad_byte {
  std::uint32_t offset = 0;
  char const* what = nullptr;
};

std::optional<bad_byte> find_bad_byte(std::string_view text) {
  auto const* s = reinterpret_cast<unsigned char const*>(text.data());
  std::size_t n = text.size();
  auto cont = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
    return i < n && s[i] >= lo && s[i] <= hi;
  };
  for (std::size_t i = 0; i < n;) {
    unsigned char c = s[i];
    std::size_t len = 0;
    if (c == 0) return bad_byte{static_cast<std::uint32_t>(i), "NUL byte"};
    if (c < 0x80) len = 1;
    else if (c >= 0xc2 && c <= 0xdf && cont(i + 1)) len = 2;
    else if (c == 0xe0 && cont(i + 1, 0xa0) && cont(i + 2)) len = 3;
    else if (((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) && cont(i + 1) && cont(i + 2)) len = 3;
    else if (c == 0xed && cont(i + 1, 0x80, 0x9f) && cont(i + 2)) len = 3;
    else if (c == 0xf0 && cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3)) len = 4;
    else if (c >= 0xf1 && c <= 0xf3 && cont(i + 1) && cont(i + 2) && cont(i + 3)) len = 4;
    else if (c == 0xf4 && cont(i + 1, 0x80, 0x8f) && cont(i + 2) && cont(i + 3)) len = 4;
    else return bad_byte{static_cast<std::uint32_t>(i), "invalid UTF-8"};
    i += len;
  }
  return std::nullopt;
}

// Rejects what is not text before the grammar sees it, so the grammar only
// deals with characters.
bool check_text(source_file const& source, std::uint32_t file, diagnostics& diags) {
  auto text = source.text();
  if (text.size() >= std::numeric_limits<std::uint32_t>::max()) {
    diags.error({file, 0, 0}, "file is too large: more than 4 GiB");
    return false;
  }
  if (auto bad = find_bad_byte(text)) {
    auto pos = source.position_of(bad->offset);
    diags.error({file, bad->offset, bad->offset + 1},
                fmt::format("file is not text: {} at line {}, column {}", bad->what, pos.line,
                            pos.column));
    return false;
  }
  // A lone CR (classic Mac OS line ends) would read as a blank, joining
  // what the author meant as separate lines.
  for (auto cr = text.find('\r'); cr != std::string_view::npos; cr = text.find('\r', cr + 1)) {
    if (cr + 1 < text.size() && text[cr + 1] == '\n') continue;
    auto const at = static_cast<std::uint32_t>(cr);
    auto pos = source.position_of(at);
    diags.error({file, at, at + 1},
                fmt::format("file has a carriage return without a line feed at line {}, column {}: end lines "
                            "with LF or CR LF",
                            pos.line, pos.column));
    return false;
  }
  return true;
}

// The value of a set past max_set_values: its token, and the limit.
void report_set_budget(std::string_view text, std::uint32_t file, syntax_error const& err, diagnostics& diags) {
  auto const t = token_at(text, err.where);
  diags.error({file, t.begin, t.end},
              fmt::format("a file's sets hold at most {} values in all; this is one more", grouped(max_set_values)));
}

class converter {
 public:
  explicit converter(std::uint32_t file) : file_(file) {}

  span where(x3ast::tagged const& t) const { return {file_, t.begin, t.end}; }

  ast::number operator()(x3ast::number const& n) const { return {where(n), n.text, n.is_integer}; }
  ast::identifier operator()(x3ast::identifier const& i) const { return {where(i), i.name}; }
  ast::string_literal operator()(x3ast::string_literal const& s) const {
    return {where(s), s.value};
  }
  ast::boolean operator()(x3ast::boolean const& b) const { return {where(b), b.value}; }
  ast::auto_value operator()(x3ast::auto_value const& a) const { return {where(a)}; }
  ast::quantity operator()(x3ast::quantity const& q) const {
    ast::quantity out{where(q), std::nullopt, (*this)(q.amount), q.unit_word.text,
                      where(q.unit_word)};
    if (q.multiplier) out.multiplier = (*this)(*q.multiplier);
    return out;
  }
  ast::range operator()(x3ast::range const& r) const {
    return {where(r), (*this)(r.low), (*this)(r.high)};
  }
  ast::set operator()(x3ast::set const& s) const {
    ast::set out{where(s), {}};
    out.items.reserve(s.items.size());
    for (auto const& item : s.items)
      out.items.push_back(boost::apply_visitor(
          [this](auto const& v) -> ast::scalar { return (*this)(v); }, item));
    return out;
  }
  ast::value value(x3ast::value const& v) const {
    return boost::apply_visitor([this](auto const& x) -> ast::value { return (*this)(x); }, v);
  }
  std::optional<ast::identifier> maybe(boost::optional<x3ast::identifier> const& i) const {
    if (!i) return std::nullopt;
    return (*this)(*i);
  }

 private:
  std::uint32_t file_;
};

// One pass over a file: blocks, their assignments, and recovery after an
// error so that one run reports every independent mistake.
class file_parser {
 public:
  file_parser(std::string_view text, std::uint32_t file, diagnostics& diags)
      : text_(text), file_(file), diags_(diags), convert_(file) {}

  std::optional<ast::file> run() {
    ast::file out;
    std::uint32_t pos = 0;
    if (text_.substr(0, 3) == "\xef\xbb\xbf") pos = 3;
    if (skip_blank_lines(text_, pos) == text_.size()) {
      diags_.error({file_, 0, 0},
                   "file is empty: expected a 'model', 'cluster', 'training' or 'strategy' block");
      return std::nullopt;
    }
    while (!stopped_) {
      pos = skip_blank_lines(text_, pos);
      if (pos >= text_.size()) break;
      auto const start = pos;
      x3ast::header h;
      syntax_error err;
      if (!detail::parse_header(text_, pos, h, err)) {
        report(err);
        pos = recover_header(start);
        if (pos > 0 && text_[pos - 1] == '{') {
          ast::block discarded;
          parse_body(pos, discarded);
        }
        continue;
      }
      ast::block b{{file_, h.begin, h.end}, {file_, h.begin, h.end}, convert_(h.kind),
                   convert_.maybe(h.name), convert_.maybe(h.base), {}};
      if (parse_body(pos, b)) out.blocks.push_back(std::move(b));
    }
    if (errors_ > 0) return std::nullopt;
    return out;
  }

 private:
  diagnostic* report(syntax_error const& err) { return report(err.where, err.expected); }

  void report_past_budget(syntax_error const& err) {
    report_set_budget(text_, file_, err, diags_);
    ++errors_;
    stopped_ = true;
  }

  diagnostic* report(std::uint32_t where, std::string_view expected) {
    if (stopped_) return nullptr;
    auto t = token_at(text_, where);
    auto& d = diags_.error({file_, t.begin, t.end}, fmt::format("expected {}, got {}", expected, t.shown));
    if (++errors_ == max_errors) {
      d.notes.push_back({{}, fmt::format("stopping after {} syntax errors", max_errors)});
      stopped_ = true;
    }
    return &d;
  }

  std::string block_label(ast::block const& b) const {
    return b.name ? fmt::format("'{} {}'", b.kind.name, b.name->name)
                  : fmt::format("'{}'", b.kind.name);
  }

  // Parses assignments up to the closing brace; returns whether the block
  // was complete and free of errors.
  bool parse_body(std::uint32_t& pos, ast::block& b) {
    auto const errors_before = errors_;
    while (!stopped_) {
      pos = skip_blank_lines(text_, pos);
      while (pos < text_.size() && (text_[pos] == ';' || text_[pos] == ','))
        pos = skip_blank_lines(text_, pos + 1);
      if (pos >= text_.size() || (text_[pos] != '}' && detail::looks_like_header(text_, pos))) {
        auto* d = report(pos, "'}' to close the block");
        if (d && b.header.valid())
          d->notes.insert(d->notes.begin(),
                          {b.header, fmt::format("the block {} opens here", block_label(b))});
        return false;
      }
      if (text_[pos] == '}') {
        ++pos;
        b.where.end = pos;
        return errors_ == errors_before;
      }
      auto const start = pos;
      x3ast::assignment a;
      syntax_error err;
      if (!detail::parse_assignment(text_, pos, a, err, budget_)) {
        if (err.past_set_budget) {
          // Nothing after it is read: the rest of the file could only add
          // values past the budget.
          report_past_budget(err);
          return false;
        }
        report(err);
        pos = recover_assignment(start, err.where);
        continue;
      }
      auto const after = skip_blanks(text_, pos);
      if (after < text_.size() && text_[after] != '\n' && text_[after] != ';' &&
          text_[after] != ',' && text_[after] != '}') {
        report(after, "a new line, ';' or '}' after the value");
        pos = recover_assignment(start, after);
        continue;
      }
      b.body.push_back({{file_, a.begin, a.end}, convert_(a.key), convert_.value(a.rhs)});
    }
    return false;
  }


  // After a bad header: if its line opens a block, continue inside it so the
  // assignments are still checked; otherwise resume on the next line.
  std::uint32_t recover_header(std::uint32_t pos) const {
    while (pos < text_.size() && text_[pos] != '\n' && text_[pos] != '#') {
      if (text_[pos] == '"') pos = skip_string(pos);
      else if (text_[pos++] == '{') return pos;
    }
    while (pos < text_.size() && text_[pos] != '\n') ++pos;
    // A brace on the next line belongs to this header too.
    if (auto next = skip_blank_lines(text_, pos); next < text_.size() && text_[next] == '{')
      return next + 1;
    return pos;
  }

  // After a bad assignment: resume after the next separator at or past the
  // error, without mistaking the brace of a set for the end of the block.
  std::uint32_t recover_assignment(std::uint32_t start, std::uint32_t error_at) const {
    std::size_t depth = 0;
    std::uint32_t pos = start;
    while (pos < text_.size()) {
      char c = text_[pos];
      if (c == '"') {
        pos = skip_string(pos);
        continue;
      }
      if (c == '#') {
        while (pos < text_.size() && text_[pos] != '\n') ++pos;
        continue;
      }
      if (c == '{') ++depth;
      if (c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (pos >= error_at && (c == '\n' || (depth == 0 && (c == ';' || c == ',')))) return pos + 1;
      ++pos;
    }
    return pos == start && pos < text_.size() && text_[pos] != '}' ? pos + 1 : pos;
  }

  std::uint32_t skip_string(std::uint32_t pos) const {
    ++pos;
    while (pos < text_.size() && text_[pos] != '"' && text_[pos] != '\n')
      pos += text_[pos] == '\\' && pos + 1 < text_.size() && text_[pos + 1] != '\n' ? 2 : 1;
    return pos < text_.size() && text_[pos] == '"' ? pos + 1 : pos;
  }

  std::string_view text_;
  std::uint32_t file_;
  diagnostics& diags_;
  converter convert_;
  std::size_t errors_ = 0;
  detail::set_budget budget_{max_set_values};
  bool stopped_ = false;
};

void report_single(std::string_view text, std::uint32_t file, syntax_error const& err,
                   diagnostics& diags) {
  if (err.past_set_budget) return report_set_budget(text, file, err, diags);
  auto t = token_at(text, err.where);
  diags.error({file, t.begin, t.end}, fmt::format("expected {}, got {}", err.expected, t.shown));
}

// A value or setting must be all of its text (a trailing newline is fine).
bool check_end(std::string_view text, std::uint32_t file, std::uint32_t pos, char const* what,
               diagnostics& diags) {
  pos = skip_blank_lines(text, pos);
  if (pos >= text.size()) return true;
  report_single(text, file, {pos, fmt::format("the end of the {}", what)}, diags);
  return false;
}

}  // namespace

bool check_text(source_manager const& sources, std::uint32_t file, diagnostics& diags) {
  return check_text(sources.file(file), file, diags);
}

std::optional<ast::file> parse(source_manager const& sources, std::uint32_t file,
                               diagnostics& diags) {
  auto const& source = sources.file(file);
  if (!check_text(source, file, diags)) return std::nullopt;
  return file_parser(source.text(), file, diags).run();
}

std::optional<ast::value> parse_value(source_manager const& sources, std::uint32_t file,
                                      diagnostics& diags) {
  auto const& source = sources.file(file);
  if (!check_text(source, file, diags)) return std::nullopt;
  auto text = source.text();
  std::uint32_t pos = 0;
  x3ast::value v;
  syntax_error err;
  detail::set_budget budget{max_set_values};
  if (!detail::parse_value(text, pos, v, err, budget)) {
    report_single(text, file, err, diags);
    return std::nullopt;
  }
  if (!check_end(text, file, pos, "value", diags)) return std::nullopt;
  return converter(file).value(v);
}

std::optional<ast::setting> parse_setting(source_manager const& sources, std::uint32_t file,
                                          diagnostics& diags) {
  auto const& source = sources.file(file);
  if (!check_text(source, file, diags)) return std::nullopt;
  auto text = source.text();
  std::uint32_t pos = 0;
  x3ast::setting s;
  syntax_error err;
  detail::set_budget budget{max_set_values};
  if (!detail::parse_setting(text, pos, s, err, budget)) {
    report_single(text, file, err, diags);
    return std::nullopt;
  }
  if (!check_end(text, file, pos, "setting", diags)) return std::nullopt;
  converter convert(file);
  return ast::setting{convert.where(s), convert(s.target), convert(s.key), convert.value(s.rhs)};
}

}  // namespace dtplan::dsl
