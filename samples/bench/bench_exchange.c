/*
 * bench_exchange — data between two logical devices through hplvk, next to a
 * hand-written pipelined exchange through one imported host buffer, and the
 * latency of a one-row halo hop next to a raw round trip; one run, the same
 * physical device(s).
 *
 *   bench_exchange [max_mib [rounds [steps]]]
 *       max_mib  largest exchange in MiB; sizes 1, 4, 16, 64, 256, 1024 up to
 *                it (default 1024 on a GPU, 64 otherwise, 1 under
 *                validation), each also limited by the device (4 copies must
 *                fit its local heap) and the host (half its memory)
 *       rounds   rounds (default 5, 1 under validation)
 *       steps    halo steps per round (default 200, 10 under validation)
 *
 * Devices: HPLVK_DEVICES when set (devices 0 and 1 are used: "gpu0:2" for
 * two logical devices of one GPU, "gpu0,gpu1" for two GPUs), else the first
 * device listed twice ("gpu0:2", or "cpu0:2" without a GPU). Logical devices
 * of one physical device are separate VkDevices with separate memories, so
 * data between them really moves through the host.
 *
 * (i) Whole-array exchange, device 0 -> device 1, of a uint32 array:
 *   hplvk  a kernel on device 0 writes the array (untimed, waited); timed:
 *          hpl_array_prefetch(device 1) + hpl_array_wait. Exactly the array
 *          must leave device 0 and reach device 1 (hpl_stats), and a kernel
 *          on device 1 checks every element.
 *   raw    two VkDevices (on the physical devices of hplvk's devices 0 and
 *          1), ONE host allocation of K = 4 slots imported into both with
 *          VK_EXT_external_memory_host, slots of 16 MiB (size/8 for sizes
 *          below 128 MiB, so that small sizes pipeline too): device A copies
 *          chunk k into slot k%K while device B copies slot (k-1)%K out, in
 *          order by timeline semaphores the host waits on (a VkSemaphore
 *          cannot be shared between VkDevices without external-semaphore
 *          export; DESIGN.md section 4 measured this host-waits variant at
 *          46.8 GB/s between two H200s). Transfer-only queues where the
 *          device has them. B's buffer is cleared before each round and read
 *          back and checked after it.
 *   Target (issue 15): hplvk >= 0.9x raw.
 * (ii) One-row halo hop: a 256 x 256 uint grid split by rows over devices 0
 *   and 1 with hpl_part1(grid, 1) (one halo row each side), a 3-point
 *   vertical stencil (exact in integers), the two grids swapped every step.
 *   The hop is the time from a producer kernel's end to the start of the
 *   consumer kernel that reads its rows on the other device, GPU timestamps
 *   on the host's CLOCK_MONOTONIC; medians and 90th percentiles of every
 *   hop of every round.
 *   hplvk hop  steps back to back under hpl_trace_begin / hpl_trace_end
 *          into a temporary file, read back: the stencil kernel of step i
 *          on device c starts after the one of step i - 1 on the other
 *          device, which wrote the grid it reads, ended. The host does not
 *          wait between steps, so that it runs ahead of the devices; the
 *          hops where it did not (the consumer's step issued after the
 *          producer kernel ended, which puts host time in them) are counted.
 *   raw hop  two VkDevices (compute queues, on the physical devices of
 *          hplvk's devices 0 and 1): a kernel on A writes a row of 256
 *          floats, A copies it into a host row imported into both
 *          (VK_EXT_external_memory_host), B copies it in and runs a kernel
 *          on it. B's submission is queued first and waits for A's through
 *          timelines: the host waits for A's and signals B's
 *          (vkSignalSemaphore: hplvk's progress thread, for devices that
 *          share no semaphores) and, where the driver shares opaque-fd
 *          timelines between the two (VK_KHR_external_semaphore_fd, one
 *          physical device, validation off), B waits on A's timeline
 *          imported (hplvk's peer timelines). vkCmdWriteTimestamp at A's
 *          kernel end and B's kernel start (BOTTOM_OF_PIPE, as hplvk's
 *          trace), put on CLOCK_MONOTONIC by VK_EXT_calibrated_timestamps
 *          after each hop; without it (the reason is printed) no raw hop.
 *          B's result is checked after every hop.
 *   The step times the host sees, for reference: hplvk's steps each waited
 *   (hpl_array_wait) and back to back (hpl_finish), and of the latter the
 *   host's time inside hpl_eval (when it is most of the step, the host
 *   sets the pace: issue 18's finest grain); the raw round trip, one
 *   dispatch of a tiny kernel over one part's elements on device 0's
 *   physical device, recorded once: vkQueueSubmit + spin on the fence, and
 *   + vkWaitForFences.
 *   Target (issue 15): the hplvk hop (both ways) <= 2x the raw round trip
 *   (submit + spin); hplvk hop / raw hop says what hplvk adds to the
 *   mechanism itself.
 *   The grid must equal a host computation of every step run, and the bytes
 *   moved per step must be the halo rows only (two rows each way).
 *
 * Rounds interleave every measurement; the tables of throughput and step
 * times give medians over rounds, the hop table over every hop.
 * The RESULT line gives the largest exchange: time_ms hplvk's median, rate
 * its GB/s; verified when every check passed and no validation message
 * came (HPLVK_VALIDATION=1 turns the layer on for hplvk and the baseline
 * alike). The exit status is non-zero when not verified; a missed target is
 * printed, not an error.
 */
#define _POSIX_C_SOURCE 200809L
#define SAMPLE_NAME "bench_exchange"
#include "bench_vk.h"

#include <errno.h>

#define TARGET_EXCHANGE 0.9 /* hplvk / raw GB/s, at least */
#define TARGET_HOP 2.0      /* hplvk hop / raw round trip, at most */
#define SLOTS 4
#define SLOT_MAX (16u << 20)
#define HALO_ROWS 256
#define HALO_COLS 256

typedef struct config {
    uint64_t max_mib;
    int rounds, steps;
    bool validation;
} config;

typedef struct hdevs {
    hpl_context *ctx;
    hpl_device_info info[2];
    bench_kernels kern;
} hdevs;

/* ======================================================================
 * (i) hplvk: device 0 -> device 1
 * ====================================================================== */

/* Bytes device `dev` must move: nothing on a zero-copy device (the kernel
 * on device 0 then wrote the host's copy, which device 1 reads). */
static bool exchange_moved(const hdevs *h, uint64_t bytes)
{
    uint64_t out0 = h->info[0].zero_copy || h->info[1].zero_copy ? 0 : bytes;
    uint64_t in1 = h->info[1].zero_copy ? 0 : bytes;
    return bench_moved(h->ctx, 0, 0, out0, "hplvk exchange") && bench_moved(h->ctx, 1, in1, 0, "hplvk exchange");
}

static bool h_exchange(hdevs *h, hpl_array a, uint64_t bytes, uint32_t seed, double *us)
{
    if (!bench_stamp(h->ctx, &h->kern, a, seed, 0))
        return false;
    BENCH_HPL(hpl_stats_reset(h->ctx));
    double t0 = bench_now_us();
    BENCH_HPL(hpl_array_prefetch(h->ctx, a, 1));
    BENCH_HPL(hpl_array_wait(h->ctx, a));
    *us = bench_now_us() - t0;
    return exchange_moved(h, bytes) && bench_check(h->ctx, &h->kern, a, seed, 1, "hplvk exchange");
}

/* ======================================================================
 * (i) raw: the pipelined exchange through one imported host buffer
 * ====================================================================== */

typedef struct xraw {
    bvk_device *A, *B;
    uint64_t bytes, slot, chunks;
    void *host;                /* SLOTS * slot bytes, imported into A and B */
    bvk_buffer host_a, host_b; /* the imports */
    bvk_buffer src, dst;       /* device-local, on A and on B */
    VkSemaphore sem_a, sem_b;  /* timelines: chunks copied out by A, in by B */
    uint64_t val_a, val_b;     /* their values after the last exchange */
    VkCommandBuffer *cb_a, *cb_b, util_a, util_b;
} xraw;

static uint64_t chunk_len(const xraw *x, uint64_t k)
{
    uint64_t left = x->bytes - k * x->slot;
    return left < x->slot ? left : x->slot;
}

/* Chunk k: A copies it from src into slot k % SLOTS (then makes it visible
 * to the host); B copies it from that slot into dst. Each starts with a
 * barrier against its queue's earlier transfers. */
