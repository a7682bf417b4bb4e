/* c = a + b on Lavapipe: sizes 1, 1000, 1<<20 and 1000003 (a multiple of no
 * local size); a kernel that declares its own local size; a launch that
 * gives the local size. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>

static const char *add_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) a; hpl_in(float, 1) b; hpl_out(float, 1) c; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(c, i) = hpl_at(a, i) + hpl_at(b, i); }\n";

/* Declares its own local size and reports, per element, the work-group size
 * it ran with and its local invocation index. */
#define ADD_WG_BODY                                                                                \
    "hpl_args { hpl_in(float, 1) a; hpl_in(float, 1) b; hpl_out(float, 1) c; hpl_out(uint, 1) wg;\n" \
    "           hpl_out(uint, 1) lid; };\n"                                                          \
    "void main() {\n"                                                                                \
    "    uint i = hpl_global_id.x;\n"                                                                \
    "    hpl_at(c, i) = hpl_at(a, i) + hpl_at(b, i);\n"                                              \
    "    hpl_at(wg, i) = gl_WorkGroupSize.x;\n"                                                      \
    "    hpl_at(lid, i) = gl_LocalInvocationID.x;\n"                                                 \
    "}\n"
static const char *add64_src = "#include <hplvk.glsl>\n"
                               "layout(local_size_x = 64) in;\n" ADD_WG_BODY;

/* No declared local size: the library chooses; reports it too. */
static const char *add_wg_src = "#include <hplvk.glsl>\n" ADD_WG_BODY;

static void fill_inputs(hpl_context *ctx, hpl_array a, hpl_array b, uint64_t n, float *ha, float *hb)
{
    float *pa = th_access(ctx, a, HPL_WRITE);
    float *pb = th_access(ctx, b, HPL_WRITE);
    if (!pa || !pb)
        return;
    for (uint64_t i = 0; i < n; i++) {
        ha[i] = pa[i] = (float)(i % 4099) * 0.25f - 300.0f;
        hb[i] = pb[i] = (float)((i * 7) % 1021) * 1.5f + 0.125f;
    }
}

/* c = a + b with the plain kernel and default launch. */
static void plain_add(hpl_context *ctx, hpl_kernel k, uint64_t n)
{
    float *ha = malloc(n * sizeof(float)), *hb = malloc(n * sizeof(float));
    hpl_array a = th_array(ctx, HPL_FLOAT32, n, 0, 0);
    hpl_array b = th_array(ctx, HPL_FLOAT32, n, 0, 0);
    hpl_array c = th_array(ctx, HPL_FLOAT32, n, 0, 0);
    fill_inputs(ctx, a, b, n, ha, hb);
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_arr(c))));
    const float *pc = th_access(ctx, c, HPL_READ);
    if (pc) {
        uint64_t bad = 0, first = 0;
        for (uint64_t i = 0; i < n; i++) {
            float want = ha[i] + hb[i];
            if (pc[i] != want && bad++ == 0)
                first = i;
        }
        CHECK(bad == 0, "n=%llu: %llu wrong elements, first c[%llu]=%g want %g", (unsigned long long)n,
              (unsigned long long)bad, (unsigned long long)first, pc[first], ha[first] + hb[first]);
    }
    /* The inputs are still what the host wrote (the kernel only reads them). */
    const float *pa = th_access(ctx, a, HPL_READ);
    if (pa)
        CHECK(pa[n - 1] == ha[n - 1] && pa[0] == ha[0], "input a changed by a kernel that only reads it");
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_array_destroy(ctx, c));
    free(ha);
    free(hb);
}

/* c = a + b plus the work-group size used; expect_wg 0: any (library's
 * choice), else that value. */
