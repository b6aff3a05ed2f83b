// An argument list as the shell would split it into words, each with its
// span; then the words grouped into options and their values.
#include <fmt/format.h>

#include "dsl/config/config.hpp"
#include "dsl/config/scanner.hpp"
#include "dsl/config/words.hpp"
#include "dsl/parse.hpp"

namespace dtplan::dsl::config {

namespace {

using detail::scanner;
using word = detail::arg_word;

class splitter {
 public:
  splitter(source_manager const& sources, std::uint32_t file, diagnostics& diags) : s_(sources, file, diags) {}

  std::optional<std::vector<word>> run() {
    std::vector<word> words;
    while (true) {
      skip_space();
      if (s_.done()) break;
      char c = s_.peek();
      if (c == '|' || c == ';' || c == '&' || c == '>' || c == '<') {
        // `2>&1`: the digits before a redirection are its descriptor.
        if ((c == '>' || c == '<') && !words.empty() && words.back().where.end == s_.pos()) {
          auto const& at = words.back().where;
          if (detail::is_descriptor(s_.text().substr(at.begin, at.end - at.begin))) words.pop_back();
        }
        auto& d = s_.diags().warning(s_.here(), fmt::format("the rest of the command after '{}' is not read", c));
        d.notes.push_back({{}, "dtplan reads one command's arguments"});
        break;
      }
      word w;
      if (!one(w)) return std::nullopt;
      words.push_back(std::move(w));
    }
    return words;
  }

 private:
  void skip_space() {
    while (!s_.done()) {
      char c = s_.peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        s_.advance();
      } else if (c == '\\' && (s_.peek(1) == '\n' || (s_.peek(1) == '\r' && s_.peek(2) == '\n'))) {
        s_.advance(s_.peek(1) == '\n' ? 2 : 3);  // a line continuation
      } else if (c == '#') {
        while (!s_.done() && s_.peek() != '\n') s_.advance();
      } else {
        break;
      }
    }
  }

  static bool ends_word(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '|' || c == ';' || c == '&' || c == '>' ||
           c == '<' || c == '\0';
  }

  bool one(word& w) {
    auto const begin = s_.pos();
    while (!s_.done() && !ends_word(s_.peek())) {
      char c = s_.peek();
      if (c == '\'') {
        auto const open = s_.pos();
        s_.advance();
        while (!s_.done() && s_.peek() != '\'') {
          w.text += s_.peek();
          s_.advance();
        }
        if (s_.done()) return s_.fail(s_.span_of(open, s_.pos()), "this quote (') is not closed");
        s_.advance();
      } else if (c == '"') {
        auto const open = s_.pos();
        s_.advance();
        while (!s_.done() && s_.peek() != '"') {
          char d = s_.peek();
          if (d == '\\' && (s_.peek(1) == '"' || s_.peek(1) == '\\' || s_.peek(1) == '$' || s_.peek(1) == '`')) {
            w.text += s_.peek(1);
            s_.advance(2);
            continue;
          }
          if (d == '\\' && s_.peek(1) == '\n') {
            s_.advance(2);
            continue;
          }
          if (d == '$' || d == '`') w.unexpanded = true;
          w.text += d;
          s_.advance();
        }
        if (s_.done()) return s_.fail(s_.span_of(open, s_.pos()), "this quote (\") is not closed");
        s_.advance();
      } else if (c == '\\') {
        if (s_.peek(1) == '\n') {
          s_.advance(2);
          continue;
        }
        if (s_.pos() + 1 >= s_.text().size()) return s_.fail(s_.here(), "a backslash at the end of the file");
        w.text += s_.peek(1);
        s_.advance(2);
      } else {
        if (c == '$' || c == '`') w.unexpanded = true;
        if (c == '=' && !w.equals) w.equals = s_.pos();
        w.text += c;
        s_.advance();
      }
    }
    w.where = s_.span_of(begin, s_.pos());
    // `$EXTRA` alone, unquoted: the shell splits it into any number of words.
    auto const raw = s_.slice(begin, s_.pos());
    w.detached = w.unexpanded && raw.starts_with('$') && raw.find_first_of("'\"") == std::string_view::npos;
    return true;
  }

