/* A context over MPI ranks gives, on every rank, bit for bit the values a
 * one-process context with as many devices gives (float sums within a
 * rounding bound), under random sequences of host writes and reads, split
 * and plain evals, fill, assignment, prefetch, discard and reductions, and
 * every rank reads the same.
 *
 * Every rank derives the same operations from one seed (rank 0's,
 * broadcast and printed) and replays each on two contexts: the context over
 * all ranks (hpl_mpi_context_create) and a one-process context of its own
 * whose device list mirrors the span's devices in order ("cpu" or "cpu+zc"
 * for each device of each rank), so a device index means the same in both.
 * Arrays (fresh for each sequence): two of each of uint32 and float, 1-D
 * and 2-D (up to 40 x 24, 60), the two of a kind of equal shape. Operations:
 *   write     whole or subarray, by hpl_array_write or hpl_array_access
 *             (HPL_WRITE), every rank writing the same values
 *   stencil   annotated eval dst = f(src within `overlap` along the split
 *             dimension, 0 or 1 for 2-D), over the arrays or the same
 *             subarray box of both, halos first or not, on the default
 *             devices, an explicit subset in any order, or with shares
 *   update    annotated elementwise a = a * 3 + b + c (float: a convex
 *             mix), b split or replicated
 *   plain     stencil or update on one device (launch.device) between
 *             subarrays of equal extents (of one array when they are
 *             disjoint, else of the two)
 *   fill      on a device, the host or HPL_WHERE_LAST_USED
 *   assign    between disjoint subarrays of equal extents, same places
 *   prefetch  to a device or the host
 *   discard   of a (sub)array, then a host write of it
 *   reduce    sum, min, max (and product, uint32): exact, float sums
 *             within 2 x 8 ulp x (log2(count) + 1) x sum of magnitudes
 *             (hplvk.h section 4 bounds each side's error by a few ulps
 *             times log2(count) relative to the sum of magnitudes; the
 *             two sides' errors add)
 *   read      whole or subarray, hpl_array_read or hpl_array_access
 *             (HPL_READ): span == one process, and every rank's span read
 *             hashes alike (MPI_Allgather)
 * A mismatch, a failing call or a validation message stops the sequence on
 * every rank (MPI_Allreduce after each operation) and prints the sequence's
 * seed, the operation's number and text.
 *
 * Usage: test_ranks_differential [SEED [SEQUENCES [OPS]]]; else
 * HPLVK_RDIFF_SEED (default: the clock), HPLVK_RDIFF_SEQS (default 3),
 * HPLVK_RDIFF_OPS (default 20). Sequence i runs seed + i; "seed=N" replays
 * it alone with SEED=N SEQUENCES=1. HPLVK_RDIFF_VERBOSE=1 prints every
 * operation (rank 0). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "hplvk_mpi.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, ranks, devices;
static bool verbose;

/* ---- random numbers (splitmix64, as tests/test_differential.c) -------- */

static uint64_t rs;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
    return n ? splitmix(&rs) % n : 0;
}

static int64_t between(int64_t lo, int64_t hi) /* inclusive */
{
    return lo + (int64_t)below((uint64_t)(hi - lo + 1));
}

/* ---- the arrays ---------------------------------------------------------- */

/* Kind k: type and dimensions; roots 2k and 2k + 1 are of kind k. */
#define KINDS 4
#define ROOTS (2 * KINDS)
static const hpl_type kind_type[KINDS] = {HPL_UINT32, HPL_FLOAT32, HPL_UINT32, HPL_FLOAT32};
static const int kind_nd[KINDS] = {2, 2, 1, 1};

typedef struct pair {
    hpl_context *s, *l; /* the span context, the one-process one */
} pair;

static pair ctx;
static hpl_array sroot[ROOTS], lroot[ROOTS];
static hpl_kernel sk[2][KINDS], lk[2][KINDS]; /* [stencil, update][kind] */
static uint64_t dims[ROOTS][2];               /* unused: 1 */

/* A box of a root, inclusive. */
typedef struct view {
    int root;
    uint64_t lo[2], hi[2];
} view;

static int kind_of(int root) { return root / 2; }
static int nd_of(int root) { return kind_nd[kind_of(root)]; }
static bool is_float(int root) { return kind_type[kind_of(root)] == HPL_FLOAT32; }

static uint64_t view_count(const view *v)
{
    return (v->hi[0] - v->lo[0] + 1) * (v->hi[1] - v->lo[1] + 1);
}

static bool view_whole(const view *v)
{
    return v->lo[0] == 0 && v->lo[1] == 0 && v->hi[0] == dims[v->root][0] - 1 && v->hi[1] == dims[v->root][1] - 1;
}

