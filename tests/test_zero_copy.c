/* Zero copy (hpl_context_desc.zero_copy, HPLVK_ZERO_COPY): devices sharing
 * memory with the host work on the host's copy of every array.
 *   - "cpu" (one logical device), AUTO: hpl_device_info.zero_copy is true;
 *     a program with host writes, kernels, subarrays, fill, assignment (on
 *     the device and on the host), user storage and host reads gives the
 *     host model's results with every statistics counter 0 and nothing
 *     resident on the device;
 *   - the same program with HPL_ZERO_COPY_OFF: same results, real transfers;
 *   - "cpu:2", AUTO: not zero copy (replicas keep separate copies); ON: zero
 *     copy on both, the program and a chain of 100 dependent evals
 *     alternating the devices give the right values, with no transfer;
 *   - HPLVK_ZERO_COPY=0 / =1 respected.
 * A device that does not share memory with the host (th_shares_memory: a
 * discrete GPU, with TH_DEVICE_KIND=gpu0) cannot be zero copy: there AUTO
 * and ON (and HPLVK_ZERO_COPY=1) must report zero_copy false, and the same
 * programs must give the same values with real transfers on every device. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256 /* rows */
#define M 128 /* columns */
#define NM ((uint64_t)N * M)

static const char *map2_src = /* b = a * s + t */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; uint s; uint t; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(b, id.x, id.y) = hpl_at2(a, id.x, id.y) * s + t; }\n";

static const char *step2_src = /* x = x * 3 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 2) x; uint k; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(x, id.x, id.y) = hpl_at2(x, id.x, id.y) * 3u + k; }\n";

static const char *add2_src = /* c = a + b + origin-dependent term (subarrays see their origin) */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_in(uint, 2) b; hpl_out(uint, 2) c; };\n"
    "void main() { uvec3 id = hpl_global_id;\n"
    "    hpl_at2(c, id.x, id.y) = hpl_at2(a, id.x, id.y) + hpl_at2(b, id.x, id.y) + c.origin.x * 1000u + c.origin.y; }\n";

static const char *map1_src = /* b = a * 3 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = hpl_at(a, i) * 3u + k; }\n";

static const char *step1_src = /* x = x * 5 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 5u + k; }\n";

static hpl_context *zc_context(const char *devices, int zero_copy)
{
    return th_context_desc(&(hpl_context_desc){.devices = devices, .zero_copy = zero_copy});
}

static void expect_zero_copy(hpl_context *ctx, bool want, const char *what)
{
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        memset(&info, 0, sizeof info);
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(info.zero_copy == want, "%s: device %d zero_copy %d, want %d", what, d, info.zero_copy, want);
    }
}

/* Every counter of every device and of the total is 0, nothing resident. */
static void expect_nothing_moved(const hpl_stats *s, const char *what)
{
    const hpl_device_stats *list[17];
    int n = 0;
    for (int d = 0; d < s->device_count && d < 16; d++)
        list[n++] = &s->device[d];
    list[n++] = &s->total;
    for (int i = 0; i < n; i++) {
        const hpl_device_stats *x = list[i];
        char who[32];
        if (i == n - 1)
            snprintf(who, sizeof who, "total");
        else
            snprintf(who, sizeof who, "device %d", i);
        CHECK(x->to_device_bytes == 0 && x->to_device_count == 0 && x->to_host_bytes == 0 && x->to_host_count == 0 &&
                  x->local_bytes == 0 && x->local_count == 0,
              "%s: %s moved data: to_device %" PRIu64 " (%" PRIu64 ") to_host %" PRIu64 " (%" PRIu64 ") local %" PRIu64
              " (%" PRIu64 ")",
              what, who, x->to_device_bytes, x->to_device_count, x->to_host_bytes, x->to_host_count, x->local_bytes,
              x->local_count);
        CHECK(x->evictions == 0 && x->evicted_bytes == 0 && x->resident_bytes == 0 && x->peak_bytes == 0,
              "%s: %s holds device copies: evictions %" PRIu64 " evicted %" PRIu64 " resident %" PRIu64
              " peak %" PRIu64,
              what, who, x->evictions, x->evicted_bytes, x->resident_bytes, x->peak_bytes);
    }
}

