/* SPIR-V validation: the first thing that reads a module (user SPIR-V, .spv
 * files, cache entries, shaderc's output), before SPIRV-Cross or a driver
 * sees it. Kernels are untrusted input. */
#ifndef HPL_VALIDATE_H
#define HPL_VALIDATE_H

#include "common.h"

/* Device features a module needs (its capabilities, its block layout). */
enum {
    HPL__FEATURE_FLOAT64 = 1u << 0,
    HPL__FEATURE_INT64 = 1u << 1,
    HPL__FEATURE_INT16 = 1u << 2,
    HPL__FEATURE_INT8 = 1u << 3,
    HPL__FEATURE_FLOAT16 = 1u << 4,
    HPL__FEATURE_STORAGE8 = 1u << 5,         /* storageBuffer8BitAccess */
    HPL__FEATURE_UNIFORM_STORAGE8 = 1u << 6, /* uniformAndStorageBuffer8BitAccess */
    HPL__FEATURE_SCALAR_LAYOUT = 1u << 7,    /* scalarBlockLayout */
    /* Subgroup operations in compute shaders (VkPhysicalDeviceSubgroupProperties). */
    HPL__FEATURE_SUBGROUP_BASIC = 1u << 8,
    HPL__FEATURE_SUBGROUP_VOTE = 1u << 9,
    HPL__FEATURE_SUBGROUP_ARITHMETIC = 1u << 10,
    HPL__FEATURE_SUBGROUP_BALLOT = 1u << 11,
    HPL__FEATURE_SUBGROUP_SHUFFLE = 1u << 12,
    HPL__FEATURE_SUBGROUP_SHUFFLE_RELATIVE = 1u << 13,
    HPL__FEATURE_SUBGROUP_CLUSTERED = 1u << 14,
    HPL__FEATURE_SUBGROUP_QUAD = 1u << 15,
    HPL__FEATURE_COUNT = 16
};

/* The feature's name in Vulkan's terms ("shaderFloat64"). */
const char *hpl__feature_name(unsigned bit);

typedef struct hpl__spirv_facts {
    uint32_t features;     /* HPL__FEATURE_* */
    uint64_t shared_bytes; /* Workgroup variables, from constants and spec-constant defaults */
} hpl__spirv_facts;

/* Validates a module against the rules of the library's target: SPIRV-Tools
 * for Vulkan 1.2 (SPIR-V up to 1.5, relaxed block layout; scalar block
 * layout where only that makes it valid, a feature pipelines check), then
 * hplvk's own rules, which drivers rely on and SPIRV-Tools 2023.1 does not
 * check: header word 4 is 0, alignments are powers of two, and the only
 * capabilities are those of compute kernels on the features hplvk enables
 * (Shader, Matrix, Float16/64, Int8/16/64, 8-bit storage, physical storage
 * buffer addresses, subgroup operations). Returns HPL_OK and fills *facts
 * (may be NULL), or HPL_ERROR_KERNEL_SIGNATURE with SPIRV-Tools' message
 * (and the word where it found the problem) in hpl_last_error().
 * Thread-safe. */
int hpl__spirv_validate(const uint32_t *spirv, size_t words, hpl__spirv_facts *facts);

#endif
