// libFuzzer target: a framework's job, as `--from` reads it
// (tests/fuzz/pipeline.hpp, run_job). Seeds: scripts/fuzz collects the
// published jobs of tests/data/published and the golden jobs, each behind
// the byte that picks its format.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  dtplan::fuzz::run_job(std::string_view(reinterpret_cast<char const*>(data), size));
  return 0;
}