static void add_with_wg(hpl_context *ctx, hpl_kernel k, uint64_t n, const hpl_launch *launch, uint32_t expect_wg,
                        const char *what)
{
    float *ha = malloc(n * sizeof(float)), *hb = malloc(n * sizeof(float));
    hpl_array a = th_array(ctx, HPL_FLOAT32, n, 0, 0);
    hpl_array b = th_array(ctx, HPL_FLOAT32, n, 0, 0);
    hpl_array c = th_array(ctx, HPL_FLOAT32, n, 0, 0);
    hpl_array wg = th_array(ctx, HPL_UINT32, n, 0, 0);
    hpl_array lid = th_array(ctx, HPL_UINT32, n, 0, 0);
    fill_inputs(ctx, a, b, n, ha, hb);
    CHECK_OK(hpl_eval(ctx, k, launch, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_arr(c), hpl_arr(wg), hpl_arr(lid))));
    const float *pc = th_access(ctx, c, HPL_READ);
    const uint32_t *pw = th_access(ctx, wg, HPL_READ);
    const uint32_t *pl = th_access(ctx, lid, HPL_READ);
    if (pc && pw && pl) {
        uint32_t size = pw[0];
        CHECK(size >= 1 && size <= 1024, "%s: work-group size %u out of range", what, size);
        if (expect_wg)
            CHECK(size == expect_wg, "%s: kernel ran with work-group size %u, expected %u", what, size, expect_wg);
        uint64_t bad = 0, badwg = 0, badlid = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (pc[i] != ha[i] + hb[i] && bad++ == 0)
                CHECK(false, "%s: c[%llu]=%g want %g", what, (unsigned long long)i, pc[i], ha[i] + hb[i]);
            if (pw[i] != size && badwg++ == 0)
                CHECK(false, "%s: element %llu saw work-group size %u, element 0 saw %u", what,
                      (unsigned long long)i, pw[i], size);
            if (size && pl[i] != i % size && badlid++ == 0)
                CHECK(false, "%s: element %llu ran as local invocation %u, expected %llu", what,
                      (unsigned long long)i, pl[i], (unsigned long long)(i % size));
        }
        CHECK(bad == 0 && badwg == 0 && badlid == 0, "%s: %llu wrong sums, %llu wrong sizes, %llu wrong local ids",
              what, (unsigned long long)bad, (unsigned long long)badwg, (unsigned long long)badlid);
        th_note("%s: n=%llu ran with local size %u", what, (unsigned long long)n, size);
    }
    hpl_array all[] = {a, b, c, wg, lid};
    for (int i = 0; i < 5; i++)
        CHECK_OK(hpl_array_destroy(ctx, all[i]));
    free(ha);
    free(hb);
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");

    hpl_kernel k = th_kernel(ctx, add_src);
    static const uint64_t sizes[] = {1, 1000, 1u << 20, 1000003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        plain_add(ctx, k, sizes[s]);

    /* Declared local size 64: kept by the library, reported by reflection. */
    hpl_kernel k64 = th_kernel(ctx, add64_src);
    uint32_t ls[3] = {0, 0, 0};
    bool choosable = true;
    if (CHECK_OK(hpl_kernel_get_local_size(ctx, k64, ls, &choosable))) {
        CHECK(ls[0] == 64 && ls[1] == 1 && ls[2] == 1, "declared local size reported as %u,%u,%u, want 64,1,1", ls[0],
              ls[1], ls[2]);
        CHECK(!choosable, "a kernel that declares layout(local_size_x = 64) reported as choosable");
    }
    add_with_wg(ctx, k64, 1000003, NULL, 64, "declared local_size_x=64");
    add_with_wg(ctx, k64, 1000, NULL, 64, "declared local_size_x=64, n=1000");
    /* launch.local overrides the declared size. */
    add_with_wg(ctx, k64, 1000003, &(hpl_launch){.local = {32, 1, 1}}, 32, "declared 64, launch.local=32");

    /* Library-chosen size, and launch.local given for a kernel without one. */
    hpl_kernel kwg = th_kernel(ctx, add_wg_src);
    if (CHECK_OK(hpl_kernel_get_local_size(ctx, kwg, ls, &choosable)))
        CHECK(choosable, "a kernel without layout(local_size_*) must let the library choose the local size");
    add_with_wg(ctx, kwg, 1000003, NULL, 0, "library-chosen local size");
    add_with_wg(ctx, kwg, 1000003, &(hpl_launch){.local = {128, 1, 1}}, 128, "launch.local=128");
    add_with_wg(ctx, kwg, 1000, &(hpl_launch){.local = {7, 1, 1}}, 7, "launch.local=7 (not a power of two)");
    /* launch.global smaller than the arrays: only that many elements run. */
    {
        uint64_t n = 1000, g = 777;
        hpl_array a = th_array(ctx, HPL_FLOAT32, n, 0, 0);
        hpl_array b = th_array(ctx, HPL_FLOAT32, n, 0, 0);
        hpl_array c = th_array(ctx, HPL_FLOAT32, n, 0, 0);
        float *pa = th_access(ctx, a, HPL_WRITE), *pb = NULL;
        if (pa)
            for (uint64_t i = 0; i < n; i++)
                pa[i] = (float)i;
        pb = th_access(ctx, b, HPL_WRITE);
        if (pb)
            for (uint64_t i = 0; i < n; i++)
                pb[i] = 1.0f;
        float *pc = th_access(ctx, c, HPL_WRITE);
        if (pc)
            for (uint64_t i = 0; i < n; i++)
                pc[i] = -1.0f;
        /* c is write-only in the kernel, yet elements outside the domain must
         * keep their values only if the library fetched them; HPL's rule says
         * write-only arrays are not fetched, so check only the domain. */
        CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.global = {g}}, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_arr(c))));
        pc = th_access(ctx, c, HPL_READ);
        if (pc) {
            uint64_t bad = 0;
            for (uint64_t i = 0; i < g; i++)
                bad += pc[i] != (float)i + 1.0f;
            CHECK(bad == 0, "launch.global=%llu: %llu wrong elements in the domain", (unsigned long long)g,
                  (unsigned long long)bad);
        }
        CHECK_OK(hpl_array_destroy(ctx, a));
        CHECK_OK(hpl_array_destroy(ctx, b));
        CHECK_OK(hpl_array_destroy(ctx, c));
    }

    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_kernel_destroy(ctx, k64));
    CHECK_OK(hpl_kernel_destroy(ctx, kwg));
    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
