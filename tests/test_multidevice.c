/* Several logical devices on one Lavapipe ("cpu:2", "cpu:4"; with
 * TH_DEVICE_KIND=gpu0 one GPU), each with its own memory: data written on one
 * device and read on another moves through the host; chains alternating
 * devices with no host access exercise the progress thread that links one
 * device's timeline to another's. Device types are checked against the
 * selector that opened them (th_device_types), never assumed to be CPUs. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 5003

static const char *gen_src = /* a[i] = i * 7 + seed */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) a; uint seed; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(a, i) = i * 7u + seed; }\n";

static const char *map_src = /* b[i] = a[i] * 3 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = hpl_at(a, i) * 3u + k; }\n";

static const char *step_src = /* x[i] = x[i] * 3 + k, in place */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + k; }\n";

static const char *sum4_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) a; hpl_in(uint, 1) b; hpl_in(uint, 1) c; hpl_in(uint, 1) d; hpl_out(uint, 1) s; };\n"
    "void main() { uint i = hpl_global_id.x;\n"
    "    hpl_at(s, i) = hpl_at(a, i) + 3u * hpl_at(b, i) + 5u * hpl_at(c, i) + 7u * hpl_at(d, i); }\n";

static void expect_u32(hpl_context *ctx, hpl_array a, const uint32_t *ref, const char *what)
{
    const uint32_t *p = th_access(ctx, a, HPL_READ);
    if (!p)
        return;
    int bad = 0, first = -1;
    for (int i = 0; i < N; i++)
        if (p[i] != ref[i] && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s: %d wrong, first [%d]=%u want %u", what, bad, first, first >= 0 ? p[first] : 0,
          first >= 0 ? ref[first] : 0);
}

