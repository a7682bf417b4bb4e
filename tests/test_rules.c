/* Rules a careful user needs pinned down (hplvk.h chapters 4b and 7b):
 * - hpl_array_write of a subarray with a ghost part stores its owned box
 *   only: the source's ghost elements are ignored;
 * - a part of an owned subarray that misses the subarray's owned box owns
 *   nothing (owned_count 0, owned_first/last 0), and its subkernel writes
 *   nothing that counts;
 * - hpl_array_destroy of a subarray destroys the subarrays made from it;
 *   the data stays;
 * - hpl_subarray_count lists a part once hpl_array_part has returned it,
 *   once, and not the parts never asked for;
 * - a bad launch.domains[i].local names domains[i];
 * - a plain eval (one device, nothing annotated) is the one-part case:
 *   launch.domains[0] gives its domain, launch.device its device. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define ROWS 40
#define COLS 8

static void fill_root(hpl_context *ctx, hpl_array a, float base)
{
    float v[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        v[i] = base + (float)i;
    CHECK_OK(hpl_array_write(ctx, a, v, sizeof v));
}

static void test_write_ghosted(hpl_context *ctx)
{
    hpl_array m = th_array(ctx, HPL_FLOAT32, ROWS, COLS, 0), s;
    fill_root(ctx, m, 0.0f);
    /* Rows 5..14, owning rows 7..12. */
    CHECK_OK(hpl_subarray_owned(ctx, m, HPL_RANGES({5, 14}, HPL_ALL), (const hpl_range[]){{7, 12}, HPL_ALL}, &s));
    float src[10 * COLS];
    for (int i = 0; i < 10 * COLS; i++)
        src[i] = -1000.0f - (float)i;
    CHECK_OK(hpl_array_write(ctx, s, src, sizeof src));
    float got[ROWS * COLS];
    if (CHECK_OK(hpl_array_read(ctx, m, got, sizeof got))) {
        int bad = 0;
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) {
                bool owned = r >= 7 && r <= 12;
                float want = owned ? src[(r - 5) * COLS + c] : (float)(r * COLS + c);
                bad += got[r * COLS + c] != want;
            }
        CHECK(bad == 0, "hpl_array_write of a ghosted subarray: %d elements differ (owned rows from the source, "
                        "ghost rows and the rest unchanged)", bad);
    }
    CHECK_OK(hpl_array_destroy(ctx, m));
}

static void test_part_missing_owned_box(hpl_context *ctx, int ndev)
{
    if (ndev < 3)
        return;
    hpl_array m = th_array(ctx, HPL_FLOAT32, ROWS, COLS, 0), s;
    fill_root(ctx, m, 0.0f);
    /* All 40 rows, owning rows 0..5: over 3 devices the parts are rows
     * 0..13, 14..26, 27..39; parts 1 and 2 own nothing. */
    CHECK_OK(hpl_subarray_owned(ctx, m, HPL_RANGES(HPL_ALL, HPL_ALL), (const hpl_range[]){{0, 5}, HPL_ALL}, &s));
    hpl_kernel k = th_kernel(ctx, "#include <hplvk.glsl>\n"
                                  "hpl_args { hpl_out(float, 2) y; };\n"
                                  "void main() {\n"
                                  "    uvec3 id = hpl_global_id;\n"
                                  "    if (hpl_owns2(y, id.x, id.y)) hpl_at2(y, id.x, id.y) = -float(id.x);\n"
                                  "}\n");
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.devices = {0, 1, 2}, .device_count = 3}, HPL_ARGS(hpl_part1(s, 0))));
    CHECK(hpl_array_part_count(ctx, s) == 3, "3 parts");
    for (int i = 0; i < 3; i++) {
        hpl_array p;
        hpl_array_info info;
        if (!CHECK_OK(hpl_array_part(ctx, s, i, &p, NULL)) || !CHECK_OK(hpl_array_get_info(ctx, p, &info)))
            continue;
        uint64_t want = i == 0 ? 6 * COLS : 0;
        CHECK(info.owned_count == want, "part %d: owned_count %llu, expected %llu", i,
              (unsigned long long)info.owned_count, (unsigned long long)want);
        if (i > 0)
            CHECK(info.owned_first[0] == 0 && info.owned_last[0] == 0 && info.owned_first[1] == 0 &&
                      info.owned_last[1] == 0,
                  "part %d owns nothing: owned_first/last are 0, got %llu..%llu", i,
                  (unsigned long long)info.owned_first[0], (unsigned long long)info.owned_last[0]);
        else
            CHECK(info.owned_first[0] == 0 && info.owned_last[0] == 5 && info.owned_last[1] == COLS - 1,
                  "part 0 owns rows 0..5: %llu..%llu", (unsigned long long)info.owned_first[0],
                  (unsigned long long)info.owned_last[0]);
    }
    float got[ROWS * COLS];
    if (CHECK_OK(hpl_array_read(ctx, m, got, sizeof got))) {
        int bad = 0;
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++)
                bad += got[r * COLS + c] != (r <= 5 ? -(float)r : (float)(r * COLS + c));
        CHECK(bad == 0, "only the owned rows 0..5 were written: %d elements differ", bad);
    }
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_array_destroy(ctx, m));
}