static bool x_record(xraw *x)
{
    for (uint64_t k = 0; k < x->chunks; k++) {
        VkDeviceSize at = k * x->slot, slot_at = (k % SLOTS) * x->slot, len = chunk_len(x, k);
        BENCH_VK(bvk_begin(x->A, x->cb_a[k], 0));
        bvk_transfer_barrier(x->A, x->cb_a[k]);
        bvk_copy(x->A, x->cb_a[k], x->src.buffer, at, x->host_a.buffer, slot_at, len);
        bvk_host_barrier(x->A, x->cb_a[k]);
        BENCH_VK(x->A->vk.EndCommandBuffer(x->cb_a[k]));
        BENCH_VK(bvk_begin(x->B, x->cb_b[k], 0));
        bvk_transfer_barrier(x->B, x->cb_b[k]);
        bvk_copy(x->B, x->cb_b[k], x->host_b.buffer, slot_at, x->dst.buffer, at, len);
        BENCH_VK(x->B->vk.EndCommandBuffer(x->cb_b[k]));
    }
    return true;
}

/* Fills src with the pattern of `seed`, chunk by chunk through slot 0. */
static bool x_upload(xraw *x, uint32_t seed)
{
    for (uint64_t k = 0; k < x->chunks; k++) {
        uint32_t *slot = x->host;
        uint64_t first = k * x->slot / 4, n = chunk_len(x, k) / 4;
        for (uint64_t i = 0; i < n; i++)
            slot[i] = bench_pattern(first + i, seed);
        BENCH_VK(bvk_begin(x->A, x->util_a, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
        bvk_transfer_barrier(x->A, x->util_a);
        bvk_copy(x->A, x->util_a, x->host_a.buffer, 0, x->src.buffer, k * x->slot, chunk_len(x, k));
        BENCH_VK(x->A->vk.EndCommandBuffer(x->util_a));
        BENCH_VK(bvk_submit_wait(x->A, x->util_a, BVK_BLOCK));
    }
    return true;
}

/* Zeroes dst, so that the check after the exchange proves it. */
static bool x_clear(xraw *x)
{
    BENCH_VK(bvk_begin(x->B, x->util_b, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
    bvk_transfer_barrier(x->B, x->util_b);
    x->B->vk.CmdFillBuffer(x->util_b, x->dst.buffer, 0, VK_WHOLE_SIZE, 0);
    BENCH_VK(x->B->vk.EndCommandBuffer(x->util_b));
    BENCH_VK(bvk_submit_wait(x->B, x->util_b, BVK_BLOCK));
    return true;
}

/* Reads dst back chunk by chunk through slot 0 and checks it. */
static bool x_verify(xraw *x, uint32_t seed)
{
    uint64_t bad = 0;
    for (uint64_t k = 0; k < x->chunks; k++) {
        BENCH_VK(bvk_begin(x->B, x->util_b, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
        bvk_transfer_barrier(x->B, x->util_b);
        bvk_copy(x->B, x->util_b, x->dst.buffer, k * x->slot, x->host_b.buffer, 0, chunk_len(x, k));
        bvk_host_barrier(x->B, x->util_b);
        BENCH_VK(x->B->vk.EndCommandBuffer(x->util_b));
        BENCH_VK(bvk_submit_wait(x->B, x->util_b, BVK_BLOCK));
        const uint32_t *slot = x->host;
        uint64_t first = k * x->slot / 4, n = chunk_len(x, k) / 4;
        for (uint64_t i = 0; i < n; i++)
            if (slot[i] != bench_pattern(first + i, seed) && bad++ < 3)
                fprintf(stderr, SAMPLE_NAME ": raw exchange: element %" PRIu64 " = 0x%08x, expected 0x%08x\n",
                        first + i, slot[i], bench_pattern(first + i, seed));
    }
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": raw exchange: %" PRIu64 " elements wrong\n", bad);
    return bad == 0;
}

/* The exchange. A runs ahead of B by at most SLOTS chunks: chunk j goes to
 * A once B has drained chunk j - SLOTS from the slot (the host waits on
 * B's timeline only when A would otherwise fall idle); chunk k goes to B
 * once A's timeline says it is in its slot. */
static bool x_exchange(xraw *x, double *us)
{
    const uint64_t n = x->chunks, base_a = x->val_a, base_b = x->val_b;
    uint64_t next_a = 0; /* chunks submitted to A */
    double t0 = bench_now_us();
    for (uint64_t k = 0; k < n; k++) {
        while (next_a < n && next_a < k + SLOTS) {
            if (next_a >= SLOTS) {
                uint64_t drained = base_b + next_a - SLOTS + 1, now = 0;
                if (next_a > k) { /* A is busy with chunk k meanwhile: only if free now */
                    BENCH_VK(bvk_value(x->B, x->sem_b, &now));
                    if (now < drained)
                        break;
                } else {
                    BENCH_VK(bvk_wait_value(x->B, x->sem_b, drained));
                }
            }
            BENCH_VK(bvk_submit(x->A, x->cb_a[next_a], x->sem_a, base_a + next_a + 1, VK_NULL_HANDLE));
            next_a++;
        }
        BENCH_VK(bvk_wait_value(x->A, x->sem_a, base_a + k + 1));
        BENCH_VK(bvk_submit(x->B, x->cb_b[k], x->sem_b, base_b + k + 1, VK_NULL_HANDLE));
    }
    BENCH_VK(bvk_wait_value(x->B, x->sem_b, base_b + n));
    *us = bench_now_us() - t0;
    x->val_a = base_a + n;
    x->val_b = base_b + n;
    return true;
}

static void x_destroy(xraw *x)
{
    if (x->A && x->A->device) {
        x->A->vk.DeviceWaitIdle(x->A->device);
        if (x->sem_a)
            x->A->vk.DestroySemaphore(x->A->device, x->sem_a, NULL);
        bvk_buffer_destroy(x->A, &x->host_a);
        bvk_buffer_destroy(x->A, &x->src);
    }
    if (x->B && x->B->device) {
        x->B->vk.DeviceWaitIdle(x->B->device);
        if (x->sem_b)
            x->B->vk.DestroySemaphore(x->B->device, x->sem_b, NULL);
        bvk_buffer_destroy(x->B, &x->host_b);
        bvk_buffer_destroy(x->B, &x->dst);
    }
    if (x->cb_a)
        bvk_commands_free(x->A, (uint32_t)x->chunks + 1, x->cb_a);
    if (x->cb_b)
        bvk_commands_free(x->B, (uint32_t)x->chunks + 1, x->cb_b);
    free(x->cb_a);
    free(x->cb_b);
    free(x->host); /* after both imports are freed */
    memset(x, 0, sizeof *x);
}

static bool x_create(bvk_device *A, bvk_device *B, uint64_t bytes, xraw *x)
{
    const VkBufferUsageFlags xfer = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    memset(x, 0, sizeof *x);
    x->A = A;
    x->B = B;
    x->bytes = bytes;
    x->slot = bytes / 8 < SLOT_MAX ? bytes / 8 : SLOT_MAX;
    uint64_t align = A->import_alignment > B->import_alignment ? A->import_alignment : B->import_alignment;
    if (align < 4096)
        align = 4096;
    x->slot = (x->slot + align - 1) / align * align;
    x->chunks = (bytes + x->slot - 1) / x->slot;
    if (!A->host_import || !B->host_import) {
        fprintf(stderr, SAMPLE_NAME ": the raw exchange needs VK_EXT_external_memory_host on both devices\n");
        return false;
    }
    x->host = aligned_alloc(align, SLOTS * x->slot);
    x->cb_a = calloc(x->chunks + 1, sizeof *x->cb_a);
    x->cb_b = calloc(x->chunks + 1, sizeof *x->cb_b);
    if (!x->host || !x->cb_a || !x->cb_b) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
        return false;
    }
    if (!bvk_buffer_import(A, x->host, SLOTS * x->slot, &x->host_a) ||
        !bvk_buffer_import(B, x->host, SLOTS * x->slot, &x->host_b) ||
        !bvk_buffer_create(A, bytes, xfer, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &x->src) ||
        !bvk_buffer_create(B, bytes, xfer, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &x->dst))
        return false;
    BENCH_VK(bvk_timeline_create(A, &x->sem_a));
    BENCH_VK(bvk_timeline_create(B, &x->sem_b));
    if (!bvk_commands(A, (uint32_t)x->chunks + 1, x->cb_a) || !bvk_commands(B, (uint32_t)x->chunks + 1, x->cb_b))
        return false;
    x->util_a = x->cb_a[x->chunks];
    x->util_b = x->cb_b[x->chunks];
    return x_record(x) && x_upload(x, 0xabcd0000u);
}

/* ======================================================================
 * (ii) the halo hop: hplvk
 * ====================================================================== */

/* v + the rows above and below, 2*v in the middle; the first and last rows
 * are copied. uint arithmetic wraps identically on every device. */
static const char *stencil_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
    "    uint v = hpl_at2(src, r, c);\n"
    "    if (r > 0u && r + 1u < src.dims.x)\n"
    "        v = hpl_at2(src, r - 1u, c) + 2u * v + hpl_at2(src, r + 1u, c);\n"
    "    hpl_at2(dst, r, c) = v;\n"
    "}\n";

typedef struct halo {
    hpl_kernel k;
    hpl_array g[2];
    bool made;
    uint64_t steps;   /* run so far; g[steps % 2] holds the newest */
    uint32_t *ref[2]; /* the host's computation of the same steps */
} halo;

static void host_step(const uint32_t *in, uint32_t *out)
{
    for (uint64_t r = 0; r < HALO_ROWS; r++)
        for (uint64_t c = 0; c < HALO_COLS; c++) {
            uint32_t v = in[r * HALO_COLS + c];
            if (r > 0 && r + 1 < HALO_ROWS)
                v = in[(r - 1) * HALO_COLS + c] + 2u * v + in[(r + 1) * HALO_COLS + c];
            out[r * HALO_COLS + c] = v;
        }
}

static bool halo_create(hpl_context *ctx, halo *h)
{
    const size_t cells = (size_t)HALO_ROWS * HALO_COLS;
    h->ref[0] = malloc(cells * sizeof(uint32_t));
    h->ref[1] = malloc(cells * sizeof(uint32_t));
    if (!h->ref[0] || !h->ref[1]) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
        return false;
    }
    bench_fill(h->ref[0], cells, 0x2468aceu);
    BENCH_HPL(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = stencil_src, .name = "stencil"}}, &h->k));
    for (int i = 0; i < 2; i++)
        BENCH_HPL(hpl_array_create(
            ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {HALO_ROWS, HALO_COLS}, .name = i ? "grid_b" : "grid_a"},
            &h->g[i]));
    h->made = true;
    BENCH_HPL(hpl_array_write(ctx, h->g[0], h->ref[0], cells * sizeof(uint32_t)));
    return true;
}

