/* Device memory limits and eviction (hpl_context_desc.device_memory_limit,
 * HPLVK_DEVICE_MEMORY_LIMIT), zero copy off so that every device really
 * holds its own copies:
 *   - hpl_device_info.memory_limit reports the limit (description, the
 *     environment variable, the description winning over it, the heap);
 *   - a working set three times the limit cycled through kernels on three
 *     devices for several rounds: every value right, evictions counted,
 *     resident and peak bytes never above the limit;
 *   - the only valid copy of an evicted buffer is saved to the host first
 *     (exact bytes), and not moved again when the host reads it;
 *   - an array alone larger than the limit: HPL_ERROR_OUT_OF_DEVICE_MEMORY
 *     naming the array and the limit; the array stays usable on the host and
 *     through row-block subarrays that fit (each gets its own buffer);
 *   - one eval whose arguments together pass the limit: a clear error and
 *     no data lost; arguments exactly at the limit run;
 *   - the same workload under HPLVK_DEVICE_MEMORY_LIMIT=1M. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT (1024ull * 1024) /* 1 MiB */
#define QN 65536               /* uints in a 256 KiB array */
#define QBYTES ((uint64_t)QN * 4)
#define NARR 12 /* 3 MiB of arrays: three times the limit */

static const char *gen_src = /* a[i] = i * 7 + seed */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) a; uint seed; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(a, i) = i * 7u + seed; }\n";

static const char *step_src = /* x = x * 3 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + k; }\n";

static const char *pair_src = /* x += y ^ k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; hpl_in(uint, 1) y; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) += hpl_at(y, i) ^ k; }\n";

static const char *touch_src = /* s[i] = x[i] for the first s.dims elements */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) s; };\n"
    "void main() { uint i = hpl_global_id.x; if (i < s.dims) hpl_at(s, i) = hpl_at(x, i); }\n";

static const char *sum_src = /* c = a + 2b */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) a; hpl_in(uint, 1) b; hpl_out(uint, 1) c; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(c, i) = hpl_at(a, i) + 2u * hpl_at(b, i); }\n";

static const char *step2_src = /* 2-D: x = x * 3 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 2) x; uint k; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(x, id.x, id.y) = hpl_at2(x, id.x, id.y) * 3u + k; }\n";

static const char *map2_src = /* 2-D: b = a * 2 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; uint k; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(b, id.x, id.y) = hpl_at2(a, id.x, id.y) * 2u + k; }\n";

static int limit_checks;

/* resident_bytes and peak_bytes of every device within `limit`, now
 * (without waiting: the limit holds at every moment). */
static hpl_stats check_limit(hpl_context *ctx, uint64_t limit, const char *what)
{
    hpl_stats s;
    memset(&s, 0, sizeof s);
    if (!CHECK_OK(hpl_stats_get(ctx, &s)))
        return s;
    limit_checks++;
    for (int d = 0; d < s.device_count && d < 16; d++) {
        CHECK(s.device[d].resident_bytes <= limit, "%s: device %d resident_bytes %" PRIu64 " > limit %" PRIu64, what,
              d, s.device[d].resident_bytes, limit);
        CHECK(s.device[d].peak_bytes <= limit, "%s: device %d peak_bytes %" PRIu64 " > limit %" PRIu64, what, d,
              s.device[d].peak_bytes, limit);
    }
    return s;
}

static void host_write(hpl_context *ctx, hpl_array a, const uint32_t *src, uint64_t n)
{
    uint32_t *p = th_access(ctx, a, HPL_WRITE);
    if (p)
        memcpy(p, src, n * 4);
}

/* The message names the 1 MiB limit, in bytes or in MiB. */
static bool names_limit(const char *msg)
{
    return th_contains(msg, "1048576") || th_contains(msg, "1 MiB") || th_contains(msg, "1MiB") ||
           th_contains(msg, "1.0 MiB") || th_contains(msg, "1.00 MiB") || th_contains(msg, "1 M");
}

static hpl_context *limited_context(const char *devices, uint64_t limit)
{
    return th_context_desc(&(hpl_context_desc){
        .devices = devices, .device_memory_limit = limit, .zero_copy = HPL_ZERO_COPY_OFF});
}

