/* Domains larger than maxComputeWorkGroupCount (65535 per axis on Lavapipe)
 * x local size, along each axis, run as several dispatches: every
 * invocation of the domain must run exactly once with the right global id.
 * Each invocation adds 1, its linear index and xors its linear index into
 * one of 1024 slots (atomics); the host computes the same per slot.
 * Small local sizes keep the domains (and the test) small. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 1024

static const char *cover_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) cnt; hpl_inout(uint, 1) sum; hpl_inout(uint, 1) xr; hpl_inout(uint, 1) bad; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    uvec3 g = hpl_global_size;\n"
    "    if (any(greaterThanEqual(id, g)) || g != hpl_domain_size) atomicAdd(hpl_at(bad, 0), 1u);\n"
    "    uint lin = (id.x * g.y + id.y) * g.z + id.z;\n"
    "    uint s = (lin * 2654435761u) >> 22;\n"
    "    atomicAdd(hpl_at(cnt, s), 1u);\n"
    "    atomicAdd(hpl_at(sum, s), lin);\n"
    "    atomicXor(hpl_at(xr, s), lin);\n"
    "}\n";

static void run(hpl_context *ctx, hpl_kernel k, uint64_t g0, uint64_t g1, uint64_t g2, uint32_t l0, uint32_t l1,
                uint32_t l2)
{
    hpl_array cnt = th_array(ctx, HPL_UINT32, SLOTS, 0, 0), sum = th_array(ctx, HPL_UINT32, SLOTS, 0, 0);
    hpl_array xr = th_array(ctx, HPL_UINT32, SLOTS, 0, 0), bad = th_array(ctx, HPL_UINT32, 1, 0, 0);
    hpl_launch launch = {.global = {g0, g1, g2}, .local = {l0, l1, l2}};
    CHECK_OK(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_arr(cnt), hpl_arr(sum), hpl_arr(xr), hpl_arr(bad))));
    uint64_t d0 = g0, d1 = g1 ? g1 : 1, d2 = g2 ? g2 : 1, total = d0 * d1 * d2;
    uint32_t *ec = calloc(SLOTS, 4), *es = calloc(SLOTS, 4), *ex = calloc(SLOTS, 4);
    for (uint64_t lin = 0; lin < total; lin++) {
        uint32_t l = (uint32_t)lin, s = (l * 2654435761u) >> 22;
        ec[s] += 1;
        es[s] += l;
        ex[s] ^= l;
    }
    char what[128];
    snprintf(what, sizeof what, "global {%llu,%llu,%llu} local {%u,%u,%u}", (unsigned long long)g0,
             (unsigned long long)g1, (unsigned long long)g2, l0, l1, l2);
    const uint32_t *pc = th_access(ctx, cnt, HPL_READ), *ps = th_access(ctx, sum, HPL_READ);
    const uint32_t *px = th_access(ctx, xr, HPL_READ), *pb = th_access(ctx, bad, HPL_READ);
    if (pc && ps && px && pb) {
        uint64_t ran = 0;
        int wrong = 0;
        for (int s = 0; s < SLOTS; s++) {
            ran += pc[s];
            wrong += pc[s] != ec[s] || ps[s] != es[s] || px[s] != ex[s];
        }
        CHECK(ran == total, "%s: %llu invocations ran, want %llu", what, (unsigned long long)ran,
              (unsigned long long)total);
        CHECK(wrong == 0, "%s: %d of %d slots differ (ids missing, repeated or wrong)", what, wrong, SLOTS);
        CHECK(pb[0] == 0, "%s: %u invocations saw an id outside the domain or a wrong hpl_domain_size", what, pb[0]);
    }
    hpl_array all[] = {cnt, sum, xr, bad};
    for (int i = 0; i < 4; i++)
        CHECK_OK(hpl_array_destroy(ctx, all[i]));
    free(ec);
    free(es);
    free(ex);
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_device_info info;
    if (CHECK_OK(hpl_device_get_info(ctx, 0, &info)))
        th_note("max work groups %u x %u x %u", info.max_workgroup_count[0], info.max_workgroup_count[1],
                info.max_workgroup_count[2]);
    uint64_t m0 = info.max_workgroup_count[0], m1 = info.max_workgroup_count[1], m2 = info.max_workgroup_count[2];
    hpl_kernel k = th_kernel(ctx, cover_src);
    /* Each case needs more than 65535 work groups along one axis: a few cases
     * only, each just past the limit (Lavapipe under AddressSanitizer costs
     * ~50 us per work group). Local sizes not dividing the domain: the last
     * group is partly masked. */
    /* 1-D: one group past the limit along x. Where that limit times the
     * local size passes 2^32-1 (NVIDIA: 2^31-1 groups), no domain can exceed
     * it: the library refuses such a domain instead. */
    if (m0 * 4 + 1 <= UINT32_MAX) {
        run(ctx, k, m0 * 4 + 1, 0, 0, 4, 1, 1);
    } else {
        hpl_array a = th_array(ctx, HPL_UINT32, SLOTS, 0, 0);
        CHECK_FAILS(hpl_eval(ctx, k, &(hpl_launch){.global = {m0 * 4 + 1}, .local = {4, 1, 1}},
                             HPL_ARGS(hpl_arr(a), hpl_arr(a), hpl_arr(a), hpl_arr(a))),
                    HPL_ERROR_TOO_LARGE, "exceeds 2^32-1");
        CHECK_OK(hpl_array_destroy(ctx, a));
    }
    /* 2-D: past the limit along y (x covered by one group). */
    run(ctx, k, 3, m1 * 2 + 1, 0, 3, 2, 1);
    /* 3-D: past the limit along z (x and y covered by one group). */
    run(ctx, k, 2, 3, m2 + 1, 2, 3, 1);
    /* Library-chosen local size over a large 1-D domain. */
    run(ctx, k, 5000011, 0, 0, 0, 0, 0);
    /* Library-chosen local sizes over 2-D and 3-D domains: the dispatch
     * walks the last dimension as its x (unit_walk), so the rows go to its
     * y: {4, 64} groups of 4 rows, past the limit along y. */
    run(ctx, k, m1 * 4 + 3, 33, 0, 0, 0, 0);
    run(ctx, k, 3, 5, 70, 0, 0, 0);
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    return th_finish(ctx);
}
