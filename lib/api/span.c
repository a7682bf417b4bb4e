/* Contexts over ranks (hplvk_transport.h, hplvk.h chapter 10): joining the
 * ranks into one context, and what an eval or a host access moves between
 * them. Every rank keeps the same state of where each array is valid across
 * ranks (rank_state.h) and changes it by the same collective calls, so each
 * derives the same moves: a box goes from the host storage of the rank that
 * holds it to the host storage of the rank that lacks it, and that rank's
 * own coherence state takes it from there like a host write. */
#include "api.h"

#include "config.h"
#include "events.h"

#include "launch.h"
#include "partition.h"
#include "rank_state.h"
#include "subkernel.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static int span_eval(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs,
                     const hpl__part *given);
static int span_array_init(hpl_context *ctx, hpl__array *root, int rc);
static void span_array_free(hpl__array *root);
static int span_host_access(hpl_context *ctx, hpl__array *a, hpl_access mode);
static int span_host_wrote(hpl_context *ctx, hpl__array *a);
static void span_free(hpl_context *ctx);

/* ---- joining ----------------------------------------------------------- */

/* Bytes per message of a large move between ranks (HPLVK_RANK_CHUNK
 * overrides; 0: whole): with a transport that posts without waiting
 * (hplvk_transport.h: post, wait), a box larger than this goes as row
 * groups of about this size, each sent as soon as this rank's host storage
 * holds it, so that the download of the next one overlaps its message. */
#define RANK_CHUNK (1ull << 20)

/* What each rank tells the others when the context is made. */
typedef struct join_record {
    int32_t status; /* HPL_OK, or why this rank's context failed */
    int32_t device_count;
    char message[512];
    hpl_device_info info[HPL__MAX_DEVICES];
    uint64_t clock_ns; /* its host clock (CLOCK_MONOTONIC) */
} join_record;

static int transport_check(const hpl_transport *t)
{
    if (!t->exchange || !t->allgather || !t->destroy)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "transport.%s is NULL",
                         !t->exchange ? "exchange" : !t->allgather ? "allgather" : "destroy");
    if (!t->post != !t->wait)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "transport.%s is NULL but transport.%s is not (both or neither)",
                         !t->post ? "post" : "wait", !t->post ? "wait" : "post");
    if (t->ranks < 1)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "transport.ranks is %d: a context spans 1 rank or more",
                         t->ranks);
    if (t->ranks > HPL__MAX_RANKS)
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "transport.ranks is %d: a context spans at most %d ranks", t->ranks,
                         HPL__MAX_RANKS);
    if (t->rank < 0 || t->rank >= t->ranks)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "transport.rank is %d, outside 0 .. %d", t->rank, t->ranks - 1);
    if (t->node_ranks < 0 || (t->node_ranks > 0 && (t->node_rank < 0 || t->node_rank >= t->node_ranks)))
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "transport.node_rank %d of node_ranks %d", t->node_rank,
                         t->node_ranks);
    return HPL_OK;
}

/* Tells every rank how this one's context went (rc) and what devices it
 * opened; on success every rank's ctx->span is the same table. */
static int join(hpl_context *ctx, const hpl_transport *t, int rc)
{
    join_record *all = hpl__calloc((size_t)t->ranks + 1, sizeof *all);
    if (!all)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    join_record *mine = &all[t->ranks];
    mine->status = rc;
    mine->clock_ns = hpl__now_ns();
    if (rc != HPL_OK)
        snprintf(mine->message, sizeof mine->message, "%s", hpl_last_error());
    else {
        mine->device_count = ctx->device_count;
        for (int i = 0; i < ctx->device_count; i++) {
            mine->info[i] = ctx->devices[i].info;
            mine->info[i].rank = t->rank;
        }
    }
    char error[512] = "";
    int sent = t->allgather(t->user, mine, sizeof *mine, all, error, sizeof error);
    if (sent != HPL_OK) {
        hpl__free(all);
        return rc != HPL_OK ? rc : hpl__fail(sent, "the ranks could not exchange their devices: %s", error);
    }
    /* The other ranks' records are untrusted input: strings end within
     * them, counts are in range. */
    int total = 0, failed = -1, malformed = -1;
    for (int r = 0; r < t->ranks; r++) {
        all[r].message[sizeof all[r].message - 1] = '\0';
        bool counted = all[r].device_count >= 0 && all[r].device_count <= HPL__MAX_DEVICES;
        for (int i = 0; counted && i < all[r].device_count; i++)
            all[r].info[i].name[sizeof all[r].info[i].name - 1] = '\0';
        bool known = strcmp(hpl_error_name(all[r].status), "HPL_UNKNOWN") != 0;
        if ((!known || (!counted && all[r].status == HPL_OK)) && malformed < 0)
            malformed = r;
        if (all[r].status != HPL_OK && failed < 0)
            failed = r;
        total += all[r].status == HPL_OK && counted ? all[r].device_count : 0;
    }
    if (rc != HPL_OK) {
        /* This rank's own error stands (hpl_last_error is still its own). */
    } else if (malformed >= 0) {
        rc = hpl__fail(HPL_ERROR_TRANSPORT,
                       "rank %d of %d sent a malformed record when joining: status %d, %d devices (0 to %d can be)",
                       malformed, t->ranks, (int)all[malformed].status, (int)all[malformed].device_count,
                       HPL__MAX_DEVICES);
    } else if (failed >= 0) {
        rc = hpl__fail(all[failed].status, "rank %d of %d could not make its part of the context: %s", failed,
                       t->ranks, all[failed].message);
    } else if (total > HPL__MAX_DEVICES) {
        rc = hpl__fail(HPL_ERROR_UNSUPPORTED, "the %d ranks open %d devices in all; a context spans at most %d", t->ranks,
                       total, HPL__MAX_DEVICES);
    } else if (!(ctx->span = hpl__calloc(1, sizeof *ctx->span))) {
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    } else {
        hpl__span *s = ctx->span;
        *s = (hpl__span){.transport = *t, .eval = span_eval, .array_init = span_array_init,
                         .array_free = span_array_free, .host_access = span_host_access,
                         .host_wrote = span_host_wrote, .free = span_free};
        s->rank = t->rank;
        s->ranks = t->ranks;
        s->origin_ns = mine->clock_ns;
        for (int r = 0; r < t->ranks; r++) {
            s->origin_ns = HPL__MIN(s->origin_ns, all[r].clock_ns);
            if (r == t->rank)
                s->first = s->device_count;
            for (int i = 0; i < all[r].device_count; i++) {
                s->owner[s->device_count] = r;
                s->info[s->device_count++] = all[r].info[i];
            }
        }
    }
    hpl__free(all);
    return rc;
}

