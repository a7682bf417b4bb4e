/* SPIR-V reflection through SPIRV-Cross's C API: the kernel's arguments (the
 * members of the uniform block at set 0, binding 0, in member order), its
 * local size and the capabilities it needs. Modules are validated with
 * SPIRV-Tools first (validate.h): SPIRV-Cross never sees an invalid one. */
#ifndef HPL_REFLECT_H
#define HPL_REFLECT_H

#include "common.h"

#define HPL__MAX_ARGS 32
/* The largest argument block (bytes): every argument must end inside it.
 * Vulkan guarantees maxUniformBufferRange >= 16384, so every device can bind
 * it; 32 arrays of the ABI take at most 32 x 128 = 4096. */
#define HPL__ARG_RANGE 16384u

/* The fields of an array argument's struct, in order (shaders/hplvk.glsl). */
enum {
    HPL__FIELD_POINTER, /* uint64 device address of the argument's element 0 */
    HPL__FIELD_DIMS,    /* the rest: ndims x uint32 each */
    HPL__FIELD_STRIDE,
    HPL__FIELD_ORIGIN,
    HPL__FIELD_PART_LO,
    HPL__FIELD_PART_HI,
    HPL__FIELD_OWNED_LO,
    HPL__FIELD_OWNED_HI,
    HPL__ARRAY_FIELDS
};

/* Bytes of the prelude's push constant block (hplvk.glsl's hplvk_push):
 * the pipeline layout's range; a kernel's own block may not be larger. */
#define HPL__PUSH_BYTES 80u

/* The prelude's specialization constant for the order in which a dispatch
 * walks the domain: hplvk.glsl's hplvk_walk, constant_id 1000 there too
 * (unit_walk fails if the two part). */
#define HPL__WALK_SPEC_ID 1000
/* And its uint hplvk_checks (chapter 6c: bounds checks; values HPL__CHECKS_*). */
#define HPL__CHECKED_SPEC_ID 1001
enum { HPL__CHECKS_OFF = 0, HPL__CHECKS_ON = 1, HPL__CHECKS_DETAILED = 2 };

/* Byte offsets of an array argument's fields inside the argument block. */
typedef struct hpl__array_layout {
    uint32_t field[HPL__ARRAY_FIELDS];
} hpl__array_layout;

typedef struct hpl__reflection {
    int arg_count;
    hpl_arg_info args[HPL__MAX_ARGS];    /* name, kind, type, ndims, access, offset */
    hpl__array_layout layout[HPL__MAX_ARGS]; /* for arrays */
    uint32_t args_size;                  /* bytes of the argument block (0: none); every
                                          * argument ends inside it; <= HPL__ARG_RANGE */
    uint32_t local_size[3];              /* declared (spec-constant defaults), 1 if none */
    bool local_size_choosable;           /* local size is specialization constants 0,1,2 */
    bool walkable;                       /* has the prelude's walk constant and reads no builtin
                                          * that shows the dispatch's order (hplvk.glsl) */
    bool checkable;                      /* has the prelude's hplvk_checks constant: its
                                          * hpl_at() accesses can be bounds-checked */
    bool needs_float64, needs_int64;     /* capabilities Float64 / Int64 */
    uint32_t features;                   /* HPL__FEATURE_* the module needs (validate.h) */
    uint64_t shared_bytes;               /* its Workgroup variables (validate.h) */
    char entry_point[64];
} hpl__reflection;

/* Validates the module (hpl__spirv_validate), then reflects it. Fails with
 * HPL_ERROR_KERNEL_SIGNATURE naming the problem: invalid SPIR-V (SPIRV-Tools'
 * message), not a compute shader, SPIR-V that SPIRV-Cross rejects, an
 * argument block member that is neither a scalar of a supported type nor an
 * hplvk array struct, an argument that ends past HPL__ARG_RANGE, other
 * descriptors than the argument block, more than HPL__MAX_ARGS arguments.
 * *out is untouched on failure. */
int hpl__reflect(const uint32_t *spirv, size_t words, hpl__reflection *out);

/* The byte just past argument i in the block (its last field's end; an
 * array of other than 1..3 dimensions counts as 3). */
uint64_t hpl__arg_end(const hpl__reflection *r, int i);
/* HPL_OK when every argument ends within `limit` bytes; otherwise `code`
 * with a message naming the first argument that does not and `limit_what`
 * ("device X's maxUniformBufferRange"). */
int hpl__args_fit(const hpl__reflection *r, uint32_t limit, int code, const char *limit_what);

#endif