static char *fmt_view(const view *v, char *buf, size_t n)
{
    if (nd_of(v->root) == 1)
        snprintf(buf, n, "r%d[%llu..%llu]", v->root, (unsigned long long)v->lo[0], (unsigned long long)v->hi[0]);
    else
        snprintf(buf, n, "r%d[%llu..%llu, %llu..%llu]", v->root, (unsigned long long)v->lo[0],
                 (unsigned long long)v->hi[0], (unsigned long long)v->lo[1], (unsigned long long)v->hi[1]);
    return buf;
}

/* The view's handles in both contexts (the root itself when whole). */
static bool handles(const view *v, hpl_array *s, hpl_array *l)
{
    if (view_whole(v)) {
        *s = sroot[v->root];
        *l = lroot[v->root];
        return true;
    }
    hpl_range r[2] = {{v->lo[0], v->hi[0]}, {v->lo[1], v->hi[1]}};
    int nd = nd_of(v->root);
    return CHECK_OK(hpl_subarray(ctx.s, sroot[v->root], nd, r, s)) &&
           CHECK_OK(hpl_subarray(ctx.l, lroot[v->root], nd, r, l));
}

static view random_view(int root, bool whole_often)
{
    view v = {.root = root};
    if (whole_often && below(3) == 0) {
        v.hi[0] = dims[root][0] - 1;
        v.hi[1] = dims[root][1] - 1;
        return v;
    }
    for (int d = 0; d < 2; d++) {
        v.lo[d] = below(dims[root][d]);
        v.hi[d] = (uint64_t)between((int64_t)v.lo[d], (int64_t)dims[root][d] - 1);
    }
    return v;
}

/* Two views of equal extents, of one root and disjoint, or of the two roots
 * of a kind. */
static void random_pair(int kind, view *a, view *b)
{
    int r = 2 * kind + (int)below(2);
    uint64_t ext[2];
    for (int d = 0; d < 2; d++)
        ext[d] = (uint64_t)between(1, (int64_t)dims[r][d]);
    for (int tries = 0; tries < 2 + 20 * (below(3) != 0); tries++) {
        *a = (view){.root = r};
        *b = (view){.root = r};
        bool disjoint = false;
        for (int d = 0; d < 2; d++) {
            a->lo[d] = below(dims[r][d] - ext[d] + 1);
            b->lo[d] = below(dims[r][d] - ext[d] + 1);
            a->hi[d] = a->lo[d] + ext[d] - 1;
            b->hi[d] = b->lo[d] + ext[d] - 1;
            disjoint |= a->hi[d] < b->lo[d] || b->hi[d] < a->lo[d];
        }
        if (disjoint)
            return;
        /* Halve the extents so that they fit twice more often. */
        for (int d = 0; d < 2; d++)
            ext[d] = ext[d] > 1 && below(2) ? ext[d] / 2 : ext[d];
    }
    b->root = r ^ 1; /* the other array of the kind: any place */
}

/* ---- values -------------------------------------------------------------- */

static void random_values(int root, uint32_t *out, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (is_float(root)) {
            float f = (float)between(-1000, 1000) / 8.0f;
            memcpy(&out[i], &f, 4);
        } else {
            out[i] = below(4) == 0 ? (uint32_t)below(16) : (uint32_t)splitmix(&rs);
        }
    }
}

/* ---- checks ------------------------------------------------------------ */

static char op_text[768];
static int op_failed; /* this rank saw a failure in the current operation */

static void failf(const char *fmt, ...) TH_PRINTF(1, 2);
static void failf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    CHECK(false, "rank %d: %s: %s", rank, op_text, buf);
    op_failed = 1;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Every rank got the same bytes from the span context. */
static void same_on_every_rank(const void *p, size_t n, const char *what)
{
    uint64_t h = hash_bytes(p, n), all[64];
    MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 1; r < ranks; r++)
        if (all[r] != all[0]) {
            failf("%s: rank %d read other values than rank 0 (hash %016llx, rank 0's %016llx)", what, r,
                  (unsigned long long)all[r], (unsigned long long)all[0]);
            return;
        }
}

