# The layering rule of lib/, checked on the library's object files (ctest
# "layering"; README.md, Layout):
#
#   cmake -DNM=nm -DOBJECTS="a.c.o|b.c.o|..." [-DVERBOSE=ON] -P cmake/check_layers.cmake
#
# lib/ has one directory per layer, bottom to top:
#   base    pure logic and utilities, no Vulkan device: errors, handles,
#           types, configuration, regions and the coherence state machine,
#           partition arithmetic, the SPIR-V side of kernels (compile,
#           validate, reflect, cache); also the generated embedded shaders.
#   engine  devices and their work: Vulkan calls, submission (with its
#           transfer lane) and its event log, the progress thread, memory,
#           opening devices; then a root's memories, moving data between
#           them (copies, staging, exchange), residency, operations on one
#           device, and running subkernels. Knows buffers, regions and
#           views, not the array API.
#   api     the public functions and what only they use: contexts, arrays,
#           kernels, planning an eval, the library's own kernels,
#           assignment, reductions, hints, Vulkan interop on arrays, traces.
#   mpi     above the public API (library hplvk_mpi, when built): the MPI
#           transport. It may call only public functions (hpl_, never an
#           internal hpl__ symbol), which libhplvk.so exports.
# A file's layer is its directory. A file calls another when it uses an
# hpl_/hpl__ symbol the other defines (nm: undefined here, defined there;
# calls from inline functions of headers count for the file that includes
# them). The check fails when
#   - a file calls a file of a higher layer,
#   - files call each other in a cycle (none is tolerated),
#   - an object is in no layer's directory,
#   - a file of a public-only layer (mpi) uses an internal hpl__ symbol.
# VERBOSE prints every file's callees.
cmake_minimum_required(VERSION 3.25)

set(LAYERS base engine api mpi)
set(PUBLIC_ONLY_LAYERS mpi) # may use hpl_ symbols only, never hpl__
set(GENERATED_BASE hplvk_embedded) # built from shaders/, outside lib/

string(REPLACE "|" ";" objects "${OBJECTS}")
list(REMOVE_ITEM objects "")
if(NOT NM OR NOT objects)
    message(FATAL_ERROR "usage: cmake -DNM=nm -DOBJECTS=\"a.o|b.o\" -P check_layers.cmake")
endif()

# The layer of an object file: the directory of its source (objects keep
# the source tree's layout: .../lib/<layer>/<file>.c.o).
function(layer_of obj out)
    get_filename_component(dir "${obj}" DIRECTORY)
    get_filename_component(dir "${dir}" NAME)
    get_filename_component(f "${obj}" NAME)
    string(REGEX REPLACE "\\..*$" "" f "${f}")
    if(f IN_LIST GENERATED_BASE)
        set(dir base)
    endif()
    if(dir IN_LIST LAYERS)
        set(${out} ${dir} PARENT_SCOPE)
    else()
        set(${out} "" PARENT_SCOPE)
    endif()
endfunction()

# Symbols: defined_<sym> = file; uses_<file> = symbols it takes from elsewhere.
set(files "")
set(errors "")
foreach(obj IN LISTS objects)
    get_filename_component(f "${obj}" NAME)
    string(REGEX REPLACE "\\..*$" "" f "${f}")
    list(APPEND files ${f})
    layer_of("${obj}" layer)
    if(layer)
        list(FIND LAYERS ${layer} level_${f})
        set(layer_of_${f} ${layer})
    else()
        list(APPEND errors "${obj} is in no layer: put its source in lib/base, lib/engine, lib/api or lib/mpi")
    endif()
    execute_process(COMMAND "${NM}" -P "${obj}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${NM} -P ${obj} failed")
    endif()
    string(REGEX MATCHALL "(^|\n)hpl[A-Za-z0-9_]* [A-Za-z]" lines "${out}")
    set(uses_${f} "")
    foreach(line IN LISTS lines)
        string(STRIP "${line}" line)
        string(REGEX REPLACE " .*$" "" sym "${line}")
        string(REGEX REPLACE "^.* " "" type "${line}")
        if(type STREQUAL "U")
            list(APPEND uses_${f} ${sym})
        elseif(type MATCHES "^[TDBRGSVW]$")
            set(defined_${sym} ${f})
        endif()
    endforeach()
