/* The MPI transport (library hplvk_mpi): a context's messages as MPI
 * point-to-point messages and collectives on a duplicate of the
 * application's communicator, and hpl_mpi_context_create, which also
 * initialises and finalises MPI when the program did not. Above the public
 * API: calls only functions of hplvk.h and hplvk_transport.h. */
#define _POSIX_C_SOURCE 200809L
#include "hplvk_mpi.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tag of every point-to-point message: the duplicate communicator is
 * the library's alone, and MPI's non-overtaking rule matches the messages
 * between two ranks in the order both lists give them. */
#define MPI_TRANSPORT_TAG 0

typedef struct mpi_transport {
    MPI_Comm comm; /* the duplicate */
    bool counted;  /* a live context of hpl_mpi_context_create's */
} mpi_transport;

/* Contexts made by hpl_mpi_context_create not yet destroyed, and whether
 * that function initialised MPI (then the last one's destroy finalises). */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int live_contexts;
static bool library_initialised_mpi;

static int fail(int code, char *error, size_t error_size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(int code, char *error, size_t error_size, const char *fmt, ...)
{
    if (error && error_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(error, error_size, fmt, ap);
        va_end(ap);
    }
    return code;
}

static void mpi_text(int rc, char *text)
{
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, MPI_MAX_ERROR_STRING, "MPI error %d", rc);
}

