/* SPIR-V reflection through SPIRV-Cross's C API (see reflect.h).
 *
 * The kernel ABI (include/hplvk.h chapter 6, shaders/hplvk.glsl): one uniform
 * block at set 0, binding 0 whose members are the arguments. A scalar member
 * is a scalar argument. An array argument is a struct
 *     { T_ref p; uintN dims, stride, origin, part_lo, part_hi, owned_lo, owned_hi; }
 * where p is a PhysicalStorageBuffer pointer to a block { T v[]; } whose
 * member is decorated NonWritable (read), NonReadable (write) or neither. */
#include "reflect.h"
#include "validate.h"

#include <spirv_cross/spirv_cross_c.h>

#include <stdio.h>
#include <string.h>

/* The prelude's hplvk_push block: 4 x uvec4 (shaders/hplvk.glsl). */

typedef struct reflect_state {
    spvc_context ctx;
    spvc_compiler comp;
    char spvc_error[512];
} reflect_state;

static void on_spvc_error(void *user, const char *error)
{
    reflect_state *st = user;
    snprintf(st->spvc_error, sizeof st->spvc_error, "%s", error ? error : "unknown error");
}

static int spvc_fail(reflect_state *st, const char *what)
{
    const char *msg = st->spvc_error[0] ? st->spvc_error : spvc_context_get_last_error_string(st->ctx);
    return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "SPIR-V rejected by SPIRV-Cross (%s): %s", what,
                     msg && *msg ? msg : "no message");
}

static hpl_type scalar_type(spvc_basetype bt)
{
    switch (bt) {
    case SPVC_BASETYPE_FP32:
        return HPL_FLOAT32;
    case SPVC_BASETYPE_FP64:
        return HPL_FLOAT64;
    case SPVC_BASETYPE_INT32:
        return HPL_INT32;
    case SPVC_BASETYPE_UINT32:
        return HPL_UINT32;
    case SPVC_BASETYPE_INT64:
        return HPL_INT64;
    case SPVC_BASETYPE_UINT64:
        return HPL_UINT64;
    default:
        return HPL_TYPE_INVALID;
    }
}

/* Local copies: reflection does not depend on the array module. */
static uint32_t type_size(hpl_type t)
{
    return t == HPL_FLOAT64 || t == HPL_INT64 || t == HPL_UINT64 ? 8 : 4;
}

static const char *type_name(hpl_type t)
{
    static const char *const names[] = {"invalid", "float", "double", "int", "uint", "int64_t", "uint64_t"};
    return (unsigned)t < HPL__ARRAY_LEN(names) ? names[t] : "invalid";
}

static bool is_plain(spvc_type t)
{
    return spvc_type_get_vector_size(t) == 1 && spvc_type_get_columns(t) == 1 &&
           spvc_type_get_num_array_dimensions(t) == 0 &&
           spvc_type_get_storage_class(t) != SpvStorageClassPhysicalStorageBuffer;
}

/* A GLSL-like description of a type for messages ("vec4", "float[3]",
 * "struct Foo", "buffer reference"). */
