/* Randomized differential test of the coherence engine against a shadow model
 * kept on the host.
 *
 * From a seed, a program is generated up front as a list of operations on a
 * few root arrays (float with integer values, so that arithmetic is exact,
 * and int; 1-D, 2-D, 3-D) and on subarrays of them (nested, overlapping, some
 * with an owned box smaller than the subarray, i.e. with a ghost part):
 *   sub      hpl_subarray / hpl_subarray_owned (coordinates in the parent's)
 *   destroy  hpl_array_destroy of a subarray without live children
 *   read     hpl_array_read or hpl_array_access(HPL_READ): compared with the model
 *   write    hpl_array_write (subarrays without ghost part, roots),
 *            hpl_array_access(HPL_WRITE) of every owned element (the ghost
 *            part, brought to the host as context, is compared), or
 *            hpl_array_access(HPL_READ_WRITE): compared, then some owned
 *            elements changed
 *   add      kernel x += c on a (sub)array, on a device
 *   add2     kernel y = x + c between two (sub)arrays of equal extents that
 *            do not overlap, on a device
 *   assign   hpl_array_assign(dst, src, where), where = a device, HPL_ON_HOST
 *            or HPL_WHERE_LAST_USED
 *   fill     hpl_array_fill(v, c, where)
 *   wait     hpl_array_wait;  finish: hpl_finish
 *   recreate hpl_array_destroy of a root (its subarrays go with it), then a
 *            new root of the same shape (zeros, or new user storage)
 * on 3 or 4 logical devices ("cpu:3"/"cpu:4", zero copy off) with a tiny
 * device memory limit, so that buffers are evicted all the time. At the end
 * every root is read back and compared. With TH_ZERO_COPY_FIRST=1 (as the
 * harness) the first device is a zero-copy CPU device and the others keep
 * separate memories ("cpu+zc,cpu:2"/"cpu+zc,cpu:3", zero copy AUTO), so
 * kernels write the ghost parts of views on both kinds of device.
 *
 * The model is the contents of every root. A write through a subarray
 * changes its owned box only (the whole subarray when it has none). The
 * kernels (add, add2) write all of a view, ghost part included: such an
 * element then holds its previous value or the one written, which one
 * unspecified (hplvk.h, section 4b), and the model keeps both until a read
 * shows which. Each read must show, for every element, the model's value or
 * one of its two; from then on the model holds what it showed, so every
 * later read must agree with it (a read through a subarray, a whole read,
 * before or after hpl_finish). What is computed from an element with two
 * candidates gets two (x + c of each); from two such, or from a ghost
 * element written with two, any value, again until a read shows it.
 *
 * Usage: test_differential [OPS [SEED]]; else HPLVK_DIFF_OPS (default 5000)
 * and HPLVK_DIFF_SEED (default: from the clock). The seed is always printed
 * (seed=N): rerun with it to replay the same program. Also:
 *   HPLVK_DIFF_LIMIT      per-device memory limit in bytes (K and M suffixes);
 *                         default: the two largest roots plus 8..128 KiB
 *                         (70..320 KiB; all roots take 200..600 KiB)
 *   HPLVK_DIFF_SHRINK_S   seconds spent shrinking a failure (default 60)
 *   HPLVK_DIFF_VERBOSE=1  print every operation as it runs
 *   HPLVK_DIFF_ONLY=i,j,..  run only these operations of the program (what
 *                         shrinking prints)
 * Validation follows HPLVK_VALIDATION (on under ctest, off in the long run).
 * TH_DEVICE_KIND=gpu opens "gpu:3"/"gpu:4" instead (as the harness does;
 * "cpu+zc,gpu:2"/"cpu+zc,gpu:3" with TH_ZERO_COPY_FIRST=1).
 *
 * Every run of the program is a child process (fork), watched by the parent:
 * a crash, or no progress for a while (a hang: the child is killed), is a
 * failure at the operation the child was running, like a mismatch, an API
 * error on a valid operation, or a message of level WARNING or above from
 * the library (validation messages included).
 *
 * On a failure the test prints the seed, the operation and the first wrong
 * element, then shrinks it: it replays subsequences of the operation list,
 * each in a fresh process and context with fresh arrays and its own model,
 * keeping a subsequence when its replay fails too (any failure counts, and a
 * replay that fails is cut after its failing operation). First the prefix up
 * to the failing operation, then the same without the operations that only
 * look (reads, waits), then ddmin: remove one of `gran` chunks, keep the
 * removal when the failure persists, else double `gran` (halve the chunks)
 * until single operations cannot go. Operations on subarrays whose creation
 * was removed are skipped, so every subsequence is a valid program. A
 * failure that does not reproduce at once (timing) gets up to 3 tries per
 * candidate. Shrinking stops after HPLVK_DIFF_SHRINK_S seconds and prints
 * the shortest failing sequence found, one readable line per operation, with
 * the HPLVK_DIFF_ONLY setting that replays it. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, strsignal */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROOTS 18
#define N_LARGE 5
#define MAX_LIVE_SUBS 40

/* ---- random numbers (splitmix64) ----------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t below(rng *r, uint64_t n)
{
    return n ? splitmix(&r->s) % n : 0;
}

static int64_t between(rng *r, int64_t lo, int64_t hi) /* inclusive */
{
    return lo + (int64_t)below(r, (uint64_t)(hi - lo + 1));
}

static uint32_t hash2(uint32_t a, uint32_t b)
{
    uint64_t s = ((uint64_t)a << 32) | b;
    return (uint32_t)splitmix(&s);
}

/* ---- the program ----------------------------------------------------------- */

typedef struct root_def {
    hpl_type type;
    int ndims;
    uint64_t dims[3]; /* unused: 1 */
    uint64_t count;
    bool user;        /* user storage (desc.host), initialised from `init` */
    uint32_t init;
} root_def;

typedef struct view_def {
    int parent; /* view id; -1 for a root */
    int root;
    hpl_type type;
    int ndims;
    hpl_range ranges[3]; /* as passed: parent coordinates, last may be HPL_END */
    bool has_owned;
    hpl_range owned[3];  /* parent coordinates */
    uint64_t org[3], ext[3]; /* box in the root */
    uint64_t olo[3], ohi[3]; /* owned box in the root, inclusive */
    uint64_t count;
    bool ghost; /* owned box smaller than the box */
} view_def;

enum op_kind { OP_SUB, OP_DESTROY, OP_READ, OP_WRITE, OP_ADD, OP_ADD2, OP_ASSIGN, OP_FILL, OP_WAIT, OP_FINISH, OP_RECREATE };
#define GEN_PARTITION 100 /* generator only: a stencil-like pattern of subs, adds and a read */

typedef struct op {
    uint8_t kind, mode;
    int32_t a, b;  /* view ids (OP_SUB: the view it creates; ADD2: a = y, b = x; ASSIGN: a = dst, b = src) */
    int32_t where; /* device; fill/assign also HPL_ON_HOST, HPL_WHERE_LAST_USED */
    int32_t c;     /* constant */
    uint32_t seed; /* values of host writes */
} op;

typedef struct prog {
    uint64_t seed;
    int ndev;
    char devices[32];
    bool zc_first; /* device 0 is zero-copy (TH_ZERO_COPY_FIRST=1) */
    uint64_t limit;
    int nroots;
    root_def roots[MAX_ROOTS];
    view_def *views;
    int nviews, cap_views;
    op *ops;
    int nops, cap_ops;
    int requested; /* the operation count asked for (nops may pass it by one) */
} prog;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }
    return p;
}

static bool boxes_overlap(const view_def *a, const view_def *b)
{
    if (a->root != b->root)
        return false;
    for (int d = 0; d < 3; d++)
        if (a->org[d] + a->ext[d] <= b->org[d] || b->org[d] + b->ext[d] <= a->org[d])
            return false;
    return true;
}

static bool in_owned(const view_def *v, uint64_t a0, uint64_t a1, uint64_t a2)
{
    return a0 >= v->olo[0] && a0 <= v->ohi[0] && a1 >= v->olo[1] && a1 <= v->ohi[1] && a2 >= v->olo[2] &&
           a2 <= v->ohi[2];
}

/* Fills in a subarray's box and owned box from its parent and ranges. */
static void view_derive(prog *p, view_def *v)
{
    const view_def *par = &p->views[v->parent];
    v->root = par->root;
    v->type = par->type;
    v->ndims = par->ndims;
    v->count = 1;
    v->ghost = false;
    for (int d = 0; d < 3; d++) {
        if (d < v->ndims) {
            uint64_t first = v->ranges[d].first;
            uint64_t last = v->ranges[d].last == HPL_END ? par->ext[d] - 1 : v->ranges[d].last;
            v->org[d] = par->org[d] + first;
            v->ext[d] = last - first + 1;
            if (v->has_owned) {
                v->olo[d] = par->org[d] + v->owned[d].first;
                v->ohi[d] = par->org[d] + v->owned[d].last;
            } else {
                v->olo[d] = v->org[d];
                v->ohi[d] = v->org[d] + v->ext[d] - 1;
            }
        } else {
            v->org[d] = v->olo[d] = v->ohi[d] = 0;
            v->ext[d] = 1;
        }
        v->count *= v->ext[d];
        if (v->olo[d] != v->org[d] || v->ohi[d] != v->org[d] + v->ext[d] - 1)
            v->ghost = true;
    }
}

/* Same parent, box and owned box: hpl_subarray returns the same handle. */
static bool views_same(const view_def *a, const view_def *b)
{
    if (a->parent != b->parent)
        return false;
    for (int d = 0; d < 3; d++)
        if (a->org[d] != b->org[d] || a->ext[d] != b->ext[d] || a->olo[d] != b->olo[d] || a->ohi[d] != b->ohi[d])
            return false;
    return true;
}

/* Multi-device evals (OP_ADD, OP_ADD2 with mode > 0): every view is split
 * along dimension split_dim with split_overlap halo elements (OP_ADD, in
 * place, with none: an in-place kernel's halo writes would land on
 * zero-copy devices), over a device list drawn from the op's seed. */