/* Whether device 0 shares memory with the host (the harness's "cpu" opens
 * devices of one kind). */
static bool shares_memory(hpl_context *ctx)
{
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    return CHECK_OK(hpl_device_get_info(ctx, 0, &info)) && th_shares_memory(&info);
}

/* Zero copy: nothing moved at all. Separate memories: every device both
 * received and sent data, and held arrays. */
static void expect_moved_if(const hpl_stats *s, bool separate, const char *what)
{
    if (!separate) {
        expect_nothing_moved(s, what);
        return;
    }
    for (int d = 0; d < s->device_count && d < 16; d++)
        CHECK(s->device[d].to_device_bytes > 0 && s->device[d].to_host_bytes > 0 && s->device[d].peak_bytes > 0,
              "%s, separate memory: device %d to_device %" PRIu64 " to_host %" PRIu64 " peak %" PRIu64
              ": no real transfers",
              what, d, s->device[d].to_device_bytes, s->device[d].to_host_bytes, s->device[d].peak_bytes);
}

static hpl_array sub2(hpl_context *ctx, hpl_array parent, hpl_range r0, hpl_range r1)
{
    hpl_array s = {0};
    CHECK_OK(hpl_subarray(ctx, parent, 2, (const hpl_range[]){r0, r1}, &s));
    return s;
}

/* The program: host writes, kernels on every device in turn, subarrays
 * (row and column blocks, as kernel arguments, fill targets, assignment
 * sources and host accesses), fill on a device and on the host, assignment
 * on a device and on the host, user storage, host reads; every result
 * checked against the host model. */
