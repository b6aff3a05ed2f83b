#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtplan::codegen {

/// A small streaming JSON writer with stable formatting (two-space indent,
/// keys in the order written, doubles with up to 6 significant digits), so
/// the same plan always prints the same bytes.
class json_writer {
 public:
  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  json_writer& key(std::string_view k);
  json_writer& value(std::string_view s);
  json_writer& value(char const* s) { return value(std::string_view(s)); }
  json_writer& value(std::int64_t v);
  json_writer& value(int v) { return value(static_cast<std::int64_t>(v)); }
  json_writer& value(double v);
  /// `v` rounded to a whole number, every digit written: sizes and counts
  /// past 2^63 too, which an int64 cannot hold. null where not finite.
  json_writer& whole(double v);
  json_writer& value(bool v);
  json_writer& null();

  [[nodiscard]] std::string const& str() const { return out_; }

 private:
  void before_value();
  void newline();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element yet
  bool after_key_ = false;
};

/// `s` quoted and escaped as a JSON string.
std::string json_quote(std::string_view s);

}  // namespace dtplan::codegen