static bool halo_destroy(hpl_context *ctx, halo *h)
{
    halo old = *h;
    free(h->ref[0]);
    free(h->ref[1]);
    memset(h, 0, sizeof *h);
    if (old.made) {
        BENCH_HPL(hpl_kernel_destroy(ctx, old.k));
        BENCH_HPL(hpl_array_destroy(ctx, old.g[0]));
        BENCH_HPL(hpl_array_destroy(ctx, old.g[1]));
    }
    return true;
}

/* One step on devices 0 and 1, parts of one row of halo. */
static bool halo_step(hpl_context *ctx, halo *h)
{
    static const hpl_launch two = {.devices = {0, 1}, .device_count = 2};
    hpl_array in = h->g[h->steps % 2], out = h->g[(h->steps + 1) % 2];
    BENCH_HPL(hpl_eval(ctx, h->k, &two, HPL_ARGS(hpl_part1(in, 1), hpl_part1(out, 1))));
    h->steps++;
    return true;
}

/* `steps` steps, each waited for (latency), or back to back; per step:
 * the whole (*us) and, when in_eval is not NULL, the host's time inside
 * hpl_eval. */
static bool halo_run(hpl_context *ctx, halo *h, int steps, bool wait_each, double *us, double *in_eval)
{
    double t0 = bench_now_us(), inside = 0;
    for (int s = 0; s < steps; s++) {
        double e0 = bench_now_us();
        if (!halo_step(ctx, h))
            return false;
        inside += bench_now_us() - e0;
        if (wait_each)
            BENCH_HPL(hpl_array_wait(ctx, h->g[h->steps % 2]));
    }
    BENCH_HPL(hpl_finish(ctx));
    *us = (bench_now_us() - t0) / steps;
    if (in_eval)
        *in_eval = inside / steps;
    return true;
}

/* Only halo rows may move during `steps` back-to-back steps (after steps
 * like them: sample_halo_report's without the result). */
static bool halo_traffic(hpl_context *ctx, uint64_t steps, bool print)
{
    static const int devices[2] = {0, 1};
    hpl_stats st;
    BENCH_HPL(hpl_stats_get(ctx, &st));
    if (print)
        return sample_halo_report(ctx, &st, steps, HALO_ROWS, HALO_COLS * sizeof(uint32_t), devices, 2, false);
    uint64_t to_host = 0, to_device = 0, want_host, want_device;
    for (int d = 0; d < st.device_count; d++) {
        to_host += st.device[d].to_host_bytes;
        to_device += st.device[d].to_device_bytes;
    }
    sample_halo_expected(ctx, HALO_ROWS, HALO_COLS * sizeof(uint32_t), devices, 2, &want_host, &want_device);
    if (to_host == want_host * steps && to_device == want_device * steps)
        return true;
    return sample_halo_report(ctx, &st, steps, HALO_ROWS, HALO_COLS * sizeof(uint32_t), devices, 2, false);
}

/* The grid equals the host's computation of every step run. */
static bool halo_verify(hpl_context *ctx, halo *h)
{
    const size_t cells = (size_t)HALO_ROWS * HALO_COLS;
    for (uint64_t s = 0; s < h->steps; s++)
        host_step(h->ref[s % 2], h->ref[(s + 1) % 2]);
    const uint32_t *p;
    BENCH_HPL(hpl_array_access(ctx, h->g[h->steps % 2], HPL_READ, (void **)&p));
    const uint32_t *want = h->ref[h->steps % 2];
    uint64_t bad = 0;
    for (size_t i = 0; i < cells; i++)
        if (p[i] != want[i] && bad++ < 3)
            fprintf(stderr, SAMPLE_NAME ": halo: cell (%zu, %zu) = %u, expected %u\n", i / HALO_COLS, i % HALO_COLS,
                    p[i], want[i]);
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": halo: %" PRIu64 " cells wrong after %" PRIu64 " steps\n", bad, h->steps);
    return bad == 0;
}

/* ======================================================================
 * (ii) the raw round trip: one tiny dispatch, submit + wait
 * ====================================================================== */

#define RT_N (HALO_ROWS / 2 * HALO_COLS) /* one part's elements */

typedef struct rtrip {
    bvk_device *d;
    bvk_buffer x, readback;
    bvk_axpb k;
    VkCommandBuffer cb[2]; /* the dispatch; clear and read back */
    uint64_t dispatches;
} rtrip;