static void compare(const view *v, const uint32_t *s, const uint32_t *l, const char *what)
{
    uint64_t n = view_count(v), w = v->hi[1] - v->lo[1] + 1;
    for (uint64_t i = 0; i < n; i++)
        if (s[i] != l[i]) {
            uint64_t bad = 0;
            for (uint64_t j = i; j < n; j++)
                bad += s[j] != l[j];
            char vb[96];
            if (is_float(v->root)) {
                float fs, fl;
                memcpy(&fs, &s[i], 4);
                memcpy(&fl, &l[i], 4);
                failf("%s of %s: %llu elements differ, the first at [%llu, %llu] (of the root): span %a (%g), one "
                      "process %a (%g)",
                      what, fmt_view(v, vb, sizeof vb), (unsigned long long)bad,
                      (unsigned long long)(v->lo[0] + i / w), (unsigned long long)(v->lo[1] + i % w), (double)fs,
                      (double)fs, (double)fl, (double)fl);
            } else {
                failf("%s of %s: %llu elements differ, the first at [%llu, %llu] (of the root): span %u (0x%08x), one "
                      "process %u (0x%08x)",
                      what, fmt_view(v, vb, sizeof vb), (unsigned long long)bad,
                      (unsigned long long)(v->lo[0] + i / w), (unsigned long long)(v->lo[1] + i % w), s[i], s[i], l[i],
                      l[i]);
            }
            return;
        }
}

/* ---- host access through the pointer (strides of the root) --------------- */

static bool access_copy(hpl_context *c, hpl_array a, hpl_access mode, uint32_t *buf, uint64_t n)
{
    hpl_array_info info;
    void *p = NULL;
    if (!CHECK_OK(hpl_array_get_info(c, a, &info)) || !CHECK_OK(hpl_array_access(c, a, mode, &p)))
        return false;
    uint32_t *e = p;
    uint64_t rows = info.ndims == 1 ? 1 : info.dims[0], cols = info.ndims == 1 ? info.dims[0] : info.dims[1];
    uint64_t s0 = info.ndims == 1 ? 0 : info.host_stride[0], s1 = info.ndims == 1 ? info.host_stride[0] : info.host_stride[1];
    if (rows * cols != n)
        return CHECK(false, "access: %llu x %llu elements, want %llu", (unsigned long long)rows,
                     (unsigned long long)cols, (unsigned long long)n);
    for (uint64_t i = 0; i < rows; i++)
        for (uint64_t j = 0; j < cols; j++) {
            if (mode == HPL_WRITE)
                e[i * s0 + j * s1] = buf[i * cols + j];
            else
                buf[i * cols + j] = e[i * s0 + j * s1];
        }
    return true;
}

/* ---- operations -------------------------------------------------------- */

#define MAXN (40 * 24 + 64)

static int nops_done;

static void op_write(const view *v, bool discard_first)
{
    hpl_array s, l;
    if (!handles(v, &s, &l))
        return;
    uint64_t n = view_count(v);
    uint32_t vals[MAXN];
    random_values(v->root, vals, n);
    bool by_access = below(3) == 0;
    char vb[96];
    snprintf(op_text, sizeof op_text, "%swrite %s by %s", discard_first ? "discard, then " : "",
             fmt_view(v, vb, sizeof vb), by_access ? "hpl_array_access" : "hpl_array_write");
    if (discard_first) {
        if (!CHECK_OK(hpl_array_discard(ctx.s, s)) || !CHECK_OK(hpl_array_discard(ctx.l, l)))
            op_failed = 1;
    }
    if (by_access) {
        if (!access_copy(ctx.s, s, HPL_WRITE, vals, n) || !access_copy(ctx.l, l, HPL_WRITE, vals, n))
            op_failed = 1;
    } else if (!CHECK_OK(hpl_array_write(ctx.s, s, vals, n * 4)) || !CHECK_OK(hpl_array_write(ctx.l, l, vals, n * 4))) {
        op_failed = 1;
    }
}

static void op_read(const view *v)
{
    hpl_array s, l;
    if (!handles(v, &s, &l))
        return;
    uint64_t n = view_count(v);
    uint32_t sv[MAXN], lv[MAXN];
    bool by_access = below(3) == 0;
    char vb[96];
    snprintf(op_text, sizeof op_text, "read %s by %s", fmt_view(v, vb, sizeof vb),
             by_access ? "hpl_array_access" : "hpl_array_read");
    bool ok = by_access ? access_copy(ctx.s, s, HPL_READ, sv, n) && access_copy(ctx.l, l, HPL_READ, lv, n)
                        : CHECK_OK(hpl_array_read(ctx.s, s, sv, n * 4)) && CHECK_OK(hpl_array_read(ctx.l, l, lv, n * 4));
    if (!ok) {
        op_failed = 1;
        return;
    }
    compare(v, sv, lv, "read");
    same_on_every_rank(sv, n * 4, "read");
}

/* The devices of an annotated eval: the default ones, a subset in any
 * order, and shares or not. */