/* "[lo0..hi0, lo1..hi1] of [w0, w1] x 4 B" into buf. */
static void box_text(const hpl_transport_message *m, char *buf, size_t size)
{
    int n = snprintf(buf, size, "[");
    for (int i = 0; i < m->ndims && i < 3 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%s%llu..%llu", i ? ", " : "", (unsigned long long)m->lo[i],
                      (unsigned long long)(m->lo[i] + m->extent[i] - 1));
    if ((size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, "] of [");
    for (int i = 0; i < m->ndims && i < 3 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%s%llu", i ? ", " : "", (unsigned long long)m->whole[i]);
    if ((size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "] x %zu B", m->elem_size);
}

static int check_message(const hpl_transport_message *m, size_t i, int ranks, char *error, size_t error_size)
{
    if (m->peer < 0 || m->peer >= ranks)
        return fail(HPL_ERROR_INVALID_ARGUMENT, error, error_size, "message %zu: peer %d is not a rank (0 .. %d)", i,
                    m->peer, ranks - 1);
    if (m->ndims < 1 || m->ndims > 3)
        return fail(HPL_ERROR_INVALID_ARGUMENT, error, error_size, "message %zu: ndims %d (1 to 3)", i, m->ndims);
    if (!m->base || m->elem_size == 0)
        return fail(HPL_ERROR_INVALID_ARGUMENT, error, error_size, "message %zu: %s", i,
                    m->base ? "elem_size is 0" : "base is NULL");
    if (m->elem_size > INT_MAX)
        return fail(HPL_ERROR_TOO_LARGE, error, error_size, "message %zu: elem_size %zu does not fit an MPI count", i,
                    m->elem_size);
    for (int d = 0; d < m->ndims; d++) {
        if (m->extent[d] < 1 || m->lo[d] >= m->whole[d] || m->extent[d] > m->whole[d] - m->lo[d])
            return fail(HPL_ERROR_INVALID_ARGUMENT, error, error_size,
                        "message %zu: dimension %d: lo %llu, extent %llu outside whole %llu", i, d,
                        (unsigned long long)m->lo[d], (unsigned long long)m->extent[d],
                        (unsigned long long)m->whole[d]);
    }
    return HPL_OK;
}

/* How a message is cut into MPI messages, from its extents and elem_size
 * alone (so that the sender and the receiver, whose boxes have the same
 * extents but other wholes, cut it alike): dimension `split` is the first
 * whose inner part (extent[split + 1 ..] x elem_size bytes) fits an int;
 * each piece is one index of every dimension before it, `chunk` indices of
 * it (at most INT_MAX bytes in all) and the whole extent of those after. */
typedef struct cut {
    int split;
    uint64_t inner; /* bytes of one index of dimension split */
    uint64_t chunk;
    uint64_t pieces;
} cut;

static int cut_message(const hpl_transport_message *m, cut *c)
{
    int n = m->ndims;
    uint64_t inner = m->elem_size;
    int split = n - 1;
    /* inner(split) grows as split goes down: the first that fits is the
     * smallest dimension whose inner part fits. */
    while (split > 0) {
        uint64_t next;
        if (__builtin_mul_overflow(inner, m->extent[split], &next) || next > INT_MAX)
            break;
        inner = next;
        split--;
    }
    c->split = split;
    c->inner = inner;
    c->chunk = (uint64_t)INT_MAX / inner;
    if (c->chunk > m->extent[split])
        c->chunk = m->extent[split];
    uint64_t pieces = (m->extent[split] + c->chunk - 1) / c->chunk;
    for (int d = 0; d < split; d++)
        if (__builtin_mul_overflow(pieces, m->extent[d], &pieces))
            return HPL_ERROR_TOO_LARGE;
    c->pieces = pieces;
    return HPL_OK;
}

/* Piece p of message m: the box (lo, ext) in the message's coordinates. */
static void piece_box(const hpl_transport_message *m, const cut *c, uint64_t p, uint64_t lo[3], uint64_t ext[3])
{
    uint64_t per_split = (m->extent[c->split] + c->chunk - 1) / c->chunk;
    uint64_t k = p % per_split;
    uint64_t outer = p / per_split;
    for (int d = m->ndims - 1; d >= 0; d--) {
        if (d > c->split) {
            lo[d] = m->lo[d];
            ext[d] = m->extent[d];
        } else if (d == c->split) {
            lo[d] = m->lo[d] + k * c->chunk;
            ext[d] = m->extent[d] - k * c->chunk < c->chunk ? m->extent[d] - k * c->chunk : c->chunk;
        } else {
            lo[d] = m->lo[d] + outer % m->extent[d];
            ext[d] = 1;
            outer /= m->extent[d];
        }
    }
}

/* Whether box (lo, ext) of m's array is one run of memory: extent 1 before
 * some dimension, whole dimensions after it. */
static bool box_contiguous(const hpl_transport_message *m, const uint64_t lo[3], const uint64_t ext[3])
{
    int d = 0;
    while (d < m->ndims - 1 && ext[d] == 1)
        d++;
    for (int e = d + 1; e < m->ndims; e++)
        if (lo[e] != 0 || ext[e] != m->whole[e])
            return false;
    return true;
}

/* Byte offset of element lo in m's array. */
static uint64_t offset_of(const hpl_transport_message *m, const uint64_t lo[3])
{
    uint64_t index = 0;
    for (int d = 0; d < m->ndims; d++)
        index = index * m->whole[d] + lo[d];
    return index * m->elem_size;
}

/* The subarray datatype of piece (lo, ext) from `at`: dimensions split ..
 * ndims - 1 (the dimensions before split have extent 1: `at` is the start
 * of the piece's first row of dimension split). */
static int piece_type(const hpl_transport_message *m, int split, const uint64_t lo[3], const uint64_t ext[3],
                      MPI_Datatype *type, char *what, size_t what_size)
{
    int sizes[3], subsizes[3], starts[3];
    int nd = m->ndims - split;
    for (int i = 0; i < nd; i++) {
        int d = split + i;
        uint64_t size = i == 0 ? ext[d] : m->whole[d];
        uint64_t start = i == 0 ? 0 : lo[d];
        if (size > INT_MAX) {
            snprintf(what, what_size, "dimension %d of size %llu does not fit an int (MPI_Type_create_subarray)", d,
                     (unsigned long long)size);
            return HPL_ERROR_TOO_LARGE;
        }
        sizes[i] = (int)size;
        subsizes[i] = (int)ext[d];
        starts[i] = (int)start;
    }
    MPI_Datatype elem;
    int rc = MPI_Type_contiguous((int)m->elem_size, MPI_BYTE, &elem);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_create_subarray(nd, sizes, subsizes, starts, MPI_ORDER_C, elem, type);
        MPI_Type_free(&elem);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_commit(type);
        if (rc != MPI_SUCCESS)
            MPI_Type_free(type);
    }
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        mpi_text(rc, text);
        snprintf(what, what_size, "making its datatype: %s", text);
        return HPL_ERROR_TRANSPORT;
    }
    return HPL_OK;
}

static int message_fail(int code, const hpl_transport_message *m, size_t i, const char *what, char *error,
                        size_t error_size)
{
    char box[256];
    box_text(m, box, sizeof box);
    return fail(code, error, error_size, "MPI transport: message %zu (%s rank %d, box %s): %s", i,
                m->send ? "send to" : "receive from", m->peer, box, what);
}

/* What mpi_post leaves in flight: a request per MPI message, the message of
 * each (a copy: the caller's list may go), and the first error a progress
 * test met. One allocation. */
typedef struct mpi_pending {
    size_t count;  /* messages */
    size_t posted; /* requests */
    hpl_transport_message *messages;
    MPI_Request *requests;
    size_t *owner; /* the message of each request */
    MPI_Status *statuses;
    int error; /* HPL_OK, or what a test in mpi_post met (text below) */
    char text[MPI_MAX_ERROR_STRING + 320]; /* the MPI text, " (box ", the box (256), ")" */
} mpi_pending;

static int mpi_post(void *user, const hpl_transport_message *messages, size_t count, void **out, char *error,
                    size_t error_size)
{
    mpi_transport *t = user;
    *out = NULL;
    int ranks;
    MPI_Comm_size(t->comm, &ranks);
    if (count && !messages)
        return fail(HPL_ERROR_INVALID_ARGUMENT, error, error_size, "MPI transport: %zu messages at NULL", count);

    /* Every message valid and cut before anything is posted. */
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        int rc = check_message(&messages[i], i, ranks, error, error_size);
        if (rc != HPL_OK)
            return rc;
        cut c;
        if (cut_message(&messages[i], &c) != HPL_OK || c.pieces > (uint64_t)INT_MAX - total)
            return message_fail(HPL_ERROR_TOO_LARGE, &messages[i], i, "more MPI messages than an int counts", error,
                                error_size);
        total += (size_t)c.pieces;
    }
    if (total == 0)
        return HPL_OK; /* nothing in flight: *out stays NULL */

    size_t bytes = sizeof(mpi_pending) + count * sizeof(hpl_transport_message) +
                   total * (sizeof(MPI_Request) + sizeof(size_t) + sizeof(MPI_Status));
    mpi_pending *p = malloc(bytes);
    if (!p)
        return fail(HPL_ERROR_OUT_OF_HOST_MEMORY, error, error_size,
                    "MPI transport: no host memory for the requests of %zu MPI messages", total);
    *p = (mpi_pending){.count = count, .error = HPL_OK};
    p->messages = (hpl_transport_message *)(p + 1);
    p->statuses = (MPI_Status *)(p->messages + count);
    p->requests = (MPI_Request *)(p->statuses + total);
    p->owner = (size_t *)(p->requests + total);
    memcpy(p->messages, messages, count * sizeof *messages);

    int result = HPL_OK;
    for (size_t i = 0; i < count && result == HPL_OK; i++) {
        const hpl_transport_message *m = &messages[i];
        cut c = {0};
        cut_message(m, &c);
        for (uint64_t k = 0; k < c.pieces; k++) {
            uint64_t lo[3] = {0, 0, 0}, ext[3] = {1, 1, 1};
            piece_box(m, &c, k, lo, ext);
            char what[MPI_MAX_ERROR_STRING + 128];
            MPI_Datatype type = MPI_DATATYPE_NULL;
            int mcount;
            char *at;
            if (box_contiguous(m, lo, ext)) {
                uint64_t n = m->elem_size;
                for (int d = 0; d < m->ndims; d++)
                    n *= ext[d];
                at = (char *)m->base + offset_of(m, lo);
                mcount = (int)n; /* <= INT_MAX: the cut */
            } else {
                /* Start of the piece's first row: lo in the dimensions up
                 * to split, 0 after (the subarray's starts give those). */
                uint64_t row[3] = {0, 0, 0};
                for (int d = 0; d <= c.split; d++)
                    row[d] = lo[d];
                at = (char *)m->base + offset_of(m, row);
                int rc = piece_type(m, c.split, lo, ext, &type, what, sizeof what);
                if (rc != HPL_OK) {
                    result = message_fail(rc, m, i, what, error, error_size);
                    break;
                }
                mcount = 1;
            }
            MPI_Datatype send_type = type == MPI_DATATYPE_NULL ? MPI_BYTE : type;
            MPI_Request *r = &p->requests[p->posted];
            int rc = m->send ? MPI_Isend(at, mcount, send_type, m->peer, MPI_TRANSPORT_TAG, t->comm, r)
                             : MPI_Irecv(at, mcount, send_type, m->peer, MPI_TRANSPORT_TAG, t->comm, r);
            /* A datatype freed while a message uses it goes once that
             * message completes (MPI_Type_free). */
            if (type != MPI_DATATYPE_NULL)
                MPI_Type_free(&type);
            if (rc != MPI_SUCCESS) {
                char text[MPI_MAX_ERROR_STRING];
                mpi_text(rc, text);
                snprintf(what, sizeof what, "%s: %s", m->send ? "MPI_Isend" : "MPI_Irecv", text);
                result = message_fail(HPL_ERROR_TRANSPORT, m, i, what, error, error_size);
                break;
            }
            p->owner[p->posted++] = i;
        }
    }

    if (result != HPL_OK) {
        /* Nothing may stay in flight into or out of the caller's memory. */
        for (size_t r = 0; r < p->posted; r++)
            MPI_Cancel(&p->requests[r]);
        /* Into p->statuses, not MPI_STATUSES_IGNORE: MPICH's header gives
         * MPI_Waitall an access attribute that GCC checks against it. */
        MPI_Waitall((int)p->posted, p->requests, p->statuses);
        free(p);
        return result;
    }
    /* A test drives MPI's progress (for this list and every one posted
     * before it): the caller's work before its wait overlaps what moves
     * meanwhile. Completed requests become MPI_REQUEST_NULL; an error is
     * kept for the wait. */
    int flag = 0;
    int rc = MPI_Testall((int)p->posted, p->requests, &flag, p->statuses);
    if (rc != MPI_SUCCESS) {
        size_t bad = p->posted;
        if (rc == MPI_ERR_IN_STATUS)
            for (size_t r = 0; r < p->posted && bad == p->posted; r++)
                if (p->statuses[r].MPI_ERROR != MPI_SUCCESS && p->statuses[r].MPI_ERROR != MPI_ERR_PENDING)
                    bad = r;
        char text[MPI_MAX_ERROR_STRING];
        mpi_text(bad < p->posted ? p->statuses[bad].MPI_ERROR : rc, text);
        p->error = HPL_ERROR_TRANSPORT;
        char box[256] = "";
        if (bad < p->posted)
            box_text(&p->messages[p->owner[bad]], box, sizeof box);
        snprintf(p->text, sizeof p->text, "MPI_Testall: %s%s%s", text, bad < p->posted ? " (box " : "",
                 bad < p->posted ? box : "");
        if (bad < p->posted)
            strncat(p->text, ")", sizeof p->text - strlen(p->text) - 1);
    }
    *out = p;
    return HPL_OK;
}

