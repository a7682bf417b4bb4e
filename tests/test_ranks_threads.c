/* Contexts over ranks without MPI (hplvk_transport.h): three threads of one
 * process are the ranks, each with a context of its own made by
 * hpl_context_create_over on a transport of this test's (boxes copied
 * between the threads' host storage, a mailbox per pair of ranks). So the
 * span's code runs where the leak check and ThreadSanitizer see it whole
 * (Open MPI's own leaks keep the MPI tests out of the former): a row
 * stencil annotated over every rank's device, the same under a package
 * scheme, host reads and writes, a fill, an assignment and a reduction,
 * values checked against the host on every rank, and the bytes each rank
 * received. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"
#include "hplvk_transport.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANKS 3

/* ---- the transport: a mailbox per (sender, receiver) -------------------- */

typedef struct post {
    const hpl_transport_message *m; /* the sender's message */
    bool done;                      /* the receiver copied it */
} post;

#define POSTS 256

typedef struct world {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    post box[RANKS][RANKS][POSTS]; /* [src][dst]: a ring */
    unsigned head[RANKS][RANKS], tail[RANKS][RANKS];
    /* allgather: a generation barrier */
    const void *gather_in[RANKS];
    int gather_arrived;
    unsigned gather_generation;
    int destroyed;
} world;

static world w = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

typedef struct rank_user {
    int rank;
} rank_user;

/* Copies the box elements of m (the sender's) into the receiver's r. */
static void copy_box(const hpl_transport_message *s, const hpl_transport_message *r)
{
    for (uint64_t i = 0; i < s->extent[0]; i++)
        for (uint64_t j = 0; j < (s->ndims > 1 ? s->extent[1] : 1); j++)
            for (uint64_t k = 0; k < (s->ndims > 2 ? s->extent[2] : 1); k++) {
                uint64_t si = ((s->lo[0] + i) * (s->ndims > 1 ? s->whole[1] : 1) + (s->ndims > 1 ? s->lo[1] + j : 0)) *
                                  (s->ndims > 2 ? s->whole[2] : 1) +
                              (s->ndims > 2 ? s->lo[2] + k : 0);
                uint64_t ri = ((r->lo[0] + i) * (r->ndims > 1 ? r->whole[1] : 1) + (r->ndims > 1 ? r->lo[1] + j : 0)) *
                                  (r->ndims > 2 ? r->whole[2] : 1) +
                              (r->ndims > 2 ? r->lo[2] + k : 0);
                memcpy((char *)r->base + ri * r->elem_size, (const char *)s->base + si * s->elem_size, s->elem_size);
            }
}

static int exchange(void *user, const hpl_transport_message *m, size_t count, char *error, size_t error_size)
{
    int me = ((rank_user *)user)->rank;
    pthread_mutex_lock(&w.lock);
    unsigned mine[POSTS], posted = 0;
    for (size_t i = 0; i < count; i++) {
        if (!m[i].send)
            continue;
        unsigned *tail = &w.tail[me][m[i].peer];
        if (*tail - w.head[me][m[i].peer] >= POSTS || posted == POSTS) {
            pthread_mutex_unlock(&w.lock);
            snprintf(error, error_size, "test transport: more than %d messages in flight", POSTS);
            return HPL_ERROR_TRANSPORT;
        }
        w.box[me][m[i].peer][*tail % POSTS] = (post){.m = &m[i]};
        mine[posted++] = (unsigned)m[i].peer * 100000u + (*tail)++;
    }
    pthread_cond_broadcast(&w.changed);
    for (size_t i = 0; i < count; i++) {
        if (m[i].send)
            continue;
        int p = m[i].peer;
        while (w.head[p][me] == w.tail[p][me])
            pthread_cond_wait(&w.changed, &w.lock);
        post *x = &w.box[p][me][w.head[p][me] % POSTS];
        if (x->m->elem_size != m[i].elem_size || x->m->extent[0] != m[i].extent[0] ||
            x->m->extent[1] != m[i].extent[1] || x->m->extent[2] != m[i].extent[2]) {
            pthread_mutex_unlock(&w.lock);
            snprintf(error, error_size, "test transport: rank %d's box from rank %d does not match", me, p);
            return HPL_ERROR_TRANSPORT;
        }
        copy_box(x->m, &m[i]);
        x->done = true;
        w.head[p][me]++;
        pthread_cond_broadcast(&w.changed);
    }
    /* A sent box may be overwritten once its receiver copied it. */
    for (unsigned i = 0; i < posted; i++) {
        int p = (int)(mine[i] / 100000u);
        unsigned at = mine[i] % 100000u;
        while (w.head[me][p] <= at)
            pthread_cond_wait(&w.changed, &w.lock);
    }
    pthread_mutex_unlock(&w.lock);
    return HPL_OK;
}

static int allgather(void *user, const void *in, size_t bytes, void *out, char *error, size_t error_size)
{
    (void)error;
    (void)error_size;
    int me = ((rank_user *)user)->rank;
    pthread_mutex_lock(&w.lock);
    unsigned generation = w.gather_generation;
    w.gather_in[me] = in;
    if (++w.gather_arrived == RANKS) {
        w.gather_arrived = 0;
        w.gather_generation++;
        pthread_cond_broadcast(&w.changed);
    }
    while (w.gather_generation == generation)
        pthread_cond_wait(&w.changed, &w.lock);
    for (int r = 0; r < RANKS; r++)
        memcpy((char *)out + (size_t)r * bytes, w.gather_in[r], bytes);
    /* Nobody may change its input before every rank copied: a second
     * barrier. */
    generation = w.gather_generation;
    if (++w.gather_arrived == RANKS) {
        w.gather_arrived = 0;
        w.gather_generation++;
        pthread_cond_broadcast(&w.changed);
    }
    while (w.gather_generation == generation)
        pthread_cond_wait(&w.changed, &w.lock);
    pthread_mutex_unlock(&w.lock);
    return HPL_OK;
}