static void random_devices(hpl_launch *launch, double *shares, char *text, size_t size)
{
    int mode = (int)below(3), count = devices;
    size_t used = 0;
    if (mode == 0) {
        used += (size_t)snprintf(text, size, "default devices");
    } else {
        int all[HPL_MAX_DEVICES];
        for (int i = 0; i < devices; i++)
            all[i] = i;
        for (int i = devices - 1; i > 0; i--) {
            int j = (int)below((uint64_t)i + 1), t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        count = (int)between(1, devices);
        launch->device_count = count;
        used += (size_t)snprintf(text, size, "devices");
        for (int i = 0; i < count; i++) {
            launch->devices[i] = all[i];
            used += (size_t)snprintf(text + used, used < size ? size - used : 0, " %d", all[i]);
        }
    }
    if (below(3) == 0) {
        static const double choices[] = {0, 0.5, 1, 2, 3};
        bool any = false;
        for (int i = 0; i < count; i++) {
            shares[i] = choices[below(5)];
            any |= shares[i] > 0;
        }
        if (!any)
            shares[below((uint64_t)count)] = 1;
        launch->shares = shares;
        used += (size_t)snprintf(text + used, used < size ? size - used : 0, ", shares");
        for (int i = 0; i < count; i++)
            used += (size_t)snprintf(text + used, used < size ? size - used : 0, " %g", shares[i]);
    }
}

static void eval_both(int which, int kind, const hpl_launch *launch, const hpl_arg *sargs, const hpl_arg *largs,
                      size_t nargs)
{
    if (!CHECK_OK(hpl_eval(ctx.s, sk[which][kind], launch, sargs, nargs)) ||
        !CHECK_OK(hpl_eval(ctx.l, lk[which][kind], launch, largs, nargs)))
        op_failed = 1;
}

static hpl_arg with_part(hpl_array a, bool split, int dim, int64_t overlap)
{
    return split ? hpl_part(a, dim, overlap) : hpl_arr(a);
}

/* An annotated eval of the stencil (which 0) or the update (1), over whole
 * arrays or the same box of the kind's two arrays. */
static void op_annotated(int which, int kind, bool over_subarrays)
{
    int src = 2 * kind + (int)below(2), dst = src ^ 1;
    view vs = random_view(src, false), vd;
    if (!over_subarrays) {
        vs.lo[0] = vs.lo[1] = 0;
        vs.hi[0] = dims[src][0] - 1;
        vs.hi[1] = dims[src][1] - 1;
    }
    vd = vs;
    vd.root = dst;
    hpl_array ss, ls, sd, ld;
    if (!handles(&vs, &ss, &ls) || !handles(&vd, &sd, &ld))
        return;
    int dim = kind_nd[kind] == 2 ? (int)below(2) : 0;
    int64_t ov = (int64_t)below(3), ov2 = (int64_t)below(3);
    bool b_split = below(3) != 0;
    uint32_t c = (uint32_t)below(8);
    hpl_launch launch = {.halos_first = below(2) != 0};
    double shares[HPL_MAX_DEVICES];
    char dv[256], vb1[96], vb2[96];
    random_devices(&launch, shares, dv, sizeof dv);
    if (which == 0) {
        /* dst = stencil(src): dst split alike, with its own overlap. */
        snprintf(op_text, sizeof op_text,
                 "stencil %s -> %s split along %d, overlap %lld (dst %lld), c %u, halos_first %d, %s",
                 fmt_view(&vs, vb1, sizeof vb1), fmt_view(&vd, vb2, sizeof vb2), dim, (long long)ov, (long long)ov2,
                 c, launch.halos_first, dv);
        eval_both(0, kind, &launch,
                  (hpl_arg[]){hpl_part(ss, dim, ov), hpl_part(sd, dim, ov2), hpl_i32(dim), hpl_i32((int32_t)ov),
                           hpl_u32(c)},
                  (hpl_arg[]){hpl_part(ls, dim, ov), hpl_part(ld, dim, ov2), hpl_i32(dim), hpl_i32((int32_t)ov),
                              hpl_u32(c)},
                  5);
    } else {
        /* a (= dst view) updated from b (= src view): a split, b split or
         * replicated. */
        snprintf(op_text, sizeof op_text, "update %s from %s (%s) split along %d, overlaps %lld/%lld, c %u, halos_first %d, %s",
                 fmt_view(&vd, vb1, sizeof vb1), fmt_view(&vs, vb2, sizeof vb2), b_split ? "split" : "replicated", dim,
                 (long long)ov2, (long long)ov, c, launch.halos_first, dv);
        eval_both(1, kind, &launch,
                  (hpl_arg[]){hpl_part(sd, dim, ov2), with_part(ss, b_split, dim, ov), hpl_u32(c)},
                  (hpl_arg[]){hpl_part(ld, dim, ov2), with_part(ls, b_split, dim, ov), hpl_u32(c)}, 3);
    }
}

/* A plain eval on one device between two views of equal extents. */
static void op_plain(int which, int kind)
{
    view a, b;
    random_pair(kind, &a, &b);
    hpl_array sa, la, sb, lb;
    if (!handles(&a, &sa, &la) || !handles(&b, &sb, &lb))
        return;
    int device = (int)below((uint64_t)devices);
    int dim = kind_nd[kind] == 2 ? (int)below(2) : 0, ov = (int)below(3);
    uint32_t c = (uint32_t)below(8);
    hpl_launch launch = {.device = device};
    char vb1[96], vb2[96];
    if (which == 0) {
        snprintf(op_text, sizeof op_text, "plain stencil %s -> %s along %d, reach %d, c %u, on device %d",
                 fmt_view(&a, vb1, sizeof vb1), fmt_view(&b, vb2, sizeof vb2), dim, ov, c, device);
        eval_both(0, kind, &launch, (hpl_arg[]){hpl_arr(sa), hpl_arr(sb), hpl_i32(dim), hpl_i32(ov), hpl_u32(c)},
                  (hpl_arg[]){hpl_arr(la), hpl_arr(lb), hpl_i32(dim), hpl_i32(ov), hpl_u32(c)}, 5);
    } else {
        snprintf(op_text, sizeof op_text, "plain update %s from %s, c %u, on device %d", fmt_view(&b, vb1, sizeof vb1),
                 fmt_view(&a, vb2, sizeof vb2), c, device);
        eval_both(1, kind, &launch, (hpl_arg[]){hpl_arr(sb), hpl_arr(sa), hpl_u32(c)},
                  (hpl_arg[]){hpl_arr(lb), hpl_arr(la), hpl_u32(c)}, 3);
    }
}

static int random_where(char *buf, size_t n)
{
    int w = (int)below((uint64_t)devices + 2) - 2; /* -2 host, -1 last used, else a device */
    if (w == HPL_ON_HOST)
        snprintf(buf, n, "on the host");
    else if (w == HPL_WHERE_LAST_USED)
        snprintf(buf, n, "where last used");
    else
        snprintf(buf, n, "on device %d", w);
    return w;
}

static void op_fill(void)
{
    view v = random_view((int)below(ROOTS), true);
    hpl_array s, l;
    if (!handles(&v, &s, &l))
        return;
    uint32_t value;
    random_values(v.root, &value, 1);
    char wb[32], vb[96];
    int where = random_where(wb, sizeof wb);
    snprintf(op_text, sizeof op_text, "fill %s with 0x%08x %s", fmt_view(&v, vb, sizeof vb), value, wb);
    if (!CHECK_OK(hpl_array_fill(ctx.s, s, &value, where)) || !CHECK_OK(hpl_array_fill(ctx.l, l, &value, where)))
        op_failed = 1;
}

static void op_assign(void)
{
    view a, b;
    random_pair((int)below(KINDS), &a, &b);
    hpl_array sa, la, sb, lb;
    if (!handles(&a, &sa, &la) || !handles(&b, &sb, &lb))
        return;
    char wb[32], vb1[96], vb2[96];
    int where = random_where(wb, sizeof wb);
    snprintf(op_text, sizeof op_text, "assign %s = %s %s", fmt_view(&b, vb1, sizeof vb1), fmt_view(&a, vb2, sizeof vb2),
             wb);
    if (!CHECK_OK(hpl_array_assign(ctx.s, sb, sa, where)) || !CHECK_OK(hpl_array_assign(ctx.l, lb, la, where)))
        op_failed = 1;
}

static void op_prefetch(void)
{
    view v = random_view((int)below(ROOTS), true);
    hpl_array s, l;
    if (!handles(&v, &s, &l))
        return;
    int where = below(4) == 0 ? HPL_ON_HOST : (int)below((uint64_t)devices);
    char vb[96];
    snprintf(op_text, sizeof op_text, "prefetch %s to %s%d", fmt_view(&v, vb, sizeof vb),
             where == HPL_ON_HOST ? "the host " : "device ", where);
    if (!CHECK_OK(hpl_array_prefetch(ctx.s, s, where)) || !CHECK_OK(hpl_array_prefetch(ctx.l, l, where)))
        op_failed = 1;
}

static void op_reduce(void)
{
    view v = random_view((int)below(ROOTS), true);
    hpl_array s, l;
    if (!handles(&v, &s, &l))
        return;
    static const hpl_reduction ops[] = {HPL_REDUCE_SUM, HPL_REDUCE_MIN, HPL_REDUCE_MAX, HPL_REDUCE_PRODUCT};
    static const char *names[] = {"sum", "min", "max", "product"};
    int k = (int)below(is_float(v.root) ? 3 : 4);
    char vb[96];
    snprintf(op_text, sizeof op_text, "reduce %s: %s", fmt_view(&v, vb, sizeof vb), names[k]);
    uint32_t rsv = 0, rlv = 0;
    if (!CHECK_OK(hpl_array_reduce(ctx.s, s, ops[k], &rsv)) || !CHECK_OK(hpl_array_reduce(ctx.l, l, ops[k], &rlv))) {
        op_failed = 1;
        return;
    }
    same_on_every_rank(&rsv, 4, "reduction");
    if (!is_float(v.root) || ops[k] != HPL_REDUCE_SUM) {
        if (rsv != rlv)
            failf("span 0x%08x, one process 0x%08x", rsv, rlv);
        return;
    }
    /* Float sums: within both sides' rounding bounds, from the magnitudes
     * (read from the one-process context after the reduction). */
    uint64_t n = view_count(&v);
    uint32_t vals[MAXN];
    if (!CHECK_OK(hpl_array_read(ctx.l, l, vals, n * 4))) {
        op_failed = 1;
        return;
    }
    double mag = 0, exact = 0;
    for (uint64_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, &vals[i], 4);
        mag += fabs((double)f);
        exact += (double)f;
    }
    float fs, fl;
    memcpy(&fs, &rsv, 4);
    memcpy(&fl, &rlv, 4);
    double tol = 2.0 * 8.0 * FLT_EPSILON * (log2((double)n) + 1.0) * mag + FLT_MIN;
    if (!(fabs((double)fs - (double)fl) <= tol) || !(fabs((double)fs - exact) <= tol))
        failf("float sum: span %.9g, one process %.9g, in double %.17g: differ by more than %.3g", (double)fs,
              (double)fl, exact, tol);
}

