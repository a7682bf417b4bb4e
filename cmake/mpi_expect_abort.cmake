# cmake -DMPIEXEC=<mpiexec;-n;k;preflags...> -DPROGRAM=<exe> [-DPOSTFLAGS=<...>]
#       -DMESSAGE=<regex> -DLIMIT=<seconds> -P mpi_expect_abort.cmake
# A job that must end by itself, badly: passes when MPIEXEC PROGRAM
# POSTFLAGS exits non-zero within LIMIT seconds (a hang past it fails, and
# so does mpiexec itself dying of a signal) and its output (stdout and
# stderr together) matches MESSAGE. The output is printed either way.
foreach(var MPIEXEC PROGRAM MESSAGE LIMIT)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "mpi_expect_abort.cmake: -D${var}= is required")
    endif()
endforeach()
string(TIMESTAMP start "%s")
execute_process(COMMAND ${MPIEXEC} ${PROGRAM} ${POSTFLAGS}
                TIMEOUT ${LIMIT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(TIMESTAMP end "%s")
math(EXPR took "${end} - ${start}")
message("${out}")
message("mpi_expect_abort: exit ${rc} after ${took} s (limit ${LIMIT} s)")
if(NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "the job did not end by itself within ${LIMIT} s, or mpiexec died: ${rc}")
endif()
if(rc EQUAL 0)
    message(FATAL_ERROR "mpiexec exited 0: the job was expected to fail")
endif()
if(NOT out MATCHES "${MESSAGE}")
    message(FATAL_ERROR "mpiexec exited ${rc} but its output does not match \"${MESSAGE}\"")
endif()
