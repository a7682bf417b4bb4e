# README.md's Layout section against lib/ (ctest "readme_layout"):
#
#   cmake -DSOURCE_DIR=<repository root> -P cmake/check_readme_layout.cmake
#
# The section has one bullet per layer, "- **base**", "- **engine**",
# "- **api**", "- **mpi**", naming the layer's files in backquotes. The check fails when
#   - a lib/<layer>/ source file is not named in its layer's bullet (a
#     header counts as named when the .c of the same stem is: it is that
#     file's interface; a header of its own, such as common.h, is named),
#   - a bullet names a .c or .h file its layer's directory does not hold
#     (renamed, moved or deleted since),
#   - the section or a layer's bullet is missing.
cmake_minimum_required(VERSION 3.25)

if(NOT SOURCE_DIR)
    message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repository root> -P check_readme_layout.cmake")
endif()
set(LAYERS base engine api mpi)

file(READ "${SOURCE_DIR}/README.md" readme)
string(FIND "${readme}" "\n## Layout\n" start)
if(start EQUAL -1)
    message(FATAL_ERROR "README.md has no '## Layout' section")
endif()
string(SUBSTRING "${readme}" ${start} -1 section)
string(SUBSTRING "${section}" 1 -1 rest)
string(FIND "${rest}" "\n## " end)
if(NOT end EQUAL -1)
    string(SUBSTRING "${rest}" 0 ${end} section)
endif()

# The text of each layer's bullet: from "- **<layer>**" to the next line
# that starts a bullet or a paragraph (a blank line).
set(errors "")
foreach(layer IN LISTS LAYERS)
    string(FIND "${section}" "\n- **${layer}**" at)
    if(at EQUAL -1)
        list(APPEND errors "README.md, Layout: no bullet '- **${layer}**'")
        continue()
    endif()
    string(SUBSTRING "${section}" ${at} -1 bullet)
    string(SUBSTRING "${bullet}" 1 -1 bullet)
    string(REGEX MATCH "^[^\n]*(\n[ ][^\n]*)*" bullet "${bullet}")

    string(REGEX MATCHALL "`[A-Za-z0-9_]+\\.[ch]`" named "${bullet}")
    list(TRANSFORM named REPLACE "`" "")
    list(REMOVE_DUPLICATES named)

    file(GLOB files RELATIVE "${SOURCE_DIR}/lib/${layer}" "${SOURCE_DIR}/lib/${layer}/*.c"
         "${SOURCE_DIR}/lib/${layer}/*.h")
    list(SORT files)
    foreach(f IN LISTS files)
        if(f IN_LIST named)
            continue()
        endif()
        if(f MATCHES "\\.h$")
            string(REGEX REPLACE "\\.h$" ".c" source "${f}")
            if(source IN_LIST files AND source IN_LIST named)
                continue()
            endif()
        endif()
        list(APPEND errors "lib/${layer}/${f} is not named in README.md's Layout, bullet '${layer}'")
    endforeach()
    foreach(f IN LISTS named)
        if(NOT f IN_LIST files)
            list(APPEND errors "README.md's Layout names ${f} under '${layer}', but lib/${layer}/ has no such file")
        endif()
    endforeach()
endforeach()

if(errors)
    list(JOIN errors "\n  " text)
    message(FATAL_ERROR "README.md's Layout does not match lib/:\n  ${text}")
endif()
message(STATUS "README.md's Layout names every file of lib/")
