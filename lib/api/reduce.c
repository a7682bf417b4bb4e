/* Reductions (hpl_array_reduce): every device reduces the boxes of the
 * (sub)array whose newest data it holds (shaders/reduce.comp: one partial
 * value per work-group), the host reduces the rest, and combines. Nothing
 * moves but the partial values, except data valid only on a device that
 * cannot reduce its type (no 64-bit support), which goes to the host. */
#include "api.h"

#include "acquired.h"
#include "copy.h"
#include "rank_state.h"
#include "storage.h"
#include "transfer.h"

#include <string.h>

#define GROUP_SIZE 256u    /* reduce.comp's local size */
#define MAX_GROUPS 1024u   /* per box: enough to fill a GPU */
#define MAX_BOX (1u << 31) /* reduce.comp indexes boxes with 32 bits */

/* ---- the accumulator (host side) ---------------------------------------- */

/* Floats add in double; integers in 64-bit unsigned arithmetic (wrapping
 * like the device's); min and max compare in the type's own order. */
typedef struct acc {
    hpl_type type;
    hpl_reduction op;
    bool have;
    union {
        double f;
        int64_t i;
        uint64_t u;
    } v;
} acc;

#define ACC_ROW(T, FIELD, ACC_T)                                                   \
    static void row_##FIELD##_##T(acc *a, const T *x, uint64_t n)                  \
    {                                                                              \
        uint64_t k = 0;                                                            \
        if (!a->have && n) {                                                       \
            a->v.FIELD = (ACC_T)x[k++];                                            \
            a->have = true;                                                        \
        }                                                                          \
        ACC_T s = a->v.FIELD;                                                      \
        switch (a->op) {                                                           \
        case HPL_REDUCE_SUM: for (; k < n; k++) s += (ACC_T)x[k]; break;           \
        case HPL_REDUCE_PRODUCT: for (; k < n; k++) s *= (ACC_T)x[k]; break;       \
        case HPL_REDUCE_MIN: for (; k < n; k++) s = x[k] < s ? (ACC_T)x[k] : s; break; \
        case HPL_REDUCE_MAX: for (; k < n; k++) s = x[k] > s ? (ACC_T)x[k] : s; break; \
        }                                                                          \
        a->v.FIELD = s;                                                            \
    }

ACC_ROW(float, f, double)
ACC_ROW(double, f, double)
ACC_ROW(uint32_t, u, uint64_t)
ACC_ROW(uint64_t, u, uint64_t)
ACC_ROW(int32_t, i, int64_t)
ACC_ROW(int64_t, i, int64_t)

/* Signed sums and products wrap: do them on the unsigned bits. */
static void row_signed_wrapping(acc *a, const void *x, uint64_t n, bool wide)
{
    uint64_t s = a->have ? (uint64_t)a->v.i : (a->op == HPL_REDUCE_SUM ? 0 : 1);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t e = wide ? (uint64_t)((const int64_t *)x)[k] : (uint64_t)(int64_t)((const int32_t *)x)[k];
        s = a->op == HPL_REDUCE_SUM ? s + e : s * e;
    }
    a->v.i = (int64_t)s; /* implementation-defined above INT64_MAX: GCC and Clang keep the bits */
    a->have = a->have || n;
}

static void acc_row(acc *a, const void *x, uint64_t n)
{
    bool wrapping = a->op == HPL_REDUCE_SUM || a->op == HPL_REDUCE_PRODUCT;
    switch (a->type) {
    case HPL_FLOAT32: row_f_float(a, x, n); break;
    case HPL_FLOAT64: row_f_double(a, x, n); break;
    case HPL_UINT32: row_u_uint32_t(a, x, n); break;
    case HPL_UINT64: row_u_uint64_t(a, x, n); break;
    case HPL_INT32: wrapping ? row_signed_wrapping(a, x, n, false) : row_i_int32_t(a, x, n); break;
    case HPL_INT64: wrapping ? row_signed_wrapping(a, x, n, true) : row_i_int64_t(a, x, n); break;
    default: break;
    }
}

static void acc_result(const acc *a, void *out)
{
    switch (a->type) {
    case HPL_FLOAT32: *(float *)out = (float)a->v.f; break;
    case HPL_FLOAT64: *(double *)out = a->v.f; break;
    case HPL_UINT32: *(uint32_t *)out = (uint32_t)a->v.u; break;
    case HPL_UINT64: *(uint64_t *)out = a->v.u; break;
    case HPL_INT32: *(int32_t *)out = (int32_t)(uint32_t)(uint64_t)a->v.i; break;
    case HPL_INT64: *(int64_t *)out = a->v.i; break;
    default: break;
    }
}

typedef struct box_job {
    acc *acc;
    const uint8_t *host;
    size_t esize;
} box_job;

static void acc_run(void *user, uint64_t offset, uint64_t unused, uint64_t count)
{
    (void)unused;
    box_job *j = user;
    acc_row(j->acc, j->host + offset * j->esize, count);
}

