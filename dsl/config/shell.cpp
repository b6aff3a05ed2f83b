// A shell script of variable assignments, run as bash would run the subset
// NVIDIA's MLPerf configuration scripts use: the variables it leaves set,
// each with where its value is written.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include "dsl/config/config.hpp"
#include "dsl/config/scanner.hpp"
#include "dsl/config/words.hpp"
#include "dsl/parse.hpp"

namespace dtplan::dsl::config {

namespace {

// Sourced files nest at most this deep (MLPerf's nest two).
constexpr std::size_t max_depth = 32;
// A value, an array and a command's words hold at most this much text
// (`X="$X$X"` forty times over would hold a terabyte), and an array or a
// command at most this many words: a configuration's are a few kilobytes.
constexpr std::size_t max_text = std::size_t{1} << 20;
constexpr std::size_t max_words = std::size_t{1} << 16;

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A string and where its text is written: a value copied from a variable
// keeps the span of that variable's value, so an error about it points at
// the text that gave it.
struct located {
  std::string text;
  span where;
};

// A word as written: [begin, end) of its file.
struct raw_word {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

// An array assigned in a command (`NAME=(a b)`, `NAME+=(c)`): the word
// holding `NAME=` and the elements between the parentheses.
struct array_literal {
  std::size_t word = 0;
  std::vector<raw_word> elements;
};

// One command's words; complex() when an operator (a pipe, `&&`, a
// redirection, a here-document, parentheses) makes it more than a simple
// command: its simple_words() are the words before the first operator.
struct command {
  std::vector<raw_word> words;
  /// Every operator: the words before it, its characters (`||`, `2>&1`
  /// reads as a word then `>&`, a here-document `<<`), where it ends.
  struct operator_at {
    std::size_t word = 0;
    std::string text;
    std::uint32_t end = 0;
  };
  std::vector<operator_at> ops;

  [[nodiscard]] bool complex() const { return !ops.empty(); }
  [[nodiscard]] std::size_t simple_words() const { return ops.empty() ? words.size() : ops.front().word; }
  /// The first operator's first character and where it starts (complex() only).
  [[nodiscard]] char op() const { return ops.front().text.front(); }
  [[nodiscard]] std::uint32_t op_at() const {
    return ops.front().end - static_cast<std::uint32_t>(ops.front().text.size());
  }
  std::optional<array_literal> array;
  /// Its here-documents: the delimiter, whether quoted (no expansion in the
  /// body), the body's [begin, end) in the file.
  struct heredoc {
    std::string delimiter;
    bool tabs = false;
    bool quoted = false;
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
  };
  std::vector<heredoc> heredocs;

  // The command without its first `n` words (a keyword: `then`, `else`).
  [[nodiscard]] command after(std::size_t n) const {
    command c = *this;
    c.words.erase(c.words.begin(), c.words.begin() + static_cast<std::ptrdiff_t>(n));
    if (c.array && c.array->word >= n) c.array->word -= n;
    else c.array.reset();
    for (auto& o : c.ops) o.word = o.word > n ? o.word - n : 0;
    return c;
  }
};

// Whether commands run here: yes, no (a branch not taken), or unknown (a
// branch of a test dtplan cannot decide, a loop's body).
enum class mode { run, skip, unknown };

// An open `if` (or loop): what ran around it and which branch runs now.
struct frame {
  mode outer = mode::run;
  mode now = mode::run;
  bool taken = false;  ///< a branch ran
  bool undecided = false;  ///< a test could not be decided: no branch is known to run
  std::string_view closer;  ///< "fi", "done", "esac"
  span at;
};

// One file being read.
struct script {
  std::string_view text;
  std::uint32_t file = span::no_file;
  std::string dir;  ///< the directory it was opened from, relative to the first script's, with its '/'
  std::size_t pos = 0;
  bool returned = false;
  [[nodiscard]] span span_of(std::size_t begin, std::size_t end) const {
    return {file, static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
  }
};

class shell {
 public:
  shell(source_manager const& sources, open_sourced const& open, diagnostics& diags)
      : sources_(sources), open_(open), diags_(diags) {}

  bool read(std::uint32_t file, std::string const& path) {
    enter(file, path);
    return ok_;
  }

  document doc;

 private:
  // ---- words and commands ----

  bool fail(span where, std::string message) {
    diags_.error(where, std::move(message));
    ok_ = false;
    return false;
  }

  static bool ends_word(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' || c == '&' || c == '|' || c == '<' ||
           c == '>' || c == '(' || c == ')';
  }

  // Skips a quoted or expanded part from f.pos; false (an error) when it is
  // not closed.
  bool skip_single(script& f) {
    auto const open = f.pos;
    auto const close = f.text.find('\'', open + 1);
    if (close == std::string_view::npos)
      return fail(f.span_of(open, f.text.size()),
                  "this quote (') is not closed");
    f.pos = close + 1;
    return true;
  }

  bool skip_double(script& f) {
    auto const open = f.pos;
    ++f.pos;
    while (f.pos < f.text.size() && f.text[f.pos] != '"') {
      char const c = f.text[f.pos];
      if (c == '\\') f.pos += 2;
      else if (c == '$' && !skip_dollar(f)) return false;
      else if (c == '`' && !skip_back(f)) return false;
      else if (c != '$' && c != '`') ++f.pos;
    }
    if (f.pos >= f.text.size())
      return fail(f.span_of(open, f.text.size()),
                  "this quote (\") is not closed");
    ++f.pos;
    return true;
  }

  bool skip_back(script& f) {
    auto const open = f.pos;
    auto close = f.text.find('`', open + 1);
    if (close == std::string_view::npos)
      return fail(f.span_of(open, f.text.size()),
                  "this backquote (`) is not closed");
    f.pos = close + 1;
    return true;
  }

