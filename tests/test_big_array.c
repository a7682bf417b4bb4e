/* One 1-D float array of 80,000,000 elements (305 MiB): larger than
 * Lavapipe's 128 MiB maxStorageBufferRange, and with any local size <= 1024
 * its domain exceeds 65535 work groups, so the library must split it into
 * several dispatches. In place (hpl_inout) to keep memory down.
 *   1. host fills x[i] = i % 1000003 (exact in float); y = 2x + 1 in place;
 *      every element checked (catches offsets < 1000003);
 *   2. a kernel writes x[i] = float(i >> 5) from hpl_global_id: every element
 *      checked (catches any offset >= 32 and a wrong dispatch base). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>

#define COUNT 80000000ull

static const char *axpb_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(float, 1) x; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = 2.0 * hpl_at(x, i) + 1.0; }\n";

static const char *index_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 1) x; hpl_out(uint, 1) info; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    hpl_at(x, i) = float(i >> 5);\n"
    "    if (i == 0) { hpl_at(info, 0) = x.dims; hpl_at(info, 1) = hpl_global_size.x; hpl_at(info, 2) = hpl_domain_size.x; }\n"
    "    if (i == x.dims - 1) hpl_at(info, 3) = i;\n"
    "}\n";

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_device_info info;
    if (CHECK_OK(hpl_device_get_info(ctx, 0, &info)))
        th_note("device: %s, max_buffer_size %llu, max work groups %u, max invocations %u", info.name,
                (unsigned long long)info.max_buffer_size, info.max_workgroup_count[0],
                info.max_workgroup_invocations);

    hpl_array x;
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {COUNT}, .name = "big"}, &x)))
        return th_finish(ctx);
    hpl_array_info ai;
    if (CHECK_OK(hpl_array_get_info(ctx, x, &ai)))
        CHECK(ai.bytes == COUNT * 4, "bytes %llu", (unsigned long long)ai.bytes);

    /* 1. Host fill, y = 2x + 1 in place. */
    float *p = th_access(ctx, x, HPL_WRITE);
    if (!p)
        return th_finish(ctx);
    for (uint64_t i = 0; i < COUNT; i++)
        p[i] = (float)(i % 1000003);
    hpl_kernel k = th_kernel(ctx, axpb_src);
    uint32_t ls[3];
    bool choosable;
    if (CHECK_OK(hpl_kernel_get_local_size(ctx, k, ls, &choosable)))
        th_note("kernel local size %u (choosable %d)", ls[0], choosable);
    double t0 = th_now();
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x))));
    const float *r = th_access(ctx, x, HPL_READ);
    th_note("eval + read back of 305 MiB took %.2f s (information only)", th_now() - t0);
    if (r) {
        uint64_t bad = 0, first = 0;
        for (uint64_t i = 0; i < COUNT; i++) {
            float want = 2.0f * (float)(i % 1000003) + 1.0f;
            if (r[i] != want && bad++ == 0)
                first = i;
        }
        CHECK(bad == 0, "2x+1: %llu wrong elements, first x[%llu] = %.9g want %.9g", (unsigned long long)bad,
              (unsigned long long)first, r[first], 2.0f * (float)(first % 1000003) + 1.0f);
    }

    /* 2. Values from the global id, checked everywhere. */
    hpl_kernel ki = th_kernel(ctx, index_src);
    hpl_array inf = th_array(ctx, HPL_UINT32, 4, 0, 0);
    CHECK_OK(hpl_eval(ctx, ki, NULL, HPL_ARGS(hpl_arr(x), hpl_arr(inf))));
    r = th_access(ctx, x, HPL_READ);
    if (r) {
        uint64_t bad = 0, first = 0;
        for (uint64_t i = 0; i < COUNT; i++)
            if (r[i] != (float)(i >> 5) && bad++ == 0)
                first = i;
        CHECK(bad == 0, "x[i] = i >> 5: %llu wrong elements, first x[%llu] = %.9g want %.9g", (unsigned long long)bad,
              (unsigned long long)first, r[first], (float)(first >> 5));
    }
    const uint32_t *pi = th_access(ctx, inf, HPL_READ);
    if (pi) {
        CHECK(pi[0] == COUNT, "x.dims = %u, want %llu", pi[0], COUNT);
        CHECK(pi[1] == COUNT && pi[2] == COUNT, "global size %u, domain size %u, want %llu", pi[1], pi[2], COUNT);
        CHECK(pi[3] == COUNT - 1, "the last invocation saw i = %u, want %llu", pi[3], COUNT - 1);
    }

    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, inf));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    CHECK_OK(hpl_kernel_destroy(ctx, ki));
    return th_finish(ctx);
}