static void two_devices(void)
{
    hpl_context *ctx = th_context("cpu:2");
    CHECK(hpl_device_count(ctx) == 2, "cpu:2 opened %d devices", hpl_device_count(ctx));
    hpl_device_info info[2];
    for (int d = 0; d < 2; d++) {
        memset(&info[d], 0, sizeof info[d]);
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info[d]))) {
            CHECK((info[d].type & th_device_types()) && !(info[d].type & (info[d].type - 1)),
                  "device %d type %d, want one of %#x", d, info[d].type, th_device_types());
            CHECK(info[d].type == info[0].type, "replica %d has type %d, replica 0 %d", d, info[d].type, info[0].type);
            CHECK(info[d].replica == (uint32_t)d, "device %d replica %u, want %d", d, info[d].replica, d);
            CHECK(info[d].name[0] != 0, "device %d has no name", d);
            CHECK(info[d].heap_count >= 1 && info[d].heaps[0].size > 0, "device %d: no memory heaps", d);
            CHECK(info[d].queue_family_count >= 1 && (info[d].queue_families[0].flags & HPL_QUEUE_COMPUTE),
                  "device %d: no compute queue family", d);
            CHECK(info[d].max_buffer_size > 0 && info[d].max_workgroup_invocations >= 64,
                  "device %d: max_buffer_size %llu, max_workgroup_invocations %u", d,
                  (unsigned long long)info[d].max_buffer_size, info[d].max_workgroup_invocations);
        }
    }
    CHECK(info[0].physical_index == info[1].physical_index, "the two replicas have physical indices %u and %u",
          info[0].physical_index, info[1].physical_index);
    CHECK(strcmp(info[0].name, info[1].name) == 0, "replicas named \"%s\" and \"%s\"", info[0].name, info[1].name);
    /* Both replicas are of one type (HPL_DEVICE_CPU on Lavapipe), and of no other. */
    uint32_t type = info[0].type, others = HPL_DEVICE_ANY & ~type;
    CHECK(hpl_device_find(ctx, type, 0) == 0, "find(%#x, 0) = %d", type, hpl_device_find(ctx, type, 0));
    CHECK(hpl_device_find(ctx, type, 1) == 1, "find(%#x, 1) = %d", type, hpl_device_find(ctx, type, 1));
    CHECK(hpl_device_find(ctx, HPL_DEVICE_ANY, 1) == 1, "find(ANY, 1) = %d", hpl_device_find(ctx, HPL_DEVICE_ANY, 1));
    CHECK_FAILS(hpl_device_find(ctx, type, 2), HPL_ERROR_UNKNOWN_DEVICE, "");
    CHECK_FAILS(hpl_device_find(ctx, others, 0), HPL_ERROR_UNKNOWN_DEVICE, "");
    int np = hpl_physical_device_count(ctx);
    CHECK(np >= 1, "hpl_physical_device_count = %d", np);
    if (np >= 1 && (int)info[0].physical_index < np) {
        hpl_device_info pinfo;
        if (CHECK_OK(hpl_physical_device_get_info(ctx, (int)info[0].physical_index, &pinfo)))
            CHECK(strcmp(pinfo.name, info[0].name) == 0 && pinfo.type == type,
                  "physical device %u is \"%s\" type %d", info[0].physical_index, pinfo.name, pinfo.type);
    }

    hpl_kernel gen = th_kernel(ctx, gen_src), map = th_kernel(ctx, map_src), step = th_kernel(ctx, step_src);
    uint32_t *ref = malloc(sizeof(uint32_t) * N), *ref2 = malloc(sizeof(uint32_t) * N);
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0);
    hpl_array b = th_array(ctx, HPL_UINT32, N, 0, 0);
    hpl_array c = th_array(ctx, HPL_UINT32, N, 0, 0);

    /* Written on device 0, read on device 1, result read by the host. */
    hpl_launch l0 = th_on(0), l1 = th_on(1);
    CHECK_OK(hpl_eval(ctx, gen, &l0, HPL_ARGS(hpl_arr(a), hpl_u32(11))));
    CHECK_OK(hpl_eval(ctx, map, &l1, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_u32(5))));
    for (int i = 0; i < N; i++) {
        ref[i] = (uint32_t)i * 7u + 11u;
        ref2[i] = ref[i] * 3u + 5u;
    }
    expect_u32(ctx, b, ref2, "device 0 -> device 1 -> host");
    expect_u32(ctx, a, ref, "array written on device 0, read by the host after device 1 read it");

    /* The other way: device 1 updates a (both devices held copies), device 0
     * must see the update, not its stale copy. */
    CHECK_OK(hpl_eval(ctx, step, &l1, HPL_ARGS(hpl_arr(a), hpl_u32(1))));
    CHECK_OK(hpl_eval(ctx, map, &l0, HPL_ARGS(hpl_arr(a), hpl_arr(c), hpl_u32(2))));
    for (int i = 0; i < N; i++) {
        ref[i] = ref[i] * 3u + 1u;
        ref2[i] = ref[i] * 3u + 2u;
    }
    expect_u32(ctx, c, ref2, "device 1 update read on device 0");

    /* Host writes: both device copies of a become stale. */
    uint32_t *pa = th_access(ctx, a, HPL_WRITE);
    if (pa)
        for (int i = 0; i < N; i++)
            ref[i] = pa[i] = (uint32_t)(N - i) * 13u;
    CHECK_OK(hpl_eval(ctx, map, &l1, HPL_ARGS(hpl_arr(a), hpl_arr(b), hpl_u32(0))));
    CHECK_OK(hpl_eval(ctx, map, &l0, HPL_ARGS(hpl_arr(a), hpl_arr(c), hpl_u32(1))));
    for (int i = 0; i < N; i++)
        ref2[i] = ref[i] * 3u + 0u;
    expect_u32(ctx, b, ref2, "host write then read on device 1");
    for (int i = 0; i < N; i++)
        ref2[i] = ref[i] * 3u + 1u;
    expect_u32(ctx, c, ref2, "host write then read on device 0");

    /* Ping-pong: 20 alternating in-place steps with no host access. */
    for (int i = 0; i < N; i++)
        ref[i] = (uint32_t)i;
    CHECK_OK(hpl_array_write(ctx, a, ref, sizeof(uint32_t) * N));
    for (uint32_t s = 0; s < 20; s++) {
        hpl_launch l = th_on((int)(s % 2));
        CHECK_OK(hpl_eval(ctx, step, &l, HPL_ARGS(hpl_arr(a), hpl_u32(s))));
        for (int i = 0; i < N; i++)
            ref[i] = ref[i] * 3u + s;
    }
    expect_u32(ctx, a, ref, "20 in-place steps alternating devices 0 and 1");

    /* Ping-pong between two arrays and two devices: b = map(a) on 0,
     * a = map(b) on 1, ... 20 evals. */
    for (int i = 0; i < N; i++)
        ref[i] = (uint32_t)i * 5u;
    CHECK_OK(hpl_array_write(ctx, a, ref, sizeof(uint32_t) * N));
    for (uint32_t s = 0; s < 20; s++) {
        hpl_launch l = th_on((int)(s % 2));
        hpl_array from = s % 2 ? b : a, to = s % 2 ? a : b;
        CHECK_OK(hpl_eval(ctx, map, &l, HPL_ARGS(hpl_arr(from), hpl_arr(to), hpl_u32(s + 1))));
        for (int i = 0; i < N; i++)
            ref[i] = ref[i] * 3u + s + 1u;
    }
    expect_u32(ctx, a, ref, "20 evals ping-ponging two arrays between devices");

    /* Fill on device 1, read on device 0. */
    uint32_t fv = 0xdeadbeefu;
    CHECK_OK(hpl_array_fill(ctx, b, &fv, 1));
    CHECK_OK(hpl_eval(ctx, map, &l0, HPL_ARGS(hpl_arr(b), hpl_arr(c), hpl_u32(9))));
    for (int i = 0; i < N; i++)
        ref[i] = fv * 3u + 9u;
    expect_u32(ctx, c, ref, "fill on device 1, eval on device 0");
    for (int i = 0; i < N; i++)
        ref[i] = fv;
    expect_u32(ctx, b, ref, "fill on device 1, host read");

    /* User storage (aligned and not) used by both devices: read on both,
     * updated on device 1, read on the host through the user's pointer,
     * read again on device 0. */
    for (int variant = 0; variant < 2; variant++) {
        uint32_t *mem = variant == 0 ? aligned_alloc(4096, ((sizeof(uint32_t) * N + 4095) / 4096) * 4096)
                                     : malloc(sizeof(uint32_t) * (N + 1));
        uint32_t *host = variant == 0 ? mem : mem + 1;
        const char *kind = variant == 0 ? "aligned user storage" : "unaligned user storage";
        for (int i = 0; i < N; i++)
            host[i] = ref[i] = (uint32_t)i * 31u + 4u;
        hpl_array u;
        if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {N}, .host = host}, &u))) {
            free(mem);
            continue;
        }
        char what[96];
        CHECK_OK(hpl_eval(ctx, map, &l0, HPL_ARGS(hpl_arr(u), hpl_arr(b), hpl_u32(1))));
        CHECK_OK(hpl_eval(ctx, map, &l1, HPL_ARGS(hpl_arr(u), hpl_arr(c), hpl_u32(2))));
        for (int i = 0; i < N; i++)
            ref2[i] = ref[i] * 3u + 1u;
        snprintf(what, sizeof what, "%s read on device 0", kind);
        expect_u32(ctx, b, ref2, what);
        for (int i = 0; i < N; i++)
            ref2[i] = ref[i] * 3u + 2u;
        snprintf(what, sizeof what, "%s read on device 1", kind);
        expect_u32(ctx, c, ref2, what);
        CHECK_OK(hpl_eval(ctx, step, &l1, HPL_ARGS(hpl_arr(u), hpl_u32(5))));
        for (int i = 0; i < N; i++)
            ref[i] = ref[i] * 3u + 5u;
        const uint32_t *pu = th_access(ctx, u, HPL_READ);
        if (pu) {
            CHECK(pu == host, "%s: READ access returned another pointer than the user's", kind);
            int bad = 0;
            for (int i = 0; i < N; i++)
                bad += host[i] != ref[i];
            CHECK(bad == 0, "%s written on device 1: %d wrong in the user's memory", kind, bad);
        }
        CHECK_OK(hpl_eval(ctx, map, &l0, HPL_ARGS(hpl_arr(u), hpl_arr(b), hpl_u32(3))));
        for (int i = 0; i < N; i++)
            ref2[i] = ref[i] * 3u + 3u;
        snprintf(what, sizeof what, "%s written on device 1, read on device 0", kind);
        expect_u32(ctx, b, ref2, what);
        CHECK_OK(hpl_array_destroy(ctx, u));
        free(mem);
    }

    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_array_destroy(ctx, a));
    CHECK_OK(hpl_array_destroy(ctx, b));
    CHECK_OK(hpl_array_destroy(ctx, c));
    CHECK_OK(hpl_kernel_destroy(ctx, gen));
    CHECK_OK(hpl_kernel_destroy(ctx, map));
    CHECK_OK(hpl_kernel_destroy(ctx, step));
    free(ref);
    free(ref2);
    hpl_context_destroy(ctx);
}