  scanner s_;
};

bool is_option(std::string const& w) {
  if (w.size() < 2 || w[0] != '-') return false;
  if (w[1] >= '0' && w[1] <= '9') return false;  // a negative number
  if (w[1] == '.' && w.size() > 2 && w[2] >= '0' && w[2] <= '9') return false;
  return true;
}

value as_value(word const& w) {
  value v;
  v.k = value::kind::string;
  v.text = w.text;
  v.where = w.where;
  v.unexpanded = w.unexpanded;
  v.detached = w.detached;
  return v;
}

// Groups `words` into options with their values; words before the first
// option go to `positional`.
void group(std::vector<word> const& words, std::vector<entry>& out, std::vector<value>& positional) {
  for (std::size_t i = 0; i < words.size();) {
    auto const& w = words[i];
    if (!is_option(w.text)) {
      positional.push_back(as_value(w));
      ++i;
      continue;
    }
    entry e;
    if (auto eq = w.text.find('='); eq != std::string::npos) {
      e.key = w.text.substr(0, eq);
      // The option's and the value's own spans when the '=' was written
      // unquoted; else both are the whole word.
      if (w.equals) {
        e.key_where = {w.where.file, w.where.begin, *w.equals};
        value v = as_value(w);
        v.text = w.text.substr(eq + 1);
        v.where = {w.where.file, *w.equals + 1, w.where.end};
        e.val = std::move(v);
      } else {
        e.key_where = w.where;
        value v = as_value(w);
        v.text = w.text.substr(eq + 1);
        e.val = std::move(v);
      }
      out.push_back(std::move(e));
      ++i;
      continue;
    }
    e.key = w.text;
    e.key_where = w.where;
    std::size_t j = i + 1;
    while (j < words.size() && !is_option(words[j].text) && !(words[j].detached && j > i + 1)) ++j;
    if (j == i + 2) {
      e.val = as_value(words[i + 1]);
    } else if (j > i + 2) {
      value v;
      v.k = value::kind::array;
      // One span over the words where they are written in order in one
      // file; a launch script's may come from several variables.
      auto const& first = words[i + 1].where;
      auto const& last = words[j - 1].where;
      v.where = first.file == last.file && first.begin <= last.end ? span{first.file, first.begin, last.end} : first;
      for (std::size_t k = i + 1; k < j; ++k) {
        v.items.push_back(as_value(words[k]));
        v.unexpanded = v.unexpanded || words[k].unexpanded;
      }
      e.val = std::move(v);
    }
    out.push_back(std::move(e));
    i = j;
  }
}

}  // namespace

document detail::arguments_document(std::vector<word> const& words, std::uint32_t file, diagnostics& diags) {
  document doc;
  doc.file = file;
  doc.format = document::syntax::arguments;
  // The script's arguments follow the script; what comes before it is the
  // launcher's (`torchrun --nproc_per_node 8 pretrain_gpt.py ...`).
  std::size_t script = words.size();
  for (std::size_t i = 0; i < words.size(); ++i)
    if (words[i].text.ends_with(".py") && !is_option(words[i].text)) {
      script = i;
      break;
    }
  if (script < words.size()) {
    std::vector<word> before(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(script));
    group(before, doc.launcher, doc.words);
    doc.words.push_back(as_value(words[script]));
    std::vector<word> after(words.begin() + static_cast<std::ptrdiff_t>(script) + 1, words.end());
    auto const before_script = doc.words.size();
    group(after, doc.entries, doc.words);
    for (auto i = before_script; i < doc.words.size(); ++i)
      if (doc.words[i].unexpanded)
        diags.warning(doc.words[i].where, fmt::format("'{}' is a shell expansion dtplan cannot resolve: the "
                                                      "arguments it gives are not read",
                                                      escaped(doc.words[i].text)));
  } else {
    group(words, doc.entries, doc.words);
  }
  return doc;
}

std::optional<document> read_arguments(source_manager const& sources, std::uint32_t file, open_sourced const& open,
                                       diagnostics& diags) {
  // A launch script's text is checked as the reader enters it (each file it
  // sources too); a file of arguments here.
  if (detail::looks_like_script(sources.file(file).text())) {
    auto run = detail::launch_command(sources, file, open, diags);
    if (!run) return std::nullopt;
    auto doc = detail::arguments_document(run->words, file, diags);
    doc.written = std::move(run->written);
    return doc;
  }
  if (!check_text(sources, file, diags)) return std::nullopt;
  auto words = splitter(sources, file, diags).run();
  if (!words) return std::nullopt;
  return detail::arguments_document(*words, file, diags);
}

std::optional<document> read_arguments(source_manager const& sources, std::uint32_t file, diagnostics& diags) {
  return read_arguments(sources, file, open_sourced{}, diags);
}

}  // namespace dtplan::dsl::config