endforeach()

# Calls between files, with the symbols behind each.
foreach(f IN LISTS files)
    set(calls_${f} "")
    foreach(sym IN LISTS uses_${f})
        set(t "${defined_${sym}}")
        if(t AND NOT t STREQUAL f)
            list(APPEND calls_${f} ${t})
            list(APPEND why_${f}_${t} ${sym})
        endif()
    endforeach()
    list(REMOVE_DUPLICATES calls_${f})
    list(SORT calls_${f})
    if(VERBOSE)
        list(JOIN calls_${f} " " callees)
        message("${f} (${layer_of_${f}}): ${callees}")
    endif()
endforeach()

# Rule 1: never up a layer.
set(call_count 0)
foreach(f IN LISTS files)
    foreach(t IN LISTS calls_${f})
        math(EXPR call_count "${call_count} + 1")
        if(DEFINED level_${f} AND DEFINED level_${t} AND level_${t} GREATER level_${f})
            list(JOIN why_${f}_${t} " " syms)
            list(APPEND errors "lib/${layer_of_${f}}/${f}.c calls lib/${layer_of_${t}}/${t}.c, a layer above it: ${syms}")
        endif()
    endforeach()
endforeach()

# Rule 1b: a public-only layer uses no internal symbol, defined here or not.
foreach(f IN LISTS files)
    if(layer_of_${f} IN_LIST PUBLIC_ONLY_LAYERS)
        set(internal "")
        foreach(sym IN LISTS uses_${f})
            if(sym MATCHES "^hpl__")
                list(APPEND internal ${sym})
            endif()
        endforeach()
        if(internal)
            list(JOIN internal " " syms)
            list(APPEND errors "lib/${layer_of_${f}}/${f}.c uses internal symbols, but its layer may call only public functions: ${syms}")
        endif()
    endif()
endforeach()

# Rule 2: no cycles. Files that call no remaining file, or that no
# remaining file calls, are peeled off until none is left, or only cycles
# (and what lies on paths between them) remain.
foreach(f IN LISTS files)
    foreach(t IN LISTS calls_${f})
        list(APPEND out_${f} ${t})
        list(APPEND in_${t} ${f})
    endforeach()
endforeach()
set(left ${files})
set(peeled TRUE)
while(peeled)
    set(peeled FALSE)
    set(next "")
    foreach(n IN LISTS left)
        set(calls FALSE)
        foreach(m IN LISTS out_${n})
            list(FIND left "${m}" at)
            if(NOT at EQUAL -1)
                set(calls TRUE)
                break()
            endif()
        endforeach()
        set(called FALSE)
        foreach(m IN LISTS in_${n})
            list(FIND left "${m}" at)
            if(NOT at EQUAL -1)
                set(called TRUE)
                break()
            endif()
        endforeach()
        if(calls AND called)
            list(APPEND next ${n})
        else()
            set(peeled TRUE)
        endif()
    endforeach()
    set(left ${next})
endwhile()
if(left)
    set(lines "")
    foreach(f IN LISTS left)
        foreach(t IN LISTS calls_${f})
            list(FIND left "${t}" at)
            if(NOT at EQUAL -1)
                list(JOIN why_${f}_${t} " " syms)
                string(APPEND lines "\n    ${f} -> ${t}: ${syms}")
            endif()
        endforeach()
    endforeach()
    list(JOIN left " " names)
    list(APPEND errors "files calling each other in a cycle (${names}):${lines}")
endif()

list(LENGTH files file_count)
if(errors)
    list(JOIN errors "\n  " text)
    message(FATAL_ERROR "layering: ${file_count} files, ${call_count} calls between them\n  ${text}")
endif()
message("layering: ok: ${file_count} files, ${call_count} calls between them, none up a layer, no cycles")