/* Device selection: HPLVK_DEVICES when desc.devices is NULL, the selector
 * forms of chapter 8, the default, and the device descriptions. */
static int count_with(const char *devices, int *count)
{
    hpl_context_desc d = {.devices = devices};
    th_prepare_desc(&d);
    hpl_context *c = NULL;
    int r = hpl_context_create(&d, &c);
    *count = r == HPL_OK ? hpl_device_count(c) : r;
    if (r == HPL_OK)
        hpl_context_destroy(c);
    return r;
}

static void selection(void)
{
    int n;
    setenv("HPLVK_DEVICES", th_devices("cpu:3"), 1);
    if (CHECK_OK(count_with(NULL, &n)))
        CHECK(n == 3, "HPLVK_DEVICES=%s with desc.devices NULL opened %d devices", th_devices("cpu:3"), n);
    /* desc.devices wins over the environment. */
    if (CHECK_OK(count_with(th_devices("cpu"), &n)))
        CHECK(n == 1, "desc.devices=%s with HPLVK_DEVICES=%s opened %d devices", th_devices("cpu"),
              th_devices("cpu:3"), n);
    unsetenv("HPLVK_DEVICES");
    hpl_context_desc d = {0};
    th_prepare_desc(&d);
    hpl_context *c = NULL;
    bool have_gpu = false;
    if (CHECK_OK(hpl_context_create(&d, &c))) {
        int np = hpl_physical_device_count(c);
        hpl_device_info info;
        for (int i = 0; i < np; i++)
            if (CHECK_OK(hpl_physical_device_get_info(c, i, &info)) && (info.type & HPL_DEVICE_GPU))
                have_gpu = true;
        if (!have_gpu) {
            CHECK(hpl_device_count(c) == 1, "default devices without a GPU: %d devices", hpl_device_count(c));
            if (CHECK_OK(hpl_device_get_info(c, 0, &info)))
                CHECK(info.type == HPL_DEVICE_CPU, "default device without a GPU has type %d", info.type);
        } else {
            /* With GPUs: every GPU, once, and nothing else. */
            int gpus = 0;
            for (int i = 0; i < np; i++)
                gpus += hpl_physical_device_get_info(c, i, &info) == HPL_OK && (info.type & HPL_DEVICE_GPU);
            CHECK(hpl_device_count(c) == gpus, "default devices: %d, the machine has %d GPUs", hpl_device_count(c),
                  gpus);
            for (int dv = 0; dv < hpl_device_count(c); dv++)
                if (CHECK_OK(hpl_device_get_info(c, dv, &info)))
                    CHECK((info.type & HPL_DEVICE_GPU) && info.replica == 0, "default device %d: type %d replica %u",
                          dv, info.type, info.replica);
        }
        int all;
        if (CHECK_OK(count_with("all", &all)))
            CHECK(all == np, "\"all\" opened %d devices of %d physical ones", all, np);
        hpl_context_destroy(c);
    }
    if (!have_gpu) {
        /* The CPU is physical device 0 here when it is the only one. */
        int cpu_index = -1;
        hpl_context *c2 = th_context("cpu");
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(c2, 0, &info)))
            cpu_index = (int)info.physical_index;
        hpl_context_destroy(c2);
        char sel[32];
        snprintf(sel, sizeof sel, "%d", cpu_index);
        if (CHECK_OK(count_with(sel, &n)))
            CHECK(n == 1, "devices=\"%s\" opened %d devices", sel, n);
        snprintf(sel, sizeof sel, "%d:2", cpu_index);
        if (CHECK_OK(count_with(sel, &n)))
            CHECK(n == 2, "devices=\"%s\" opened %d devices", sel, n);
    }
    if (CHECK_OK(count_with(th_devices("cpu0:2"), &n)))
        CHECK(n == 2, "devices=\"%s\" opened %d devices", th_devices("cpu0:2"), n);
}

