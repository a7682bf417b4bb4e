/* Arrays: shapes, lazily allocated host and device storage, host access. */
#include "api.h"

#include "acquired.h"
#include "bounds.h"
#include "copy.h"
#include "residency.h"
#include "storage.h"
#include "submit.h"
#include "transfer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int hpl__array_get(hpl_context *ctx, hpl_array handle, hpl__array **out)
{
    hpl__array *a = hpl__pool_get(&ctx->arrays, handle.id);
    if (!a)
        return hpl__pool_fail(&ctx->arrays, handle.id, "array");
    *out = a;
    return HPL_OK;
}

hpl__view hpl__view_of(const hpl__array *a)
{
    return (hpl__view){.root = a->root, .box = a->box, .owned = a->owned};
}

static int check_shape(const hpl_array_desc *desc, int *ndims, uint64_t *count, uint64_t *bytes)
{
    if (hpl_type_size(desc->type) == 0)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "type %d is not an element type (use HPL_FLOAT32, ...)",
                         (int)desc->type);
    if (desc->dims[0] == 0)
        return hpl__fail(HPL_ERROR_DIMENSIONS, "dims[0] is 0: an array needs at least one non-zero extent");
    *ndims = 1;
    *count = desc->dims[0];
    for (int i = 1; i < 3; i++) {
        if (desc->dims[i] == 0) {
            for (int j = i + 1; j < 3; j++)
                if (desc->dims[j])
                    return hpl__fail(HPL_ERROR_DIMENSIONS, "dims[%d] is 0 but dims[%d] is %llu", i, j,
                                     (unsigned long long)desc->dims[j]);
            break;
        }
        *ndims = i + 1;
        if (!hpl__mul_u64(*count, desc->dims[i], count))
            return hpl__fail(HPL_ERROR_DIMENSIONS, "dims {%llu, %llu, %llu} overflow: the element count does not fit in 64 bits",
                             (unsigned long long)desc->dims[0], (unsigned long long)desc->dims[1],
                             (unsigned long long)desc->dims[2]);
    }
    if (!hpl__mul_u64(*count, hpl_type_size(desc->type), bytes) || *bytes > (uint64_t)SIZE_MAX / 2)
        return hpl__fail(HPL_ERROR_DIMENSIONS, "%llu elements of %s overflow the address space",
                         (unsigned long long)*count, hpl_type_name(desc->type));
    return HPL_OK;
}

/* Shape of a view from its box. */
static void set_shape(hpl__array *a, hpl_type type, int ndims, const hpl__box *box)
{
    a->type = type;
    a->ndims = ndims;
    a->count = 1;
    for (int i = 0; i < 3; i++) {
        a->dims[i] = box->hi[i] - box->lo[i];
        a->count *= a->dims[i];
    }
    a->bytes = a->count * hpl_type_size(type);
    a->box = *box;
    a->owned = *box;
}