static void destroy(void *user)
{
    pthread_mutex_lock(&w.lock);
    w.destroyed++;
    pthread_mutex_unlock(&w.lock);
    free(user);
}

/* ---- the ranks ------------------------------------------------------------- */

static void *rank_main(void *arg)
{
    int me = (int)(intptr_t)arg;
    rank_user *user = malloc(sizeof *user);
    user->rank = me;
    hpl_transport t = {.rank = me, .ranks = RANKS, .node_rank = me, .node_ranks = RANKS, .user = user,
                       .exchange = exchange, .allgather = allgather, .destroy = destroy};
    hpl_context_desc desc = {.devices = th_devices("cpu")};
    th_prepare_desc(&desc);
    hpl_context *ctx = NULL;
    if (!CHECK_OK(hpl_context_create_over(&desc, &t, &ctx)))
        return NULL;
    CHECK(hpl_device_count(ctx) == RANKS, "rank %d: %d devices, want %d", me, hpl_device_count(ctx), RANKS);
    hpl_kernel k = th_kernel(ctx, rows_stencil_src());
    uint64_t rows = 31, cols = 9, n = rows * cols, row_bytes = cols * 4;
    uint32_t *want = malloc(n * 4), *next = malloc(n * 4), *got = malloc(n * 4);
    for (uint64_t i = 0; i < n; i++)
        want[i] = (uint32_t)(i * 2246822519u + 3u);
    hpl_array g[2] = {th_array(ctx, HPL_UINT32, rows, cols, 0), th_array(ctx, HPL_UINT32, rows, cols, 0)};
    CHECK_OK(hpl_array_write(ctx, g[0], want, n * 4));
    int steps = 6;
    for (int s = 0; s < steps; s++) {
        CHECK_OK(hpl_stats_reset(ctx));
        CHECK_OK(hpl_eval(ctx, k, &(hpl_launch){.halos_first = s % 2 == 1},
                          HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        rows_stencil_host(rows, cols, want, next);
        memcpy(want, next, n * 4);
        /* Rank r's rows are the r-th of three even parts: its neighbours
         * wrote the rows next to them in the step before. */
        uint64_t halo = s == 0 ? 0 : (me > 0) + (me < RANKS - 1);
        hpl_stats st = th_stats(ctx);
        CHECK(st.rank_received_bytes == halo * row_bytes, "rank %d step %d: received %llu bytes, want %llu", me, s,
              (unsigned long long)st.rank_received_bytes, (unsigned long long)(halo * row_bytes));
    }
    CHECK_OK(hpl_array_read(ctx, g[steps % 2], got, n * 4));
    EXPECT_U32(got, want, n, "stencil over thread ranks");
    /* A package scheme: packages within each rank, its rows by its speed
     * (the first eval checks it against one device alone, over every rank). */
    hpl_plan *plan = NULL;
    if (CHECK_OK(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = HPL_BALANCE_DYNAMIC, .package = 2}, &plan))) {
        for (int s = 0; s < 4; s++) {
            CHECK_OK(hpl_plan_eval(plan, k, NULL, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
            rows_stencil_host(rows, cols, want, next);
            memcpy(want, next, n * 4);
        }
        hpl_plan_destroy(plan);
    }
    CHECK_OK(hpl_array_read(ctx, g[0], got, n * 4));
    EXPECT_U32(got, want, n, "DYNAMIC plan over thread ranks");
    /* Fill a block on the last rank's device, copy it on the first's, sum. */
    hpl_array a = g[0], low, high;
    uint32_t five = 5;
    CHECK_OK(hpl_subarray(ctx, a, 2, (hpl_range[]){{0, 9}, {0, cols - 1}}, &low));
    CHECK_OK(hpl_subarray(ctx, a, 2, (hpl_range[]){{20, 29}, {0, cols - 1}}, &high));
    CHECK_OK(hpl_array_fill(ctx, high, &five, RANKS - 1));
    CHECK_OK(hpl_array_assign(ctx, low, high, 0));
    uint32_t *whole = malloc(n * 4);
    CHECK_OK(hpl_array_read(ctx, a, whole, n * 4));
    uint32_t want_sum = 0, sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = i / cols;
        uint32_t v = r < 10 || (r >= 20 && r < 30) ? 5u : whole[i];
        CHECK(whole[i] == v, "rank %d: element %llu is %u, want %u", me, (unsigned long long)i, whole[i], v);
        want_sum += v;
    }
    CHECK_OK(hpl_array_reduce(ctx, a, HPL_REDUCE_SUM, &sum));
    CHECK(sum == want_sum, "rank %d: sum %u, want %u", me, sum, want_sum);
    free(whole);
    free(want);
    free(next);
    free(got);
    return (void *)(intptr_t)th_finish(ctx);
}

int main(void)
{
    pthread_t threads[RANKS];
    for (int r = 0; r < RANKS; r++)
        pthread_create(&threads[r], NULL, rank_main, (void *)(intptr_t)r);
    int failed = 0;
    for (int r = 0; r < RANKS; r++) {
        void *result = NULL;
        pthread_join(threads[r], &result);
        failed |= result != NULL;
    }
    CHECK(w.destroyed == RANKS, "%d transports destroyed, want %d", w.destroyed, RANKS);
    return failed || th_failures() ? 1 : 0;
}
