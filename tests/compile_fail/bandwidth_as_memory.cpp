// The C++ API keeps units apart as the text does: a GPU's memory is an
// amount of bytes, and a bandwidth written there does not compile. Built
// twice by ctest: with DTPLAN_COMPILE_FAIL (the bandwidth) the build must
// fail; without it (80 GiB) it must succeed, so the failure is the units'.
#include "planner/lower/embedded.hpp"

int main() {
  using namespace dtplan::planner::edsl;
#ifdef DTPLAN_COMPILE_FAIL
  auto g = gpu("mine").memory(100_Gbitps);
#else
  auto g = gpu("mine").memory(80_GiB);
#endif
  (void)g;
  return 0;
}
