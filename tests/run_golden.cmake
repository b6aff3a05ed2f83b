# Runs dtplan on INPUT and compares its stderr with EXPECTED and its exit
# status with STATUS. With DTPLAN_REBASE=1 in the environment, rewrites EXPECTED.
execute_process(COMMAND ${DTPLAN} ${INPUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEFINED ENV{DTPLAN_REBASE} AND NOT "$ENV{DTPLAN_REBASE}" STREQUAL "0")
  file(WRITE ${EXPECTED} "${err}")
  message(STATUS "rewrote ${EXPECTED}")
endif()
if(NOT EXISTS ${EXPECTED})
  message(FATAL_ERROR "missing ${EXPECTED}; run with DTPLAN_REBASE=1 to create it. stderr was:\n${err}")
endif()
file(READ ${EXPECTED} want)
if(NOT err STREQUAL want)
  message(FATAL_ERROR "stderr of 'dtplan ${INPUT}' differs from ${EXPECTED}\n--- expected\n${want}--- got\n${err}---")
endif()
if(NOT rc EQUAL STATUS)
  message(FATAL_ERROR "'dtplan ${INPUT}' exited with ${rc}, expected ${STATUS}\n${err}")
endif()