static int mpi_wait(void *user, void *pending, char *error, size_t error_size)
{
    (void)user;
    mpi_pending *p = pending;
    if (!p)
        return HPL_OK;
    int result = HPL_OK;
    int rc = MPI_Waitall((int)p->posted, p->requests, p->statuses);
    if (p->error != HPL_OK) {
        result = fail(p->error, error, error_size, "MPI transport: %zu messages with ranks starting with rank %d: %s",
                      p->count, p->messages[0].peer, p->text);
    } else if (rc != MPI_SUCCESS) {
        /* The first failed message (MPI_ERR_IN_STATUS), else the call's. */
        size_t bad = p->posted;
        if (rc == MPI_ERR_IN_STATUS)
            for (size_t r = 0; r < p->posted && bad == p->posted; r++)
                if (p->statuses[r].MPI_ERROR != MPI_SUCCESS && p->statuses[r].MPI_ERROR != MPI_ERR_PENDING)
                    bad = r;
        char text[MPI_MAX_ERROR_STRING], what[MPI_MAX_ERROR_STRING + 32];
        mpi_text(bad < p->posted ? p->statuses[bad].MPI_ERROR : rc, text);
        snprintf(what, sizeof what, "MPI_Waitall: %s", text);
        if (bad < p->posted)
            result = message_fail(HPL_ERROR_TRANSPORT, &p->messages[p->owner[bad]], p->owner[bad], what, error,
                                  error_size);
        else
            result = fail(HPL_ERROR_TRANSPORT, error, error_size,
                          "MPI transport: %zu messages with ranks starting with rank %d: %s", p->count,
                          p->messages[0].peer, what);
    }
    free(p);
    return result;
}

