# The library as a user gets it: installed and found with find_package
# (tests/install/), and its types rejecting a unit where another is
# expected at compile time (tests/compile_fail/, WILL_FAIL).
# Included from tests/CMakeLists.txt.
set(consumer_flags "")
if(DTPLAN_SANITIZE)
  set(consumer_flags "-fsanitize=address,undefined")
endif()
add_test(NAME install:find_package_consumer
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/consume.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR}
                 "${consumer_flags}")
set_tests_properties(install:find_package_consumer PROPERTIES LABELS install TIMEOUT 600)

file(GLOB compile_fail_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/*.cpp)
foreach(src IN LISTS compile_fail_sources)
  get_filename_component(name ${src} NAME_WE)
  foreach(variant IN ITEMS wrong right)
    set(target compile_fail_${name}_${variant})
    add_executable(${target} EXCLUDE_FROM_ALL ${src})
    target_link_libraries(${target} PRIVATE dtplan::planner)
    if(variant STREQUAL "wrong")
      target_compile_definitions(${target} PRIVATE DTPLAN_COMPILE_FAIL)
    endif()
    add_test(NAME compile_fail:${name}:${variant}
             COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target ${target})
    # One build of the tree at a time: ninja does not share a build directory.
    set_tests_properties(compile_fail:${name}:${variant} PROPERTIES LABELS compile_fail TIMEOUT 300
                         RESOURCE_LOCK dtplan_build_tree)
  endforeach()
  set_tests_properties(compile_fail:${name}:wrong PROPERTIES WILL_FAIL TRUE)
endforeach()