static void descriptions(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_device_info info;
    if (CHECK_OK(hpl_device_get_info(ctx, 0, &info))) {
        CHECK(info.api_version >= ((1u << 22) | (2u << 12)), "api_version %x below Vulkan 1.2", info.api_version);
        CHECK(info.subgroup_size >= 1, "subgroup_size %u", info.subgroup_size);
        CHECK(info.max_workgroup_count[0] >= 65535 && info.max_workgroup_count[1] >= 65535 &&
                  info.max_workgroup_count[2] >= 65535,
              "max_workgroup_count %u,%u,%u below Vulkan's minimum", info.max_workgroup_count[0],
              info.max_workgroup_count[1], info.max_workgroup_count[2]);
        CHECK(info.max_workgroup_invocations >= 128, "max_workgroup_invocations %u", info.max_workgroup_invocations);
        bool local = false;
        for (uint32_t h = 0; h < info.heap_count && h < HPL_MAX_HEAPS; h++)
            local |= info.heaps[h].device_local;
        CHECK(local, "no device-local heap among %u", info.heap_count);
        CHECK(info.replica == 0, "replica %u", info.replica);
        CHECK((info.type & th_device_types()) && !(info.type & (info.type - 1)), "type %d, want one of %#x", info.type,
              th_device_types());
        /* A transfer-only queue family is opened where there is one (GPUs;
         * Lavapipe has a single family). */
        bool transfer_only = false;
        for (uint32_t q = 0; q < info.queue_family_count && q < HPL_MAX_QUEUE_FAMILIES; q++)
            transfer_only |= info.queue_families[q].flags == HPL_QUEUE_TRANSFER && info.queue_families[q].count > 0;
        CHECK(info.dedicated_transfer_queue == transfer_only,
              "dedicated_transfer_queue %d, but the device %s a transfer-only queue family",
              info.dedicated_transfer_queue, transfer_only ? "has" : "has no");
        th_note("%s: type %d, vendor %04x device %04x, %u heap(s), %u queue famil(ies), subgroup %u, host_import %d, "
                "dedicated transfer queue %d, zero_copy %d, max_buffer_size %llu",
                info.name, info.type, info.vendor_id, info.device_id, info.heap_count, info.queue_family_count,
                info.subgroup_size, info.host_import, info.dedicated_transfer_queue, info.zero_copy,
                (unsigned long long)info.max_buffer_size);
    }
    hpl_context_destroy(ctx);
}