static void program(hpl_context *ctx, bool zero_copy, const char *what)
{
    int ndev = hpl_device_count(ctx);
    hpl_kernel map2 = th_kernel(ctx, map2_src), step2 = th_kernel(ctx, step2_src), add2 = th_kernel(ctx, add2_src);
    uint32_t *ra = malloc(NM * 4), *rb = malloc(NM * 4), *re = malloc(NM * 4), *ru = malloc(NM * 4);
    uint32_t *rc = malloc(40 * M * 4), *rd = malloc(N * 16 * 4);
    uint32_t *user = aligned_alloc(4096, NM * 4);
    char msg[160];
    hpl_launch l[4];
    for (int d = 0; d < 4; d++)
        l[d] = th_on(d % ndev);

    hpl_array a = th_array(ctx, HPL_UINT32, N, M, 0), b = th_array(ctx, HPL_UINT32, N, M, 0);
    hpl_array c = th_array(ctx, HPL_UINT32, 40, M, 0), d = th_array(ctx, HPL_UINT32, N, 16, 0);
    hpl_array e = th_array(ctx, HPL_UINT32, N, M, 0), u;
    for (uint64_t i = 0; i < NM; i++)
        user[i] = ru[i] = (uint32_t)(i * 13u + 7u);
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {N, M}, .host = user, .name = "user"},
                              &u));

    /* Host writes a. */
    uint32_t *p = th_access(ctx, a, HPL_WRITE);
    if (p)
        for (uint64_t i = 0; i < NM; i++)
            p[i] = ra[i] = (uint32_t)(i * 3u + 1u);
    /* b = 2a + 1 on device 0. */
    CHECK_OK(hpl_eval(ctx, map2, &l[0], HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_u32(2), hpl_u32(1))));
    for (uint64_t i = 0; i < NM; i++)
        rb[i] = ra[i] * 2u + 1u;
    /* Rows 10..49 of b: x = 3x + 5 on device 1. */
    hpl_array brows = sub2(ctx, b, (hpl_range){10, 49}, (hpl_range)HPL_ALL);
    CHECK_OK(hpl_eval(ctx, step2, &l[1], HPL_ARGS(hpl_arr(brows), hpl_u32(5))));
    for (uint64_t i = 10 * M; i < 50 * M; i++)
        rb[i] = rb[i] * 3u + 5u;
    /* Columns 8..23 of a filled with 7 on device 0. */
    hpl_array acols = sub2(ctx, a, (hpl_range)HPL_ALL, (hpl_range){8, 23});
    uint32_t seven = 7;
    CHECK_OK(hpl_array_fill(ctx, acols, &seven, 0));
    for (uint64_t i = 0; i < N; i++)
        for (uint64_t j = 8; j <= 23; j++)
            ra[i * M + j] = 7;
    /* c = rows 10..49 of b, assigned on device 1. */
    CHECK_OK(hpl_array_assign(ctx, c, brows, 1 % ndev));
    memcpy(rc, rb + 10 * M, 40 * M * 4);
    /* d = columns 8..23 of a, assigned on the host. */
    CHECK_OK(hpl_array_assign(ctx, d, acols, HPL_ON_HOST));
    for (uint64_t i = 0; i < N; i++)
        for (uint64_t j = 0; j < 16; j++)
            rd[i * 16 + j] = ra[i * M + 8 + j];
    /* Rows 200..255 of b filled with 9 on the host. */
    hpl_array btail = sub2(ctx, b, (hpl_range){200, N - 1}, (hpl_range)HPL_ALL);
    uint32_t nine = 9;
    CHECK_OK(hpl_array_fill(ctx, btail, &nine, HPL_ON_HOST));
    for (uint64_t i = 200 * M; i < NM; i++)
        rb[i] = 9;
    /* e = a + 3 on device 1, then columns 32..95 of e = a + b + 32 (its
     * column origin) over column blocks on the third device. */
    CHECK_OK(hpl_eval(ctx, map2, &l[1], HPL_ARGS(hpl_arr(a), hpl_arr(e), hpl_u32(1), hpl_u32(3))));
    for (uint64_t i = 0; i < NM; i++)
        re[i] = ra[i] + 3u;
    hpl_array ecols = sub2(ctx, e, (hpl_range)HPL_ALL, (hpl_range){32, 95});
    hpl_array acols2 = sub2(ctx, a, (hpl_range)HPL_ALL, (hpl_range){32, 95});
    hpl_array bcols2 = sub2(ctx, b, (hpl_range)HPL_ALL, (hpl_range){32, 95});
    CHECK_OK(hpl_eval(ctx, add2, &l[2], HPL_ARGS(hpl_arr(acols2), hpl_arr(bcols2), hpl_arr(ecols))));
    for (uint64_t i = 0; i < N; i++)
        for (uint64_t j = 32; j <= 95; j++)
            re[i * M + j] = ra[i * M + j] + rb[i * M + j] + 32u;
    /* The host adds 1 to rows 0..9 of e through a subarray access. */
    hpl_array ehead = sub2(ctx, e, (hpl_range){0, 9}, (hpl_range)HPL_ALL);
    hpl_array_info hi;
    memset(&hi, 0, sizeof hi);
    CHECK_OK(hpl_array_get_info(ctx, ehead, &hi));
    p = th_access(ctx, ehead, HPL_READ_WRITE);
    if (p)
        for (uint64_t i = 0; i < 10; i++)
            for (uint64_t j = 0; j < M; j++)
                p[i * hi.host_stride[0] + j * hi.host_stride[1]] += 1u;
    for (uint64_t i = 0; i < 10 * M; i++)
        re[i] += 1u;
    /* e = 3e + 11 on device 0, then again on the last device. */
    CHECK_OK(hpl_eval(ctx, step2, &l[0], HPL_ARGS(hpl_arr(e), hpl_u32(11))));
    CHECK_OK(hpl_eval(ctx, step2, &l[3], HPL_ARGS(hpl_arr(e), hpl_u32(12))));
    for (uint64_t i = 0; i < NM; i++)
        re[i] = (re[i] * 3u + 11u) * 3u + 12u;
    /* User storage: u = 3u + 2 on device 1, read through the storage. */
    CHECK_OK(hpl_eval(ctx, step2, &l[1], HPL_ARGS(hpl_arr(u), hpl_u32(2))));
    for (uint64_t i = 0; i < NM; i++)
        ru[i] = ru[i] * 3u + 2u;
    p = th_access(ctx, u, HPL_READ);
    CHECK(p == user, "%s: access to a user-storage array returned %p, not the storage %p", what, (void *)p,
          (void *)user);
    EXPECT_U32(user, ru, NM, "user storage after a kernel wrote it");

    /* Host reads. */
    snprintf(msg, sizeof msg, "%s: a (host write, column fill on device 0)", what);
    EXPECT_ARRAY_U32(ctx, a, ra, NM, msg);
    snprintf(msg, sizeof msg, "%s: b (kernel, row-block kernel, host fill)", what);
    EXPECT_ARRAY_U32(ctx, b, rb, NM, msg);
    snprintf(msg, sizeof msg, "%s: c (assigned from a row block on a device)", what);
    EXPECT_ARRAY_U32(ctx, c, rc, 40 * M, msg);
    snprintf(msg, sizeof msg, "%s: d (assigned from a column block on the host)", what);
    EXPECT_ARRAY_U32(ctx, d, rd, N * 16, msg);
    snprintf(msg, sizeof msg, "%s: e (kernels, column-block kernel, host subarray access)", what);
    EXPECT_ARRAY_U32(ctx, e, re, NM, msg);
    uint32_t *col = malloc(N * 64 * 4), *colref = malloc(N * 64 * 4);
    CHECK_OK(hpl_array_read(ctx, ecols, col, N * 64 * 4));
    for (uint64_t i = 0; i < N; i++)
        for (uint64_t j = 0; j < 64; j++)
            colref[i * 64 + j] = re[i * M + 32 + j];
    snprintf(msg, sizeof msg, "%s: column block of e read with hpl_array_read", what);
    EXPECT_U32(col, colref, N * 64, msg);
    /* hpl_array_write into a row block, read back by a kernel. */
    for (uint64_t i = 0; i < 40 * M; i++)
        rc[i] = (uint32_t)i ^ 0xabcu;
    CHECK_OK(hpl_array_write(ctx, brows, rc, 40 * M * 4));
    CHECK_OK(hpl_eval(ctx, map2, &l[2], HPL_ARGS(hpl_arr(brows), hpl_arr(c), hpl_u32(1), hpl_u32(0))));
    snprintf(msg, sizeof msg, "%s: c = row block written with hpl_array_write", what);
    EXPECT_ARRAY_U32(ctx, c, rc, 40 * M, msg);

    /* While every array is alive: zero copy holds nothing on any device
     * and has moved nothing; otherwise the arrays are resident. */
    hpl_stats st = th_stats(ctx);
    snprintf(msg, sizeof msg, "%s: with the program's arrays alive", what);
    if (zero_copy) {
        expect_nothing_moved(&st, msg);
    } else {
        for (int dv = 0; dv < ndev; dv++)
            CHECK(st.device[dv].resident_bytes >= 2 * NM * 4 && st.device[dv].to_device_bytes > 0,
                  "%s: device %d resident_bytes %" PRIu64 " to_device_bytes %" PRIu64, msg, dv,
                  st.device[dv].resident_bytes, st.device[dv].to_device_bytes);
    }

    hpl_array all[] = {a, b, c, d, e, u};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        CHECK_OK(hpl_array_destroy(ctx, all[i]));
    free(user);
    free(ra);
    free(rb);
    free(rc);
    free(rd);
    free(re);
    free(ru);
    free(col);
    free(colref);
    CHECK_OK(hpl_kernel_destroy(ctx, map2));
    CHECK_OK(hpl_kernel_destroy(ctx, step2));
    CHECK_OK(hpl_kernel_destroy(ctx, add2));
}