/* Adds box b of root's host storage, one contiguous run at a time (whole
 * rows or planes are one run). */
static void acc_box(acc *a, const hpl__array *root, const hpl__box *b)
{
    const hpl__box *whole = &root->coherence.whole;
    box_job j = {.acc = a, .host = root->host, .esize = hpl_type_size(root->type)};
    hpl__box_runs(b, whole, whole, hpl__no_shift, acc_run, &j);
}

/* ---- who reduces what ----------------------------------------------------- */

typedef struct run {
    int device;
    hpl__box box;
    uint64_t first;  /* its partial values in the partials array */
    uint32_t groups;
} run;

typedef struct plan {
    run *runs;
    int count, capacity;
    uint64_t partials;
    hpl__region host; /* what the host reduces */
} plan;

static bool add_run(plan *p, int device, const hpl__box *box)
{
    if (p->count == p->capacity) {
        int cap = p->capacity ? 2 * p->capacity : 8;
        run *list = hpl__realloc(p->runs, (size_t)cap * sizeof *list);
        if (!list)
            return false;
        p->runs = list;
        p->capacity = cap;
    }
    uint64_t count = hpl__box_volume(box);
    uint64_t groups = HPL__MIN((count + GROUP_SIZE - 1) / GROUP_SIZE, MAX_GROUPS);
    p->runs[p->count++] = (run){.device = device, .box = *box, .first = p->partials, .groups = (uint32_t)groups};
    p->partials += groups;
    return true;
}

/* Gives each device the part of a's box valid in its buffers (first come,
 * in device order), the host what is left. Over ranks, this rank reduces
 * only what it holds and no rank before it does. */
static bool plan_make(hpl_context *ctx, const hpl__array *a, plan *p)
{
    const hpl__array *root = a->root;
    const hpl__coherence *c = &root->coherence;
    hpl__region take;
    hpl__region_init(&take);
    bool ok = hpl__region_set_box(&p->host, &a->box);
    if (ok && root->ranks)
        ok = hpl__rank_state_first_holder(root->ranks, ctx->span->rank, &p->host, &p->host);
    for (int i = 0; ok && i < root->instance_count; i++) {
        const hpl__instance *inst = &root->instances[i];
        if (!hpl__reduce_supported(&ctx->devices[inst->device], root->type))
            continue;
        ok = hpl__region_copy(&take, &c->mem[inst->slot].valid) && hpl__region_intersect(&take, &p->host);
        for (uint32_t b = 0; ok && b < take.count; b++) {
            if (hpl__box_volume(&take.boxes[b]) >= MAX_BOX)
                continue; /* stays with the host */
            ok = add_run(p, inst->device, &take.boxes[b]) && hpl__region_subtract_box(&p->host, &take.boxes[b]);
        }
    }
    hpl__region_free(&take);
    return ok;
}

static void plan_free(plan *p)
{
    hpl__free(p->runs);
    hpl__region_free(&p->host);
}

/* ---- the reduction -------------------------------------------------------- */

/* Submits the device runs into a new partials array (*partials, NULL when
 * no device reduces anything) and the fetches of host boxes valid only on a
 * device. */
static int submit_runs(hpl_context *ctx, hpl__array *root, const plan *p, hpl_reduction op, hpl__array **partials)
{
    int rc = hpl__fetch_to_host(ctx, root, &p->host);
    if (rc != HPL_OK || p->count == 0)
        return rc;
    hpl_array_desc desc = {.type = root->type, .dims = {p->partials}, .name = "partial values"};
    rc = hpl__array_make(ctx, &desc, partials);
    for (int i = 0; rc == HPL_OK && i < p->count; i++) {
        const run *r = &p->runs[i];
        rc = hpl__reduce_on_device(ctx, root, &r->box, r->device, *partials, r->first, r->groups, op);
    }
    return rc;
}

/* Waits for the partial values and the host boxes, and combines them. The
 * waits release the lock: handles are looked up again. */
static int combine(hpl_context *ctx, hpl_array handle, hpl__array *partials, const plan *p, acc *a)
{
    int rc = HPL_OK;
    if (partials) {
        rc = hpl__host_sync(ctx, partials, &partials->box, true, false);
        if (rc == HPL_OK)
            acc_box(a, partials, &partials->box);
    }
    hpl__array *array = NULL;
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, handle, &array);
    if (rc == HPL_OK)
        rc = hpl__host_sync(ctx, array->root, &array->box, false, false);
    if (rc == HPL_OK)
        rc = hpl__array_get(ctx, handle, &array);
    for (uint32_t b = 0; rc == HPL_OK && b < p->host.count; b++)
        acc_box(a, array->root, &p->host.boxes[b]);
    return rc;
}

/* into = into op from (from first when into has nothing): the partial
 * values of the ranks, combined in rank order. */