int hpl_context_create_over(const hpl_context_desc *desc, const hpl_transport *transport, hpl_context **out)
{
    if (!transport)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_context_create_over: transport is NULL");
    int rc = out ? transport_check(transport)
                 : hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "out is NULL");
    if (rc == HPL_OK && desc && desc->vulkan)
        rc = hpl__fail(HPL_ERROR_UNSUPPORTED, "hpl_context_desc.vulkan: Vulkan interop does not span ranks");
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_context_create_over");
        if (transport->destroy)
            transport->destroy(transport->user);
        return rc;
    }
    hpl_context *ctx = NULL;
    rc = hpl__context_make(desc, transport, &ctx);
    uint64_t chunk = RANK_CHUNK;
    const char *env = getenv("HPLVK_RANK_CHUNK");
    if (rc == HPL_OK && env && *env)
        rc = hpl__parse_size("HPLVK_RANK_CHUNK", env, &chunk); /* every rank learns of a failure (join) */
    rc = join(ctx, transport, rc);
    if (rc == HPL_OK) {
        ctx->span->chunk = chunk;
        hpl__trace_from_env(ctx);
    }
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_context_create_over");
        hpl_context_destroy(ctx); /* no span yet: the transport is not its */
        transport->destroy(transport->user);
        return rc;
    }
    *out = ctx;
    return HPL_OK;
}

static void span_free(hpl_context *ctx)
{
    ctx->span->transport.destroy(ctx->span->transport.user);
    hpl__free(ctx->span);
    ctx->span = NULL;
}

int hpl__span_unsupported(const hpl_context *ctx, const char *what)
{
    return hpl__fail(HPL_ERROR_UNSUPPORTED, "%s does not span ranks yet (the context spans %d ranks)", what,
                     ctx->span->ranks);
}

/* ---- agreeing (validation) ---------------------------------------------- */

/* What each rank tells the others of a collective call under validation:
 * how it went so far and what it was. */
typedef struct agree_record {
    uint64_t hash; /* of the whole description */
    int32_t status;
    char text[500]; /* its start, for messages */
} agree_record;

static uint64_t text_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* Under validation, every rank tells the others what collective call it
 * is making (`text`) and whether it failed so far (rc): a call that differs
 * between ranks, or that failed on some rank only, fails on every rank
 * with a message naming the ranks and the difference, rather than leaving
 * the others waiting for messages that never come. Without validation,
 * returns rc. */
static int agree(hpl_context *ctx, int rc, const char *text)
{
    hpl__span *sp = ctx->span;
    if (!ctx->validation || sp->ranks < 2)
        return rc;
    agree_record *all = hpl__calloc((size_t)sp->ranks + 1, sizeof *all);
    if (!all)
        return rc != HPL_OK ? rc : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    agree_record *mine = &all[sp->ranks];
    mine->status = rc;
    const char *said = rc != HPL_OK ? hpl_last_error() : text;
    snprintf(mine->text, sizeof mine->text, "%s", said);
    mine->hash = text_hash(said);
    char error[512] = "";
    int sent = sp->transport.allgather(sp->transport.user, mine, sizeof *mine, all, error, sizeof error);
    if (sent != HPL_OK) {
        hpl__free(all);
        return rc != HPL_OK ? rc : hpl__fail(sent, "the ranks could not compare their calls: %s", error);
    }
    int failed = -1, differs = -1;
    for (int r = 0; r < sp->ranks; r++) {
        all[r].text[sizeof all[r].text - 1] = '\0'; /* another rank's: untrusted */
        if (all[r].status != HPL_OK && failed < 0)
            failed = r;
        if (all[r].hash != all[0].hash && differs < 0)
            differs = r;
    }
    if (rc == HPL_OK && failed >= 0)
        rc = hpl__fail(HPL_ERROR_RANKS_DIFFER, "rank %d of %d failed this call (\"%s\"), so every rank fails it", failed,
                       sp->ranks, all[failed].text);
    else if (rc == HPL_OK && differs >= 0)
        rc = hpl__fail(HPL_ERROR_RANKS_DIFFER,
                       "the ranks made different calls (every rank must make the same collective calls in the same "
                       "order): rank 0: %s; rank %d: %s",
                       all[0].text, differs, all[differs].text);
    hpl__free(all);
    return rc;
}

/* A growing description (truncated at its size: the hash then misses
 * nothing that fits). */
typedef struct describer {
    char *buf;
    size_t size, used;
} describer;

static void describe(describer *d, const char *fmt, ...) HPL__PRINTF(2, 3);
static void describe(describer *d, const char *fmt, ...)
{
    if (d->used >= d->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->buf + d->used, d->size - d->used, fmt, ap);
    va_end(ap);
    d->used = n < 0 ? d->size : HPL__MIN(d->size, d->used + (size_t)n);
}

static void describe_view(describer *d, const hpl__array *a)
{
    const hpl__array *root = a->root;
    describe(d, "%s %dd array %llux%llux%llu, view [%llu,%llu,%llu]..[%llu,%llu,%llu)", hpl_type_name(a->type),
             root->ndims, (unsigned long long)root->dims[0], (unsigned long long)root->dims[1],
             (unsigned long long)root->dims[2], (unsigned long long)a->box.lo[0], (unsigned long long)a->box.lo[1],
             (unsigned long long)a->box.lo[2], (unsigned long long)a->box.hi[0], (unsigned long long)a->box.hi[1],
             (unsigned long long)a->box.hi[2]);
    if (!hpl__box_equal(&a->box, &a->owned))
        describe(d, " owning [%llu,%llu,%llu]..[%llu,%llu,%llu)", (unsigned long long)a->owned.lo[0],
                 (unsigned long long)a->owned.lo[1], (unsigned long long)a->owned.lo[2],
                 (unsigned long long)a->owned.hi[0], (unsigned long long)a->owned.hi[1],
                 (unsigned long long)a->owned.hi[2]);
}

