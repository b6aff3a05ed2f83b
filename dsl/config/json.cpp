// JSON (RFC 8259) read strictly, with the span of every key and value: a
// DeepSpeed configuration's keys are reported where they are written, which
// nlohmann-json (positions of errors only) cannot say.
#include <fmt/format.h>

#include <cstring>
#include <map>

#include "dsl/config/config.hpp"
#include "dsl/config/scanner.hpp"
#include "dsl/parse.hpp"

namespace dtplan::dsl::config {

namespace {

using detail::scanner;

constexpr int max_depth = 64;

class json_reader {
 public:
  json_reader(source_manager const& sources, std::uint32_t file, diagnostics& diags) : s_(sources, file, diags) {}

  std::optional<document> run() {
    document doc{document::syntax::json, s_.file(), {}, {}, {}, {}, {}};
    skip_space();
    if (s_.peek() != '{') return s_.expected("a JSON object ('{')"), std::nullopt;
    if (!object(doc, "", 0)) return std::nullopt;
    skip_space();
    if (!s_.done()) return s_.expected("the end of the file after the object"), std::nullopt;
    return doc;
  }

 private:
  void skip_space() {
    while (s_.peek() == ' ' || s_.peek() == '\t' || s_.peek() == '\n' || s_.peek() == '\r') s_.advance();
  }

  bool too_deep(int depth) {
    if (depth < max_depth) return false;
    s_.fail(s_.here(), fmt::format("objects and arrays nested deeper than {} are not read", max_depth));
    return true;
  }

  // An object's members as entries under `prefix` (nested objects
  // flattened); `doc` null: read and dropped (an object inside an array).
  bool object(document& doc, std::string const& prefix, int depth) {
    if (too_deep(depth)) return false;
    auto const open = s_.here();
    s_.advance();
    std::map<std::string, span, std::less<>> seen;
    skip_space();
    if (s_.peek() == '}') {
      s_.advance();
      return true;
    }
    while (true) {
      skip_space();
      if (s_.peek() != '"') return s_.expected("a key in double quotes");
      auto const key_begin = s_.pos();
      std::string key;
      if (!string(key)) return false;
      auto const key_where = s_.span_of(key_begin, s_.pos());
      if (auto [it, fresh] = seen.emplace(key, key_where); !fresh) {
        auto& d = s_.diags().error(key_where, fmt::format("the key '{}' is written twice in this object", key));
        d.notes.push_back({it->second, "it is first written here"});
        return false;
      }
      skip_space();
      if (s_.peek() != ':') return s_.expected(fmt::format("':' after the key '{}'", key));
      s_.advance();
      skip_space();
      auto const full = prefix.empty() ? key : prefix + "." + key;
      if (s_.peek() == '{') {
        if (!object(doc, full, depth + 1)) return false;
      } else {
        value v;
        if (!value_of(v, depth + 1)) return false;
        doc.entries.push_back({full, key_where, std::move(v)});
      }
      skip_space();
      if (s_.peek() == ',') {
        s_.advance();
        skip_space();
        if (s_.peek() == '}') return s_.expected("a key after ',' (JSON has no trailing commas)");
        continue;
      }
      if (s_.peek() == '}') {
        s_.advance();
        return true;
      }
      if (s_.done()) {
        auto& d = s_.diags().error(s_.here(), "expected '}' to close the object, got the end of the file");
        d.notes.push_back({open, "the object opens here"});
        return false;
      }
      return s_.expected("',' or '}' after a member of the object");
    }
  }

  bool value_of(value& v, int depth) {
    auto const begin = s_.pos();
    char c = s_.peek();
    if (c == '"') {
      v.k = value::kind::string;
      if (!string(v.text)) return false;
    } else if (c == '{') {
      document dropped;
      if (!object(dropped, "", depth)) return false;
      v.k = value::kind::object;
    } else if (c == '[') {
      if (!array(v, depth)) return false;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      if (!number(v)) return false;
    } else if (word("true", v, value::kind::boolean) || word("false", v, value::kind::boolean) ||
               word("null", v, value::kind::null)) {
    } else {
      return s_.expected("a JSON value");
    }
    v.where = s_.span_of(begin, s_.pos());
    return true;
  }

  bool word(std::string_view w, value& v, value::kind k) {
    if (!s_.at(w)) return false;
    s_.advance(w.size());
    v.k = k;
    v.text = std::string(w);
    return true;
  }