static int split_dim(const op *o, int ndims)
{
    return (o->mode - 1) % 3 % ndims;
}

static int split_overlap(const op *o)
{
    return (o->mode - 1) / 3;
}

/* 1..ndev distinct devices in an order drawn from seed. */
static int split_devices(uint32_t seed, int ndev, int *out)
{
    for (int i = 0; i < ndev; i++)
        out[i] = i;
    uint64_t x = seed;
    for (int i = ndev - 1; i > 0; i--) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((x >> 33) % (uint64_t)(i + 1));
        int t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    return 1 + (int)(seed % (uint32_t)ndev);
}

static const char *where_name(int where, char *buf, size_t n)
{
    if (where == HPL_ON_HOST)
        snprintf(buf, n, "host");
    else if (where == HPL_WHERE_LAST_USED)
        snprintf(buf, n, "last-used");
    else
        snprintf(buf, n, "dev %d", where);
    return buf;
}

static void fmt_box(char *buf, size_t n, int ndims, const uint64_t *lo, const uint64_t *hi)
{
    size_t o = 0;
    for (int d = 0; d < ndims && o < n; d++)
        o += (size_t)snprintf(buf + o, n - o, "[%" PRIu64 "..%" PRIu64 "]", lo[d], hi[d]);
}

static void fmt_ranges(char *buf, size_t n, int ndims, const hpl_range *r)
{
    size_t o = 0;
    for (int d = 0; d < ndims && o < n; d++) {
        if (r[d].last == HPL_END)
            o += (size_t)snprintf(buf + o, n - o, "[%" PRIu64 "..END]", r[d].first);
        else
            o += (size_t)snprintf(buf + o, n - o, "[%" PRIu64 "..%" PRIu64 "]", r[d].first, r[d].last);
    }
}

static void fmt_root(const prog *p, int r, char *buf, size_t n)
{
    const root_def *rd = &p->roots[r];
    char dims[64];
    if (rd->ndims == 1)
        snprintf(dims, sizeof dims, "%" PRIu64, rd->dims[0]);
    else if (rd->ndims == 2)
        snprintf(dims, sizeof dims, "%" PRIu64 "x%" PRIu64, rd->dims[0], rd->dims[1]);
    else
        snprintf(dims, sizeof dims, "%" PRIu64 "x%" PRIu64 "x%" PRIu64, rd->dims[0], rd->dims[1], rd->dims[2]);
    if (rd->user)
        snprintf(buf, n, "r%d: %s %d-D %s, user storage initialised to (hash(%u, i) %% 201) - 100", r,
                 hpl_type_name(rd->type), rd->ndims, dims, rd->init);
    else
        snprintf(buf, n, "r%d: %s %d-D %s, library storage (zeros)", r, hpl_type_name(rd->type), rd->ndims, dims);
}

/* One readable line per operation. */
static void fmt_op(const prog *p, const op *o, char *buf, size_t n)
{
    char w[32], b1[96], b2[96], b3[96];
    const view_def *a = o->a >= 0 ? &p->views[o->a] : NULL;
    switch (o->kind) {
    case OP_SUB:
        fmt_ranges(b1, sizeof b1, a->ndims, a->ranges);
        {
            uint64_t hi[3];
            for (int d = 0; d < 3; d++)
                hi[d] = a->org[d] + a->ext[d] - 1;
            fmt_box(b3, sizeof b3, a->ndims, a->org, hi);
        }
        if (a->has_owned) {
            uint64_t lo[3], hi[3];
            for (int d = 0; d < 3; d++) {
                lo[d] = a->owned[d].first;
                hi[d] = a->owned[d].last;
            }
            fmt_box(b2, sizeof b2, a->ndims, lo, hi);
            snprintf(buf, n, "v%d = hpl_subarray_owned(v%d, %s, owned %s)   [root r%d box %s%s]", o->a, a->parent,
                     b1, b2, a->root, b3, a->ghost ? ", has a ghost part" : ", owned = whole");
        } else {
            snprintf(buf, n, "v%d = hpl_subarray(v%d, %s)   [root r%d box %s]", o->a, a->parent, b1, a->root, b3);
        }
        break;
    case OP_DESTROY: snprintf(buf, n, "hpl_array_destroy(v%d)", o->a); break;
    case OP_READ:
        snprintf(buf, n, "read v%d with %s, compare", o->a, o->mode == 0 ? "hpl_array_read" : "hpl_array_access(READ)");
        break;
    case OP_WRITE:
        if (o->mode == 0)
            snprintf(buf, n, "hpl_array_write(v%d, values hash(%u, i) %% 2001 - 1000)", o->a, o->seed);
        else if (o->mode == 1)
            snprintf(buf, n, "hpl_array_access(v%d, WRITE): %sowned = hash(%u, i) %% 2001 - 1000", o->a,
                     a->ghost ? "compare ghost part, " : "", o->seed);
        else
            snprintf(buf, n,
                     "hpl_array_access(v%d, READ_WRITE): compare, then owned elements with hash(%u, i) %% 3 == 0 "
                     "= hash %% 2001 - 1000",
                     o->a, o->seed);
        break;
    case OP_ADD:
    case OP_ADD2: {
        char on[64];
        if (o->mode)
            snprintf(on, sizeof on, "split (dim %d, overlap %d, device list seed %u)", split_dim(o, 3),
                     o->kind == OP_ADD ? 0 : split_overlap(o), o->seed);
        else
            snprintf(on, sizeof on, "on dev %d", o->where);
        if (o->kind == OP_ADD)
            snprintf(buf, n, "eval %s: v%d += %d", on, o->a, o->c);
        else
            snprintf(buf, n, "eval %s: v%d = v%d + %d", on, o->a, o->b, o->c);
        break;
    }
    case OP_ASSIGN:
        snprintf(buf, n, "hpl_array_assign(v%d, v%d, %s)", o->a, o->b, where_name(o->where, w, sizeof w));
        break;
    case OP_FILL:
        snprintf(buf, n, "hpl_array_fill(v%d, %d, %s)", o->a, o->c, where_name(o->where, w, sizeof w));
        break;
    case OP_WAIT: snprintf(buf, n, "hpl_array_wait(v%d)", o->a); break;
    case OP_FINISH: snprintf(buf, n, "hpl_finish()"); break;
    case OP_RECREATE:
        if (p->roots[o->a].user)
            snprintf(buf, n,
                     "hpl_array_destroy(r%d) (its subarrays with it), then a new r%d of the same shape on new user "
                     "storage initialised to (hash(%u, i) %% 201) - 100",
                     o->a, o->a, o->seed);
        else
            snprintf(buf, n,
                     "hpl_array_destroy(r%d) (its subarrays with it), then a new r%d of the same shape (zeros)", o->a,
                     o->a);
        break;
    default: snprintf(buf, n, "?"); break;
    }
}

/* ---- generation -------------------------------------------------------------- */

typedef struct gen {
    prog *p;
    rng r;
    bool *live;
    int *children; /* live child views */
    int *subs;     /* live subarray view ids */
    int nsubs;
} gen;

static op *emit(gen *g, op o)
{
    prog *p = g->p;
    if (p->nops == p->cap_ops) {
        p->cap_ops = p->cap_ops ? 2 * p->cap_ops : 1024;
        p->ops = realloc(p->ops, sizeof(op) * (size_t)p->cap_ops);
        if (!p->ops) {
            fprintf(stderr, "FATAL: out of host memory\n");
            exit(1);
        }
    }
    p->ops[p->nops] = o;
    return &p->ops[p->nops++];
}

static int new_view_slot(gen *g)
{
    prog *p = g->p;
    if (p->nviews == p->cap_views) {
        int cap = 2 * p->cap_views;
        p->views = realloc(p->views, sizeof(view_def) * (size_t)cap);
        g->live = realloc(g->live, sizeof(bool) * (size_t)cap);
        g->children = realloc(g->children, sizeof(int) * (size_t)cap);
        g->subs = realloc(g->subs, sizeof(int) * (size_t)cap);
        if (!p->views || !g->live || !g->children || !g->subs) {
            fprintf(stderr, "FATAL: out of host memory\n");
            exit(1);
        }
        p->cap_views = cap;
    }
    int id = p->nviews;
    memset(&p->views[id], 0, sizeof(view_def));
    g->live[id] = false;
    g->children[id] = 0;
    return id;
}

/* Registers the view just filled in at slot p->nviews (parent, ranges, owned
 * set) unless a live one is the same; emits its OP_SUB. -1 when a duplicate. */
static int find_same(gen *g, const view_def *v)
{
    for (int i = 0; i < g->nsubs; i++)
        if (views_same(&g->p->views[g->subs[i]], v))
            return g->subs[i];
    return -1;
}

static int commit_view(gen *g)
{
    prog *p = g->p;
    int id = p->nviews;
    view_def *v = &p->views[id];
    view_derive(p, v);
    if (find_same(g, v) >= 0)
        return -1;
    p->nviews++;
    g->live[id] = true;
    g->children[v->parent]++;
    g->subs[g->nsubs++] = id;
    emit(g, (op){.kind = OP_SUB, .a = id, .b = -1});
    return id;
}

/* A random owned box inside [first, last] of each dimension (parent
 * coordinates): a halo of 0..2 elements cut from each side. */
static void random_owned(gen *g, view_def *v, const uint64_t first[3], const uint64_t last[3])
{
    v->has_owned = below(&g->r, 10) < 4;
    if (!v->has_owned)
        return;
    for (int d = 0; d < v->ndims; d++) {
        uint64_t len = last[d] - first[d] + 1;
        uint64_t lo = below(&g->r, len < 3 ? len : 3);
        uint64_t hi = below(&g->r, len - lo < 3 ? len - lo : 3);
        v->owned[d].first = first[d] + lo;
        v->owned[d].last = last[d] - hi;
    }
}

