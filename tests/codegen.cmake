# The code generators end to end: for each in-memory fixture and each fixed
# strategy of every plans/*.dtp, emit the bundle, render the diagram, check
# the launch scripts, build the skeleton (CMake + nvcc for every plan but the
# NVL72 one and two fixtures, the quick host-only --dry-run build for the
# others) and
# compare its --dry-run layout with planner::rank_layout.
# Included from tests/CMakeLists.txt.
add_executable(codegen_fixture ${CMAKE_CURRENT_SOURCE_DIR}/codegen/codegen_fixture.cpp)
target_include_directories(codegen_fixture PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/codegen)
target_link_libraries(codegen_fixture PRIVATE dtplan::codegen)

set(codegen_work ${CMAKE_CURRENT_BINARY_DIR}/codegen)
file(MAKE_DIRECTORY ${codegen_work})
set(codegen_cases all_axes:full 7b_2node:dry tp4_pp2:dry hsdp:dry 70b_1024:dry
    # 70B with cp 8 across nodes (the gradient group is dp x cp = 16) and an
    # fp8 plan, whose skeleton must build its cuBLASLt path.
    ${CMAKE_CURRENT_SOURCE_DIR}/codegen/plans/70b_cp8.dtp:cp8:dry
    ${CMAKE_CURRENT_SOURCE_DIR}/codegen/plans/8b_fp8.dtp:fp8_interleaved:full)
file(GLOB codegen_plans CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/plans/*.dtp)
# Every plan's skeleton is compiled and linked with nvcc (its first fixed
# strategy; the others take the host-only --dry-run build).
# The NVL72 plan's skeleton takes the host-only build: what its program
# does (every parallel axis, an interleaved pipeline, fp8 GEMMs through
# cuBLASLt) the all_axes and 8b_fp8 fixtures build with nvcc, its nodes of
# trays the launch kit runs (the nvl72 fixture), and each nvcc build costs
# the suite about 25 s of CI's 20 minutes.
set(dry_plans 405b_gb200_nvl72)
foreach(plan IN LISTS codegen_plans)
  get_filename_component(stem ${plan} NAME_WE)
  if(stem IN_LIST dry_plans)
    list(APPEND codegen_cases "${plan}:dry")
  else()
    list(APPEND codegen_cases "${plan}:full")
  endif()
endforeach()
foreach(entry IN LISTS codegen_cases)
  string(REGEX MATCH "^(.*):(full|dry)$" unused ${entry})
  set(fixture ${CMAKE_MATCH_1})
  set(mode ${CMAKE_MATCH_2})
  get_filename_component(test_name ${fixture} NAME)
  string(REPLACE ":" "_" test_name ${test_name})
  add_test(NAME codegen:bundle:${test_name}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/codegen/run_bundle.sh $<TARGET_FILE:codegen_fixture> ${fixture}
                   ${codegen_work} ${mode})
  # The nvcc builds are labelled so the sanitizer pass can skip them: they
  # test the generated program, which the sanitizers do not instrument.
  if(mode STREQUAL "full")
    set_tests_properties(codegen:bundle:${test_name} PROPERTIES TIMEOUT 600 LABELS "codegen;nvcc")
  else()
    set_tests_properties(codegen:bundle:${test_name} PROPERTIES TIMEOUT 600 LABELS codegen)
  endif()
endforeach()

# The launch scripts under fake srun, mpirun and cmake (tests/codegen/launch.sh).
add_test(NAME codegen:launch_kit
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/codegen/launch.sh $<TARGET_FILE:codegen_fixture> ${codegen_work})
set_tests_properties(codegen:launch_kit PROPERTIES TIMEOUT 120 LABELS codegen)

# Hostile paths and names: the generated files stay data (tests/codegen/hostile.sh).
add_test(NAME codegen:hostile
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/codegen/hostile.sh $<TARGET_FILE:dtplan> $<TARGET_FILE:codegen_fixture>
                 ${PROJECT_SOURCE_DIR} ${codegen_work})
set_tests_properties(codegen:hostile PROPERTIES TIMEOUT 300 LABELS "codegen;nvcc")
