/* The MPI transport (hpl_mpi_transport_make) on MPI_COMM_WORLD, no device:
 * rounds of random messages between random pairs of ranks (a rank with
 * itself included), each a random 1-3D box of elements of 1, 4, 8 or 12
 * bytes, contiguous or strided on either side; every rank derives the same
 * lists from one seed (rank 0's, printed; argv[1] gives it). Every received
 * byte is checked against the sender's pattern and every byte of the
 * receiver's array outside the box against what it held before. Also
 * allgather, messages the transport refuses, and hpl_mpi_context_create's
 * checks. */
#include <hplvk_mpi.h>

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, ranks;
static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "rank %d: %s:%d: ", me, __FILE__, __LINE__);                                               \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

static uint64_t rng_state;
static uint64_t next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t n)
{
    return next() % n;
}

typedef struct box {
    uint64_t whole[3], lo[3];
} box;

typedef struct msg {
    int src, dst, ndims;
    size_t elem;
    uint64_t extent[3];
    box s, r; /* the sender's array and box, the receiver's */
    unsigned char *sbuf, *rbuf;
} msg;

/* One side's array around a box of the given extents: sometimes the box
 * covers whole trailing dimensions (contiguous), else padded. */
static box random_box(int ndims, const uint64_t extent[3])
{
    box b;
    int from = (int)below((uint64_t)ndims + 1); /* dims >= from are whole when contiguous */
    bool contiguous = below(3) == 0;
    for (int d = 0; d < 3; d++) {
        if (d >= ndims) {
            b.whole[d] = 1;
            b.lo[d] = 0;
        } else if (contiguous && d > from) {
            b.whole[d] = extent[d];
            b.lo[d] = 0;
        } else {
            b.whole[d] = extent[d] + below(4);
            b.lo[d] = below(b.whole[d] - extent[d] + 1);
        }
    }
    return b;
}

static uint64_t elements(const box *b)
{
    return b->whole[0] * b->whole[1] * b->whole[2];
}

static unsigned char pattern(int id, uint64_t byte)
{
    return (unsigned char)(id * 131 + byte * 7 + (byte >> 8) * 3 + 1);
}
static unsigned char sentinel(uint64_t byte)
{
    return (unsigned char)(0xa5 ^ (byte * 31));
}

static hpl_transport_message side(const msg *m, bool send)
{
    hpl_transport_message t = {0};
    t.peer = send ? m->dst : m->src;
    t.send = send;
    t.base = send ? m->sbuf : m->rbuf;
    t.elem_size = m->elem;
    t.ndims = m->ndims;
    const box *b = send ? &m->s : &m->r;
    for (int d = 0; d < 3; d++) {
        t.whole[d] = d < m->ndims ? b->whole[d] : 1;
        t.lo[d] = d < m->ndims ? b->lo[d] : 0;
        t.extent[d] = d < m->ndims ? m->extent[d] : 1;
    }
    return t;
}

/* Whether box coordinates (i, j, k) are inside; byte offset of element. */
static uint64_t offset(const box *b, const msg *m, uint64_t i, uint64_t j, uint64_t k)
{
    (void)m;
    return ((i * b->whole[1] + j) * b->whole[2] + k);
}

static void check_received(const msg *m, int id)
{
    /* Map every element of the receiver's array to inside/outside the box. */
    uint64_t n = elements(&m->r);
    for (uint64_t e = 0; e < n; e++) {
        uint64_t k = e % m->r.whole[2], j = (e / m->r.whole[2]) % m->r.whole[1], i = e / (m->r.whole[2] * m->r.whole[1]);
        uint64_t c[3] = {i, j, k};
        bool inside = true;
        for (int d = 0; d < 3; d++)
            if (c[d] < m->r.lo[d] || c[d] >= m->r.lo[d] + (d < m->ndims ? m->extent[d] : 1))
                inside = false;
        for (size_t b = 0; b < m->elem; b++) {
            uint64_t at = e * m->elem + b;
            unsigned char want;
            if (inside) {
                uint64_t se = offset(&m->s, m, i - m->r.lo[0] + m->s.lo[0], j - m->r.lo[1] + m->s.lo[1],
                                     k - m->r.lo[2] + m->s.lo[2]);
                want = pattern(id, se * m->elem + b);
            } else {
                want = sentinel(at);
            }
            if (m->rbuf[at] != want) {
                CHECK(false, "message %d from rank %d (%dD, %zu B, extent %" PRIu64 "x%" PRIu64 "x%" PRIu64
                             "): element (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") byte %zu %s box: %u, expected %u",
                      id, m->src, m->ndims, m->elem, m->extent[0], m->extent[1], m->extent[2], i, j, k, b,
                      inside ? "inside" : "outside", m->rbuf[at], want);
                return;
            }
        }
    }
}