  // `$NAME`, `${...}`, `$(...)`, `$((...))` from the '$'.
  bool skip_dollar(script& f) {
    auto const open = f.pos;
    ++f.pos;
    if (f.pos >= f.text.size() || (f.text[f.pos] != '{' && f.text[f.pos] != '(')) return true;
    char const opener = f.text[f.pos];
    char const closer = opener == '{' ? '}' : ')';
    int depth = 1;
    ++f.pos;
    while (f.pos < f.text.size()) {
      char const c = f.text[f.pos];
      if (c == '\\') f.pos += 2;
      else if (c == '\'') {
        if (!skip_single(f)) return false;
      } else if (c == '"') {
        if (!skip_double(f)) return false;
      } else if (c == '$') {
        if (!skip_dollar(f)) return false;
      } else if (c == '`') {
        if (!skip_back(f)) return false;
      } else {
        ++f.pos;
        if (c == opener) ++depth;
        if (c == closer && --depth == 0) return true;
      }
    }
    return fail(f.span_of(open, f.text.size()),
                fmt::format("this '${}' is not closed", opener));
  }

  bool skip_word(script& f) {
    while (f.pos < f.text.size() && !ends_word(f.text[f.pos])) {
      char const c = f.text[f.pos];
      bool ok = true;
      if (c == '\\') f.pos = std::min(f.pos + 2, f.text.size());
      else if (c == '\'') ok = skip_single(f);
      else if (c == '"') ok = skip_double(f);
      else if (c == '$') ok = skip_dollar(f);
      else if (c == '`') ok = skip_back(f);
      else ++f.pos;
      if (!ok) return false;
    }
    return true;
  }

  // The length of `NAME` in a word `NAME=` or `NAME+=` that an array's '('
  // follows, or 0.
  static std::size_t array_head(std::string_view word) {
    if (word.empty() || !name_start(word[0])) return 0;
    std::size_t i = 1;
    while (i < word.size() && name_char(word[i])) ++i;
    if (word.substr(i) == "=" || word.substr(i) == "+=") return i;
    return 0;
  }

  // The elements of an array from its '(' at f.pos to its ')'.
  bool read_array(script& f, command& c) {
    auto const open = f.pos++;
    array_literal a{c.words.size() - 1, {}};
    while (true) {
      if (f.pos >= f.text.size()) return fail(f.span_of(open, open + 1), "this '(' is not closed");
      char const ch = f.text[f.pos];
      if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
        ++f.pos;
      } else if (ch == '\\' && f.pos + 1 < f.text.size() && f.text[f.pos + 1] == '\n') {
        f.pos += 2;
      } else if (ch == '#') {
        while (f.pos < f.text.size() && f.text[f.pos] != '\n') ++f.pos;
      } else if (ch == ')') {
        ++f.pos;
        break;
      } else if (ends_word(ch)) {
        return fail(f.span_of(f.pos, f.pos + 1),
                    fmt::format("'{}' is not read inside an array: write its elements as words", ch));
      } else {
        raw_word w{static_cast<std::uint32_t>(f.pos), 0};
        if (!skip_word(f)) return false;
        w.end = static_cast<std::uint32_t>(f.pos);
        a.elements.push_back(w);
      }
    }
    c.array = std::move(a);
    return true;
  }

  // The bodies of the here-documents the line just ended opened: each up to
  // a line that is its delimiter (after leading tabs for `<<-`), or the end.
  void skip_heredocs(script& f, command& c) {
    for (auto& h : heredocs_) {
      h.begin = h.end = static_cast<std::uint32_t>(f.pos);
      while (f.pos < f.text.size()) {
        auto end = f.text.find('\n', f.pos);
        if (end == std::string_view::npos) end = f.text.size();
        auto line = f.text.substr(f.pos, end - f.pos);
        if (h.tabs) line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        f.pos = std::min(end + 1, f.text.size());
        if (line == h.delimiter) break;
        h.end = static_cast<std::uint32_t>(f.pos);
      }
      c.heredocs.push_back(std::move(h));
    }
    heredocs_.clear();
  }

  // The next command's words; false at the end of the file or on an error.
  bool next(script& f, command& c) {
    c = {};
    while (f.pos < f.text.size()) {
      char const ch = f.text[f.pos];
      if (ch == ' ' || ch == '\t' || ch == '\r') {
        ++f.pos;
      } else if (ch == '\\' && f.pos + 1 < f.text.size() && f.text[f.pos + 1] == '\n') {
        f.pos += 2;  // a line continuation
      } else if (ch == '#') {
        while (f.pos < f.text.size() && f.text[f.pos] != '\n') ++f.pos;
      } else if (ch == '\n' || ch == ';') {
        ++f.pos;
        if (ch == '\n') skip_heredocs(f, c);
        if (!c.words.empty()) break;
      } else if (ch == '<' && f.text.substr(f.pos, 2) == "<<" && f.text.substr(f.pos, 3) != "<<<") {
        // A here-document: its body, from the next line to its delimiter,
        // is data, not commands.
        c.ops.push_back({c.words.size(), "<<", static_cast<std::uint32_t>(f.pos + 2)});
        f.pos += 2;
        bool const tabs = f.pos < f.text.size() && f.text[f.pos] == '-';
        if (tabs) ++f.pos;
        while (f.pos < f.text.size() && (f.text[f.pos] == ' ' || f.text[f.pos] == '\t')) ++f.pos;
        auto const begin = f.pos;
        if (!skip_word(f)) return false;
        command::heredoc h;
        for (char d : f.text.substr(begin, f.pos - begin))
          if (d != '\'' && d != '"' && d != '\\') h.delimiter += d;
          else h.quoted = true;
        h.tabs = tabs;
        heredocs_.push_back(std::move(h));
      } else if (ch == '&' || ch == '|' || ch == '<' || ch == '>' || ch == '(' || ch == ')') {
        // `2>&1`: the digits before a redirection are its descriptor.
        if ((ch == '<' || ch == '>') && !c.words.empty() && c.words.back().end == f.pos) {
          if (detail::is_descriptor(word_text(f, c.words.back()))) c.words.pop_back();
        }
        if (!c.ops.empty() && c.ops.back().word == c.words.size() && c.ops.back().end == f.pos) c.ops.back().text += ch;
        else c.ops.push_back({c.words.size(), std::string(1, ch), 0});
        c.ops.back().end = static_cast<std::uint32_t>(++f.pos);
      } else {
        raw_word w{static_cast<std::uint32_t>(f.pos), 0};
        if (!skip_word(f)) return false;
        w.end = static_cast<std::uint32_t>(f.pos);
        c.words.push_back(w);
        if (!c.complex() && !c.array && f.pos < f.text.size() && f.text[f.pos] == '(' &&
            array_head(f.text.substr(w.begin, w.end - w.begin)) && !read_array(f, c))
          return false;
      }
    }
    return !c.words.empty();
  }