static void expect_memory_limit(hpl_context *ctx, uint64_t want, const char *what)
{
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        memset(&info, 0, sizeof info);
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info))) {
            CHECK(info.memory_limit == want, "%s: device %d memory_limit %" PRIu64 ", want %" PRIu64, what, d,
                  info.memory_limit, want);
            CHECK(!info.zero_copy, "%s: device %d zero_copy with HPL_ZERO_COPY_OFF", what, d);
        }
    }
}

/* ---- 1. memory_limit as reported ------------------------------------------------ */

static void reported_limits(void)
{
    unsetenv("HPLVK_DEVICE_MEMORY_LIMIT");
    /* No limit anywhere: the device's local heap. */
    hpl_context *ctx = limited_context("cpu:2", 0);
    for (int d = 0; d < 2; d++) {
        hpl_device_info info;
        memset(&info, 0, sizeof info);
        if (!CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            continue;
        bool heap = false;
        for (uint32_t h = 0; h < info.heap_count && h < HPL_MAX_HEAPS; h++)
            heap |= info.heaps[h].device_local && info.heaps[h].size == info.memory_limit;
        CHECK(heap, "no limit: device %d memory_limit %" PRIu64 " is not its local heap (%" PRIu64 ")", d,
              info.memory_limit, info.heap_count ? info.heaps[0].size : 0);
    }
    hpl_context_destroy(ctx);

    ctx = limited_context("cpu:3", LIMIT);
    expect_memory_limit(ctx, LIMIT, "device_memory_limit = 1 MiB");
    hpl_context_destroy(ctx);

    setenv("HPLVK_DEVICE_MEMORY_LIMIT", "1M", 1);
    ctx = limited_context("cpu:2", 0);
    expect_memory_limit(ctx, LIMIT, "HPLVK_DEVICE_MEMORY_LIMIT=1M");
    hpl_context_destroy(ctx);
    setenv("HPLVK_DEVICE_MEMORY_LIMIT", "512K", 1);
    ctx = limited_context("cpu:2", 0);
    expect_memory_limit(ctx, 512 * 1024, "HPLVK_DEVICE_MEMORY_LIMIT=512K");
    hpl_context_destroy(ctx);
    setenv("HPLVK_DEVICE_MEMORY_LIMIT", "3000000", 1);
    ctx = limited_context("cpu:2", 0);
    expect_memory_limit(ctx, 3000000, "HPLVK_DEVICE_MEMORY_LIMIT=3000000");
    hpl_context_destroy(ctx);
    /* The description's non-zero limit wins over the variable. */
    setenv("HPLVK_DEVICE_MEMORY_LIMIT", "1M", 1);
    ctx = limited_context("cpu:2", 2 * LIMIT);
    expect_memory_limit(ctx, 2 * LIMIT, "device_memory_limit = 2 MiB with HPLVK_DEVICE_MEMORY_LIMIT=1M");
    hpl_context_destroy(ctx);
    unsetenv("HPLVK_DEVICE_MEMORY_LIMIT");
}

/* ---- 2. a working set three times the limit --------------------------------------- */

/* Cycles `narr` arrays of QN uints through kernels on every device for
 * `rounds` rounds, checking the limit after every eval and the values at
 * the end against a host model. Returns the stats at the end. */
static hpl_stats working_set(hpl_context *ctx, int narr, int rounds, const char *what)
{
    int ndev = hpl_device_count(ctx);
    hpl_kernel step = th_kernel(ctx, step_src), pair = th_kernel(ctx, pair_src);
    hpl_array *a = calloc((size_t)narr, sizeof *a);
    uint32_t **ref = calloc((size_t)narr, sizeof *ref);
    for (int k = 0; k < narr; k++) {
        char name[32];
        snprintf(name, sizeof name, "ws%d", k);
        CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {QN}, .name = name}, &a[k]));
        ref[k] = malloc(QBYTES);
        for (uint32_t i = 0; i < QN; i++)
            ref[k][i] = (uint32_t)k * 100000u + i;
        host_write(ctx, a[k], ref[k], QN);
    }
    CHECK_OK(hpl_stats_reset(ctx));
    char msg[128];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < narr; k++) {
            int dev = (k + r) % ndev;
            hpl_launch l = th_on(dev);
            if (k % 3 == 0) {
                int y = (k + 5) % narr;
                uint32_t key = (uint32_t)(r * 31 + k);
                CHECK_OK(hpl_eval(ctx, pair, &l, HPL_ARGS(hpl_arr(a[k]), hpl_arr(a[y]), hpl_u32(key))));
                for (uint32_t i = 0; i < QN; i++)
                    ref[k][i] += ref[y][i] ^ key;
            } else {
                uint32_t key = (uint32_t)(r + k);
                CHECK_OK(hpl_eval(ctx, step, &l, HPL_ARGS(hpl_arr(a[k]), hpl_u32(key))));
                for (uint32_t i = 0; i < QN; i++)
                    ref[k][i] = ref[k][i] * 3u + key;
            }
            snprintf(msg, sizeof msg, "%s: round %d array %d on device %d", what, r, k, dev);
            check_limit(ctx, LIMIT, msg);
        }
    }
    CHECK_OK(hpl_finish(ctx));
    hpl_stats s = check_limit(ctx, LIMIT, what);
    for (int k = 0; k < narr; k++) {
        snprintf(msg, sizeof msg, "%s: array %d after %d rounds", what, k, rounds);
        EXPECT_ARRAY_U32(ctx, a[k], ref[k], QN, msg);
    }
    check_limit(ctx, LIMIT, what);
    for (int k = 0; k < narr; k++) {
        CHECK_OK(hpl_array_destroy(ctx, a[k]));
        free(ref[k]);
    }
    free(a);
    free(ref);
    CHECK_OK(hpl_kernel_destroy(ctx, step));
    CHECK_OK(hpl_kernel_destroy(ctx, pair));
    return s;
}