  bool array(value& v, int depth) {
    if (too_deep(depth)) return false;
    auto const open = s_.here();
    s_.advance();
    v.k = value::kind::array;
    skip_space();
    if (s_.peek() == ']') {
      s_.advance();
      return true;
    }
    while (true) {
      skip_space();
      value item;
      if (!value_of(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      skip_space();
      if (s_.peek() == ',') {
        s_.advance();
        continue;
      }
      if (s_.peek() == ']') {
        s_.advance();
        return true;
      }
      if (s_.done()) {
        auto& d = s_.diags().error(s_.here(), "expected ']' to close the array, got the end of the file");
        d.notes.push_back({open, "the array opens here"});
        return false;
      }
      return s_.expected("',' or ']' in the array");
    }
  }

  bool number(value& v) {
    auto const begin = s_.pos();
    auto digits = [&] {
      auto const start = s_.pos();
      while (s_.peek() >= '0' && s_.peek() <= '9') s_.advance();
      return s_.pos() > start;
    };
    if (s_.peek() == '-') s_.advance();
    if (s_.peek() == '0') {
      s_.advance();
      if (s_.peek() >= '0' && s_.peek() <= '9')
        return s_.fail(s_.span_of(begin, s_.pos() + 1), "a JSON number cannot start with a leading zero");
    } else if (!digits()) {
      return s_.expected("a digit");
    }
    bool real = false;
    if (s_.peek() == '.') {
      s_.advance();
      if (!digits()) return s_.expected("a digit after the decimal point");
      real = true;
    }
    if (s_.peek() == 'e' || s_.peek() == 'E') {
      s_.advance();
      if (s_.peek() == '+' || s_.peek() == '-') s_.advance();
      if (!digits()) return s_.expected("the exponent's digits");
      real = true;
    }
    v.k = real ? value::kind::real : value::kind::integer;
    v.text = std::string(s_.slice(begin, s_.pos()));
    return true;
  }

  bool string(std::string& out) {
    auto const begin = s_.pos();
    s_.advance();
    while (true) {
      if (s_.done()) return s_.fail(s_.span_of(begin, s_.pos()), "this string is not closed");
      char c = s_.peek();
      if (c == '"') {
        s_.advance();
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return s_.fail(s_.here(), fmt::format("a JSON string cannot hold {}; write it as an escape", s_.found()));
      if (c != '\\') {
        out += c;
        s_.advance();
        continue;
      }
      auto const esc = s_.pos();
      s_.advance();
      char e = s_.peek();
      char const* simple = "\"\\/bfnrt";
      char const* meant = "\"\\/\b\f\n\r\t";
      if (auto const* at = e ? std::strchr(simple, e) : nullptr) {
        out += meant[at - simple];
        s_.advance();
        continue;
      }
      if (e != 'u') {
        s_.advance();
        return s_.fail(s_.span_of(esc, s_.pos()), fmt::format("unknown escape '{}' in a string", s_.slice(esc, s_.pos())));
      }
      s_.advance();
      long code = detail::hex_digits(s_, 4);
      if (code < 0) return s_.fail(s_.span_of(esc, s_.pos()), "expected four hexadecimal digits after '\\u'");
      s_.advance(4);
      if (code >= 0xd800 && code <= 0xdbff) {
        long low = s_.at("\\u") ? (s_.advance(2), detail::hex_digits(s_, 4)) : -1;
        if (low < 0xdc00 || low > 0xdfff)
          return s_.fail(s_.span_of(esc, s_.pos()), "a '\\u' high surrogate must be followed by a low one");
        s_.advance(4);
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
      } else if (code >= 0xdc00 && code <= 0xdfff) {
        return s_.fail(s_.span_of(esc, s_.pos()), "a '\\u' low surrogate without a high one");
      }
      detail::append_utf8(out, static_cast<std::uint32_t>(code));
    }
  }

  scanner s_;
};

}  // namespace

bool looks_like_json(std::string_view text) {
  if (text.substr(0, 3) == "\xef\xbb\xbf") text.remove_prefix(3);
  auto const first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

std::optional<document> read_json(source_manager const& sources, std::uint32_t file, diagnostics& diags) {
  if (!check_text(sources, file, diags)) return std::nullopt;
  return json_reader(sources, file, diags).run();
}

}  // namespace dtplan::dsl::config
