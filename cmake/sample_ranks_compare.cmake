# cmake -DMPIEXEC=<mpiexec;-n;k;preflags...> -DPROGRAM=<exe> [-DARGS=<args>]
#       [-DPOSTFLAGS=<...>] -DRANKS=<k> -DDEVICES_ONE=<HPLVK_DEVICES>
#       -DDEVICES_RANK=<HPLVK_DEVICES> [-DPROGRAM_ONE=<exe>] -P sample_ranks_compare.cmake
# A sample over MPI ranks against the same sample in one process with the
# same devices (samples/CMakeLists.txt, hplvk_sample_ranks_test): PROGRAM
# ARGS alone with HPLVK_DEVICES=DEVICES_ONE, then under MPIEXEC with
# HPLVK_DEVICES=DEVICES_RANK on every rank (the ranks' devices in rank
# order are DEVICES_ONE's). PROGRAM_ONE (default PROGRAM) runs alone instead:
# an MPI twin against its sample (samples/twins/CMakeLists.txt). Passes when both exit 0, both RESULT lines say
# verified=yes, the job's alone ends with ranks=RANKS (one RESULT line: rank
# 0's), and the two print the same checksum lines (sample_ranks.h: the
# result's bytes; at least one). Both outputs are printed.
foreach(var MPIEXEC PROGRAM RANKS DEVICES_ONE DEVICES_RANK)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "sample_ranks_compare.cmake: -D${var}= is required")
    endif()
endforeach()

if(NOT PROGRAM_ONE)
    set(PROGRAM_ONE ${PROGRAM})
endif()

function(run_one label out_var)
    string(TIMESTAMP start "%s")
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    string(TIMESTAMP end "%s")
    math(EXPR took "${end} - ${start}")
    message("---- ${label}: exit ${rc} after ${took} s\n${out}${err}")
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${label}: exit ${rc}")
    endif()
    if(NOT out MATCHES "RESULT [^\n]* verified=yes")
        message(FATAL_ERROR "${label}: no RESULT line with verified=yes")
    endif()
    set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(checksums text out_var)
    string(REGEX MATCHALL "checksum: [0-9a-f]+ \\([^\n]*\\)" sums "${text}")
    set(${out_var} "${sums}" PARENT_SCOPE)
endfunction()

run_one("one process, HPLVK_DEVICES=${DEVICES_ONE}" one
        ${CMAKE_COMMAND} -E env HPLVK_DEVICES=${DEVICES_ONE} ${PROGRAM_ONE} ${ARGS})
run_one("${RANKS} ranks, HPLVK_DEVICES=${DEVICES_RANK} each" job
        ${CMAKE_COMMAND} -E env HPLVK_DEVICES=${DEVICES_RANK} ${MPIEXEC} ${PROGRAM} ${ARGS} ${POSTFLAGS})

string(REGEX MATCHALL "RESULT [^\n]*" results "${job}")
list(LENGTH results nresults)
if(NOT nresults EQUAL 1)
    message(FATAL_ERROR "the job printed ${nresults} RESULT lines, expected one (rank 0's)")
endif()
if(NOT results MATCHES " verified=yes ranks=${RANKS}$")
    message(FATAL_ERROR "the job's RESULT line does not end with verified=yes ranks=${RANKS}")
endif()
checksums("${one}" sums_one)
checksums("${job}" sums_job)
if(NOT sums_one)
    message(FATAL_ERROR "the one-process run printed no checksum line")
endif()
if(NOT sums_one STREQUAL sums_job)
    message(FATAL_ERROR "checksums differ:\n  one process: ${sums_one}\n  ${RANKS} ranks:   ${sums_job}")
endif()
list(LENGTH sums_one nsums)
message("sample_ranks_compare: ${nsums} checksum line(s) identical, one process and ${RANKS} ranks: ${sums_one}")
