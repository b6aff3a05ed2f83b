// The TOML torchtitan's job configurations are written in, read strictly
// and with the span of every key and value. Debian's toml11 locates values
// but not keys, and a warning about a key has to point at the key.
#include <fmt/format.h>

#include <map>
#include <set>

#include "dsl/config/config.hpp"
#include "dsl/config/scanner.hpp"
#include "dsl/parse.hpp"

namespace dtplan::dsl::config {

namespace {

using detail::scanner;

constexpr int max_depth = 32;  // nested arrays

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class toml_reader {
 public:
  toml_reader(source_manager const& sources, std::uint32_t file, diagnostics& diags) : s_(sources, file, diags) {}

  std::optional<document> run() {
    document doc{document::syntax::toml, s_.file(), {}, {}, {}, {}, {}};
    // The first error ends the reading: after an unclosed string or array
    // the rest would only repeat it.
    while (!s_.done()) {
      skip_blank();
      if (s_.done()) break;
      if (!line(doc)) return std::nullopt;
    }
    return doc;
  }

 private:
  void skip_blank() {
    while (!s_.done()) {
      char c = s_.peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') s_.advance();
      else if (c == '#') skip_comment();
      else break;
    }
  }
  void skip_spaces() {
    while (s_.peek() == ' ' || s_.peek() == '\t') s_.advance();
  }
  void skip_comment() {
    while (!s_.done() && s_.peek() != '\n') s_.advance();
  }
  // Spaces, a comment, then the end of the line.
  bool end_of_line(std::string_view after) {
    skip_spaces();
    if (s_.peek() == '#') skip_comment();
    if (s_.at("\r\n")) s_.advance(2);
    else if (s_.peek() == '\n') s_.advance();
    else if (!s_.done()) return s_.expected(fmt::format("the end of the line after {}", after));
    return true;
  }

  bool line(document& doc) {
    if (s_.peek() == '[') return table_header();
    return key_value(doc);
  }

  // One key of a dotted key: bare, "basic" or 'literal'.
  bool simple_key(std::string& out) {
    char c = s_.peek();
    if (c == '"' || c == '\'') {
      value v;
      if (!string_value(v)) return false;
      out = v.text;
      return true;
    }
    auto const begin = s_.pos();
    while (bare_key_char(s_.peek())) s_.advance();
    if (s_.pos() == begin) return s_.expected("a key");
    out = std::string(s_.slice(begin, s_.pos()));
    return true;
  }

  // `a.b."c"`: the parts joined with '.'.
  bool dotted_key(std::string& out, span& where) {
    auto const begin = s_.pos();
    out.clear();
    while (true) {
      std::string part;
      if (!simple_key(part)) return false;
      out += out.empty() ? part : "." + part;
      auto const end = s_.pos();
      skip_spaces();
      if (s_.peek() != '.') {
        where = s_.span_of(begin, end);
        return true;
      }
      s_.advance();
      skip_spaces();
    }
  }

  bool table_header() {
    auto const begin = s_.pos();
    s_.advance();
    if (s_.peek() == '[')
      return s_.fail(s_.span_of(begin, begin + 2),
                     "arrays of tables ('[[...]]') are not read: torchtitan's configurations do not use them");
    skip_spaces();
    std::string name;
    span where;
    if (!dotted_key(name, where)) return false;
    skip_spaces();
    if (s_.peek() != ']') return s_.expected(fmt::format("']' to close the table '{}'", name));
    s_.advance();
    if (!define(name, where, true)) return false;
    table_ = name;
    return end_of_line(fmt::format("the table '{}'", name));
  }

  bool key_value(document& doc) {
    std::string key;
    span where;
    if (!dotted_key(key, where)) return false;
    skip_spaces();
    if (s_.peek() != '=') return s_.expected(fmt::format("'=' after the key '{}'", key));
    s_.advance();
    skip_spaces();
    value v;
    if (!value_of(v, 0)) return false;
    auto full = table_.empty() ? key : table_ + "." + key;
    if (!define(full, where, false)) return false;
    doc.entries.push_back({full, where, std::move(v)});
    return end_of_line(fmt::format("the value of '{}'", key));
  }

  // A key or table is defined once; a key cannot be both a value and a
  // table.
  bool define(std::string const& name, span where, bool table) {
    auto twice = [&](span first, std::string const& what) {
      auto& d = s_.diags().error(where, fmt::format("{} '{}' is written twice", what, name));
      d.notes.push_back({first, "it is first written here"});
      return false;
    };
    if (auto it = values_.find(name); it != values_.end()) return twice(it->second, "the key");
    if (auto it = tables_.find(name); it != tables_.end()) return twice(it->second, "the table");
    for (auto dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
      if (auto it = values_.find(name.substr(0, dot)); it != values_.end()) {
        auto& d = s_.diags().error(where, fmt::format("'{}' is a value, not a table", name.substr(0, dot)));
        d.notes.push_back({it->second, "it is written here"});
        return false;
      }
    (table ? tables_ : values_).emplace(name, where);
    return true;
  }

  bool value_of(value& v, int depth) {
    auto const begin = s_.pos();
    char c = s_.peek();
    bool ok = false;
    if (c == '"' || c == '\'') ok = string_value(v);
    else if (c == '[') ok = array_value(v, depth);
    else if (c == '{')
      return s_.fail(s_.here(), "inline tables ('{...}') are not read: write the keys under a '[table]' header");
    else if (s_.at("true") && !bare_key_char(s_.peek(4))) {
      s_.advance(4);
      v.k = value::kind::boolean;
      v.text = "true";
      ok = true;
    } else if (s_.at("false") && !bare_key_char(s_.peek(5))) {
      s_.advance(5);
      v.k = value::kind::boolean;
      v.text = "false";
      ok = true;
    } else if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.') {
      ok = number(v);
    } else if (s_.at("inf") || s_.at("nan")) {
      return s_.fail(s_.span_of(begin, begin + 3), "'inf' and 'nan' are not read: a configuration's numbers are finite");
    } else {
      return s_.expected("a value (a string, a number, 'true', 'false' or an array)");
    }
    if (!ok) return false;
    v.where = s_.span_of(begin, s_.pos());
    return true;
  }

  bool string_value(value& v) {
    v.k = value::kind::string;
    auto const begin = s_.pos();
    char const quote = s_.peek();
    if (s_.at(quote == '"' ? "\"\"\"" : "'''"))
      return s_.fail(s_.span_of(begin, begin + 3),
                     "multi-line strings are not read: torchtitan's configurations do not use them");
    s_.advance();
    std::string out;
    while (true) {
      if (s_.done() || s_.peek() == '\n' || s_.peek() == '\r')
        return s_.fail(s_.span_of(begin, s_.pos()), "this string is not closed on its line");
      char c = s_.peek();
      if (c == quote) {
        s_.advance();
        break;
      }
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
        return s_.fail(s_.here(), fmt::format("a string cannot hold {}; write it as an escape", s_.found()));
      if (c == '\\' && quote == '"') {
        if (!escape(out)) return false;
        continue;
      }
      out += c;
      s_.advance();
    }
    v.text = std::move(out);
    return true;
  }

  bool escape(std::string& out) {
    auto const begin = s_.pos();
    s_.advance();
    char c = s_.peek();
    switch (c) {
      case 'b': out += '\b'; break;
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'f': out += '\f'; break;
      case 'r': out += '\r'; break;
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case 'u':
      case 'U': {
        std::size_t const n = c == 'u' ? 4 : 8;
        s_.advance();
        long code = detail::hex_digits(s_, n);
        if (code < 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
          return s_.fail(s_.span_of(begin, s_.pos()), fmt::format("expected {} hexadecimal digits of a Unicode "
                                                                  "scalar value after '\\{}'", n, c));
        detail::append_utf8(out, static_cast<std::uint32_t>(code));
        s_.advance(n);
        return true;
      }
      default:
        s_.advance();
        return s_.fail(s_.span_of(begin, s_.pos()), fmt::format("unknown escape '{}' in a string", s_.slice(begin, s_.pos())));
    }
    s_.advance();
    return true;
  }

  // Decimal integers and floats (underscores between digits); no hex,
  // octal, binary, inf or nan.
  bool number(value& v) {
    auto const begin = s_.pos();
    auto digits = [&](bool required) {
      auto const start = s_.pos();
      bool last_digit = false;
      while (true) {
        char c = s_.peek();
        if (c >= '0' && c <= '9') {
          last_digit = true;
        } else if (c == '_' && last_digit && s_.peek(1) >= '0' && s_.peek(1) <= '9') {
          last_digit = false;
        } else {
          break;
        }
        s_.advance();
      }
      return s_.pos() > start || !required;
    };
    if (s_.peek() == '+' || s_.peek() == '-') s_.advance();
    auto const int_begin = s_.pos();
    if (!digits(true)) return s_.expected("a digit");
    if (s_.pos() - int_begin > 1 && s_.text()[int_begin] == '0') {
      if (s_.text()[int_begin + 1] == 'x' || s_.text()[int_begin + 1] == 'o' || s_.text()[int_begin + 1] == 'b')
        return s_.fail(s_.span_of(begin, s_.pos()), "hexadecimal, octal and binary numbers are not read");
      return s_.fail(s_.span_of(begin, s_.pos()), "a number cannot start with a leading zero");
    }
    if (s_.peek() == 'x' || s_.peek() == 'o' || s_.peek() == 'b')
      return s_.fail(s_.span_of(begin, s_.pos() + 1), "hexadecimal, octal and binary numbers are not read");
    bool real = false;
    if (s_.peek() == '.') {
      s_.advance();
      if (!digits(true)) return s_.expected("a digit after the decimal point");
      real = true;
    }
    if (s_.peek() == 'e' || s_.peek() == 'E') {
      s_.advance();
      if (s_.peek() == '+' || s_.peek() == '-') s_.advance();
      if (!digits(true)) return s_.expected("the exponent's digits");
      real = true;
    }
    if (s_.peek() == '-' || s_.peek() == ':')
      return s_.fail(s_.span_of(begin, s_.pos() + 1), "dates and times are not read");
    if (bare_key_char(s_.peek()) || s_.peek() == '.')
      return s_.fail(s_.span_of(begin, s_.pos() + 1), fmt::format("expected a number, got '{}'",
                                                                  escaped(s_.slice(begin, s_.pos() + 1))));
    v.k = real ? value::kind::real : value::kind::integer;
    v.text = std::string(s_.slice(begin, s_.pos()));
    return true;
  }

  bool array_value(value& v, int depth) {
    auto const open = s_.here();
    if (depth >= max_depth) return s_.fail(open, fmt::format("arrays nested deeper than {} are not read", max_depth));
    s_.advance();
    v.k = value::kind::array;
    while (true) {
      skip_blank();
      if (s_.peek() == ']') {
        s_.advance();
        return true;
      }
      if (s_.done()) {
        auto& d = s_.diags().error(s_.here(), "expected ']' to close the array, got the end of the file");
        d.notes.push_back({open, "the array opens here"});
        return false;
      }
      value item;
      if (!value_of(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      skip_blank();
      if (s_.peek() == ',') {
        s_.advance();
        continue;
      }
      if (s_.peek() == ']') continue;
      if (s_.done()) continue;  // reported as an array never closed
      return s_.expected("',' or ']' in the array");
    }
  }

  scanner s_;
  std::string table_;
  std::map<std::string, span, std::less<>> values_, tables_;
};

}  // namespace

std::string_view kind_phrase(value::kind k) {
  switch (k) {
    case value::kind::string: return "a string";
    case value::kind::integer: return "a whole number";
    case value::kind::real: return "a number";
    case value::kind::boolean: return "a boolean";
    case value::kind::array: return "an array";
    case value::kind::object: return "an object";
    case value::kind::null: return "null";
  }
  return "a value";
}

std::optional<document> read_toml(source_manager const& sources, std::uint32_t file, diagnostics& diags) {
  if (!check_text(sources, file, diags)) return std::nullopt;
  return toml_reader(sources, file, diags).run();
}

}  // namespace dtplan::dsl::config
