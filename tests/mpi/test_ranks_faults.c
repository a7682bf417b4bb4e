/* Contexts over ranks when something fails (hplvk_transport.h,
 * hplvk_mpi.h), run under mpiexec at 2 and 3 ranks: a rank whose device
 * list cannot be opened makes hpl_mpi_context_create fail on every rank,
 * without a hang, that rank with its own error naming the bad entry and
 * every other rank with the same code and a message naming the failing
 * rank, and a good context is made and used (an annotated eval and a read
 * matching the host) afterwards; hpl_context_create_over rejects a
 * malformed transport (a NULL function, ranks 0 or 17, rank or node_rank
 * out of range, Vulkan interop) with an error naming the field and calls
 * the transport's destroy exactly once, and a join record of bytes that
 * are no record from another rank with an error naming that rank; a transport whose exchange fails
 * (on every rank at the same call) makes the eval and the read that needed
 * it fail with HPL_ERROR_TRANSPORT and the transport's own message, and the
 * context is still destroyed cleanly, its transport destroyed once. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"
#include "hplvk_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, ranks;

/* ---- a. a rank whose devices cannot be opened -------------------------- */

/* Every rank calls hpl_mpi_context_create; rank `bad` with device list
 * `spec`, the others with their own (HPLVK_DEVICES). The bad rank's error
 * contains `says`, and so does every other rank's after the rank's name. */
static void bad_devices_on(int bad, const char *spec, const char *says)
{
    hpl_context_desc desc = {0};
    th_prepare_desc(&desc);
    if (rank == bad)
        desc.devices = spec;
    hpl_context *ctx = (hpl_context *)&desc; /* must stay untouched */
    hpl_context *before = ctx;
    int rc = hpl_mpi_context_create(&desc, MPI_COMM_WORLD, &ctx);
    CHECK(ctx == before, "rank %d: *out changed by a failed hpl_mpi_context_create", rank);
    if (rank == bad) {
        CHECK_FAILS_ANY(rc, ((int[]){HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_UNKNOWN_DEVICE}), 2, says);
        CHECK(!th_contains(hpl_last_error(), "could not make its part"),
              "rank %d (the bad one) was told of another rank: %s", rank, hpl_last_error());
    } else {
        char want[128];
        snprintf(want, sizeof want, "rank %d of %d could not make its part of the context", bad, ranks);
        CHECK_FAILS_ANY(rc, ((int[]){HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_UNKNOWN_DEVICE}), 2, want);
        CHECK_MSG(says); /* and the bad rank's own reason */
    }
    /* Every rank failed with the same code. */
    int lo = 0, hi = 0;
    MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi && lo != HPL_OK, "ranks failed with codes %d .. %d", lo, hi);
}

/* An annotated stencil step over every rank's devices and a read of the
 * result, against the host. */
static void use_context(hpl_context *ctx, const char *what)
{
    uint64_t rows = 23, cols = 7, n = rows * cols;
    uint32_t in[23 * 7], want[23 * 7], got[23 * 7];
    for (uint64_t i = 0; i < n; i++)
        in[i] = (uint32_t)(i * 2246822519u + 3u);
    hpl_kernel k = th_kernel(ctx, rows_stencil_src());
    hpl_array src = th_array(ctx, HPL_UINT32, rows, cols, 0), dst = th_array(ctx, HPL_UINT32, rows, cols, 0);
    CHECK_OK(hpl_array_write(ctx, src, in, sizeof in));
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){0}, HPL_ARGS(hpl_part1(src, 1), hpl_part1(dst, 1))));
    CHECK_OK(hpl_array_read(ctx, dst, got, sizeof got));
    rows_stencil_host(rows, cols, in, want);
    EXPECT_U32(got, want, n, what);
    CHECK_OK(hpl_array_destroy(ctx, src));
    CHECK_OK(hpl_array_destroy(ctx, dst));
}

static void run_bad_devices(void)
{
    bad_devices_on(1, "nosuchdevice", "nosuchdevice");
    /* (This message names the limit, not the entry.) */
    bad_devices_on(ranks - 1, "cpu:99", "more than 16 logical devices");
    /* A good context afterwards, on every rank, used. */
    hpl_context_desc desc = {0};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    if (!CHECK_OK(hpl_mpi_context_create(&desc, MPI_COMM_WORLD, &ctx)))
        return;
    int devices = hpl_device_count(ctx), total = 0, mine = th_stats(ctx).device_count;
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(devices == total && devices >= ranks, "after the failures: %d devices, the ranks opened %d", devices, total);
    use_context(ctx, "stencil after failed creations");
    hpl_context_destroy(ctx);
}

/* ---- b. malformed transports ------------------------------------------- */

static int destroyed;

