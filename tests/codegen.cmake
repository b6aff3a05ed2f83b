# The code generators end to end: for each in-memory fixture and each fixed
# strategy of every plans/*.dtp, emit the bundle, render the diagram, check
# the launch scripts, build the skeleton and compare its --dry-run layout
# with planner::rank_layout. The skeleton's code is the same for every
# plan (no #if or if constexpr on what the plan says); plans differ only in
# its constant tables. So CMake + nvcc builds it where the tables exercise
# something apart: the all_axes fixture (every parallel axis), the fp8
# interleaved fixture (cuBLASLt's fp8 path), the README's first plan and
# the Megatron-Core one; the other cases take the host-only --dry-run
# build (g++, the same source and tables without the CUDA parts), which
# catches what a table can break. Each nvcc build costs the suite about
# 25 s of CI's 20 minutes.
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
    ${CMAKE_CURRENT_SOURCE_DIR}/codegen/plans/8b_fp8.dtp:fp8_interleaved:full
    # NVFP4 on B200: the same source as every build (its fp4 GEMM path is
    # compiled by each nvcc build), this plan's tables host-only.
    ${CMAKE_CURRENT_SOURCE_DIR}/codegen/plans/8b_fp4.dtp:fp4_tp2:dry
    # A mixture with dense layers among its mixtures: the dense layers'
    # tables beside the mixtures'.
    ${CMAKE_CURRENT_SOURCE_DIR}/codegen/plans/interleaved_moe.dtp:interleaved:dry
    # Multi-latent attention: ten GEMMs a layer, query/key and value heads
    # of their own widths.
    ${CMAKE_CURRENT_SOURCE_DIR}/codegen/plans/latent_moe.dtp:latent:dry)
file(GLOB codegen_plans CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/plans/*.dtp)
# The plans whose first fixed strategy's skeleton nvcc builds; every other
# strategy, and every other plan, takes the host-only build.
set(nvcc_plans 7b_2node gpt3_175b_megatron_h100)
foreach(plan IN LISTS codegen_plans)
  get_filename_component(stem ${plan} NAME_WE)
  if(stem IN_LIST nvcc_plans)
    list(APPEND codegen_cases "${plan}:full")
  else()
    list(APPEND codegen_cases "${plan}:dry")
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