/* A random subarray of a random live view. */
static int gen_random_sub(gen *g)
{
    prog *p = g->p;
    int parent;
    if (g->nsubs > 0 && below(&g->r, 3) == 0)
        parent = g->subs[below(&g->r, (uint64_t)g->nsubs)];
    else
        parent = (int)below(&g->r, (uint64_t)p->nroots);
    int id = new_view_slot(g);
    view_def *v = &p->views[id];
    const view_def *par = &p->views[parent];
    v->parent = parent;
    v->ndims = par->ndims;
    uint64_t first[3], last[3];
    for (int d = 0; d < v->ndims; d++) {
        uint64_t ext = par->ext[d];
        /* Mostly sizable boxes, sometimes thin ones. */
        uint64_t len = below(&g->r, 4) == 0 ? 1 + below(&g->r, ext < 3 ? ext : 3) : 1 + below(&g->r, ext);
        if (below(&g->r, 2))
            len = len + below(&g->r, ext - len + 1); /* at least as long, at most ext */
        first[d] = below(&g->r, ext - len + 1);
        last[d] = first[d] + len - 1;
        v->ranges[d].first = first[d];
        v->ranges[d].last = (last[d] == ext - 1 && below(&g->r, 3) == 0) ? HPL_END : last[d];
    }
    random_owned(g, v, first, last);
    return commit_view(g);
}

static int pick_view(gen *g)
{
    if (g->nsubs == 0 || below(&g->r, 10) < 3)
        return (int)below(&g->r, (uint64_t)g->p->nroots);
    return g->subs[below(&g->r, (uint64_t)g->nsubs)];
}

/* A live view with v's type and extents that does not overlap it, often a new
 * subarray made for the purpose; -1 if none. */
/* A third of the evals split over several devices (see split_dim). */
static void random_split(gen *g, op *o)
{
    if (below(&g->r, 3) == 0) {
        o->mode = 1 + (uint8_t)below(&g->r, 9);
        o->seed = (uint32_t)splitmix(&g->r.s);
    }
}

static int find_partner(gen *g, int vid)
{
    prog *p = g->p;
    const view_def vcopy = p->views[vid], *v = &vcopy; /* new_view_slot may move p->views */
    int cand[64], nc = 0;
    for (int i = -p->nroots; i < g->nsubs && nc < 64; i++) {
        int w = i < 0 ? i + p->nroots : g->subs[i];
        const view_def *x = &p->views[w];
        if (w == vid || x->type != v->type || x->ndims != v->ndims || boxes_overlap(v, x))
            continue;
        if (x->ext[0] != v->ext[0] || x->ext[1] != v->ext[1] || x->ext[2] != v->ext[2])
            continue;
        cand[nc++] = w;
    }
    if (nc > 0 && (g->nsubs >= MAX_LIVE_SUBS || below(&g->r, 10) < 6))
        return cand[below(&g->r, (uint64_t)nc)];
    /* Make one: a box of v's extents in a root of its type (v's own root
     * included, away from v), as a subarray of a live view containing it. */
    for (int attempt = 0; attempt < 8; attempt++) {
        int r = (int)below(&g->r, (uint64_t)p->nroots);
        const root_def *rd = &p->roots[r];
        if (rd->type != v->type || rd->ndims != v->ndims)
            continue;
        if (rd->dims[0] < v->ext[0] || rd->dims[1] < v->ext[1] || rd->dims[2] < v->ext[2])
            continue;
        view_def box = {.root = r};
        for (int d = 0; d < 3; d++) {
            box.ext[d] = v->ext[d];
            box.org[d] = below(&g->r, rd->dims[d] - v->ext[d] + 1);
        }
        if (boxes_overlap(&box, v))
            continue;
        /* Parents: live views of root r containing the box. */
        int parents[64], np = 0;
        parents[np++] = r;
        for (int i = 0; i < g->nsubs && np < 64; i++) {
            const view_def *x = &p->views[g->subs[i]];
            if (x->root != r)
                continue;
            bool inside = true;
            for (int d = 0; d < 3; d++)
                if (box.org[d] < x->org[d] || box.org[d] + box.ext[d] > x->org[d] + x->ext[d])
                    inside = false;
            if (inside)
                parents[np++] = g->subs[i];
        }
        int parent = parents[below(&g->r, (uint64_t)np)];
        int id = new_view_slot(g);
        view_def *nv = &p->views[id];
        const view_def *par = &p->views[parent];
        nv->parent = parent;
        nv->ndims = par->ndims;
        uint64_t first[3], last[3];
        for (int d = 0; d < nv->ndims; d++) {
            first[d] = box.org[d] - par->org[d];
            last[d] = first[d] + box.ext[d] - 1;
            nv->ranges[d].first = first[d];
            nv->ranges[d].last = (last[d] == par->ext[d] - 1 && below(&g->r, 3) == 0) ? HPL_END : last[d];
        }
        random_owned(g, nv, first, last);
        int made = commit_view(g);
        if (made >= 0)
            return made;
    }
    return nc > 0 ? cand[below(&g->r, (uint64_t)nc)] : -1;
}

/* The stencil pattern owned boxes are made for: root r split along
 * dimension 0 into one slab per device, each a subarray with a halo of one
 * row on each side (the ghost part, owned by the neighbours) and its slab as
 * owned box; then rounds of x += c on every slab, slab k on device
 * (k + round) % ndev, and a read. */
static void gen_partition(gen *g)
{
    prog *p = g->p;
    int r = (int)below(&g->r, (uint64_t)p->nroots);
    const root_def *rd = &p->roots[r];
    int parts = p->ndev < (int)rd->dims[0] ? p->ndev : (int)rd->dims[0];
    if (parts < 2)
        return;
    int ids[8];
    for (int k = 0; k < parts; k++) {
        uint64_t lo = rd->dims[0] * (uint64_t)k / (uint64_t)parts;
        uint64_t hi = rd->dims[0] * (uint64_t)(k + 1) / (uint64_t)parts - 1;
        int id = new_view_slot(g);
        view_def *v = &p->views[id];
        v->parent = r;
        v->ndims = rd->ndims;
        v->has_owned = true;
        v->ranges[0] = (hpl_range){lo > 0 ? lo - 1 : 0, hi + 1 < rd->dims[0] ? hi + 1 : HPL_END};
        v->owned[0] = (hpl_range){lo, hi};
        for (int d = 1; d < rd->ndims; d++) {
            v->ranges[d] = (hpl_range){0, HPL_END};
            v->owned[d] = (hpl_range){0, rd->dims[d] - 1};
        }
        view_derive(p, v);
        int same = find_same(g, v);
        ids[k] = same >= 0 ? same : commit_view(g);
    }
    int rounds = 1 + (int)below(&g->r, 3);
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < parts; k++)
            emit(g, (op){.kind = OP_ADD, .a = ids[k], .b = -1, .where = (k + round) % p->ndev,
                         .c = (int32_t)between(&g->r, -9, 9)});
    emit(g, (op){.kind = OP_READ, .a = below(&g->r, 2) ? r : ids[below(&g->r, (uint64_t)parts)], .b = -1,
                 .mode = (uint8_t)below(&g->r, 2)});
}

static int random_where(gen *g, bool host_choices)
{
    uint64_t k = below(&g->r, 10);
    if (host_choices && k == 0)
        return HPL_ON_HOST;
    if (host_choices && k <= 2)
        return HPL_WHERE_LAST_USED;
    return (int)below(&g->r, (uint64_t)g->p->ndev);
}

static void gen_roots(gen *g)
{
    prog *p = g->p;
    rng *r = &g->r;
    p->nroots = (int)between(r, 14, MAX_ROOTS);
    for (int i = 0; i < p->nroots; i++) {
        root_def *rd = &p->roots[i];
        rd->type = below(r, 2) ? HPL_FLOAT32 : HPL_INT32;
        if (i < N_LARGE) {
            /* Large 1-D arrays (32..96 KiB): the memory pressure. Any two
             * fit in the device memory limit together. */
            rd->ndims = 1;
            rd->dims[0] = (uint64_t)between(r, 8000, 24000);
        } else if (i > N_LARGE && below(r, 10) < 4) {
            /* Same shape as an earlier small root (whole-array assignments). */
            const root_def *o = &p->roots[between(r, N_LARGE, i - 1)];
            rd->ndims = o->ndims;
            memcpy(rd->dims, o->dims, sizeof rd->dims);
            if (below(r, 3))
                rd->type = o->type;
        } else {
            rd->ndims = (int)between(r, 1, 3);
            if (rd->ndims == 1) {
                rd->dims[0] = (uint64_t)between(r, 1, 2000);
            } else if (rd->ndims == 2) {
                rd->dims[0] = (uint64_t)between(r, 1, 40);
                rd->dims[1] = (uint64_t)between(r, 1, 30);
            } else {
                rd->dims[0] = (uint64_t)between(r, 1, 12);
                rd->dims[1] = (uint64_t)between(r, 1, 10);
                rd->dims[2] = (uint64_t)between(r, 1, 8);
            }
        }
        for (int d = rd->ndims; d < 3; d++)
            rd->dims[d] = 1;
        rd->count = rd->dims[0] * rd->dims[1] * rd->dims[2];
        rd->user = below(r, 4) == 0;
        rd->init = (uint32_t)splitmix(&r->s);

        int id = new_view_slot(g);
        view_def *v = &p->views[id];
        v->parent = -1;
        v->root = i;
        v->type = rd->type;
        v->ndims = rd->ndims;
        v->count = rd->count;
        for (int d = 0; d < 3; d++) {
            v->ranges[d] = (hpl_range){0, rd->dims[d] - 1};
            v->ext[d] = rd->dims[d];
            v->ohi[d] = rd->dims[d] - 1;
        }
        p->nviews++;
        g->live[id] = true;
    }
}