/* Adds a to the pool with its name (given, or made by `fallback`). */
static int register_array(hpl_context *ctx, hpl__array *a, const char *name, const char *parent_name, const char *ranges)
{
    a->id = hpl__pool_add(&ctx->arrays, a);
    if (!a->id)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    char fallback[256];
    if (parent_name)
        snprintf(fallback, sizeof fallback, "%s%s", parent_name, ranges);
    else
        snprintf(fallback, sizeof fallback, "array#%" PRIu32, hpl__handle_index(a->id));
    a->name = hpl__strdup(name ? name : fallback);
    if (!a->name) {
        hpl__pool_remove(&ctx->arrays, a->id);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    return HPL_OK;
}

int hpl__array_make(hpl_context *ctx, const hpl_array_desc *desc, hpl__array **out)
{
    int ndims = 0;
    uint64_t count = 0, bytes = 0;
    int rc = check_shape(desc, &ndims, &count, &bytes);
    if (rc != HPL_OK)
        return rc;
    hpl__array *a = hpl__calloc(1, sizeof *a);
    uint64_t lo[3] = {0, 0, 0}, hi[3];
    for (int i = 0; i < 3; i++)
        hi[i] = i < ndims ? desc->dims[i] : 1;
    hpl__box whole = hpl__box_make(3, lo, hi);
    /* The host holds the initial contents: the user's data, or zeros. */
    if (!a || !hpl__coherence_init(&a->coherence, &whole, true)) {
        hpl__free(a);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    set_shape(a, desc->type, ndims, &whole);
    a->root = a;
    a->host = desc->host;
    a->last_where = HPL_ON_HOST;
    rc = register_array(ctx, a, desc->name, NULL, NULL);
    if (rc != HPL_OK) {
        hpl__coherence_free(&a->coherence);
        hpl__free(a);
        return rc;
    }
    *out = a;
    return HPL_OK;
}

int hpl_array_create(hpl_context *ctx, const hpl_array_desc *desc, hpl_array *out)
{
    if (!ctx || !desc || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_create: %s is NULL",
                         !ctx ? "ctx" : !desc ? "desc" : "out");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_make(ctx, desc, &a);
    if (ctx->span) { /* collective: every rank makes it, or none */
        rc = ctx->span->array_init(ctx, rc == HPL_OK ? a : NULL, rc);
        if (rc != HPL_OK && a)
            hpl__array_drop(ctx, a);
    }
    if (rc == HPL_OK)
        out->id = a->id;
    else
        hpl__error_prefix(desc->name ? desc->name : "hpl_array_create");
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- subarrays -------------------------------------------------------- */

static hpl__array *find_child(hpl_context *ctx, const hpl__array *parent, const hpl__box *box, const hpl__box *owned)
{
    for (uint32_t i = 0; i < parent->child_count; i++) {
        hpl__array *c = hpl__pool_get(&ctx->arrays, parent->children[i]);
        if (c && hpl__box_equal(&c->box, box) && hpl__box_equal(&c->owned, owned))
            return c;
    }
    return NULL;
}

static bool add_child(hpl__array *parent, hpl__handle id)
{
    if (parent->child_count == parent->child_capacity) {
        uint32_t cap = parent->child_capacity ? 2 * parent->child_capacity : 4;
        hpl__handle *c = hpl__realloc(parent->children, cap * sizeof *c);
        if (!c)
            return false;
        parent->children = c;
        parent->child_capacity = cap;
    }
    parent->children[parent->child_count++] = id;
    return true;
}

static void remove_child(hpl__array *parent, hpl__handle id)
{
    for (uint32_t i = 0; i < parent->child_count; i++) {
        if (parent->children[i] == id) {
            memmove(&parent->children[i], &parent->children[i + 1],
                    (parent->child_count - i - 1) * sizeof *parent->children);
            parent->child_count--;
            return;
        }
    }
}

/* "[2:5,0:9]": a view's inclusive ranges in its parent's coordinates. */
static void format_ranges(const hpl__array *parent, const hpl__box *box, char *out, size_t size)
{
    size_t n = 0;
    for (int d = 0; d < parent->ndims && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, "%s%llu:%llu", d ? "," : "[",
                              (unsigned long long)(box->lo[d] - parent->box.lo[d]),
                              (unsigned long long)(box->hi[d] - 1 - parent->box.lo[d]));
    if (n < size)
        snprintf(out + n, size - n, "]");
}

int hpl__subarray_make(hpl_context *ctx, hpl__array *parent, const hpl__box *box, const hpl__box *owned,
                       hpl__array **out)
{
    hpl__array *s = find_child(ctx, parent, box, owned);
    if (s) {
        *out = s;
        return HPL_OK;
    }
    s = hpl__calloc(1, sizeof *s);
    if (!s)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    set_shape(s, parent->type, parent->ndims, box);
    s->owned = *owned;
    s->root = parent->root;
    s->parent = parent;
    s->last_where = parent->last_where;
    char ranges[200];
    format_ranges(parent, box, ranges, sizeof ranges);
    int rc = register_array(ctx, s, NULL, parent->name, ranges);
    if (rc == HPL_OK && !add_child(parent, s->id)) {
        hpl__pool_remove(&ctx->arrays, s->id);
        hpl__free(s->name);
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    if (rc != HPL_OK) {
        hpl__free(s);
        return rc;
    }
    *out = s;
    return HPL_OK;
}

/* Turns inclusive ranges relative to parent into a box in root coordinates. */
static int box_of_ranges(const hpl__array *parent, int nranges, const hpl_range *ranges, const char *what,
                         const hpl__box *within, hpl__box *out)
{
    for (int d = 0; d < 3; d++) {
        if (d >= parent->ndims) {
            out->lo[d] = parent->box.lo[d];
            out->hi[d] = parent->box.hi[d];
            continue;
        }
        uint64_t n = parent->dims[d];
        uint64_t first = ranges[d].first, last = ranges[d].last == HPL_END ? n - 1 : ranges[d].last;
        if (first > last)
            return hpl__fail(HPL_ERROR_OUT_OF_RANGE, "%s range of dimension %d is [%llu, %llu]: first > last", what, d,
                             (unsigned long long)first, (unsigned long long)last);
        if (last >= n)
            return hpl__fail(HPL_ERROR_OUT_OF_RANGE,
                             "%s range of dimension %d is [%llu, %llu] but '%s' has indices 0..%llu there", what, d,
                             (unsigned long long)first, (unsigned long long)last, parent->name,
                             (unsigned long long)(n - 1));
        out->lo[d] = parent->box.lo[d] + first;
        out->hi[d] = parent->box.lo[d] + last + 1;
        if (within && (out->lo[d] < within->lo[d] || out->hi[d] > within->hi[d]))
            return hpl__fail(HPL_ERROR_OUT_OF_RANGE, "owned range of dimension %d, [%llu, %llu], is not inside the subarray's range",
                             d, (unsigned long long)first, (unsigned long long)last);
    }
    (void)nranges;
    return HPL_OK;
}

int hpl__box_of_ranges(const hpl__array *parent, int nranges, const hpl_range *ranges, hpl__box *out)
{
    if (nranges != parent->ndims)
        return hpl__fail(HPL_ERROR_DIMENSIONS, "%d range%s given but '%s' has %d dimension%s", nranges,
                         nranges == 1 ? "" : "s", parent->name, parent->ndims, parent->ndims == 1 ? "" : "s");
    return box_of_ranges(parent, nranges, ranges, "the", NULL, out);
}

static int subarray_locked(hpl_context *ctx, hpl_array parent_handle, int nranges, const hpl_range *ranges,
                           const hpl_range *owned, hpl_array *out)
{
    hpl__array *parent = NULL;
    int rc = hpl__array_get(ctx, parent_handle, &parent);
    if (rc != HPL_OK)
        return rc;
    hpl__box box, owned_box;
    rc = hpl__box_of_ranges(parent, nranges, ranges, &box);
    if (rc == HPL_OK)
        rc = owned ? box_of_ranges(parent, nranges, owned, "the owned", &box, &owned_box) : HPL_OK;
    if (rc != HPL_OK)
        return rc;
    hpl__array *s = NULL;
    rc = hpl__subarray_make(ctx, parent, &box, owned ? &owned_box : &box, &s);
    if (rc == HPL_OK)
        out->id = s->id;
    return rc;
}

static int subarray_entry(hpl_context *ctx, hpl_array parent, int nranges, const hpl_range *ranges,
                          const hpl_range *owned, hpl_array *out, const char *fn)
{
    if (!ctx || !ranges || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : !ranges ? "ranges" : "out");
    HPL__LOCK(ctx);
    int rc = subarray_locked(ctx, parent, nranges, ranges, owned, out);
    if (rc != HPL_OK)
        hpl__error_prefix(fn);
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_subarray(hpl_context *ctx, hpl_array parent, int nranges, const hpl_range *ranges, hpl_array *out)
{
    return subarray_entry(ctx, parent, nranges, ranges, NULL, out, "hpl_subarray");
}

int hpl_subarray_owned(hpl_context *ctx, hpl_array parent, int nranges, const hpl_range *ranges,
                       const hpl_range *owned, hpl_array *out)
{
    if (!owned)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_subarray_owned: owned is NULL");
    return subarray_entry(ctx, parent, nranges, ranges, owned, out, "hpl_subarray_owned");
}

/* The index-th user subarray of parent, or NULL; *count gets how many. */
static hpl__array *user_child(hpl_context *ctx, const hpl__array *parent, int index, int *count)
{
    hpl__array *found = NULL;
    int n = 0;
    for (uint32_t i = 0; i < parent->child_count; i++) {
        hpl__array *c = hpl__pool_get(&ctx->arrays, parent->children[i]);
        if (c) {
            if (n == index)
                found = c;
            n++;
        }
    }
    *count = n;
    return found;
}

int hpl_subarray_count(hpl_context *ctx, hpl_array parent)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_subarray_count: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__array *p = NULL;
    int rc = hpl__array_get(ctx, parent, &p);
    if (rc == HPL_OK)
        user_child(ctx, p, -1, &rc);
    else
        hpl__error_prefix("hpl_subarray_count");
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_subarray_get(hpl_context *ctx, hpl_array parent, int index, hpl_array *out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_subarray_get: %s is NULL", !ctx ? "ctx" : "out");
    HPL__LOCK(ctx);
    hpl__array *p = NULL;
    int rc = hpl__array_get(ctx, parent, &p);
    if (rc == HPL_OK) {
        int count = 0;
        hpl__array *c = user_child(ctx, p, index, &count);
        if (c)
            out->id = c->id;
        else
            rc = hpl__fail(HPL_ERROR_OUT_OF_RANGE, "index %d: '%s' has %d subarray%s", index, p->name, count,
                           count == 1 ? "" : "s");
    }
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_subarray_get");
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- destruction ------------------------------------------------------ */

static void free_storage(hpl_context *ctx, hpl__array *root)
{
    while (root->instance_count)
        hpl__instance_free(ctx, root, &root->instances[root->instance_count - 1]);
    hpl__free(root->instances);
    hpl__free(root->acquired);
    hpl__host_storage_free(ctx, root);
    hpl__push_destroy(root->push);
    if (ctx->span)
        ctx->span->array_free(root);
    hpl__coherence_free(&root->coherence);
}

static void array_free(hpl_context *ctx, hpl__array *a)
{
    if (a->root == a)
        free_storage(ctx, a);
    hpl__free(a->children);
    hpl__free(a->name);
    hpl__free(a);
}

static void free_each(void *object, void *user)
{
    array_free(user, object);
}

void hpl__array_destroy_all(hpl_context *ctx)
{
    hpl__pool_each(&ctx->arrays, free_each, ctx);
    hpl__pool_free(&ctx->arrays);
}

/* Waits for points and forgets them in root's coherence state (fewer
 * accesses to look at later). The wait releases the lock: root may be gone
 * after it. */
static int wait_retire(hpl_context *ctx, hpl__array *root, const hpl__point *points, int n)
{
    hpl__handle id = root->id;
    int rc = hpl__wait_points(ctx, points, n);
    if (rc == HPL_OK && (root = hpl__pool_get(&ctx->arrays, id)) != NULL)
        hpl__coherence_retire(&root->coherence, points, n);
    return rc;
}

/* Waits for every piece of pending work that uses the root array. */
static int wait_array(hpl_context *ctx, hpl__array *root)
{
    hpl__point points[HPL__MAX_TIMELINES];
    int n = hpl__coherence_all_points(&root->coherence, points, 0);
    return wait_retire(ctx, root, points, n);
}

/* Work that uses an array may be missing from its coherence state: an
 * operation that failed halfway leaves behind the copies it had already
 * recorded on other devices, which still run (access.c: hpl__op_release),
 * and a device fails halfway through operations. Freeing then waits for
 * everything. */
static bool work_unrecorded(const hpl_context *ctx)
{
    for (int i = 0; i < ctx->device_count; i++)
        if (__atomic_load_n(&ctx->devices[i].error, __ATOMIC_ACQUIRE))
            return true;
    return ctx->unrecorded_work;
}

/* Takes a and its subarrays out of the pool (recursively). */
static void unregister_tree(hpl_context *ctx, hpl__array *a)
{
    for (uint32_t i = 0; i < a->child_count; i++) {
        hpl__array *c = hpl__pool_get(&ctx->arrays, a->children[i]);
        if (c) {
            unregister_tree(ctx, c);
            array_free(ctx, c);
        }
    }
    a->child_count = 0;
    hpl__pool_remove(&ctx->arrays, a->id);
}

/* Destroys a subarray and its subarrays (views: no data changes). */
static void destroy_view(hpl_context *ctx, hpl__array *a)
{
    remove_child(a->parent, a->id);
    unregister_tree(ctx, a);
    array_free(ctx, a);
}

void hpl__array_drop(hpl_context *ctx, hpl__array *a)
{
    if (a->root != a) {
        destroy_view(ctx, a);
        return;
    }
    /* Remove first: the wait releases the lock, and nobody may find the
     * array meanwhile. */
    unregister_tree(ctx, a);
    if (work_unrecorded(ctx))
        hpl__wait_idle(ctx);
    else
        wait_array(ctx, a);
    array_free(ctx, a);
}

int hpl_array_destroy(hpl_context *ctx, hpl_array handle)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_destroy: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = hpl__acquired_check_destroy(ctx, a);
    if (rc == HPL_OK)
        hpl__array_drop(ctx, a);
    else
        hpl__error_prefix("hpl_array_destroy");
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- information ------------------------------------------------------ */

static void root_strides(const hpl__array *root, uint64_t stride[3])
{
    stride[2] = 1;
    stride[1] = root->dims[2];
    stride[0] = root->dims[1] * root->dims[2];
}

/* Do the box's elements form one run in the root's row-major order? */
static bool box_contiguous(const hpl__array *root, const hpl__box *b)
{
    int d = 2;
    while (d > 0 && b->lo[d] == 0 && b->hi[d] == root->dims[d])
        d--;
    for (int i = 0; i < d; i++)
        if (b->hi[i] - b->lo[i] != 1)
            return false;
    return true;
}

int hpl_array_get_info(hpl_context *ctx, hpl_array handle, hpl_array_info *out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_get_info: %s is NULL", !ctx ? "ctx" : "out");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK) {
        *out = (hpl_array_info){.type = a->type,
                                .ndims = a->ndims,
                                .count = a->count,
                                .bytes = a->bytes,
                                .name = a->name,
                                .is_subarray = a->root != a,
                                .parent = {a->parent ? a->parent->id : a->id},
                                .root = {a->root->id},
                                .contiguous = box_contiguous(a->root, &a->box)};
        memcpy(out->dims, a->dims, sizeof out->dims);
        memcpy(out->origin, a->box.lo, sizeof out->origin);
        root_strides(a->root, out->host_stride);
        bool owns = !hpl__box_empty(&a->owned);
        out->owned_count = owns ? hpl__box_volume(&a->owned) : 0;
        for (int d = 0; d < 3 && owns; d++) {
            out->owned_first[d] = a->owned.lo[d] - a->box.lo[d];
            out->owned_last[d] = a->owned.hi[d] - 1 - a->box.lo[d];
        }
    } else {
        hpl__error_prefix("hpl_array_get_info");
    }
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- host access ------------------------------------------------------ */

/* Returns (and forgets) an asynchronous error of the array's work or of a
 * device it lives on. */
int hpl__take_error(hpl_context *ctx, hpl__array *root)
{
    int rc = root->error;
    root->error = HPL_OK;
    if (rc != HPL_OK)
        return hpl__fail(rc, "earlier asynchronous work on array '%s' failed: %s", root->name,
                         hpl_error_string(rc));
    /* A device that failed holds (or reads) it: its copy is lost. */
    const hpl__device *failed = NULL;
    for (int i = 0; !failed && i < root->instance_count; i++)
        if (hpl__device_error(&ctx->devices[root->instances[i].device]))
            failed = &ctx->devices[root->instances[i].device];
    for (int i = 0; !failed && i < ctx->device_count; i++)
        if (root->imports[i].buffer && hpl__device_error(&ctx->devices[i]))
            failed = &ctx->devices[i];
    if (!failed)
        return HPL_OK;
    char cause[160];
    int error = hpl__device_error(failed);
    return hpl__fail(error, "array '%s' is on device %s, which failed earlier: %s%s", root->name, failed->info.name,
                     hpl_error_string(error), hpl__device_failure_cause(failed, cause, sizeof cause));
}

int hpl__host_sync(hpl_context *ctx, hpl__array *root, const hpl__box *box, bool fetch, bool for_write)
{
    hpl__region r;
    hpl__region_init(&r);
    hpl__region_set_box(&r, box ? box : &root->coherence.whole); /* one box: inline, cannot fail */
    int rc = hpl__host_storage_ensure(root);
    if (rc == HPL_OK && fetch)
        rc = hpl__fetch_to_host(ctx, root, &r);
    /* Reading waits for whoever wrote the box in the host copy; writing also
     * for every device still reading it there (DMA from the host storage, a
     * zero-copy kernel). Work on other parts does not hold the host up. */
    hpl__point points[HPL__MAX_TIMELINES];
    int n = rc == HPL_OK ? hpl__coherence_wait_points(&root->coherence, HPL__HOST, &r, for_write, points, 0) : 0;
    hpl__region_free(&r);
    if (rc == HPL_OK)
        rc = wait_retire(ctx, root, points, n);
    return rc == HPL_OK ? hpl__bounds_poll(ctx) : rc;
}

/* Makes the host storage hold the view (READ; WRITE: its ghost part, as
 * context) and waits for the work it needs. The wait releases the lock: *a
 * is looked up again. */
static int host_acquire(hpl_context *ctx, hpl_array handle, hpl__array **a, hpl_access mode)
{
    hpl__array *root = (*a)->root;
    int rc = hpl__take_error(ctx, root);
    bool ghost = !hpl__box_equal(&(*a)->box, &(*a)->owned);
    if (rc == HPL_OK)
        rc = hpl__host_sync(ctx, root, &(*a)->box, (mode & HPL_READ) || ghost, mode & HPL_WRITE);
    return rc == HPL_OK ? hpl__array_get(ctx, handle, a) : rc;
}

int hpl__host_written(hpl__array *a)
{
    hpl__region r;
    hpl__region_init(&r);
    bool ok = hpl__region_set_box(&r, &a->owned) &&
              hpl__coherence_did_write(&a->root->coherence, HPL__HOST, &r, (hpl__point){0, 0});
    hpl__region_free(&r);
    a->last_where = HPL_ON_HOST;
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

uint8_t *hpl__host_pointer(const hpl__array *a)
{
    uint64_t first = hpl__box_offset(&a->root->coherence.whole, a->box.lo);
    return a->root->host + first * hpl_type_size(a->type);
}

static int access_locked(hpl_context *ctx, hpl_array handle, hpl_access mode, void **out, const char *fn)
{
    if (mode < HPL_READ || mode > HPL_READ_WRITE)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: mode %d is not HPL_READ, HPL_WRITE or HPL_READ_WRITE", fn,
                         (int)mode);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = hpl__acquired_check(ctx, a->root, &a->box, mode);
    if (rc == HPL_OK && ctx->span) {
        rc = ctx->span->host_access(ctx, a, mode); /* may wait, the lock released: look a up again */
        if (rc == HPL_OK)
            rc = hpl__array_get(ctx, handle, &a);
    }
    if (rc == HPL_OK)
        rc = host_acquire(ctx, handle, &a, mode);
    if (rc == HPL_OK && (mode & HPL_WRITE))
        rc = hpl__host_written(a);
    if (rc == HPL_OK && (mode & HPL_WRITE) && ctx->span)
        rc = ctx->span->host_wrote(ctx, a);
    if (rc != HPL_OK) {
        hpl__error_prefix(fn);
        return rc;
    }
    a->last_where = HPL_ON_HOST;
    *out = hpl__host_pointer(a);
    return HPL_OK;
}

int hpl_array_access(hpl_context *ctx, hpl_array handle, hpl_access mode, void **out)
{
    if (!ctx || !out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_access: %s is NULL", !ctx ? "ctx" : "out");
    HPL__LOCK(ctx);
    int rc = access_locked(ctx, handle, mode, out, "hpl_array_access");
    HPL__UNLOCK(ctx);
    return rc;
}

/* Copies `part` of view a between the root's host storage and a dense
 * buffer holding the whole view. */
static void copy_dense(const hpl__array *a, const hpl__box *part, uint8_t *dense, bool to_host)
{
    const hpl__box *whole = &a->root->coherence.whole;
    size_t esize = hpl_type_size(a->type);
    if (to_host)
        hpl__host_copy(part, dense, &a->box, a->root->host, whole, hpl__no_shift, esize);
    else
        hpl__host_copy(part, a->root->host, whole, dense, &a->box, hpl__no_shift, esize);
}

static int copy_host(hpl_context *ctx, hpl_array handle, void *dst, const void *src, size_t bytes, const char *fn)
{
    if (!ctx || !(dst || src))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : "the buffer");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK && bytes != a->bytes)
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "%s: %zu bytes given but array '%s' has %llu", fn, bytes, a->name,
                       (unsigned long long)a->bytes);
    void *p = NULL;
    if (rc == HPL_OK)
        rc = access_locked(ctx, handle, src ? HPL_WRITE : HPL_READ, &p, fn);
    /* Writing: only the owned box (the ghost part is context). */
    if (rc == HPL_OK && hpl__array_get(ctx, handle, &a) == HPL_OK)
        copy_dense(a, src ? &a->owned : &a->box, src ? (uint8_t *)src : dst, src != NULL);
    else if (rc == HPL_ERROR_INVALID_HANDLE)
        hpl__error_prefix(fn);
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_array_read(hpl_context *ctx, hpl_array array, void *dst, size_t bytes)
{
    return copy_host(ctx, array, dst, NULL, bytes, "hpl_array_read");
}

int hpl_array_write(hpl_context *ctx, hpl_array array, const void *src, size_t bytes)
{
    return copy_host(ctx, array, NULL, src, bytes, "hpl_array_write");
}

int hpl_array_wait(hpl_context *ctx, hpl_array handle)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_array_wait: ctx is NULL");
    HPL__LOCK(ctx);
    hpl__array *a = NULL;
    int rc = hpl__array_get(ctx, handle, &a);
    if (rc == HPL_OK)
        rc = wait_array(ctx, a->root);
    if (rc == HPL_OK && hpl__array_get(ctx, handle, &a) == HPL_OK)
        rc = hpl__take_error(ctx, a->root);
    if (rc == HPL_OK)
        rc = hpl__bounds_poll(ctx);
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_array_wait");
    HPL__UNLOCK(ctx);
    return rc;
}
