# The lanes of the test suite: every ctest test carries exactly one of the
# labels below (besides labels of its own such as api, unit, sample, install),
# assigned here by its name and nowhere else.
#
#   quick    the default run of every program: each tests/test_*.c and
#            tests/unit_*.c as it is registered first (the test named like
#            the program), each tests/mpi program at each of its rank
#            counts (<program>_ranks<k>), each sample as sample_<program> with no
#            arguments, and the checks that are no program of the library's
#            (layering, install_consumer, count_lines). Touches every
#            part of the library; `ctest -L quick -j2` is the short run.
#   variant  the same programs again under another environment (the
#            _staged, _transfer_lane, _copy_kernel... runs of
#            tests/CMakeLists.txt) or with other arguments (the samples
#            split over logical devices, at other sizes, and the runs of
#            bad arguments that each must reject).
#   long     the few longest bounded runs (HPLVK_LANE_LONG): the Release
#            build runs them; cmake/setup.sh leaves them out of the
#            sanitized build, which runs each of those programs in its
#            quick form (and variants) all the same.
#   bench    the benchmark programs run as tests (sample_bench_*): their
#            validation defaults and the argument sets that reach more.
#
# Use: the top-level CMakeLists.txt includes this file; each directory that
# adds tests calls hplvk_lanes() as its last line. A test that no rule below
# names fails the configure step (name it here), and so does a directory
# with tests that does not call hplvk_lanes() (checked when the top-level
# directory is done).
include_guard(GLOBAL)

set(HPLVK_LANES quick variant long bench)

# long: the longest bounded runs (Release, a quiet 2-core machine: 17 to 43 s
# each, against 10 s or less for any other program's default run).
set(HPLVK_LANE_LONG
    test_differential_long        # 500000 random operations, no validation
    sample_bench_plan_slice_cpu2  # bench_plan 600 4 1: every plan over two devices
    run_results_ci)               # run_results.sh -p ci: every sample, alone and beside a second device

# quick: tests that run no program of their own directory's kind.
set(HPLVK_LANE_QUICK
    layering          # cmake/check_layers.cmake on the library's objects
    readme_layout     # cmake/check_readme_layout.cmake: README's Layout against lib/
    results_plots     # samples/bench/plot_results.py: the results page's plots
    install_consumer  # install, build tests/consumer and README's example
    count_lines)      # samples/count_lines.sh

# variant: the suffixes of tests/CMakeLists.txt's hplvk_add_variant runs
# (<program>_<suffix>, <program> a target). Samples need none: any
# sample_<program>_<what> is a variant of sample_<program>.
set(HPLVK_LANE_VARIANT_SUFFIXES
    zero_copy_first transfer_lane staged copy_kernel copy_kernel_staged copy_kernel_lane copy_dma
    submit_thread)