  // ---- expansion ----

  struct expansion {
    std::string text;
    std::vector<span> pieces;  ///< where each non-empty part's text is written
    bool ok = true;
  };

  [[nodiscard]] std::optional<std::pair<std::string, span>> value_of(std::string_view name) const {
    for (auto const& e : doc.entries)
      if (e.key == name) return std::pair{e.val->text, e.val->where};
    return std::nullopt;
  }
  [[nodiscard]] bool unevaluated(std::string_view name) const {
    return std::any_of(doc.unevaluated.begin(), doc.unevaluated.end(),
                       [&](entry const& e) { return e.key == name; });
  }

  void literal(script const& f, expansion& x, std::size_t begin, std::size_t end) {
    if (end <= begin) return;
    x.text += f.text.substr(begin, end - begin);
    x.pieces.push_back(f.span_of(begin, end));
  }

  // Expands [begin, end) of `f` into `x`; `quoted` inside double quotes.
  void expand(script const& f, std::size_t begin, std::size_t end, bool quoted, expansion& x) {
    std::size_t p = begin;
    std::size_t run = p;  // the start of the literal text being gathered
    auto flush = [&](std::size_t to) {
      literal(f, x, run, to);
    };
    while (p < end && x.ok) {
      char const c = f.text[p];
      if (c == '\'' && !quoted) {
        flush(p);
        auto close = f.text.find('\'', p + 1);
        if (close == std::string_view::npos || close >= end) {
          x.ok = false;  // a quote the words around it read otherwise
          break;
        }
        literal(f, x, p + 1, close);
        p = run = close + 1;
      } else if (c == '"' && !quoted) {
        flush(p);
        script g = f;
        g.pos = p;
        // next() has skipped this word: its quote is closed.
        if (!skip_double(g) || g.pos > end) {
          x.ok = false;
          break;
        }
        expand(f, p + 1, g.pos - 1, true, x);
        p = run = g.pos;
      } else if (c == '\\') {
        char const n = p + 1 < end ? f.text[p + 1] : '\0';
        if (quoted && n != '$' && n != '`' && n != '"' && n != '\\' && n != '\n') {
          p += 2;  // kept as written, backslash and all
          continue;
        }
        flush(p);
        if (n != '\n') literal(f, x, p + 1, std::min(p + 2, end));
        p = run = p + 2;
      } else if (c == '`') {
        x.ok = false;
      } else if (c == '$') {
        flush(p);
        p = run = dollar(f, p, end, x);
      } else {
        ++p;
      }
    }
    if (x.ok) flush(std::min(p, end));
  }

  // One expansion from the '$' at `p`; where it ends.
  std::size_t dollar(script const& f, std::size_t p, std::size_t end, expansion& x) {
    auto add = [&](std::string_view name) {
      // A command's words: a variable the script never sets comes from the
      // environment it runs in, which dtplan does not know.
      if (unevaluated(name) || (words_from_environment_ && !value_of(name))) {
        x.ok = false;
        return;
      }
      if (auto v = value_of(name); v && !v->first.empty()) {
        if (x.text.size() + v->first.size() > max_text) {
          x.ok = false;
          fail(f.span_of(p, p + 1 + name.size()), fmt::format("this expansion makes a value of more than {} "
                                                              "bytes: not a configuration dtplan reads",
                                                              max_text));
          return;
        }
        x.text += v->first;
        x.pieces.push_back(v->second);
      }
    };
    char const n = p + 1 < end ? f.text[p + 1] : '\0';
    if (name_start(n)) {
      auto q = p + 1;
      while (q < end && name_char(f.text[q])) ++q;
      add(f.text.substr(p + 1, q - p - 1));
      return q;
    }
    if (n >= '1' && n <= '9') return p + 2;  // a positional parameter: none is set
    if (n != '{') {
      if (n == '(' || n == '@' || n == '*' || n == '#' || n == '?' || n == '$' || n == '!' || n == '-' ||
          std::isdigit(static_cast<unsigned char>(n)))
        x.ok = false;
      else
        literal(f, x, p, p + 1);  // a '$' alone is itself
      return p + 1;
    }
    script g = f;
    g.pos = p;
    skip_dollar(g);
    auto const close = g.pos;  // after the '}'
    if (close > end || f.text[close - 1] != '}') {
      x.ok = false;
      return end;
    }
    auto q = p + 2;
    // ${1}, ${2:-WORD}: positional parameters, none set, read as variables
    // of those names.
    bool const positional = q < close && f.text[q] >= '1' && f.text[q] <= '9';
    if (q >= close || (!name_start(f.text[q]) && !positional)) {
      x.ok = false;
      return close;
    }
    auto const name_begin = q;
    if (positional)
      while (q < close && std::isdigit(static_cast<unsigned char>(f.text[q]))) ++q;
    else
      while (q < close && name_char(f.text[q])) ++q;
    auto const name = std::string(f.text.substr(name_begin, q - name_begin));
    if (f.text[q] == '}') {
      add(name);
      return close;
    }
    bool const colon = f.text[q] == ':';
    if (colon) ++q;
    char const op = f.text[q];
    if ((op != '-' && op != '=') || (positional && op == '=')) {
      x.ok = false;  // ${X:+...}, ${X%...}, ${X[0]}, ${1:=...} (bash refuses it), ...
      return close;
    }
    if (unevaluated(name)) {
      x.ok = false;
      return close;
    }
    auto const current = value_of(name);
    bool const use_default = !current || (colon && current->first.empty());
    if (!use_default) {
      add(name);
      return close;
    }
    expansion d;
    expand(f, q + 1, close - 1, false, d);
    if (!d.ok) {
      x.ok = false;
      return close;
    }
    auto const word_at = f.span_of(q + 1, close - 1);
    located v{d.text, d.pieces.size() == 1 ? d.pieces.front() : word_at};
    if (op == '=' && running_)
      assign(name, f.span_of(name_begin, q - (colon ? 1 : 0)),
             v);
    if (!v.text.empty()) {
      x.text += v.text;
      x.pieces.push_back(v.where);
    }
    return close;
  }