static int fake_exchange(void *user, const hpl_transport_message *m, size_t count, char *error, size_t size)
{
    (void)user, (void)m, (void)count;
    snprintf(error, size, "fake transport: no exchange");
    return HPL_ERROR_TRANSPORT;
}

static int fake_allgather(void *user, const void *mine, size_t bytes, void *all, char *error, size_t size)
{
    (void)user, (void)mine, (void)bytes, (void)all;
    snprintf(error, size, "fake transport: no allgather");
    return HPL_ERROR_TRANSPORT;
}

static int fake_wait(void *user, void *pending, char *error, size_t size)
{
    (void)user, (void)pending, (void)error, (void)size;
    return HPL_OK;
}

static void fake_destroy(void *user)
{
    (void)user;
    destroyed++;
}

/* An allgather whose other rank sends bytes that are no record: 0xff
 * throughout (the join must fail naming it, nothing read past them). */
static int garbage_allgather(void *user, const void *mine, size_t bytes, void *all, char *error, size_t size)
{
    (void)user, (void)error, (void)size;
    memcpy(all, mine, bytes);
    memset((char *)all + bytes, 0x7f, bytes);
    return HPL_OK;
}

static const hpl_transport fake = {.rank = 0, .ranks = 2, .node_rank = 0, .node_ranks = 1,
                                   .exchange = fake_exchange, .allgather = fake_allgather, .destroy = fake_destroy};

/* hpl_context_create_over(desc, t) fails with code, naming `field`; t's
 * destroy (when not NULL) is called once. */
static void rejects(const char *what, const hpl_context_desc *desc, hpl_transport t, int code, const char *field)
{
    destroyed = 0;
    hpl_context *ctx = NULL;
    int rc = hpl_context_create_over(desc, &t, &ctx);
    if (!CHECK_FAILS(rc, code, field))
        fprintf(stderr, "rank %d: %s\n", rank, what);
    CHECK(ctx == NULL, "%s: *out set", what);
    int want = t.destroy ? 1 : 0;
    CHECK(destroyed == want, "%s: the transport's destroy called %d times, want %d", what, destroyed, want);
}