static bool rt_create(bvk_device *d, rtrip *t)
{
    memset(t, 0, sizeof *t);
    t->d = d;
    const VkBufferUsageFlags xfer = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (!bvk_buffer_create(d, RT_N * sizeof(float), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | xfer,
                           VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &t->x) ||
        !bvk_buffer_create(d, RT_N * sizeof(float), xfer,
                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &t->readback) ||
        !bvk_axpb_create(d, t->x.buffer, &t->k) || !bvk_commands(d, 2, t->cb))
        return false;
    /* x = 0, so that after E dispatches of x = x * 1 + 0.5 it is E / 2. */
    BENCH_VK(bvk_begin(d, t->cb[1], VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
    d->vk.CmdFillBuffer(t->cb[1], t->x.buffer, 0, VK_WHOLE_SIZE, 0);
    bvk_barrier(d, t->cb[1], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    BENCH_VK(d->vk.EndCommandBuffer(t->cb[1]));
    BENCH_VK(bvk_submit_wait(d, t->cb[1], BVK_BLOCK));
    BENCH_VK(bvk_begin(d, t->cb[0], 0));
    bvk_axpb_bind(d, t->cb[0], &t->k, RT_N, 1.0f, 0.5f);
    bvk_axpb_dispatch(d, t->cb[0], RT_N);
    BENCH_VK(d->vk.EndCommandBuffer(t->cb[0]));
    return true;
}

static bool rt_run(rtrip *t, int iters, bvk_wait mode, double *us)
{
    double t0 = bench_now_us();
    for (int i = 0; i < iters; i++)
        BENCH_VK(bvk_submit_wait(t->d, t->cb[0], mode));
    *us = (bench_now_us() - t0) / iters;
    t->dispatches += (uint64_t)iters;
    return true;
}

static bool rt_verify(rtrip *t)
{
    const bvk_device *d = t->d;
    BENCH_VK(bvk_begin(d, t->cb[1], VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
    bvk_barrier(d, t->cb[1], VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    bvk_copy(d, t->cb[1], t->x.buffer, 0, t->readback.buffer, 0, RT_N * sizeof(float));
    bvk_host_barrier(d, t->cb[1]);
    BENCH_VK(d->vk.EndCommandBuffer(t->cb[1]));
    BENCH_VK(bvk_submit_wait(d, t->cb[1], BVK_BLOCK));
    const float *x = t->readback.mapped, want = (float)((double)t->dispatches * 0.5);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < RT_N; i++)
        bad += x[i] != want;
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": raw round trip: %" PRIu64 " elements differ from %g\n", bad, (double)want);
    return bad == 0;
}

static void rt_destroy(rtrip *t)
{
    if (t->d && t->d->device) {
        t->d->vk.DeviceWaitIdle(t->d->device);
        bvk_axpb_destroy(t->d, &t->k);
        bvk_buffer_destroy(t->d, &t->x);
        bvk_buffer_destroy(t->d, &t->readback);
    }
    memset(t, 0, sizeof *t);
}

/* ======================================================================
 * (ii) the raw hop: one row from a kernel on A to a kernel on B, GPU-timed
 * ====================================================================== */

#define ROW_BYTES (HALO_COLS * sizeof(float)) /* one halo row */

/* How B's consumer is ordered after A's producer. */
typedef enum hop_order {
    HOP_HOST_SIGNAL, /* the host waits for A's timeline, then signals B's (hplvk's progress thread) */
    HOP_PEER_FD,     /* B waits on A's timeline imported from an opaque fd (hplvk's peer timelines) */
} hop_order;

typedef struct rhop {
    bvk_device *A, *B;
    void *host;                /* row 0: A's row; row 1: B's result; imported into both */
    bvk_buffer host_a, host_b; /* the imports */
    bvk_buffer row_a, row_b;   /* device-local: the producer's row, the consumer's */
    bvk_axpb k_a, k_b;         /* row += 0.5 */
    VkQueryPool end_a, start_b; /* producer kernel end, consumer kernel start */
    VkSemaphore done_a, done_b; /* timelines: hop v's producer, consumer, complete */
    VkSemaphore gate_b;        /* B's timeline the host signals (HOP_HOST_SIGNAL) */
    VkSemaphore peer_b;        /* done_a imported into B (HOP_PEER_FD), or none */
    VkCommandBuffer cb_a[2], cb_b; /* cb_a[1]: clears row_a */
    uint64_t hops;             /* run so far: row_a holds hops * 0.5 */
    uint64_t deviation_ns;     /* the largest calibration error of any hop */
} rhop;

/* A: row_a += 0.5; its end stamped; row_a out to host row 0 for B. */
static bool rh_record_producer(rhop *h)
{
    const bvk_device *A = h->A;
    VkCommandBuffer cb = h->cb_a[0];
    BENCH_VK(bvk_begin(A, cb, 0));
    A->vk.CmdResetQueryPool(cb, h->end_a, 0, 1);
    /* After the last hop's copy of row_a and into host row 0, and the clear. */
    bvk_barrier(A, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    bvk_axpb_bind(A, cb, &h->k_a, HALO_COLS, 1.0f, 0.5f);
    bvk_axpb_dispatch(A, cb, HALO_COLS);
    /* BOTTOM_OF_PIPE: written once the dispatch completed, as hplvk's end
     * stamp of a kernel (lib/engine/timestamps.c). */
    A->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, h->end_a, 0);
    bvk_barrier(A, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
    bvk_copy(A, cb, h->row_a.buffer, 0, h->host_a.buffer, 0, ROW_BYTES);
    bvk_host_barrier(A, cb);
    BENCH_VK(A->vk.EndCommandBuffer(cb));
    return true;
}

/* B: host row 0 into row_b; its start stamped; row_b += 0.5; row_b out to
 * host row 1, where the host checks it. */
static bool rh_record_consumer(rhop *h)
{
    const bvk_device *B = h->B;
    VkCommandBuffer cb = h->cb_b;
    BENCH_VK(bvk_begin(B, cb, 0));
    B->vk.CmdResetQueryPool(cb, h->start_b, 0, 1);
    /* After the last hop's kernel and copies of row_b and into host row 1. */
    bvk_barrier(B, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_WRITE_BIT);
    bvk_copy(B, cb, h->host_b.buffer, 0, h->row_b.buffer, 0, ROW_BYTES);
    bvk_barrier(B, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    bvk_axpb_bind(B, cb, &h->k_b, HALO_COLS, 1.0f, 0.5f);
    /* BOTTOM_OF_PIPE before the dispatch: the moment everything before it
     * completed, the row's copy included, as hplvk's begin stamp. */
    B->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, h->start_b, 0);
    B->vk.CmdDispatch(cb, (HALO_COLS + BVK_AXPB_LOCAL_SIZE - 1) / BVK_AXPB_LOCAL_SIZE, 1, 1);
    bvk_barrier(B, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
    bvk_copy(B, cb, h->row_b.buffer, 0, h->host_b.buffer, ROW_BYTES, ROW_BYTES);
    bvk_host_barrier(B, cb);
    BENCH_VK(B->vk.EndCommandBuffer(cb));
    return true;
}

/* row_a = 0, so that after v hops it holds v * 0.5. */
static bool rh_clear(rhop *h)
{
    const bvk_device *A = h->A;
    VkCommandBuffer cb = h->cb_a[1];
    BENCH_VK(bvk_begin(A, cb, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT));
    A->vk.CmdFillBuffer(cb, h->row_a.buffer, 0, VK_WHOLE_SIZE, 0);
    BENCH_VK(A->vk.EndCommandBuffer(cb));
    BENCH_VK(bvk_submit_wait(A, cb, BVK_BLOCK));
    return true;
}

/* Why B cannot wait on A's timeline imported from an opaque fd, or NULL. */
static const char *rh_peer_missing(const rhop *h)
{
    if (h->A->inst->validation)
        return "off with validation on, as in hplvk: the layer does not follow a timeline another VkDevice signals";
    if (!h->A->semaphore_fd || !h->B->semaphore_fd)
        return "the driver has no VK_KHR_external_semaphore_fd with opaque-fd timelines";
    VkPhysicalDeviceIDProperties id[2] = {{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES},
                                          {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES}};
    for (int i = 0; i < 2; i++) {
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id[i]};
        h->A->inst->vk.GetPhysicalDeviceProperties2(i ? h->B->physical : h->A->physical, &p2);
    }
    /* An opaque fd carries driver-private state. */
    if (memcmp(id[0].deviceUUID, id[1].deviceUUID, VK_UUID_SIZE) ||
        memcmp(id[0].driverUUID, id[1].driverUUID, VK_UUID_SIZE))
        return "an opaque fd moves only between VkDevices of one physical device and driver";
    return NULL;
}

/* done_a, exportable as an opaque fd when B will import it. */
static bool rh_producer_timeline(rhop *h, bool exportable)
{
    VkExportSemaphoreCreateInfo export = {.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                          .handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkSemaphoreTypeCreateInfo type = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                      .pNext = exportable ? &export : NULL,
                                      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
    BENCH_VK(h->A->vk.CreateSemaphore(h->A->device, &ci, NULL, &h->done_a));
    return true;
}

/* done_a imported into B as peer_b (permanently: B only waits on it). */
static VkResult rh_import(rhop *h)
{
    int fd = -1;
    VkSemaphoreGetFdInfoKHR gi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
                                  .semaphore = h->done_a,
                                  .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkResult r = h->A->vk.GetSemaphoreFdKHR(h->A->device, &gi, &fd);
    if (r != VK_SUCCESS)
        return r;
    r = bvk_timeline_create(h->B, &h->peer_b);
    VkImportSemaphoreFdInfoKHR ii = {.sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
                                     .semaphore = h->peer_b,
                                     .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT,
                                     .fd = fd};
    if (r == VK_SUCCESS)
        r = h->B->vk.ImportSemaphoreFdKHR(h->B->device, &ii);
    if (r != VK_SUCCESS)
        close(fd); /* a successful import owns it, a failed one does not */
    return r;
}

static void rh_destroy(rhop *h)
{
    const bvk_device *A = h->A, *B = h->B;
    if (B && B->device) {
        B->vk.DeviceWaitIdle(B->device);
        B->vk.DestroySemaphore(B->device, h->peer_b, NULL);
        B->vk.DestroySemaphore(B->device, h->gate_b, NULL);
        B->vk.DestroySemaphore(B->device, h->done_b, NULL);
        B->vk.DestroyQueryPool(B->device, h->start_b, NULL);
        bvk_axpb_destroy(B, &h->k_b);
        bvk_buffer_destroy(B, &h->row_b);
        bvk_buffer_destroy(B, &h->host_b);
        bvk_commands_free(B, 1, &h->cb_b);
    }
    if (A && A->device) {
        A->vk.DeviceWaitIdle(A->device);
        A->vk.DestroySemaphore(A->device, h->done_a, NULL);
        A->vk.DestroyQueryPool(A->device, h->end_a, NULL);
        bvk_axpb_destroy(A, &h->k_a);
        bvk_buffer_destroy(A, &h->row_a);
        bvk_buffer_destroy(A, &h->host_a);
        bvk_commands_free(A, 2, h->cb_a);
    }
    free(h->host); /* after both imports are freed */
    memset(h, 0, sizeof *h);
}

/* The raw hop between A and B; *peer_why says why HOP_PEER_FD cannot run
 * (NULL: it can). Needs calibrated timestamps on both (checked by the
 * caller). */
static bool rh_create(bvk_device *A, bvk_device *B, rhop *h, const char **peer_why)
{
    const VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    memset(h, 0, sizeof *h);
    h->A = A;
    h->B = B;
    if (!A->host_import || !B->host_import) {
        fprintf(stderr, SAMPLE_NAME ": the raw hop needs VK_EXT_external_memory_host on both devices\n");
        return false;
    }
    VkDeviceSize align = A->import_alignment > B->import_alignment ? A->import_alignment : B->import_alignment;
    align = align < 4096 ? 4096 : align;
    const VkDeviceSize host_bytes = (2 * ROW_BYTES + align - 1) / align * align;
    if (!(h->host = aligned_alloc(align, host_bytes))) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
        return false;
    }
    *peer_why = rh_peer_missing(h);
    if (!bvk_buffer_import(A, h->host, host_bytes, &h->host_a) ||
        !bvk_buffer_import(B, h->host, host_bytes, &h->host_b) ||
        !bvk_buffer_create(A, ROW_BYTES, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &h->row_a) ||
        !bvk_buffer_create(B, ROW_BYTES, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &h->row_b) ||
        !bvk_axpb_create(A, h->row_a.buffer, &h->k_a) || !bvk_axpb_create(B, h->row_b.buffer, &h->k_b) ||
        !bvk_commands(A, 2, h->cb_a) || !bvk_commands(B, 1, &h->cb_b) || !rh_producer_timeline(h, !*peer_why))
        return false;
    BENCH_VK(bvk_timestamp_pool(A, &h->end_a));
    BENCH_VK(bvk_timestamp_pool(B, &h->start_b));
    BENCH_VK(bvk_timeline_create(B, &h->done_b));
    BENCH_VK(bvk_timeline_create(B, &h->gate_b));
    VkResult r = *peer_why ? VK_SUCCESS : rh_import(h);
    if (r != VK_SUCCESS)
        *peer_why = "exporting A's timeline or importing it into B failed";
    return rh_record_producer(h) && rh_record_consumer(h) && rh_clear(h);
}

/* B's result of hop v is A's row of hop v (v * 0.5) plus 0.5: B read A's
 * row only after A wrote it. */
static bool rh_check(const rhop *h, uint64_t v)
{
    const float *row = (const float *)h->host + HALO_COLS, want = (float)((double)v * 0.5 + 0.5);
    for (uint32_t i = 0; i < HALO_COLS; i++)
        if (row[i] != want) {
            fprintf(stderr, SAMPLE_NAME ": raw hop %" PRIu64 ": element %u = %g, expected %g\n", v, i, (double)row[i],
                    (double)want);
            return false;
        }
    return true;
}

/* Consumer kernel start on B minus producer kernel end on A, each put on
 * CLOCK_MONOTONIC by a calibration point taken just after the hop. */
static bool rh_measure(rhop *h, double *us)
{
    uint64_t end_a = 0, start_b = 0;
    bvk_clock_point pa, pb;
    BENCH_VK(bvk_timestamp(h->A, h->end_a, &end_a));
    BENCH_VK(bvk_timestamp(h->B, h->start_b, &start_b));
    BENCH_VK(bvk_calibrate(h->A, &pa));
    BENCH_VK(bvk_calibrate(h->B, &pb));
    double ns = (double)(int64_t)(pb.ns - pa.ns) + bvk_ns_since(h->B, &pb, start_b) - bvk_ns_since(h->A, &pa, end_a);
    *us = ns * 1e-3;
    uint64_t deviation = pa.deviation_ns + pb.deviation_ns;
    h->deviation_ns = deviation > h->deviation_ns ? deviation : h->deviation_ns;
    return true;
}

/* One hop: B's consumer is queued first, waiting, then A's producer; B
 * starts once A's timeline reached the hop's value, seen by the host or by
 * B itself. */
static bool rh_hop(rhop *h, hop_order order, double *us)
{
    const uint64_t v = ++h->hops;
    BENCH_VK(bvk_submit_after(h->B, h->cb_b, order == HOP_PEER_FD ? h->peer_b : h->gate_b, v, h->done_b, v));
    BENCH_VK(bvk_submit(h->A, h->cb_a[0], h->done_a, v, VK_NULL_HANDLE));
    if (order == HOP_HOST_SIGNAL) {
        BENCH_VK(bvk_wait_value(h->A, h->done_a, v));
        BENCH_VK(bvk_signal(h->B, h->gate_b, v));
    }
    BENCH_VK(bvk_wait_value(h->B, h->done_b, v));
    BENCH_VK(bvk_wait_value(h->A, h->done_a, v));
    return rh_check(h, v) && rh_measure(h, us);
}

/* ======================================================================
 * (ii) hop samples, and the hplvk hop read off a trace of the steps
 * ====================================================================== */

/* Hops in microseconds, or why there are none. */
typedef struct hop_samples {
    double *us;
    int n, cap;
    char why[400]; /* "": measured */
} hop_samples;

enum { HOP_H01, HOP_H10, HOP_H_BOTH, HOP_RAW_HOST, HOP_RAW_PEER, HOP_COUNT };

static void samples_add(hop_samples *s, double us)
{
    if (s->n < s->cap)
        s->us[s->n++] = us;
}

static void samples_why(hop_samples *s, const char *why)
{
    snprintf(s->why, sizeof s->why, "%s", why);
}

/* Median and 90th percentile (nearest rank); sorts the samples. */
static void samples_stats(hop_samples *s, double *median, double *p90)
{
    const int n = s->n;
    qsort(s->us, (size_t)n, sizeof *s->us, bench_cmp_double);
    *median = n % 2 ? s->us[n / 2] : 0.5 * (s->us[n / 2 - 1] + s->us[n / 2]);
    *p90 = s->us[(9 * n + 9) / 10 - 1];
}

/* A stencil subkernel of the trace. */
typedef struct traced_kernel {
    double begin, end;          /* microseconds of CLOCK_MONOTONIC from the trace's origin */
    bool gpu;                   /* timed by the device (args.clock "gpu"), not seen by the host */
    char reads[16], writes[16]; /* the grids it reads and writes */
} traced_kernel;

/* What the hop needs of one trace: lib/api/trace.c writes it. */
typedef struct trace_scan {
    traced_kernel *k[2]; /* device 0's and 1's, in recording order: one per step */
    int n[2], cap;
    char calibration[2][40];  /* otherData.devices[d].calibration */
    uint64_t clock_error_ns;  /* the largest otherData.devices[d].clock_error_ns */
    double origin_us;         /* otherData.origin_ns: CLOCK_MONOTONIC of the trace's 0 */
} trace_scan;

/* Where the value of `key` starts in a line of the trace, or NULL. The
 * trace is our own: one event per line, each key once in an event, and a
 * quote inside a string escaped, so a key found is that key. */
static const char *trace_value(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? p + strlen(key) : NULL;
}

/* The string starting after `key` (which ends with its opening quote) into
 * out; "" when absent. Names of this program's arrays hold no escapes. */
static void trace_string(const char *line, const char *key, char *out, size_t cap)
{
    const char *p = trace_value(line, key);
    size_t n = 0;
    while (p && p[n] && p[n] != '"' && n + 1 < cap)
        n++;
    memcpy(out, p ? p : "", n);
    out[n] = '\0';
}

/* {"device":d,...,"calibration":"...","clock_error_ns":N} of otherData. */
static void scan_device(trace_scan *s, const char *line)
{
    int d = atoi(trace_value(line, "{\"device\":"));
    const char *err = trace_value(line, "\"clock_error_ns\":");
    if (d < 0 || d > 1)
        return;
    trace_string(line, "\"calibration\":\"", s->calibration[d], sizeof s->calibration[d]);
    uint64_t ns = err ? strtoull(err, NULL, 10) : 0;
    s->clock_error_ns = ns > s->clock_error_ns ? ns : s->clock_error_ns;
}

/* A stencil kernel event: "ts" and "dur", args.clock, args.device,
 * args.reads, args.writes. Counted even past cap, so that a trace with
 * more kernels than steps shows. */
static void scan_kernel(trace_scan *s, const char *line)
{
    const char *device = trace_value(line, "\"device\":"), *ts = trace_value(line, "\"ts\":"),
               *dur = trace_value(line, "\"dur\":"), *clock = trace_value(line, "\"clock\":\"");
    int d = device ? atoi(device) : -1;
    if (d < 0 || d > 1 || !ts || !dur || s->n[d]++ >= s->cap)
        return;
    traced_kernel *k = &s->k[d][s->n[d] - 1];
    k->begin = strtod(ts, NULL);
    k->end = k->begin + strtod(dur, NULL);
    k->gpu = clock && strncmp(clock, "gpu\"", 4) == 0;
    trace_string(line, "\"reads\":[\"", k->reads, sizeof k->reads);
    trace_string(line, "\"writes\":[\"", k->writes, sizeof k->writes);
}

static bool scan_trace(const char *path, trace_scan *s)
{
    static const char kernel[] = "{\"name\":\"stencil\",\"cat\":\"kernel\"", device[] = "  {\"device\":",
                      other[] = "\"otherData\":";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, SAMPLE_NAME ": cannot read the trace %s: %s\n", path, strerror(errno));
        return false;
    }
    s->n[0] = s->n[1] = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, kernel, sizeof kernel - 1) == 0)
            scan_kernel(s, line);
        else if (strncmp(line, device, sizeof device - 1) == 0)
            scan_device(s, line);
        else if (strncmp(line, other, sizeof other - 1) == 0)
            s->origin_us = strtod(trace_value(line, "\"origin_ns\":"), NULL) * 1e-3;
    }
    bool ok = !ferror(f);
    free(line);
    fclose(f);
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": reading the trace %s failed\n", path);
    return ok;
}