/* 100 dependent evals alternating the devices: ping-pong between x and y
 * (write-only outputs) and, every tenth step, an in-place update; no host
 * access in between, so only the library's ordering makes the values right. */
#define CN 4099
static void chain(hpl_context *ctx, const char *what)
{
    int ndev = hpl_device_count(ctx);
    hpl_kernel map1 = th_kernel(ctx, map1_src), step1 = th_kernel(ctx, step1_src);
    hpl_array x = th_array(ctx, HPL_UINT32, CN, 0, 0), y = th_array(ctx, HPL_UINT32, CN, 0, 0);
    uint32_t *rx = malloc(CN * 4), *ry = malloc(CN * 4);
    uint32_t *p = th_access(ctx, x, HPL_WRITE);
    if (p)
        for (uint32_t i = 0; i < CN; i++)
            p[i] = rx[i] = i * 17u + 1u;
    for (int j = 0; j < 100; j++) {
        hpl_launch l = th_on(j % ndev);
        uint32_t k = (uint32_t)j;
        if (j % 2 == 0) {
            CHECK_OK(hpl_eval(ctx, map1, &l, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_u32(k))));
            for (uint32_t i = 0; i < CN; i++)
                ry[i] = rx[i] * 3u + k;
            if (j % 10 == 4) {
                CHECK_OK(hpl_eval(ctx, step1, &l, HPL_ARGS(hpl_arr(y), hpl_u32(k))));
                for (uint32_t i = 0; i < CN; i++)
                    ry[i] = ry[i] * 5u + k;
            }
        } else {
            CHECK_OK(hpl_eval(ctx, map1, &l, HPL_ARGS(hpl_arr(y), hpl_arr(x), hpl_u32(k))));
            for (uint32_t i = 0; i < CN; i++)
                rx[i] = ry[i] * 3u + k;
        }
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%s: x after 100 evals alternating %d devices", what, ndev);
    EXPECT_ARRAY_U32(ctx, x, rx, CN, msg);
    snprintf(msg, sizeof msg, "%s: y after 100 evals alternating %d devices", what, ndev);
    EXPECT_ARRAY_U32(ctx, y, ry, CN, msg);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_array_destroy(ctx, y));
    free(rx);
    free(ry);
    CHECK_OK(hpl_kernel_destroy(ctx, map1));
    CHECK_OK(hpl_kernel_destroy(ctx, step1));
}

