/* The library's own shaders, compiled and embedded at build time
 * (cmake/embed.cmake generates the definitions from shaders/). */
#ifndef HPL_EMBEDDED_H
#define HPL_EMBEDDED_H

#include <stddef.h>
#include <stdint.h>

/* shaders/hplvk.glsl as text (NUL-terminated). */
extern const char hpl__prelude_glsl[];
/* shaders/fill.comp compiled to SPIR-V. */
extern const uint32_t hpl__fill_spv[];
extern const size_t hpl__fill_spv_words;

/* shaders/copy.comp compiled for 4- and 16-byte units (UNIT=4, UNIT=16). */
extern const uint32_t hpl__copy__4_spv[], hpl__copy__16_spv[];
extern const size_t hpl__copy__4_spv_words, hpl__copy__16_spv_words;

/* shaders/reduce.comp compiled for each element type. */
extern const uint32_t hpl__reduce_float_spv[], hpl__reduce_double_spv[], hpl__reduce_int_spv[],
    hpl__reduce_uint_spv[], hpl__reduce_int64_t_spv[], hpl__reduce_uint64_t_spv[];
extern const size_t hpl__reduce_float_spv_words, hpl__reduce_double_spv_words, hpl__reduce_int_spv_words,
    hpl__reduce_uint_spv_words, hpl__reduce_int64_t_spv_words, hpl__reduce_uint64_t_spv_words;

#endif
