#include <catch2/catch.hpp>

#include <limits>

#include "planner/ir/units.hpp"

using namespace dtplan::planner;
using namespace dtplan::planner::literals;

TEST_CASE("units combine only in meaningful ways") {
  bytes b = 14_GB;
  bandwidth w = 100_Gbitps;
  CHECK(w.value() == 12.5e9);
  seconds t = b / w;
  CHECK(t.value() == Approx(1.12));
  CHECK((w * t).value() == Approx(14e9));
  flops f(989e12);
  CHECK((f / 989_TFLOPps).value() == Approx(1.0));
  CHECK(b / 7_GB == Approx(2.0));
  CHECK(max(1_s, 2_s) == 2_s);
  CHECK(80_GiB == bytes(85899345920.0));
}

TEST_CASE("every number a user sees carries its unit") {
  CHECK(to_string(bytes(118.4 * 1073741824.0)) == "118.4 GiB");
  CHECK(to_string(74_GiB) == "74.0 GiB");
  CHECK(to_string(bytes(512)) == "512 B");
  CHECK(to_string(bytes(25e6)) == "23.8 MiB");
  CHECK(to_string(seconds(1.96)) == "1.96 s");
  CHECK(to_string(seconds(0.0123)) == "12.3 ms");
  CHECK(to_string(seconds(5e-6)) == "5.00 us");
  CHECK(to_string(seconds(123.456)) == "123 s");
  CHECK(to_string(flop_rate(989e12)) == "989 TFLOP/s");
  CHECK(to_string(bandwidth(12.5e9)) == "12.5 GB/s");
  CHECK(to_string(flops(1.234e18)) == "1.23 EFLOP");
  CHECK(fmt::format("{}", 450_GBps) == "450 GB/s");
  CHECK(three_digits(9.996) == "10.0");
  CHECK(three_digits(0.03125) == "0.0312");
  CHECK(three_digits(0.001234) == "0.00123");
  // Past a thousandth, scientific notation rather than a run of zeros.
  CHECK(three_digits(0.0001234) == "1.23e-04");
  CHECK(to_string(seconds(1e-300)) == "1.00e-291 ns");
  CHECK(three_digits(123456789012345.0) == "123456789012345");
  CHECK(to_string(seconds(1.234e20)) == "1.23e+20 s");
  CHECK(to_string(bytes(1e40)) == "8.88e+24 PiB");
  CHECK(to_string(bytes(1e21)) == "888178.4 PiB");
  CHECK(to_string(bytes(2e21)) == "1776357 PiB");
}

TEST_CASE("counts read with thousands separators and a noun that agrees") {
  CHECK(grouped(0) == "0");
  CHECK(grouped(999) == "999");
  CHECK(grouped(12288) == "12,288");
  CHECK(grouped(16777216) == "16,777,216");
  CHECK(grouped(-1234567) == "-1,234,567");
  CHECK(grouped(std::numeric_limits<std::int64_t>::min()) == "-9,223,372,036,854,775,808");
  CHECK(counted(1, "GPU") == "1 GPU");
  CHECK(counted(0, "candidate") == "0 candidates");
  CHECK(counted(64, "candidate") == "64 candidates");
  CHECK(counted(4, "micro-batch") == "4 micro-batches");
  CHECK(counted(1, "micro-batch") == "1 micro-batch");
  CHECK(counted(2, "pass") == "2 passes");
}
