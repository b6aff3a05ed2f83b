#pragma once
#include <fmt/format.h>

#include <cmath>
#include <compare>
#include <string>
#include <string_view>

#include "dsl/diagnostics.hpp"

/// Strong unit types for the planner's interfaces. Bytes, seconds, FLOPs,
/// FLOP/s and bytes/s are distinct types; only meaningful arithmetic
/// compiles (bytes / seconds is a bandwidth, flops / flop_rate is seconds).
/// Values are doubles in base SI units (bytes, seconds, FLOPs).
namespace dtplan::planner {

template <class Tag>
class unit {
 public:
  constexpr unit() = default;
  constexpr explicit unit(double v) : v_(v) {}
  [[nodiscard]] constexpr double value() const { return v_; }

  constexpr unit& operator+=(unit o) { v_ += o.v_; return *this; }
  constexpr unit& operator-=(unit o) { v_ -= o.v_; return *this; }
  constexpr unit& operator*=(double k) { v_ *= k; return *this; }
  constexpr unit& operator/=(double k) { v_ /= k; return *this; }
  friend constexpr unit operator+(unit a, unit b) { return unit(a.v_ + b.v_); }
  friend constexpr unit operator-(unit a, unit b) { return unit(a.v_ - b.v_); }
  friend constexpr unit operator-(unit a) { return unit(-a.v_); }
  friend constexpr unit operator*(unit a, double k) { return unit(a.v_ * k); }
  friend constexpr unit operator*(double k, unit a) { return unit(a.v_ * k); }
  friend constexpr unit operator/(unit a, double k) { return unit(a.v_ / k); }
  /// The ratio of two like quantities is a plain number.
  friend constexpr double operator/(unit a, unit b) { return a.v_ / b.v_; }
  friend constexpr auto operator<=>(unit, unit) = default;
  friend constexpr bool operator==(unit, unit) = default;