static void generate(prog *p, uint64_t seed, int nops)
{
    memset(p, 0, sizeof *p);
    gen g = {.p = p, .r = {seed}};
    p->seed = seed;
    p->requested = nops;
    p->ndev = 3 + (int)below(&g.r, 2);
    /* As the harness: "cpu:ndev", TH_DEVICE_KIND=gpu making it the GPU as
     * ndev logical devices, TH_ZERO_COPY_FIRST=1 the first a zero-copy CPU. */
    char base[16];
    snprintf(base, sizeof base, "cpu:%d", p->ndev);
    th_device_list(base, HPL_ZERO_COPY_AUTO, p->devices, sizeof p->devices);
    p->zc_first = strstr(p->devices, "+zc") != NULL;
    p->cap_views = 256;
    p->views = xcalloc((size_t)p->cap_views, sizeof(view_def));
    g.live = xcalloc((size_t)p->cap_views, sizeof(bool));
    g.children = xcalloc((size_t)p->cap_views, sizeof(int));
    g.subs = xcalloc((size_t)p->cap_views, sizeof(int));
    gen_roots(&g);
    /* Device memory limit: room for the two largest roots (what one
     * operation may hold) plus 8..128 KiB; the roots take more than that. */
    uint64_t big1 = 0, big2 = 0;
    for (int i = 0; i < p->nroots; i++) {
        uint64_t b = p->roots[i].count * 4;
        if (b > big1) {
            big2 = big1;
            big1 = b;
        } else if (b > big2) {
            big2 = b;
        }
    }
    p->limit = big1 + big2 + ((uint64_t)between(&g.r, 8, 128) << 10);

    /* Operation mix, in percent. */
    static const struct {
        int kind, weight;
    } mix[] = {{OP_READ, 20}, {OP_WRITE, 8}, {OP_ADD, 24}, {OP_ADD2, 16}, {OP_ASSIGN, 12},
               {OP_FILL, 8},  {OP_SUB, 6},   {OP_DESTROY, 4}, {OP_WAIT, 1}, {OP_FINISH, 1}, {OP_RECREATE, 1},
               {GEN_PARTITION, 1}};
    int total = 0;
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++)
        total += mix[i].weight;

    int initial = nops / 8 < 16 ? nops / 8 : 16;
    for (int i = 0; i < initial; i++)
        gen_random_sub(&g);

    while (p->nops < nops) {
        int pick = (int)below(&g.r, (uint64_t)total), kind = OP_READ;
        for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++) {
            if (pick < mix[i].weight) {
                kind = mix[i].kind;
                break;
            }
            pick -= mix[i].weight;
        }
        if (kind == OP_SUB && g.nsubs >= MAX_LIVE_SUBS)
            kind = OP_DESTROY;
        op o = {.kind = (uint8_t)kind, .a = -1, .b = -1};
        switch (kind) {
        case GEN_PARTITION:
            if (g.nsubs < MAX_LIVE_SUBS)
                gen_partition(&g);
            break;
        case OP_SUB: gen_random_sub(&g); break;
        case OP_DESTROY: {
            /* A subarray without live children. */
            int nl = 0, si = -1;
            for (int i = 0; i < g.nsubs; i++)
                if (g.children[g.subs[i]] == 0 && below(&g.r, (uint64_t)++nl) == 0)
                    si = i; /* reservoir sampling */
            if (si < 0 || g.nsubs < 8)
                break;
            int vid = g.subs[si];
            o.a = vid;
            emit(&g, o);
            g.live[vid] = false;
            g.children[p->views[vid].parent]--;
            g.subs[si] = g.subs[--g.nsubs];
            break;
        }
        case OP_READ:
            o.a = pick_view(&g);
            o.mode = (uint8_t)below(&g.r, 2);
            emit(&g, o);
            break;
        case OP_WRITE:
            o.a = pick_view(&g);
            o.mode = (uint8_t)below(&g.r, 3);
            if (o.mode == 0 && p->views[o.a].ghost)
                o.mode = 1 + (uint8_t)below(&g.r, 2);
            o.seed = (uint32_t)splitmix(&g.r.s);
            emit(&g, o);
            break;
        case OP_ADD:
            o.a = pick_view(&g);
            o.c = (int32_t)between(&g.r, -9, 9);
            o.where = random_where(&g, false);
            random_split(&g, &o);
            emit(&g, o);
            break;
        case OP_ADD2:
        case OP_ASSIGN: {
            int v = pick_view(&g);
            int w = find_partner(&g, v);
            if (w < 0)
                break;
            bool swap = below(&g.r, 2);
            o.a = swap ? w : v;
            o.b = swap ? v : w;
            o.c = (int32_t)between(&g.r, -9, 9);
            o.where = random_where(&g, kind == OP_ASSIGN);
            if (kind == OP_ADD2)
                random_split(&g, &o);
            emit(&g, o);
            break;
        }
        case OP_FILL:
            o.a = pick_view(&g);
            o.c = (int32_t)between(&g.r, -1000, 1000);
            o.where = random_where(&g, true);
            emit(&g, o);
            break;
        case OP_WAIT:
            o.a = pick_view(&g);
            emit(&g, o);
            break;
        case OP_FINISH: emit(&g, o); break;
        case OP_RECREATE: {
            /* Only now and then: with 1% the roots would rarely hold data
             * written long ago. */
            if (below(&g.r, 3) != 0)
                break;
            int r = (int)below(&g.r, (uint64_t)p->nroots);
            o.a = r;
            o.seed = (uint32_t)splitmix(&g.r.s);
            emit(&g, o);
            for (int i = 0; i < g.nsubs;) {
                int vid = g.subs[i];
                if (p->views[vid].root == r) {
                    g.live[vid] = false;
                    g.children[vid] = 0;
                    g.subs[i] = g.subs[--g.nsubs];
                } else {
                    i++;
                }
            }
            g.children[r] = 0;
            break;
        }
        }
    }
    free(g.live);
    free(g.children);
    free(g.subs);
}

/* ---- execution ------------------------------------------------------------------ */

/* What the model knows of one element: its value, one of two (v or alt: a
 * ghost element a kernel wrote, hplvk.h 4b), or nothing (any value). A read
 * makes it known. */
enum { KNOWN, EITHER, ANY };
typedef struct cell {
    int32_t v, alt;
    uint8_t st;
} cell;

static cell known(int32_t v)
{
    return (cell){v, v, KNOWN};
}

static cell cell_plus(cell x, int32_t c)
{
    return (cell){x.v + c, x.alt + c, x.st};
}

/* A ghost element that held `before` and was written `written`. */
static cell either(cell before, cell written)
{
    if (before.st != KNOWN || written.st != KNOWN)
        return (cell){0, 0, ANY};
    return before.v == written.v ? before : (cell){before.v, written.v, EITHER};
}

/* What a run reports, in memory shared with the parent process: every run
 * (the main one and each replay) is a child process, so that a crash or a
 * hang in the library is a failure at a known operation, shrunk like a
 * mismatch. */
typedef struct outcome {
    volatile int cur;   /* position being executed: -1 setup, n the final read-back */
    volatile int beat;  /* bumped by every operation (progress, for the watchdog) */
    volatile int done;  /* the run finished and filled in what follows */
    bool failed;
    int fail_pos;       /* position in the sequence; -1 setup; n the final read-back or teardown */
    char msg[2048];
    bool have_stats;
    hpl_stats stats;
    bool after_run; /* failed at exit, after every check passed (a sanitizer report): not shrunk */
} outcome;

typedef struct exec {
    const prog *p;
    outcome *o;
    pthread_mutex_t lock; /* o->failed, o->msg: the log callback may run on any thread */
    hpl_context *ctx;
    hpl_array *h;
    bool *live;
    int *children;
    int *lsubs, nlsubs, *lpos; /* live subarrays, and where each is in lsubs */
    uint64_t (*hs)[3]; /* host strides per view */
    cell **model;      /* per root */
    void **user;       /* per root: user storage or NULL */
    hpl_kernel kadd[2][3], kadd2[2][3];
    int32_t *buf; /* dense scratch of the largest root */
    bool verbose;
    bool quiet; /* replays: print no log messages */
} exec;

static void vfailf(exec *e, int pos, const char *fmt, va_list ap)
{
    pthread_mutex_lock(&e->lock);
    if (!e->o->failed) {
        e->o->fail_pos = pos;
        vsnprintf(e->o->msg, sizeof e->o->msg, fmt, ap);
        e->o->failed = true;
    }
    pthread_mutex_unlock(&e->lock);
}

static void failf(exec *e, int pos, const char *fmt, ...) TH_PRINTF(3, 4);
static void failf(exec *e, int pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfailf(e, pos, fmt, ap);
    va_end(ap);
}

/* Every message of level WARNING and above (validation messages arrive as
 * ERROR) fails the run, at the operation running when it came. The library
 * logs the validation layer's known bugs at DEBUG: ignored. */
static void log_cb(void *user, hpl_log_level level, const char *message)
{
    exec *e = user;
    if (level < HPL_LOG_WARNING)
        return;
    if (!e->quiet)
        fprintf(stderr, "[hplvk log %s] %s\n", level == HPL_LOG_WARNING ? "WARNING" : "ERROR",
                message ? message : "(null)");
    failf(e, e->o->cur, "the library logged %s: %s", level == HPL_LOG_WARNING ? "a warning" : "an error",
          message ? message : "(null)");
}

static bool api(exec *e, int pos, int rc, const char *what)
{
    if (rc == HPL_OK)
        return true;
    failf(e, pos, "%s returned %s (%d): %s", what, hpl_error_name(rc), rc, hpl_last_error());
    return false;
}
#define API(e, pos, call) api((e), (pos), (call), #call)

static inline uint64_t midx(const root_def *rd, uint64_t a0, uint64_t a1, uint64_t a2)
{
    return (a0 * rd->dims[1] + a1) * rd->dims[2] + a2;
}

static inline void put(hpl_type t, void *base, uint64_t i, int32_t v)
{
    if (t == HPL_FLOAT32)
        ((float *)base)[i] = (float)v;
    else
        ((int32_t *)base)[i] = v;
}

static inline bool same(hpl_type t, const void *base, uint64_t i, int32_t want)
{
    if (t == HPL_FLOAT32)
        return ((const float *)base)[i] == (float)want;
    return ((const int32_t *)base)[i] == want;
}

