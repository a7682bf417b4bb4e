# Tests run under mpiexec (needs FindMPI's MPIEXEC_* variables: the
# top-level CMakeLists.txt includes this file only when hplvk_mpi is built).
#
#   hplvk_add_mpi_test(NAME <name> RANKS <k> COMMAND <target> [<arg>...]
#                      [ENVIRONMENT <VAR=value>...] [LABELS <label>...]
#                      [TIMEOUT <seconds>])
#
# runs ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} <k> ${MPIEXEC_PREFLAGS}
# $<TARGET_FILE:target> <arg>... ${MPIEXEC_POSTFLAGS}, in the environment of
# every test (HPLVK_TEST_ENVIRONMENT) plus Open MPI's settings for this
# kind of machine (harmless under MPICH: it ignores OMPI_*): running as root,
# more ranks than cores, no single-copy shared memory (containers without
# ptrace rights), yielding when idle (2 cores); then ENVIRONMENT. LABELS
# adds to "mpi"; the lane comes from cmake/lanes.cmake (never give it here).
# TIMEOUT defaults to HPLVK_TEST_TIMEOUT.
include_guard(GLOBAL)

# A global property, not a variable: the guard above includes this file
# once, into whichever directory comes first, and every directory reads it.
set_property(GLOBAL PROPERTY HPLVK_MPI_TEST_ENVIRONMENT
    "OMPI_ALLOW_RUN_AS_ROOT=1"
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    "OMPI_MCA_rmaps_base_oversubscribe=1"
    "OMPI_MCA_btl_vader_single_copy_mechanism=none"
    "OMPI_MCA_mpi_yield_when_idle=1")
if(HPLVK_SANITIZE)
    # Open MPI leaks past MPI_Finalize from plugins it has unloaded by then
    # (their frames have no module for tests/lsan.supp to match), and a
    # full unwind to reach its libraries deadlocks in libgcc against
    # LLVM's JIT: the MPI tests run under ASan and UBSan without the leak
    # check. The library's code they run is leak-checked by the tests of
    # one process (same engine) and tests/unit_rank_state.
    set_property(GLOBAL APPEND PROPERTY HPLVK_MPI_TEST_ENVIRONMENT
        "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=0:print_stacktrace=1:detect_stack_use_after_return=1:check_initialization_order=1")
endif()

function(hplvk_add_mpi_test)
    cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;RANKS;TIMEOUT" "COMMAND;ENVIRONMENT;LABELS")
    if(arg_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "hplvk_add_mpi_test: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
    endif()
    if(NOT arg_NAME OR NOT arg_RANKS OR NOT arg_COMMAND)
        message(FATAL_ERROR "hplvk_add_mpi_test: NAME, RANKS and COMMAND are required")
    endif()
    if(NOT arg_RANKS MATCHES "^[1-9][0-9]*$")
        message(FATAL_ERROR "hplvk_add_mpi_test(${arg_NAME}): RANKS ${arg_RANKS} is not a positive number")
    endif()
    list(POP_FRONT arg_COMMAND target)
    if(NOT TARGET ${target})
        message(FATAL_ERROR "hplvk_add_mpi_test(${arg_NAME}): COMMAND ${target} is not a target")
    endif()
    if(NOT arg_TIMEOUT)
        set(arg_TIMEOUT ${HPLVK_TEST_TIMEOUT})
    endif()
    add_test(NAME ${arg_NAME}
        COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${arg_RANKS} ${MPIEXEC_PREFLAGS}
                $<TARGET_FILE:${target}> ${arg_COMMAND} ${MPIEXEC_POSTFLAGS})
    set(labels mpi ${arg_LABELS})
    get_property(mpi_env GLOBAL PROPERTY HPLVK_MPI_TEST_ENVIRONMENT)
    set(env ${HPLVK_TEST_ENVIRONMENT} ${mpi_env} ${arg_ENVIRONMENT})
    set_tests_properties(${arg_NAME} PROPERTIES
        LABELS "${labels}"
        TIMEOUT ${arg_TIMEOUT}
        ENVIRONMENT "${env}"
        FAIL_REGULAR_EXPRESSION "${HPLVK_VALIDATION_FAIL_REGEX}")
endfunction()

#   hplvk_add_mpi_abort_test(NAME <name> RANKS <k> COMMAND <target> [<arg>...]
#                            MESSAGE <regex> [LIMIT <seconds>]
#                            [ENVIRONMENT <VAR=value>...] [LABELS <label>...])
#
# A job that must fail as a whole (a rank dies or exits): the same mpiexec
# command line and environment as hplvk_add_mpi_test, run by
# cmake/mpi_expect_abort.cmake, which passes when mpiexec exits non-zero
# within LIMIT seconds (default 30) with output matching MESSAGE. The
# test's own TIMEOUT is LIMIT + 30 s.
function(hplvk_add_mpi_abort_test)
    cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;RANKS;MESSAGE;LIMIT" "COMMAND;ENVIRONMENT;LABELS")
    if(arg_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "hplvk_add_mpi_abort_test: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
    endif()
    if(NOT arg_NAME OR NOT arg_RANKS OR NOT arg_COMMAND OR NOT arg_MESSAGE)
        message(FATAL_ERROR "hplvk_add_mpi_abort_test: NAME, RANKS, COMMAND and MESSAGE are required")
    endif()
    if(NOT arg_LIMIT)
        set(arg_LIMIT 30)
    endif()
    list(POP_FRONT arg_COMMAND target)
    if(NOT TARGET ${target})
        message(FATAL_ERROR "hplvk_add_mpi_abort_test(${arg_NAME}): COMMAND ${target} is not a target")
    endif()
    set(mpiexec ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${arg_RANKS} ${MPIEXEC_PREFLAGS})
    set(program $<TARGET_FILE:${target}> ${arg_COMMAND})
    string(REPLACE ";" "$<SEMICOLON>" mpiexec "${mpiexec}")
    string(REPLACE ";" "$<SEMICOLON>" program "${program}")
    string(REPLACE ";" "$<SEMICOLON>" postflags "${MPIEXEC_POSTFLAGS}")
    add_test(NAME ${arg_NAME}
        COMMAND ${CMAKE_COMMAND} "-DMPIEXEC=${mpiexec}" "-DPROGRAM=${program}" "-DPOSTFLAGS=${postflags}"
                "-DMESSAGE=${arg_MESSAGE}" "-DLIMIT=${arg_LIMIT}"
                -P "${PROJECT_SOURCE_DIR}/cmake/mpi_expect_abort.cmake")
    math(EXPR timeout "${arg_LIMIT} + 30")
    set(labels mpi ${arg_LABELS})
    get_property(mpi_env GLOBAL PROPERTY HPLVK_MPI_TEST_ENVIRONMENT)
    set(env ${HPLVK_TEST_ENVIRONMENT} ${mpi_env} ${arg_ENVIRONMENT})
    set_tests_properties(${arg_NAME} PROPERTIES
        LABELS "${labels}"
        TIMEOUT ${timeout}
        ENVIRONMENT "${env}"
        FAIL_REGULAR_EXPRESSION "${HPLVK_VALIDATION_FAIL_REGEX}")
endfunction()
