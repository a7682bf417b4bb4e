/* SPIR-V validation: SPIRV-Tools, then hplvk's own rules (see validate.h). */
#include "validate.h"

#include <spirv-tools/libspirv.h>
#include <spirv/unified1/spirv.h>

#include <stdio.h>
#include <string.h>

#define SPIRV_MAGIC 0x07230203u

/* ---- SPIRV-Tools ---------------------------------------------------------- */

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

/* ---- hplvk's rules ----------------------------------------------------------- */

static const struct {
    uint32_t capability;
    uint32_t feature; /* 0: every device */
    const char *name;
} allowed_caps[] = {
    {SpvCapabilityMatrix, 0, "Matrix"},
    {SpvCapabilityShader, 0, "Shader"},
    {SpvCapabilityPhysicalStorageBufferAddresses, 0, "PhysicalStorageBufferAddresses"},
    {SpvCapabilityFloat16, HPL__FEATURE_FLOAT16, "Float16"},
    {SpvCapabilityFloat64, HPL__FEATURE_FLOAT64, "Float64"},
    {SpvCapabilityInt64, HPL__FEATURE_INT64, "Int64"},
    {SpvCapabilityInt16, HPL__FEATURE_INT16, "Int16"},
    {SpvCapabilityInt8, HPL__FEATURE_INT8, "Int8"},
    {SpvCapabilityStorageBuffer8BitAccess, HPL__FEATURE_STORAGE8, "StorageBuffer8BitAccess"},
    {SpvCapabilityUniformAndStorageBuffer8BitAccess, HPL__FEATURE_UNIFORM_STORAGE8,
     "UniformAndStorageBuffer8BitAccess"},
    {SpvCapabilityGroupNonUniform, HPL__FEATURE_SUBGROUP_BASIC, "GroupNonUniform"},
    {SpvCapabilityGroupNonUniformVote, HPL__FEATURE_SUBGROUP_VOTE, "GroupNonUniformVote"},
    {SpvCapabilityGroupNonUniformArithmetic, HPL__FEATURE_SUBGROUP_ARITHMETIC, "GroupNonUniformArithmetic"},
    {SpvCapabilityGroupNonUniformBallot, HPL__FEATURE_SUBGROUP_BALLOT, "GroupNonUniformBallot"},
    {SpvCapabilityGroupNonUniformShuffle, HPL__FEATURE_SUBGROUP_SHUFFLE, "GroupNonUniformShuffle"},
    {SpvCapabilityGroupNonUniformShuffleRelative, HPL__FEATURE_SUBGROUP_SHUFFLE_RELATIVE,
     "GroupNonUniformShuffleRelative"},
    {SpvCapabilityGroupNonUniformClustered, HPL__FEATURE_SUBGROUP_CLUSTERED, "GroupNonUniformClustered"},
    {SpvCapabilityGroupNonUniformQuad, HPL__FEATURE_SUBGROUP_QUAD, "GroupNonUniformQuad"},
};

/* Names of some capabilities kernels may try, for the message. */
static const struct {
    uint32_t capability;
    const char *name;
} other_caps[] = {
    {SpvCapabilityGeometry, "Geometry"},
    {SpvCapabilityTessellation, "Tessellation"},
    {SpvCapabilityInt64Atomics, "Int64Atomics (shaderBufferInt64Atomics)"},
    {SpvCapabilityStorageBuffer16BitAccess, "StorageBuffer16BitAccess"},
    {SpvCapabilityUniformAndStorageBuffer16BitAccess, "UniformAndStorageBuffer16BitAccess"},
    {SpvCapabilityStoragePushConstant8, "StoragePushConstant8"},
    {SpvCapabilityStoragePushConstant16, "StoragePushConstant16"},
    {SpvCapabilityVariablePointers, "VariablePointers"},
    {SpvCapabilityVariablePointersStorageBuffer, "VariablePointersStorageBuffer"},
    {SpvCapabilityVulkanMemoryModel, "VulkanMemoryModel"},
    {SpvCapabilityVulkanMemoryModelDeviceScope, "VulkanMemoryModelDeviceScope"},
    {SpvCapabilityDenormPreserve, "DenormPreserve"},
    {SpvCapabilityDenormFlushToZero, "DenormFlushToZero"},
    {SpvCapabilitySignedZeroInfNanPreserve, "SignedZeroInfNanPreserve"},
    {SpvCapabilityRoundingModeRTE, "RoundingModeRTE"},
    {SpvCapabilityRoundingModeRTZ, "RoundingModeRTZ"},
    {SpvCapabilitySubgroupBallotKHR, "SubgroupBallotKHR"},
    {SpvCapabilitySubgroupVoteKHR, "SubgroupVoteKHR"},
    {SpvCapabilityImageQuery, "ImageQuery"},
    {SpvCapabilityStorageImageWriteWithoutFormat, "StorageImageWriteWithoutFormat"},
    {SpvCapabilityRayQueryKHR, "RayQueryKHR"},
};