  std::optional<located> evaluate(script const& f, std::size_t begin, std::size_t end) {
    expansion x;
    expand(f, begin, end, false, x);
    if (!x.ok) return std::nullopt;
    span const word = f.span_of(begin, end);
    return located{x.text, x.pieces.size() == 1 ? x.pieces.front() : word};
  }

  // ---- variables ----

  // The variable holds nothing any more, evaluated or not.
  void forget(std::string const& name) {
    std::erase_if(doc.entries, [&](entry const& e) { return e.key == name; });
    std::erase_if(doc.unevaluated, [&](entry const& e) { return e.key == name; });
  }

  void assign(std::string const& name, span key_where, located const& v) {
    forget(name);
    value val;
    val.text = v.text;
    val.where = v.where;
    doc.entries.push_back({name, key_where, std::move(val)});
  }

  // A variable a line sets that is not run. `replaces`: the line runs, so
  // the variable no longer holds what it held.
  void not_evaluated(script const& f, std::string const& name, span key_where, raw_word w, bool replaces) {
    if (replaces) std::erase_if(doc.entries, [&](entry const& e) { return e.key == name; });
    std::erase_if(doc.unevaluated, [&](entry const& e) { return e.key == name; });
    value val;
    val.text = std::string(f.text.substr(w.begin, w.end - w.begin));
    val.where = {f.file, w.begin, w.end};
    val.unexpanded = true;
    doc.unevaluated.push_back({name, key_where, std::move(val)});
  }

  // The length of `NAME` in `NAME=...` at the word's start, or 0.
  static std::size_t assignment(std::string_view word) {
    if (word.empty() || !name_start(word[0])) return 0;
    std::size_t i = 1;
    while (i < word.size() && name_char(word[i])) ++i;
    return i < word.size() && word[i] == '=' ? i : 0;
  }

  // Every variable the command would set (`NAME=`, `${NAME:=`, `${NAME=`,
  // and the names after `unset`), recorded as not evaluated.
  void not_run(script const& f, command const& c, bool replaces) {
    if (c.array) {
      // What it may give the array is not known: its words are not read.
      auto const& w = c.words[c.array->word];
      auto const head = word_text(f, w);
      arrays_[std::string(head.substr(0, array_head(head)))].unread.push_back(f.span_of(w.begin, w.end));
      return;
    }
    bool unset = false;
    for (auto const& w : c.words) {
      auto const text = f.text.substr(w.begin, w.end - w.begin);
      if (text == "unset") unset = true;
      if (auto n = assignment(text)) {
        not_evaluated(f, std::string(text.substr(0, n)), f.span_of(w.begin, w.begin + n),
                      {static_cast<std::uint32_t>(w.begin + n + 1), w.end}, replaces);
      } else if (unset && name_start(text.empty() ? '\0' : text[0]) && text != "unset") {
        not_evaluated(f, std::string(text), {f.file, w.begin, w.end}, w, replaces);
      }
      for (auto at = text.find("${"); at != std::string_view::npos; at = text.find("${", at + 2)) {
        auto q = at + 2;
        while (q < text.size() && name_char(text[q])) ++q;
        auto const op = text.substr(q, text.substr(q, 1) == ":" ? 2 : 1);
        if (q > at + 2 && (op == ":=" || op == "="))
          not_evaluated(f, std::string(text.substr(at + 2, q - at - 2)),
                        f.span_of(w.begin + at + 2, w.begin + q),
                        w, false);
      }
    }
  }

  // ---- commands ----

  [[nodiscard]] static std::string_view word_text(script const& f, raw_word w) {
    return f.text.substr(w.begin, w.end - w.begin);
  }

  [[nodiscard]] mode current() const { return frames_.empty() ? mode::run : frames_.back().now; }