static int mpi_exchange(void *user, const hpl_transport_message *messages, size_t count, char *error,
                        size_t error_size)
{
    void *pending = NULL;
    int rc = mpi_post(user, messages, count, &pending, error, error_size);
    return rc == HPL_OK ? mpi_wait(user, pending, error, error_size) : rc;
}

static int mpi_allgather(void *user, const void *mine, size_t bytes, void *all, char *error, size_t error_size)
{
    mpi_transport *t = user;
    if (bytes > INT_MAX)
        return fail(HPL_ERROR_TOO_LARGE, error, error_size,
                    "MPI transport: allgather of %zu bytes per rank: more than an int counts (%d)", bytes, INT_MAX);
    int rc = MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, t->comm);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        mpi_text(rc, text);
        return fail(HPL_ERROR_TRANSPORT, error, error_size, "MPI transport: MPI_Allgather of %zu bytes per rank: %s",
                    bytes, text);
    }
    return HPL_OK;
}

static void mpi_destroy(void *user)
{
    mpi_transport *t = user;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free(&t->comm);
    bool counted = t->counted;
    free(t);
    if (!counted)
        return;
    pthread_mutex_lock(&init_lock);
    if (--live_contexts == 0 && library_initialised_mpi) {
        MPI_Finalized(&finalized);
        if (!finalized)
            MPI_Finalize();
        library_initialised_mpi = false;
    }
    pthread_mutex_unlock(&init_lock);
}