/* ---- a sequence -------------------------------------------------------- */

static const char *kernel_src(int which, int kind, char *buf, size_t n)
{
    const char *t = kind_type[kind] == HPL_FLOAT32 ? "float" : "uint";
    bool f = kind_type[kind] == HPL_FLOAT32;
    if (kind_nd[kind] == 2 && which == 0)
        snprintf(buf, n,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_in(%s, 2) src; hpl_out(%s, 2) dst; int dim; int ov; uint c; };\n"
                 "void main() {\n"
                 "    uint r = hpl_global_id.x, q = hpl_global_id.y;\n"
                 "    int n = int(dim == 0 ? src.dims.x : src.dims.y);\n"
                 "    int i = int(dim == 0 ? r : q);\n"
                 "%s"
                 "    for (int d = -ov; d <= ov; d++) {\n"
                 "        int k = i + d;\n"
                 "        if (k < 0 || k >= n) continue;\n"
                 "        %s v;\n"
                 "        if (dim == 0) v = hpl_at2(src, uint(k), q); else v = hpl_at2(src, r, uint(k));\n"
                 "%s"
                 "    }\n"
                 "    hpl_at2(dst, r, q) = h;\n"
                 "}\n",
                 t, t,
                 f ? "    float h = float(c) * 0.125; float w = ov > 0 ? 0.25 / float(ov) : 0.0;\n"
                   : "    uint h = r * 2654435761u + q * 40503u + c;\n",
                 t, f ? "        h += (d == 0 ? 0.5 : w) * v;\n" : "        h = h * 31u + v * uint(d + 7);\n");
    else if (which == 0)
        snprintf(buf, n,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_in(%s, 1) src; hpl_out(%s, 1) dst; int dim; int ov; uint c; };\n"
                 "void main() {\n"
                 "    uint r = hpl_global_id.x;\n"
                 "    int n = int(src.dims), i = int(r);\n"
                 "%s"
                 "    for (int d = -ov; d <= ov; d++) {\n"
                 "        int k = i + d;\n"
                 "        if (k < 0 || k >= n) continue;\n"
                 "        %s v = hpl_at(src, uint(k));\n"
                 "%s"
                 "    }\n"
                 "    hpl_at(dst, r) = h;\n"
                 "}\n",
                 t, t,
                 f ? "    float h = float(c) * 0.125; float w = ov > 0 ? 0.25 / float(ov) : 0.0;\n"
                   : "    uint h = r * 2654435761u + c;\n",
                 t, f ? "        h += (d == 0 ? 0.5 : w) * v;\n" : "        h = h * 31u + v * uint(d + 7);\n");
    else
        snprintf(buf, n,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_inout(%s, %d) a; hpl_in(%s, %d) b; uint c; };\n"
                 "void main() {\n"
                 "    uint r = hpl_global_id.x, q = hpl_global_id.y;\n"
                 "    %s\n"
                 "}\n",
                 t, kind_nd[kind], t, kind_nd[kind],
                 kind_nd[kind] == 2
                     ? (f ? "hpl_at2(a, r, q) = hpl_at2(a, r, q) * 0.75 + hpl_at2(b, r, q) * 0.25 + float(c) * 0.125;"
                          : "hpl_at2(a, r, q) = hpl_at2(a, r, q) * 3u + hpl_at2(b, r, q) + c;")
                     : (f ? "hpl_at(a, r) = hpl_at(a, r) * 0.75 + hpl_at(b, r) * 0.25 + float(c) * 0.125;"
                          : "hpl_at(a, r) = hpl_at(a, r) * 3u + hpl_at(b, r) + c;"));
    return buf;
}