static void describe_type(spvc_compiler comp, spvc_type_id id, char *buf, size_t size)
{
    spvc_type t = spvc_compiler_get_type_handle(comp, id);
    if (!t) {
        snprintf(buf, size, "type %u", id);
        return;
    }
    if (spvc_type_get_storage_class(t) == SpvStorageClassPhysicalStorageBuffer) {
        snprintf(buf, size, "buffer reference");
        return;
    }
    spvc_basetype bt = spvc_type_get_basetype(t);
    unsigned vec = spvc_type_get_vector_size(t), cols = spvc_type_get_columns(t);
    const char *scalar = "?", *prefix = "?";
    switch (bt) {
    case SPVC_BASETYPE_BOOLEAN: scalar = "bool"; prefix = "b"; break;
    case SPVC_BASETYPE_INT8: scalar = "int8_t"; prefix = "i8"; break;
    case SPVC_BASETYPE_UINT8: scalar = "uint8_t"; prefix = "u8"; break;
    case SPVC_BASETYPE_INT16: scalar = "int16_t"; prefix = "i16"; break;
    case SPVC_BASETYPE_UINT16: scalar = "uint16_t"; prefix = "u16"; break;
    case SPVC_BASETYPE_INT32: scalar = "int"; prefix = "i"; break;
    case SPVC_BASETYPE_UINT32: scalar = "uint"; prefix = "u"; break;
    case SPVC_BASETYPE_INT64: scalar = "int64_t"; prefix = "i64"; break;
    case SPVC_BASETYPE_UINT64: scalar = "uint64_t"; prefix = "u64"; break;
    case SPVC_BASETYPE_FP16: scalar = "float16_t"; prefix = "f16"; break;
    case SPVC_BASETYPE_FP32: scalar = "float"; prefix = ""; break;
    case SPVC_BASETYPE_FP64: scalar = "double"; prefix = "d"; break;
    case SPVC_BASETYPE_IMAGE: scalar = "image"; break;
    case SPVC_BASETYPE_SAMPLED_IMAGE: scalar = "sampler (combined)"; break;
    case SPVC_BASETYPE_SAMPLER: scalar = "sampler"; break;
    case SPVC_BASETYPE_ATOMIC_COUNTER: scalar = "atomic counter"; break;
    case SPVC_BASETYPE_ACCELERATION_STRUCTURE: scalar = "acceleration structure"; break;
    default: break;
    }
    int n;
    if (bt == SPVC_BASETYPE_STRUCT) {
        const char *name = spvc_compiler_get_name(comp, spvc_type_get_base_type_id(t));
        n = snprintf(buf, size, "struct %s", name && *name ? name : "(unnamed)");
    } else if (cols > 1) {
        n = snprintf(buf, size, "%smat%ux%u", bt == SPVC_BASETYPE_FP64 ? "d" : "", cols, vec);
    } else if (vec > 1) {
        n = snprintf(buf, size, "%svec%u", prefix, vec);
    } else {
        n = snprintf(buf, size, "%s", scalar);
    }
    unsigned dims = spvc_type_get_num_array_dimensions(t);
    for (unsigned d = 0; d < dims && n >= 0 && (size_t)n < size; d++) {
        /* SPIRV-Cross lists dimensions innermost first. */
        unsigned i = dims - 1 - d;
        if (spvc_type_array_dimension_is_literal(t, i) && spvc_type_get_array_dimension(t, i) == 0)
            n += snprintf(buf + n, size - (size_t)n, "[]");
        else if (spvc_type_array_dimension_is_literal(t, i))
            n += snprintf(buf + n, size - (size_t)n, "[%u]", (unsigned)spvc_type_get_array_dimension(t, i));
        else
            n += snprintf(buf + n, size - (size_t)n, "[spec]");
    }
}

static int member_offset(reflect_state *st, spvc_type t, unsigned i, uint32_t *out)
{
    unsigned off = 0;
    if (spvc_compiler_type_struct_member_offset(st->comp, t, i, &off) != SPVC_SUCCESS)
        return spvc_fail(st, "member offset");
    *out = off;
    return HPL_OK;
}

/* An array argument, or HPL_ERROR_KERNEL_SIGNATURE with `why` filled in
 * (the caller names the argument). Returns 1 when the member is not shaped
 * like an array struct at all. */