static void four_devices(void)
{
    hpl_context *ctx = th_context("cpu:4");
    CHECK(hpl_device_count(ctx) == 4, "cpu:4 opened %d devices", hpl_device_count(ctx));
    for (int d = 0; d < 4 && d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(info.replica == (uint32_t)d && (info.type & th_device_types()) && !(info.type & (info.type - 1)),
                  "device %d: replica %u type %d, want one of %#x", d, info.replica, info.type, th_device_types());
    }
    hpl_kernel map = th_kernel(ctx, map_src), step = th_kernel(ctx, step_src), sum4 = th_kernel(ctx, sum4_src);
    uint32_t *ref = malloc(sizeof(uint32_t) * N), *parts[4];
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0), p[4], s = th_array(ctx, HPL_UINT32, N, 0, 0);
    for (int i = 0; i < N; i++)
        ref[i] = (uint32_t)i ^ 0x5555u;
    CHECK_OK(hpl_array_write(ctx, x, ref, sizeof(uint32_t) * N));
    /* Round-robin: 20 in-place steps on devices 0,1,2,3,0,... */
    for (uint32_t k = 0; k < 20; k++) {
        hpl_launch l = th_on((int)(k % 4));
        CHECK_OK(hpl_eval(ctx, step, &l, HPL_ARGS(hpl_arr(x), hpl_u32(k))));
        for (int i = 0; i < N; i++)
            ref[i] = ref[i] * 3u + k;
    }
    /* Each device derives its own part from x; device 3 combines all four. */
    for (int d = 0; d < 4; d++) {
        p[d] = th_array(ctx, HPL_UINT32, N, 0, 0);
        parts[d] = malloc(sizeof(uint32_t) * N);
        hpl_launch l = th_on(d);
        CHECK_OK(hpl_eval(ctx, map, &l, HPL_ARGS(hpl_arr(x), hpl_arr(p[d]), hpl_u32((uint32_t)d * 100u))));
        for (int i = 0; i < N; i++)
            parts[d][i] = ref[i] * 3u + (uint32_t)d * 100u;
    }
    hpl_launch l3 = th_on(3);
    CHECK_OK(hpl_eval(ctx, sum4, &l3, HPL_ARGS(hpl_arr(p[0]), hpl_arr(p[1]), hpl_arr(p[2]), hpl_arr(p[3]), hpl_arr(s))));
    uint32_t *want = malloc(sizeof(uint32_t) * N);
    for (int i = 0; i < N; i++)
        want[i] = parts[0][i] + 3u * parts[1][i] + 5u * parts[2][i] + 7u * parts[3][i];
    expect_u32(ctx, s, want, "cpu:4: four parts combined on device 3");
    expect_u32(ctx, x, ref, "cpu:4: 20 round-robin steps");
    for (int d = 0; d < 4; d++) {
        char what[64];
        snprintf(what, sizeof what, "cpu:4: part written on device %d", d);
        expect_u32(ctx, p[d], parts[d], what);
        CHECK_OK(hpl_array_destroy(ctx, p[d]));
        free(parts[d]);
    }
    CHECK_OK(hpl_finish(ctx));
    free(ref);
    free(want);
    /* Arrays x and s and the kernels are left for hpl_context_destroy. */
    th_note("cpu:4: leaving 2 arrays and 3 kernels to hpl_context_destroy");
    hpl_context_destroy(ctx);
}

