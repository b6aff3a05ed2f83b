// libFuzzer target: the input's bytes as a .dtp file through the whole
// pipeline (tests/fuzz/pipeline.hpp). Seeds: scripts/fuzz collects plans/,
// the catalog and the golden and CLI tests' inputs; dictionary:
// tests/fuzz/dtplan.dict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  dtplan::fuzz::run_pipeline(std::string_view(reinterpret_cast<char const*>(data), size));
  return 0;
}