static int reflect_array(reflect_state *st, spvc_type mt, uint32_t base, hpl_arg_info *arg,
                         hpl__array_layout *layout, char *why, size_t why_size)
{
    spvc_compiler comp = st->comp;
    if (spvc_type_get_basetype(mt) != SPVC_BASETYPE_STRUCT || !is_plain(mt) ||
        spvc_type_get_num_member_types(mt) != HPL__ARRAY_FIELDS)
        return 1;
    spvc_type pt = spvc_compiler_get_type_handle(comp, spvc_type_get_member_type(mt, 0));
    if (!pt || spvc_type_get_storage_class(pt) != SpvStorageClassPhysicalStorageBuffer ||
        spvc_type_get_basetype(pt) != SPVC_BASETYPE_STRUCT || spvc_type_get_num_array_dimensions(pt) != 0)
        return 1;

    /* Pointee: a block whose member 0 is a runtime array of a scalar. */
    spvc_type_id pointee_id = spvc_type_get_base_type_id(pt);
    spvc_type pointee = spvc_compiler_get_type_handle(comp, pointee_id);
    if (!pointee || spvc_type_get_num_member_types(pointee) < 1) {
        snprintf(why, why_size, "its buffer reference does not point to a block { T v[]; }");
        return HPL_ERROR_KERNEL_SIGNATURE;
    }
    spvc_type_id arr_id = spvc_type_get_member_type(pointee, 0);
    spvc_type arr = spvc_compiler_get_type_handle(comp, arr_id);
    if (!arr || spvc_type_get_num_array_dimensions(arr) != 1 || !spvc_type_array_dimension_is_literal(arr, 0) ||
        spvc_type_get_array_dimension(arr, 0) != 0 || spvc_type_get_vector_size(arr) != 1 ||
        spvc_type_get_columns(arr) != 1 || spvc_type_get_storage_class(arr) == SpvStorageClassPhysicalStorageBuffer) {
        char d[96];
        describe_type(comp, arr_id, d, sizeof d);
        snprintf(why, why_size, "its buffer reference points to %s, not a runtime array of scalars", d);
        return HPL_ERROR_KERNEL_SIGNATURE;
    }
    hpl_type type = scalar_type(spvc_type_get_basetype(arr));
    if (type == HPL_TYPE_INVALID) {
        char d[96];
        describe_type(comp, arr_id, d, sizeof d);
        snprintf(why, why_size, "element type %s is not float, double, int, uint, int64_t or uint64_t", d);
        return HPL_ERROR_KERNEL_SIGNATURE;
    }
    uint32_t v_off = 0;
    int rc = member_offset(st, pointee, 0, &v_off);
    if (rc)
        return rc;
    unsigned stride = spvc_compiler_get_decoration(comp, arr_id, SpvDecorationArrayStride);
    if (v_off != 0 || stride != type_size(type)) {
        snprintf(why, why_size,
                 "its elements are not tightly packed (offset %u, array stride %u; use std430 or scalar layout)",
                 v_off, stride);
        return HPL_ERROR_KERNEL_SIGNATURE;
    }
    bool nonwritable = spvc_compiler_has_member_decoration(comp, pointee_id, 0, SpvDecorationNonWritable);
    bool nonreadable = spvc_compiler_has_member_decoration(comp, pointee_id, 0, SpvDecorationNonReadable);
    if (nonwritable && nonreadable) {
        snprintf(why, why_size, "its elements are both readonly and writeonly");
        return HPL_ERROR_KERNEL_SIGNATURE;
    }

    /* The other fields: uint vectors of one size N in 1..3. */
    unsigned ndims = 0;
    static const char *const field[HPL__ARRAY_FIELDS] = {"p",       "dims",    "stride",   "origin",
                                                         "part_lo", "part_hi", "owned_lo", "owned_hi"};
    for (unsigned f = 1; f < HPL__ARRAY_FIELDS; f++) {
        spvc_type_id fid = spvc_type_get_member_type(mt, f);
        spvc_type ft = spvc_compiler_get_type_handle(comp, fid);
        unsigned n = ft ? spvc_type_get_vector_size(ft) : 0;
        if (!ft || spvc_type_get_basetype(ft) != SPVC_BASETYPE_UINT32 || spvc_type_get_columns(ft) != 1 ||
            spvc_type_get_num_array_dimensions(ft) != 0 || n < 1 || n > 3 || (ndims && n != ndims)) {
            char d[96];
            describe_type(comp, fid, d, sizeof d);
            snprintf(why, why_size, "field %u (%s) is %s, expected uint or uvec2/uvec3 like the other fields", f,
                     field[f], d);
            return HPL_ERROR_KERNEL_SIGNATURE;
        }
        ndims = n;
    }

    /* Every field inside the argument block (valid SPIR-V may place members
     * anywhere up to 4 GiB: the sums are 64-bit). */
    for (unsigned f = 0; f < HPL__ARRAY_FIELDS; f++) {
        uint32_t off = 0;
        rc = member_offset(st, mt, f, &off);
        if (rc)
            return rc;
        uint64_t at = (uint64_t)base + off, end = at + (f == HPL__FIELD_POINTER ? 8u : 4u * ndims);
        if (end > HPL__ARG_RANGE) {
            snprintf(why, why_size,
                     "its field %s lies at bytes %llu..%llu of the argument block, past hplvk's limit of %u bytes",
                     field[f], (unsigned long long)at, (unsigned long long)end - 1, HPL__ARG_RANGE);
            return HPL_ERROR_KERNEL_SIGNATURE;
        }
        layout->field[f] = (uint32_t)at;
    }
    if (layout->field[HPL__FIELD_POINTER] % 8 != 0) {
        snprintf(why, why_size, "its buffer reference is at offset %u, not a multiple of 8",
                 layout->field[HPL__FIELD_POINTER]);
        return HPL_ERROR_KERNEL_SIGNATURE;
    }
    arg->kind = HPL_ARG_ARRAY;
    arg->type = type;
    arg->ndims = (int)ndims;
    arg->access = nonwritable ? HPL_READ : nonreadable ? HPL_WRITE : HPL_READ_WRITE;
    arg->offset = base;
    return HPL_OK;
}