/* The array pointer's contract (hplvk.h chapter 6): x.p points at element
 * x.part_lo, the first present on the device, and element (i, j) is
 * x.p.v[(i - part_lo.x) * stride.x + (j - part_lo.y) * stride.y] -- what a
 * kernel without <hplvk.glsl> computes. A pointer to element 0 lay before a
 * part's memory and faulted on the H200 past 4 GiB of offsets. Rows split
 * over three devices with one halo row, read through a subarray (strides of
 * its parent) by that formula only. */
static const char *raw_index_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; };\n"
    "void main() { uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
    "    uint up = i > 0u ? i - 1u : i;\n"
    "    hpl_at2(b, i, j) = a.p.v[(up - a.part_lo.x) * a.stride.x + (j - a.part_lo.y) * a.stride.y] * 1000u\n"
    "        + a.p.v[(i - a.part_lo.x) * a.stride.x + (j - a.part_lo.y) * a.stride.y]; }\n";

static void pointer_at_part(void)
{
    enum { R = 41, C = 13, PR = 37, PC = 9 }; /* a is rows 2.. and columns 3.. of m */
    hpl_context *ctx = th_context("cpu:3");
    hpl_kernel k = th_kernel(ctx, raw_index_src);
    hpl_array m = th_array(ctx, HPL_UINT32, R, C, 0), a = {0}, b = th_array(ctx, HPL_UINT32, PR, PC, 0);
    CHECK_OK(hpl_subarray(ctx, m, HPL_RANGES({2, 2 + PR - 1}, {3, 3 + PC - 1}), &a));
    uint32_t host[R * C];
    for (int i = 0; i < R * C; i++)
        host[i] = (uint32_t)i;
    CHECK_OK(hpl_array_write(ctx, m, host, sizeof host));
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_part1(a, 1), hpl_part1(b, 0))));
    const uint32_t *got = th_access(ctx, b, HPL_READ);
    int wrong = 0;
    for (int i = 0; got && i < PR; i++)
        for (int j = 0; j < PC; j++) {
            int up = i > 0 ? i - 1 : i;
            uint32_t want = host[(up + 2) * C + j + 3] * 1000u + host[(i + 2) * C + j + 3];
            if (got[i * PC + j] != want && wrong++ < 3)
                CHECK(false, "b[%d][%d] = %u, want %u (element (i - 1, j) and (i, j) of a through a.p)", i, j,
                      got[i * PC + j], want);
        }
    CHECK(got && wrong == 0, "%d of %d elements wrong through a.p", wrong, PR * PC);
    hpl_context_destroy(ctx);
}

int main(void)
{
    descriptions();
    selection();
    two_devices();
    four_devices();
    pointer_at_part();
    return th_finish(NULL);
}
