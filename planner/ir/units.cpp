#include "planner/ir/units.hpp"

#include <array>

namespace dtplan::planner {

std::string counted(std::int64_t n, std::string_view noun) {
  // English adds "es" after a sibilant: "2 micro-batches", not "micro-batchs".
  bool const sibilant = noun.ends_with("ch") || noun.ends_with("sh") || noun.ends_with('s') || noun.ends_with('x') ||
                        noun.ends_with('z');
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : sibilant ? "es" : "s");
}

std::string three_digits(double v) {
  if (v == 0 || !std::isfinite(v)) return fmt::format("{}", v);
  double mag = std::floor(std::log10(std::fabs(v)));
  // Three significant digits in fixed notation need 2 - mag decimals: past
  // a thousandth that is a string of zeros (1e-300 would print 293 of
  // them), and past 10^15 a string of digits no reader counts, so such a
  // figure is written in scientific notation instead.
  if (mag < -3 || mag >= 15) return fmt::format("{:.2e}", v);
  int decimals = std::max(0, 2 - static_cast<int>(mag));
  // Rounding can carry into a new digit (9.996 -> 10.0): recompute once.
  double rounded = std::round(v * std::pow(10.0, decimals)) / std::pow(10.0, decimals);
  if (rounded != 0 && std::floor(std::log10(std::fabs(rounded))) > mag)
    decimals = std::max(0, decimals - 1);
  return fmt::format("{:.{}f}", v, decimals);
}

std::string to_string(bytes v) {
  static constexpr std::array<char const*, 5> names{"KiB", "MiB", "GiB", "TiB", "PiB"};
  double x = v.value();
  if (std::fabs(x) < 1024) return fmt::format("{:.0f} B", x);
  std::size_t i = 0;
  x /= 1024;
  while (std::fabs(x) >= 1024 && i + 1 < names.size()) x /= 1024, ++i;
  // Past PiB the figure grows in digits: three significant ones from 10^6 on.
  if (std::fabs(x) >= 1e6) return fmt::format("{} {}", three_digits(x), names[i]);
  return fmt::format("{:.1f} {}", x, names[i]);
}

std::string to_string(seconds v) {
  double x = v.value();
  if (std::fabs(x) >= 1 || x == 0) return three_digits(x) + " s";
  if (std::fabs(x) >= 1e-3) return three_digits(x * 1e3) + " ms";
  if (std::fabs(x) >= 1e-6) return three_digits(x * 1e6) + " us";
  return three_digits(x * 1e9) + " ns";
}

namespace {
std::string si(double x, char const* suffix) {
  static constexpr std::array<std::pair<double, char const*>, 6> prefixes{
      {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "K"}}};
  for (auto [scale, p] : prefixes)
    if (std::fabs(x) >= scale) return fmt::format("{} {}{}", three_digits(x / scale), p, suffix);
  return fmt::format("{} {}", three_digits(x), suffix);
}
}  // namespace

std::string to_string(flops v) { return si(v.value(), "FLOP"); }
std::string to_string(flop_rate v) { return si(v.value(), "FLOP/s"); }
std::string to_string(bandwidth v) { return si(v.value(), "B/s"); }

}  // namespace dtplan::planner