/* ---- arrays ------------------------------------------------------------- */

static int span_array_init(hpl_context *ctx, hpl__array *root, int rc)
{
    char text[256];
    describer d = {text, sizeof text, 0};
    describe(&d, "hpl_array_create: ");
    if (root)
        describe_view(&d, root);
    rc = agree(ctx, rc, text);
    if (rc != HPL_OK)
        return rc;
    root->ranks = hpl__calloc(1, sizeof *root->ranks);
    if (root->ranks && hpl__rank_state_init(root->ranks, ctx->span->ranks, &root->coherence.whole, true))
        return HPL_OK;
    hpl__free(root->ranks);
    root->ranks = NULL;
    return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

static void span_array_free(hpl__array *root)
{
    if (!root->ranks)
        return;
    hpl__rank_state_free(root->ranks);
    hpl__free(root->ranks);
    root->ranks = NULL;
}

/* ---- moving boxes between ranks ---------------------------------------- */

/* One root array an operation touches: what each rank's part of it reads
 * and writes. */
typedef struct span_use {
    hpl__array *root;
    bool needs, writes;
    hpl__region need[HPL__MAX_RANKS];
    hpl__region written[HPL__MAX_RANKS];
} span_use;

static void uses_free(span_use *u, int n)
{
    for (int i = 0; i < n; i++)
        for (int r = 0; r < HPL__MAX_RANKS; r++) {
            hpl__region_free(&u[i].need[r]);
            hpl__region_free(&u[i].written[r]);
        }
    hpl__free(u);
}

/* Room for n uses, not initialised: use_of sets up each one it hands out.
 * (A use holds two regions per rank: some 7.7 KiB.) */
static span_use *uses_new(int n)
{
    return hpl__malloc((size_t)(n > 0 ? n : 1) * sizeof(span_use));
}

/* root's use in u[0 .. *n), a fresh one at u[*n] if it has none (the
 * caller made room for it). */
static span_use *use_of(span_use *u, int *n, hpl__array *root)
{
    for (int i = 0; i < *n; i++)
        if (u[i].root == root)
            return &u[i];
    span_use *fresh = &u[(*n)++];
    fresh->root = root;
    fresh->needs = fresh->writes = false;
    for (int r = 0; r < HPL__MAX_RANKS; r++) {
        hpl__region_init(&fresh->need[r]);
        hpl__region_init(&fresh->written[r]);
    }
    return fresh;
}

static hpl_transport_message message_of(const hpl__array *root, const hpl__box *box, int peer, bool send)
{
    hpl_transport_message m = {.peer = peer, .send = send, .base = root->host,
                               .elem_size = hpl_type_size(root->type), .ndims = root->ndims};
    for (int d = 0; d < 3; d++) {
        m.whole[d] = root->coherence.whole.hi[d];
        m.lo[d] = box->lo[d];
        m.extent[d] = box->hi[d] - box->lo[d];
    }
    return m;
}

/* How a move's box goes as messages (with a transport that posts): a box of
 * more than `chunk` bytes as row groups along its first dimension of extent
 * more than 1, each of about `chunk` bytes (at least one row); else whole.
 * From the box and the element size alone, so the two ranks of the move
 * cut it alike. */
typedef struct move_cut {
    int dim;        /* the cut dimension */
    uint64_t rows;  /* indices of dim per piece */
    uint64_t count; /* pieces (1: whole) */
} move_cut;

static move_cut cut_move(const hpl__box *box, int ndims, uint64_t esize, uint64_t chunk)
{
    move_cut c = {.dim = 0, .rows = box->hi[0] - box->lo[0], .count = 1};
    uint64_t bytes = hpl__box_volume(box) * esize;
    if (chunk == 0 || bytes <= chunk)
        return c;
    int d = 0;
    while (d < ndims - 1 && box->hi[d] - box->lo[d] == 1)
        d++;
    uint64_t extent = box->hi[d] - box->lo[d];
    uint64_t row = bytes / extent; /* bytes of one index of d */
    c.dim = d;
    c.rows = HPL__MAX(chunk / row, 1);
    c.rows = HPL__MIN(c.rows, extent);
    c.count = (extent + c.rows - 1) / c.rows;
    return c;
}

static hpl__box piece_of(const hpl__box *box, const move_cut *c, uint64_t k)
{
    hpl__box b = *box;
    b.lo[c->dim] = box->lo[c->dim] + k * c->rows;
    b.hi[c->dim] = HPL__MIN(b.lo[c->dim] + c->rows, box->hi[c->dim]);
    return b;
}

/* Waits for every list posted (in order), keeping the first error. */
static int wait_posted(hpl__span *sp, void **pending, size_t n, int rc, size_t count)
{
    for (size_t i = 0; i < n; i++) {
        char error[512] = "";
        int waited = sp->transport.wait(sp->transport.user, pending[i], error, sizeof error);
        if (waited != HPL_OK && rc == HPL_OK)
            rc = hpl__fail(waited, "moving %zu box%s between rank %d and the others failed: %s", count,
                           count == 1 ? "" : "es", sp->rank, error);
    }
    return rc;
}

/* With a transport that posts: the receives are posted first (once no
 * device work uses their boxes of the host storage), then each send as
 * soon as this rank's host storage holds it, a large box piece by piece
 * (cut_move), so that the download of piece k + 1 overlaps the message of
 * piece k; then every list is waited for. The receiving rank uploads what
 * arrived only when a device needs it, after the wait (not overlapped). */
static int move_posted(hpl_context *ctx, span_use *uses, int n, hpl__rank_moves *moves, size_t pieces)
{
    hpl__span *sp = ctx->span;
    int me = sp->rank, rc = HPL_OK;
    /* At most a list per piece, and the receives'. */
    hpl_transport_message *msgs = hpl__calloc(pieces, sizeof *msgs);
    void **pending = hpl__calloc(pieces + 1, sizeof *pending);
    if (!msgs || !pending) {
        hpl__free(msgs);
        hpl__free(pending);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    size_t count = 0, posted = 0, lists = 0;
    uint64_t first_event = hpl__events_next_serial(ctx);
    for (int send = 0; send < 2 && rc == HPL_OK; send++) {
        for (int i = 0; rc == HPL_OK && i < n; i++) {
            hpl__array *root = uses[i].root;
            uint64_t esize = hpl_type_size(root->type);
            for (int j = 0; rc == HPL_OK && j < moves[i].count; j++) {
                const hpl__rank_move *m = &moves[i].moves[j];
                if (send ? m->src != me : m->dst != me)
                    continue;
                move_cut c = cut_move(&m->box, root->ndims, esize, sp->chunk);
                if (!send)
                    rc = hpl__host_sync(ctx, root, &m->box, false, true); /* the whole box's wait, once */
                for (uint64_t k = 0; rc == HPL_OK && k < c.count; k++) {
                    hpl__box piece = c.count > 1 ? piece_of(&m->box, &c, k) : m->box;
                    if (send && (rc = hpl__host_sync(ctx, root, &piece, true, false)) != HPL_OK)
                        break;
                    msgs[count++] = message_of(root, &piece, send ? m->dst : m->src, send);
                    hpl__events_message(ctx, root, send ? m->dst : m->src, send, &piece);
                    if (!send || c.count == 1)
                        continue;
                    /* A piece goes at once, with what came before it. */
                    char error[512] = "";
                    int sent = sp->transport.post(sp->transport.user, msgs + posted, count - posted,
                                                  &pending[lists], error, sizeof error);
                    if (sent != HPL_OK)
                        rc = hpl__fail(sent, "moving %zu box%s between rank %d and the others failed: %s",
                                       count - posted, count - posted == 1 ? "" : "es", me, error);
                    lists += pending[lists] != NULL;
                    posted = count;
                }
            }
        }
        /* The receives (send 0), then the sends not yet posted. */
        if (rc == HPL_OK && count > posted) {
            char error[512] = "";
            int sent = sp->transport.post(sp->transport.user, msgs + posted, count - posted, &pending[lists], error,
                                          sizeof error);
            if (sent != HPL_OK)
                rc = hpl__fail(sent, "moving %zu box%s between rank %d and the others failed: %s", count - posted,
                               count - posted == 1 ? "" : "es", me, error);
            lists += pending[lists] != NULL;
            posted = count;
        }
    }
    /* Nothing stays in flight, even after a failure (the other ranks'
     * messages to this one were posted: the waits end). */
    rc = wait_posted(sp, pending, lists, rc, count);
    hpl__events_messages_end(ctx, first_event);
    hpl__free(msgs);
    hpl__free(pending);
    return rc;
}

/* Moves what each rank's need lacks from the ranks that hold it: every
 * rank calls it with the same uses. A box to send is first made valid in
 * this rank's host storage; one received becomes valid there (a host
 * write: the rank's device copies of it become invalid). Each rank plans
 * only its own moves (hpl__rank_state_plan_for) and records every rank's
 * as done (hpl__rank_state_fulfilled), so that all keep the same state. */
static int exchange(hpl_context *ctx, span_use *uses, int n)
{
    hpl__span *sp = ctx->span;
    int me = sp->rank, rc = HPL_OK;
    hpl__rank_moves *moves = hpl__calloc((size_t)n + 1, sizeof *moves);
    if (!moves)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    size_t mine = 0, pieces = 0;
    bool posts = sp->transport.post != NULL;
    for (int i = 0; rc == HPL_OK && i < n; i++) {
        if (!uses[i].needs)
            continue;
        const hpl__region *need[HPL__MAX_RANKS];
        for (int r = 0; r < sp->ranks; r++)
            need[r] = &uses[i].need[r];
        if (!hpl__rank_state_plan_for(uses[i].root->ranks, me, need, &moves[i]))
            rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        uint64_t esize = hpl_type_size(uses[i].root->type);
        /* plan_for: every move is from or to this rank. */
        mine += rc == HPL_OK ? (size_t)moves[i].count : 0;
        for (int j = 0; rc == HPL_OK && j < moves[i].count; j++) {
            const hpl__box *box = &moves[i].moves[j].box;
            pieces += posts ? (size_t)cut_move(box, uses[i].root->ndims, esize, sp->chunk).count : 1;
        }
    }
    if (rc == HPL_OK && posts && mine) {
        rc = move_posted(ctx, uses, n, moves, pieces);
    } else if (rc == HPL_OK && !posts) {
        /* exchange alone: every rank calls it (even with no message). */
        hpl_transport_message *msgs = mine ? hpl__calloc(mine, sizeof *msgs) : NULL;
        if (mine && !msgs)
            rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        /* Ready the host storage: what goes out holds the newest data, what
         * comes in is not read or written by work still running. */
        size_t count = 0;
        for (int i = 0; rc == HPL_OK && i < n; i++) {
            for (int j = 0; rc == HPL_OK && j < moves[i].count; j++) {
                const hpl__rank_move *m = &moves[i].moves[j];
                hpl__array *root = uses[i].root;
                rc = hpl__host_sync(ctx, root, &m->box, m->src == me, m->dst == me);
                if (rc == HPL_OK)
                    msgs[count++] = message_of(root, &m->box, m->src == me ? m->dst : m->src, m->src == me);
            }
        }
        if (rc == HPL_OK) {
            uint64_t first_event = hpl__events_next_serial(ctx);
            for (int i = 0; ctx->events_on && i < n; i++)
                for (int j = 0; j < moves[i].count; j++) {
                    const hpl__rank_move *m = &moves[i].moves[j];
                    hpl__events_message(ctx, uses[i].root, m->src == me ? m->dst : m->src, m->src == me, &m->box);
                }
            char error[512] = "";
            int sent = sp->transport.exchange(sp->transport.user, msgs, count, error, sizeof error);
            hpl__events_messages_end(ctx, first_event);
            if (sent != HPL_OK)
                rc = hpl__fail(sent, "moving %zu box%s between rank %d and the others failed: %s", count,
                               count == 1 ? "" : "es", me, error);
        }
        hpl__free(msgs);
    }
    /* The statistics count moves (a box each), however many messages. */
    hpl__region r;
    hpl__region_init(&r);
    for (int i = 0; rc == HPL_OK && i < n; i++) {
        hpl__array *root = uses[i].root;
        uint64_t esize = hpl_type_size(root->type);
        for (int j = 0; rc == HPL_OK && j < moves[i].count; j++) {
            const hpl__rank_move *m = &moves[i].moves[j];
            uint64_t bytes = hpl__box_volume(&m->box) * esize;
            if (m->src == me) {
                sp->sent_bytes += bytes;
                sp->sent_count++;
            } else if (m->dst == me) {
                sp->received_bytes += bytes;
                sp->received_count++;
                if (!hpl__region_set_box(&r, &m->box) ||
                    !hpl__coherence_did_write(&root->coherence, HPL__HOST, &r, (hpl__point){0, 0}))
                    rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
            }
        }
        const hpl__region *need[HPL__MAX_RANKS];
        for (int q = 0; q < sp->ranks; q++)
            need[q] = &uses[i].need[q];
        if (rc == HPL_OK && uses[i].needs && !hpl__rank_state_fulfilled(root->ranks, need))
            rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    hpl__region_free(&r);
    for (int i = 0; i < n; i++)
        hpl__rank_moves_free(&moves[i]);
    hpl__free(moves);
    return rc;
}

/* After an operation: each rank holds what its parts wrote, and this rank's
 * own memories no longer hold what the other ranks wrote. */
static int record_writes(hpl_context *ctx, span_use *uses, int n)
{
    hpl__span *sp = ctx->span;
    hpl__region others;
    hpl__region_init(&others);
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        if (!uses[i].writes)
            continue;
        hpl__array *root = uses[i].root;
        hpl__region_clear(&others);
        const hpl__region *written[HPL__MAX_RANKS];
        for (int r = 0; r < sp->ranks; r++)
            written[r] = &uses[i].written[r];
        ok = hpl__rank_state_wrote_all(root->ranks, written);
        for (int r = 0; ok && r < sp->ranks; r++)
            if (r != sp->rank && !hpl__region_empty(&uses[i].written[r]))
                ok = hpl__region_add(&others, &uses[i].written[r]);
        for (int m = 0; ok && !hpl__region_empty(&others) && m < root->coherence.count; m++)
            if (root->coherence.mem[m].used)
                ok = hpl__coherence_invalidate(&root->coherence, m, &others);
    }
    hpl__region_free(&others);
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

/* ---- eval --------------------------------------------------------------- */

/* The eval's devices, global indices: launch.device for a plain eval, else
 * launch.devices, else every rank's GPUs (all devices when there are none). */
static int eval_devices(const hpl__span *sp, const hpl_launch *launch, bool annotated, int *out, int *count)
{
    if (launch->device_count == 0 && !annotated) {
        if (launch->device < 0 || launch->device >= sp->device_count)
            return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE,
                             "launch.device %d does not exist (the context has %d devices over %d ranks)",
                             launch->device, sp->device_count, sp->ranks);
        out[0] = launch->device;
        *count = 1;
        return HPL_OK;
    }
    if (launch->device_count == 0) {
        int n = 0;
        for (int g = 0; g < sp->device_count; g++)
            if (sp->info[g].type & HPL_DEVICE_GPU)
                out[n++] = g;
        for (int g = 0; n == 0 && g < sp->device_count; g++)
            out[g] = g;
        *count = n ? n : sp->device_count;
        return HPL_OK;
    }
    if (launch->device_count < 0 || launch->device_count > HPL_MAX_DEVICES)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "launch.device_count is %d: give 1 to %d devices",
                         launch->device_count, HPL_MAX_DEVICES);
    if (launch->device)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                         "launch.device is %d and launch.devices lists %d: give one or the other", launch->device,
                         launch->device_count);
    int rc = hpl__device_list_check(sp->device_count, launch->devices, launch->device_count, "launch.devices", out);
    if (rc != HPL_OK)
        return rc;
    *count = launch->device_count;
    return HPL_OK;
}

