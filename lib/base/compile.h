/* GLSL -> SPIR-V with shaderc, through the SPIR-V cache. The prelude
 * <hplvk.glsl> is served from memory (embedded at build time); other
 * #include "file" directives are resolved against include_dirs. */
#ifndef HPL_COMPILE_H
#define HPL_COMPILE_H

#include "cache.h"

typedef struct hpl__compile_input {
    const char *glsl;                 /* source text */
    const char *name;                 /* file name used in error messages */
    const char *const *defines;       /* NULL-terminated "NAME" / "NAME=VALUE", may be NULL */
    const char *const *include_dirs;  /* NULL-terminated, may be NULL */
    const char *source_dir;           /* directory of the source file, or NULL */
    /* Checks the SPIR-V before it is returned (NULL: hpl__spirv_validate
     * alone); returns HPL_OK or fails like hpl__fail. It must validate
     * (hpl__reflect does). A cache entry it rejects is deleted with a warning
     * naming the file, and the source is compiled again; compiled SPIR-V it
     * rejects is not stored, and its error is returned. */
    int (*check)(void *user, const uint32_t *spirv, size_t words);
    void *check_user;
} hpl__compile_input;

/* Compiles (or loads from the cache: key covers source, every included file,
 * defines, the prelude and the library version) to SPIR-V for Vulkan 1.2.
 * Returns HPL_OK and a hpl__malloc'd word array that passed in->check, or
 * HPL_ERROR_COMPILE with "name:line: message" (every diagnostic, with its
 * line) in hpl_last_error(), or the check's error.
 * *from_cache tells whether anything was compiled (may be NULL). */
int hpl__compile_glsl(const hpl__compile_input *in, hpl__cache *cache, uint32_t **spirv, size_t *words,
                      bool *from_cache);

#endif
