# cmake -DPROGRAM=<exe> -DARGS=<a;b;...> -DMESSAGE=<text> -P expect_failure.cmake
# Passes when PROGRAM exits non-zero (but not by a signal: a crash fails)
# and its output contains MESSAGE.
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}${err}" "${MESSAGE}" at)
if(NOT rc MATCHES "^[0-9]+$" OR rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "expected a non-zero exit and \"${MESSAGE}\"; got exit ${rc}:\n${out}${err}")
endif()