# The lane of test <name> into <out> ("" when no rule names it).
function(hplvk_lane_of name out)
    set(lane "")
    # <program>_ranks<k> (matched apart: if() expands CMAKE_MATCH_1 before
    # it matches).
    set(mpi_program "")
    set(mpi_variant_of "")
    if(name MATCHES "^(.+)_ranks[0-9]+$")
        set(mpi_program "${CMAKE_MATCH_1}")
        if(mpi_program MATCHES "^(.+)_[^_]+$")
            set(mpi_variant_of "${CMAKE_MATCH_1}")
        endif()
    endif()
    if(name IN_LIST HPLVK_LANE_LONG)
        set(lane long)
    elseif(name IN_LIST HPLVK_LANE_QUICK)
        set(lane quick)
    elseif(name MATCHES "^sample_bench_")
        set(lane bench)
    elseif(name MATCHES "^(test|unit)_" AND TARGET ${name})
        # tests/: the program's own test, named like it, in the default
        # environment.
        set(lane quick)
    elseif(mpi_program AND TARGET "${mpi_program}")
        # tests/mpi/: the program under mpiexec at that many ranks
        # (hplvk_add_mpi_test, cmake/mpi_tests.cmake).
        set(lane quick)
    elseif(mpi_variant_of AND TARGET "${mpi_variant_of}")
        # <program>_<what>_ranks<k>: the same in other devices (a variant).
        set(lane variant)
    elseif(name MATCHES "^sample_(.+)$")
        # samples/: sample_<program> runs it with no arguments; any other
        # sample_<program>_<what> runs <program> with other arguments or
        # devices.
        set(rest "${CMAKE_MATCH_1}")
        if(TARGET "${rest}")
            set(lane quick)
        else()
            while(rest MATCHES "^(.+)_[^_]+$")
                set(rest "${CMAKE_MATCH_1}")
                if(TARGET "${rest}")
                    set(lane variant)
                    break()
                endif()
            endwhile()
        endif()
    else()
        foreach(suffix IN LISTS HPLVK_LANE_VARIANT_SUFFIXES)
            string(LENGTH "_${suffix}" n)
            string(LENGTH "${name}" len)
            if(len GREATER n)
                math(EXPR cut "${len} - ${n}")
                string(SUBSTRING "${name}" 0 ${cut} program)
                string(SUBSTRING "${name}" ${cut} -1 tail)
                if(tail STREQUAL "_${suffix}" AND TARGET "${program}")
                    set(lane variant)
                    break()
                endif()
            endif()
        endforeach()
    endif()
    set(${out} "${lane}" PARENT_SCOPE)
endfunction()

# Gives every test of the calling directory its lane (appended to its
# LABELS); a test with none, or with a lane label set by hand, is an error.
function(hplvk_lanes)
    get_property(tests DIRECTORY PROPERTY TESTS)
    set(missing "")
    foreach(name IN LISTS tests)
        hplvk_lane_of(${name} lane)
        if(lane STREQUAL "")
            list(APPEND missing ${name})
            continue()
        endif()
        get_property(labels TEST ${name} PROPERTY LABELS)
        foreach(other IN LISTS HPLVK_LANES)
            if(other IN_LIST labels)
                message(FATAL_ERROR "test ${name} already has the lane label ${other}: lanes are assigned in cmake/lanes.cmake only")
            endif()
        endforeach()
        set_property(TEST ${name} APPEND PROPERTY LABELS ${lane})
        if(lane STREQUAL "long")
            # ctest -j starts the costliest first (until it has timings of
            # its own, Testing/Temporary/CTestCostData.txt): a long run
            # started last would run alone at the end, a core idle.
            set_property(TEST ${name} PROPERTY COST 1000)
        endif()
    endforeach()
    if(missing)
        list(JOIN missing ", " missing)
        message(FATAL_ERROR "tests with no lane (quick, variant, long or bench): ${missing}; "
                            "name them in cmake/lanes.cmake")
    endif()
    list(LENGTH tests count)
    set_property(GLOBAL APPEND PROPERTY HPLVK_LANES_DONE "${CMAKE_CURRENT_SOURCE_DIR}=${count}")
endfunction()

# At the end of the top-level directory: every directory that adds tests
# called hplvk_lanes() after its last add_test.
function(_hplvk_lanes_check)
    get_property(done GLOBAL PROPERTY HPLVK_LANES_DONE)
    set(dirs "${PROJECT_SOURCE_DIR}")
    set(bad "")
    while(dirs)
        list(POP_FRONT dirs dir)
        get_property(sub DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
        list(APPEND dirs ${sub})
        get_property(tests DIRECTORY "${dir}" PROPERTY TESTS)
        list(LENGTH tests count)
        if(count GREATER 0 AND NOT "${dir}=${count}" IN_LIST done)
            file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${dir}")
            list(APPEND bad "${rel}")
        endif()
    endwhile()
    if(bad)
        list(JOIN bad ", " bad)
        message(FATAL_ERROR "${bad}: tests added after hplvk_lanes() or no call to it; "
                            "end the directory's CMakeLists.txt with hplvk_lanes() (cmake/lanes.cmake)")
    endif()
endfunction()
cmake_language(DEFER DIRECTORY "${PROJECT_SOURCE_DIR}" CALL _hplvk_lanes_check)