/* An array past what a zero-copy device can import as one buffer
 * (Lavapipe's maxBufferSize is 4 GiB - 1): the eval fails with
 * HPL_ERROR_OUT_OF_DEVICE_MEMORY naming the array and the limit, before
 * any Vulkan call that the limit forbids (the validation layer stays
 * quiet), and the next eval on a small array runs. The 4 GiB of host
 * storage are never touched. */
static void too_large_to_import(void)
{
    hpl_context *ctx = zc_context("cpu", HPL_ZERO_COPY_ON);
    hpl_device_info info;
    if (!CHECK_OK(hpl_device_get_info(ctx, 0, &info)) || !info.zero_copy) {
        th_note("device 0 is not zero-copy: no import to refuse");
        hpl_context_destroy(ctx);
        return;
    }
    hpl_kernel step = th_kernel(ctx, step1_src);
    hpl_array big = {0}, small = th_array(ctx, HPL_UINT32, 8, 0, 0);
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {UINT64_C(1) << 30}, .name = "big"},
                              &big));
    int rc = hpl_eval(ctx, step, &(hpl_launch){.global = {1}}, HPL_ARGS(hpl_arr(big), hpl_u32(1)));
    if (rc == HPL_OK) {
        th_note("%s imported 4 GiB of host memory as one buffer", info.name);
        CHECK_OK(hpl_finish(ctx));
    } else {
        const char *msg = hpl_last_error();
        CHECK(rc == HPL_ERROR_OUT_OF_DEVICE_MEMORY && strstr(msg, "big") && strstr(msg, "maxBufferSize"),
              "a 4 GiB zero-copy array: %s: %s", hpl_error_name(rc), msg);
    }
    CHECK_OK(hpl_eval(ctx, step, NULL, HPL_ARGS(hpl_arr(small), hpl_u32(2))));
    uint32_t got[8];
    if (CHECK_OK(hpl_array_read(ctx, small, got, sizeof got)))
        CHECK(got[0] == 2 && got[7] == 2, "after the refused import: small[0] = %u, small[7] = %u, want 2", got[0],
              got[7]);
    hpl_context_destroy(ctx);
}