/* What the eval is, checked on one of this rank's devices: its arguments'
 * arrays and accesses, the domain and its split dimension. */
typedef struct eval_shape {
    bool annotated;
    int dim;
    uint64_t whole[3];
    int arg_count;
    hpl__array *arrays[HPL__MAX_ARGS]; /* NULL: a scalar */
    hpl_access access[HPL__MAX_ARGS];
} eval_shape;

static int eval_shape_of(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                         size_t nargs, bool annotated, int device, eval_shape *out)
{
    hpl_launch probe = *launch;
    probe.shares = NULL;
    probe.domains = NULL;
    probe.halos_first = false;
    if (annotated) {
        probe.device = 0;
        probe.devices[0] = device;
        probe.device_count = 1;
    } else {
        probe.device = device;
        probe.device_count = 0;
    }
    hpl__launch_plan p;
    p.subkernels = NULL;
    p.shares = NULL;
    p.given = NULL;
    int rc = hpl__launch_plan_make(ctx, k, &probe, args, nargs, &p);
    if (rc == HPL_OK) {
        const hpl__subkernel *s = &p.subkernels[0];
        out->annotated = p.annotated;
        out->dim = p.dim;
        memcpy(out->whole, p.whole, sizeof out->whole);
        out->arg_count = s->variant->reflection.arg_count;
        for (int i = 0; i < out->arg_count; i++) {
            out->arrays[i] = args[i].kind == HPL_ARG_ARRAY ? s->views[i].array : NULL;
            out->access[i] = s->variant->reflection.args[i].access;
        }
    }
    hpl__launch_plan_done(ctx, &p);
    return rc;
}