static void three_times_the_limit(hpl_context *ctx)
{
    hpl_stats s = working_set(ctx, NARR, 3, "12 x 256 KiB on cpu:3, 1 MiB limit");
    th_print_stats("eviction", "12 arrays of 256 KiB, 3 rounds over 3 devices, 1 MiB limit", &s);
    for (int d = 0; d < 3; d++) {
        CHECK(s.device[d].evictions > 0, "device %d: no eviction with 3 MiB cycled through a 1 MiB limit", d);
        /* Every buffer evicted here is one whole 256 KiB array. */
        CHECK(s.device[d].evicted_bytes == s.device[d].evictions * QBYTES,
              "device %d: %" PRIu64 " evictions of 256 KiB arrays but evicted_bytes %" PRIu64, d,
              s.device[d].evictions, s.device[d].evicted_bytes);
        CHECK(s.device[d].peak_bytes > LIMIT / 2, "device %d peak_bytes %" PRIu64 ": the limit was never used", d,
              s.device[d].peak_bytes);
    }
    CHECK(s.total.evictions > 0, "total evictions %" PRIu64, s.total.evictions);
    /* Every array is gone: nothing resident anywhere. */
    hpl_stats z = check_limit(ctx, LIMIT, "after destroying the working set");
    for (int d = 0; d < 3; d++)
        CHECK(z.device[d].resident_bytes == 0, "device %d resident_bytes %" PRIu64 " after every array died", d,
              z.device[d].resident_bytes);
}

/* ---- 3. the only valid copy is saved before eviction ------------------------------ */

