#include "planner/search/divisors.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>

namespace dtplan::planner {

namespace {

// n's prime factors with multiplicity, any positive 64-bit n, in
// microseconds: trial division by small primes, then a Miller-Rabin test
// (deterministic for 64 bits with these bases) and Pollard's rho with
// Brent's cycle detection for what is left. Trial division alone would take
// seconds for a large prime (a global_batch of 2^61 - 1) and d * d
// overflows near 2^63.
using u64 = std::uint64_t;
__extension__ using u128 = unsigned __int128;

u64 mul_mod(u64 a, u64 b, u64 m) { return static_cast<u64>(static_cast<u128>(a) * b % m); }

u64 pow_mod(u64 a, u64 e, u64 m) {
  u64 r = 1;
  for (a %= m; e; e >>= 1, a = mul_mod(a, a, m))
    if (e & 1) r = mul_mod(r, a, m);
  return r;
}

// Trial divisors, and Miller-Rabin's bases: with these twelve the test is
// exact for every 64-bit n.
constexpr std::array<u64, 12> small_primes{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};

// For n > 37 with no factor among small_primes.
bool is_prime(u64 n) {
  u64 d = n - 1;
  int s = 0;
  for (; d % 2 == 0; d /= 2) ++s;
  for (u64 a : small_primes) {
    u64 x = pow_mod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < s && composite; ++i) {
      x = mul_mod(x, x, n);
      if (x == n - 1) composite = false;
    }
    if (composite) return false;
  }
  return true;
}

// A non-trivial factor of the odd composite n (deterministic: the seeds
// are tried in order).
u64 rho_factor(u64 n) {
  for (u64 c = 1;; ++c) {
    auto f = [&](u64 x) { return (mul_mod(x, x, n) + c) % n; };
    u64 y = 2, x = 2, g = 1, q = 1, ys = 2;
    std::uint64_t r = 1;
    constexpr std::uint64_t batch = 128;
    while (g == 1) {
      x = y;
      for (std::uint64_t i = 0; i < r; ++i) y = f(y);
      for (std::uint64_t k = 0; k < r && g == 1; k += batch) {
        ys = y;
        for (std::uint64_t i = 0; i < std::min(batch, r - k); ++i) {
          y = f(y);
          q = mul_mod(q, x > y ? x - y : y - x, n);
        }
        g = std::gcd(q, n);
      }
      r *= 2;
    }
    if (g == n) {
      do {
        ys = f(ys);
        g = std::gcd(x > ys ? x - ys : ys - x, n);
      } while (g == 1);
    }
    if (g != n) return g;
  }
}

// The prime factors of n, none of them in small_primes.
void factor_large(u64 n, std::vector<u64>& primes) {
  if (n == 1) return;
  if (is_prime(n)) {
    primes.push_back(n);
    return;
  }
  u64 const d = rho_factor(n);
  factor_large(d, primes);
  factor_large(n / d, primes);
}

}  // namespace

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  if (n <= 0) return out;
  std::vector<u64> primes;
  auto rest = static_cast<u64>(n);
  for (u64 p : small_primes)
    for (; rest % p == 0; rest /= p) primes.push_back(p);
  factor_large(rest, primes);
  std::sort(primes.begin(), primes.end());
  out.push_back(1);
  for (std::size_t i = 0; i < primes.size();) {
    std::size_t j = i;
    while (j < primes.size() && primes[j] == primes[i]) ++j;
    std::size_t const before = out.size();
    std::int64_t power = 1;
    for (std::size_t k = i; k < j; ++k) {
      power *= static_cast<std::int64_t>(primes[i]);
      for (std::size_t m = 0; m < before; ++m) out.push_back(out[m] * power);
    }
    i = j;
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dtplan::planner
