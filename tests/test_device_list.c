/* The device list and the other configuration values, end to end through
 * hpl_context_create (the parsers themselves: unit_devspec, unit_config):
 *   1. HPLVK_DEVICES with an empty entry (leading, trailing, doubled comma,
 *      only spaces) is refused naming the list; HPLVK_DEVICE_MEMORY_LIMIT
 *      negative, empty, with junk or past 2^64-1 is refused naming the
 *      variable and the value, and a valid one is every device's limit;
 *      HPLVK_ZERO_COPY other than 0/1, HPLVK_TRANSFER_LANE other than
 *      auto/off/shared are refused. A refused context leaves
 *      *out untouched.
 *   2. Per-entry zero copy, SELECTOR[:COUNT][+zc]: hpl_device_info.zero_copy
 *      and .replica of every device for lists under AUTO, ON, OFF and
 *      HPLVK_ZERO_COPY=0/1, the refusals naming the entry (+zc with zero
 *      copy off; +zc on a device that does not share memory with the host,
 *      when the machine has one).
 *   3. "cpu+zc,cpu:2": a kernel on each device and a host read give the
 *      right values, the zero-copy device moving nothing and the others
 *      moving their data; again after a host write. (Data handed from one
 *      of these devices to another: test_zero_copy_mix.)
 *   4. HPLVK_LOGICAL_DEVICES: other than vkdevices/queues refused; under
 *      queues, three logical devices of one physical device share a
 *      VkDevice exactly when the compute family hplvk picks (compute-only
 *      preferred) has three queues (not on Lavapipe's one queue; on an H200
 *      they do), and a chain of kernels from one to the next, with no host
 *      wait between, then one eval split over all three, give the host's
 *      values. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000

/* hpl_context_create on exactly this list (no harness substitution). */
static int create(const char *devices, int zero_copy, uint64_t limit, hpl_context **out)
{
    hpl_context_desc d = {.devices = devices, .zero_copy = zero_copy, .device_memory_limit = limit};
    th_prepare_desc(&d);
    return hpl_context_create(&d, out);
}

static void refused(const char *devices, int zero_copy, int code, const char *w1, const char *w2, const char *what)
{
    hpl_context *ctx = (hpl_context *)&ctx;
    int rc = create(devices, zero_copy, 0, &ctx);
    char expr[200];
    snprintf(expr, sizeof expr, "hpl_context_create(%s)", what);
    if (th_check_fails(rc, code, w1, expr, __FILE__, __LINE__)) {
        th_check_msg(w2, __FILE__, __LINE__);
        th_check_msg("hpl_context_create", __FILE__, __LINE__);
    }
    CHECK(ctx == (hpl_context *)&ctx, "%s: a refused hpl_context_create wrote *out", what);
    if (rc == HPL_OK && ctx != (hpl_context *)&ctx)
        hpl_context_destroy(ctx);
}

/* Each of `values` in the variable `var` makes hpl_context_create fail,
 * naming the variable and the value, with `says` in the message. */
static void refused_values(const char *var, const char *const *values, size_t count, const char *says)
{
    for (size_t i = 0; i < count; i++) {
        setenv(var, values[i], 1);
        char named[64];
        snprintf(named, sizeof named, "%s='%s'", var, values[i]);
        refused("cpu", HPL_ZERO_COPY_AUTO, HPL_ERROR_INVALID_ARGUMENT, named, says, named);
    }
    unsetenv(var);
}

/* ---- 1. the environment --------------------------------------------------- */