static int reflect_args(reflect_state *st, const spvc_reflected_resource *block, hpl__reflection *out)
{
    spvc_compiler comp = st->comp;
    spvc_type vt = spvc_compiler_get_type_handle(comp, block->type_id);
    spvc_type bt = spvc_compiler_get_type_handle(comp, block->base_type_id);
    if (!vt || !bt)
        return spvc_fail(st, "argument block type");
    if (spvc_type_get_num_array_dimensions(vt) != 0)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                         "the argument block '%s' (set 0, binding 0) is an array of blocks; declare one hpl_args block",
                         block->name ? block->name : "");
    unsigned count = spvc_type_get_num_member_types(bt);
    if (count > HPL__MAX_ARGS)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "the kernel has %u arguments; at most %d are supported", count,
                         HPL__MAX_ARGS);
    for (unsigned i = 0; i < count; i++) {
        hpl_arg_info *arg = &out->args[i];
        const char *name = spvc_compiler_get_member_name(comp, block->base_type_id, i);
        if (name && *name)
            snprintf(arg->name, sizeof arg->name, "%s", name);
        else
            snprintf(arg->name, sizeof arg->name, "arg%u", i);

        uint32_t base = 0;
        int rc = member_offset(st, bt, i, &base);
        if (rc)
            return rc;
        spvc_type_id mid = spvc_type_get_member_type(bt, i);
        spvc_type mt = spvc_compiler_get_type_handle(comp, mid);
        if (!mt)
            return spvc_fail(st, "argument type");

        hpl_type stype = scalar_type(spvc_type_get_basetype(mt));
        if (stype != HPL_TYPE_INVALID && is_plain(mt)) {
            if (base % type_size(stype) != 0)
                return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                                 "argument %u '%s' (%s) is at offset %u, not aligned to its size", i, arg->name,
                                 type_name(stype), base);
            if ((uint64_t)base + type_size(stype) > HPL__ARG_RANGE)
                return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                                 "argument %u '%s' (%s) is at offset %u of the argument block; hplvk's limit is %u "
                                 "bytes (an argument must end by byte %u)",
                                 i, arg->name, type_name(stype), base, HPL__ARG_RANGE, HPL__ARG_RANGE);
            arg->kind = HPL_ARG_SCALAR;
            arg->type = stype;
            arg->ndims = 0;
            arg->access = HPL_READ;
            arg->offset = base;
            continue;
        }
        char why[256] = "";
        rc = reflect_array(st, mt, base, arg, &out->layout[i], why, sizeof why);
        if (rc == HPL_OK)
            continue;
        char d[96];
        describe_type(comp, mid, d, sizeof d);
        if (rc == HPL_ERROR_KERNEL_SIGNATURE && why[0])
            return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "argument %u '%s' (%s): %s", i, arg->name, d, why);
        if (rc != 1)
            return rc;
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                         "argument %u '%s' has type %s; an argument is a scalar (float, double, int, uint, "
                         "int64_t, uint64_t) or an array declared with hpl_in/hpl_out/hpl_inout(T, N)",
                         i, arg->name, d);
    }
    size_t size = 0;
    if (count > 0 && spvc_compiler_get_declared_struct_size(comp, bt, &size) != SPVC_SUCCESS)
        return spvc_fail(st, "argument block size");
    out->arg_count = (int)count;
    /* SPIRV-Cross sizes a block by its last member; members need not be in
     * offset order, so take the furthest end too. */
    for (unsigned i = 0; i < count; i++)
        size = HPL__MAX(size, (size_t)hpl__arg_end(out, (int)i)); /* each <= HPL__ARG_RANGE */
    if (size > HPL__ARG_RANGE)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                         "the argument block '%s' is %zu bytes; hplvk's limit is %u bytes",
                         block->name ? block->name : "", size, HPL__ARG_RANGE);
    out->args_size = (uint32_t)size;
    return HPL_OK;
}

