# ctest install_consumer: installs the build tree into a fresh prefix
# (WORK_DIR/home/hplvk: $HOME/hplvk for a fake HOME), builds and runs
# README.md's example exactly as printed there (cmake/test_readme.sh: the
# pkg-config build run with LD_LIBRARY_PATH, the rpath build run without it,
# and its kernel compiled offline with glslc against the installed
# <hplvk.glsl>), then builds tests/consumer against the prefix twice, with
# find_package(hplvk) and with pkg-config, and runs both programs, which also
# run that offline-compiled kernel.
#
#
# With -DMPI_CONSUMER_DIR (hplvk built with MPI): also checks that
# hplvk_mpi is installed and builds tests/consumer_mpi against the prefix
# with find_package(hplvk COMPONENTS mpi) and with pkg-config (hplvk-mpi),
# and runs both under MPIEXEC at 2 ranks. Without it: checks that
# find_package(hplvk COMPONENTS mpi) fails cleanly, naming the missing MPI.
#
#   cmake -DBUILD_DIR=... -DCONSUMER_DIR=... -DWORK_DIR=... -DC_COMPILER=...
#         -DPKG_CONFIG=... -DGLSLC=... -DREADME=... [-DGENERATOR=...]
#         [-DMPI_CONSUMER_DIR=... -DMPIEXEC=... -DMPIEXEC_NUMPROC_FLAG=...]
#         [-DNO_MPI_CONSUMER_DIR=...] -P test_install.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR CONSUMER_DIR WORK_DIR C_COMPILER GLSLC README)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
        message(FATAL_ERROR "test_install.cmake: -D${var}=... is required")
    endif()
endforeach()

function(run what)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "install_consumer: ${what} failed (${rc}): ${ARGN}")
    endif()
endfunction()

set(home "${WORK_DIR}/home")
set(prefix "${home}/hplvk")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

