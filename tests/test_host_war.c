/* Write after read of the host copy, across devices, with nothing else to
 * order it. Device 0 writes x every step; device 1 reads all of x every
 * step, slowly. Each of device 1's reads uploads x from the host copy, and
 * each of device 0's writes is downloaded into that same host copy before
 * device 1's next read: a download must not overwrite the host copy while
 * an upload of the step before may still be reading it. Device 1's work
 * never feeds back to device 0, so only the gates order this (submit.c:
 * gate_for on the compute queue, hpl__lane_gate_for on the transfer lane).
 * A stencil cannot show it: its halos feed back, and the next step's
 * chain of dependencies covers the host copy too. With either gate left
 * out, 10 or 11 of the 12 steps read a later x (measured on Lavapipe, the
 * lane run as HPLVK_TRANSFER_LANE=shared, a variant below).
 * Each y[s] must equal the host's LCG of x as written at step s. */
#include "harness.h"

static const char *write_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) x; uint s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = i * 7919u + s * 104729u; }\n";

/* `work` rounds of an LCG: within Lavapipe's loop limit. */
static const char *read_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; uint work; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x, h = hpl_at(x, i);\n"
    "    for (uint k = 0u; k < work; k++) h = h * 1664525u + 1013904223u;\n"
    "    hpl_at(y, i) = h;\n"
    "}\n";

enum { N = 4096, STEPS = 12, WORK = 20000 };

int main(void)
{
    hpl_context *ctx = th_context("cpu:2");
    hpl_kernel kw = th_kernel(ctx, write_src), kr = th_kernel(ctx, read_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0), y[STEPS];
    for (int s = 0; s < STEPS; s++)
        y[s] = th_array(ctx, HPL_UINT32, N, 0, 0);
    /* All recorded before any wait: device 1 falls behind device 0. */
    for (int s = 0; s < STEPS; s++) {
        CHECK_OK(hpl_eval(ctx, kw, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(x), hpl_u32((uint32_t)s))));
        CHECK_OK(hpl_eval(ctx, kr, &(hpl_launch){.device = 1}, HPL_ARGS(hpl_arr(x), hpl_arr(y[s]), hpl_u32(WORK))));
    }
    uint32_t mul = 1, add = 0; /* the LCG's WORK rounds as one affine map */
    for (uint32_t k = 0; k < WORK; k++) {
        mul *= 1664525u;
        add = add * 1664525u + 1013904223u;
    }
    for (int s = 0; s < STEPS; s++) {
        const uint32_t *got = th_access(ctx, y[s], HPL_READ);
        int bad = 0, first = -1;
        for (uint32_t i = 0; got && i < N; i++)
            if (got[i] != (i * 7919u + (uint32_t)s * 104729u) * mul + add && bad++ == 0)
                first = (int)i;
        CHECK(got && bad == 0, "step %d: device 1 read another step's x in %d of %d elements (first %d)", s, bad, N,
              first);
    }
    for (int s = 0; s < STEPS; s++)
        CHECK_OK(hpl_array_destroy(ctx, y[s]));
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, kw));
    CHECK_OK(hpl_kernel_destroy(ctx, kr));
    return th_finish(ctx);
}