static void environment(void)
{
    static const char *const empty[] = {"cpu,,cpu", ",cpu", "cpu,", "cpu, ,cpu", "cpu,\t,cpu", "   ", ",", "cpu:2,,"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        setenv("HPLVK_DEVICES", empty[i], 1);
        char list[64], what[80];
        snprintf(list, sizeof list, "device list '%s'", empty[i]);
        snprintf(what, sizeof what, "HPLVK_DEVICES='%s'", empty[i]);
        refused(NULL, HPL_ZERO_COPY_AUTO, HPL_ERROR_INVALID_ARGUMENT, list, "is empty", what);
    }
    /* The same lists through desc.devices. */
    refused("cpu,,cpu", HPL_ZERO_COPY_AUTO, HPL_ERROR_INVALID_ARGUMENT, "device list 'cpu,,cpu': entry 2 is empty",
            "comma", "desc.devices 'cpu,,cpu'");
    /* Spaces around entries are fine. */
    setenv("HPLVK_DEVICES", " cpu ,\tcpu ", 1);
    hpl_context *ctx = NULL;
    if (CHECK_OK(create(NULL, HPL_ZERO_COPY_AUTO, 0, &ctx))) {
        CHECK(hpl_device_count(ctx) == 2, "' cpu ,\\tcpu ' opened %d devices", hpl_device_count(ctx));
        hpl_context_destroy(ctx);
    }
    unsetenv("HPLVK_DEVICES");

    static const char *const sizes[] = {"-1", "", "64Mx", "18446744073709551616", "1.5G", "-0", " 64M", "16777216T"};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        setenv("HPLVK_DEVICE_MEMORY_LIMIT", sizes[i], 1);
        char named[80], what[80];
        if (sizes[i][0])
            snprintf(named, sizeof named, "HPLVK_DEVICE_MEMORY_LIMIT='%s'", sizes[i]);
        else
            snprintf(named, sizeof named, "HPLVK_DEVICE_MEMORY_LIMIT is empty");
        snprintf(what, sizeof what, "HPLVK_DEVICE_MEMORY_LIMIT='%s'", sizes[i]);
        refused("cpu", HPL_ZERO_COPY_AUTO, HPL_ERROR_INVALID_ARGUMENT, named, "bytes", what);
    }
    setenv("HPLVK_DEVICE_MEMORY_LIMIT", "-1", 1);
    CHECK_FAILS(create("cpu", HPL_ZERO_COPY_AUTO, 0, &ctx), HPL_ERROR_INVALID_ARGUMENT, "is negative");
    /* A valid one is every device's limit; desc.device_memory_limit wins
     * (the variable is then not read at all). */
    static const struct {
        const char *env;
        uint64_t desc, want;
    } limits[] = {{"3M", 0, 3u << 20}, {"12345", 0, 12345}, {"1GiB", 0, 1u << 30}, {"-1", 2u << 20, 2u << 20}};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        setenv("HPLVK_DEVICE_MEMORY_LIMIT", limits[i].env, 1);
        if (!CHECK_OK(create("cpu+zc,cpu:2", HPL_ZERO_COPY_AUTO, limits[i].desc, &ctx)))
            continue;
        for (int d = 0; d < hpl_device_count(ctx); d++) {
            hpl_device_info info;
            if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
                CHECK(info.memory_limit == limits[i].want,
                      "HPLVK_DEVICE_MEMORY_LIMIT=%s, desc %" PRIu64 ": device %d limit %" PRIu64 ", want %" PRIu64,
                      limits[i].env, limits[i].desc, d, info.memory_limit, limits[i].want);
        }
        hpl_context_destroy(ctx);
    }
    unsetenv("HPLVK_DEVICE_MEMORY_LIMIT");

    static const char *const zc[] = {"yes", "2", "on", " 1"};
    refused_values("HPLVK_ZERO_COPY", zc, sizeof zc / sizeof zc[0], "neither 0");

    static const char *const lanes[] = {"on", "", "Shared", "auto ", "1"};
    refused_values("HPLVK_TRANSFER_LANE", lanes, sizeof lanes / sizeof lanes[0], "not auto, off or shared");
}

/* ---- 2. per-entry zero copy ----------------------------------------------- */

