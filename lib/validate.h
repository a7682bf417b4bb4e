/* SPIR-V validation with SPIRV-Tools: the first thing that reads a module
 * (user SPIR-V, .spv files, cache entries, shaderc's output), before
 * SPIRV-Cross or a driver sees it. Kernels are untrusted input. */
#ifndef HPL_VALIDATE_H
#define HPL_VALIDATE_H

#include "common.h"

/* Validates a module against the rules of the library's target: Vulkan 1.2
 * (SPIR-V up to 1.5, relaxed block layout). A module that is valid only with
 * scalar block layout (VK_EXT_scalar_block_layout, core in Vulkan 1.2 and
 * enabled where devices have it) is valid, and *scalar_layout (may be NULL)
 * says so; pipelines check the device. Returns HPL_OK, or
 * HPL_ERROR_KERNEL_SIGNATURE with SPIRV-Tools' message (and the word where it
 * found the problem) in hpl_last_error(). Thread-safe. */
int hpl__spirv_validate(const uint32_t *spirv, size_t words, bool *scalar_layout);

#endif