  // `[[ A OP B ]]`, `[[ -z A ]]`, `[[ -n A ]]` over words [b, e): true,
  // false, or nothing when it cannot be decided. `[ ... ]` too where no
  // operand is an unquoted expansion, which bash splits (or drops, when
  // empty) inside single brackets as it does not inside double ones.
  std::optional<bool> one_test(script const& f, command const& c, std::size_t b, std::size_t e) {
    if (e <= b || e - b < 4 || e - b > 5) return std::nullopt;
    auto const open = word_text(f, c.words[b]);
    auto const close = word_text(f, c.words[e - 1]);
    auto const one_word = [&](std::size_t i) {
      auto const t = word_text(f, c.words[i]);
      return t.find('$') == std::string_view::npos || (t.size() >= 2 && t.front() == '"' && t.back() == '"');
    };
    bool const single = open == "[" && close == "]" && one_word(e - 2) && one_word(b + 1);
    if (!(open == "[[" && close == "]]") && !single) return std::nullopt;
    if (e - b == 4) {
      auto const op = word_text(f, c.words[b + 1]);
      auto a = evaluate(f, c.words[b + 2].begin, c.words[b + 2].end);
      if (!a || (op != "-z" && op != "-n")) return std::nullopt;
      return (op == "-z") == a->text.empty();
    }
    auto a = evaluate(f, c.words[b + 1].begin, c.words[b + 1].end);
    auto z = evaluate(f, c.words[b + 3].begin, c.words[b + 3].end);
    if (!a || !z) return std::nullopt;
    auto const op = word_text(f, c.words[b + 2]);
    if (op == "==" || op == "=") return a->text == z->text;
    if (op == "!=") return a->text != z->text;
    // Arithmetic: an empty string is 0, as bash reads it.
    auto number = [](std::string const& t) -> std::optional<long long> {
      if (t.empty()) return 0;
      long long v = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec != std::errc{} || end != t.data() + t.size()) return std::nullopt;
      return v;
    };
    auto x = number(a->text);
    auto y = number(z->text);
    if (!x || !y) return std::nullopt;
    if (op == "-eq") return *x == *y;
    if (op == "-ne") return *x != *y;
    if (op == "-lt") return *x < *y;
    if (op == "-le") return *x <= *y;
    if (op == "-gt") return *x > *y;
    if (op == "-ge") return *x >= *y;
    return std::nullopt;
  }

  // Tests joined by `&&` and `||` (left to right, as bash runs them, the
  // right one only where it decides): true, false, or nothing.
  std::optional<bool> test(script const& f, command const& c, std::size_t from) {
    std::size_t start = from;
    std::optional<bool> result;
    std::string join;
    auto segment = [&](std::size_t end) -> bool {
      if (join.empty() || (join == "&&" && result && *result) || (join == "||" && result && !*result)) {
        result = one_test(f, c, start, end);
        return result.has_value();
      }
      return result.has_value();  // decided without it
    };
    for (auto const& o : c.ops) {
      if (o.word < from || (o.text != "&&" && o.text != "||")) return std::nullopt;
      if (!segment(o.word)) return std::nullopt;
      join = o.text;
      start = o.word;
    }
    if (!segment(c.words.size())) return std::nullopt;
    return result;
  }

  void branch(script const& f, command const& c, std::size_t from, frame& fr) {
    if (fr.outer != mode::run || fr.undecided) {
      fr.now = fr.outer == mode::skip ? mode::skip : mode::unknown;
      return;
    }
    if (fr.taken) {
      fr.now = mode::skip;
      return;
    }
    auto t = test(f, c, from);
    if (!t) {
      fr.undecided = true;
      fr.now = mode::unknown;
    } else {
      fr.now = *t ? mode::run : mode::skip;
      fr.taken = *t;
    }
  }

  // The file `source` names: `$(dirname ${BASH_SOURCE[0]})/REST`.
  void source(script& f, command const& c) {
    auto const cmd_at = span{f.file, c.words[0].begin, c.words[0].end};
    if (c.words.size() != 2) {
      diags_.warning(cmd_at, "'source' is read only as 'source $(dirname ${BASH_SOURCE[0]})/FILE': not run");
      return;
    }
    auto const w = c.words[1];
    auto const text = word_text(f, w);
    std::optional<located> rest;
    for (std::string_view prefix : {"$(dirname ${BASH_SOURCE[0]})/", "$(dirname \"${BASH_SOURCE[0]}\")/",
                                    "\"$(dirname \"${BASH_SOURCE[0]}\")\"/", "\"$(dirname ${BASH_SOURCE[0]})\"/"})
      if (text.starts_with(prefix)) rest = evaluate(f, w.begin + prefix.size(), w.end);
    span const at{f.file, w.begin, w.end};
    if (!rest || rest->text.empty()) {
      diags_.warning(at, "'source' is read only as 'source $(dirname ${BASH_SOURCE[0]})/FILE': not run");
      return;
    }
    auto const path = f.dir + rest->text;
    if (std::find(chain_.begin(), chain_.end(), path) != chain_.end()) {
      std::string cycle;
      for (auto it = std::find(chain_.begin(), chain_.end(), path); it != chain_.end(); ++it) cycle += *it + " -> ";
      fail(at, fmt::format("sourcing '{}' again is a cycle: {}{}", escaped(path), escaped(cycle), escaped(path)));
      return;
    }
    if (chain_.size() >= max_depth) {
      fail(at, fmt::format("sourced files nest more than {} deep", max_depth));
      return;
    }
    if (!open_) {
      fail(at, fmt::format("cannot read '{}': no file this script sources can be opened here", escaped(path)));
      return;
    }
    auto opened = open_(path);
    if (auto const* why = std::get_if<std::string>(&opened)) {
      fail(at, *why);
      return;
    }
    enter(std::get<std::uint32_t>(opened), path);
  }

  // Runs the script `file` read from `path` (relative to the first
  // script's directory), from after its byte-order mark as every reader.
  void enter(std::uint32_t file, std::string const& path) {
    if (!check_text(sources_, file, diags_)) {
      ok_ = false;
      return;
    }
    script f{sources_.file(file).text(), file, {}, detail::scanner(sources_, file, diags_).pos(), false};
    if (auto slash = path.rfind('/'); slash != std::string::npos) f.dir = path.substr(0, slash + 1);
    chain_.push_back(path);
    run(f);
    chain_.pop_back();
  }

  // Runs the commands of `f` until its end, an error or `exit`.
  void run(script& f) {
    std::vector<frame> outer;
    std::swap(outer, frames_);  // an if does not span files
    command c;
    while (ok_ && !exited_ && !f.returned && next(f, c)) one(f, c);
    if (ok_)
      for (auto const& fr : frames_)
        diags_.warning(fr.at, fmt::format("this block has no '{}': the rest of the file is read as inside it",
                                          fr.closer));
    std::swap(outer, frames_);
  }

