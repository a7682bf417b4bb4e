/* hpl_device_info.max_loop_iterations says the truth. On a device that
 * reports a limit L (Lavapipe: 65535), one loop of L - 1 iterations runs
 * whole, one of 2L does not (the driver leaves it early, silently: what the
 * field warns of), nor do two loops of L / 2 + 1000 each: the limit counts
 * every loop of an invocation together. On a device that reports none, a
 * loop of 200000 and two of 100000 run whole. */
#include "harness.h"

static const char *count_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) o; uint a; uint b; };\n"
    "void main() {\n"
    "    uint c = 0u;\n"
    "    for (uint i = 0u; i < a; i++) c += 1u;\n"
    "    for (uint i = 0u; i < b; i++) c += 1u;\n"
    "    hpl_at(o, hpl_global_id.x) = c;\n"
    "}\n";

/* Whether a loop of a iterations, then one of b, ran whole on device d. */
static bool runs_whole(hpl_context *ctx, hpl_kernel k, hpl_array o, int d, uint32_t a, uint32_t b)
{
    uint32_t got = 0;
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.global = {1}, .device = d}, HPL_ARGS(hpl_arr(o), hpl_u32(a), hpl_u32(b))));
    CHECK_OK(hpl_array_read(ctx, o, &got, sizeof got));
    return got == a + b;
}

int main(void)
{
    hpl_context *ctx = th_context("cpu:2");
    hpl_kernel k = th_kernel(ctx, count_src);
    hpl_array o = th_array(ctx, HPL_UINT32, 1, 0, 0);
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        if (!CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            continue;
        uint32_t limit = info.max_loop_iterations;
        th_note("device %d (%s): max_loop_iterations %u", d, info.name, limit);
        if (limit) {
            CHECK(runs_whole(ctx, k, o, d, limit - 1, 0), "device %s: a loop of %u (within its limit) ended early",
                  info.name, limit - 1);
            CHECK(!runs_whole(ctx, k, o, d, 2 * limit, 0),
                  "device %s: a loop of %u ran whole: the limit of %u it reports is not there (any more)", info.name,
                  2 * limit, limit);
            CHECK(!runs_whole(ctx, k, o, d, limit / 2 + 1000, limit / 2 + 1000),
                  "device %s: two loops of %u ran whole: its limit is not for all loops together", info.name,
                  limit / 2 + 1000);
        } else {
            CHECK(runs_whole(ctx, k, o, d, 200000, 0), "device %s (no loop limit reported): a loop of 200000 ended early",
                  info.name);
            CHECK(runs_whole(ctx, k, o, d, 100000, 100000),
                  "device %s (no loop limit reported): two loops of 100000 ended early", info.name);
        }
    }
    CHECK_OK(hpl_array_destroy(ctx, o));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    return th_finish(ctx);
}