message(STATUS "== install into ${prefix}")
run("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

# Where the library went (lib/ or lib/<multiarch>/, per GNUInstallDirs).
file(GLOB_RECURSE sonames "${prefix}/*/libhplvk.so")
list(LENGTH sonames n)
if(NOT n EQUAL 1)
    message(FATAL_ERROR "install_consumer: expected one libhplvk.so under ${prefix}, found: ${sonames}")
endif()
get_filename_component(libdir "${sonames}" DIRECTORY)
foreach(f "${prefix}/include/hplvk.h" "${prefix}/include/hplvk_transport.h" "${prefix}/include/hplvk.glsl"
          "${libdir}/pkgconfig/hplvk.pc"
          "${libdir}/cmake/hplvk/hplvkConfig.cmake" "${libdir}/cmake/hplvk/hplvkConfigVersion.cmake")
    if(NOT EXISTS "${f}")
        message(FATAL_ERROR "install_consumer: ${f} was not installed")
    endif()
endforeach()
if(NOT EXISTS "${libdir}/libhplvk.so.0")
    message(FATAL_ERROR "install_consumer: the soname link libhplvk.so.0 was not installed")
endif()

if(NOT PKG_CONFIG)
    message(FATAL_ERROR "install_consumer: pkg-config not found (apt-get install pkg-config)")
endif()

# 1. README.md's example, as printed there (leaves readme/saxpy.spv).
message(STATUS "== README.md's example")
set(spv "${WORK_DIR}/readme/saxpy.spv")
run("README.md's example" "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH --unset=PKG_CONFIG_PATH
    "HOME=${home}" "CC=${C_COMPILER}" "PKG_CONFIG=${PKG_CONFIG}" "GLSLC=${GLSLC}" "PCDIR=${libdir}/pkgconfig"
    sh "${CMAKE_CURRENT_LIST_DIR}/test_readme.sh" "${README}" "${WORK_DIR}/readme")

# 2. CMake package. CMake gives the program an rpath to the library: it runs
# without LD_LIBRARY_PATH.
message(STATUS "== consumer with find_package(hplvk)")
set(gen "")
if(GENERATOR)
    set(gen -G "${GENERATOR}")
endif()
run("configure consumer" "${CMAKE_COMMAND}" ${gen} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/cmake-build"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${C_COMPILER}" -DCMAKE_BUILD_TYPE=Release)
run("build consumer" "${CMAKE_COMMAND}" --build "${WORK_DIR}/cmake-build")
run("run consumer (CMake)" "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${WORK_DIR}/cmake-build/consumer"
    "${spv}")

# 3. pkg-config, as README.md says for a non-system prefix (rpath): runs
# without LD_LIBRARY_PATH.
message(STATUS "== consumer with pkg-config")
# (No ';' in the shell text: it would split the CMake list of arguments.)
set(sh_cmd [["$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror "$1" $("$PKG_CONFIG" --cflags --libs hplvk) -Wl,-rpath,$("$PKG_CONFIG" --variable=libdir hplvk) -o "$2"]])
message(STATUS "PKG_CONFIG_PATH=${libdir}/pkgconfig ${C_COMPILER} consumer.c $(pkg-config --cflags --libs hplvk) -Wl,-rpath,$(pkg-config --variable=libdir hplvk)")
run("build consumer (pkg-config)" "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${libdir}/pkgconfig"
    "PKG_CONFIG=${PKG_CONFIG}" "CC=${C_COMPILER}"
    sh -c "${sh_cmd}" sh "${CONSUMER_DIR}/consumer.c" "${WORK_DIR}/pc-consumer")
run("run consumer (pkg-config)" "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${WORK_DIR}/pc-consumer" "${spv}")

# 4. hplvk_mpi, when built: its package component and its pkg-config file.
if(MPI_CONSUMER_DIR)
    foreach(f "${prefix}/include/hplvk_mpi.h" "${libdir}/libhplvk_mpi.so.0" "${libdir}/pkgconfig/hplvk-mpi.pc"
              "${libdir}/cmake/hplvk/hplvkMpiTargets.cmake")
        if(NOT EXISTS "${f}")
            message(FATAL_ERROR "install_consumer: ${f} was not installed")
        endif()
    endforeach()
    message(STATUS "== consumer_mpi with find_package(hplvk COMPONENTS mpi)")
    run("configure consumer_mpi" "${CMAKE_COMMAND}" ${gen} -S "${MPI_CONSUMER_DIR}" -B "${WORK_DIR}/cmake-build-mpi"
        "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${C_COMPILER}" -DCMAKE_BUILD_TYPE=Release)
    run("build consumer_mpi" "${CMAKE_COMMAND}" --build "${WORK_DIR}/cmake-build-mpi")
    run("run consumer_mpi (CMake)" "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH
        "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 "${WORK_DIR}/cmake-build-mpi/consumer_mpi")
    message(STATUS "== consumer_mpi with pkg-config (hplvk-mpi)")
    set(sh_cmd [["$CC" -std=c11 -Wall -Wextra -Werror "$1" $("$PKG_CONFIG" --cflags --libs hplvk-mpi) -Wl,-rpath,$("$PKG_CONFIG" --variable=libdir hplvk-mpi) -o "$2"]])
    run("build consumer_mpi (pkg-config)" "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${libdir}/pkgconfig"
        "PKG_CONFIG=${PKG_CONFIG}" "CC=${C_COMPILER}"
        sh -c "${sh_cmd}" sh "${MPI_CONSUMER_DIR}/consumer_mpi.c" "${WORK_DIR}/pc-consumer_mpi")
    run("run consumer_mpi (pkg-config)" "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH
        "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 "${WORK_DIR}/pc-consumer_mpi")
elseif(NO_MPI_CONSUMER_DIR)
    message(STATUS "== find_package(hplvk COMPONENTS mpi) without hplvk_mpi: fails cleanly")
    execute_process(COMMAND "${CMAKE_COMMAND}" ${gen} -S "${NO_MPI_CONSUMER_DIR}" -B "${WORK_DIR}/cmake-build-mpi"
                            "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(rc EQUAL 0 OR NOT out MATCHES "built without MPI")
        message(FATAL_ERROR "install_consumer: find_package(hplvk COMPONENTS mpi) of a build without MPI "
                            "should fail naming it (${rc}):\n${out}")
    endif()
endif()

message(STATUS "== install_consumer: README.md's example and the consumers passed")