static const char *const feature_names[HPL__FEATURE_COUNT] = {
    "shaderFloat64",
    "shaderInt64",
    "shaderInt16",
    "shaderInt8",
    "shaderFloat16",
    "storageBuffer8BitAccess",
    "uniformAndStorageBuffer8BitAccess",
    "scalarBlockLayout",
    "subgroup operations (basic) in compute shaders",
    "subgroup vote operations in compute shaders",
    "subgroup arithmetic operations in compute shaders",
    "subgroup ballot operations in compute shaders",
    "subgroup shuffle operations in compute shaders",
    "subgroup relative shuffle operations in compute shaders",
    "subgroup clustered operations in compute shaders",
    "subgroup quad operations in compute shaders",
};

const char *hpl__feature_name(unsigned bit)
{
    return bit < HPL__FEATURE_COUNT ? feature_names[bit] : "?";
}

static bool power_of_two(uint32_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

/* A memory-operands mask at w[at] (when the instruction has it): its
 * Aligned literal must be a power of two. Returns the words it takes. */
static uint32_t check_memory_operands(const uint32_t *w, uint32_t at, uint32_t count, bool *ok)
{
    if (at >= count)
        return 0;
    uint32_t mask = w[at], used = 1;
    if (mask & SpvMemoryAccessAlignedMask) {
        if (at + used >= count || !power_of_two(w[at + used]))
            *ok = false;
        used++;
    }
    if (mask & SpvMemoryAccessMakePointerAvailableMask)
        used++;
    if (mask & SpvMemoryAccessMakePointerVisibleMask)
        used++;
    return used;
}

/* Sizes of types and values of integer constants by id, for the Workgroup
 * variables: an open-addressing table over the ids the module defines. */
typedef struct id_entry {
    uint32_t id;      /* 0: empty */
    uint64_t val;     /* type: size in bytes (saturating); constant: value */
    uint32_t pointee; /* pointer: the pointee; vector: the component; constant, variable: the type */
    uint32_t storage; /* pointer types: the storage class + 1 */
    bool unsigned_int;
    bool block; /* decorated Block or BufferBlock */
} id_entry;

typedef struct id_table {
    id_entry *e;
    size_t cap; /* a power of two */
} id_table;

static id_entry *id_find(id_table *t, uint32_t id, bool insert)
{
    if (!t->e || id == 0)
        return NULL;
    for (size_t i = (id * 0x9e3779b1u) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (t->e[i].id == id)
            return &t->e[i];
        if (t->e[i].id == 0) {
            if (!insert)
                return NULL;
            t->e[i].id = id;
            return &t->e[i];
        }
    }
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t size_of(id_table *t, uint32_t id)
{
    id_entry *e = id_find(t, id, false);
    return e ? e->val : 0;
}

/* Logical pointers live only in variables and values: a composite type that
 * holds one (a pointer to anything but PhysicalStorageBuffer) is refused
 * (SPIRV-Tools 2023.1 accepts one as a member of a push constant block; the
 * 1.3.239 validation layer then crashes in vkCreateShaderModule). */
static int no_logical_pointer(id_table *t, uint32_t member, size_t at)
{
    id_entry *m = id_find(t, member, false);
    if (m && m->storage && m->storage - 1 != SpvStorageClassPhysicalStorageBuffer)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                         "invalid SPIR-V: a struct or array holds a logical pointer (storage class %u) (at word %zu)",
                         m->storage - 1, at);
    return HPL_OK;
}

/* A Uniform, PushConstant or StorageBuffer variable must be a block (or an
 * array of blocks): drivers and SPIRV-Cross see nothing else there. */
static int block_variable(id_table *t, const uint32_t *ins, size_t at)
{
    id_entry *ptr = id_find(t, ins[1], false);
    id_entry *type = ptr ? id_find(t, ptr->pointee, false) : NULL;
    if (type && !type->block && !type->storage && type->pointee) /* an array: its element */
        type = id_find(t, type->pointee, false);
    if (!type || !type->block)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                         "invalid SPIR-V: variable %u in storage class %u is not a Block (at word %zu)", ins[2], ins[3],
                         at);
    return HPL_OK;
}

/* hplvk's rules on a module SPIRV-Tools accepted (so every instruction is
 * well formed and every id defined before it is used as a type). */
