/* The library's own subarrays (parts of multi-device evals): cached while
 * referenced, never listed for the user, freed with their last reference,
 * so a search over moving boundaries does not grow any cache. */
#include "harness.h"
#include "internal.h"

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_array a = th_array(ctx, HPL_FLOAT32, 100, 8, 0);
    hpl_array user;
    CHECK_OK(hpl_subarray(ctx, a, HPL_RANGES({0, 9}, HPL_ALL), &user));
    hpl__array *root = NULL;
    CHECK_OK(hpl__array_get(ctx, a, &root));
    hpl__box box = {{10, 0, 0}, {20, 8, 1}}, owned = {{11, 0, 0}, {19, 8, 1}};
    hpl__array *p = NULL, *q = NULL;
    CHECK_OK(hpl__subarray_make(ctx, root, &box, &owned, true, &p));
    CHECK_OK(hpl__subarray_make(ctx, root, &box, &owned, true, &q));
    CHECK(p == q && p->refs == 2, "the same box is the same internal subarray, referenced twice");
    CHECK(hpl_subarray_count(ctx, a) == 1, "internal subarrays are not listed: count %d", hpl_subarray_count(ctx, a));
    uint32_t id = p->id;
    hpl__subarray_release(ctx, p);
    CHECK(hpl__pool_get(&ctx->arrays, id) != NULL, "alive while referenced");
    hpl__subarray_release(ctx, q);
    CHECK(hpl__pool_get(&ctx->arrays, id) == NULL, "freed with its last reference");
    /* A balancing search: 10000 parts with moving boundaries. */
    for (uint64_t i = 0; i < 10000; i++) {
        hpl__box b = {{i % 90, 0, 0}, {i % 90 + 1 + i % 9, 8, 1}};
        hpl__array *s = NULL;
        if (!CHECK_OK(hpl__subarray_make(ctx, root, &b, &b, true, &s)))
            break;
        hpl__subarray_release(ctx, s);
    }
    CHECK(root->child_count == 1, "children after the search: %u (only the user's)", root->child_count);
    CHECK(hpl_subarray_count(ctx, a) == 1, "the user's subarray is still listed");
    CHECK_OK(hpl_array_destroy(ctx, a));
    return th_finish(ctx);
}