uint64_t hpl__arg_end(const hpl__reflection *r, int i)
{
    const hpl_arg_info *a = &r->args[i];
    if (a->kind == HPL_ARG_SCALAR)
        return (uint64_t)a->offset + type_size(a->type);
    uint64_t end = 0, width = 4u * (uint64_t)(a->ndims > 0 && a->ndims <= 3 ? a->ndims : 3);
    for (unsigned f = 0; f < HPL__ARRAY_FIELDS; f++)
        end = HPL__MAX(end, (uint64_t)r->layout[i].field[f] + (f == HPL__FIELD_POINTER ? 8u : width));
    return end;
}

int hpl__args_fit(const hpl__reflection *r, uint32_t limit, int code, const char *limit_what)
{
    for (int i = 0; i < r->arg_count; i++) {
        uint64_t end = hpl__arg_end(r, i);
        if (end > limit)
            return hpl__fail(code, "argument %d '%s' ends at byte %llu of the argument block, past %s (%u bytes)", i,
                             r->args[i].name, (unsigned long long)end, limit_what, limit);
    }
    if (r->args_size > limit)
        return hpl__fail(code, "the argument block is %u bytes, more than %s (%u bytes)", r->args_size, limit_what,
                         limit);
    return HPL_OK;
}

static const struct {
    spvc_resource_type type;
    const char *what;
} other_resources[] = {
    {SPVC_RESOURCE_TYPE_STORAGE_BUFFER, "storage buffer"},
    {SPVC_RESOURCE_TYPE_STORAGE_IMAGE, "storage image"},
    {SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, "sampled image"},
    {SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, "texture"},
    {SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS, "sampler"},
    {SPVC_RESOURCE_TYPE_ATOMIC_COUNTER, "atomic counter"},
    {SPVC_RESOURCE_TYPE_SUBPASS_INPUT, "subpass input"},
    {SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE, "acceleration structure"},
    {SPVC_RESOURCE_TYPE_SHADER_RECORD_BUFFER, "shader record buffer"},
};

static int reject_resource(reflect_state *st, const char *what, const spvc_reflected_resource *r)
{
    unsigned set = spvc_compiler_get_decoration(st->comp, r->id, SpvDecorationDescriptorSet);
    unsigned binding = spvc_compiler_get_decoration(st->comp, r->id, SpvDecorationBinding);
    const char *var = spvc_compiler_get_name(st->comp, r->id);
    char name[160];
    if (var && *var && r->name && strcmp(var, r->name) != 0)
        snprintf(name, sizeof name, "'%s' (block '%s')", var, r->name);
    else
        snprintf(name, sizeof name, "'%s'", r->name && *r->name ? r->name : (var && *var ? var : "(unnamed)"));
    return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                     "the kernel declares %s %s (set %u, binding %u); hplvk kernels take arrays through the "
                     "hpl_args block (hpl_in/hpl_out/hpl_inout) and no other descriptors",
                     what, name, set, binding);
}