static void test_destroy_nested(hpl_context *ctx)
{
    hpl_array m = th_array(ctx, HPL_FLOAT32, ROWS, COLS, 0), s, ss, other;
    fill_root(ctx, m, 1.0f);
    CHECK_OK(hpl_subarray(ctx, m, HPL_RANGES({4, 30}, HPL_ALL), &s));
    CHECK_OK(hpl_subarray(ctx, s, HPL_RANGES({2, 5}, {1, 3}), &ss));
    CHECK_OK(hpl_subarray(ctx, m, HPL_RANGES({0, 1}, HPL_ALL), &other));
    CHECK(hpl_subarray_count(ctx, m) == 2 && hpl_subarray_count(ctx, s) == 1, "counts before: %d, %d",
          hpl_subarray_count(ctx, m), hpl_subarray_count(ctx, s));
    CHECK_OK(hpl_array_destroy(ctx, s));
    hpl_array_info info;
    CHECK_FAILS(hpl_array_get_info(ctx, ss, &info), HPL_ERROR_INVALID_HANDLE, "");
    CHECK_FAILS(hpl_array_get_info(ctx, s, &info), HPL_ERROR_INVALID_HANDLE, "");
    CHECK_OK(hpl_array_get_info(ctx, other, &info));
    CHECK(hpl_subarray_count(ctx, m) == 1, "count after destroying one of two: %d", hpl_subarray_count(ctx, m));
    float got[ROWS * COLS];
    if (CHECK_OK(hpl_array_read(ctx, m, got, sizeof got))) {
        int bad = 0;
        for (int i = 0; i < ROWS * COLS; i++)
            bad += got[i] != 1.0f + (float)i;
        CHECK(bad == 0, "the data stays: %d elements changed", bad);
    }
    CHECK_OK(hpl_array_destroy(ctx, m));
}

static void test_count_after_part(hpl_context *ctx, int ndev)
{
    hpl_array m = th_array(ctx, HPL_FLOAT32, ROWS, COLS, 0), mine;
    CHECK_OK(hpl_subarray(ctx, m, HPL_RANGES({0, 3}, HPL_ALL), &mine));
    hpl_kernel k = th_kernel(ctx, "#include <hplvk.glsl>\n"
                                  "hpl_args { hpl_out(float, 2) y; };\n"
                                  "void main() { hpl_at2(y, hpl_global_id.x, hpl_global_id.y) = 2.0; }\n");
    hpl_launch all = {.device_count = ndev};
    for (int d = 0; d < ndev; d++)
        all.devices[d] = d;
    CHECK_OK(hpl_eval(ctx, k, &all, HPL_ARGS(hpl_part1(m, 1))));
    CHECK(hpl_subarray_count(ctx, m) == 1, "after the eval, before hpl_array_part: %d", hpl_subarray_count(ctx, m));
    int parts = hpl_array_part_count(ctx, m);
    CHECK(parts == ndev, "%d parts on %d devices", parts, ndev);
    hpl_array p0, again, listed;
    CHECK_OK(hpl_array_part(ctx, m, parts - 1, &p0, NULL));
    CHECK(hpl_subarray_count(ctx, m) == 2, "one part asked for: %d", hpl_subarray_count(ctx, m));
    CHECK_OK(hpl_array_part(ctx, m, parts - 1, &again, NULL));
    CHECK(again.id == p0.id && hpl_subarray_count(ctx, m) == 2, "the same part again: same handle, still 2 (%d)",
          hpl_subarray_count(ctx, m));
    CHECK_OK(hpl_subarray_get(ctx, m, 1, &listed));
    CHECK(listed.id == p0.id, "the part is listed after the user's subarray");
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_array_destroy(ctx, m));
}

