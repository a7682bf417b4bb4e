/* Multi-device evals split in proportion to launch.shares (the static
 * distribution execution plans choose): part sizes, the devices that get
 * nothing, cuts on multiples of the local size, a stencil with halos over
 * uneven parts bit-exact against the host, and bad shares rejected with an
 * error that names them. Runs on "cpu:3" (three logical devices; a GPU
 * opened three times under TH_DEVICE_KIND). */
#include "harness.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

#define N 1000

static const char *scale_src = "#include <hplvk.glsl>\n"
                               "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; };\n"
                               "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = 3u * hpl_at(x, i) + i; }\n";

/* The parts of y: their count, and each one's device and owned length. */
static void check_parts(hpl_context *ctx, hpl_array y, int count, const int *devices, const uint64_t *lengths,
                        const char *what)
{
    int n = hpl_array_part_count(ctx, y);
    if (!CHECK(n == count, "%s: %d parts, expected %d", what, n, count))
        return;
    for (int i = 0; i < count; i++) {
        hpl_array part;
        int device = -1;
        hpl_array_info info;
        if (!CHECK_OK(hpl_array_part(ctx, y, i, &part, &device)) || !CHECK_OK(hpl_array_get_info(ctx, part, &info)))
            continue;
        CHECK(device == devices[i] && info.owned_count == lengths[i],
              "%s: part %d on device %d owns %llu elements, expected device %d and %llu", what, i, device,
              (unsigned long long)info.owned_count, devices[i], (unsigned long long)lengths[i]);
    }
}

static void check_y(hpl_context *ctx, hpl_array y, const char *what)
{
    const uint32_t *py = th_access(ctx, y, HPL_READ);
    int bad = 0;
    for (uint32_t i = 0; py && i < N; i++)
        bad += py[i] != 3u * (i * 7u + 1u) + i;
    CHECK(py && bad == 0, "%s: %d elements of y are wrong", what, bad);
}

static void scale_runs(hpl_context *ctx)
{
    hpl_kernel k = th_kernel(ctx, scale_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0), y = th_array(ctx, HPL_UINT32, N, 0, 0);
    uint32_t *px = th_access(ctx, x, HPL_WRITE);
    for (uint32_t i = 0; px && i < N; i++)
        px[i] = i * 7u + 1u;
    const hpl_launch three = {.devices = {0, 1, 2}, .device_count = 3};

    hpl_launch l = three;
    l.shares = (const double[]){1, 0, 3};
    CHECK_OK(hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(x, 0), hpl_part1(y, 0))));
    check_y(ctx, y, "shares 1:0:3");
    check_parts(ctx, y, 2, (const int[]){0, 2}, (const uint64_t[]){250, 750}, "shares 1:0:3");

    /* The first device gets nothing: the part list starts at device 1. */
    l.shares = (const double[]){0, 2, 0};
    CHECK_OK(hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(x, 0), hpl_part1(y, 0))));
    check_y(ctx, y, "shares 0:2:0");
    check_parts(ctx, y, 1, (const int[]){1}, (const uint64_t[]){N}, "shares 0:2:0");

    /* Cuts on multiples of the local size: 16 groups of 64, 8 each way. */
    l = three;
    l.device_count = 2;
    l.local[0] = 64;
    l.shares = (const double[]){1, 1};
    CHECK_OK(hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(x, 0), hpl_part1(y, 0))));
    check_y(ctx, y, "shares 1:1, local 64");
    check_parts(ctx, y, 2, (const int[]){0, 1}, (const uint64_t[]){512, N - 512}, "shares 1:1, local 64");

    /* Bad shares: the eval fails, names them, and runs nothing. */
    const double nan_share[3] = {1, NAN, 1}, negative[3] = {1, -1, 1}, zeros[3] = {0, 0, 0};
    const struct {
        const double *shares;
        const char *says;
    } bad[] = {{nan_share, "launch.shares[1]"}, {negative, "launch.shares[1]"}, {zeros, "all 3 devices 0"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        l = three;
        l.shares = bad[i].shares;
        int rc = hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(x, 0), hpl_part1(y, 0)));
        CHECK(rc == HPL_ERROR_INVALID_ARGUMENT && strstr(hpl_last_error(), bad[i].says),
              "bad shares %zu: %s (%s), expected an error naming '%s'", i, hpl_error_name(rc), hpl_last_error(),
              bad[i].says);
    }
    l = three;
    l.shares = (const double[]){1, 1, 1};
    static const hpl_domain domains[3];
    l.domains = domains;
    int rc = hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(x, 0), hpl_part1(y, 0)));
    CHECK(rc == HPL_ERROR_INVALID_ARGUMENT && strstr(hpl_last_error(), "launch.domains"),
          "shares with domains: %s (%s)", hpl_error_name(rc), hpl_last_error());
    check_y(ctx, y, "after the failed evals");
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

/* Steps of the stencil over parts 5:1:2, halos of one row, against the
 * host: the halo rows cross uneven boundaries every step. */
static void stencil(hpl_context *ctx)
{
    enum { STEPS = 20 };
    hpl_kernel k = th_kernel(ctx, stencil1d_src());
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0);
    uint32_t host[2][N];
    uint32_t *pa = th_access(ctx, a, HPL_WRITE);
    for (uint32_t i = 0; i < N; i++) {
        host[0][i] = i * 2654435761u;
        if (pa)
            pa[i] = host[0][i];
    }
    hpl_launch l = {.devices = {0, 1, 2}, .device_count = 3, .shares = (const double[]){5, 1, 2}};
    for (int s = 0; s < STEPS; s++) {
        hpl_array in = s % 2 ? b : a, out = s % 2 ? a : b;
        CHECK_OK(hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(in, 1), hpl_part1(out, 1), hpl_u32(N))));
        const uint32_t *h = host[s % 2];
        uint32_t *o = host[1 - s % 2];
        for (uint32_t i = 0; i < N; i++)
            o[i] = (i ? h[i - 1] : 0u) + 2u * h[i] + (i + 1 < N ? h[i + 1] : 0u);
    }
    const uint32_t *got = th_access(ctx, STEPS % 2 ? b : a, HPL_READ);
    int bad = 0;
    for (uint32_t i = 0; got && i < N; i++)
        bad += got[i] != host[STEPS % 2][i];
    CHECK(got && bad == 0, "stencil over parts 5:1:2: %d elements differ from the host", bad);
    check_parts(ctx, a, 3, (const int[]){0, 1, 2}, (const uint64_t[]){625, 125, 250}, "stencil 5:1:2");
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

int main(void)
{
    hpl_context *ctx = th_context("cpu:3");
    scale_runs(ctx);
    stencil(ctx);
    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