/* Hops from device p to device c: the consumer's kernel of step i starts
 * after the producer's kernel of step i - 1 ended, which wrote the grid,
 * and so the halo rows, it reads. Both must be GPU-timed. issued[i]: when
 * hpl_eval of step i returned (CLOCK_MONOTONIC microseconds); a hop whose
 * consumer step was issued after its producer kernel ended holds host time
 * too, and counts into *late. */
static void trace_hops(const trace_scan *s, const double *issued, int p, int c, hop_samples *one_way,
                       hop_samples *both, int *late)
{
    for (int i = 1; i < s->n[c]; i++) {
        const traced_kernel *producer = &s->k[p][i - 1], *consumer = &s->k[c][i];
        if (!producer->gpu || !consumer->gpu || strcmp(consumer->reads, producer->writes) != 0)
            continue;
        samples_add(one_way, consumer->begin - producer->end);
        samples_add(both, consumer->begin - producer->end);
        *late += issued[i] - s->origin_us > producer->end;
    }
}

/* ======================================================================
 * Runs and printout
 * ====================================================================== */

enum { X_H, X_RAW, X_COUNT };                          /* (i), per size */
enum { L_H_WAIT, L_H_BACK, L_H_EVAL, L_RAW_SPIN, L_RAW_BLOCK, L_COUNT }; /* (ii) */