static int own_rules(const uint32_t *w, size_t words, hpl__spirv_facts *facts)
{
    if (w[4] != 0)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                         "invalid SPIR-V: header word 4 (reserved, the instruction schema) is %u, not 0", w[4]);
    size_t defs = 0;
    for (size_t i = 5; i < words && (w[i] >> 16); i += w[i] >> 16)
        defs++;
    id_table t = {NULL, 16};
    while (t.cap < 2 * defs)
        t.cap *= 2;
    t.e = hpl__calloc(t.cap, sizeof *t.e);
    if (!t.e)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "SPIR-V validation: out of host memory");

    int rc = HPL_OK;
    uint32_t workgroup_size = 0; /* the id decorated BuiltIn WorkgroupSize */
    for (size_t i = 5; i < words && rc == HPL_OK;) {
        const uint32_t *ins = w + i;
        uint32_t op = ins[0] & 0xffff, n = ins[0] >> 16;
        if (n == 0 || i + n > words)
            break;
        bool aligned_ok = true;
        id_entry *e;
        switch (op) {
        case SpvOpCapability: {
            bool known = false;
            for (size_t c = 0; c < HPL__ARRAY_LEN(allowed_caps) && !known; c++) {
                if (allowed_caps[c].capability == ins[1]) {
                    facts->features |= allowed_caps[c].feature;
                    known = true;
                }
            }
            if (!known) {
                const char *name = NULL;
                for (size_t c = 0; c < HPL__ARRAY_LEN(other_caps); c++)
                    if (other_caps[c].capability == ins[1])
                        name = other_caps[c].name;
                char num[32];
                snprintf(num, sizeof num, "%u", ins[1]);
                rc = hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                               "the module declares capability %s%s%s, which hplvk kernels cannot use (compute "
                               "kernels may use Shader, Matrix, Float16/64, Int8/16/64, 8-bit storage, physical "
                               "storage buffer addresses and subgroup operations)",
                               name ? name : num, name ? " = " : "", name ? num : "");
            }
            break;
        }
        case SpvOpLoad:
            check_memory_operands(ins, 4, n, &aligned_ok);
            break;
        case SpvOpStore:
            check_memory_operands(ins, 3, n, &aligned_ok);
            break;
        case SpvOpCopyMemory: {
            uint32_t used = check_memory_operands(ins, 3, n, &aligned_ok);
            check_memory_operands(ins, 3 + used, n, &aligned_ok);
            break;
        }
        case SpvOpCopyMemorySized: {
            uint32_t used = check_memory_operands(ins, 4, n, &aligned_ok);
            check_memory_operands(ins, 4 + used, n, &aligned_ok);
            break;
        }
        case SpvOpDecorate:
            if (n >= 3 && (ins[2] == SpvDecorationBlock || ins[2] == SpvDecorationBufferBlock) &&
                (e = id_find(&t, ins[1], true)))
                e->block = true;
            if (n >= 4 && ins[2] == SpvDecorationAlignment)
                aligned_ok = power_of_two(ins[3]);
            if (n >= 4 && ins[2] == SpvDecorationBuiltIn && ins[3] == SpvBuiltInWorkgroupSize)
                workgroup_size = ins[1];
            break;
        /* Sizes for the Workgroup storage (no explicit layout: natural sizes). */
        case SpvOpTypeBool:
            if ((e = id_find(&t, ins[1], true)))
                e->val = 4;
            break;
        case SpvOpTypeInt:
        case SpvOpTypeFloat:
            if (n >= 3 && (e = id_find(&t, ins[1], true))) {
                e->val = ins[2] / 8;
                e->unsigned_int = op == SpvOpTypeInt && n >= 4 && ins[3] == 0;
            }
            break;
        case SpvOpTypeVector:
        case SpvOpTypeMatrix:
            if (n >= 4 && (e = id_find(&t, ins[1], true))) {
                e->val = sat_mul(size_of(&t, ins[2]), ins[3]);
                e->pointee = ins[2];
            }
            break;
        case SpvOpConstantComposite:
        case SpvOpSpecConstantComposite:
            if (n >= 3 && (e = id_find(&t, ins[2], true)))
                e->pointee = ins[1];
            break;
        case SpvOpTypeArray:
            /* The length: a constant, or a spec constant's default (its
             * value when specialized is not known here); else 1. */
            if (n >= 4 && (e = id_find(&t, ins[1], true))) {
                id_entry *len = id_find(&t, ins[3], false);
                e->val = sat_mul(size_of(&t, ins[2]), len && len->val ? len->val : 1);
                e->pointee = ins[2];
            }
            rc = no_logical_pointer(&t, ins[2], i);
            break;
        case SpvOpTypeRuntimeArray:
            if (n >= 3 && (e = id_find(&t, ins[1], true)))
                e->pointee = ins[2];
            rc = n >= 3 ? no_logical_pointer(&t, ins[2], i) : HPL_OK;
            break;
        case SpvOpTypeStruct:
            if ((e = id_find(&t, ins[1], true))) {
                uint64_t s = 0;
                for (uint32_t m = 2; m < n; m++)
                    s = sat_add(s, size_of(&t, ins[m]));
                e->val = s;
            }
            for (uint32_t m = 2; m < n && rc == HPL_OK; m++)
                rc = no_logical_pointer(&t, ins[m], i);
            break;
        case SpvOpTypeForwardPointer:
            if (n >= 3 && (e = id_find(&t, ins[1], true)))
                e->storage = ins[2] + 1;
            break;
        case SpvOpTypePointer:
            if (n >= 4 && (e = id_find(&t, ins[1], true))) {
                e->val = 8;
                e->storage = ins[2] + 1;
                e->pointee = ins[3];
            }
            break;
        case SpvOpConstant:
        case SpvOpSpecConstant:
            /* Integer constants (a float's bits are harmless here). */
            if (n >= 4 && (e = id_find(&t, ins[2], true)))
                e->val = n >= 5 && ins[4] ? UINT64_MAX : ins[3];
            break;
        case SpvOpVariable:
            if (n >= 4 && (e = id_find(&t, ins[2], true)))
                e->pointee = ins[1];
            if (n >= 4 && (ins[3] == SpvStorageClassUniform || ins[3] == SpvStorageClassPushConstant ||
                           ins[3] == SpvStorageClassStorageBuffer))
                rc = block_variable(&t, ins, i);
            if (n >= 4 && ins[3] == SpvStorageClassWorkgroup) {
                id_entry *p = id_find(&t, ins[1], false);
                if (p && p->storage)
                    facts->shared_bytes = sat_add(facts->shared_bytes, size_of(&t, p->pointee));
            }
            break;
        default:
            break;
        }
        if (rc == HPL_OK && !aligned_ok)
            rc = hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                           "invalid SPIR-V: an alignment that is not a power of two (at word %zu)", i);
        i += n;
    }
    /* WorkgroupSize: SPIR-V allows a vector of signed ints, which Mesa's
     * SPIR-V front end (Lavapipe, RADV, ANV) refuses; compilers emit uvec3. */
    if (rc == HPL_OK && workgroup_size) {
        id_entry *e = id_find(&t, workgroup_size, false);
        id_entry *type = e ? id_find(&t, e->pointee, false) : NULL;
        if (type && type->storage) /* a variable: its pointer type */
            type = id_find(&t, type->pointee, false);
        id_entry *comp = type ? id_find(&t, type->pointee, false) : NULL;
        if (!comp || !comp->unsigned_int)
            rc = hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                           "the module's WorkgroupSize is not a vector of unsigned 32-bit ints (uvec3), which "
                           "drivers require");
    }
    hpl__free(t.e);
    return rc;
}