static void run_malformed(void)
{
    hpl_context_desc desc = {0};
    th_prepare_desc(&desc);
    hpl_transport t;
    t = fake, t.exchange = NULL;
    rejects("exchange NULL", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.exchange is NULL");
    t = fake, t.wait = fake_wait;
    rejects("wait without post", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.post is NULL but transport.wait");
    t = fake, t.allgather = NULL;
    rejects("allgather NULL", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.allgather is NULL");
    t = fake, t.destroy = NULL;
    rejects("destroy NULL", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.destroy is NULL");
    /* ranks 0 is malformed; 17 is more ranks than a context spans. */
    t = fake, t.ranks = 0;
    rejects("ranks 0", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.ranks is 0");
    destroyed = 0;
    CHECK_FAILS(hpl_context_create_over(&desc, &fake, NULL), HPL_ERROR_INVALID_ARGUMENT, "out is NULL");
    CHECK(destroyed == 1, "out NULL: the transport's destroy called %d times, want 1", destroyed);
    t = fake, t.ranks = 17, t.rank = 3;
    rejects("ranks 17", &desc, t, HPL_ERROR_UNSUPPORTED, "transport.ranks is 17");
    t = fake, t.rank = 2;
    rejects("rank == ranks", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.rank is 2");
    t = fake, t.rank = -1;
    rejects("rank -1", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.rank is -1");
    t = fake, t.node_rank = 1, t.node_ranks = 1;
    rejects("node_rank == node_ranks", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.node_rank 1");
    t = fake, t.node_rank = -1, t.node_ranks = 2;
    rejects("node_rank -1", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "transport.node_rank -1");
    t = fake, t.node_ranks = -1;
    rejects("node_ranks -1", &desc, t, HPL_ERROR_INVALID_ARGUMENT, "node_ranks -1");
    /* Vulkan interop does not span ranks. */
    static char not_a_desc[64];
    hpl_context_desc vk = desc;
    vk.vulkan = (const struct hpl_vulkan_desc *)(void *)not_a_desc;
    rejects("vulkan", &vk, fake, HPL_ERROR_UNSUPPORTED, "hpl_context_desc.vulkan");
    /* No transport at all. */
    hpl_context *ctx = NULL;
    CHECK_FAILS(hpl_context_create_over(&desc, NULL, &ctx), HPL_ERROR_INVALID_ARGUMENT, "transport is NULL");
    CHECK(ctx == NULL, "NULL transport: *out set");
    /* A well-formed transport whose allgather fails: the context is not
     * made, the transport's error is told, and it is destroyed once. */
    t = fake, t.ranks = 1;
    rejects("allgather fails", &desc, t, HPL_ERROR_TRANSPORT, "fake transport: no allgather");
    /* Another rank's record is untrusted input. */
    t = fake, t.allgather = garbage_allgather;
    rejects("garbage record", &desc, t, HPL_ERROR_TRANSPORT, "rank 1 of 2 sent a malformed record");
}

/* ---- c. an exchange that fails ----------------------------------------- */

/* The MPI transport, its exchange refused from call fail_at on (the same
 * call on every rank: each rank's exchange calls come in the same order). */
typedef struct flaky {
    hpl_transport real;
    int calls, fail_at, destroyed;
} flaky;

static int flaky_exchange(void *user, const hpl_transport_message *m, size_t count, char *error, size_t size)
{
    flaky *f = user;
    if (++f->calls >= f->fail_at) {
        snprintf(error, size, "flaky transport refuses exchange %d", f->calls);
        return HPL_ERROR_TRANSPORT;
    }
    return f->real.exchange(f->real.user, m, count, error, size);
}

static int flaky_allgather(void *user, const void *mine, size_t bytes, void *all, char *error, size_t size)
{
    flaky *f = user;
    return f->real.allgather(f->real.user, mine, bytes, all, error, size);
}

static void flaky_destroy(void *user)
{
    flaky *f = user;
    f->destroyed++;
    f->real.destroy(f->real.user);
}

static void run_failing_exchange(void)
{
    flaky f = {.fail_at = 1 << 30};
    if (!CHECK_OK(hpl_mpi_transport_make(MPI_COMM_WORLD, &f.real)))
        return;
    hpl_transport t = f.real;
    t.user = &f;
    t.exchange = flaky_exchange;
    t.allgather = flaky_allgather;
    t.destroy = flaky_destroy;
    /* Exchange alone (a transport without post and wait is accepted; the
     * real ones would be called with the wrapper's user). */
    t.post = NULL;
    t.wait = NULL;
    hpl_context_desc desc = {0};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    if (!CHECK_OK(hpl_context_create_over(&desc, &t, &ctx)))
        return;
    CHECK(hpl_device_count(ctx) >= ranks, "%d devices over %d ranks", hpl_device_count(ctx), ranks);
    /* It works while the exchange does. */
    use_context(ctx, "stencil over the flaky transport");
    CHECK(f.calls > 0, "no exchange was called");

    uint64_t rows = 19, cols = 5, n = rows * cols;
    uint32_t in[19 * 5], got[19 * 5];
    for (uint64_t i = 0; i < n; i++)
        in[i] = (uint32_t)(i * 7u + 1u);
    hpl_kernel k = th_kernel(ctx, rows_stencil_src());
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], in, sizeof in));
    CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){0}, HPL_ARGS(hpl_part1(g[0], 1), hpl_part1(g[1], 1))));
    /* From the next exchange on, every rank's is refused: the eval that
     * needs the halos the first step wrote fails, and so does the read
     * that needs the other ranks' rows. */
    f.fail_at = f.calls + 1;
    CHECK_FAILS(hpl_eval(ctx, k, &(hpl_launch){0}, HPL_ARGS(hpl_part1(g[1], 1), hpl_part1(g[0], 1))),
                HPL_ERROR_TRANSPORT, "flaky transport refuses exchange");
    CHECK_FAILS(hpl_array_read(ctx, g[1], got, sizeof got), HPL_ERROR_TRANSPORT, "flaky transport refuses exchange");
    CHECK(f.calls == f.fail_at + 1, "exchange called %d times, the first refused was call %d", f.calls, f.fail_at);
    /* The arrays and the context go cleanly, the transport once. */
    CHECK_OK(hpl_array_destroy(ctx, g[0]));
    CHECK_OK(hpl_array_destroy(ctx, g[1]));
    CHECK(f.destroyed == 0, "the transport was destroyed %d times before the context", f.destroyed);
    hpl_context_destroy(ctx);
    CHECK(f.destroyed == 1, "the transport was destroyed %d times with the context", f.destroyed);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    run_malformed();
    if (ranks >= 2)
        run_bad_devices();
    run_failing_exchange();
    /* A malformed HPLVK_RANK_CHUNK (on every rank) fails the creation. */
    setenv("HPLVK_RANK_CHUNK", "12Q", 1);
    hpl_context *bad = NULL;
    CHECK_FAILS(hpl_mpi_context_create(NULL, MPI_COMM_WORLD, &bad), HPL_ERROR_INVALID_ARGUMENT, "HPLVK_RANK_CHUNK");
    CHECK(bad == NULL, "HPLVK_RANK_CHUNK=12Q: *out set");
    unsetenv("HPLVK_RANK_CHUNK");
    int failed = th_finish(NULL);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_ranks_faults: %d ranks: %s\n", ranks, any ? "FAILED" : "ok");
    MPI_Finalize();
    return failed;
}