static int reflect_resources(reflect_state *st, spvc_resources res, hpl__reflection *out)
{
    for (size_t k = 0; k < HPL__ARRAY_LEN(other_resources); k++) {
        const spvc_reflected_resource *list = NULL;
        size_t n = 0;
        if (spvc_resources_get_resource_list_for_type(res, other_resources[k].type, &list, &n) != SPVC_SUCCESS)
            return spvc_fail(st, "resource list");
        if (n > 0)
            return reject_resource(st, other_resources[k].what, &list[0]);
    }
    const spvc_reflected_resource *ubos = NULL;
    size_t nubo = 0;
    if (spvc_resources_get_resource_list_for_type(res, SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, &ubos, &nubo) !=
        SPVC_SUCCESS)
        return spvc_fail(st, "resource list");
    const spvc_reflected_resource *args = NULL;
    for (size_t i = 0; i < nubo; i++) {
        unsigned set = spvc_compiler_get_decoration(st->comp, ubos[i].id, SpvDecorationDescriptorSet);
        unsigned binding = spvc_compiler_get_decoration(st->comp, ubos[i].id, SpvDecorationBinding);
        if (set == 0 && binding == 0 && !args)
            args = &ubos[i];
        else
            return reject_resource(st, "uniform block", &ubos[i]);
    }
    /* Push constants: the prelude's launch geometry block (eval pushes
     * exactly that); a bigger block could not be fed. */
    const spvc_reflected_resource *pcs = NULL;
    size_t npc = 0;
    if (spvc_resources_get_resource_list_for_type(res, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &pcs, &npc) != SPVC_SUCCESS)
        return spvc_fail(st, "resource list");
    for (size_t i = 0; i < npc; i++) {
        size_t size = 0;
        spvc_type t = spvc_compiler_get_type_handle(st->comp, pcs[i].base_type_id);
        if (!t || spvc_compiler_get_declared_struct_size(st->comp, t, &size) != SPVC_SUCCESS)
            return spvc_fail(st, "push constant block size");
        if (size > HPL__PUSH_BYTES)
            return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                             "the kernel's push constant block '%s' is %zu bytes; hplvk kernels use only the "
                             "prelude's %u-byte block (launch geometry) and take arguments through hpl_args",
                             pcs[i].name ? pcs[i].name : "", size, HPL__PUSH_BYTES);
    }
    out->arg_count = 0;
    out->args_size = 0;
    return args ? reflect_args(st, args, out) : HPL_OK;
}

static int reflect_local_size(reflect_state *st, hpl__reflection *out)
{
    spvc_compiler comp = st->comp;
    for (unsigned i = 0; i < 3; i++) {
        unsigned v = spvc_compiler_get_execution_mode_argument_by_index(comp, SpvExecutionModeLocalSize, i);
        out->local_size[i] = v ? v : 1;
    }
    spvc_specialization_constant sc[3];
    memset(sc, 0, sizeof sc);
    spvc_constant_id wg = spvc_compiler_get_work_group_size_specialization_constants(comp, &sc[0], &sc[1], &sc[2]);
    bool choosable = wg != 0;
    for (unsigned i = 0; i < 3 && wg != 0; i++) {
        if (sc[i].id != 0) {
            spvc_constant c = spvc_compiler_get_constant_handle(comp, sc[i].id);
            if (c)
                out->local_size[i] = spvc_constant_get_scalar_u32(c, 0, 0);
            if (!spvc_compiler_has_decoration(comp, sc[i].id, SpvDecorationSpecId) || sc[i].constant_id != i)
                choosable = false;
        } else {
            /* A plain constant component of the WorkgroupSize composite. */
            spvc_constant c = spvc_compiler_get_constant_handle(comp, wg);
            if (c)
                out->local_size[i] = spvc_constant_get_scalar_u32(c, 0, i);
            choosable = false;
        }
    }
    for (unsigned i = 0; i < 3; i++) {
        if (out->local_size[i] == 0)
            return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "the kernel's local size %c is 0", "xyz"[i]);
    }
    out->local_size_choosable = choosable;
    return HPL_OK;
}

/* Whether an instruction other than names, decorations and the id's own
 * definition refers to the id (or a literal equals it: then too). The
 * module has passed SPIRV-Tools' validator. */