typedef struct exchange_result {
    uint64_t bytes;
    double hplvk_us;
} exchange_result;

/* (i) for one size: every round runs hplvk's exchange and the raw one. */
static bool run_exchange_size(hdevs *h, bvk_device *A, bvk_device *B, uint64_t bytes, int rounds,
                              exchange_result *res)
{
    hpl_array a;
    xraw x = {0};
    double *m[X_COUNT] = {calloc((size_t)rounds, sizeof(double)), calloc((size_t)rounds, sizeof(double))};
    bool made = false, ok = m[X_H] && m[X_RAW];
    if (ok && hpl_array_create(h->ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {bytes / 4}, .name = "exchanged"},
                               &a) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_array_create failed: %s\n", hpl_last_error());
        ok = false;
    }
    made = ok;
    ok = ok && x_create(A, B, bytes, &x);
    double warm;
    ok = ok && h_exchange(h, a, bytes, 0x77770000u, &warm) && x_clear(&x) && x_exchange(&x, &warm) &&
         x_verify(&x, 0xabcd0000u);
    for (int r = 0; ok && r < rounds; r++)
        ok = h_exchange(h, a, bytes, 0x10000u * (uint32_t)(r + 1), &m[X_H][r]) && x_clear(&x) &&
             x_exchange(&x, &m[X_RAW][r]) && x_verify(&x, 0xabcd0000u);
    if (ok) {
        bench_stat sh = bench_stats(m[X_H], rounds), sr = bench_stats(m[X_RAW], rounds);
        double ratio = sh.median > 0.0 ? sr.median / sh.median : 0.0;
        printf("  %5.0f MiB  %10.2f %10.2f %10.3f  >= %.2f %-6s  (raw: %" PRIu64 " chunks of %" PRIu64 " KiB)\n",
               (double)bytes / BENCH_MIB, (double)bytes / (sh.median * 1e3), (double)bytes / (sr.median * 1e3), ratio,
               TARGET_EXCHANGE, bench_verdict(ratio, TARGET_EXCHANGE, true), x.chunks, x.slot >> 10);
        fflush(stdout);
        res->bytes = bytes;
        res->hplvk_us = sh.median;
    }
    x_destroy(&x);
    if (made && hpl_array_destroy(h->ctx, a) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_array_destroy failed: %s\n", hpl_last_error());
        ok = false;
    }
    free(m[X_H]);
    free(m[X_RAW]);
    return ok;
}

/* (ii): every round runs hplvk's steps (waited each, back to back, and
 * back to back under a trace, which gives its hops), the raw round trips
 * and the raw hops, `steps` of each. */
typedef struct halo_bench {
    halo hl;
    rtrip rt;
    rhop rh;
    double *step[L_COUNT]; /* host-observed microseconds per step, per round */
    hop_samples hop[HOP_COUNT];
    trace_scan scan;
    double *issued;      /* per traced step: when its hpl_eval returned, CLOCK_MONOTONIC us */
    int host_late;       /* hplvk hops whose consumer step was issued after the producer kernel ended */
    char trace_path[64]; /* the temporary trace file; "" when none */
} halo_bench;

/* The hplvk steps back to back, traced, and their hops each way. The host
 * does not wait between steps, so that it runs ahead and a consumer's
 * kernel waits for the hop, not for the host (host_late counts where it did
 * not). Nothing is added (and why says so) when the trace cannot be taken
 * or its kernels do not pair up with the steps; false on an error. */
static bool halo_traced(hpl_context *ctx, halo_bench *b, int steps)
{
    hop_samples *hop = b->hop;
    if (hop[HOP_H01].why[0]) /* an earlier round could not trace */
        return true;
    if (hpl_trace_begin(ctx, b->trace_path) != HPL_OK) { /* HPLVK_TRACE is set, say */
        char why[sizeof hop->why];
        snprintf(why, sizeof why, "%s", hpl_last_error());
        for (int i = HOP_H01; i <= HOP_H_BOTH; i++)
            samples_why(&hop[i], why);
        return true;
    }
    bool ok = true;
    for (int s = 0; ok && s < steps; s++) {
        ok = halo_step(ctx, &b->hl);
        b->issued[s] = bench_now_us();
    }
    BENCH_HPL(hpl_trace_end(ctx)); /* waits for the steps */
    if (!ok || !scan_trace(b->trace_path, &b->scan))
        return false;
    if (b->scan.n[0] != steps || b->scan.n[1] != steps) {
        char why[sizeof hop->why];
        snprintf(why, sizeof why, "the trace holds %d and %d stencil kernels on devices 0 and 1 for %d steps",
                 b->scan.n[0], b->scan.n[1], steps);
        for (int i = HOP_H01; i <= HOP_H_BOTH; i++)
            samples_why(&hop[i], why);
        return true;
    }
    trace_hops(&b->scan, b->issued, 0, 1, &hop[HOP_H01], &hop[HOP_H_BOTH], &b->host_late);
    trace_hops(&b->scan, b->issued, 1, 0, &hop[HOP_H10], &hop[HOP_H_BOTH], &b->host_late);
    return true;
}