/* Element i as the model's integer (false: a float no integer equals). */
static bool observed(hpl_type t, const void *base, uint64_t i, int32_t *out)
{
    if (t != HPL_FLOAT32) {
        *out = ((const int32_t *)base)[i];
        return true;
    }
    float f = ((const float *)base)[i];
    if (!(f >= -2147483648.0f && f < 2147483648.0f) || f != (float)(int32_t)f)
        return false;
    *out = (int32_t)f;
    return true;
}

static void fmt_val(hpl_type t, const void *base, uint64_t i, char *buf, size_t n)
{
    if (t == HPL_FLOAT32)
        snprintf(buf, n, "%.9g", (double)((const float *)base)[i]);
    else
        snprintf(buf, n, "%d", ((const int32_t *)base)[i]);
}

static const uint64_t *dense_strides(const view_def *v, uint64_t s[3])
{
    s[0] = v->ext[1] * v->ext[2];
    s[1] = v->ext[2];
    s[2] = 1;
    return s;
}

/* Compares a view's elements at `base` (strides s) with the model; with
 * ghost_only, only the elements outside its owned box. */
static bool check_view(exec *e, int pos, int vid, const void *base, const uint64_t s[3], bool ghost_only,
                       const char *how)
{
    const prog *p = e->p;
    const view_def *v = &p->views[vid];
    const root_def *rd = &p->roots[v->root];
    cell *m = e->model[v->root];
    uint64_t bad = 0, fi = 0, fj = 0, fk = 0, fidx = 0;
    cell fwant = {0};
    for (int pass = 0; pass < 2 && bad == 0; pass++) /* compare; then, all good, learn what the read showed */
        for (uint64_t i = 0; i < v->ext[0]; i++)
            for (uint64_t j = 0; j < v->ext[1]; j++)
                for (uint64_t k = 0; k < v->ext[2]; k++) {
                    uint64_t a0 = v->org[0] + i, a1 = v->org[1] + j, a2 = v->org[2] + k;
                    if (ghost_only && in_owned(v, a0, a1, a2))
                        continue;
                    uint64_t idx = i * s[0] + j * s[1] + k * s[2];
                    cell *want = &m[midx(rd, a0, a1, a2)];
                    int32_t got = 0;
                    if (pass == 1) {
                        observed(v->type, base, idx, &got);
                        *want = known(got);
                        continue;
                    }
                    bool ok = want->st == ANY ? observed(v->type, base, idx, &got)
                                              : same(v->type, base, idx, want->v) ||
                                                    (want->st == EITHER && same(v->type, base, idx, want->alt));
                    if (!ok && bad++ == 0) {
                        fi = i, fj = j, fk = k, fidx = idx, fwant = *want;
                    }
                }
    if (bad == 0)
        return true;
    char got[48], wanted[48];
    fmt_val(v->type, base, fidx, got, sizeof got);
    if (fwant.st == EITHER)
        snprintf(wanted, sizeof wanted, "%d or %d", fwant.v, fwant.alt);
    else if (fwant.st == ANY)
        snprintf(wanted, sizeof wanted, "an integer");
    else
        snprintf(wanted, sizeof wanted, "%d", fwant.v);
    failf(e, pos,
          "MISMATCH (%s) in v%d (root r%d %s): element (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") of the view = root (%" PRIu64
          ",%" PRIu64 ",%" PRIu64 ")%s: expected %s got %s; %" PRIu64 " of %" PRIu64 " compared elements differ",
          how, vid, v->root, hpl_type_name(v->type), fi, fj, fk, v->org[0] + fi, v->org[1] + fj, v->org[2] + fk,
          in_owned(v, v->org[0] + fi, v->org[1] + fj, v->org[2] + fk) ? "" : " (ghost part)", wanted, got, bad,
          v->count);
    return false;
}

static int32_t write_value(uint32_t seed, uint64_t dense)
{
    return (int32_t)(hash2(seed, (uint32_t)dense) % 2001) - 1000;
}

static const char *glsl_type(hpl_type t)
{
    return t == HPL_FLOAT32 ? "float" : "int";
}

static void kernel_source(char *buf, size_t n, bool add2, hpl_type t, int nd)
{
    const char *T = glsl_type(t);
    static const char *at_y[3] = {"hpl_at(y, id.x)", "hpl_at2(y, id.x, id.y)", "hpl_at3(y, id.x, id.y, id.z)"};
    static const char *at_x[3] = {"hpl_at(x, id.x)", "hpl_at2(x, id.x, id.y)", "hpl_at3(x, id.x, id.y, id.z)"};
    if (add2)
        snprintf(buf, n,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_out(%s, %d) y; hpl_in(%s, %d) x; %s c; };\n"
                 "void main() { uvec3 id = hpl_global_id; %s = %s + c; }\n",
                 T, nd, T, nd, T, at_y[nd - 1], at_x[nd - 1]);
    else
        snprintf(buf, n,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_inout(%s, %d) x; %s c; };\n"
                 "void main() { uvec3 id = hpl_global_id; %s = %s + c; }\n",
                 T, nd, T, at_x[nd - 1], at_x[nd - 1]);
}

static hpl_arg scalar(hpl_type t, int32_t c)
{
    return t == HPL_FLOAT32 ? hpl_f32((float)c) : hpl_i32(c);
}

/* Creates root r (its model too): zeros, or user storage initialised from
 * `init`. */
static bool create_root(exec *e, int pos, int r, uint32_t init)
{
    const root_def *rd = &e->p->roots[r];
    for (uint64_t i = 0; i < rd->count; i++)
        e->model[r][i] = known(0);
    if (rd->user) {
        size_t bytes = (rd->count * 4 + 4095) / 4096 * 4096;
        e->user[r] = aligned_alloc(4096, bytes);
        if (!e->user[r]) {
            fprintf(stderr, "FATAL: out of host memory\n");
            exit(1);
        }
        for (uint64_t i = 0; i < rd->count; i++) {
            int32_t v = (int32_t)(hash2(init, (uint32_t)i) % 201) - 100;
            e->model[r][i] = known(v);
            put(rd->type, e->user[r], i, v);
        }
    }
    char name[16];
    snprintf(name, sizeof name, "r%d", r);
    hpl_array_desc ad = {.type = rd->type, .host = e->user[r], .name = name};
    for (int d = 0; d < rd->ndims; d++)
        ad.dims[d] = rd->dims[d];
    if (!API(e, pos, hpl_array_create(e->ctx, &ad, &e->h[r])))
        return false;
    hpl_array_info info;
    if (!API(e, pos, hpl_array_get_info(e->ctx, e->h[r], &info)))
        return false;
    uint64_t want_hs[3] = {rd->dims[1] * rd->dims[2], rd->dims[2], 1};
    bool ok = !info.is_subarray && info.root.id == e->h[r].id && info.ndims == rd->ndims && info.count == rd->count;
    for (int d = 0; d < rd->ndims; d++)
        ok = ok && info.dims[d] == rd->dims[d] && info.host_stride[d] == want_hs[d];
    if (!ok) {
        failf(e, pos, "hpl_array_get_info(r%d) disagrees with its description", r);
        return false;
    }
    memcpy(e->hs[r], info.host_stride, sizeof info.host_stride);
    e->live[r] = true;
    return true;
}

static bool setup(exec *e, const prog *p)
{
    hpl_context_desc desc = {.devices = p->devices,
                             .zero_copy = p->zc_first ? HPL_ZERO_COPY_AUTO : HPL_ZERO_COPY_OFF,
                             .device_memory_limit = p->limit};
    desc.log = log_cb;
    desc.log_user = e; /* validation: HPLVK_VALIDATION decides */
    if (!API(e, -1, hpl_context_create(&desc, &e->ctx)))
        return false;
    int nd = hpl_device_count(e->ctx);
    if (nd != p->ndev) {
        failf(e, -1, "%s opened %d devices", p->devices, nd);
        return false;
    }
    /* The mix is what was asked for: only device 0 zero-copy, and only with
     * TH_ZERO_COPY_FIRST=1. */
    for (int d = 0; d < nd; d++) {
        hpl_device_info info;
        if (!API(e, -1, hpl_device_get_info(e->ctx, d, &info)))
            return false;
        if (info.zero_copy != (p->zc_first && d == 0)) {
            failf(e, -1, "%s: device %d is%s zero-copy", p->devices, d, info.zero_copy ? "" : " not");
            return false;
        }
    }
    for (int t = 0; t < 2; t++)
        for (int d = 1; d <= 3; d++)
            for (int k = 0; k < 2; k++) {
                char src[512];
                hpl_type type = t ? HPL_INT32 : HPL_FLOAT32;
                kernel_source(src, sizeof src, k, type, d);
                hpl_kernel *out = k ? &e->kadd2[t][d - 1] : &e->kadd[t][d - 1];
                if (!API(e, -1, hpl_kernel_create(e->ctx, &(hpl_kernel_desc){.source.glsl = src}, out)))
                    return false;
            }
    uint64_t maxc = 1;
    for (int r = 0; r < p->nroots; r++) {
        if (p->roots[r].count > maxc)
            maxc = p->roots[r].count;
        e->model[r] = xcalloc(p->roots[r].count, sizeof(cell));
        if (!create_root(e, -1, r, p->roots[r].init))
            return false;
    }
    e->buf = xcalloc(maxc, sizeof(int32_t));
    return true;
}

