#include "codegen/json_writer.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtplan::codegen {

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void json_writer::newline() {
  out_ += '\n';
  out_.append(2 * first_.size(), ' ');
}

void json_writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
}

json_writer& json_writer::begin_object() {
  before_value();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

json_writer& json_writer::end_object() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += '}';
  if (first_.empty()) out_ += '\n';
  return *this;
}

json_writer& json_writer::begin_array() {
  before_value();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

json_writer& json_writer::end_array() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += ']';
  return *this;
}

json_writer& json_writer::key(std::string_view k) {
  before_value();
  out_ += json_quote(k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

json_writer& json_writer::value(std::string_view s) {
  before_value();
  out_ += json_quote(s);
  return *this;
}

json_writer& json_writer::value(std::int64_t v) {
  before_value();
  out_ += fmt::format("{}", v);
  return *this;
}

json_writer& json_writer::value(double v) {
  before_value();
  if (!std::isfinite(v)) out_ += "null";
  else out_ += fmt::format("{:.6g}", v);
  return *this;
}

json_writer& json_writer::whole(double v) {
  before_value();
  if (!std::isfinite(v)) out_ += "null";
  else out_ += fmt::format("{:.0f}", std::round(v) + 0.0);  // + 0.0: -0 prints as 0
  return *this;
}

json_writer& json_writer::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

json_writer& json_writer::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace dtplan::codegen
