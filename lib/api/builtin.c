/* The library's own kernels (shaders/): fill and the device side of
 * reductions, run through the same subkernel machinery as eval. */
#include "api.h"

#include "embedded.h"
#include "launch.h"
#include "subkernel.h"

#include <string.h>

/* ---- fill ------------------------------------------------------------- */

static int fill_kernel(hpl_context *ctx, hpl__kernel **out)
{
    if (!ctx->fill_kernel) {
        hpl_kernel_desc desc = {.source = {.spirv = hpl__fill_spv, .spirv_words = hpl__fill_spv_words, .name = "fill"}};
        int rc = hpl__kernel_create_locked(ctx, &desc, &ctx->fill_kernel);
        if (rc != HPL_OK)
            return rc;
    }
    *out = ctx->fill_kernel;
    return HPL_OK;
}

/* On a device: shaders/fill.comp writes the owned box viewed as 32-bit
 * words, innermost dimension first. */
int hpl__fill_on_device(hpl_context *ctx, hpl__array *a, const void *value, int device)
{
    hpl__kernel *k = NULL;
    int rc = fill_kernel(ctx, &k);
    if (rc != HPL_OK)
        return rc;
    uint32_t words[2] = {0, 0};
    size_t esize = hpl_type_size(a->type);
    memcpy(words, value, esize);
    hpl__subkernel s;
    hpl__subkernel_init(&s, &ctx->devices[device], k);
    hpl__arg_view *v = &s.views[0];
    *v = (hpl__arg_view){.array = a, .at = {a->root, a->owned, a->owned}, .type = HPL_UINT32, .ndims = a->ndims,
                .words = (uint32_t)(esize / 4)};
    for (int i = 0; i < 3; i++)
        v->dims[i] = a->owned.hi[i] - a->owned.lo[i];
    hpl__kernel_dims(v, s.global);
    for (int i = 0; i < 3; i++)
        if (s.global[i] > UINT32_MAX)
            return hpl__fail(HPL_ERROR_TOO_LARGE, "'%s' is too large to fill on a device (a row of over 2^32 words)",
                             a->name);
    static const uint32_t no_local[3] = {0, 0, 0};
    rc = hpl__subkernel_setup(ctx, &s, no_local);
    hpl_arg args[4] = {hpl_arr((hpl_array){a->id}), hpl_u32(words[0]), hpl_u32(words[1]),
                       hpl_u32((uint32_t)(esize / 4))};
    return rc == HPL_OK ? hpl__subkernel_run(ctx, &s, args, s.global) : rc;
}

/* ---- reductions (the device side; lib/api/reduce.c has the rest) ------------ */

static int reduce_kernel(hpl_context *ctx, hpl_type type, hpl__kernel **out)
{
    static const struct {
        const uint32_t *spirv;
        const size_t *words;
    } spirv[HPL_TYPE_COUNT_] = {
        [HPL_FLOAT32] = {hpl__reduce_float_spv, &hpl__reduce_float_spv_words},
        [HPL_FLOAT64] = {hpl__reduce_double_spv, &hpl__reduce_double_spv_words},
        [HPL_INT32] = {hpl__reduce_int_spv, &hpl__reduce_int_spv_words},
        [HPL_UINT32] = {hpl__reduce_uint_spv, &hpl__reduce_uint_spv_words},
        [HPL_INT64] = {hpl__reduce_int64_t_spv, &hpl__reduce_int64_t_spv_words},
        [HPL_UINT64] = {hpl__reduce_uint64_t_spv, &hpl__reduce_uint64_t_spv_words},
    };
    if (!ctx->reduce_kernels[type]) {
        hpl_kernel_desc desc = {.source = {.spirv = spirv[type].spirv, .spirv_words = *spirv[type].words,
                                           .name = "reduce"}};
        int rc = hpl__kernel_create_locked(ctx, &desc, &ctx->reduce_kernels[type]);
        if (rc != HPL_OK)
            return rc;
    }
    *out = ctx->reduce_kernels[type];
    return HPL_OK;
}

bool hpl__reduce_supported(const hpl__device *d, hpl_type type)
{
    bool wide = type == HPL_FLOAT64 || type == HPL_INT64 || type == HPL_UINT64;
    return !wide || (type == HPL_FLOAT64 ? d->info.float64 : d->info.int64);
}

/* shaders/reduce.comp over `box` of root on device: `groups` partial values
 * into partials[first ...]. */
int hpl__reduce_on_device(hpl_context *ctx, hpl__array *root, const hpl__box *box, int device, hpl__array *partials,
                          uint64_t first, uint32_t groups, hpl_reduction op)
{
    hpl__kernel *k = NULL;
    int rc = reduce_kernel(ctx, root->type, &k);
    if (rc != HPL_OK)
        return rc;
    hpl__subkernel s;
    hpl__subkernel_init(&s, &ctx->devices[device], k);
    s.global[0] = (uint64_t)groups * 256;
    s.global[1] = s.global[2] = 1;
    hpl__arg_view *x = &s.views[0], *p = &s.views[1];
    *x = (hpl__arg_view){.array = root, .at = {root, *box, *box}, .type = root->type, .ndims = 3};
    for (int i = 0; i < 3; i++)
        x->dims[i] = box->hi[i] - box->lo[i];
    hpl__box part = {.lo = {first, 0, 0}, .hi = {first + groups, 1, 1}};
    *p = (hpl__arg_view){.array = partials, .at = {partials, part, part}, .type = root->type, .ndims = 1, .dims = {groups, 1, 1}};
    static const uint32_t no_local[3] = {0, 0, 0};
    rc = hpl__subkernel_setup(ctx, &s, no_local);
    hpl_arg args[3] = {hpl_arr((hpl_array){root->id}), hpl_arr((hpl_array){partials->id}), hpl_u32((uint32_t)op)};
    return rc == HPL_OK ? hpl__subkernel_run(ctx, &s, args, s.global) : rc;
}