/* The library's description of a new subarray against the model's. */
static bool check_info(exec *e, int pos, int vid)
{
    const view_def *v = &e->p->views[vid];
    const root_def *rd = &e->p->roots[v->root];
    hpl_array_info info;
    if (!API(e, pos, hpl_array_get_info(e->ctx, e->h[vid], &info)))
        return false;
    uint64_t want_hs[3] = {rd->dims[1] * rd->dims[2], rd->dims[2], 1};
    bool ok = info.is_subarray && info.type == v->type && info.ndims == v->ndims && info.count == v->count &&
              info.bytes == v->count * 4 && info.root.id == e->h[v->root].id &&
              info.parent.id == e->h[v->parent].id;
    for (int d = 0; d < v->ndims; d++)
        ok = ok && info.dims[d] == v->ext[d] && info.origin[d] == v->org[d] &&
             info.owned_first[d] == v->olo[d] - v->org[d] && info.owned_last[d] == v->ohi[d] - v->org[d] &&
             info.host_stride[d] == want_hs[d];
    if (!ok) {
        failf(e, pos,
              "hpl_array_get_info(v%d) disagrees with the model: is_subarray %d ndims %d (want %d) dims %" PRIu64
              "x%" PRIu64 "x%" PRIu64 " (want %" PRIu64 "x%" PRIu64 "x%" PRIu64 ") origin %" PRIu64 ",%" PRIu64
              ",%" PRIu64 " (want %" PRIu64 ",%" PRIu64 ",%" PRIu64 ") owned_first %" PRIu64 ",%" PRIu64 ",%" PRIu64
              " owned_last %" PRIu64 ",%" PRIu64 ",%" PRIu64 " host_stride %" PRIu64 ",%" PRIu64 ",%" PRIu64,
              vid, info.is_subarray, info.ndims, v->ndims, info.dims[0], info.dims[1], info.dims[2], v->ext[0],
              v->ext[1], v->ext[2], info.origin[0], info.origin[1], info.origin[2], v->org[0], v->org[1], v->org[2],
              info.owned_first[0], info.owned_first[1], info.owned_first[2], info.owned_last[0], info.owned_last[1],
              info.owned_last[2], info.host_stride[0], info.host_stride[1], info.host_stride[2]);
        return false;
    }
    memcpy(e->hs[vid], info.host_stride, sizeof info.host_stride);
    return true;
}

/* Model of a write through dst. Each owned element becomes src's
 * corresponding element + c (src a view), c (src -1), or itself + c (src
 * -2, in place). With ghost (a kernel writing all of dst), each element of
 * its ghost part becomes either its value or that one (hplvk.h 4b). */
static void model_write(exec *e, int dst, int src, int32_t c, bool ghost)
{
    const prog *p = e->p;
    const view_def *y = &p->views[dst];
    const root_def *ry = &p->roots[y->root];
    cell *my = e->model[y->root];
    for (uint64_t a0 = y->org[0]; a0 < y->org[0] + y->ext[0]; a0++)
        for (uint64_t a1 = y->org[1]; a1 < y->org[1] + y->ext[1]; a1++)
            for (uint64_t a2 = y->org[2]; a2 < y->org[2] + y->ext[2]; a2++) {
                bool owned = in_owned(y, a0, a1, a2);
                if (!owned && !ghost)
                    continue;
                cell *at = &my[midx(ry, a0, a1, a2)], v = known(c);
                if (src >= 0) {
                    const view_def *x = &p->views[src];
                    v = cell_plus(e->model[x->root][midx(&p->roots[x->root], a0 - y->org[0] + x->org[0],
                                                         a1 - y->org[1] + x->org[1], a2 - y->org[2] + x->org[2])],
                                  c);
                } else if (src == -2) { /* in place: += c */
                    v = cell_plus(*at, c);
                }
                *at = owned ? v : either(*at, v);
            }
}

static void exec_op(exec *e, int pos, const op *o)
{
    const prog *p = e->p;
    hpl_context *ctx = e->ctx;
    /* Skip operations on views this (sub)sequence has not created. */
    if (o->kind == OP_SUB) {
        const view_def *v = &p->views[o->a];
        if (!e->live[v->parent] || e->live[o->a])
            return;
        for (int i = 0; i < e->nlsubs; i++)
            if (views_same(&p->views[e->lsubs[i]], v))
                return; /* hpl_subarray would return that one */
    } else {
        if (o->a >= 0 && !e->live[o->a])
            return;
        if (o->b >= 0 && !e->live[o->b])
            return;
    }
    if (e->verbose) {
        char line[512];
        fmt_op(p, o, line, sizeof line);
        fprintf(stderr, "  #%d %s\n", pos, line);
    }
    const view_def *v = o->a >= 0 ? &p->views[o->a] : NULL;
    hpl_array h = o->a >= 0 ? e->h[o->a] : (hpl_array){0};
    uint64_t s[3];
    void *ptr = NULL;
    int ti = v && v->type == HPL_INT32 ? 1 : 0;
    switch (o->kind) {
    case OP_SUB: {
        hpl_array out = {0};
        int rc = v->has_owned
                     ? hpl_subarray_owned(ctx, e->h[v->parent], v->ndims, v->ranges, v->owned, &out)
                     : hpl_subarray(ctx, e->h[v->parent], v->ndims, v->ranges, &out);
        if (!api(e, pos, rc, v->has_owned ? "hpl_subarray_owned" : "hpl_subarray"))
            return;
        e->h[o->a] = out;
        e->live[o->a] = true;
        e->children[v->parent]++;
        e->lpos[o->a] = e->nlsubs;
        e->lsubs[e->nlsubs++] = o->a;
        check_info(e, pos, o->a);
        break;
    }
    case OP_DESTROY:
        if (e->children[o->a] > 0)
            return; /* its children would go too (the generator never does this) */
        if (!API(e, pos, hpl_array_destroy(ctx, h)))
            return;
        e->live[o->a] = false;
        e->children[v->parent]--;
        {
            int at = e->lpos[o->a], last = e->lsubs[--e->nlsubs];
            e->lsubs[at] = last;
            e->lpos[last] = at;
        }
        break;
    case OP_READ:
        if (o->mode == 0) {
            if (API(e, pos, hpl_array_read(ctx, h, e->buf, v->count * 4)))
                check_view(e, pos, o->a, e->buf, dense_strides(v, s), false, "hpl_array_read");
        } else {
            if (API(e, pos, hpl_array_access(ctx, h, HPL_READ, &ptr)))
                check_view(e, pos, o->a, ptr, e->hs[o->a], false, "hpl_array_access READ");
        }
        break;
    case OP_WRITE: {
        const root_def *rd = &p->roots[v->root];
        cell *m = e->model[v->root];
        if (o->mode == 0) {
            for (uint64_t i = 0; i < v->count; i++)
                put(v->type, e->buf, i, write_value(o->seed, i));
            if (!API(e, pos, hpl_array_write(ctx, h, e->buf, v->count * 4)))
                return;
            for (uint64_t i = 0; i < v->ext[0]; i++)
                for (uint64_t j = 0; j < v->ext[1]; j++)
                    for (uint64_t k = 0; k < v->ext[2]; k++)
                        m[midx(rd, v->org[0] + i, v->org[1] + j, v->org[2] + k)] =
                            known(write_value(o->seed, (i * v->ext[1] + j) * v->ext[2] + k));
            break;
        }
        bool rw = o->mode == 2;
        if (!API(e, pos, hpl_array_access(ctx, h, rw ? HPL_READ_WRITE : HPL_WRITE, &ptr)))
            return;
        if (rw)
            check_view(e, pos, o->a, ptr, e->hs[o->a], false, "hpl_array_access READ_WRITE");
        else if (v->ghost)
            check_view(e, pos, o->a, ptr, e->hs[o->a], true, "ghost part after hpl_array_access WRITE");
        const uint64_t *hs = e->hs[o->a];
        for (uint64_t i = 0; i < v->ext[0]; i++)
            for (uint64_t j = 0; j < v->ext[1]; j++)
                for (uint64_t k = 0; k < v->ext[2]; k++) {
                    uint64_t a0 = v->org[0] + i, a1 = v->org[1] + j, a2 = v->org[2] + k;
                    if (!in_owned(v, a0, a1, a2))
                        continue;
                    uint64_t dense = (i * v->ext[1] + j) * v->ext[2] + k;
                    if (rw && hash2(o->seed, (uint32_t)dense) % 3 != 0)
                        continue;
                    int32_t val = write_value(o->seed, dense);
                    put(v->type, ptr, i * hs[0] + j * hs[1] + k * hs[2], val);
                    m[midx(rd, a0, a1, a2)] = known(val);
                }
        break;
    }
    case OP_ADD: {
        hpl_launch l = {.device = o->where};
        hpl_arg x = hpl_arr(h);
        if (o->mode) {
            l = (hpl_launch){0};
            l.device_count = split_devices(o->seed, p->ndev, l.devices);
            x = hpl_part(h, split_dim(o, v->ndims), 0);
        }
        if (API(e, pos, hpl_eval(ctx, e->kadd[ti][v->ndims - 1], &l, HPL_ARGS(x, scalar(v->type, o->c)))))
            model_write(e, o->a, -2, o->c, true);
        break;
    }
    case OP_ADD2: {
        hpl_launch l = {.device = o->where};
        hpl_arg y = hpl_arr(h), x = hpl_arr(e->h[o->b]);
        if (o->mode) {
            l = (hpl_launch){0};
            l.device_count = split_devices(o->seed, p->ndev, l.devices);
            y = hpl_part(h, split_dim(o, v->ndims), split_overlap(o));
            x = hpl_part(e->h[o->b], split_dim(o, v->ndims), split_overlap(o));
        }
        if (API(e, pos, hpl_eval(ctx, e->kadd2[ti][v->ndims - 1], &l, HPL_ARGS(y, x, scalar(v->type, o->c)))))
            model_write(e, o->a, o->b, o->c, true);
        break;
    }
    case OP_ASSIGN:
        if (API(e, pos, hpl_array_assign(ctx, h, e->h[o->b], o->where)))
            model_write(e, o->a, o->b, 0, false);
        break;
    case OP_FILL: {
        int32_t iv = o->c;
        float fv = (float)o->c;
        const void *val = v->type == HPL_FLOAT32 ? (const void *)&fv : (const void *)&iv;
        if (API(e, pos, hpl_array_fill(ctx, h, val, o->where)))
            model_write(e, o->a, -1, o->c, false);
        break;
    }
    case OP_WAIT: API(e, pos, hpl_array_wait(ctx, h)); break;
    case OP_FINISH: API(e, pos, hpl_finish(ctx)); break;
    case OP_RECREATE: {
        if (!API(e, pos, hpl_array_destroy(ctx, h)))
            return;
        /* Its subarrays went with it. */
        for (int i = 0; i < e->nlsubs;) {
            int vid = e->lsubs[i];
            if (p->views[vid].root == o->a) {
                e->live[vid] = false;
                e->children[vid] = 0;
                int last = e->lsubs[--e->nlsubs];
                e->lsubs[i] = last;
                e->lpos[last] = i;
            } else {
                i++;
            }
        }
        e->children[o->a] = 0;
        e->live[o->a] = false;
        free(e->user[o->a]); /* hpl_array_destroy returned: the storage is ours again */
        e->user[o->a] = NULL;
        create_root(e, pos, o->a, o->seed);
        break;
    }
    }
}

