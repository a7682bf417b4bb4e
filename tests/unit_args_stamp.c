/* The argument chunks of a device (memory.c) under threads: an eval's
 * ghost-write check (validation, hplvk.h 7b) waits with the context lock
 * released, and other threads' evals allocate argument blocks meanwhile.
 * A chunk is reused once its last_value is done, so that value must cover
 * every block in it, whichever eval stamps last, and no eval may keep a
 * pointer into d->chunks across the wait (a new chunk moves the array).
 *
 * Device 0 is held (tests/hold.h), so nothing completes there while:
 *   1. thread A runs a split stencil over devices 0 and 1 (its part on
 *      device 0 writes a halo: a ghost check, whose wait lasts the hold);
 *   2. the main thread, once A waits, evals on device 0: a few (blocks in
 *      A's chunk, with later timeline values), then, in a second round,
 *      until device 0 makes a new chunk.
 * After the hold, the chunk's last_value is still at least the main
 * thread's latest (A must not lower it), and every result is right. In
 * the ASan build, a stamp through a stale pointer is a use after free. */
#define _POSIX_C_SOURCE 200809L
#include "hold.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define N 1024
#define WAIT_S 120

static const char *step_src = /* x = x * 3 + k */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; uint k; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = hpl_at(x, i) * 3u + k; }\n";

typedef struct job {
    hpl_context *ctx;
    hpl_kernel kernel;
    hpl_array a, b;
} job;

static void *stencil_run(void *arg)
{
    job *j = arg;
    CHECK_OK(hpl_eval(j->ctx, j->kernel, &(hpl_launch){.devices = {0, 1}, .device_count = 2},
                      HPL_ARGS(hpl_part1(j->a, 1), hpl_part1(j->b, 1))));
    return NULL;
}

static uint64_t operations(hpl_context *ctx, int device)
{
    hpl_stats s = {0};
    CHECK_OK(hpl_stats_get(ctx, &s));
    return s.device[device].operations;
}

static void fill(hpl_context *ctx, hpl_array x, uint32_t mul)
{
    uint32_t *p = th_access(ctx, x, HPL_WRITE);
    for (uint32_t i = 0; p && i < N; i++)
        p[i] = i * mul;
}

/* One round; `grow`: the main thread evals until device 0 makes a new
 * argument chunk. */
static void round_run(hpl_context *ctx, hpl_kernel stencil, hpl_kernel step, hpl_array held, bool grow)
{
    hpl__device *d0 = &ctx->devices[0];
    job j = {.ctx = ctx, .kernel = stencil, .a = th_array(ctx, HPL_UINT32, N, 0, 0),
             .b = th_array(ctx, HPL_UINT32, N, 0, 0)};
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    fill(ctx, j.a, 5);
    fill(ctx, x, 1);
    /* Everything on its device first: the evals below record kernels only. */
    CHECK_OK(hpl_eval(ctx, step, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(x), hpl_u32(0))));
    CHECK_OK(hpl_finish(ctx));
    hold h;
    hold_begin(&h, ctx, 0, held);
    uint64_t before = operations(ctx, 0);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, stencil_run, &j) == 0, "pthread_create");
    /* hpl_stats_get gets the context once A lets go of it: in its ghost
     * check's wait, once its part on device 0 is recorded. */
    bool waiting = false;
    for (int ms = 0; !waiting && ms < WAIT_S * 1000; ms++) {
        waiting = operations(ctx, 0) > before;
        if (!waiting)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    CHECK(waiting, "the split stencil's part on device 0 was not recorded within %d s", WAIT_S);
    /* A's block is in the current chunk: the last one allocated. */
    uint32_t c = d0->chunk_current, chunks = d0->chunk_count, evals = 0;
    uint32_t ref[N];
    for (uint32_t i = 0; i < N; i++)
        ref[i] = i * 3u; /* the eval with k = 0 above */
    while (evals < 3 || (grow && d0->chunk_count == chunks && evals < 100000)) {
        uint32_t k = evals + 1;
        CHECK_OK(hpl_eval(ctx, step, &(hpl_launch){.device = 0}, HPL_ARGS(hpl_arr(x), hpl_u32(k))));
        for (uint32_t i = 0; i < N; i++)
            ref[i] = ref[i] * 3u + k;
        evals++;
    }
    if (grow)
        CHECK(d0->chunk_count > chunks, "%u evals made no new argument chunk", evals);
    /* Stamped by the main thread's evals in A's chunk (all of them but
     * those past a new chunk). */
    uint64_t stamped = d0->chunks[c].last_value;
    hold_release(&h);
    pthread_join(thread, NULL);
    CHECK(d0->chunks[c].last_value >= stamped,
          "argument chunk %u: last_value %" PRIu64 " after the split eval, below %" PRIu64
          " of the evals that allocated in it while it waited",
          c, d0->chunks[c].last_value, stamped);
    hold_end(&h);
    const uint32_t *pb = th_access(ctx, j.b, HPL_READ), *px = th_access(ctx, x, HPL_READ);
    uint64_t bad_b = 0, bad_x = 0;
    for (uint32_t i = 0; pb && px && i < N; i++) {
        uint32_t a = i * 5u, l = i ? (i - 1) * 5u : 0;
        bad_b += pb[i] != a + l * 2u + 1u;
        bad_x += px[i] != ref[i];
    }
    CHECK(pb && px && bad_b == 0 && bad_x == 0, "%s: %" PRIu64 " stencil and %" PRIu64 " chain elements wrong",
          grow ? "with a new chunk" : "in one chunk", bad_b, bad_x);
    printf("%s: %u evals on device 0 while the split eval waited\n", grow ? "new chunk" : "same chunk", evals);
    CHECK_OK(hpl_array_destroy(ctx, j.a));
    CHECK_OK(hpl_array_destroy(ctx, j.b));
    CHECK_OK(hpl_array_destroy(ctx, x));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    hpl_context *ctx = th_context("cpu:2");
    hpl_kernel stencil = th_kernel(ctx, stencil_left_src()), step = th_kernel(ctx, step_src);
    hpl_array held = th_array(ctx, HPL_UINT32, 64, 0, 0);
    CHECK_OK(hpl_array_prefetch(ctx, held, 0));
    round_run(ctx, stencil, step, held, false);
    round_run(ctx, stencil, step, held, true);
    CHECK_OK(hpl_array_destroy(ctx, held));
    return th_finish(ctx);
}