static void save_before_evict(hpl_context *ctx)
{
    hpl_kernel gen = th_kernel(ctx, gen_src), touch = th_kernel(ctx, touch_src), step = th_kernel(ctx, step_src);
    hpl_launch l0 = th_on(0);
    hpl_array w, s, x[5];
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {QN}, .name = "only_on_device"},
                              &w));
    s = th_array(ctx, HPL_UINT32, 64, 0, 0);
    uint32_t *ref = malloc(QBYTES), *wref = malloc(QBYTES);
    for (int j = 0; j < 5; j++) {
        x[j] = th_array(ctx, HPL_UINT32, QN, 0, 0);
        for (uint32_t i = 0; i < QN; i++)
            ref[i] = (uint32_t)j * 1000u + i * 5u;
        host_write(ctx, x[j], ref, QN);
    }
    for (uint32_t i = 0; i < QN; i++)
        wref[i] = i * 7u + 99u;
    CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(w), hpl_u32(99)))); /* w valid only on device 0 */
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    /* Five other 256 KiB arrays on device 0 (read-only: the host keeps them
     * valid, evicting them saves nothing). With w and s resident, the third
     * needs room: w, the least recently used, goes first, saved; then x0, x1. */
    for (int j = 0; j < 5; j++) {
        CHECK_OK(hpl_eval(ctx, touch, &l0, HPL_ARGS(hpl_arr(x[j]), hpl_arr(s))));
        check_limit(ctx, LIMIT, "five arrays through device 0 after w");
    }
    CHECK_OK(hpl_finish(ctx));
    hpl_stats st = check_limit(ctx, LIMIT, "after evicting w");
    th_print_stats("eviction", "w written on device 0, then 5 x 256 KiB read there (1 MiB limit)", &st);
    const hpl_device_stats *d0 = &st.device[0];
    CHECK(d0->to_device_bytes == 5 * QBYTES, "device 0 fetched %" PRIu64 " bytes for five 256 KiB arrays",
          d0->to_device_bytes);
    CHECK(d0->evictions == 3 && d0->evicted_bytes == 3 * QBYTES,
          "device 0: %" PRIu64 " evictions, %" PRIu64 " bytes; want 3 (w, x0, x1) of 256 KiB", d0->evictions,
          d0->evicted_bytes);
    CHECK(d0->to_host_bytes == QBYTES && d0->to_host_count >= 1,
          "device 0 saved %" PRIu64 " bytes (%" PRIu64 " transfers) to the host; want w's 262144 only",
          d0->to_host_bytes, d0->to_host_count);
    CHECK(st.device[1].to_device_bytes == 0 && st.device[1].to_host_bytes == 0 && st.device[2].to_host_bytes == 0,
          "other devices moved data");
    /* The host reads w: right values, and nothing moves (it was saved). */
    CHECK_OK(hpl_stats_reset(ctx));
    EXPECT_ARRAY_U32(ctx, w, wref, QN, "array saved to the host when evicted");
    st = check_limit(ctx, LIMIT, "host read of the evicted w");
    CHECK(st.total.to_host_bytes == 0, "reading the saved w moved %" PRIu64 " bytes", st.total.to_host_bytes);
    printf("eviction: host read of w after its eviction: to_host_bytes=%" PRIu64 " count=%" PRIu64 "\n",
           st.total.to_host_bytes, st.total.to_host_count);
    /* Device 0 no longer holds w: using it there fetches all of it again. */
    CHECK_OK(hpl_stats_reset(ctx));
    CHECK_OK(hpl_eval(ctx, step, &l0, HPL_ARGS(hpl_arr(w), hpl_u32(1))));
    CHECK_OK(hpl_finish(ctx));
    st = check_limit(ctx, LIMIT, "w back on device 0");
    CHECK(st.device[0].to_device_bytes == QBYTES, "w back on device 0: fetched %" PRIu64 " bytes, want %" PRIu64,
          st.device[0].to_device_bytes, QBYTES);
    for (uint32_t i = 0; i < QN; i++)
        wref[i] = wref[i] * 3u + 1u;
    EXPECT_ARRAY_U32(ctx, w, wref, QN, "evicted w updated on device 0 again");
    uint32_t sref[64];
    for (uint32_t i = 0; i < 64; i++)
        sref[i] = 4000u + i * 5u;
    EXPECT_ARRAY_U32(ctx, s, sref, 64, "s written from the last array");

    CHECK_OK(hpl_array_destroy(ctx, w));
    CHECK_OK(hpl_array_destroy(ctx, s));
    for (int j = 0; j < 5; j++)
        CHECK_OK(hpl_array_destroy(ctx, x[j]));
    free(ref);
    free(wref);
    CHECK_OK(hpl_kernel_destroy(ctx, gen));
    CHECK_OK(hpl_kernel_destroy(ctx, touch));
    CHECK_OK(hpl_kernel_destroy(ctx, step));
}