/* Runs ops[seq[0..n-1]] in a fresh context, then reads back every root;
 * fills in *o. */
static void run_here(const prog *p, const int *seq, int n, bool verbose, bool quiet, bool progress, outcome *o)
{
    exec ex, *e = &ex;
    memset(e, 0, sizeof *e);
    pthread_mutex_init(&e->lock, NULL);
    e->p = p;
    e->o = o;
    e->verbose = verbose;
    e->quiet = quiet;
    o->cur = -1;
    e->h = xcalloc((size_t)p->nviews, sizeof(hpl_array));
    e->live = xcalloc((size_t)p->nviews, sizeof(bool));
    e->children = xcalloc((size_t)p->nviews, sizeof(int));
    e->lsubs = xcalloc((size_t)p->nviews, sizeof(int));
    e->lpos = xcalloc((size_t)p->nviews, sizeof(int));
    e->hs = xcalloc((size_t)p->nviews, sizeof(uint64_t[3]));
    e->model = xcalloc((size_t)p->nroots, sizeof(cell *));
    e->user = xcalloc((size_t)p->nroots, sizeof(void *));
    double t0 = th_now();
    if (setup(e, p)) {
        for (int i = 0; i < n && !o->failed; i++) {
            o->cur = i;
            o->beat++;
            exec_op(e, i, &p->ops[seq[i]]);
            if (progress && (i + 1) % 20000 == 0)
                th_note("%d operations done (%.1f s)", i + 1, th_now() - t0);
        }
        if (o->failed) {
            /* Failed: the context may be in any state (teardown could hang
             * or crash); the process ends here, which frees everything. */
            o->done = 1;
            fflush(stderr);
            _exit(0);
        }
        /* Final check: every root, as the model has it. */
        o->cur = n;
        o->beat++;
        for (int r = 0; r < p->nroots && !o->failed; r++) {
            uint64_t s[3];
            if (API(e, n, hpl_array_read(e->ctx, e->h[r], e->buf, p->roots[r].count * 4)))
                check_view(e, n, r, e->buf, dense_strides(&p->views[r], s), false, "final hpl_array_read");
        }
        if (!o->failed)
            API(e, n, hpl_finish(e->ctx));
        if (API(e, n, hpl_stats_get(e->ctx, &o->stats)))
            o->have_stats = true;
    }
    o->cur = n;
    hpl_context_destroy(e->ctx);
    for (int r = 0; r < p->nroots; r++) {
        free(e->model[r]);
        free(e->user[r]);
    }
    free(e->h);
    free(e->live);
    free(e->children);
    free(e->lsubs);
    free(e->lpos);
    free(e->hs);
    free(e->model);
    free(e->user);
    free(e->buf);
    pthread_mutex_destroy(&e->lock);
}

/* run_here in a child process. A crash, an exit without a result, or no
 * progress for stall_s seconds (the child is killed) is a failure at the
 * operation it was running. */
static bool run(const prog *p, const int *seq, int n, bool verbose, bool quiet, bool progress, double stall_s,
                outcome *res)
{
    outcome *o = mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (o == MAP_FAILED) {
        fprintf(stderr, "FATAL: mmap: %s\n", strerror(errno));
        exit(1);
    }
    memset(o, 0, sizeof *o);
    o->cur = -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "FATAL: fork: %s\n", strerror(errno));
        exit(1);
    }
    if (pid == 0) {
        if (quiet) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) {
                dup2(fd, 2);
                close(fd);
            }
        }
        run_here(p, seq, n, verbose, quiet, progress, o);
        o->done = 1;
        if (quiet)
            _exit(0);
        exit(0); /* the main run: sanitizers check leaks at exit */
    }
    int status = 0, beat = o->beat;
    double last = th_now();
    bool killed = false;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "FATAL: waitpid: %s\n", strerror(errno));
            exit(1);
        }
        if (o->beat != beat) {
            beat = o->beat;
            last = th_now();
        } else if (!killed && th_now() - last > stall_s) {
            kill(pid, SIGKILL);
            killed = true;
        }
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    *res = *o;
    if (!res->failed) {
        int pos = o->cur;
        if (killed) {
            res->failed = true;
            res->fail_pos = pos;
            snprintf(res->msg, sizeof res->msg, "HANG: no progress for %.0f s (killed)", stall_s);
        } else if (WIFSIGNALED(status)) {
            res->failed = true;
            res->fail_pos = pos;
            snprintf(res->msg, sizeof res->msg, "CRASH: the run died of signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        } else if (!o->done || WEXITSTATUS(status) != 0) {
            res->failed = true;
            res->fail_pos = o->done ? n : pos;
            res->after_run = o->done;
            snprintf(res->msg, sizeof res->msg, "the run exited with status %d%s", WEXITSTATUS(status),
                     o->done ? " after its last check (sanitizer report?)" : " before finishing");
        }
    }
    munmap(o, sizeof *o);
    return res->failed;
}

/* ---- shrinking ------------------------------------------------------------------ */

static int replays;

/* Replays seq[0..n-1]; when it fails, returns the length of the failing
 * prefix (up to and including the failing operation; n for the final check),
 * else 0. */
static double replay_stall_s = 15;
static int replay_tries = 1; /* > 1 for a failure that does not show every time */

static int try_seq(const prog *p, const int *seq, int n)
{
    outcome e;
    bool failed = false;
    for (int t = 0; t < replay_tries && !failed; t++) {
        replays++;
        failed = run(p, seq, n, false, true, false, replay_stall_s, &e);
    }
    if (!failed)
        return 0;
    if (e.fail_pos < 0)
        return n; /* setup failed: keep it all */
    return e.fail_pos < n ? e.fail_pos + 1 : n;
}

static void print_sequence(const prog *p, const int *seq, int n)
{
    bool *used = xcalloc((size_t)p->nroots, sizeof(bool));
    for (int i = 0; i < n; i++) {
        const op *o = &p->ops[seq[i]];
        if (o->a >= 0)
            used[p->views[o->a].root] = true;
        if (o->b >= 0)
            used[p->views[o->b].root] = true;
    }
    fprintf(stderr, "  context: devices \"%s\", zero_copy %s, device_memory_limit %" PRIu64 " bytes; roots:\n",
            p->devices, p->zc_first ? "AUTO" : "OFF", p->limit);
    int unused = 0;
    for (int r = 0; r < p->nroots; r++) {
        char line[256];
        fmt_root(p, r, line, sizeof line);
        if (used[r])
            fprintf(stderr, "    %s\n", line);
        else
            unused++;
    }
    if (unused)
        fprintf(stderr, "    (and %d roots the sequence does not use: created, read back at the end)\n", unused);
    for (int i = 0; i < n; i++) {
        char line[512];
        fmt_op(p, &p->ops[seq[i]], line, sizeof line);
        fprintf(stderr, "  op %6d: %s\n", seq[i], line);
    }
    fprintf(stderr, "  then: read back every root and compare\n");
    free(used);
}

/* Removes from seq the operations a run would skip (on views the sequence
 * never creates, or destroyed; creations of a view already there; destroys
 * of views with children), exactly as exec_op decides. Returns the new
 * length. */
static int prune(const prog *p, int *seq, int n)
{
    bool *live = xcalloc((size_t)p->nviews, sizeof(bool));
    int *children = xcalloc((size_t)p->nviews, sizeof(int));
    int *lsubs = xcalloc((size_t)p->nviews, sizeof(int)), nl = 0;
    for (int r = 0; r < p->nroots; r++)
        live[r] = true;
    int m = 0;
    for (int i = 0; i < n; i++) {
        const op *o = &p->ops[seq[i]];
        bool keep = true;
        if (o->kind == OP_SUB) {
            const view_def *v = &p->views[o->a];
            keep = live[v->parent] && !live[o->a];
            for (int j = 0; keep && j < nl; j++)
                if (views_same(&p->views[lsubs[j]], v))
                    keep = false;
            if (keep) {
                live[o->a] = true;
                children[v->parent]++;
                lsubs[nl++] = o->a;
            }
        } else if ((o->a >= 0 && !live[o->a]) || (o->b >= 0 && !live[o->b])) {
            keep = false;
        } else if (o->kind == OP_DESTROY) {
            keep = children[o->a] == 0;
            if (keep) {
                live[o->a] = false;
                children[p->views[o->a].parent]--;
            }
        } else if (o->kind == OP_RECREATE) {
            for (int j = 0; j < nl;) {
                if (p->views[lsubs[j]].root == o->a) {
                    live[lsubs[j]] = false;
                    children[lsubs[j]] = 0;
                    lsubs[j] = lsubs[--nl];
                } else {
                    j++;
                }
            }
            children[o->a] = 0;
        }
        if (o->kind == OP_DESTROY && keep)
            for (int j = 0; j < nl; j++)
                if (lsubs[j] == o->a) {
                    lsubs[j] = lsubs[--nl];
                    break;
                }
        if (keep)
            seq[m++] = seq[i];
    }
    free(live);
    free(children);
    free(lsubs);
    return m;
}

