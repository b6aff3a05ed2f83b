# The fuzz targets without libFuzzer (tests/fuzz/replay_main.cpp): each runs
# its seeds, then mutants of them chosen by a fixed seed, so that both of
# scripts/test-all's passes run the targets' promises on the same inputs
# every time, the sanitizer pass under ASan and UBSan. Coverage-guided
# fuzzing, which finds new inputs, is scripts/fuzz's (clang, libFuzzer).
# Included from tests/CMakeLists.txt.

# fuzz_extreme reads its bytes through LLVM's header-only
# FuzzedDataProvider, which clang installs (scripts/deps.sh installs clang).
file(GLOB fuzzed_data_provider_dirs /usr/lib/llvm-*/lib/clang/*/include)
find_path(DTPLAN_FUZZED_DATA_PROVIDER_DIR fuzzer/FuzzedDataProvider.h HINTS ${fuzzed_data_provider_dirs})

set(fuzz_targets pipeline jobs)
set(fuzz_work ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
if(DTPLAN_FUZZED_DATA_PROVIDER_DIR)
  list(APPEND fuzz_targets extreme)
  configure_file(${DTPLAN_FUZZED_DATA_PROVIDER_DIR}/fuzzer/FuzzedDataProvider.h
                 ${fuzz_work}/include/fuzzer/FuzzedDataProvider.h COPYONLY)
else()
  message(STATUS "fuzz_replay_extreme not built: fuzzer/FuzzedDataProvider.h (clang) not found")
endif()
file(MAKE_DIRECTORY ${fuzz_work})
# The pipeline every target drives and the replaying main, compiled once for
# the three (each pass compiled them three times: some 30 s of two cores).
add_library(dtplan_fuzz_replay OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/pipeline.cpp
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay_main.cpp)
target_link_libraries(dtplan_fuzz_replay PUBLIC dtplan::codegen)
foreach(target IN LISTS fuzz_targets)
  add_executable(fuzz_replay_${target} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${target}.cpp)
  # Linked directly, an object library's objects are linked in.
  target_link_libraries(fuzz_replay_${target} PRIVATE dtplan_fuzz_replay)
  if(target STREQUAL "extreme")
    # The header alone: clang's include folder holds its own stddef.h, which GCC cannot read.
    target_include_directories(fuzz_replay_${target} SYSTEM PRIVATE ${fuzz_work}/include)
  endif()
  add_test(NAME fuzz:replay:${target}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay.sh $<TARGET_FILE:fuzz_replay_${target}> ${target}
                   ${fuzz_work} $<BOOL:${DTPLAN_SANITIZE}>)
  set_tests_properties(fuzz:replay:${target} PROPERTIES TIMEOUT 600 LABELS fuzz)
endforeach()

# The dictionaries scripts/fuzz hands libFuzzer: every entry in its syntax.
add_test(NAME fuzz:dictionaries
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/check_dicts.sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/dtplan.dict
                 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/jobs.dict)
set_tests_properties(fuzz:dictionaries PROPERTIES LABELS fuzz)