/* ---- 4. an array alone larger than the limit; its subarrays ------------------------ */

#define BR 512  /* rows */
#define BC 1024 /* columns: 2 MiB of uint */
#define BLOCK 64 /* rows per block: 256 KiB */

static void too_big(hpl_context *ctx)
{
    int ndev = hpl_device_count(ctx);
    hpl_kernel step2 = th_kernel(ctx, step2_src), map2 = th_kernel(ctx, map2_src);
    hpl_array big;
    if (!CHECK_OK(hpl_array_create(
            ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {BR, BC}, .name = "too_big_matrix"}, &big)))
        return;
    uint32_t *ref = malloc((size_t)BR * BC * 4);
    for (uint64_t i = 0; i < (uint64_t)BR * BC; i++)
        ref[i] = (uint32_t)(i * 3u + 1u);
    host_write(ctx, big, ref, (uint64_t)BR * BC);
    CHECK_OK(hpl_stats_reset(ctx));

    /* The whole 2 MiB array on a device with a 1 MiB limit. */
    hpl_launch l0 = th_on(0);
    CHECK_FAILS(hpl_eval(ctx, step2, &l0, HPL_ARGS(hpl_arr(big), hpl_u32(5))), HPL_ERROR_OUT_OF_DEVICE_MEMORY,
                "too_big_matrix");
    CHECK(names_limit(hpl_last_error()), "the message does not name the 1 MiB limit: \"%s\"", hpl_last_error());
    printf("eviction: eval on a 2 MiB array with a 1 MiB limit: %s: %s\n", hpl_error_name(HPL_ERROR_OUT_OF_DEVICE_MEMORY),
           hpl_last_error());
    CHECK_OK(hpl_finish(ctx));
    check_limit(ctx, LIMIT, "after the refused eval");
    /* The host copy is intact and usable. */
    EXPECT_ARRAY_U32(ctx, big, ref, (uint64_t)BR * BC, "too big array after the refused eval");
    uint32_t *p = th_access(ctx, big, HPL_READ_WRITE);
    if (p)
        for (uint64_t i = 0; i < (uint64_t)BR * BC; i += 17) {
            p[i] += 1000u;
            ref[i] += 1000u;
        }
    uint32_t fill = 77;
    hpl_array tail;
    if (CHECK_OK(hpl_subarray(ctx, big, HPL_RANGES({BR - 2, BR - 1}, HPL_ALL), &tail))) {
        CHECK_OK(hpl_array_fill(ctx, tail, &fill, HPL_ON_HOST));
        for (uint64_t i = (uint64_t)(BR - 2) * BC; i < (uint64_t)BR * BC; i++)
            ref[i] = fill;
    }
    EXPECT_ARRAY_U32(ctx, big, ref, (uint64_t)BR * BC, "too big array written on the host");

    /* Row blocks of 256 KiB fit: each gets a buffer of its own (its root
     * never fits), on every device, several rounds, with eviction. */
    hpl_array rows[BR / BLOCK];
    for (int b = 0; b < BR / BLOCK; b++)
        CHECK_OK(hpl_subarray(ctx, big, HPL_RANGES({(uint64_t)b * BLOCK, (uint64_t)b * BLOCK + BLOCK - 1}, HPL_ALL),
                              &rows[b]));
    CHECK_OK(hpl_stats_reset(ctx));
    char msg[128];
    for (int r = 0; r < 3; r++) {
        for (int b = 0; b < BR / BLOCK; b++) {
            int dev = (b + r) % ndev;
            hpl_launch l = th_on(dev);
            uint32_t key = (uint32_t)(r * 10 + b);
            CHECK_OK(hpl_eval(ctx, step2, &l, HPL_ARGS(hpl_arr(rows[b]), hpl_u32(key))));
            for (uint64_t i = (uint64_t)b * BLOCK * BC; i < (uint64_t)(b + 1) * BLOCK * BC; i++)
                ref[i] = ref[i] * 3u + key;
            snprintf(msg, sizeof msg, "row block %d round %d on device %d", b, r, dev);
            check_limit(ctx, LIMIT, msg);
        }
        /* One block into the next (two 256 KiB buffers in one eval). */
        for (int b = BR / BLOCK - 2; b >= 0; b -= 3) {
            int dev = (b + r + 1) % ndev;
            hpl_launch l = th_on(dev);
            uint32_t key = (uint32_t)(r + 100);
            CHECK_OK(hpl_eval(ctx, map2, &l, HPL_ARGS(hpl_arr(rows[b]), hpl_arr(rows[b + 1]), hpl_u32(key))));
            for (uint64_t i = 0; i < (uint64_t)BLOCK * BC; i++)
                ref[(uint64_t)(b + 1) * BLOCK * BC + i] = ref[(uint64_t)b * BLOCK * BC + i] * 2u + key;
            snprintf(msg, sizeof msg, "row block %d -> %d round %d on device %d", b, b + 1, r, dev);
            check_limit(ctx, LIMIT, msg);
        }
    }
    CHECK_OK(hpl_finish(ctx));
    hpl_stats st = check_limit(ctx, LIMIT, "row blocks of the too big array");
    th_print_stats("eviction", "8 row blocks of 256 KiB of a 2 MiB array, 3 rounds, 1 MiB limit", &st);
    CHECK(st.total.evictions > 0, "row blocks of 2 MiB through 1 MiB devices: no eviction");
    EXPECT_ARRAY_U32(ctx, big, ref, (uint64_t)BR * BC, "too big array after kernels on its row blocks");
    /* A block read back alone. */
    uint32_t *blk = malloc((size_t)BLOCK * BC * 4);
    CHECK_OK(hpl_array_read(ctx, rows[3], blk, (size_t)BLOCK * BC * 4));
    CHECK(memcmp(blk, ref + (size_t)3 * BLOCK * BC, (size_t)BLOCK * BC * 4) == 0, "row block 3 read alone differs");
    free(blk);
    CHECK_OK(hpl_array_destroy(ctx, big));
    free(ref);
    CHECK_OK(hpl_kernel_destroy(ctx, step2));
    CHECK_OK(hpl_kernel_destroy(ctx, map2));
}