static void shrink(const prog *p, const int *seq, int nseq, int fail_len, double budget)
{
    double end = th_now() + budget;
    int *cur = xcalloc((size_t)nseq, sizeof(int));
    int *cand = xcalloc((size_t)nseq, sizeof(int));
    memcpy(cur, seq, sizeof(int) * (size_t)nseq);
    int n = fail_len;
    fprintf(stderr, "shrinking (at most %.0f s): replaying subsequences of the first %d operations...\n", budget, n);
    /* Reproduce it first: the prefix up to the failing operation, else the
     * whole sequence. Then two more tries: a failure that does not come
     * every time (timing) gives every candidate up to 4 tries. */
    int r = 0, attempts = 0;
    for (; attempts < 6 && !r && th_now() < end; attempts++)
        r = try_seq(p, cur, attempts < 4 ? n : nseq);
    if (!r) {
        fprintf(stderr, "shrinking: the failure did not reproduce in %d fresh runs (timing-dependent?)\n", attempts);
        free(cur);
        free(cand);
        return;
    }
    n = r;
    int again = 0;
    for (int t = 0; t < 2 && th_now() < end; t++)
        again += try_seq(p, cur, n) > 0;
    if (attempts > 1 || again < 2) {
        replay_tries = 4;
        fprintf(stderr,
                "shrinking: intermittent (reproduced at try %d, then %d of 2 times): every candidate gets up to %d "
                "tries\n",
                attempts, again, replay_tries);
    }
    n = prune(p, cur, n);
    /* Cheap first try: without the operations that change nothing (reads,
     * waits) except the last one. */
    {
        int m = 0;
        for (int i = 0; i < n; i++) {
            int k = p->ops[cur[i]].kind;
            if (i == n - 1 || !(k == OP_READ || k == OP_WAIT || k == OP_FINISH))
                cand[m++] = cur[i];
        }
        if (m < n && th_now() < end && (r = try_seq(p, cand, m)) > 0) {
            memcpy(cur, cand, sizeof(int) * (size_t)r);
            n = prune(p, cur, r);
        }
    }
    /* ddmin on complements: remove one of `gran` chunks; keep the removal
     * when the failure persists; else smaller chunks. */
    int gran = 2;
    while (n >= 2 && th_now() < end) {
        int chunk = (n + gran - 1) / gran;
        bool reduced = false;
        for (int start = 0; start < n && th_now() < end; start += chunk) {
            int m = 0;
            for (int i = 0; i < n; i++)
                if (i < start || i >= start + chunk)
                    cand[m++] = cur[i];
            m = prune(p, cand, m);
            if (m == 0 || m == n)
                continue;
            r = try_seq(p, cand, m);
            if (r > 0) {
                memcpy(cur, cand, sizeof(int) * (size_t)r);
                n = prune(p, cur, r);
                gran = gran > 2 ? gran - 1 : 2;
                reduced = true;
                break;
            }
        }
        if (!reduced) {
            if (chunk == 1)
                break;
            gran = gran * 2 < n ? gran * 2 : n;
        }
    }
    bool done = th_now() < end;
    fprintf(stderr, "shrinking: %d replays; %s failing sequence: %d operation(s) (of %d)%s\n", replays,
            done ? "1-minimal" : "shortest", n, nseq, done ? "" : " -- time budget spent");
    outcome e, first;
    memset(&first, 0, sizeof first);
    int fails = 0, tries = replay_tries > 1 ? 5 : 1;
    for (int t = 0; t < tries; t++)
        if (run(p, cur, n, false, true, false, replay_stall_s, &e) && fails++ == 0)
            first = e;
    if (fails)
        fprintf(stderr, "  it fails (%d of %d replays) with: %s%s\n", fails, tries,
                first.fail_pos >= n ? "[after the last operation] " : "", first.msg);
    else
        fprintf(stderr, "  (its last %d replays passed: the failure is intermittent)\n", tries);
    print_sequence(p, cur, n);
    if (n <= 400) {
        fprintf(stderr, "  replay it alone: HPLVK_DIFF_ONLY=");
        for (int i = 0; i < n; i++)
            fprintf(stderr, "%s%d", i ? "," : "", cur[i]);
        fprintf(stderr, " test_differential %d %" PRIu64 "  (HPLVK_DIFF_VERBOSE=1 prints each operation)\n",
                p->requested, p->seed);
    }
    free(cur);
    free(cand);
}

/* ---- main ------------------------------------------------------------------------ */

static uint64_t parse_u64(const char *s, uint64_t def)
{
    if (!s || !*s)
        return def;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return (uint64_t)v;
}

int main(int argc, char **argv)
{
    int nops = (int)parse_u64(argc > 1 ? argv[1] : getenv("HPLVK_DIFF_OPS"), 5000);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed_default = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec;
    seed_default %= 1000000000u;
    uint64_t seed = parse_u64(argc > 2 ? argv[2] : getenv("HPLVK_DIFF_SEED"), seed_default);
    printf("seed=%" PRIu64 "\n", seed);
    fflush(stdout);
    if (nops < 1)
        nops = 1;

    prog p;
    generate(&p, seed, nops);
    if (getenv("HPLVK_DIFF_LIMIT") && *getenv("HPLVK_DIFF_LIMIT"))
        p.limit = parse_u64(getenv("HPLVK_DIFF_LIMIT"), 0);
    double budget = (double)parse_u64(getenv("HPLVK_DIFF_SHRINK_S"), 60);
    const char *vb = getenv("HPLVK_DIFF_VERBOSE");
    bool verbose = vb && *vb && *vb != '0';

    uint64_t bytes = 0;
    int kinds[OP_RECREATE + 1] = {0};
    for (int r = 0; r < p.nroots; r++)
        bytes += p.roots[r].count * 4;
    for (int i = 0; i < p.nops; i++)
        kinds[p.ops[i].kind]++;
    th_note("seed %" PRIu64 ": %d operations on \"%s\", %d roots (%" PRIu64 " bytes), %d subarrays, device memory "
            "limit %" PRIu64 " bytes",
            seed, p.nops, p.devices, p.nroots, bytes, p.nviews - p.nroots, p.limit);
    th_note("mix: %d sub, %d destroy, %d read, %d write, %d add, %d add2, %d assign, %d fill, %d wait, %d finish, "
            "%d recreate",
            kinds[OP_SUB], kinds[OP_DESTROY], kinds[OP_READ], kinds[OP_WRITE], kinds[OP_ADD], kinds[OP_ADD2],
            kinds[OP_ASSIGN], kinds[OP_FILL], kinds[OP_WAIT], kinds[OP_FINISH], kinds[OP_RECREATE]);

    /* HPLVK_DIFF_ONLY=i,j,...: run only those operations of the program (a
     * shrunk sequence), in that order. */
    int *seq = xcalloc((size_t)p.nops, sizeof(int));
    int nseq = 0;
    const char *only = getenv("HPLVK_DIFF_ONLY");
    if (only && *only) {
        for (const char *c = only; *c && nseq < p.nops;) {
            char *end;
            long v = strtol(c, &end, 10);
            if (end == c || v < 0 || v >= p.nops) {
                fprintf(stderr, "FATAL: HPLVK_DIFF_ONLY: bad operation index at \"%s\"\n", c);
                return 1;
            }
            seq[nseq++] = (int)v;
            c = *end == ',' ? end + 1 : end;
        }
        th_note("HPLVK_DIFF_ONLY: running %d of the %d operations", nseq, p.nops);
    } else {
        for (int i = 0; i < p.nops; i++)
            seq[nseq++] = i;
    }
    outcome e;
    double t0 = th_now();
    bool failed = run(&p, seq, nseq, verbose, false, true, 60, &e);
    double dt = th_now() - t0;
    th_note("%d operations in %.2f s (%.0f ops/s)", nseq, dt, nseq / (dt > 0 ? dt : 1));
    if (e.have_stats) {
        const hpl_device_stats *t = &e.stats.total;
        th_note("stats: to_device %" PRIu64 " (%" PRIu64 " B), to_host %" PRIu64 " (%" PRIu64 " B), local %" PRIu64
                " (%" PRIu64 " B), evictions %" PRIu64 " (%" PRIu64 " B), peak %" PRIu64 " B",
                t->to_device_count, t->to_device_bytes, t->to_host_count, t->to_host_bytes, t->local_count,
                t->local_bytes, t->evictions, t->evicted_bytes, t->peak_bytes);
    }
    if (failed) {
        char line[512] = "(setup)";
        int at = -1;
        if (e.fail_pos >= 0 && e.fail_pos < nseq) {
            at = seq[e.fail_pos];
            fmt_op(&p, &p.ops[at], line, sizeof line);
        } else if (e.fail_pos >= nseq) {
            snprintf(line, sizeof line, "(final read-back of every root / teardown)");
        }
        CHECK(false, "seed=%" PRIu64 " op %d: %s\n  %s", seed, at, line, e.msg);
        if (e.fail_pos >= 0 && budget > 0 && !e.after_run)
            shrink(&p, seq, nseq, e.fail_pos < nseq ? e.fail_pos + 1 : nseq, budget);
        fprintf(stderr, "seed=%" PRIu64 " (rerun: test_differential %d %" PRIu64 ")\n", seed, nops, seed);
    } else {
        CHECK(true, "no mismatch");
        /* The limit holds: no device ever held more array storage. */
        for (int d = 0; e.have_stats && d < e.stats.device_count && d < 16; d++)
            CHECK(e.stats.device[d].peak_bytes <= p.limit,
                  "device %d held up to %" PRIu64 " bytes of arrays, over its %" PRIu64 "-byte limit", d,
                  e.stats.device[d].peak_bytes, p.limit);
        CHECK(e.have_stats && e.stats.device_count == p.ndev, "hpl_stats_get: device_count %d, want %d",
              e.have_stats ? e.stats.device_count : -1, p.ndev);
        if (nops >= 20000)
            CHECK(e.have_stats && e.stats.total.evictions > 0,
                  "no buffer was evicted in %d operations with a %" PRIu64 "-byte device memory limit", nops, p.limit);
    }
    free(seq);
    free(p.ops);
    free(p.views);
    return th_finish(NULL);
}