/* MPI is initialised: comm is an intracommunicator, else the error. */
static int check_comm(const char *fn, MPI_Comm comm)
{
    char msg[MPI_MAX_ERROR_STRING + 128];
    if (comm == MPI_COMM_NULL) {
        snprintf(msg, sizeof msg, "%s: comm is MPI_COMM_NULL", fn);
        return hpl_transport_fail(HPL_ERROR_INVALID_ARGUMENT, msg);
    }
    int inter = 0;
    int rc = MPI_Comm_test_inter(comm, &inter);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        mpi_text(rc, text);
        snprintf(msg, sizeof msg, "%s: MPI_Comm_test_inter: %s", fn, text);
        return hpl_transport_fail(HPL_ERROR_INVALID_ARGUMENT, msg);
    }
    if (inter) {
        snprintf(msg, sizeof msg, "%s: comm is an intercommunicator (an intracommunicator is needed)", fn);
        return hpl_transport_fail(HPL_ERROR_INVALID_ARGUMENT, msg);
    }
    return HPL_OK;
}

static int transport_make(const char *fn, MPI_Comm comm, hpl_transport *out)
{
    char msg[MPI_MAX_ERROR_STRING + 128], text[MPI_MAX_ERROR_STRING];
    if (!out) {
        snprintf(msg, sizeof msg, "%s: out is NULL", fn);
        return hpl_transport_fail(HPL_ERROR_INVALID_ARGUMENT, msg);
    }
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
        snprintf(msg, sizeof msg, "%s: MPI is %s", fn, finalized ? "already finalized" : "not initialised");
        return hpl_transport_fail(HPL_ERROR_INVALID_ARGUMENT, msg);
    }
    int rc = check_comm(fn, comm);
    if (rc != HPL_OK)
        return rc;
    mpi_transport *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(msg, sizeof msg, "%s: no host memory for the transport", fn);
        return hpl_transport_fail(HPL_ERROR_OUT_OF_HOST_MEMORY, msg);
    }
    const char *step = "MPI_Comm_dup";
    rc = MPI_Comm_dup(comm, &t->comm);
    if (rc == MPI_SUCCESS) {
        step = "MPI_Comm_set_errhandler";
        rc = MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
        if (rc != MPI_SUCCESS)
            MPI_Comm_free(&t->comm);
    }
    if (rc != MPI_SUCCESS) {
        free(t);
        mpi_text(rc, text);
        snprintf(msg, sizeof msg, "%s: %s: %s", fn, step, text);
        return hpl_transport_fail(HPL_ERROR_TRANSPORT, msg);
    }
    int rank = 0, ranks = 1, node_rank = 0, node_ranks = 1;
    MPI_Comm_rank(t->comm, &rank);
    MPI_Comm_size(t->comm, &ranks);
    /* Collective on every rank: a failure leaves node_rank 0 of 1
     * ("unknown") on that rank only. */
    MPI_Comm node;
    if (MPI_Comm_split_type(t->comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        if (MPI_Comm_rank(node, &node_rank) != MPI_SUCCESS || MPI_Comm_size(node, &node_ranks) != MPI_SUCCESS) {
            node_rank = 0;
            node_ranks = 1;
        }
        MPI_Comm_free(&node);
    }
    *out = (hpl_transport){
        .rank = rank,
        .ranks = ranks,
        .node_rank = node_rank,
        .node_ranks = node_ranks,
        .user = t,
        .exchange = mpi_exchange,
        .post = mpi_post,
        .wait = mpi_wait,
        .allgather = mpi_allgather,
        .destroy = mpi_destroy,
    };
    return HPL_OK;
}

