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
# A file's layer is its directory. A file calls another when it uses an
# hpl_/hpl__ symbol the other defines (nm: undefined here, defined there;
# calls from inline functions of headers count for the file that includes
# them). The check fails when
#   - a file calls a file of a higher layer,
#   - files call each other in a cycle (other than the known ones below),
#   - an object is in no layer's directory.
# VERBOSE prints every file's callees.
cmake_minimum_required(VERSION 3.25)

set(LAYERS base engine api)
set(GENERATED_BASE hplvk_embedded) # built from shaders/, outside lib/

# Cycles known and tolerated until they are cut (each group counts as one
# file for the cycle check). submit <-> progress: the progress thread
# flushes batches and opens gates that submit.c asks it for; events <->
# submit: submission calls the log's hooks, the log reads the timelines.
# Cutting them: the timeline primitives (hpl__device_completed,
# hpl__gate_signal, hpl__timeline_wait) in a file below all three, and
# progress requests that carry their action.
set(KNOWN_CYCLES submission)
set(CYCLE_submission submit progress events)

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
foreach(group IN LISTS KNOWN_CYCLES)
    foreach(f IN LISTS CYCLE_${group})
        set(node_${f} "${group}")
    endforeach()
endforeach()

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
        list(APPEND errors "${obj} is in no layer: put its source in lib/base, lib/engine or lib/api")
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

# Rule 2: no cycles. Files of a known cycle are one node; nodes that call
# no remaining node, or that no remaining node calls, are peeled off until
# none is left, or only cycles (and what lies on paths between them) remain.
set(nodes "")
foreach(f IN LISTS files)
    if(DEFINED node_${f})
        set(n "${node_${f}}")
    else()
        set(n "${f}")
    endif()
    list(APPEND nodes ${n})
    foreach(t IN LISTS calls_${f})
        if(DEFINED node_${t})
            set(m "${node_${t}}")
        else()
            set(m "${t}")
        endif()
        if(NOT m STREQUAL n)
            list(APPEND out_${n} ${m})
            list(APPEND in_${m} ${n})
        endif()
    endforeach()
endforeach()
list(REMOVE_DUPLICATES nodes)
set(left ${nodes})
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
    foreach(f IN LISTS files)
        set(n "${f}")
        if(DEFINED node_${f})
            set(n "${node_${f}}")
        endif()
        list(FIND left "${n}" at)
        if(at EQUAL -1)
            continue()
        endif()
        foreach(t IN LISTS calls_${f})
            set(m "${t}")
            if(DEFINED node_${t})
                set(m "${node_${t}}")
            endif()
            list(FIND left "${m}" at)
            if(NOT at EQUAL -1 AND NOT m STREQUAL n)
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
set(known "")
foreach(group IN LISTS KNOWN_CYCLES)
    list(JOIN CYCLE_${group} " " members)
    string(APPEND known " ${group} (${members})")
endforeach()
message("layering: ok: ${file_count} files, ${call_count} calls between them, none up a layer, "
        "no cycles but the known ones:${known}")