static bool id_referenced(const uint32_t *spirv, size_t words, uint32_t id)
{
    for (size_t i = 5; i < words;) {
        uint32_t n = spirv[i] >> 16, op = spirv[i] & 0xffff;
        if (n == 0 || n > words - i)
            return true;
        bool annotation = op == SpvOpName || op == SpvOpMemberName || op == SpvOpDecorate ||
                          op == SpvOpMemberDecorate || op == SpvOpDecorateString;
        bool definition = n > 2 && spirv[i + 2] == id &&
                          (op == SpvOpSpecConstantComposite || op == SpvOpConstantComposite || op == SpvOpVariable);
        for (uint32_t k = 1; k < n && !annotation && !definition; k++)
            if (spirv[i + k] == id)
                return true;
        i += n;
    }
    return false;
}

/* Whether the library may swap the dispatch's dimensions (hplvk.glsl's
 * hplvk_walk): the module has the prelude's walk constant, a 32-bit
 * unsigned scalar of that name (a module's own constant 1000 is not it),
 * and reads nothing that tells a workgroup's shape or
 * place (that would see the swap): no gl_LocalInvocationID,
 * gl_LocalInvocationIndex, gl_WorkGroupID or gl_NumWorkGroups, and no use
 * of gl_WorkGroupSize (glslang declares that one in every module whose
 * local size is specialization constants, used or not). */
static int reflect_walk(reflect_state *st, spvc_resources res, const uint32_t *spirv, size_t words,
                        hpl__reflection *out)
{
    spvc_compiler comp = st->comp;
    const spvc_specialization_constant *sc = NULL;
    size_t n = 0;
    if (spvc_compiler_get_specialization_constants(comp, &sc, &n) != SPVC_SUCCESS)
        return spvc_fail(st, "specialization constants");
    bool has_walk = false;
    for (size_t i = 0; i < n; i++) {
        if (sc[i].constant_id != HPL__WALK_SPEC_ID && sc[i].constant_id != HPL__CHECKED_SPEC_ID)
            continue;
        spvc_constant c = spvc_compiler_get_constant_handle(comp, sc[i].id);
        spvc_type t = c ? spvc_compiler_get_type_handle(comp, spvc_constant_get_type(c)) : NULL;
        const char *name = spvc_compiler_get_name(comp, sc[i].id);
        bool scalar = t && spvc_type_get_vector_size(t) == 1 && spvc_type_get_columns(t) == 1 && name;
        if (sc[i].constant_id == HPL__WALK_SPEC_ID)
            has_walk = scalar && spvc_type_get_basetype(t) == SPVC_BASETYPE_UINT32 && !strcmp(name, "hplvk_walk");
        else
            out->checkable = scalar && spvc_type_get_basetype(t) == SPVC_BASETYPE_UINT32 &&
                             !strcmp(name, "hplvk_checks");
    }
    out->walkable = has_walk;
    if (!has_walk)
        return HPL_OK;
    const spvc_reflected_builtin_resource *ins = NULL;
    size_t nin = 0;
    if (spvc_resources_get_builtin_resource_list_for_type(res, SPVC_BUILTIN_RESOURCE_TYPE_STAGE_INPUT, &ins, &nin) !=
        SPVC_SUCCESS)
        return spvc_fail(st, "builtin inputs");
    for (size_t i = 0; i < nin; i++) {
        SpvBuiltIn b = ins[i].builtin;
        if (b == SpvBuiltInLocalInvocationId || b == SpvBuiltInLocalInvocationIndex || b == SpvBuiltInWorkgroupId ||
            b == SpvBuiltInNumWorkgroups)
            out->walkable = false;
    }
    spvc_specialization_constant x, y, z;
    spvc_constant_id size_id = spvc_compiler_get_work_group_size_specialization_constants(comp, &x, &y, &z);
    if (size_id && id_referenced(spirv, words, size_id))
        out->walkable = false;
    return HPL_OK;
}