int hpl_mpi_transport_make(MPI_Comm comm, hpl_transport *out)
{
    return transport_make("hpl_mpi_transport_make", comm, out);
}

int hpl_mpi_context_create(const hpl_context_desc *desc, MPI_Comm comm, hpl_context **out)
{
    static const char fn[] = "hpl_mpi_context_create";
    char msg[MPI_MAX_ERROR_STRING + 128];
    if (comm == MPI_COMM_NULL)
        return check_comm(fn, comm);
    if (!out) {
        snprintf(msg, sizeof msg, "%s: out is NULL", fn);
        return hpl_transport_fail(HPL_ERROR_INVALID_ARGUMENT, msg);
    }

    /* MPI initialised here when the program has not done it; a failure
     * below leaves it initialised (MPI cannot be initialised twice), and
     * the destroy of the last context made here finalises it. */
    pthread_mutex_lock(&init_lock);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    int rc = HPL_OK;
    if (finalized) {
        snprintf(msg, sizeof msg, "%s: MPI is already finalized", fn);
        rc = hpl_transport_fail(HPL_ERROR_INVALID_ARGUMENT, msg);
    } else if (!initialized) {
        int provided = MPI_THREAD_SINGLE;
        int mrc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (mrc != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING];
            mpi_text(mrc, text);
            snprintf(msg, sizeof msg, "%s: MPI_Init_thread: %s", fn, text);
            rc = hpl_transport_fail(HPL_ERROR_TRANSPORT, msg);
        } else {
            library_initialised_mpi = true;
        }
    }
    /* Any thread level will do: the library calls MPI only from the
     * thread that calls it (hplvk_mpi.h). */
    pthread_mutex_unlock(&init_lock);
    if (rc != HPL_OK)
        return rc;

    hpl_transport transport;
    rc = transport_make(fn, comm, &transport);
    if (rc != HPL_OK)
        return rc;
    mpi_transport *t = transport.user;
    rc = hpl_context_create_over(desc, &transport, out);
    if (rc != HPL_OK)
        return rc; /* the transport was destroyed, uncounted: MPI stays initialised */
    /* Counted once the context exists: its destroy (hpl_context_destroy)
     * finalises MPI when it is the last and MPI was initialised here. */
    pthread_mutex_lock(&init_lock);
    t->counted = true;
    live_contexts++;
    pthread_mutex_unlock(&init_lock);
    return HPL_OK;
}