int hpl__spirv_validate(const uint32_t *spirv, size_t words, hpl__spirv_facts *facts)
{
    if (!spirv || words < 5)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not SPIR-V: %zu words, a module has at least 5", spirv ? words : 0);
    if (spirv[0] != SPIRV_MAGIC)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not SPIR-V: the magic number is 0x%08x, not 0x%08x%s", spirv[0],
                         SPIRV_MAGIC, spirv[0] == 0x03022307u ? " (byte-swapped: hplvk takes host-endian words)" : "");
    char message[768];
    spv_result_t r = run_validator(spirv, words, false, message, sizeof message);
    hpl__spirv_facts f = {0, 0};
    /* Block layout errors only ("... must follow standard uniform buffer
     * layout rules: ..."): is the module valid with scalar block layout? */
    if (r != SPV_SUCCESS && strstr(message, "layout rules")) {
        char scalar_message[8];
        if (run_validator(spirv, words, true, scalar_message, sizeof scalar_message) == SPV_SUCCESS) {
            r = SPV_SUCCESS;
            f.features |= HPL__FEATURE_SCALAR_LAYOUT;
        }
    }
    if (r == SPV_ERROR_OUT_OF_MEMORY)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "SPIR-V validation: %s", message);
    if (r != SPV_SUCCESS)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "invalid SPIR-V (SPIRV-Tools, Vulkan 1.2 rules): %s", message);
    int rc = own_rules(spirv, words, &f);
    if (rc == HPL_OK && facts)
        *facts = f;
    return rc;
}
