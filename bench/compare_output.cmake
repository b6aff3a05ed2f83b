# Runs COMMAND (a list) and fails unless its standard output equals FILE:
# a generated source that must be regenerated when the model changes.
execute_process(COMMAND ${COMMAND} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${COMMAND} failed (${rc})")
endif()
file(READ ${FILE} expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "${FILE} is out of date: regenerate it with `${COMMAND} > ${FILE}`")
endif()