static void acc_merge(acc *into, const acc *from)
{
    if (!from->have)
        return;
    if (!into->have) {
        *into = *from;
        return;
    }
    bool f = into->type == HPL_FLOAT32 || into->type == HPL_FLOAT64;
    bool u = into->type == HPL_UINT32 || into->type == HPL_UINT64;
    switch (into->op) {
    case HPL_REDUCE_SUM:
        if (f)
            into->v.f += from->v.f;
        else
            into->v.u += from->v.u; /* signed too: wrapping, on the bits */
        break;
    case HPL_REDUCE_PRODUCT:
        if (f)
            into->v.f *= from->v.f;
        else
            into->v.u *= from->v.u;
        break;
    case HPL_REDUCE_MIN:
        if (f ? from->v.f < into->v.f : u ? from->v.u < into->v.u : from->v.i < into->v.i)
            into->v = from->v;
        break;
    case HPL_REDUCE_MAX:
        if (f ? from->v.f > into->v.f : u ? from->v.u > into->v.u : from->v.i > into->v.i)
            into->v = from->v;
        break;
    }
}

/* What each rank sends of a reduction over ranks. */
typedef struct rank_partial {
    acc value;
    int32_t status; /* HPL_OK, or why its part failed */
} rank_partial;

/* Over ranks: every rank's partial value, combined in rank order, so that
 * every rank gets the same result. Every rank calls it, also when its own
 * part failed (rc), so that none waits for it: then every rank fails. */
static int combine_ranks(hpl_context *ctx, int rc, acc *sum)
{
    hpl__span *sp = ctx->span;
    rank_partial *all = hpl__calloc((size_t)sp->ranks + 1, sizeof *all);
    if (!all)
        return rc != HPL_OK ? rc : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    rank_partial *mine = &all[sp->ranks]; /* zeroed: padding is sent too */
    mine->value.type = sum->type;
    mine->value.op = sum->op;
    mine->value.have = sum->have;
    mine->value.v = sum->v;
    mine->status = rc;
    char error[512] = "";
    int sent = sp->transport.allgather(sp->transport.user, mine, sizeof *mine, all, error, sizeof error);
    if (rc == HPL_OK && sent != HPL_OK)
        rc = hpl__fail(sent, "the ranks could not combine their partial values: %s", error);
    acc total = {.type = sum->type, .op = sum->op};
    for (int r = 0; rc == HPL_OK && r < sp->ranks; r++) {
        if (all[r].status != HPL_OK)
            rc = hpl__fail(HPL_ERROR_RANKS_DIFFER, "rank %d of %d failed its part of the reduction: %s", r, sp->ranks,
                           hpl_error_string(all[r].status));
        acc_merge(&total, &all[r].value);
    }
    if (rc == HPL_OK)
        *sum = total;
    hpl__free(all);
    return rc;
}

static int reduce_locked(hpl_context *ctx, hpl_array handle, hpl_reduction op, void *result)
{
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (ctx->span)
        rc = hpl__span_agree(ctx, rc, rc == HPL_OK ? a : NULL, "hpl_array_reduce(op %d)", (int)op);
    if (rc != HPL_OK)
        return rc;
    hpl__array *root = a->root;
    hpl_type type = a->type;
    /* Over ranks, where the array was last used must stay the same on every
     * rank: only some ranks' devices reduce (they would record their own). */
    int was_root = root->last_where, was_view = a->last_where;
    rc = hpl__acquired_check(ctx, root, &a->box, HPL_READ);
    if (rc == HPL_OK)
        rc = hpl__take_error(ctx, root);
    if (rc == HPL_OK)
        rc = hpl__host_storage_ensure(root);
    plan p = {0};
    hpl__region_init(&p.host);
    hpl__array *partials = NULL;
    if (rc == HPL_OK)
        rc = plan_make(ctx, a, &p) ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc == HPL_OK)
        rc = submit_runs(ctx, root, &p, op, &partials);
    acc sum = {.type = type, .op = op};
    hpl__handle partials_id = partials ? partials->id : 0;
    if (rc == HPL_OK)
        rc = combine(ctx, handle, partials, &p, &sum);
    if (ctx->span) {
        rc = combine_ranks(ctx, rc, &sum);
        if (hpl__array_get(ctx, handle, &a) == HPL_OK) {
            a->root->last_where = was_root;
            a->last_where = was_view;
        }
    }
    if (partials_id && hpl__array_get(ctx, (hpl_array){partials_id}, &partials) == HPL_OK)
        hpl__array_drop(ctx, partials);
    plan_free(&p);
    if (rc == HPL_OK)
        acc_result(&sum, result);
    return rc;
}

int hpl_array_reduce(hpl_context *ctx, hpl_array array, hpl_reduction op, void *result)
{
    if (!ctx || !result)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_reduce: %s is NULL", !ctx ? "ctx" : "result");
    if (op < HPL_REDUCE_SUM || op > HPL_REDUCE_MAX)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "hpl_array_reduce: op %d is not an hpl_reduction (HPL_REDUCE_SUM, _PRODUCT, _MIN, _MAX)",
                         (int)op);
    HPL__LOCK(ctx);
    int rc = reduce_locked(ctx, array, op, result);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_reduce");
    HPL__UNLOCK(ctx);
    return rc;
}