/* ---- 5. one eval's arguments together above the limit ------------------------------ */

#define HN (2 * QN) /* 512 KiB of uint */

static void arguments_over_the_limit(hpl_context *ctx)
{
    hpl_kernel gen = th_kernel(ctx, gen_src), sum = th_kernel(ctx, sum_src), pair = th_kernel(ctx, pair_src);
    hpl_array a, b, c;
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {HN}, .name = "half_a"}, &a));
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {HN}, .name = "half_b"}, &b));
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {HN}, .name = "half_c"}, &c));
    uint32_t *ra = malloc(HN * 4), *rb = malloc(HN * 4), *rc = malloc(HN * 4);
    for (uint32_t i = 0; i < HN; i++) {
        ra[i] = i ^ 0x5a5au;
        rb[i] = i * 7u + 3u;
        rc[i] = 0xc0ffeeu + i;
    }
    host_write(ctx, a, ra, HN);
    host_write(ctx, c, rc, HN);
    hpl_launch l0 = th_on(0), l1 = th_on(1);
    /* b's only valid copy is on device 0. */
    CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(b), hpl_u32(3))));
    /* 1.5 MiB of arguments on a 1 MiB device. */
    CHECK_FAILS(hpl_eval(ctx, sum, &l0, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_arr(c))),
                HPL_ERROR_OUT_OF_DEVICE_MEMORY, "");
    CHECK(names_limit(hpl_last_error()), "the message does not name the 1 MiB limit: \"%s\"", hpl_last_error());
    printf("eviction: one eval with 3 x 512 KiB arguments, 1 MiB limit: %s: %s\n",
           hpl_error_name(HPL_ERROR_OUT_OF_DEVICE_MEMORY), hpl_last_error());
    CHECK_OK(hpl_finish(ctx));
    check_limit(ctx, LIMIT, "after the refused 1.5 MiB eval");
    /* No data lost: c unchanged (nothing ran), b still the kernel's values. */
    EXPECT_ARRAY_U32(ctx, a, ra, HN, "a after the refused eval");
    EXPECT_ARRAY_U32(ctx, b, rb, HN, "b (written on device 0) after the refused eval");
    EXPECT_ARRAY_U32(ctx, c, rc, HN, "c (not written: the eval did not run) after the refused eval");
    /* Two 512 KiB arguments: exactly the limit, runs (on device 1, then 0). */
    CHECK_OK(hpl_eval(ctx, pair, &l1, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_u32(9))));
    for (uint32_t i = 0; i < HN; i++)
        ra[i] += rb[i] ^ 9u;
    check_limit(ctx, LIMIT, "two 512 KiB arguments on device 1");
    CHECK_OK(hpl_eval(ctx, pair, &l0, HPL_ARGS(hpl_arr(c), hpl_arr(a), hpl_u32(4))));
    for (uint32_t i = 0; i < HN; i++)
        rc[i] += ra[i] ^ 4u;
    check_limit(ctx, LIMIT, "two 512 KiB arguments on device 0");
    CHECK_OK(hpl_finish(ctx));
    EXPECT_ARRAY_U32(ctx, a, ra, HN, "a += b ^ 9 on device 1 (arguments exactly at the limit)");
    EXPECT_ARRAY_U32(ctx, c, rc, HN, "c += a ^ 4 on device 0 (arguments exactly at the limit)");
    EXPECT_ARRAY_U32(ctx, b, rb, HN, "b after both");
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_array_destroy(ctx, c));
    free(ra);
    free(rb);
    free(rc);
    CHECK_OK(hpl_kernel_destroy(ctx, gen));
    CHECK_OK(hpl_kernel_destroy(ctx, sum));
    CHECK_OK(hpl_kernel_destroy(ctx, pair));
}