/* A bad local size in launch.domains[i] names that entry. */
static void test_domain_local_message(hpl_context *ctx, int ndev)
{
    if (ndev < 2)
        return;
    hpl_array m = th_array(ctx, HPL_FLOAT32, ROWS, COLS, 0);
    hpl_kernel k = th_kernel(ctx, "#include <hplvk.glsl>\n"
                                  "hpl_args { hpl_out(float, 2) y; };\n"
                                  "void main() { hpl_at2(y, hpl_global_id.x, hpl_global_id.y) = 1.0; }\n");
    hpl_domain domains[2] = {{.local = {8, 1}}, {.local = {1u << 20, 1}}};
    CHECK_FAILS(hpl_eval(ctx, k, &(hpl_launch){.devices = {0, 1}, .device_count = 2, .domains = domains},
                         HPL_ARGS(hpl_part1(m, 0))),
                HPL_ERROR_INVALID_ARGUMENT, "launch.domains[1].local");
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_array_destroy(ctx, m));
}

/* A plain eval is an eval of one part: launch.domains[0] is its domain
 * (here the first 3 rows), on launch.device. */
static void test_plain_eval_domains(hpl_context *ctx, int ndev)
{
    hpl_array m = th_array(ctx, HPL_FLOAT32, ROWS, COLS, 0);
    hpl_kernel k = th_kernel(ctx, "#include <hplvk.glsl>\n"
                                  "hpl_args { hpl_inout(float, 2) y; };\n"
                                  "void main() { hpl_at2(y, hpl_global_id.x, hpl_global_id.y) += 1.0; }\n");
    hpl_domain domain = {.global = {3, COLS}};
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.device = ndev - 1, .domains = &domain}, HPL_ARGS(hpl_arr(m))));
    const float *p = th_access(ctx, m, HPL_READ);
    int bad = 0;
    for (int i = 0; p && i < ROWS * COLS; i++)
        bad += p[i] != (i < 3 * COLS ? 1.0f : 0.0f);
    CHECK(p && bad == 0, "a plain eval over launch.domains[0] (3 of %d rows): %d elements wrong", ROWS, bad);
    domain.local[0] = 1u << 20;
    CHECK_FAILS(hpl_eval(ctx, k, &(hpl_launch){.domains = &domain}, HPL_ARGS(hpl_arr(m))), HPL_ERROR_INVALID_ARGUMENT,
                "launch.domains[0].local");
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_array_destroy(ctx, m));
}

int main(void)
{
    static const char *lists[] = {"cpu", "cpu:2", "cpu:3", "cpu:4"};
    for (int l = 0; l < 4; l++) {
        hpl_context *ctx = th_context(lists[l]);
        int ndev = hpl_device_count(ctx);
        test_write_ghosted(ctx);
        test_part_missing_owned_box(ctx, ndev);
        test_destroy_nested(ctx);
        test_count_after_part(ctx, ndev);
        test_domain_local_message(ctx, ndev);
        test_plain_eval_domains(ctx, ndev);
        th_finish(ctx);
    }
    return th_failures() ? 1 : 0;
}