/* UTF-8 without control characters (what the validation layer accepts). */
static bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : 4;
        if (n == 4 || (n == 1 && *p < 0xc2) || (n == 3 && *p > 0xf4) || *p < 0x20 || *p == 0x7f)
            return false;
        uint32_t cp = n == 0 ? *p : *p & (0x3f >> n);
        for (unsigned k = 1; k <= n; k++) {
            if ((p[k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[k] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        p += n + 1;
    }
    return true;
}

static int reflect_module(reflect_state *st, const uint32_t *spirv, size_t words, hpl__reflection *out)
{
    spvc_parsed_ir ir = NULL;
    if (spvc_context_parse_spirv(st->ctx, spirv, words, &ir) != SPVC_SUCCESS)
        return spvc_fail(st, "parse");
    if (spvc_context_create_compiler(st->ctx, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &st->comp) !=
        SPVC_SUCCESS)
        return spvc_fail(st, "create compiler");

    const spvc_entry_point *eps = NULL;
    size_t neps = 0;
    if (spvc_compiler_get_entry_points(st->comp, &eps, &neps) != SPVC_SUCCESS)
        return spvc_fail(st, "entry points");
    const spvc_entry_point *ep = NULL;
    for (size_t i = 0; i < neps && !ep; i++)
        if (eps[i].execution_model == SpvExecutionModelGLCompute)
            ep = &eps[i];
    if (!ep)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "not a compute shader: the module has %s",
                         neps ? "no GLCompute entry point" : "no entry point");
    if (strlen(ep->name) >= sizeof out->entry_point)
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE, "entry point name '%.40s...' is too long (max %zu characters)",
                         ep->name, sizeof out->entry_point - 1);
    /* The name goes to the driver, which takes UTF-8 only. */
    if (!utf8_valid(ep->name))
        return hpl__fail(HPL_ERROR_KERNEL_SIGNATURE,
                         "the entry point's name is not valid UTF-8 or has control characters");
    snprintf(out->entry_point, sizeof out->entry_point, "%s", ep->name);
    if (spvc_compiler_set_entry_point(st->comp, ep->name, SpvExecutionModelGLCompute) != SPVC_SUCCESS)
        return spvc_fail(st, "set entry point");

    const SpvCapability *caps = NULL;
    size_t ncaps = 0;
    if (spvc_compiler_get_declared_capabilities(st->comp, &caps, &ncaps) != SPVC_SUCCESS)
        return spvc_fail(st, "capabilities");
    for (size_t i = 0; i < ncaps; i++) {
        if (caps[i] == SpvCapabilityFloat64)
            out->needs_float64 = true;
        if (caps[i] == SpvCapabilityInt64)
            out->needs_int64 = true;
    }

    int rc = reflect_local_size(st, out);
    if (rc != HPL_OK)
        return rc;
    spvc_resources res = NULL;
    if (spvc_compiler_create_shader_resources(st->comp, &res) != SPVC_SUCCESS)
        return spvc_fail(st, "shader resources");
    rc = reflect_walk(st, res, spirv, words, out);
    return rc == HPL_OK ? reflect_resources(st, res, out) : rc;
}

int hpl__reflect(const uint32_t *spirv, size_t words, hpl__reflection *out)
{
    if (!spirv || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "reflect: no SPIR-V");
    hpl__spirv_facts facts;
    int vrc = hpl__spirv_validate(spirv, words, &facts);
    if (vrc != HPL_OK)
        return vrc;

    reflect_state st;
    memset(&st, 0, sizeof st);
    if (spvc_context_create(&st.ctx) != SPVC_SUCCESS || !st.ctx)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "reflect: cannot create a SPIRV-Cross context");
    spvc_context_set_error_callback(st.ctx, on_spvc_error, &st);

    hpl__reflection *r = hpl__calloc(1, sizeof *r);
    int rc = r ? reflect_module(&st, spirv, words, r)
               : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "reflect: out of host memory");
    if (rc == HPL_OK) {
        r->features = facts.features;
        r->shared_bytes = facts.shared_bytes;
    }
    spvc_context_destroy(st.ctx);
    if (rc == HPL_OK)
        *out = *r; /* out is untouched on failure */
    hpl__free(r);
    return rc;
}