  void one(script& f, command const& c) {
    std::size_t from = 0;
    auto word = [&](std::size_t i) { return word_text(f, c.words[i]); };
    auto const first = word(0);
    span const at{f.file, c.words[0].begin, c.words[0].end};
    // The keywords that open, switch and close blocks.
    if (first == "if" || first == "elif") {
      if (first == "if") {
        frame fr;
        fr.outer = current();
        fr.closer = "fi";
        fr.at = at;
        frames_.push_back(fr);
      } else if (frames_.empty() || frames_.back().closer != "fi") {
        diags_.warning(at, "'elif' without 'if': not read");
        return;
      }
      branch(f, c, 1, frames_.back());
      return;
    }
    if (first == "for" || first == "while" || first == "until" || first == "case") {
      frame fr;
      fr.outer = current();
      fr.now = fr.outer == mode::skip ? mode::skip : mode::unknown;
      fr.closer = first == "case" ? "esac" : "done";
      fr.at = at;
      frames_.push_back(fr);
      return;
    }
    if (first == "else") {
      if (frames_.empty() || frames_.back().closer != "fi") {
        diags_.warning(at, "'else' without 'if': not read");
        return;
      }
      auto& fr = frames_.back();
      fr.now = fr.outer == mode::skip ? mode::skip
               : fr.outer == mode::unknown || fr.undecided ? mode::unknown
               : fr.taken ? mode::skip
                          : mode::run;
      from = 1;
    } else if (first == "fi" || first == "done" || first == "esac") {
      if (frames_.empty() || frames_.back().closer != first) {
        diags_.warning(at, fmt::format("'{}' closes no block: not read", first));
        return;
      }
      frames_.pop_back();
      return;
    } else if (first == "then" || first == "do") {
      from = 1;
    }
    if (from >= c.words.size()) return;
    command const rest = c.after(from);
    switch (current()) {
      case mode::skip: return;
      case mode::unknown:
        if (capture_launch_ && !launch_ && !undecided_launch_ && starts_python(f, rest))
          undecided_launch_ = span{f.file, rest.words[0].begin, rest.words[0].end};
        not_run(f, rest, false);
        return;
      case mode::run: simple(f, rest); return;
    }
  }

  // ---- arrays and a launch script's command ----

  // The words an array or a command holds, against max_words and max_text.
  struct words_budget {
    std::size_t words = 0;
    std::size_t text = 0;
    bool add(std::vector<detail::arg_word> const& more) {
      words += more.size();
      for (auto const& w : more) text += w.text.size();
      return words <= max_words && text <= max_text;
    }
    [[nodiscard]] std::string message(std::string_view what) const {
      return fmt::format("{} holds more than {} words or {} bytes: not a configuration dtplan reads", what,
                         max_words, max_text);
    }
  };

  // `${NAME[@]}`, `${NAME[*]}`, either in double quotes: the name, whether
  // quoted, whether `*`.
  struct array_ref {
    std::string name;
    bool quoted = false;
    bool star = false;
  };
  static std::optional<array_ref> array_reference(std::string_view text) {
    array_ref r;
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
      r.quoted = true;
      text = text.substr(1, text.size() - 2);
    }
    if (!text.starts_with("${") || !text.ends_with("]}") || text.size() < 7) return std::nullopt;
    auto const inner = text.substr(2, text.size() - 4);  // NAME[@
    auto const bracket = inner.find('[');
    if (bracket == std::string_view::npos || bracket + 2 != inner.size() || bracket == 0) return std::nullopt;
    char const which = inner[bracket + 1];
    if (which != '@' && which != '*') return std::nullopt;
    auto const name = inner.substr(0, bracket);
    if (!name_start(name[0]) || !std::all_of(name.begin(), name.end(), name_char)) return std::nullopt;
    r.name = std::string(name);
    r.star = which == '*';
    return r;
  }

  // Whether `w`'s text is written as it is at its span, so that a part of it
  // has a span of its own.
  [[nodiscard]] bool verbatim(detail::arg_word const& w) const {
    if (w.where.file == span::no_file || w.where.end < w.where.begin || w.where.size() != w.text.size()) return false;
    return sources_.text(w.where) == w.text;
  }

  // The '=' of an option's `=VALUE` where the word is written as it is.
  void mark_equals(detail::arg_word& w) const {
    if (auto eq = w.text.find('='); eq != std::string::npos && w.text.starts_with("-") && verbatim(w))
      w.equals = w.where.begin + static_cast<std::uint32_t>(eq);
  }

  // Splits `w` at blanks, as bash splits an unquoted expansion.
  void split(detail::arg_word const& w, std::vector<detail::arg_word>& out) const {
    if (w.unexpanded) {
      out.push_back(w);
      return;
    }
    bool const own_spans = verbatim(w);
    std::size_t p = 0;
    while (p < w.text.size()) {
      p = w.text.find_first_not_of(" \t\n", p);
      if (p == std::string::npos) break;
      auto q = w.text.find_first_of(" \t\n", p);
      if (q == std::string::npos) q = w.text.size();
      detail::arg_word piece{w.text.substr(p, q - p), w.where, false, {}, false};
      if (own_spans)
        piece.where = {w.where.file, w.where.begin + static_cast<std::uint32_t>(p),
                       w.where.begin + static_cast<std::uint32_t>(q)};
      mark_equals(piece);
      out.push_back(std::move(piece));
      p = q;
    }
  }

