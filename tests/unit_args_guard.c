/* The argument block cannot overflow even when reflection is wrong: a
 * kernel's reflection is falsified by hand (a field past the block, a block
 * over HPL__ARG_RANGE, offsets near 4 GiB) and every eval fails cleanly
 * (HPL_ERROR_INTERNAL or HPL_ERROR_TOO_LARGE, with a message) instead of
 * writing outside its argument chunk (ASan watches in the sanitized build).
 * With the reflection restored, the kernel runs again. */
#include "api.h"
#include "harness.h"

#include <stdio.h>
#include <string.h>

#define N 64

static const char *src = "#include <hplvk.glsl>\n"
                         "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float s; };\n"
                         "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = s * hpl_at(x, i); }\n";

static hpl__reflection *reflection_of(hpl_context *ctx, hpl_kernel k)
{
    hpl__kernel *kk = NULL;
    if (hpl__kernel_get(ctx, k, &kk) != HPL_OK)
        return NULL;
    return &kk->variants[0].reflection;
}

static void run_ok(hpl_context *ctx, hpl_kernel k, hpl_array x, hpl_array y, float s, const char *what)
{
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(s))));
    const float *py = th_access(ctx, y, HPL_READ);
    if (py) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += py[i] != s * (float)i;
        CHECK(bad == 0, "%s: %d wrong results", what, bad);
    }
}

typedef void (*lie_fn)(hpl__reflection *r);

static void lie_field_far(hpl__reflection *r) { r->layout[0].field[HPL__FIELD_DIMS] = 60000; }
static void lie_field_4g(hpl__reflection *r) { r->layout[1].field[HPL__FIELD_OWNED_HI] = 0xfffffffcu; }
static void lie_pointer_end(hpl__reflection *r) { r->layout[1].field[HPL__FIELD_POINTER] = r->args_size - 4; }
static void lie_scalar_far(hpl__reflection *r) { r->args[2].offset = 1u << 30; }
static void lie_scalar_4g(hpl__reflection *r) { r->args[2].offset = 0xfffffffeu; }
static void lie_size_big(hpl__reflection *r) { r->args_size = 70000; }
static void lie_size_small(hpl__reflection *r) { r->args_size = 16; }

static const struct {
    lie_fn fn;
    const char *what;
} lies[] = {
    {lie_field_far, "x.dims at byte 60000"},
    {lie_field_4g, "y.owned_hi at byte 2^32 - 4"},
    {lie_pointer_end, "y.p straddling the block's end"},
    {lie_scalar_far, "s at 1 GiB"},
    {lie_scalar_4g, "s at 2^32 - 2"},
    {lie_size_big, "a 70000-byte block"},
    {lie_size_small, "a 16-byte block"},
};

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0), y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    float *px = th_access(ctx, x, HPL_WRITE);
    if (px)
        for (int i = 0; i < N; i++)
            px[i] = (float)i;
    /* Twice: with the pipeline not made yet (its own checks run first) and
     * made (only eval's). */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t l = 0; l < HPL__ARRAY_LEN(lies); l++) {
            hpl_kernel k = th_kernel(ctx, src);
            hpl__reflection *r = reflection_of(ctx, k);
            if (!CHECK(r != NULL, "no reflection"))
                continue;
            if (pass == 1)
                run_ok(ctx, k, x, y, 2.0f, "before the lie");
            hpl__reflection truth = *r;
            lies[l].fn(r);
            int rc = hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(3.0f)));
            CHECK(rc == HPL_ERROR_INTERNAL || rc == HPL_ERROR_TOO_LARGE,
                  "pass %d, %s: hpl_eval returned %s: %s", pass, lies[l].what, hpl_error_name(rc), hpl_last_error());
            CHECK(hpl_last_error()[0] != 0, "no message");
            if (pass == 1 && l == 0)
                th_note("observed: %s", hpl_last_error());
            *r = truth;
            run_ok(ctx, k, x, y, 4.0f, lies[l].what);
            CHECK_OK(hpl_kernel_destroy(ctx, k));
        }
    }
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    return th_finish(ctx);
}