/* An array past one allocation (maxMemoryAllocationSize) of a device with
 * its own memory is not imported but staged: the H200's driver, asked to
 * import 4.2 GiB past its 3.998 GiB, never returned (2026-11-25). Only the
 * 8 elements a kernel updates are touched; the rest stays reserved, not
 * committed. */
static void staged_past_one_allocation(void)
{
    hpl_context *ctx = zc_context("cpu", HPL_ZERO_COPY_OFF);
    hpl_device_info info;
    if (!CHECK_OK(hpl_device_get_info(ctx, 0, &info)) || info.zero_copy || !info.host_import ||
        info.max_buffer_size > (UINT64_C(16) << 30)) {
        th_note("device 0 is zero-copy, imports nothing or allocates past 16 GiB: no import to refuse");
        hpl_context_destroy(ctx);
        return;
    }
    hpl_kernel step = th_kernel(ctx, step1_src);
    hpl_array big = {0}, head = {0};
    uint64_t n = info.max_buffer_size / 4 + (UINT64_C(16) << 20); /* 64 MiB past it */
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {n}, .name = "big"}, &big));
    CHECK_OK(hpl_subarray(ctx, big, HPL_RANGES({0, 7}), &head));
    hpl_stats before = th_stats(ctx);
    CHECK_OK(hpl_eval(ctx, step, NULL, HPL_ARGS(hpl_arr(head), hpl_u32(3))));
    uint32_t got[8] = {0};
    if (CHECK_OK(hpl_array_read(ctx, head, got, sizeof got)))
        CHECK(got[0] == 3 && got[7] == 3, "big[0] = %u, big[7] = %u, want 3", got[0], got[7]);
    hpl_stats after = th_stats(ctx);
    CHECK(after.total.staged_bytes >= before.total.staged_bytes + 2 * sizeof got,
          "%.2f GiB on %s (one allocation at most %.2f GiB): %llu bytes staged, want its 32 bytes both ways",
          n * 4.0 / 1073741824, info.name, info.max_buffer_size / 1073741824.0,
          (unsigned long long)(after.total.staged_bytes - before.total.staged_bytes));
    hpl_context_destroy(ctx);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsetenv("HPLVK_ZERO_COPY");
    hpl_stats s;

    /* 1. One CPU device, AUTO: zero copy, nothing moves (a device with
     * separate memory: not zero copy, real transfers). */
    hpl_context *ctx = zc_context("cpu", HPL_ZERO_COPY_AUTO);
    const bool shared = shares_memory(ctx);
    th_note("device 0 %s memory with the host", shared ? "shares" : "does not share");
    expect_zero_copy(ctx, shared, "\"cpu\", AUTO");
    program(ctx, shared, "cpu, AUTO");
    chain(ctx, "cpu, AUTO");
    s = th_stats(ctx);
    th_print_stats("zero_copy", "program and chain on \"cpu\", AUTO", &s);
    expect_moved_if(&s, !shared, "\"cpu\", AUTO");
    hpl_context_destroy(ctx);

    /* 2. The same with zero copy off: same results, real transfers. */
    ctx = zc_context("cpu", HPL_ZERO_COPY_OFF);
    expect_zero_copy(ctx, false, "\"cpu\", OFF");
    program(ctx, false, "cpu, OFF");
    s = th_stats(ctx);
    th_print_stats("zero_copy", "program on \"cpu\", OFF", &s);
    CHECK(s.device[0].to_device_bytes > 0 && s.device[0].to_host_bytes > 0,
          "\"cpu\", OFF: to_device %" PRIu64 " to_host %" PRIu64 ": no real transfers", s.device[0].to_device_bytes,
          s.device[0].to_host_bytes);
    CHECK(s.device[0].local_bytes >= 40 * M * 4, "\"cpu\", OFF: local_bytes %" PRIu64 " for a device assignment of %d",
          s.device[0].local_bytes, 40 * M * 4);
    CHECK(s.device[0].peak_bytes >= 3 * NM * 4, "\"cpu\", OFF: peak_bytes %" PRIu64 " with several arrays on the device",
          s.device[0].peak_bytes);
    hpl_context_destroy(ctx);

    /* 3. Two logical devices, AUTO: separate copies. */
    ctx = zc_context("cpu:2", HPL_ZERO_COPY_AUTO);
    expect_zero_copy(ctx, false, "\"cpu:2\", AUTO");
    program(ctx, false, "cpu:2, AUTO");
    s = th_stats(ctx);
    th_print_stats("zero_copy", "program on \"cpu:2\", AUTO", &s);
    CHECK(s.device[0].to_device_bytes > 0 && s.device[1].to_device_bytes > 0 && s.device[0].to_host_bytes > 0 &&
              s.device[1].to_host_bytes > 0,
          "\"cpu:2\", AUTO: some device moved nothing");
    hpl_context_destroy(ctx);

    /* 4. Two logical devices, ON: both zero copy, ordering through values
     * (ON cannot make a device with separate memory zero copy). */
    ctx = zc_context("cpu:2", HPL_ZERO_COPY_ON);
    expect_zero_copy(ctx, shared, "\"cpu:2\", ON");
    program(ctx, shared, "cpu:2, ON");
    chain(ctx, "cpu:2, ON");
    s = th_stats(ctx);
    th_print_stats("zero_copy", "program and chain on \"cpu:2\", ON", &s);
    expect_moved_if(&s, !shared, "\"cpu:2\", ON");
    hpl_context_destroy(ctx);

    /* 5. HPLVK_ZERO_COPY=0: "cpu" is no longer zero copy. */
    setenv("HPLVK_ZERO_COPY", "0", 1);
    ctx = zc_context("cpu", HPL_ZERO_COPY_AUTO);
    unsetenv("HPLVK_ZERO_COPY");
    expect_zero_copy(ctx, false, "\"cpu\", HPLVK_ZERO_COPY=0");
    chain(ctx, "cpu, HPLVK_ZERO_COPY=0");
    s = th_stats(ctx);
    th_print_stats("zero_copy", "chain on \"cpu\", HPLVK_ZERO_COPY=0", &s);
    CHECK(s.device[0].to_device_bytes > 0 && s.device[0].to_host_bytes > 0,
          "HPLVK_ZERO_COPY=0: to_device %" PRIu64 " to_host %" PRIu64 ": no real transfers",
          s.device[0].to_device_bytes, s.device[0].to_host_bytes);
    hpl_context_destroy(ctx);

    /* 6. HPLVK_ZERO_COPY=1: "cpu:2" replicas become zero copy. */
    setenv("HPLVK_ZERO_COPY", "1", 1);
    ctx = zc_context("cpu:2", HPL_ZERO_COPY_AUTO);
    unsetenv("HPLVK_ZERO_COPY");
    expect_zero_copy(ctx, shared, "\"cpu:2\", HPLVK_ZERO_COPY=1");
    chain(ctx, "cpu:2, HPLVK_ZERO_COPY=1");
    s = th_stats(ctx);
    th_print_stats("zero_copy", "chain on \"cpu:2\", HPLVK_ZERO_COPY=1", &s);
    expect_moved_if(&s, !shared, "\"cpu:2\", HPLVK_ZERO_COPY=1");
    hpl_context_destroy(ctx);

    too_large_to_import();
    staged_past_one_allocation();
    return th_finish(NULL);
}