/* `hops` raw hops of each order that can run; kept, or warm-up. */
static bool raw_hops(halo_bench *b, int hops, bool keep)
{
    static const struct {
        int sample;
        hop_order order;
    } runs[2] = {{HOP_RAW_HOST, HOP_HOST_SIGNAL}, {HOP_RAW_PEER, HOP_PEER_FD}};
    for (int i = 0; i < hops; i++)
        for (int r = 0; r < 2; r++) {
            hop_samples *s = &b->hop[runs[r].sample];
            double us;
            if (s->why[0])
                continue;
            if (!rh_hop(&b->rh, runs[r].order, &us))
                return false;
            if (keep)
                samples_add(s, us);
        }
    return true;
}

/* The raw hop on C (producer) and D (consumer), where both put their
 * timestamps on CLOCK_MONOTONIC; else why not, for both orders. */
static bool raw_hop_create(bvk_device *C, bvk_device *D, halo_bench *b)
{
    const bvk_device *lacking = C->no_calibration ? C : D->no_calibration ? D : NULL;
    if (lacking) {
        char why[sizeof b->hop->why];
        snprintf(why, sizeof why, "device %d (%s): %s", lacking == C ? 0 : 1, lacking->props.deviceName,
                 lacking->no_calibration);
        samples_why(&b->hop[HOP_RAW_HOST], why);
        samples_why(&b->hop[HOP_RAW_PEER], why);
        return true;
    }
    const char *peer_why = NULL;
    if (!rh_create(C, D, &b->rh, &peer_why))
        return false;
    if (peer_why)
        samples_why(&b->hop[HOP_RAW_PEER], peer_why);
    return true;
}

static bool halo_bench_destroy(hpl_context *ctx, halo_bench *b)
{
    bool ok = halo_destroy(ctx, &b->hl);
    rt_destroy(&b->rt);
    rh_destroy(&b->rh);
    if (b->trace_path[0])
        unlink(b->trace_path);
    for (int i = 0; i < L_COUNT; i++)
        free(b->step[i]);
    for (int i = 0; i < HOP_COUNT; i++)
        free(b->hop[i].us);
    free(b->scan.k[0]);
    free(b->scan.k[1]);
    free(b->issued);
    return ok;
}

static bool halo_bench_create(hdevs *h, bvk_device *C, bvk_device *D, const config *cfg, halo_bench *b)
{
    const int hops = cfg->rounds * cfg->steps; /* of each kind, at most */
    bool ok = true;
    for (int i = 0; i < L_COUNT; i++)
        ok = (b->step[i] = calloc((size_t)cfg->rounds, sizeof(double))) && ok;
    for (int i = 0; i < HOP_COUNT; i++) {
        b->hop[i].cap = i == HOP_H_BOTH ? 2 * hops : hops;
        ok = (b->hop[i].us = calloc((size_t)b->hop[i].cap, sizeof(double))) && ok;
    }
    b->scan.cap = cfg->steps;
    ok = (b->scan.k[0] = calloc((size_t)cfg->steps, sizeof(traced_kernel))) && ok;
    ok = (b->scan.k[1] = calloc((size_t)cfg->steps, sizeof(traced_kernel))) && ok;
    ok = (b->issued = calloc((size_t)cfg->steps, sizeof(double))) && ok;
    if (!ok) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
        return false;
    }
    snprintf(b->trace_path, sizeof b->trace_path, "/tmp/" SAMPLE_NAME "-hop-XXXXXX");
    int fd = mkstemp(b->trace_path);
    if (fd < 0) {
        fprintf(stderr, SAMPLE_NAME ": mkstemp(%s): %s\n", b->trace_path, strerror(errno));
        b->trace_path[0] = '\0';
        return false;
    }
    close(fd); /* hpl_trace_begin opens it by name */
    return halo_create(h->ctx, &b->hl) && rt_create(C, &b->rt) && raw_hop_create(C, D, b);
}

static bool halo_round(hdevs *h, halo_bench *b, const config *cfg, int r)
{
    hpl_context *ctx = h->ctx;
    return halo_run(ctx, &b->hl, cfg->steps, true, &b->step[L_H_WAIT][r], NULL) &&
           hpl_stats_reset(ctx) == HPL_OK &&
           halo_run(ctx, &b->hl, cfg->steps, false, &b->step[L_H_BACK][r], &b->step[L_H_EVAL][r]) &&
           halo_traffic(ctx, (uint64_t)cfg->steps, r == cfg->rounds - 1) && halo_traced(ctx, b, cfg->steps) &&
           rt_run(&b->rt, cfg->steps, BVK_SPIN, &b->step[L_RAW_SPIN][r]) &&
           rt_run(&b->rt, cfg->steps, BVK_BLOCK, &b->step[L_RAW_BLOCK][r]) && raw_hops(b, cfg->steps, true);
}

static void print_steps(halo_bench *b, const config *cfg, bench_stat st[L_COUNT])
{
    static const char *const label[L_COUNT] = {
        "hplvk  step: eval on devices 0+1, hpl_array_wait",
        "hplvk  steps back to back, hpl_finish (per step)",
        "hplvk  of which the host in hpl_eval (per step)",
        "raw    1 dispatch: vkQueueSubmit + spin on fence",
        "raw    1 dispatch: vkQueueSubmit + vkWaitForFences",
    };
    printf("  %-52s %9s %9s %9s\n", "host-observed microseconds per step", "median", "min", "max");
    for (int i = 0; i < L_COUNT; i++) {
        st[i] = bench_stats(b->step[i], cfg->rounds);
        printf("  %-52s %9.2f %9.2f %9.2f\n", label[i], st[i].median, st[i].min, st[i].max);
    }
}

/* The hop table, and each measured kind's median (hop[i].why says which
 * were not). */
static void print_hops(halo_bench *b, double medians[HOP_COUNT])
{
    static const char *const label[HOP_COUNT] = {
        "hplvk  device 0 -> 1 (trace of steps back to back)",
        "hplvk  device 1 -> 0",
        "hplvk  both ways",
        "raw    host waits A's timeline, signals B's",
        "raw    B waits on A's timeline imported from an fd",
    };
    printf("  %-52s %9s %9s %9s\n", "hop: producer kernel end -> consumer kernel start, us", "median", "p90", "hops");
    for (int i = 0; i < HOP_COUNT; i++) {
        hop_samples *s = &b->hop[i];
        double p90 = 0.0;
        medians[i] = 0.0;
        if (!s->why[0] && s->n == 0)
            samples_why(s, "no pair of GPU-timed kernels (a hop needs 2 steps or more)");
        if (s->why[0]) {
            printf("  %-52s not measured: %s\n", label[i], s->why);
            continue;
        }
        samples_stats(s, &medians[i], &p90);
        printf("  %-52s %9.2f %9.2f %9d\n", label[i], medians[i], p90, s->n);
    }
    const trace_scan *t = &b->scan;
    bool same = strcmp(t->calibration[0], t->calibration[1]) == 0;
    if (!b->hop[HOP_H_BOTH].why[0])
        printf("  (hplvk: GPU timestamps on CLOCK_MONOTONIC by %s%s%s, error <= %" PRIu64 " ns; %d of %d hops\n"
               "   had the consumer's step issued by the host only after the producer kernel ended: host time in "
               "them)\n",
               t->calibration[0], same ? "" : " / ", same ? "" : t->calibration[1], t->clock_error_ns, b->host_late,
               b->hop[HOP_H_BOTH].n);
    if (b->rh.hops)
        printf("  (raw: two VkDevices, one host row imported into both, GPU timestamps on CLOCK_MONOTONIC by\n"
               "   VK_EXT_calibrated_timestamps, error <= %" PRIu64 " ns)\n",
               b->rh.deviation_ns);
}

static void print_targets(const halo_bench *b, const double hop[HOP_COUNT], double round_trip)
{
    const bool hplvk = !b->hop[HOP_H_BOTH].why[0];
    printf("  target (issue 15): hop <= %.1fx the raw round trip; hplvk hop / raw spin = ", TARGET_HOP);
    if (hplvk)
        printf("%.2f  %s\n", hop[HOP_H_BOTH] / round_trip,
               bench_verdict(hop[HOP_H_BOTH] / round_trip, TARGET_HOP, false));
    else
        printf("n/a: the hplvk hop was not measured\n");
    bool any = false;
    for (int i = HOP_RAW_HOST; i <= HOP_RAW_PEER; i++)
        if (hplvk && !b->hop[i].why[0]) {
            printf("  hplvk hop / raw hop (%s) = %.2f\n", i == HOP_RAW_HOST ? "host signals" : "imported fd",
                   hop[HOP_H_BOTH] / hop[i]);
            any = true;
        }
    if (any)
        printf("  (hplvk orders its devices as the fd variant does between logical devices of one GPU whose driver\n"
               "   shares timelines, validation off and HPLVK_PEER_SEMAPHORES not 0; else as the host one does)\n");
}