  // The words `w` expands to, as bash expands a command's word: an array's
  // elements, a variable's value split at blanks where unquoted. What
  // cannot be expanded stays one word as written, marked. The lines not
  // run that may have given an array expanded here words go to `unread`.
  std::vector<detail::arg_word> fields(script const& f, raw_word w, std::vector<span>& unread) {
    auto const text = word_text(f, w);
    span const at{f.file, w.begin, w.end};
    std::vector<detail::arg_word> out;
    if (auto ref = array_reference(text)) {
      if (!ref->quoted && unevaluated(ref->name)) return {{std::string(text), at, true, {}, true}};
      auto const it = arrays_.find(ref->name);
      if (it == arrays_.end()) return {};
      auto const& elements = it->second.elements;
      unread.insert(unread.end(), it->second.unread.begin(), it->second.unread.end());
      if (ref->quoted && ref->star) {
        if (elements.empty()) return {{{}, at, false, {}, false}};
        detail::arg_word joined{{}, elements.size() == 1 ? elements.front().where : at, false, {}, false};
        for (auto const& e : elements) {
          if (e.unexpanded) joined.unexpanded = true;
          joined.text += (joined.text.empty() ? "" : " ") + e.text;
        }
        return {joined};
      }
      if (ref->quoted) return elements;
      for (auto const& e : elements) split(e, out);
      return out;
    }
    bool const splits = text.find_first_of("'\"") == std::string_view::npos && text.find('$') != std::string_view::npos;
    words_from_environment_ = true;
    auto v = evaluate(f, w.begin, w.end);
    words_from_environment_ = false;
    if (!v) return {{std::string(text), at, true, {}, splits}};
    detail::arg_word one{v->text, v->where, false, {}, false};
    if (splits) {
      split(one, out);
    } else {
      mark_equals(one);
      out.push_back(std::move(one));
    }
    return out;
  }

  void assign_array(script const& f, command const& c) {
    auto const head = word_text(f, c.words[c.array->word]);
    auto const n = array_head(head);
    auto const name = std::string(head.substr(0, n));
    bool const append = head.substr(n) == "+=";
    array_value given;
    auto& held = arrays_[name];
    words_budget budget;
    if (append) budget.add(held.elements);
    span const at = f.span_of(c.words[c.array->word].begin, c.words[c.array->word].end);
    for (auto const& w : c.array->elements) {
      auto more = fields(f, w, given.unread);
      if (!budget.add(more)) {
        fail(at, budget.message("this array"));
        return;
      }
      given.elements.insert(given.elements.end(), std::make_move_iterator(more.begin()),
                            std::make_move_iterator(more.end()));
    }
    forget(name);
    if (!append) held = {};
    held.elements.insert(held.elements.end(), std::make_move_iterator(given.elements.begin()),
                         std::make_move_iterator(given.elements.end()));
    held.unread.insert(held.unread.end(), given.unread.begin(), given.unread.end());
  }

  // `cat <<EOF > PATH`: the file the first here-document writes, its path
  // and body expanded (a quoted delimiter's body is literal).
  void write_heredoc(script const& f, command const& c) {
    auto const to = std::find_if(c.ops.begin(), c.ops.end(), [&](command::operator_at const& o) {
      return o.text == ">" && o.word < c.words.size();
    });
    if (to == c.ops.end()) return;
    auto path = evaluate(f, c.words[to->word].begin, c.words[to->word].end);
    auto const& h = c.heredocs.front();
    if (!path || path->text.empty()) return;
    expansion x;
    if (h.quoted) literal(f, x, h.begin, h.end);
    else expand(f, h.begin, h.end, true, x);
    if (!x.ok || x.text.size() > max_text) return;
    written_.push_back({path->text, std::move(x.text), f.span_of(h.begin, h.end)});
  }

  // A simple command's words past its leading assignments (`A=1 cmd`).
  [[nodiscard]] std::size_t command_start(script const& f, command const& c) const {
    std::size_t k = 0;
    while (k < c.simple_words() && assignment(word_text(f, c.words[k]))) ++k;
    return k;
  }

  // Whether a word of the command is written as a Python script's name.
  [[nodiscard]] bool starts_python(script const& f, command const& c) const {
    if (c.array) return false;
    for (std::size_t i = command_start(f, c); i < c.simple_words(); ++i) {
      auto const t = word_text(f, c.words[i]);
      if (t.find(".py") != std::string_view::npos && !t.starts_with("-")) return true;
    }
    return false;
  }