 private:
  double v_ = 0;
};

struct bytes_tag {};
struct seconds_tag {};
struct flops_tag {};
struct flop_rate_tag {};
struct bandwidth_tag {};

using bytes = unit<bytes_tag>;          ///< memory or message size, in bytes
using seconds = unit<seconds_tag>;      ///< wall time
using flops = unit<flops_tag>;          ///< floating-point operations
using flop_rate = unit<flop_rate_tag>;  ///< FLOP/s
using bandwidth = unit<bandwidth_tag>;  ///< bytes/s

constexpr bandwidth operator/(bytes b, seconds s) { return bandwidth(b.value() / s.value()); }
constexpr seconds operator/(bytes b, bandwidth w) { return seconds(b.value() / w.value()); }
constexpr bytes operator*(bandwidth w, seconds s) { return bytes(w.value() * s.value()); }
constexpr bytes operator*(seconds s, bandwidth w) { return w * s; }
constexpr seconds operator/(flops f, flop_rate r) { return seconds(f.value() / r.value()); }
constexpr flop_rate operator/(flops f, seconds s) { return flop_rate(f.value() / s.value()); }
constexpr flops operator*(flop_rate r, seconds s) { return flops(r.value() * s.value()); }
constexpr flops operator*(seconds s, flop_rate r) { return r * s; }

template <class Tag>
constexpr unit<Tag> max(unit<Tag> a, unit<Tag> b) { return a < b ? b : a; }
template <class Tag>
constexpr unit<Tag> min(unit<Tag> a, unit<Tag> b) { return b < a ? b : a; }

namespace literals {
constexpr bytes operator""_B(unsigned long long v) { return bytes(double(v)); }
constexpr bytes operator""_GB(long double v) { return bytes(double(v) * 1e9); }
constexpr bytes operator""_GB(unsigned long long v) { return bytes(double(v) * 1e9); }
constexpr bytes operator""_GiB(unsigned long long v) { return bytes(double(v) * 1073741824.0); }
constexpr bytes operator""_GiB(long double v) { return bytes(double(v) * 1073741824.0); }
constexpr seconds operator""_s(long double v) { return seconds(double(v)); }
constexpr seconds operator""_s(unsigned long long v) { return seconds(double(v)); }
// Dividing by an exact power of ten rounds once, so 5_us is the double nearest
// 5e-6, the value lowering gives `5 us`.
constexpr seconds operator""_us(unsigned long long v) { return seconds(double(v) / 1e6); }
constexpr bandwidth operator""_GBps(unsigned long long v) { return bandwidth(double(v) * 1e9); }
constexpr bandwidth operator""_GBps(long double v) { return bandwidth(double(v) * 1e9); }
constexpr bandwidth operator""_Gbitps(unsigned long long v) { return bandwidth(double(v) * 1e9 / 8); }
constexpr flop_rate operator""_TFLOPps(unsigned long long v) { return flop_rate(double(v) * 1e12); }
constexpr flop_rate operator""_TFLOPps(long double v) { return flop_rate(double(v) * 1e12); }
// Additions (embedded DSL): the units of the .dtp language.
constexpr bytes operator""_MiB(unsigned long long v) { return bytes(double(v) * 1048576.0); }
constexpr bytes operator""_TiB(unsigned long long v) { return bytes(double(v) * 1099511627776.0); }
constexpr bytes operator""_MB(unsigned long long v) { return bytes(double(v) * 1e6); }
constexpr bytes operator""_TB(unsigned long long v) { return bytes(double(v) * 1e12); }
constexpr seconds operator""_ms(unsigned long long v) { return seconds(double(v) / 1e3); }
constexpr seconds operator""_ms(long double v) { return seconds(double(v) / 1e3); }
constexpr seconds operator""_us(long double v) { return seconds(double(v) / 1e6); }
constexpr seconds operator""_ns(unsigned long long v) { return seconds(double(v) / 1e9); }
constexpr bandwidth operator""_MBps(unsigned long long v) { return bandwidth(double(v) * 1e6); }
constexpr bandwidth operator""_TBps(unsigned long long v) { return bandwidth(double(v) * 1e12); }
constexpr bandwidth operator""_TBps(long double v) { return bandwidth(double(v) * 1e12); }
constexpr bandwidth operator""_Gbitps(long double v) { return bandwidth(double(v) * 1e9 / 8); }
constexpr bandwidth operator""_Tbitps(unsigned long long v) { return bandwidth(double(v) * 1e12 / 8); }
constexpr flop_rate operator""_GFLOPps(unsigned long long v) { return flop_rate(double(v) * 1e9); }
constexpr flop_rate operator""_PFLOPps(unsigned long long v) { return flop_rate(double(v) * 1e15); }
constexpr flop_rate operator""_PFLOPps(long double v) { return flop_rate(double(v) * 1e15); }
}  // namespace literals

/// Human formatting, each with its unit:
/// bytes in binary units with one decimal ("74.0 GiB", "512.0 MiB", "12 B"),
/// seconds with three significant digits in s/ms/us ("1.96 s", "12.3 ms"),
/// rates and FLOPs with three significant digits and an SI prefix
/// ("989 TFLOP/s", "12.5 GB/s", "1.23 PFLOP").
std::string to_string(bytes v);
std::string to_string(seconds v);
std::string to_string(flops v);
std::string to_string(flop_rate v);
std::string to_string(bandwidth v);
/// Three significant digits, without trailing exponent noise ("1.96", "118", "0.0312").
std::string three_digits(double v);
/// A count with thousands separators ("12,288"): the language's own.
using dsl::grouped;
/// A count and its noun, plural unless one ("1 GPU", "64 candidates").
std::string counted(std::int64_t n, std::string_view noun);

}  // namespace dtplan::planner

template <class Tag>
struct fmt::formatter<dtplan::planner::unit<Tag>> : fmt::formatter<std::string> {
  template <class Ctx>
  auto format(dtplan::planner::unit<Tag> v, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(dtplan::planner::to_string(v), ctx);
  }
};