/* ---- 6. HPLVK_DEVICE_MEMORY_LIMIT=1M ---------------------------------------------- */

static void environment_limit(void)
{
    setenv("HPLVK_DEVICE_MEMORY_LIMIT", "1M", 1);
    hpl_context *ctx = limited_context("cpu:2", 0);
    unsetenv("HPLVK_DEVICE_MEMORY_LIMIT");
    expect_memory_limit(ctx, LIMIT, "HPLVK_DEVICE_MEMORY_LIMIT=1M");
    /* 10 arrays over 2 devices: 5 x 256 KiB each, above 1 MiB. */
    hpl_stats s = working_set(ctx, 10, 2, "10 x 256 KiB on cpu:2, HPLVK_DEVICE_MEMORY_LIMIT=1M");
    th_print_stats("eviction", "10 arrays of 256 KiB, 2 rounds over 2 devices, HPLVK_DEVICE_MEMORY_LIMIT=1M", &s);
    CHECK(s.total.evictions > 0, "HPLVK_DEVICE_MEMORY_LIMIT=1M: no eviction");
    for (int d = 0; d < 2; d++)
        CHECK(s.device[d].evictions > 0, "HPLVK_DEVICE_MEMORY_LIMIT=1M: device %d never evicted", d);
    hpl_context_destroy(ctx);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = th_now();
    reported_limits();
    hpl_context *ctx = limited_context("cpu:3", LIMIT);
    expect_memory_limit(ctx, LIMIT, "cpu:3 with a 1 MiB limit");
    three_times_the_limit(ctx);
    save_before_evict(ctx);
    too_big(ctx);
    arguments_over_the_limit(ctx);
    hpl_stats s = check_limit(ctx, LIMIT, "end");
    for (int d = 0; d < 3; d++)
        CHECK(s.device[d].resident_bytes == 0, "device %d resident_bytes %" PRIu64 " with no array left", d,
              s.device[d].resident_bytes);
    hpl_context_destroy(ctx);
    environment_limit();
    th_note("%d limit checks, %.1f s", limit_checks, th_now() - t0);
    return th_finish(NULL);
}