static void round_of_messages(hpl_transport *t, int round, uint64_t *bytes_moved)
{
    static const size_t elems[] = {1, 4, 8, 12};
    int count = 1 + (int)below(8);
    msg *ms = calloc((size_t)count, sizeof *ms);
    hpl_transport_message *list = calloc(2 * (size_t)count, sizeof *list);
    size_t n = 0;
    for (int id = 0; id < count; id++) {
        msg *m = &ms[id];
        m->src = (int)below((uint64_t)ranks);
        m->dst = (int)below((uint64_t)ranks);
        m->ndims = 1 + (int)below(3);
        m->elem = elems[below(4)];
        bool big = below(16) == 0;
        for (int d = 0; d < 3; d++)
            m->extent[d] = d < m->ndims ? 1 + below(d == m->ndims - 1 ? (big ? 5000 : 40) : 7) : 1;
        m->s = random_box(m->ndims, m->extent);
        m->r = random_box(m->ndims, m->extent);
        if (m->src == me) {
            uint64_t size = elements(&m->s) * m->elem;
            m->sbuf = malloc(size);
            for (uint64_t b = 0; b < size; b++)
                m->sbuf[b] = pattern(id, b);
        }
        if (m->dst == me) {
            uint64_t size = elements(&m->r) * m->elem;
            m->rbuf = malloc(size);
            for (uint64_t b = 0; b < size; b++)
                m->rbuf[b] = sentinel(b);
            *bytes_moved += m->extent[0] * m->extent[1] * m->extent[2] * m->elem;
        }
        /* Both sides list the messages in the order of their ids. */
        if (m->src == me)
            list[n++] = side(m, true);
        if (m->dst == me)
            list[n++] = side(m, false);
    }
    char error[512] = "";
    int rc = t->exchange(t->user, list, n, error, sizeof error);
    CHECK(rc == HPL_OK, "round %d: exchange: %s: %s", round, hpl_error_name(rc), error);
    for (int id = 0; id < count && rc == HPL_OK; id++)
        if (ms[id].dst == me)
            check_received(&ms[id], id);
    for (int id = 0; id < count; id++) {
        free(ms[id].sbuf);
        free(ms[id].rbuf);
    }
    free(ms);
    free(list);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);

    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("mpi_transport: %d ranks, seed %" PRIu64 " (rerun: mpi_transport %" PRIu64 ")\n", ranks, seed, seed);

    /* hpl_mpi_context_create: a null communicator. */
    hpl_context *ctx = NULL;
    int rc = hpl_mpi_context_create(NULL, MPI_COMM_NULL, &ctx);
    CHECK(rc == HPL_ERROR_INVALID_ARGUMENT && strstr(hpl_last_error(), "MPI_COMM_NULL"),
          "MPI_COMM_NULL: %s (%s)", hpl_error_name(rc), hpl_last_error());
    rc = hpl_mpi_transport_make(MPI_COMM_NULL, &(hpl_transport){0});
    CHECK(rc == HPL_ERROR_INVALID_ARGUMENT, "transport over MPI_COMM_NULL: %s", hpl_error_name(rc));

    hpl_transport t;
    rc = hpl_mpi_transport_make(MPI_COMM_WORLD, &t);
    CHECK(rc == HPL_OK, "hpl_mpi_transport_make: %s (%s)", hpl_error_name(rc), hpl_last_error());
    if (rc != HPL_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    CHECK(t.rank == me && t.ranks == ranks, "rank %d of %d", t.rank, t.ranks);
    CHECK(t.node_ranks >= 1 && t.node_ranks <= ranks && t.node_rank >= 0 && t.node_rank < t.node_ranks,
          "node rank %d of %d", t.node_rank, t.node_ranks);

    /* allgather: 12 bytes per rank, and none. */
    {
        uint32_t mine[3] = {(uint32_t)me, (uint32_t)me * 7u + 1u, (uint32_t)seed};
        uint32_t *all = calloc((size_t)ranks * 3, sizeof *all);
        char error[256] = "";
        rc = t.allgather(t.user, mine, sizeof mine, all, error, sizeof error);
        CHECK(rc == HPL_OK, "allgather: %s", error);
        for (int r = 0; r < ranks; r++)
            CHECK(all[3 * r] == (uint32_t)r && all[3 * r + 1] == (uint32_t)r * 7u + 1u && all[3 * r + 2] == (uint32_t)seed,
                  "allgather: rank %d's part", r);
        rc = t.allgather(t.user, mine, 0, all, error, sizeof error);
        CHECK(rc == HPL_OK, "allgather of 0 bytes: %s", error);
        free(all);
    }

    /* Refused before anything is posted (every rank alike): a peer that is
     * no rank, a box outside its array. */
    {
        char buf[64];
        hpl_transport_message bad = {.peer = ranks, .send = true, .base = buf, .elem_size = 4, .ndims = 1,
                                     .whole = {16, 1, 1}, .lo = {0, 0, 0}, .extent = {4, 1, 1}};
        char error[256] = "";
        rc = t.exchange(t.user, &bad, 1, error, sizeof error);
        CHECK(rc == HPL_ERROR_INVALID_ARGUMENT && strstr(error, "peer"), "peer out of range: %s: %s",
              hpl_error_name(rc), error);
        bad.peer = 0;
        bad.lo[0] = 14;
        rc = t.exchange(t.user, &bad, 1, error, sizeof error);
        CHECK(rc == HPL_ERROR_INVALID_ARGUMENT && strstr(error, "outside"), "box outside: %s: %s",
              hpl_error_name(rc), error);
        rc = t.exchange(t.user, NULL, 0, error, sizeof error);
        CHECK(rc == HPL_OK, "no messages: %s", error);
    }

    uint64_t moved = 0;
    rng_state = seed;
    for (int round = 0; round < 200; round++)
        round_of_messages(&t, round, &moved);
    t.destroy(t.user);

    int all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d: %" PRIu64 " bytes received, %d failures\n", me, moved, failures);
    if (me == 0)
        printf("mpi_transport: %s\n", all_failures ? "FAILED" : "ok");
    MPI_Finalize();
    return all_failures != 0;
}