static void expect_devices(const char *devices, int zero_copy, const char *zc, const char *what)
{
    hpl_context *ctx = NULL;
    if (!CHECK_OK(create(devices, zero_copy, 0, &ctx)))
        return;
    int n = hpl_device_count(ctx);
    CHECK(n == (int)strlen(zc), "%s: '%s' opened %d devices, want %d", what, devices ? devices : "(env)", n,
          (int)strlen(zc));
    for (int d = 0; d < n && d < (int)strlen(zc); d++) {
        hpl_device_info info;
        if (!CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            continue;
        CHECK(info.zero_copy == (zc[d] == '1'), "%s: device %d zero_copy %d, want %c", what, d, info.zero_copy,
              zc[d]);
        CHECK(info.replica == (uint32_t)d, "%s: device %d is replica %u", what, d, info.replica);
    }
    hpl_context_destroy(ctx);
}

static int cpu_physical_index(void)
{
    hpl_context *ctx = NULL;
    hpl_device_info info = {0};
    if (CHECK_OK(create("cpu0", HPL_ZERO_COPY_AUTO, 0, &ctx)))
        CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    hpl_context_destroy(ctx);
    return (int)info.physical_index;
}

static void per_entry(void)
{
    const int AUTO = HPL_ZERO_COPY_AUTO, ON = HPL_ZERO_COPY_ON, OFF = HPL_ZERO_COPY_OFF;
    expect_devices("cpu", AUTO, "1", "cpu, AUTO");
    expect_devices("cpu:2", AUTO, "00", "cpu:2, AUTO");
    expect_devices("cpu+zc", AUTO, "1", "cpu+zc, AUTO");
    expect_devices("cpu+zc,cpu:2", AUTO, "100", "cpu+zc,cpu:2, AUTO");
    expect_devices("cpu:2+zc", AUTO, "11", "cpu:2+zc, AUTO");
    expect_devices("cpu,cpu+zc", AUTO, "01", "cpu,cpu+zc, AUTO");
    expect_devices("cpu:2, cpu+zc ,cpu", AUTO, "0010", "cpu:2,cpu+zc,cpu, AUTO");
    /* The CPU by name and by its physical index (0 where Lavapipe is the only
     * driver; after the GPUs on a GPU machine). */
    char by_index[64];
    snprintf(by_index, sizeof by_index, "cpu0+zc,%d:2", cpu_physical_index());
    expect_devices(by_index, AUTO, "100", by_index);
    expect_devices("cpu+zc,cpu:2", ON, "111", "cpu+zc,cpu:2, ON");
    expect_devices("cpu:2", ON, "11", "cpu:2, ON");
    expect_devices("cpu", OFF, "0", "cpu, OFF");
    refused("cpu+zc,cpu:2", OFF, HPL_ERROR_INVALID_ARGUMENT, "device list entry 'cpu+zc' asks for a zero-copy device",
            "hpl_context_desc.zero_copy = HPL_ZERO_COPY_OFF", "cpu+zc,cpu:2 with HPL_ZERO_COPY_OFF");
    refused("cpu,cpu:2+zc", OFF, HPL_ERROR_INVALID_ARGUMENT, "entry 'cpu:2+zc'", "HPL_ZERO_COPY_OFF",
            "cpu,cpu:2+zc with HPL_ZERO_COPY_OFF");
    refused("cpu+zx", AUTO, HPL_ERROR_INVALID_ARGUMENT, "unknown modifier '+zx'", "'cpu+zx'", "cpu+zx");

    setenv("HPLVK_ZERO_COPY", "0", 1);
    refused("cpu+zc,cpu:2", AUTO, HPL_ERROR_INVALID_ARGUMENT, "entry 'cpu+zc'", "HPLVK_ZERO_COPY=0",
            "cpu+zc,cpu:2 with HPLVK_ZERO_COPY=0");
    expect_devices("cpu", AUTO, "0", "cpu, HPLVK_ZERO_COPY=0");
    expect_devices("cpu+zc", ON, "1", "cpu+zc, ON over HPLVK_ZERO_COPY=0");
    setenv("HPLVK_ZERO_COPY", "1", 1);
    expect_devices("cpu+zc,cpu:2", AUTO, "111", "cpu+zc,cpu:2, HPLVK_ZERO_COPY=1");
    unsetenv("HPLVK_ZERO_COPY");
    setenv("HPLVK_DEVICES", "cpu+zc,cpu:2", 1);
    expect_devices(NULL, AUTO, "100", "HPLVK_DEVICES=cpu+zc,cpu:2");
    unsetenv("HPLVK_DEVICES");

    /* +zc on a device that does not share memory with the host: every such
     * physical device of this machine (unit_config covers the rule). */
    hpl_context *ctx = NULL;
    if (!CHECK_OK(create("cpu", AUTO, 0, &ctx)))
        return;
    int tried = 0;
    for (int i = 0; i < hpl_physical_device_count(ctx); i++) {
        hpl_device_info info;
        if (!CHECK_OK(hpl_physical_device_get_info(ctx, i, &info)) ||
            (info.type & (HPL_DEVICE_CPU | HPL_DEVICE_INTEGRATED_GPU)))
            continue;
        char list[32], entry[48];
        snprintf(list, sizeof list, "%d+zc", i);
        snprintf(entry, sizeof entry, "device list entry '%d+zc'", i);
        refused(list, AUTO, HPL_ERROR_INVALID_ARGUMENT, entry, "does not share memory with the host", list);
        tried++;
    }
    if (!tried)
        th_note("no physical device here lacks memory shared with the host: +zc on one is covered by unit_config");
    hpl_context_destroy(ctx);
}

/* ---- 3. kernels on "cpu+zc,cpu:2" ------------------------------------------ */

static const char *affine_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) x; hpl_out(float, 1) y; float a; float b; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = a * hpl_at(x, i) + b; }\n";

