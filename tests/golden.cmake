# Golden tests through the driver: each input beside its expected stderr.
# `DTPLAN_REBASE=1 ctest -L golden` rewrites the expected files after a
# deliberate change; review the diff before committing it.
function(dtplan_golden_dir dir status)
  file(GLOB inputs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/golden/${dir}/*.dtp)
  foreach(input IN LISTS inputs)
    get_filename_component(stem ${input} NAME_WE)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${input})
    add_test(NAME golden:${dir}/${stem}
      COMMAND ${CMAKE_COMMAND} -DDTPLAN=$<TARGET_FILE:dtplan> -DINPUT=${rel}
              -DEXPECTED=${PROJECT_SOURCE_DIR}/tests/golden/${dir}/${stem}.stderr -DSTATUS=${status}
              -P ${PROJECT_SOURCE_DIR}/tests/run_golden.cmake
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(golden:${dir}/${stem} PROPERTIES LABELS golden TIMEOUT 30)
  endforeach()
endfunction()
dtplan_golden_dir(errors 2)
dtplan_golden_dir(illegal 1)

# Every plan runs as a test: checked and costed, searched, printed as JSON.
file(GLOB plans CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/plans/*.dtp)
foreach(plan IN LISTS plans)
  get_filename_component(stem ${plan} NAME_WE)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${plan})
  add_test(NAME plan:${stem}
    COMMAND ${CMAKE_COMMAND} -DDTPLAN=$<TARGET_FILE:dtplan> -DINPUT=${rel}
            -P ${PROJECT_SOURCE_DIR}/tests/run_plan.cmake
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(plan:${stem} PROPERTIES LABELS plans TIMEOUT 300)
endforeach()

file(GLOB cli_tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/cli/*.sh)
foreach(script IN LISTS cli_tests)
  get_filename_component(stem ${script} NAME_WE)
  add_test(NAME cli:${stem} COMMAND bash ${script} $<TARGET_FILE:dtplan>
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli:${stem} PROPERTIES LABELS cli TIMEOUT 300)
endforeach()
