/* What the application's hold on an array's memory forbids (acquire.c
 * makes and ends the holds): accesses that would race with its work, the
 * eviction of a held buffer, destroying what it holds. Checked by the
 * operations below the API (access.c, residency.c) and by array.c. */
#include "acquired.h"

static const char *view_name(hpl_context *ctx, const hpl__array *root, const hpl__acquisition *q)
{
    const hpl__array *v = hpl__pool_get(&ctx->arrays, q->view);
    return v ? v->name : root->name;
}

int hpl__acquired_check(hpl_context *ctx, const hpl__array *root, const hpl__box *box, hpl_access access)
{
    for (int i = 0; i < root->acquired_count; i++) {
        const hpl__acquisition *q = &root->acquired[i];
        hpl__box both;
        if (!((q->access | access) & HPL_WRITE) || !hpl__box_intersect(&q->box, box, &both))
            continue;
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "'%s' is acquired by the application on device %d for %s (hpl_array_vulkan_acquire): "
                         "this %s of '%s' would race with its work; release it first (hpl_array_vulkan_release)",
                         view_name(ctx, root, q), q->device, q->access & HPL_WRITE ? "writing" : "reading",
                         access & HPL_WRITE ? "write" : "read", root->name);
    }
    return HPL_OK;
}

bool hpl__acquired_holds(const hpl__array *root, int slot)
{
    for (int i = 0; i < root->acquired_count; i++)
        if (root->acquired[i].slot == slot && slot != HPL__HOST)
            return true;
    return false;
}

/* Is a the view v or one of its ancestors? */
static bool encloses(const hpl__array *a, const hpl__array *v)
{
    for (; v; v = v->parent)
        if (v == a)
            return true;
    return false;
}

int hpl__acquired_check_destroy(hpl_context *ctx, const hpl__array *a)
{
    const hpl__array *root = a->root;
    for (int i = 0; i < root->acquired_count; i++) {
        const hpl__acquisition *q = &root->acquired[i];
        const hpl__array *v = hpl__pool_get(&ctx->arrays, q->view);
        if (a == root || encloses(a, v))
            return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                             "'%s' is acquired by the application on device %d (hpl_array_vulkan_acquire): release it "
                             "before destroying '%s' (hpl_array_vulkan_release)",
                             view_name(ctx, root, q), q->device, a->name);
    }
    return HPL_OK;
}

static void warn_array(void *object, void *user)
{
    hpl__array *a = object;
    hpl_context *ctx = user;
    for (int i = 0; a->root == a && i < a->acquired_count; i++)
        hpl__log(&ctx->logger, HPL_LOG_WARNING,
                 "hpl_context_destroy: '%s' is still acquired by the application on device %d "
                 "(hpl_array_vulkan_acquire without hpl_array_vulkan_release); its buffer is freed",
                 view_name(ctx, a, &a->acquired[i]), a->acquired[i].device);
}

void hpl__acquired_warn_left(hpl_context *ctx)
{
    hpl__pool_each(&ctx->arrays, warn_array, ctx);
}