static int count_wrong(const float *p, float a, float b, int *first)
{
    int bad = 0;
    *first = -1;
    for (int i = 0; i < N; i++)
        if (p[i] != a * (float)i + b && bad++ == 0)
            *first = i;
    return bad;
}

static void kernels_on_mix(void)
{
    hpl_context *ctx = NULL;
    if (!CHECK_OK(create("cpu+zc,cpu:2", HPL_ZERO_COPY_AUTO, 0, &ctx)))
        return;
    hpl_kernel affine = th_kernel(ctx, affine_src);
    hpl_array x = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    float *px = th_access(ctx, x, HPL_WRITE);
    if (px)
        for (int i = 0; i < N; i++)
            px[i] = (float)i;
    CHECK_OK(hpl_stats_reset(ctx));
    /* Each device alone: y_d = (d + 2) x + 10 d, read on the host. */
    for (int d = 0; d < 3; d++) {
        hpl_array y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        hpl_launch l = {.device = d};
        CHECK_OK(hpl_eval(ctx, affine, &l,
                          HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32((float)(d + 2)), hpl_f32((float)(10 * d)))));
        const float *py = th_access(ctx, y, HPL_READ);
        int first = -1;
        int bad = py ? count_wrong(py, (float)(d + 2), (float)(10 * d), &first) : -1;
        CHECK(bad == 0, "device %d: %d elements wrong, first y[%d] = %g want %g", d, bad, first,
              bad > 0 ? py[first] : 0.0f, (float)(d + 2) * (float)first + (float)(10 * d));
        CHECK_OK(hpl_array_destroy(ctx, y));
    }
    hpl_stats s;
    if (CHECK_OK(hpl_stats_get(ctx, &s))) {
        CHECK(s.device[0].to_device_bytes == 0 && s.device[0].to_host_bytes == 0,
              "the zero-copy device 0 moved %" PRIu64 " bytes in and %" PRIu64 " out", s.device[0].to_device_bytes,
              s.device[0].to_host_bytes);
        for (int d = 1; d < 3; d++)
            CHECK(s.device[d].to_device_bytes >= N * 4 && s.device[d].to_host_bytes >= N * 4,
                  "device %d (separate memory) moved %" PRIu64 " bytes in and %" PRIu64 " out, want >= %d each", d,
                  s.device[d].to_device_bytes, s.device[d].to_host_bytes, N * 4);
    }
    /* The host writes, each device reads what the host wrote. */
    int first = -1, bad;
    float *w = th_access(ctx, x, HPL_WRITE);
    if (w)
        for (int i = 0; i < N; i++)
            w[i] = (float)i;
    for (int d = 2; d >= 0; d--) {
        hpl_array y = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        hpl_launch l = {.device = d};
        CHECK_OK(hpl_eval(ctx, affine, &l, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_f32(-1.0f), hpl_f32((float)d))));
        const float *py = th_access(ctx, y, HPL_READ);
        bad = py ? count_wrong(py, -1.0f, (float)d, &first) : -1;
        CHECK(bad == 0, "after a host write, device %d: %d wrong, first y[%d] = %g want %g", d, bad, first,
              bad > 0 ? py[first] : 0.0f, (float)d - (float)first);
        CHECK_OK(hpl_array_destroy(ctx, y));
    }
    hpl_context_destroy(ctx);
}

/* ---- 4. logical devices on queues of one VkDevice -------------------------- */

/* The queue count of the compute family device.c picks: the last one
 * without graphics, else the first with compute. */