/* Remembers the split over every rank's devices (hpl_array_part). */
static void remember_split(const eval_shape *e, const hpl_arg *args, const int *devices, const hpl__part *pieces,
                           int count)
{
    for (int i = 0; i < e->arg_count; i++) {
        if (!e->arrays[i] || !args[i].part.on)
            continue;
        hpl__split *s = &e->arrays[i]->split;
        *s = (hpl__split){.dim = args[i].part.dim, .overlap = (uint64_t)args[i].part.overlap};
        for (int j = 0; j < count; j++) {
            if (pieces[j].lo >= pieces[j].hi)
                continue;
            s->devices[s->count] = devices[j];
            s->lo[s->count] = pieces[j].lo;
            s->hi[s->count++] = pieces[j].hi;
        }
    }
}

/* An eval over ranks between hpl__span_eval_begin and _end (api.h). */
struct hpl__span_step {
    eval_shape e;
    int devices[HPL__MAX_DEVICES], count;
    hpl__part pieces[HPL__MAX_DEVICES];
    span_use *uses;
    int used;
    bool annotated; /* an argument is annotated */
    const hpl_arg *args;
};

/* The step of an eval over ranks: its checks, its pieces, what each rank's
 * pieces read and write; nothing moved yet. */
static int step_make(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs,
                     const hpl__part *given, hpl__span_step **out)
{
    hpl__span *sp = ctx->span;
    *out = NULL;
    if (launch->domains)
        return hpl__span_unsupported(ctx, "launch.domains");
    bool annotated = false;
    for (size_t i = 0; i < nargs; i++)
        annotated |= args[i].kind == HPL_ARG_ARRAY && args[i].part.on;
    hpl__span_step *st = hpl__calloc(1, sizeof *st);
    if (!st)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    st->args = args;
    st->annotated = annotated;
    int *devices = st->devices, count = 0;
    int rc = eval_devices(sp, launch, annotated, devices, &count);
    st->count = count;
    if (rc == HPL_OK && launch->shares)
        rc = hpl__shares_check(launch->shares, count, "launch.shares");
    if (rc != HPL_OK) {
        hpl__free(st);
        return rc;
    }
    /* Check it on one of this rank's devices of the eval (else device 0). */
    int probe = 0;
    for (int i = count - 1; i >= 0; i--)
        if (hpl__span_local(sp, devices[i]) >= 0)
            probe = hpl__span_local(sp, devices[i]);
    eval_shape e = {0};
    rc = eval_shape_of(ctx, k, launch, args, nargs, annotated, probe, &e);
    st->e = e;
    if (ctx->validation) {
        char text[2048];
        describer d = {text, sizeof text, 0};
        uint64_t code = 1469598103934665603ull; /* the kernel itself: its generic SPIR-V */
        for (size_t w = 0; w < k->variants[0].words; w++)
            code = (code ^ k->variants[0].spirv[w]) * 1099511628211ull;
        describe(&d, "hpl_eval(%s, SPIR-V %016llx) global %llu,%llu,%llu local %u,%u,%u halos_first %d on", k->name,
                 (unsigned long long)code,
                 (unsigned long long)launch->global[0], (unsigned long long)launch->global[1],
                 (unsigned long long)launch->global[2], launch->local[0], launch->local[1], launch->local[2],
                 launch->halos_first);
        for (int i = 0; i < count; i++)
            describe(&d, " %d", devices[i]);
        for (int i = 0; launch->shares && i < count; i++)
            describe(&d, " share %.17g", launch->shares[i]);
        for (int i = 0; given && i < count; i++)
            describe(&d, " piece %llu..%llu", (unsigned long long)given[i].lo, (unsigned long long)given[i].hi);
        for (int i = 0; rc == HPL_OK && i < e.arg_count; i++) {
            describe(&d, "; argument %d: ", i);
            if (e.arrays[i]) {
                describe_view(&d, e.arrays[i]);
                if (args[i].part.on)
                    describe(&d, " split along %d, overlap %lld", args[i].part.dim, (long long)args[i].part.overlap);
            } else {
                uint64_t bits = 0;
                memcpy(&bits, &args[i].value, hpl_type_size(args[i].type) <= sizeof bits ? hpl_type_size(args[i].type) : 0);
                describe(&d, "%s 0x%llx", hpl_type_name(args[i].type), (unsigned long long)bits);
            }
        }
        rc = agree(ctx, rc, text);
    }
    if (rc != HPL_OK) {
        hpl__free(st);
        return rc;
    }
    /* Each device's piece of the split dimension, as on one process. */
    hpl__part *pieces = st->pieces;
    uint64_t n = e.whole[e.dim];
    if (given) {
        for (int i = 0; i < count; i++)
            pieces[i] = (hpl__part){.lo = HPL__MIN(given[i].lo, n), .hi = HPL__MIN(given[i].hi, n)};
    } else if (count == 1) {
        pieces[0].hi = n;
    } else if (launch->shares) {
        uint64_t cuts[HPL__MAX_DEVICES + 1];
        uint64_t granule = launch->local[e.dim] ? launch->local[e.dim] : 1;
        hpl__partition_cuts(n, count, launch->shares, granule, cuts);
        for (int i = 0; i < count; i++)
            pieces[i] = (hpl__part){.lo = cuts[i], .hi = cuts[i + 1]};
    } else {
        hpl__part parts[HPL__MAX_DEVICES];
        int made = hpl__partition(n, count, 0, parts);
        for (int i = 0; i < made; i++)
            pieces[i] = (hpl__part){.lo = parts[i].lo, .hi = parts[i].hi};
    }
    /* What each rank's parts read and write. */
    int arrays = 0;
    for (int i = 0; i < e.arg_count; i++)
        arrays += e.arrays[i] != NULL;
    span_use *uses = st->uses = uses_new(arrays);
    if (!uses) {
        hpl__free(st);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    int used = 0, ranks_in = 0;
    bool rank_in[HPL__MAX_RANKS] = {false};
    for (int j = 0; j < count; j++)
        if (pieces[j].lo < pieces[j].hi && !rank_in[sp->owner[devices[j]]]) {
            rank_in[sp->owner[devices[j]]] = true;
            ranks_in++;
        }
    bool ok = true;
    for (int i = 0; ok && rc == HPL_OK && i < e.arg_count; i++) {
        if (!e.arrays[i])
            continue;
        span_use *u = use_of(uses, &used, e.arrays[i]->root);
        hpl__arg_view whole;
        hpl__arg_view_set(&whole, e.arrays[i]);
        bool split = args[i].part.on;
        if ((e.access[i] & HPL_WRITE) && !split && ranks_in > 1) {
            rc = hpl__fail(HPL_ERROR_UNSUPPORTED,
                           "argument %d ('%s') is written but not annotated, and the eval runs on %d ranks: annotate it, "
                           "or run the eval on one rank's devices",
                           i, e.arrays[i]->name, ranks_in);
            break;
        }
        for (int j = 0; ok && j < count; j++) {
            if (pieces[j].lo >= pieces[j].hi)
                continue;
            int q = sp->owner[devices[j]];
            hpl__arg_view v = split ? hpl__part_view(&whole, &args[i].part, pieces[j].lo, pieces[j].hi) : whole;
            if (e.access[i] & HPL_READ) {
                u->needs = true;
                ok = hpl__region_add_box(&u->need[q], &v.at.box);
            }
            if (ok && (e.access[i] & HPL_WRITE)) {
                u->writes = true;
                ok = hpl__region_add_box(&u->written[q], &v.at.owned);
            }
        }
    }
    if (rc == HPL_OK && !ok)
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    st->used = used;
    if (rc != HPL_OK) {
        uses_free(uses, used);
        hpl__free(st);
        return rc;
    }
    *out = st;
    return HPL_OK;
}

static void step_free(hpl__span_step *st)
{
    uses_free(st->uses, st->used);
    hpl__free(st);
}

int hpl__span_eval_begin(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args,
                         size_t nargs, const hpl__part *given, hpl__span_step **out)
{
    int rc = step_make(ctx, k, launch, args, nargs, given, out);
    if (rc == HPL_OK && (rc = exchange(ctx, (*out)->uses, (*out)->used)) != HPL_OK) {
        step_free(*out);
        *out = NULL;
    }
    return rc;
}

int hpl__span_eval_end(hpl_context *ctx, hpl__span_step *st, int rc)
{
    const eval_shape *e = &st->e;
    if (rc == HPL_OK)
        rc = record_writes(ctx, st->uses, st->used);
    if (rc == HPL_OK && e->annotated)
        remember_split(e, st->args, st->devices, st->pieces, st->count);
    /* HPL_WHERE_LAST_USED: the last device of the eval with a part, as on
     * one process, by its global index on every rank. */
    for (int j = st->count - 1; rc == HPL_OK && j >= 0; j--) {
        if (st->pieces[j].lo >= st->pieces[j].hi)
            continue;
        for (int i = 0; i < e->arg_count; i++)
            if (e->arrays[i])
                e->arrays[i]->last_where = st->devices[j];
        break;
    }
    step_free(st);
    return rc;
}

/* halos_first: the rows of this rank's piece [lo, hi) whose reads it
 * holds already, before the moves: [*a, *b) — all of it when it holds
 * everything the piece reads (nothing to hide), empty (*a == *b) when no
 * rows are found. The piece loses its annotations' widest read overlap on
 * each side whose reads it lacks. */
static void step_interior(const hpl__span *sp, const hpl__span_step *st, const hpl_arg *args, uint64_t lo,
                          uint64_t hi, uint64_t *a, uint64_t *b)
{
    const eval_shape *e = &st->e;
    uint64_t ov = 0;
    for (int i = 0; i < e->arg_count; i++)
        if (e->arrays[i] && (e->access[i] & HPL_READ) && args[i].part.on && args[i].part.overlap > 0)
            ov = HPL__MAX(ov, (uint64_t)args[i].part.overlap);
    static const int cut[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
    for (int t = 0; t < 4; t++) {
        uint64_t x = lo + HPL__MIN(hi - lo, cut[t][0] ? ov : 0), y = hi - HPL__MIN(hi - lo, cut[t][1] ? ov : 0);
        if (x >= y)
            continue;
        bool held = true;
        for (int i = 0; held && i < e->arg_count; i++) {
            if (!e->arrays[i] || !(e->access[i] & HPL_READ))
                continue;
            hpl__arg_view whole;
            hpl__arg_view_set(&whole, e->arrays[i]);
            hpl__arg_view v = args[i].part.on ? hpl__part_view(&whole, &args[i].part, x, y) : whole;
            held = hpl__region_contains_box(&e->arrays[i]->root->ranks->valid[sp->rank], &v.at.box);
        }
        if (held) {
            *a = x;
            *b = y;
            return;
        }
    }
    *a = *b = lo;
}

static int step_exchange(void *user)
{
    void **p = user;
    hpl__span_step *st = p[1];
    return exchange(p[0], st->uses, st->used);
}

static int span_eval(hpl_context *ctx, hpl__kernel *k, const hpl_launch *launch, const hpl_arg *args, size_t nargs,
                     const hpl__part *given)
{
    hpl__span *sp = ctx->span;
    hpl__span_step *st = NULL;
    int rc = step_make(ctx, k, launch, args, nargs, given, &st);
    if (rc != HPL_OK)
        return rc;
    /* This rank's own parts, as an eval of its devices given their pieces. */
    hpl_launch local = *launch;
    local.shares = NULL;
    hpl__part own[HPL__MAX_DEVICES], first[HPL__MAX_DEVICES] = {{0}};
    int mine = 0;
    bool hide = false; /* halos_first: rows run while the moves go */
    for (int j = 0; j < st->count; j++) {
        int l = hpl__span_local(sp, st->devices[j]);
        if (l < 0 || st->pieces[j].lo >= st->pieces[j].hi)
            continue;
        local.devices[mine] = l;
        own[mine++] = st->pieces[j];
        if (launch->halos_first && st->annotated && sp->ranks > 1) {
            uint64_t a, b;
            step_interior(sp, st, args, st->pieces[j].lo, st->pieces[j].hi, &a, &b);
            first[l] = (hpl__part){.lo = a, .hi = b};
            hide = hide || a > st->pieces[j].lo || b < st->pieces[j].hi;
        }
    }
    if (hide && mine) {
        local.device = 0;
        local.device_count = mine;
        void *user[2] = {ctx, st};
        rc = hpl__eval_locked_phased(ctx, k, &local, args, nargs, own, first, step_exchange, user);
        return hpl__span_eval_end(ctx, st, rc);
    }
    rc = exchange(ctx, st->uses, st->used);
    if (rc == HPL_OK && mine) {
        if (!st->annotated && st->count == 1 && !given) {
            local.device = local.devices[0];
            local.device_count = 0;
            rc = hpl__eval_locked(ctx, k, &local, args, nargs, NULL);
        } else {
            local.device = 0;
            local.device_count = mine;
            rc = hpl__eval_locked(ctx, k, &local, args, nargs, own);
        }
    }
    return hpl__span_eval_end(ctx, st, rc);
}

/* ---- host access ---------------------------------------------------------- */

static int span_host_access(hpl_context *ctx, hpl__array *a, hpl_access mode)
{
    if (ctx->validation) {
        char text[256];
        describer d = {text, sizeof text, 0};
        describe(&d, "host access (%s) of ", mode == HPL_READ ? "read" : mode == HPL_WRITE ? "write" : "read and write");
        describe_view(&d, a);
        int rc = agree(ctx, HPL_OK, text);
        if (rc != HPL_OK)
            return rc;
    }
    if (!(mode & HPL_READ) && hpl__box_equal(&a->box, &a->owned))
        return HPL_OK;
    return hpl__span_bring(ctx, a, -1);
}

static int span_host_wrote(hpl_context *ctx, hpl__array *a)
{
    (void)ctx;
    hpl__region r;
    hpl__region_init(&r);
    bool ok = hpl__region_set_box(&r, &a->owned) && hpl__rank_state_wrote_everywhere(a->root->ranks, &r);
    hpl__region_free(&r);
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

/* ---- the other collective calls (assign.c, hint.c, reduce.c) ------------- */

int hpl__span_agree(hpl_context *ctx, int rc, const hpl__array *a, const char *fmt, ...)
{
    if (!ctx->validation || ctx->span->ranks < 2)
        return rc;
    char text[512];
    describer d = {text, sizeof text, 0};
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    d.used = n < 0 ? 0 : HPL__MIN(sizeof text, (size_t)n);
    if (a) {
        describe(&d, " of ");
        describe_view(&d, a);
    }
    return agree(ctx, rc, text);
}

int hpl__span_where(const hpl_context *ctx, const hpl__array *a, int where, int *resolved, int *local, int *owner)
{
    const hpl__span *sp = ctx->span;
    if (where == HPL_WHERE_LAST_USED)
        where = a->last_where;
    if (where == HPL_ON_HOST) {
        *resolved = *local = HPL_ON_HOST;
        *owner = -1;
        return HPL_OK;
    }
    if (where < 0 || where >= sp->device_count)
        return hpl__fail(HPL_ERROR_UNKNOWN_DEVICE,
                         "where = %d is neither a device (the context has %d over %d ranks) nor HPL_ON_HOST or "
                         "HPL_WHERE_LAST_USED",
                         where, sp->device_count, sp->ranks);
    *resolved = where;
    *local = hpl__span_local(sp, where);
    *owner = sp->owner[where];
    return HPL_OK;
}

int hpl__span_bring(hpl_context *ctx, hpl__array *a, int to)
{
    span_use *u = uses_new(1);
    if (!u)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    int n = 0;
    use_of(u, &n, a->root);
    u->needs = true;
    int rc = HPL_OK;
    for (int r = 0; rc == HPL_OK && r < ctx->span->ranks; r++)
        if ((to < 0 || r == to) && !hpl__region_set_box(&u->need[r], &a->box))
            rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc == HPL_OK)
        rc = exchange(ctx, u, n);
    uses_free(u, n);
    return rc;
}

int hpl__span_wrote(hpl_context *ctx, hpl__array *a, int by)
{
    if (by < 0)
        return span_host_wrote(ctx, a);
    span_use *u = uses_new(1);
    if (!u)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    int n = 0;
    use_of(u, &n, a->root);
    u->writes = true;
    int rc = hpl__region_set_box(&u->written[by], &a->owned) ? record_writes(ctx, u, n)
                                                             : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    uses_free(u, n);
    return rc;
}

/* ---- uses gathered by the caller (a plan's runners) ------------------------- */

struct hpl__span_uses {
    int count, capacity;
    span_use *use;
};

hpl__span_uses *hpl__span_uses_new(void)
{
    return hpl__calloc(1, sizeof(hpl__span_uses));
}

void hpl__span_uses_free(hpl__span_uses *u)
{
    if (!u)
        return;
    if (u->use)
        uses_free(u->use, u->count);
    hpl__free(u);
}

int hpl__span_uses_add(hpl__span_uses *u, hpl__array *root, int rank, const hpl__box *read, const hpl__box *written)
{
    int n = u->count;
    bool known = false;
    for (int i = 0; i < n; i++)
        known |= u->use[i].root == root;
    if (!known && n == HPL__MAX_ARGS)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "more than %d arrays in one operation", HPL__MAX_ARGS);
    if (!known && n == u->capacity) {
        int capacity = u->capacity ? 2 * u->capacity : 2;
        span_use *grown = hpl__realloc(u->use, (size_t)capacity * sizeof *grown);
        if (!grown)
            return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        u->use = grown;
        u->capacity = capacity;
    }
    span_use *x = use_of(u->use, &u->count, root);
    bool ok = true;
    if (read) {
        x->needs = true;
        ok = hpl__region_add_box(&x->need[rank], read);
    }
    if (ok && written) {
        x->writes = true;
        ok = hpl__region_add_box(&x->written[rank], written);
    }
    return ok ? HPL_OK : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
}

int hpl__span_uses_exchange(hpl_context *ctx, hpl__span_uses *u)
{
    return exchange(ctx, u->use, u->count);
}

int hpl__span_uses_record(hpl_context *ctx, hpl__span_uses *u)
{
    return record_writes(ctx, u->use, u->count);
}