static void one_op(void)
{
    op_text[0] = 0;
    int kind = (int)below(KINDS);
    uint64_t w = below(100);
    if (w < 12) {
        view v = random_view((int)below(ROOTS), true);
        op_write(&v, false);
    } else if (w < 26) {
        op_annotated(0, kind, false);
    } else if (w < 36) {
        op_annotated(1, kind, false);
    } else if (w < 42) {
        op_annotated((int)below(2), kind, true);
    } else if (w < 52) {
        op_plain((int)below(2), kind);
    } else if (w < 58) {
        op_fill();
    } else if (w < 64) {
        op_assign();
    } else if (w < 69) {
        op_prefetch();
    } else if (w < 73) {
        view v = random_view((int)below(ROOTS), true);
        op_write(&v, true);
    } else if (w < 83) {
        op_reduce();
    } else {
        view v = random_view((int)below(ROOTS), true);
        op_read(&v);
    }
}

/* Runs one sequence; returns true when it passed on every rank. */
static bool run_sequence(uint64_t seed, int nops)
{
    rs = seed;
    /* Shapes: rows 1..40 (fewer than the devices at times), columns 1..24;
     * 1-D 1..60. */
    uint64_t rows = (uint64_t)between(1, 40), cols = (uint64_t)between(1, 24), len = (uint64_t)between(1, 60);
    if (below(4) == 0)
        rows = (uint64_t)between(1, devices + 1);
    for (int r = 0; r < ROOTS; r++) {
        bool two = nd_of(r) == 2;
        dims[r][0] = two ? rows : len;
        dims[r][1] = two ? cols : 1;
        hpl_array_desc d = {.type = kind_type[kind_of(r)], .dims = {dims[r][0], two ? dims[r][1] : 0}};
        sroot[r] = lroot[r] = (hpl_array){0};
        CHECK_OK(hpl_array_create(ctx.s, &d, &sroot[r]));
        CHECK_OK(hpl_array_create(ctx.l, &d, &lroot[r]));
    }
    if (rank == 0 && verbose)
        printf("seed=%llu: %llu x %llu, %llu\n", (unsigned long long)seed, (unsigned long long)rows,
               (unsigned long long)cols, (unsigned long long)len);
    bool ok = true;
    /* Every array starts written on the host. */
    for (int r = 0; ok && r < ROOTS + nops; r++) {
        int before = th_failures() + th_error_messages();
        op_failed = 0;
        if (r < ROOTS) {
            view v = {.root = r, .hi = {dims[r][0] - 1, dims[r][1] - 1}};
            op_write(&v, false);
        } else {
            one_op();
            nops_done++;
        }
        if (rank == 0 && verbose)
            printf("  %d: %.3f %s\n", r, th_now(), op_text);
        int bad = op_failed || th_failures() + th_error_messages() > before, any = 0;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (bad)
                fprintf(stderr, "rank %d: FAILED seed=%llu at operation %d: %s\n", rank, (unsigned long long)seed, r,
                        op_text);
            ok = false;
        }
    }
    /* Every array read back whole at the end. */
    for (int r = 0; ok && r < ROOTS; r++) {
        int before = th_failures() + th_error_messages();
        op_failed = 0;
        view v = {.root = r, .hi = {dims[r][0] - 1, dims[r][1] - 1}};
        op_read(&v);
        int bad = op_failed || th_failures() + th_error_messages() > before, any = 0;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (bad)
                fprintf(stderr, "rank %d: FAILED seed=%llu at the final read of r%d\n", rank, (unsigned long long)seed,
                        r);
            ok = false;
        }
    }
    for (int r = 0; r < ROOTS; r++) {
        if (sroot[r].id)
            CHECK_OK(hpl_array_destroy(ctx.s, sroot[r]));
        if (lroot[r].id)
            CHECK_OK(hpl_array_destroy(ctx.l, lroot[r]));
    }
    return ok;
}

