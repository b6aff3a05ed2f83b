# The code generators end to end: for each in-memory fixture, emit the
# bundle, render the diagram, check the launch scripts, build the skeleton
# (CMake + nvcc for two fixtures, the host-only --dry-run build for the
# others) and compare its --dry-run layout with planner::rank_layout.
# Included from tests/CMakeLists.txt.
add_executable(codegen_fixture ${CMAKE_CURRENT_SOURCE_DIR}/codegen/codegen_fixture.cpp)
target_include_directories(codegen_fixture PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/codegen)
target_link_libraries(codegen_fixture PRIVATE dtplan::codegen)

set(codegen_work ${CMAKE_CURRENT_BINARY_DIR}/codegen)
file(MAKE_DIRECTORY ${codegen_work})
foreach(fixture_mode IN ITEMS 7b_2node:full all_axes:full tp4_pp2:dry hsdp:dry 70b_1024:dry)
  string(REPLACE ":" ";" parts ${fixture_mode})
  list(GET parts 0 fixture)
  list(GET parts 1 mode)
  add_test(NAME codegen:bundle:${fixture}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/codegen/run_bundle.sh $<TARGET_FILE:codegen_fixture> ${fixture}
                   ${codegen_work} ${mode})
  set_tests_properties(codegen:bundle:${fixture} PROPERTIES TIMEOUT 600 LABELS codegen)
endforeach()