static uint32_t compute_queues(const hpl_device_info *info)
{
    int pick = -1;
    for (uint32_t q = 0; q < info->queue_family_count; q++) {
        uint32_t f = info->queue_families[q].flags;
        if ((f & HPL_QUEUE_COMPUTE) && (pick < 0 || !(f & HPL_QUEUE_GRAPHICS)))
            pick = (int)q;
    }
    return pick < 0 ? 0 : info->queue_families[pick].count;
}

static void chain_and_split(hpl_context *ctx)
{
    hpl_kernel affine = th_kernel(ctx, affine_src);
    hpl_array y[4];
    for (int k = 0; k < 4; k++)
        y[k] = th_array(ctx, HPL_FLOAT32, N, 0, 0);
    float *p = th_access(ctx, y[0], HPL_WRITE);
    if (p)
        for (int i = 0; i < N; i++)
            p[i] = (float)i;
    /* y1 = 2 y0 + 1 on device 0, y2 = 2 y1 + 1 on device 1, y3 = 2 y2 + 1 on
     * device 2: y3 = 8 i + 7. */
    for (int d = 0; d < 3; d++)
        CHECK_OK(hpl_eval(ctx, affine, &(hpl_launch){.device = d},
                          HPL_ARGS(hpl_arr(y[d]), hpl_arr(y[d + 1]), hpl_f32(2.0f), hpl_f32(1.0f))));
    /* Split over all three: y1 = -y3 + 3 = -8 i - 4. */
    CHECK_OK(hpl_eval(ctx, affine, &(hpl_launch){.devices = {0, 1, 2}, .device_count = 3},
                      HPL_ARGS(hpl_part1(y[3], 0), hpl_part1(y[1], 0), hpl_f32(-1.0f), hpl_f32(3.0f))));
    int first = -1;
    const float *q = th_access(ctx, y[3], HPL_READ);
    int bad = q ? count_wrong(q, 8.0f, 7.0f, &first) : -1;
    CHECK(bad == 0, "queues: the chain left %d elements wrong, first y[%d] = %g want %g", bad, first,
          bad > 0 ? q[first] : 0.0f, 8.0f * (float)first + 7.0f);
    q = th_access(ctx, y[1], HPL_READ);
    bad = q ? count_wrong(q, -8.0f, -4.0f, &first) : -1;
    CHECK(bad == 0, "queues: the split eval left %d elements wrong, first y[%d] = %g want %g", bad, first,
          bad > 0 ? q[first] : 0.0f, -8.0f * (float)first - 4.0f);
    for (int k = 0; k < 4; k++)
        CHECK_OK(hpl_array_destroy(ctx, y[k]));
}

static void logical_on_queues(void)
{
    static const char *const bad[] = {"Queues", "queues ", "1", "vkdevice"};
    refused_values("HPLVK_LOGICAL_DEVICES", bad, sizeof bad / sizeof bad[0], "not vkdevices or queues");
    const char *three = th_devices("cpu0:3");
    static const char *const modes[] = {"vkdevices", "queues"};
    for (int m = 0; m < 2; m++) {
        setenv("HPLVK_LOGICAL_DEVICES", modes[m], 1);
        hpl_context *ctx = NULL;
        if (!CHECK_OK(create(three, HPL_ZERO_COPY_OFF, 0, &ctx)))
            continue;
        for (int d = 0; d < hpl_device_count(ctx); d++) {
            hpl_device_info info;
            if (!CHECK_OK(hpl_device_get_info(ctx, d, &info)))
                continue;
            bool want = m == 1 && compute_queues(&info) >= 3;
            CHECK(info.shares_vkdevice == want,
                  "HPLVK_LOGICAL_DEVICES=%s, '%s': device %d (%s, %u compute queues) shares_vkdevice %d, want %d",
                  modes[m], three, d, info.name, compute_queues(&info), info.shares_vkdevice, want);
            CHECK(info.replica == (uint32_t)d, "%s: device %d is replica %u", modes[m], d, info.replica);
        }
        chain_and_split(ctx);
        hpl_context_destroy(ctx);
    }
    unsetenv("HPLVK_LOGICAL_DEVICES");
}

int main(void)
{
    unsetenv("HPLVK_DEVICES");
    unsetenv("HPLVK_ZERO_COPY");
    unsetenv("HPLVK_DEVICE_MEMORY_LIMIT");
    unsetenv("HPLVK_LOGICAL_DEVICES");
    environment();
    per_entry();
    kernels_on_mix();
    logical_on_queues();
    return th_finish(NULL);
}