  // The command that starts a Python script (a word ending in `.py`, not an
  // option): its words, the first time; true when `c` is one.
  bool launch(script const& f, command const& c) {
    if (c.array) return false;
    std::vector<detail::arg_word> words;
    std::vector<span> unread;
    words_budget budget;
    for (std::size_t i = command_start(f, c); i < c.simple_words(); ++i) {
      auto more = fields(f, c.words[i], unread);
      if (!budget.add(more)) {
        fail(span{f.file, c.words[0].begin, c.words[0].end}, budget.message("this command"));
        return true;
      }
      words.insert(words.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    bool const python = std::any_of(words.begin(), words.end(), [](detail::arg_word const& w) {
      return !w.unexpanded && w.text.ends_with(".py") && !w.text.starts_with("-") &&
             w.text.find_first_of(" \t\n") == std::string::npos;
    });
    if (!python) return false;
    span const at{f.file, c.words[0].begin, c.words[0].end};
    if (launch_) {
      diags_.warning(at, "a second command starts a Python script: dtplan reads the first one's arguments");
      return true;
    }
    if (c.complex()) {
      auto& d = diags_.warning(f.span_of(c.op_at(), c.op_at() + 1),
                               fmt::format("the rest of the command after '{}' is not read", c.op()));
      d.notes.push_back({{}, "dtplan reads one command's arguments"});
    }
    std::vector<span> said;
    for (auto const& u : unread) {
      if (std::find(said.begin(), said.end(), u) != said.end()) continue;
      said.push_back(u);
      diags_.warning(u, "the words this line gives the array are not read: it runs in a branch dtplan cannot decide");
    }
    launch_ = std::move(words);
    return true;
  }

 public:
  void capture_launch() { capture_launch_ = true; }
  [[nodiscard]] std::optional<std::vector<detail::arg_word>> const& launched() const { return launch_; }
  [[nodiscard]] std::optional<span> const& undecided_launch() const { return undecided_launch_; }
  std::vector<document::written_file> written_;

 private:

  void simple(script& f, command const& c) {
    auto word = [&](std::size_t i) { return word_text(f, c.words[i]); };
    if (c.array) {
      assign_array(f, c);
      return;
    }
    if (capture_launch_ && launch(f, c)) return;
    if (capture_launch_ && !c.heredocs.empty()) write_heredoc(f, c);
    if (c.complex()) {
      not_run(f, c, false);
      return;
    }
    auto const first = word(0);
    if (first == "exit") {
      exited_ = true;
      return;
    }
    if (first == "return") {
      f.returned = true;
      return;
    }
    if (first == "source" || first == ".") {
      source(f, c);
      return;
    }
    if (first == "unset") {
      for (std::size_t i = 1; i < c.words.size(); ++i) {
        auto const name = std::string(word(i));
        if (name.starts_with("-")) continue;
        forget(name);
      }
      return;
    }
    if (first == ":" || first == "true") {
      running_ = true;
      for (std::size_t i = 1; i < c.words.size(); ++i) {
        command one_word;
        one_word.words = {c.words[i]};
        if (!evaluate(f, c.words[i].begin, c.words[i].end)) not_run(f, one_word, false);
      }
      running_ = false;
      return;
    }
    bool const declares = first == "export" || first == "readonly" || first == "declare" || first == "typeset" ||
                          first == "local";
    std::size_t i = declares ? 1 : 0;
    // `A=1 cmd` sets A for cmd only: nothing stays set.
    if (!declares) {
      for (auto const& w : c.words)
        if (!assignment(word_text(f, w))) return;
    }
    for (; i < c.words.size(); ++i) {
      auto const w = c.words[i];
      auto const text = word(i);
      if (text.starts_with("-")) continue;
      auto const n = assignment(text);
      if (!n) continue;  // `export NAME`: nothing to evaluate
      auto const name = std::string(text.substr(0, n));
      span const key = f.span_of(w.begin, w.begin + n);
      running_ = true;
      auto v = evaluate(f, w.begin + n + 1, w.end);
      running_ = false;
      if (v) assign(name, key, *v);
      else not_evaluated(f, name, key, {static_cast<std::uint32_t>(w.begin + n + 1), w.end}, true);
    }
  }

  source_manager const& sources_;
  open_sourced const& open_;
  diagnostics& diags_;
  std::vector<std::string> chain_;  // the files being read, outermost first
  std::vector<frame> frames_;
  bool ok_ = true;
  bool exited_ = false;
  bool running_ = false;  // `${X:=...}` assigns only while a command runs
  bool words_from_environment_ = false;  // expanding a command's or an array's words
  // Arrays: their elements, and those a line not run sets.
  struct array_value {
    std::vector<detail::arg_word> elements;
    std::vector<span> unread;  ///< lines not run that may have given it words
  };
  std::map<std::string, array_value> arrays_;
  // Here-documents opened on the line being read: delimiter, `<<-`.
  std::vector<command::heredoc> heredocs_;
  // A launch script: the command that starts a Python script.
  bool capture_launch_ = false;
  std::optional<std::vector<detail::arg_word>> launch_;
  std::optional<span> undecided_launch_;
};

}  // namespace

bool detail::looks_like_script(std::string_view text) {
  bool assigns = false;
  std::size_t line = 0;
  while (line < text.size()) {
    auto end = text.find('\n', line);
    if (end == std::string_view::npos) end = text.size();
    auto l = text.substr(line, end - line);
    auto const first = l.find_first_not_of(" \t");
    if (first != std::string_view::npos) {
      l = l.substr(first);
      if (l.starts_with("export ")) l = l.substr(7);
      std::size_t i = 0;
      if (!l.empty() && name_start(l[0])) {
        while (i < l.size() && name_char(l[i])) ++i;
        auto const rest = l.substr(i);
        if (rest.starts_with("=(") || rest.starts_with("+=(")) return true;
        if (rest.starts_with("=")) assigns = true;
      }
    }
    line = end + 1;
  }
  return assigns && text.find('$') != std::string_view::npos;
}

std::optional<detail::launch> detail::launch_command(source_manager const& sources, std::uint32_t file,
                                                     open_sourced const& open, diagnostics& diags) {
  shell sh(sources, open, diags);
  sh.capture_launch();
  sh.doc.file = file;
  auto const& name = sources.file(file).name();
  auto const slash = name.rfind('/');
  if (!sh.read(file, slash == std::string::npos ? name : name.substr(slash + 1))) return std::nullopt;
  if (sh.launched()) return launch{*sh.launched(), std::move(sh.written_)};
  if (auto const& at = sh.undecided_launch()) {
    diags.error(*at, "the command that starts the Python script runs in a branch dtplan cannot decide: write its "
                     "arguments, or the test as '[[ A == B ]]' on variables the script sets");
    return std::nullopt;
  }
  auto const text = sources.file(file).text();
  diags.error(span{file, 0, static_cast<std::uint32_t>(std::min<std::size_t>(text.find('\n'), text.size()))},
              "no command of this script starts a Python script (a word ending in '.py'): dtplan reads that "
              "command's arguments");
  return std::nullopt;
}

std::optional<document> read_shell(source_manager const& sources, std::uint32_t file, open_sourced const& open,
                                   diagnostics& diags) {
  shell sh(sources, open, diags);
  sh.doc.file = file;
  sh.doc.format = document::syntax::shell;
  auto const& name = sources.file(file).name();
  auto const slash = name.rfind('/');
  if (!sh.read(file, slash == std::string::npos ? name : name.substr(slash + 1))) return std::nullopt;
  return std::move(sh.doc);
}

}  // namespace dtplan::dsl::config