static uint64_t parse_u64(const char *s, uint64_t def)
{
    if (!s || !*s)
        return def;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    return end && *end == 0 ? (uint64_t)v : def;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    verbose = getenv("HPLVK_RDIFF_VERBOSE") && strcmp(getenv("HPLVK_RDIFF_VERBOSE"), "1") == 0;
    /* Rank 0's seed, sequence count and length, for every rank. */
    uint64_t params[3] = {
        parse_u64(argc > 1 ? argv[1] : getenv("HPLVK_RDIFF_SEED"), (uint64_t)time(NULL) * 1000003u + (uint64_t)clock()),
        parse_u64(argc > 2 ? argv[2] : getenv("HPLVK_RDIFF_SEQS"), 3),
        parse_u64(argc > 3 ? argv[3] : getenv("HPLVK_RDIFF_OPS"), 20)};
    MPI_Bcast(params, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    hpl_context_desc desc = {0};
    th_prepare_desc(&desc);
    if (hpl_mpi_context_create(&desc, MPI_COMM_WORLD, &ctx.s) != HPL_OK) {
        fprintf(stderr, "rank %d: hpl_mpi_context_create: %s\n", rank, hpl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* The one-process context: the span's devices in order, each zero-copy
     * or not as it is there. A context over ranks has at most
     * HPL_MAX_DEVICES devices in all (hpl_context_create_over), so the
     * list always fits one process's. */
    devices = hpl_device_count(ctx.s);
    char list[HPL_MAX_DEVICES * 8] = "";
    size_t used = 0;
    for (int g = 0; g < devices && g < HPL_MAX_DEVICES; g++) {
        hpl_device_info info;
        CHECK_OK(hpl_device_get_info(ctx.s, g, &info));
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", g ? "," : "",
                                 info.zero_copy ? "cpu+zc" : "cpu");
    }
    hpl_context_desc ldesc = {0};
    th_prepare_desc(&ldesc);
    ldesc.devices = th_devices(list);
    if (hpl_context_create(&ldesc, &ctx.l) != HPL_OK) {
        fprintf(stderr, "rank %d: hpl_context_create(\"%s\"): %s\n", rank, ldesc.devices, hpl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK(hpl_device_count(ctx.l) == devices, "the one-process context has %d devices, the span %d",
          hpl_device_count(ctx.l), devices);
    for (int g = 0; g < devices; g++) {
        hpl_device_info a, b;
        if (CHECK_OK(hpl_device_get_info(ctx.s, g, &a)) && CHECK_OK(hpl_device_get_info(ctx.l, g, &b)))
            CHECK(a.zero_copy == b.zero_copy, "device %d: zero copy %d in the span, %d in one process", g,
                  a.zero_copy, b.zero_copy);
    }
    for (int which = 0; which < 2; which++)
        for (int kind = 0; kind < KINDS; kind++) {
            char src[2048];
            kernel_src(which, kind, src, sizeof src);
            sk[which][kind] = th_kernel(ctx.s, src);
            lk[which][kind] = th_kernel(ctx.l, src);
        }
    if (rank == 0)
        printf("test_ranks_differential: seed=%llu, %llu sequences of %llu operations, %d ranks, %d devices (\"%s\" in "
               "one process)\n",
               (unsigned long long)params[0], (unsigned long long)params[1], (unsigned long long)params[2], ranks,
               devices, list);
    fflush(stdout);
    double t0 = th_now();
    int passed = 0;
    for (uint64_t i = 0; i < params[1]; i++)
        passed += run_sequence(params[0] + i, (int)params[2]);
    if (rank == 0)
        printf("test_ranks_differential: %d of %llu sequences passed, %d operations, %.1f s\n", passed,
               (unsigned long long)params[1], nops_done, th_now() - t0);
    hpl_context_destroy(ctx.l);
    int failed = th_finish(ctx.s);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_ranks_differential: %d ranks, %d devices: %s\n", ranks, devices, any ? "FAILED" : "ok");
    MPI_Finalize();
    return failed;
}
