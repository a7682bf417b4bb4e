/* SPIR-V validation with SPIRV-Tools (see validate.h). */
#include "validate.h"

#include <spirv-tools/libspirv.h>

#include <stdio.h>
#include <string.h>

#define SPIRV_MAGIC 0x07230203u

/* One validation; *message gets SPIRV-Tools' diagnostic on failure. */
static spv_result_t run_validator(const uint32_t *spirv, size_t words, bool scalar, char *message, size_t size)
{
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    spv_validator_options opts = spvValidatorOptionsCreate();
    if (!ctx || !opts) {
        spvValidatorOptionsDestroy(opts);
        spvContextDestroy(ctx);
        snprintf(message, size, "cannot create a SPIRV-Tools context");
        return SPV_ERROR_OUT_OF_MEMORY;
    }
    /* Vulkan 1.1+ targets get relaxed block layout by default. */
    if (scalar)
        spvValidatorOptionsSetScalarBlockLayout(opts, true);
    spv_const_binary_t binary = {spirv, words};
    spv_diagnostic diag = NULL;
    spv_result_t r = spvValidateWithOptions(ctx, opts, &binary, &diag);
    if (r != SPV_SUCCESS) {
        /* One line: the message, then the instruction SPIRV-Tools quotes on
         * the following lines, then where. */
        const char *text = diag && diag->error && *diag->error ? diag->error : "no message";
        size_t n = 0;
        bool space = false;
        for (const char *s = text; *s && n + 1 < size; s++) {
            bool ws = *s == '\n' || *s == '\r' || *s == '\t' || *s == ' ';
            if (ws) {
                space = n > 0;
                continue;
            }
            if (space && n + 2 < size) {
                message[n++] = ' ';
                space = false;
            }
            message[n++] = *s;
        }
        message[n] = '\0';
        if (diag && n + 1 < size)
            snprintf(message + n, size - n, " (at word %zu)", diag->position.index);
    }
    spvDiagnosticDestroy(diag);
    spvValidatorOptionsDestroy(opts);
    spvContextDestroy(ctx);
    return r;
}

int hpl__spirv_validate(const uint32_t *spirv, size_t words, bool *scalar_layout)
{
    if (!spirv || words < 5)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not SPIR-V: %zu words, a module has at least 5", spirv ? words : 0);
    if (spirv[0] != SPIRV_MAGIC)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not SPIR-V: the magic number is 0x%08x, not 0x%08x%s", spirv[0],
                         SPIRV_MAGIC, spirv[0] == 0x03022307u ? " (byte-swapped: hplvk takes host-endian words)" : "");
    char message[768];
    spv_result_t r = run_validator(spirv, words, false, message, sizeof message);
    bool scalar = false;
    /* Block layout errors only ("... must follow standard uniform buffer
     * layout rules: ..."): is the module valid with scalar block layout? */
    if (r != SPV_SUCCESS && strstr(message, "layout rules")) {
        char scalar_message[8];
        if (run_validator(spirv, words, true, scalar_message, sizeof scalar_message) == SPV_SUCCESS) {
            r = SPV_SUCCESS;
            scalar = true;
        }
    }
    if (r == SPV_ERROR_OUT_OF_MEMORY)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "SPIR-V validation: %s", message);
    if (r != SPV_SUCCESS)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "invalid SPIR-V (SPIRV-Tools, Vulkan 1.2 rules): %s", message);
    if (scalar_layout)
        *scalar_layout = scalar;
    return HPL_OK;
}
