# Dependencies of hplvk, found as this machine (Debian bookworm) ships them.
#
# Defines:
#   Vulkan::Vulkan            the loader (linked dynamically) and headers
#   Threads::Threads
#   hplvk_shaderc_static      INTERFACE: include directory of shaderc
#   hplvk_spirv_cross_static  INTERFACE: include directory of SPIRV-Cross
#   HPLVK_STATIC_ARCHIVES     full paths of the static archives of shaderc,
#                             glslang, SPIRV-Tools and SPIRV-Cross, in link
#                             order (link them as direct items, then libstdc++:
#                             CMake would put an INTERFACE target's items last)
#   HPLVK_SHADERC_ARCHIVES    the shaderc/glslang/SPIRV-Tools part of
#                             HPLVK_STATIC_ARCHIVES, same order (for programs
#                             that compile GLSL themselves without hplvk)
#   HPLVK_GLSLC               path of glslc (build-time shader compiler)
#
# Debian's libshaderc.so.1 leaves glslang's symbols undefined, so shaderc is
# linked from its static archives; SPIRV-Cross too, so that the library needs
# nothing at run time but libvulkan.so.1 and libc (DESIGN.md section 5).

include_guard(GLOBAL)

find_package(Vulkan REQUIRED)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

set(_hplvk_dep_hint "On Debian/Ubuntu run cmake/setup.sh as root, or: apt-get install libvulkan-dev mesa-vulkan-drivers glslc libshaderc-dev glslang-dev spirv-tools libspirv-cross-c-shared-dev")

# hplvk_static_archives(<target> HEADER <header> ARCHIVES <name>[?]...)
# Finds lib<name>.a for every name (a trailing '?' marks an optional one) and
# makes <target> an INTERFACE library carrying the header's include directory;
# appends the archives to HPLVK_STATIC_ARCHIVES in the order given (order
# matters for static archives).
function(hplvk_static_archives target)
    cmake_parse_arguments(PARSE_ARGV 1 A "" "HEADER" "ARCHIVES")
    set(paths "")
    set(missing "")
    foreach(entry IN LISTS A_ARCHIVES)
        string(REGEX REPLACE "\\?$" "" name "${entry}")
        find_library(HPLVK_LIB_${name} NAMES lib${name}.a)
        mark_as_advanced(HPLVK_LIB_${name})
        if(HPLVK_LIB_${name})
            list(APPEND paths "${HPLVK_LIB_${name}}")
        elseif(name STREQUAL entry)
            list(APPEND missing "lib${name}.a")
        endif()
    endforeach()
    if(missing)
        message(FATAL_ERROR "hplvk: static archives not found: ${missing}\n${_hplvk_dep_hint}")
    endif()
    if(A_HEADER)
        find_path(HPLVK_INC_${target} NAMES ${A_HEADER})
        mark_as_advanced(HPLVK_INC_${target})
        if(NOT HPLVK_INC_${target})
            message(FATAL_ERROR "hplvk: header ${A_HEADER} not found\n${_hplvk_dep_hint}")
        endif()
    endif()
    add_library(${target} INTERFACE)
    if(A_HEADER)
        target_include_directories(${target} INTERFACE "${HPLVK_INC_${target}}")
    endif()
    set(HPLVK_STATIC_ARCHIVES ${HPLVK_STATIC_ARCHIVES} ${paths} PARENT_SCOPE)
    message(STATUS "hplvk: ${target}: ${paths}")
endfunction()

# glslang is linked through shaderc_combined's references to
# MachineIndependent & co; libglslang.a itself (the glslang_* C API) and
# spirv-cross-util are not needed today, but are harmless when present.
set(HPLVK_STATIC_ARCHIVES "")
hplvk_static_archives(hplvk_shaderc_static
    HEADER shaderc/shaderc.h
    ARCHIVES shaderc_combined glslang? MachineIndependent GenericCodeGen OSDependent OGLCompiler SPIRV
             SPIRV-Tools-opt SPIRV-Tools)
set(HPLVK_SHADERC_ARCHIVES ${HPLVK_STATIC_ARCHIVES})
hplvk_static_archives(hplvk_spirv_cross_static
    HEADER spirv_cross/spirv_cross_c.h
    ARCHIVES spirv-cross-c spirv-cross-glsl spirv-cross-hlsl spirv-cross-msl spirv-cross-cpp spirv-cross-reflect
             spirv-cross-util? spirv-cross-core)

find_program(HPLVK_GLSLC NAMES glslc)
if(NOT HPLVK_GLSLC OR NOT EXISTS "${HPLVK_GLSLC}")
    message(FATAL_ERROR "hplvk: glslc not found; it compiles the library's own shaders at build time.\n"
                        "Install the Debian package 'glslc' (cmake/setup.sh does), or pass -DHPLVK_GLSLC=/path/to/glslc.")
endif()
