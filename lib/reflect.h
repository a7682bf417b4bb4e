/* SPIR-V reflection through SPIRV-Cross's C API: the kernel's arguments (the
 * members of the uniform block at set 0, binding 0, in member order), its
 * local size and the capabilities it needs. */
#ifndef HPL_REFLECT_H
#define HPL_REFLECT_H

#include "common.h"

#define HPL__MAX_ARGS 32

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

/* Byte offsets of an array argument's fields inside the argument block. */
typedef struct hpl__array_layout {
    uint32_t field[HPL__ARRAY_FIELDS];
} hpl__array_layout;

typedef struct hpl__reflection {
    int arg_count;
    hpl_arg_info args[HPL__MAX_ARGS];    /* name, kind, type, ndims, access, offset */
    hpl__array_layout layout[HPL__MAX_ARGS]; /* for arrays */
    uint32_t args_size;                  /* bytes of the argument block (0: none) */
    uint32_t local_size[3];              /* declared (spec-constant defaults), 1 if none */
    bool local_size_choosable;           /* local size is specialization constants 0,1,2 */
    bool needs_float64, needs_int64;     /* capabilities Float64 / Int64 */
    char entry_point[64];
} hpl__reflection;

/* Fails with HPL_ERROR_KERNEL_SIGNATURE naming the problem: not a compute
 * shader, SPIR-V that SPIRV-Cross rejects, an argument block member that is
 * neither a scalar of a supported type nor an hplvk array struct, other
 * descriptors than the argument block, more than HPL__MAX_ARGS arguments. */
int hpl__reflect(const uint32_t *spirv, size_t words, hpl__reflection *out);

#endif