static bool run_halo(hdevs *h, bvk_device *C, bvk_device *D, const config *cfg)
{
    halo_bench b = {0};
    double warm;
    bool ok = halo_bench_create(h, C, D, cfg, &b) && halo_run(h->ctx, &b.hl, 3, true, &warm, NULL) &&
              rt_run(&b.rt, 3, BVK_SPIN, &warm) && raw_hops(&b, 3, false);
    for (int r = 0; ok && r < cfg->rounds; r++)
        ok = halo_round(h, &b, cfg, r);
    ok = ok && halo_verify(h->ctx, &b.hl) && rt_verify(&b.rt);
    if (ok) {
        bench_stat st[L_COUNT];
        double hop[HOP_COUNT];
        print_steps(&b, cfg, st);
        print_hops(&b, hop);
        print_targets(&b, hop, st[L_RAW_SPIN].median);
    }
    return halo_bench_destroy(h->ctx, &b) && ok;
}

/* ======================================================================
 * Setup and main
 * ====================================================================== */

/* HPLVK_DEVICES, else the first device twice: gpu0:2, or cpu0:2. */
static bool open_context(hpl_context **ctx)
{
    const char *env = getenv("HPLVK_DEVICES");
    hpl_context_desc desc = {.log = sample_log};
    int rc = HPL_ERROR_NO_DEVICE;
    if (env && *env) {
        rc = hpl_context_create(&desc, ctx);
    } else {
        static const char *const lists[] = {"gpu0:2", "cpu0:2"};
        for (int i = 0; i < 2 && rc != HPL_OK; i++) {
            desc.devices = lists[i];
            rc = hpl_context_create(&desc, ctx);
        }
    }
    if (rc != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create: %s: %s\n", hpl_error_name(rc), hpl_last_error());
        return false;
    }
    if (hpl_device_count(*ctx) < 2) {
        fprintf(stderr, SAMPLE_NAME ": needs two devices (HPLVK_DEVICES=%s opens one)\n", env ? env : "");
        return false;
    }
    return true;
}

static bool size_fits(const hdevs *h, uint64_t bytes)
{
    uint64_t slots = SLOTS * (bytes / 8 < SLOT_MAX ? bytes / 8 : SLOT_MAX);
    bool cpu = h->info[0].type == HPL_DEVICE_CPU || h->info[1].type == HPL_DEVICE_CPU;
    uint64_t host_need = bytes + slots + (cpu ? 4 * bytes : 0);
    uint64_t max_buffer = (h->info[0].max_buffer_size < h->info[1].max_buffer_size ? h->info[0].max_buffer_size : h->info[1].max_buffer_size);
    return bench_size_fits(bytes, max_buffer, bench_device_heap(&h->info[0]), host_need);
}

static bool parse(int argc, char **argv, const hpl_device_info *info, config *cfg)
{
    cfg->validation = bench_validation_env();
    cfg->max_mib = cfg->validation ? 1 : (info->type & HPL_DEVICE_GPU) ? 1024 : 64;
    cfg->rounds = cfg->validation ? 1 : 5;
    cfg->steps = cfg->validation ? 10 : 200;
    if (argc > 1 && !sample_arg_u64("max_mib", argv[1], UINT64_MAX, &cfg->max_mib))
        return false;
    if (argc > 2 && !sample_arg_int("rounds", argv[2], &cfg->rounds))
        return false;
    if (argc > 3 && !sample_arg_int("steps", argv[3], &cfg->steps))
        return false;
    return argc <= 4 && cfg->max_mib >= 1 && cfg->rounds >= 1 && cfg->rounds <= 1000 && cfg->steps >= 1;
}

static void print_header(const config *cfg, const hdevs *h, const bvk_device *A)
{
    for (int i = 0; i < 2; i++)
        printf("bench_exchange: device %d: %s (physical %u, replica %u%s)\n", i, h->info[i].name,
               h->info[i].physical_index, h->info[i].replica, h->info[i].zero_copy ? ", ZERO-COPY: nothing moves" : "");
    printf("bench_exchange: %d round%s, medians%s\n", cfg->rounds, cfg->rounds == 1 ? "" : "s",
           cfg->validation ? " (VALIDATION ON: timings not representative)" : "");
    printf("(i) whole-array exchange, device 0 -> device 1\n");
    printf("  hplvk = a kernel writes it on device 0 (untimed), then hpl_array_prefetch(device 1) + hpl_array_wait\n");
    printf("  raw   = two VkDevices, one host allocation of %d slots imported into both (VK_EXT_external_memory_host),\n"
           "          A copies chunk k into slot k%%%d while B copies slot (k-1)%%%d out, host waits on timeline "
           "semaphores; %s queues\n",
           SLOTS, SLOTS, SLOTS, bvk_family_kind(A));
    printf("  target (issue 15): hplvk >= %.1fx raw\n", TARGET_EXCHANGE);
    printf("  %9s  %10s %10s %10s  %s\n", "size", "hplvk GB/s", "raw GB/s", "hplvk/raw", "target");
}

int main(int argc, char **argv)
{
    static const uint64_t sizes_mib[] = {1, 4, 16, 64, 256, 1024};
    hdevs h = {.info = {{.name = "none"}, {.name = "none"}}};
    bvk_instance inst = {0};
    bvk_device A = {0}, B = {0}, C = {0}, D = {0};
    config cfg = {0};
    exchange_result res = {0};
    bool ok = open_context(&h.ctx), measured = false;
    for (int i = 0; ok && i < 2; i++)
        ok = hpl_device_get_info(h.ctx, i, &h.info[i]) == HPL_OK;
    if (ok && !parse(argc, argv, &h.info[0], &cfg)) {
        fprintf(stderr, "usage: %s [max_mib [rounds [steps]]]\n", argv[0]);
        hpl_context_destroy(h.ctx);
        return 2;
    }
    bvk_match m0 = bvk_match_of(&h.info[0]), m1 = bvk_match_of(&h.info[1]);
    /* A and B: the exchange's two devices (copy queues); C and D: the raw
     * hop's producer and consumer (compute queues), C also the round trip's,
     * on device 0's and device 1's physical devices. */
    ok = ok && bvk_instance_create(&inst, cfg.validation) && bvk_device_create(&inst, &m0, BVK_QUEUE_TRANSFER, &A) &&
         bvk_device_create(&inst, &m1, BVK_QUEUE_TRANSFER, &B) &&
         bvk_device_create(&inst, &m0, BVK_QUEUE_COMPUTE, &C) && bvk_device_create(&inst, &m1, BVK_QUEUE_COMPUTE, &D);
    ok = ok && bench_kernels_create(h.ctx, &h.kern);
    if (ok)
        print_header(&cfg, &h, &A);
    for (size_t i = 0; ok && i < sizeof sizes_mib / sizeof *sizes_mib && sizes_mib[i] <= cfg.max_mib; i++)
        if (size_fits(&h, sizes_mib[i] << 20))
            ok = run_exchange_size(&h, &A, &B, sizes_mib[i] << 20, cfg.rounds, &res);
    if (ok)
        printf("(ii) one-row halo hop: %d x %d uint grid split by rows over devices 0 and 1, hpl_part1(grid, 1), "
               "3-point stencil; %d steps per round; raw round trip on a %s queue of device 0's physical device, "
               "raw hop from it to a %s queue of device 1's\n",
               HALO_ROWS, HALO_COLS, cfg.steps, bvk_family_kind(&C), bvk_family_kind(&D));
    ok = ok && run_halo(&h, &C, &D, &cfg);
    measured = ok && res.bytes > 0;

    ok = bench_kernels_destroy(h.ctx, &h.kern) && ok;
    if (h.ctx && hpl_finish(h.ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_finish failed: %s\n", hpl_last_error());
        ok = false;
    }
    hpl_context_destroy(h.ctx);
    bvk_device_destroy(&D);
    bvk_device_destroy(&C);
    bvk_device_destroy(&B);
    bvk_device_destroy(&A);
    bvk_instance_destroy(&inst);
    bool verified = ok && measured && sample_log_clean() && bvk_clean();

    char devnames[600] = "";
    sample_append_name(devnames, sizeof devnames, h.info[0].name);
    sample_append_name(devnames, sizeof devnames, h.info[1].name);
    printf("RESULT name=bench_exchange devices=%s size=%" PRIu64 " time_ms=%.3f rate=%.2fGB/s verified=%s\n", devnames,
           res.bytes, res.hplvk_us * 1e-3, res.hplvk_us > 0.0 ? (double)res.bytes / (res.hplvk_us * 1e3) : 0.0,
           verified ? "yes" : "no");
    return verified ? 0 : 1;
}
