/* Assignment (hpl_array_assign) and fill of (sub)arrays, against a host
 * model of every array kept here:
 *  - whole arrays and subarrays of equal extents: disjoint parts of one array
 *    (row blocks, column blocks, inner blocks), different arrays, 1-D, 2-D
 *    and 3-D, with `where` = HPL_ON_HOST, each device and HPL_WHERE_LAST_USED;
 *  - source data written on the host, by a kernel on another device, or
 *    spread over the host and several devices;
 *  - where the copy runs, seen in hpl_stats (HPL_WHERE_LAST_USED after a
 *    kernel on device 2 is a device-local copy there, nothing moves);
 *  - owned boxes: an assignment or fill writes only the destination's owned
 *    box; a source with a ghost part is read from wherever it is valid;
 *  - fill of row and column blocks of every element type, on devices, on
 *    the host and where last used, leaving the rest intact;
 *  - errors: extents, element types, overlap, bad `where`, invalid handles;
 *  - a chain of 50 assignments, fills and kernels on rotating devices;
 *  - random sequences of kernels (in place, and reading one box to write
 *    another), host writes and reads, fills and assignments over random,
 *    nested and owned boxes of 1-D, 2-D and 3-D arrays, on random devices. */
#include "harness.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NDEV 3

/* b = a + s (a read-only, b write-only) */
static const char *add1_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 1) a; hpl_out(float, 1) b; float s; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(b, i) = hpl_at(a, i) + s; }\n";

static const char *add2_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) a; hpl_out(float, 2) b; float s; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(b, id.x, id.y) = hpl_at2(a, id.x, id.y) + s; }\n";

static const char *add3_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 3) a; hpl_out(float, 3) b; float s; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at3(b, id.x, id.y, id.z) = hpl_at3(a, id.x, id.y, id.z) + s; }\n";

static hpl_kernel K[4];    /* K[n]: x += s on an n-D float array */
static hpl_kernel KADD[4]; /* KADD[n]: b = a + s */

static const char *where_name(int where)
{
    static char buf[4][32];
    static int next;
    char *b = buf[next++ % 4];
    if (where == HPL_ON_HOST)
        snprintf(b, 32, "HPL_ON_HOST");
    else if (where == HPL_WHERE_LAST_USED)
        snprintf(b, 32, "HPL_WHERE_LAST_USED");
    else
        snprintf(b, 32, "device %d", where);
    return b;
}

static size_t at(const uint64_t d[3], uint64_t i, uint64_t j, uint64_t k)
{
    return (size_t)((i * d[1] + j) * d[2] + k);
}

/* ---- the host model of float arrays ------------------------------------ */

typedef struct root {
    hpl_array h;
    int nd;
    uint64_t d[3];
    float *ref;
    char name[32];
} root_t;

typedef struct box {
    root_t *r;
    hpl_array h;
    uint64_t o[3], e[3];      /* origin in the root, extents */
    bool has_owned;
    uint64_t of[3], ol[3];    /* owned box in the box's own coordinates */
} box_t;

static void init_ref(float *ref, size_t n, float seed)
{
    for (size_t i = 0; i < n; i++)
        ref[i] = seed + (float)((i * 37) % 1009) + 0.25f * (float)(i % 4);
}

static size_t rcount(const root_t *r)
{
    return (size_t)(r->d[0] * r->d[1] * r->d[2]);
}

static void mkroot(hpl_context *ctx, root_t *r, const char *name, uint64_t d0, uint64_t d1, uint64_t d2, float seed)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->nd = d2 ? 3 : d1 ? 2 : 1;
    r->d[0] = d0;
    r->d[1] = d1 ? d1 : 1;
    r->d[2] = d2 ? d2 : 1;
    r->ref = malloc(rcount(r) * sizeof(float));
    init_ref(r->ref, rcount(r), seed);
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {d0, d1, d2}, .name = r->name},
                              &r->h));
    CHECK_OK(hpl_array_write(ctx, r->h, r->ref, rcount(r) * sizeof(float)));
}

static void freeroot(hpl_context *ctx, root_t *r)
{
    CHECK_OK(hpl_array_destroy(ctx, r->h));
    free(r->ref);
    r->ref = NULL;
}

static box_t whole(root_t *r)
{
    box_t b = {.r = r, .h = r->h};
    for (int k = 0; k < 3; k++)
        b.e[k] = r->d[k];
    return b;
}

/* A subarray of root r (ranges in r's coordinates, HPL_END allowed);
 * owned: NULL or ranges in r's coordinates. */
static box_t mkbox(hpl_context *ctx, root_t *r, const hpl_range *rr, const hpl_range *owned)
{
    box_t b = {.r = r};
    for (int k = 0; k < 3; k++) {
        if (k < r->nd) {
            uint64_t last = rr[k].last == HPL_END ? r->d[k] - 1 : rr[k].last;
            b.o[k] = rr[k].first;
            b.e[k] = last - rr[k].first + 1;
            if (owned) {
                uint64_t olast = owned[k].last == HPL_END ? r->d[k] - 1 : owned[k].last;
                b.of[k] = owned[k].first - rr[k].first;
                b.ol[k] = olast - rr[k].first;
            }
        } else {
            b.e[k] = 1;
        }
    }
    b.has_owned = owned != NULL;
    if (owned)
        CHECK_OK(hpl_subarray_owned(ctx, r->h, r->nd, rr, owned, &b.h));
    else
        CHECK_OK(hpl_subarray(ctx, r->h, r->nd, rr, &b.h));
    return b;
}

/* A nested subarray of box b: its indices first..last of dimension 0 (in
 * b's coordinates), all of the others. */
static box_t part_box(hpl_context *ctx, const box_t *b, uint64_t first, uint64_t last)
{
    box_t p = *b;
    p.has_owned = false;
    p.o[0] = b->o[0] + first;
    p.e[0] = last - first + 1;
    hpl_range rr[3] = {{first, last}, HPL_ALL, HPL_ALL};
    CHECK_OK(hpl_subarray(ctx, b->h, b->r->nd, rr, &p.h));
    return p;
}

static bool owns(const box_t *b, uint64_t i, uint64_t j, uint64_t k)
{
    if (!b->has_owned)
        return true;
    uint64_t x[3] = {i, j, k};
    for (int q = 0; q < b->r->nd; q++)
        if (x[q] < b->of[q] || x[q] > b->ol[q])
            return false;
    return true;
}

static float *refp(const box_t *b, uint64_t i, uint64_t j, uint64_t k)
{
    return &b->r->ref[at(b->r->d, b->o[0] + i, b->o[1] + j, b->o[2] + k)];
}

#define FOR_BOX(b)                                 \
    for (uint64_t i = 0; i < (b)->e[0]; i++)       \
        for (uint64_t j = 0; j < (b)->e[1]; j++)   \
            for (uint64_t k = 0; k < (b)->e[2]; k++)

/* x += s by a kernel on device dev (only the owned box counts). */
static void op_inc(hpl_context *ctx, const box_t *b, int dev, float s)
{
    hpl_launch l = th_on(dev);
    if (!CHECK_OK(hpl_eval(ctx, K[b->r->nd], &l, HPL_ARGS(hpl_arr(b->h), hpl_f32(s)))))
        return;
    FOR_BOX(b)
    if (owns(b, i, j, k))
        *refp(b, i, j, k) += s;
}

static void op_assign(hpl_context *ctx, const box_t *dst, const box_t *src, int where)
{
    for (int k = 0; k < 3; k++)
        if (dst->e[k] != src->e[k]) {
            CHECK(false, "test bug: op_assign extents differ in dimension %d", k);
            return;
        }
    if (!CHECK_OK(hpl_array_assign(ctx, dst->h, src->h, where)))
        return;
    size_t n = (size_t)(src->e[0] * src->e[1] * src->e[2]), q = 0;
    float *tmp = malloc(n * sizeof(float));
    FOR_BOX(src)
    tmp[q++] = *refp(src, i, j, k);
    q = 0;
    FOR_BOX(dst)
    {
        if (owns(dst, i, j, k))
            *refp(dst, i, j, k) = tmp[q];
        q++;
    }
    free(tmp);
}

/* dst = src + s by a kernel on device dev (dst's owned box only). */
static void op_add(hpl_context *ctx, const box_t *dst, const box_t *src, int dev, float s)
{
    hpl_launch l = th_on(dev);
    if (!CHECK_OK(hpl_eval(ctx, KADD[src->r->nd], &l, HPL_ARGS(hpl_arr(src->h), hpl_arr(dst->h), hpl_f32(s)))))
        return;
    size_t n = (size_t)(src->e[0] * src->e[1] * src->e[2]), q = 0;
    float *tmp = malloc(n * sizeof(float));
    FOR_BOX(src)
    tmp[q++] = *refp(src, i, j, k) + s;
    q = 0;
    FOR_BOX(dst)
    {
        if (owns(dst, i, j, k))
            *refp(dst, i, j, k) = tmp[q];
        q++;
    }
    free(tmp);
}

static void op_fill(hpl_context *ctx, const box_t *b, float v, int where)
{
    if (!CHECK_OK(hpl_array_fill(ctx, b->h, &v, where)))
        return;
    FOR_BOX(b)
    if (owns(b, i, j, k))
        *refp(b, i, j, k) = v;
}

/* A host write of the whole box (boxes without a ghost part only). */
static void op_hostwrite(hpl_context *ctx, const box_t *b, float seed)
{
    size_t n = (size_t)(b->e[0] * b->e[1] * b->e[2]), q = 0;
    float *buf = malloc(n * sizeof(float));
    for (size_t x = 0; x < n; x++)
        buf[x] = seed + (float)((x * 13) % 997);
    if (CHECK_OK(hpl_array_write(ctx, b->h, buf, n * sizeof(float))))
        FOR_BOX(b)
    *refp(b, i, j, k) = buf[q++];
    free(buf);
}

static void verify(hpl_context *ctx, const root_t *r, const char *what)
{
    size_t n = rcount(r);
    float *got = malloc(n * sizeof(float));
    if (CHECK_OK(hpl_array_read(ctx, r->h, got, n * sizeof(float)))) {
        size_t bad = 0, first = 0;
        for (size_t x = 0; x < n; x++)
            if (got[x] != r->ref[x] && bad++ == 0)
                first = x;
        CHECK(bad == 0, "%s: array %s: %zu of %zu elements wrong, first [%zu] = %g want %g", what, r->name, bad, n,
              first, bad ? got[first] : 0.0, bad ? r->ref[first] : 0.0);
    }
    free(got);
}

/* ---- 1. assignments, every `where`, source data in various places ------ */

static void assignments(hpl_context *ctx)
{
    static const int wheres[] = {HPL_ON_HOST, 0, 1, 2, HPL_WHERE_LAST_USED};
    for (size_t wi = 0; wi < sizeof wheres / sizeof wheres[0]; wi++) {
        int where = wheres[wi];
        for (int placement = 0; placement < 3; placement++) {
            char what[160];
            root_t M, A, B, W1, W2, V, V1, V2, T, T1, T2;
            mkroot(ctx, &M, "M", 40, 16, 0, 1.0f);
            mkroot(ctx, &A, "A", 30, 20, 0, 2000.0f);
            mkroot(ctx, &B, "B", 25, 12, 0, 4000.0f);
            mkroot(ctx, &W1, "W1", 12, 7, 0, 6000.0f);
            mkroot(ctx, &W2, "W2", 12, 7, 0, 7000.0f);
            mkroot(ctx, &V, "V", 500, 0, 0, 8000.0f);
            mkroot(ctx, &V1, "V1", 333, 0, 0, 9000.0f);
            mkroot(ctx, &V2, "V2", 333, 0, 0, 10000.0f);
            mkroot(ctx, &T, "T", 6, 5, 9, 11000.0f);
            mkroot(ctx, &T1, "T1", 4, 3, 5, 12000.0f);
            mkroot(ctx, &T2, "T2", 4, 3, 5, 13000.0f);
            root_t *roots[] = {&M, &A, &B, &W1, &W2, &V, &V1, &V2, &T, &T1, &T2};
            const int nroots = (int)(sizeof roots / sizeof roots[0]);

            /* (dst, src) pairs */
            box_t pairs[][2] = {
                {mkbox(ctx, &M, (const hpl_range[]){{20, 29}, HPL_ALL}, NULL),
                 mkbox(ctx, &M, (const hpl_range[]){{0, 9}, HPL_ALL}, NULL)},
                {mkbox(ctx, &M, (const hpl_range[]){HPL_ALL, {8, 11}}, NULL),
                 mkbox(ctx, &M, (const hpl_range[]){HPL_ALL, {0, 3}}, NULL)},
                {mkbox(ctx, &M, (const hpl_range[]){{30, 35}, {10, 14}}, NULL),
                 mkbox(ctx, &M, (const hpl_range[]){{2, 7}, {1, 5}}, NULL)},
                {mkbox(ctx, &B, (const hpl_range[]){{10, 14}, {0, 9}}, NULL),
                 mkbox(ctx, &A, (const hpl_range[]){{3, 7}, {2, 11}}, NULL)},
                {mkbox(ctx, &A, (const hpl_range[]){HPL_ALL, {15, 16}}, NULL),
                 mkbox(ctx, &M, (const hpl_range[]){{10, 39}, {14, 15}}, NULL)},
                {whole(&W1), whole(&W2)},
                {mkbox(ctx, &V, (const hpl_range[]){{300, 399}}, NULL),
                 mkbox(ctx, &V, (const hpl_range[]){{0, 99}}, NULL)},
                {whole(&V1), whole(&V2)},
                {mkbox(ctx, &V, (const hpl_range[]){{167, HPL_END}}, NULL), whole(&V1)},
                {mkbox(ctx, &T, (const hpl_range[]){{3, 4}, {2, 4}, {5, 8}}, NULL),
                 mkbox(ctx, &T, (const hpl_range[]){{0, 1}, {0, 2}, {0, 3}}, NULL)},
                {mkbox(ctx, &T, (const hpl_range[]){{2, 5}, {1, 3}, {4, 8}}, NULL), whole(&T1)},
                {whole(&T2), mkbox(ctx, &T, (const hpl_range[]){{0, 3}, {2, 4}, {4, 8}}, NULL)},
            };
            const int npairs = (int)(sizeof pairs / sizeof pairs[0]);
            const char *placement_name[] = {"written on the host", "written by a kernel on another device",
                                            "spread over the host and the devices"};

            for (int p = 0; p < npairs; p++) {
                box_t *dst = &pairs[p][0], *src = &pairs[p][1];
                /* A device other than `where`. */
                int other = where >= 0 ? (where + 1) % NDEV : 1 + p % 2;
                box_t src_root = whole(src->r);
                if (placement == 0) {
                    op_hostwrite(ctx, src, 100.0f * (float)p);
                } else if (placement == 1) {
                    op_hostwrite(ctx, src, 200.0f * (float)p);
                    op_inc(ctx, src, other, 1.0f + (float)p);
                } else {
                    /* The source's root newest on device 2, the first half
                     * of the source on device 1, its last index (dimension
                     * 0) on the host, the destination on device 0. */
                    op_inc(ctx, &src_root, 2, 1.0f);
                    op_hostwrite(ctx, dst, 50.0f);
                    op_inc(ctx, dst, 0, 2.0f);
                    box_t first = part_box(ctx, src, 0, src->e[0] / 2 - 1);
                    op_inc(ctx, &first, 1, 3.0f);
                    box_t last = part_box(ctx, src, src->e[0] - 1, src->e[0] - 1);
                    op_hostwrite(ctx, &last, 70.0f);
                }
                /* The destination was last used on device (p % 3). */
                op_inc(ctx, dst, p % NDEV, 0.5f);
                op_assign(ctx, dst, src, where);
                snprintf(what, sizeof what, "assign pair %d, source %s, %s", p, placement_name[placement],
                         where_name(where));
                verify(ctx, dst->r, what);
                if (src->r != dst->r)
                    verify(ctx, src->r, what);
            }
            /* Every device's copies stay coherent after the assignments. */
            for (int r = 0; r < nroots; r++) {
                box_t w = whole(roots[r]);
                op_inc(ctx, &w, (r + (int)wi) % NDEV, 0.75f);
                snprintf(what, sizeof what, "kernel after the assignments (source %s, %s)", placement_name[placement],
                         where_name(where));
                verify(ctx, roots[r], what);
            }
            for (int r = 0; r < nroots; r++)
                freeroot(ctx, roots[r]);
        }
    }
}

/* ---- 2. where the copy runs: hpl_stats --------------------------------- */

static void stats_where(hpl_context *ctx)
{
    root_t M;
    hpl_stats st;
    mkroot(ctx, &M, "Mstats", 40, 16, 0, 3.0f);
    box_t src = mkbox(ctx, &M, (const hpl_range[]){{0, 9}, HPL_ALL}, NULL);
    box_t dst = mkbox(ctx, &M, (const hpl_range[]){{20, 29}, HPL_ALL}, NULL);
    box_t csrc = mkbox(ctx, &M, (const hpl_range[]){HPL_ALL, {0, 3}}, NULL);
    box_t cdst = mkbox(ctx, &M, (const hpl_range[]){HPL_ALL, {8, 11}}, NULL);
    box_t w = whole(&M);
    const uint64_t rbytes = 10 * 16 * sizeof(float), cbytes = 40 * 4 * sizeof(float);

    /* Everything valid only on device 2, dst last used there: the copy is
     * device-local on device 2, nothing moves. */
    op_inc(ctx, &w, 2, 1.0f);
    op_inc(ctx, &dst, 2, 2.0f);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    op_assign(ctx, &dst, &src, HPL_WHERE_LAST_USED);
    CHECK_OK(hpl_array_wait(ctx, dst.h));
    if (CHECK_OK(hpl_stats_get(ctx, &st))) {
        CHECK(st.device_count == NDEV, "stats for %d devices", st.device_count);
        CHECK(st.device[2].local_count >= 1 && st.device[2].local_bytes >= rbytes,
              "HPL_WHERE_LAST_USED after device 2: device 2 made %llu local copies of %llu bytes, want >= 1 of >= %llu",
              (unsigned long long)st.device[2].local_count, (unsigned long long)st.device[2].local_bytes,
              (unsigned long long)rbytes);
        CHECK(st.total.to_host_bytes == 0 && st.total.to_device_bytes == 0,
              "HPL_WHERE_LAST_USED with everything on device 2 moved %llu bytes to the host, %llu to devices",
              (unsigned long long)st.total.to_host_bytes, (unsigned long long)st.total.to_device_bytes);
        CHECK(st.device[0].local_count == 0 && st.device[1].local_count == 0,
              "devices 0 and 1 made %llu and %llu local copies", (unsigned long long)st.device[0].local_count,
              (unsigned long long)st.device[1].local_count);
    }
    verify(ctx, &M, "row block assigned where last used (device 2)");

    /* Column blocks (non-contiguous), same thing. */
    op_inc(ctx, &w, 2, 1.0f);
    op_inc(ctx, &cdst, 2, 2.0f);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    op_assign(ctx, &cdst, &csrc, HPL_WHERE_LAST_USED);
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st))) {
        CHECK(st.device[2].local_count >= 1 && st.device[2].local_bytes >= cbytes,
              "column blocks where last used: device 2 made %llu local copies of %llu bytes, want >= 1 of >= %llu",
              (unsigned long long)st.device[2].local_count, (unsigned long long)st.device[2].local_bytes,
              (unsigned long long)cbytes);
        CHECK(st.total.to_host_bytes == 0 && st.total.to_device_bytes == 0,
              "column blocks where last used moved %llu bytes to the host, %llu to devices",
              (unsigned long long)st.total.to_host_bytes, (unsigned long long)st.total.to_device_bytes);
    }
    verify(ctx, &M, "column block assigned where last used (device 2)");

    /* dst last used on device 1, src only valid on device 2: the copy runs on
     * device 1, src comes from device 2 through the host. */
    op_inc(ctx, &w, 2, 1.0f);
    op_inc(ctx, &dst, 1, 2.0f);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    op_assign(ctx, &dst, &src, HPL_WHERE_LAST_USED);
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st))) {
        CHECK(st.device[1].local_count >= 1 && st.device[1].local_bytes >= rbytes,
              "dst last used on device 1: device 1 made %llu local copies of %llu bytes",
              (unsigned long long)st.device[1].local_count, (unsigned long long)st.device[1].local_bytes);
        CHECK(st.device[2].local_count == 0, "dst last used on device 1: device 2 made %llu local copies",
              (unsigned long long)st.device[2].local_count);
        CHECK(st.device[2].to_host_bytes >= rbytes && st.device[1].to_device_bytes >= rbytes,
              "src from device 2 to device 1: %llu bytes left device 2, %llu reached device 1, want >= %llu",
              (unsigned long long)st.device[2].to_host_bytes, (unsigned long long)st.device[1].to_device_bytes,
              (unsigned long long)rbytes);
    }
    verify(ctx, &M, "row block assigned where last used (device 1), source on device 2");

    /* An explicit device: device 0. */
    op_inc(ctx, &w, 2, 1.0f);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    op_assign(ctx, &dst, &src, 0);
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st))) {
        CHECK(st.device[0].local_count >= 1 && st.device[0].local_bytes >= rbytes,
              "assignment on device 0: device 0 made %llu local copies of %llu bytes",
              (unsigned long long)st.device[0].local_count, (unsigned long long)st.device[0].local_bytes);
        CHECK(st.device[2].to_host_bytes >= rbytes && st.device[0].to_device_bytes >= rbytes,
              "assignment on device 0 of data on device 2: %llu bytes left device 2, %llu reached device 0",
              (unsigned long long)st.device[2].to_host_bytes, (unsigned long long)st.device[0].to_device_bytes);
    }
    verify(ctx, &M, "row block assigned on device 0, source on device 2");

    /* On the host: no device-local copy; src comes from device 2. */
    op_inc(ctx, &w, 2, 1.0f);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    op_assign(ctx, &dst, &src, HPL_ON_HOST);
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st))) {
        CHECK(st.total.local_count == 0, "assignment on the host: %llu device-local copies",
              (unsigned long long)st.total.local_count);
        CHECK(st.device[2].to_host_bytes >= rbytes, "assignment on the host: %llu bytes left device 2, want >= %llu",
              (unsigned long long)st.device[2].to_host_bytes, (unsigned long long)rbytes);
    }
    verify(ctx, &M, "row block assigned on the host, source on device 2");
    freeroot(ctx, &M);
}

/* ---- 3. owned boxes ---------------------------------------------------- */

static void owned_boxes(hpl_context *ctx)
{
    static const int wheres[] = {HPL_ON_HOST, 0, 1, 2, HPL_WHERE_LAST_USED};
    for (size_t wi = 0; wi < sizeof wheres / sizeof wheres[0]; wi++) {
        int where = wheres[wi];
        char what[160];
        root_t M;
        mkroot(ctx, &M, "Mown", 40, 16, 0, 5.0f);
        box_t w = whole(&M);
        /* rows 0..9, owning 1..8 */
        box_t g = mkbox(ctx, &M, (const hpl_range[]){{0, 9}, HPL_ALL}, (const hpl_range[]){{1, 8}, HPL_ALL});
        box_t d = mkbox(ctx, &M, (const hpl_range[]){{20, 29}, HPL_ALL}, NULL);
        /* rows 30..39, owning 31..38 and columns 2..13 */
        box_t dg = mkbox(ctx, &M, (const hpl_range[]){{30, 39}, HPL_ALL}, (const hpl_range[]){{31, 38}, {2, 13}});
        /* Source with a ghost part: rows 0 and 9 only valid on device 0. */
        op_inc(ctx, &w, 0, 1.0f);
        op_inc(ctx, &g, 1, 5.0f);
        op_assign(ctx, &d, &g, where);
        snprintf(what, sizeof what, "source with a ghost part (owned on device 1, ghost on device 0), %s",
                 where_name(where));
        verify(ctx, &M, what);
        /* Destination with a ghost part: only its owned box is written. */
        op_inc(ctx, &dg, 2, 7.0f);
        op_assign(ctx, &dg, &g, where);
        snprintf(what, sizeof what, "destination with a ghost part, %s", where_name(where));
        verify(ctx, &M, what);
        op_fill(ctx, &dg, -1.5f, where);
        snprintf(what, sizeof what, "fill of a subarray with a ghost part, %s", where_name(where));
        verify(ctx, &M, what);
        op_fill(ctx, &g, 99.0f, where);
        op_assign(ctx, &d, &g, where);
        snprintf(what, sizeof what, "fill of a ghosted source then assignment, %s", where_name(where));
        verify(ctx, &M, what);
        op_inc(ctx, &w, (int)wi % NDEV, 0.25f);
        verify(ctx, &M, "kernel on the whole array after the owned-box assignments");
        freeroot(ctx, &M);
    }
}

/* ---- 4. typed fill and assignment -------------------------------------- */

static void put(hpl_type t, void *b, size_t i, int64_t v)
{
    switch (t) {
    case HPL_FLOAT32: ((float *)b)[i] = (float)v + 0.5f; break;
    case HPL_FLOAT64: ((double *)b)[i] = (double)v + 1.0 / 3.0; break;
    case HPL_INT32: ((int32_t *)b)[i] = (int32_t)v * -3; break;
    case HPL_UINT32: ((uint32_t *)b)[i] = (uint32_t)v * 2654435761u; break;
    case HPL_INT64: ((int64_t *)b)[i] = v * -4294967311LL; break;
    case HPL_UINT64: ((uint64_t *)b)[i] = (uint64_t)v * 0x9e3779b97f4a7c15ull; break;
    default: break;
    }
}

typedef struct troot {
    hpl_array h;
    hpl_type t;
    size_t es;
    uint64_t d[3];
    unsigned char *ref;
} troot_t;

static void tmk(hpl_context *ctx, troot_t *r, hpl_type t, uint64_t d0, uint64_t d1, uint64_t d2, int seed)
{
    r->t = t;
    r->es = hpl_type_size(t);
    r->d[0] = d0;
    r->d[1] = d1 ? d1 : 1;
    r->d[2] = d2 ? d2 : 1;
    size_t n = (size_t)(r->d[0] * r->d[1] * r->d[2]);
    r->ref = malloc(n * r->es);
    for (size_t i = 0; i < n; i++)
        put(t, r->ref, i, (int64_t)((i * 131 + (size_t)seed * 7) % 100003) + 1);
    r->h = th_array(ctx, t, d0, d1, d2);
    CHECK_OK(hpl_array_write(ctx, r->h, r->ref, n * r->es));
}

/* Sets box [o, o+e) of r's reference to *v (or, owned only, [of, ol]). */
static void tref_fill(troot_t *r, const uint64_t o[3], const uint64_t e[3], const void *v)
{
    for (uint64_t i = o[0]; i < o[0] + e[0]; i++)
        for (uint64_t j = o[1]; j < o[1] + e[1]; j++)
            for (uint64_t k = o[2]; k < o[2] + e[2]; k++)
                memcpy(r->ref + at(r->d, i, j, k) * r->es, v, r->es);
}

static void tref_copy(troot_t *dr, const uint64_t dor[3], troot_t *sr, const uint64_t sor[3], const uint64_t e[3])
{
    size_t n = (size_t)(e[0] * e[1] * e[2]), q = 0;
    unsigned char *tmp = malloc(n * sr->es);
    for (uint64_t i = 0; i < e[0]; i++)
        for (uint64_t j = 0; j < e[1]; j++)
            for (uint64_t k = 0; k < e[2]; k++)
                memcpy(tmp + (q++) * sr->es, sr->ref + at(sr->d, sor[0] + i, sor[1] + j, sor[2] + k) * sr->es, sr->es);
    q = 0;
    for (uint64_t i = 0; i < e[0]; i++)
        for (uint64_t j = 0; j < e[1]; j++)
            for (uint64_t k = 0; k < e[2]; k++)
                memcpy(dr->ref + at(dr->d, dor[0] + i, dor[1] + j, dor[2] + k) * dr->es, tmp + (q++) * sr->es, sr->es);
    free(tmp);
}

static void tverify(hpl_context *ctx, troot_t *r, const char *what)
{
    size_t n = (size_t)(r->d[0] * r->d[1] * r->d[2]);
    unsigned char *got = malloc(n * r->es);
    if (CHECK_OK(hpl_array_read(ctx, r->h, got, n * r->es))) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (memcmp(got + i * r->es, r->ref + i * r->es, r->es) != 0 && bad++ == 0)
                first = i;
        CHECK(bad == 0, "%s (%s): %zu of %zu elements wrong, first [%zu]", what, hpl_type_name(r->t), bad, n, first);
    }
    free(got);
}

#define U3(a, b, c) ((const uint64_t[3]){(a), (b), (c)})

static void typed(hpl_context *ctx)
{
    /* 64-bit types where every device has them (Lavapipe and NVIDIA do). */
    bool f64 = true, i64 = true;
    for (int d = 0; d < NDEV; d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info))) {
            f64 = f64 && info.float64;
            i64 = i64 && info.int64;
        }
    }
    static const hpl_type types[] = {HPL_FLOAT32, HPL_FLOAT64, HPL_INT32, HPL_UINT32, HPL_INT64, HPL_UINT64};
    for (int ti = 0; ti < 6; ti++) {
        hpl_type t = types[ti];
        if ((t == HPL_FLOAT64 && !f64) || ((t == HPL_INT64 || t == HPL_UINT64) && !i64)) {
            th_note("%s: not supported by every device, skipped", hpl_type_name(t));
            continue;
        }
        char what[160];
        unsigned char v1[8], v2[8], v3[8], v4[8];
        put(t, v1, 0, 777777 + ti);
        put(t, v2, 0, -123456 - ti);
        put(t, v3, 0, 31337);
        put(t, v4, 0, 4242424);
        troot_t P, Q;
        tmk(ctx, &P, t, 12, 10, 0, 1 + ti);
        tmk(ctx, &Q, t, 12, 10, 0, 50 + ti);
        hpl_array rows, cols, ghost, qcols;
        CHECK_OK(hpl_subarray(ctx, P.h, HPL_RANGES({3, 6}, HPL_ALL), &rows));
        CHECK_OK(hpl_subarray(ctx, P.h, HPL_RANGES(HPL_ALL, {2, 4}), &cols));
        CHECK_OK(hpl_subarray_owned(ctx, P.h, HPL_RANGES({7, 10}, HPL_ALL), ((const hpl_range[]){{8, 9}, {1, 8}}),
                                    &ghost));
        CHECK_OK(hpl_subarray(ctx, Q.h, HPL_RANGES(HPL_ALL, {6, 8}), &qcols));
        int dev = ti % NDEV;
        /* Row block filled on a device, column block on the host (program
         * order decides their overlap), ghosted block on device 2. */
        CHECK_OK(hpl_array_fill(ctx, rows, v1, dev));
        tref_fill(&P, U3(3, 0, 0), U3(4, 10, 1), v1);
        snprintf(what, sizeof what, "row block filled on device %d", dev);
        tverify(ctx, &P, what);
        CHECK_OK(hpl_array_fill(ctx, cols, v2, HPL_ON_HOST));
        tref_fill(&P, U3(0, 2, 0), U3(12, 3, 1), v2);
        tverify(ctx, &P, "column block filled on the host");
        CHECK_OK(hpl_array_fill(ctx, cols, v3, (dev + 1) % NDEV));
        tref_fill(&P, U3(0, 2, 0), U3(12, 3, 1), v3);
        CHECK_OK(hpl_array_fill(ctx, rows, v4, HPL_ON_HOST));
        tref_fill(&P, U3(3, 0, 0), U3(4, 10, 1), v4);
        tverify(ctx, &P, "column block filled on a device, then a row block on the host");
        CHECK_OK(hpl_array_fill(ctx, ghost, v1, 2));
        tref_fill(&P, U3(8, 1, 0), U3(2, 8, 1), v1);
        tverify(ctx, &P, "fill of a subarray with an owned box on device 2 (only the owned box)");
        CHECK_OK(hpl_array_fill(ctx, ghost, v2, HPL_ON_HOST));
        tref_fill(&P, U3(8, 1, 0), U3(2, 8, 1), v2);
        tverify(ctx, &P, "fill of a subarray with an owned box on the host (only the owned box)");
        CHECK_OK(hpl_array_fill(ctx, cols, v3, HPL_WHERE_LAST_USED));
        tref_fill(&P, U3(0, 2, 0), U3(12, 3, 1), v3);
        tverify(ctx, &P, "column block filled where last used");
        /* Typed assignments: column block of P to a column block of Q (on a
         * device), row blocks within Q (on the host), back to P (where last
         * used). */
        CHECK_OK(hpl_array_assign(ctx, qcols, cols, dev));
        tref_copy(&Q, U3(0, 6, 0), &P, U3(0, 2, 0), U3(12, 3, 1));
        snprintf(what, sizeof what, "typed column block assigned on device %d", dev);
        tverify(ctx, &Q, what);
        hpl_array qa, qb;
        CHECK_OK(hpl_subarray(ctx, Q.h, HPL_RANGES({0, 3}, HPL_ALL), &qa));
        CHECK_OK(hpl_subarray(ctx, Q.h, HPL_RANGES({8, 11}, HPL_ALL), &qb));
        CHECK_OK(hpl_array_assign(ctx, qb, qa, HPL_ON_HOST));
        tref_copy(&Q, U3(8, 0, 0), &Q, U3(0, 0, 0), U3(4, 10, 1));
        tverify(ctx, &Q, "typed row blocks assigned on the host");
        CHECK_OK(hpl_array_assign(ctx, rows, qb, HPL_WHERE_LAST_USED));
        tref_copy(&P, U3(3, 0, 0), &Q, U3(8, 0, 0), U3(4, 10, 1));
        tverify(ctx, &P, "typed row block assigned where last used");
        CHECK_OK(hpl_array_assign(ctx, Q.h, P.h, (dev + 2) % NDEV));
        tref_copy(&Q, U3(0, 0, 0), &P, U3(0, 0, 0), U3(12, 10, 1));
        tverify(ctx, &Q, "typed whole arrays assigned on a device");
        CHECK_OK(hpl_array_destroy(ctx, P.h));
        CHECK_OK(hpl_array_destroy(ctx, Q.h));
        free(P.ref);
        free(Q.ref);
    }
    /* A 3-D uint64 box and a 1-D double range, between arrays. */
    {
        troot_t X, Y;
        tmk(ctx, &X, HPL_UINT64, 4, 6, 5, 3);
        tmk(ctx, &Y, HPL_UINT64, 3, 3, 8, 4);
        hpl_array xs, ys;
        CHECK_OK(hpl_subarray(ctx, X.h, HPL_RANGES({1, 3}, {2, 4}, {0, 3}), &xs));
        CHECK_OK(hpl_subarray(ctx, Y.h, HPL_RANGES(HPL_ALL, HPL_ALL, {4, 7}), &ys));
        CHECK_OK(hpl_array_assign(ctx, ys, xs, 1));
        tref_copy(&Y, U3(0, 0, 4), &X, U3(1, 2, 0), U3(3, 3, 4));
        tverify(ctx, &Y, "3-D uint64 box assigned on device 1");
        CHECK_OK(hpl_array_destroy(ctx, X.h));
        CHECK_OK(hpl_array_destroy(ctx, Y.h));
        free(X.ref);
        free(Y.ref);
        troot_t D;
        tmk(ctx, &D, HPL_FLOAT64, 1001, 0, 0, 5);
        hpl_array da, db;
        CHECK_OK(hpl_subarray(ctx, D.h, HPL_RANGES({1, 500}), &da));
        CHECK_OK(hpl_subarray(ctx, D.h, HPL_RANGES({501, HPL_END}), &db));
        CHECK_OK(hpl_array_assign(ctx, da, db, 2));
        tref_copy(&D, U3(1, 0, 0), &D, U3(501, 0, 0), U3(500, 1, 1));
        tverify(ctx, &D, "1-D double halves assigned on device 2");
        CHECK_OK(hpl_array_destroy(ctx, D.h));
        free(D.ref);
    }
}

/* ---- 5. errors --------------------------------------------------------- */

static void errors(hpl_context *ctx)
{
    root_t A;
    mkroot(ctx, &A, "Aerr", 10, 8, 0, 1.0f);
    hpl_array B = th_array(ctx, HPL_FLOAT32, 8, 10, 0);
    hpl_array L = th_array(ctx, HPL_FLOAT32, 80, 0, 0);
    hpl_array I = th_array(ctx, HPL_INT32, 10, 8, 0);
    hpl_array D = th_array(ctx, HPL_FLOAT64, 10, 8, 0);
    hpl_array r0, r1, c0, c1, cover, inner;
    CHECK_OK(hpl_subarray(ctx, A.h, HPL_RANGES({0, 3}, HPL_ALL), &r0));
    CHECK_OK(hpl_subarray(ctx, A.h, HPL_RANGES({4, 8}, HPL_ALL), &r1));
    CHECK_OK(hpl_subarray(ctx, A.h, HPL_RANGES(HPL_ALL, {0, 3}), &c0));
    CHECK_OK(hpl_subarray(ctx, A.h, HPL_RANGES(HPL_ALL, {2, 5}), &c1));
    CHECK_OK(hpl_subarray(ctx, A.h, HPL_RANGES({1, 4}, HPL_ALL), &cover));
    CHECK_OK(hpl_subarray(ctx, r0, HPL_RANGES({1, 3}, {0, 3}), &inner)); /* rows 1..3, cols 0..3 of A */

    /* Extents differ. */
    CHECK_FAILS(hpl_array_assign(ctx, A.h, B, 0), HPL_ERROR_DIMENSIONS, "hpl_array_assign");
    CHECK_MSG("10x8");
    CHECK_MSG("8x10");
    CHECK_FAILS(hpl_array_assign(ctx, r0, r1, HPL_ON_HOST), HPL_ERROR_DIMENSIONS, "hpl_array_assign");
    CHECK_MSG("4x8");
    CHECK_MSG("5x8");
    CHECK_FAILS(hpl_array_assign(ctx, L, A.h, 1), HPL_ERROR_DIMENSIONS, "hpl_array_assign");
    CHECK_MSG("80");
    CHECK_FAILS(hpl_array_assign(ctx, A.h, r0, HPL_WHERE_LAST_USED), HPL_ERROR_DIMENSIONS, "hpl_array_assign");
    /* Element types differ (same extents). */
    static const int type_codes[] = {HPL_ERROR_INVALID_ARGUMENT, HPL_ERROR_ARGUMENT_MISMATCH};
    CHECK_FAILS_ANY(hpl_array_assign(ctx, A.h, I, 0), type_codes, 2, "int");
    CHECK_MSG("float");
    CHECK_FAILS_ANY(hpl_array_assign(ctx, D, A.h, HPL_ON_HOST), type_codes, 2, "double");
    CHECK_FAILS_ANY(hpl_array_assign(ctx, I, D, 2), type_codes, 2, "double");
    /* Overlap within one array. */
    CHECK_FAILS(hpl_array_assign(ctx, A.h, A.h, 0), HPL_ERROR_INVALID_ARGUMENT, "overlap");
    CHECK_FAILS(hpl_array_assign(ctx, r0, cover, 1), HPL_ERROR_INVALID_ARGUMENT, "overlap");
    CHECK_FAILS(hpl_array_assign(ctx, c0, c1, HPL_ON_HOST), HPL_ERROR_INVALID_ARGUMENT, "overlap");
    CHECK_FAILS(hpl_array_assign(ctx, c1, c0, HPL_WHERE_LAST_USED), HPL_ERROR_INVALID_ARGUMENT, "overlap");
    hpl_array r0b;
    CHECK_OK(hpl_subarray(ctx, A.h, HPL_RANGES({2, 4}, {4, 7}), &r0b)); /* overlaps inner? no: cols 4..7 */
    hpl_array inner2;
    CHECK_OK(hpl_subarray(ctx, A.h, HPL_RANGES({3, 5}, {2, 5}), &inner2)); /* rows 3..5 cols 2..5: overlaps inner */
    CHECK_FAILS(hpl_array_assign(ctx, inner2, inner, 0), HPL_ERROR_INVALID_ARGUMENT, "overlap");
    /* Bad `where`. */
    static const int where_codes[] = {HPL_ERROR_UNKNOWN_DEVICE, HPL_ERROR_INVALID_ARGUMENT};
    CHECK_FAILS(hpl_array_assign(ctx, r0b, inner, NDEV), HPL_ERROR_UNKNOWN_DEVICE, "3");
    CHECK_FAILS_ANY(hpl_array_assign(ctx, r0b, inner, -3), where_codes, 2, "-3");
    CHECK_FAILS_ANY(hpl_array_assign(ctx, r0b, inner, 1000), where_codes, 2, "1000");
    float fv = 1.0f;
    CHECK_FAILS_ANY(hpl_array_fill(ctx, r0, &fv, -7), where_codes, 2, "-7");
    CHECK_FAILS(hpl_array_fill(ctx, r0, &fv, NDEV), HPL_ERROR_UNKNOWN_DEVICE, "3");
    CHECK_FAILS(hpl_array_fill(ctx, r0, NULL, HPL_ON_HOST), HPL_ERROR_INVALID_ARGUMENT, "value");
    /* Invalid handles and NULL. */
    hpl_array dead = th_array(ctx, HPL_FLOAT32, 10, 8, 0), dead_sub;
    CHECK_OK(hpl_subarray(ctx, dead, HPL_RANGES({0, 3}, HPL_ALL), &dead_sub));
    CHECK_OK(hpl_array_destroy(ctx, dead));
    CHECK_FAILS(hpl_array_assign(ctx, dead, A.h, 0), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_assign(ctx, A.h, dead, HPL_ON_HOST), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_assign(ctx, r0, dead_sub, 1), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_assign(ctx, dead_sub, r0, HPL_WHERE_LAST_USED), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_assign(ctx, (hpl_array){0}, A.h, 0), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_fill(ctx, dead_sub, &fv, 0), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_assign(NULL, A.h, B, 0), HPL_ERROR_INVALID_ARGUMENT, "ctx");
    /* Nothing changed; a legal assignment still works afterwards. */
    verify(ctx, &A, "array after the failed assignments");
    box_t dst = {.r = &A, .h = r0b, .o = {2, 4, 0}, .e = {3, 4, 1}};
    box_t src = {.r = &A, .h = inner, .o = {1, 0, 0}, .e = {3, 4, 1}};
    op_assign(ctx, &dst, &src, 1);
    verify(ctx, &A, "legal assignment after the failed ones (nested source)");
    CHECK_OK(hpl_array_destroy(ctx, B));
    CHECK_OK(hpl_array_destroy(ctx, L));
    CHECK_OK(hpl_array_destroy(ctx, I));
    CHECK_OK(hpl_array_destroy(ctx, D));
    freeroot(ctx, &A);
}

/* ---- 7. random sequences against the model ---------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

/* A random box of r (ranges in r's coordinates, sometimes HPL_ALL or
 * HPL_END), sometimes with an owned box, sometimes nested in another random
 * box (then *outer is that box and the caller destroys it after). */
static box_t random_box(hpl_context *ctx, root_t *r, bool allow_owned, box_t *outer, bool *nested)
{
    hpl_range rr[3], own[3];
    *nested = false;
    for (int k = 0; k < r->nd; k++) {
        uint64_t a = rnd((uint32_t)r->d[k]), b = rnd((uint32_t)r->d[k]);
        rr[k].first = a < b ? a : b;
        rr[k].last = a < b ? b : a;
        if (rnd(5) == 0)
            rr[k] = (hpl_range)HPL_ALL;
        else if (rr[k].last == r->d[k] - 1 && rnd(2))
            rr[k].last = HPL_END;
        uint64_t last = rr[k].last == HPL_END ? r->d[k] - 1 : rr[k].last;
        /* Owned: one element less on each side where there is room. */
        own[k].first = rr[k].first + (last - rr[k].first >= 2 ? 1 : 0);
        own[k].last = last - (last - rr[k].first >= 2 ? 1 : 0);
    }
    if (allow_owned && rnd(4) == 0)
        return mkbox(ctx, r, rr, own);
    if (rnd(4) == 0) {
        /* Nested: a box inside this one, in its coordinates. */
        *outer = mkbox(ctx, r, rr, NULL);
        *nested = true;
        hpl_range in[3] = {HPL_ALL, HPL_ALL, HPL_ALL};
        box_t b = *outer;
        for (int k = 0; k < r->nd; k++) {
            uint64_t a = rnd((uint32_t)outer->e[k]), c = rnd((uint32_t)outer->e[k]);
            in[k].first = a < c ? a : c;
            in[k].last = a < c ? c : a;
            b.o[k] = outer->o[k] + in[k].first;
            b.e[k] = in[k].last - in[k].first + 1;
        }
        CHECK_OK(hpl_subarray(ctx, outer->h, r->nd, in, &b.h));
        return b;
    }
    return mkbox(ctx, r, rr, NULL);
}

/* Sometimes destroys a box made for one operation (its view only). */
static void maybe_forget(hpl_context *ctx, box_t *b, box_t *outer, bool nested)
{
    if (b->h.id == b->r->h.id || rnd(3) != 0)
        return;
    CHECK_OK(hpl_array_destroy(ctx, b->h));
    if (nested)
        CHECK_OK(hpl_array_destroy(ctx, outer->h));
}

static int random_where(void)
{
    int w = (int)rnd(NDEV + 2);
    return w == NDEV ? HPL_ON_HOST : w == NDEV + 1 ? HPL_WHERE_LAST_USED : w;
}

static bool boxes_overlap(const box_t *a, const box_t *b)
{
    if (a->r != b->r)
        return false;
    for (int k = 0; k < 3; k++)
        if (a->o[k] + a->e[k] <= b->o[k] || b->o[k] + b->e[k] <= a->o[k])
            return false;
    return true;
}

static void random_ops(hpl_context *ctx, uint64_t seed, int nops)
{
    rng_state = seed;
    root_t R[5];
    mkroot(ctx, &R[0], "R2a", 20, 13, 0, 1.0f);
    mkroot(ctx, &R[1], "R2b", 20, 13, 0, 3000.0f);
    mkroot(ctx, &R[2], "R1", 97, 0, 0, 5000.0f);
    mkroot(ctx, &R[3], "R3a", 5, 6, 7, 7000.0f);
    mkroot(ctx, &R[4], "R3b", 5, 6, 7, 9000.0f);
    char what[160];
    for (int op = 0; op < nops; op++) {
        int ri = (int)rnd(5);
        root_t *r = &R[ri];
        box_t outer, b;
        bool nested;
        uint32_t kind = rnd(10);
        snprintf(what, sizeof what, "seed %llu op %d", (unsigned long long)seed, op);
        if (kind <= 2) { /* kernel */
            b = random_box(ctx, r, true, &outer, &nested);
            op_inc(ctx, &b, (int)rnd(NDEV), (float)(1 + rnd(9)));
            maybe_forget(ctx, &b, &outer, nested);
        } else if (kind == 3) { /* host write */
            b = random_box(ctx, r, false, &outer, &nested);
            op_hostwrite(ctx, &b, (float)(100 * (op % 50)));
            maybe_forget(ctx, &b, &outer, nested);
        } else if (kind == 4) { /* fill */
            b = random_box(ctx, r, true, &outer, &nested);
            op_fill(ctx, &b, (float)op + 0.5f, random_where());
            maybe_forget(ctx, &b, &outer, nested);
        } else if (kind == 5) { /* read a box back (dense and through access) */
            b = random_box(ctx, r, true, &outer, &nested);
            size_t n = (size_t)(b.e[0] * b.e[1] * b.e[2]), q = 0, bad = 0;
            float *got = malloc(n * sizeof(float));
            if (CHECK_OK(hpl_array_read(ctx, b.h, got, n * sizeof(float))))
                FOR_BOX(&b)
            bad += got[q++] != *refp(&b, i, j, k);
            CHECK(bad == 0, "%s: reading a box of %s: %zu of %zu elements wrong", what, r->name, bad, n);
            free(got);
            maybe_forget(ctx, &b, &outer, nested);
        } else if (kind == 6) { /* host read-write access */
            b = random_box(ctx, r, false, &outer, &nested);
            hpl_array_info info;
            float *p = th_access(ctx, b.h, HPL_READ_WRITE);
            if (p && CHECK_OK(hpl_array_get_info(ctx, b.h, &info))) {
                size_t bad = 0;
                FOR_BOX(&b)
                {
                    float *e = &p[i * info.host_stride[0] + j * info.host_stride[1] + k];
                    bad += *e != *refp(&b, i, j, k);
                    *refp(&b, i, j, k) = *e = *e + 2.0f;
                }
                CHECK(bad == 0, "%s: READ_WRITE access of a box of %s: %zu elements wrong", what, r->name, bad);
            }
            maybe_forget(ctx, &b, &outer, nested);
        } else { /* assignment */
            root_t *r2 = ri == 0 || ri == 1 ? &R[rnd(2)] : ri == 2 ? r : &R[3 + rnd(2)];
            hpl_range sr[3], dr[3];
            box_t src = {0}, dst = {0};
            bool found = false;
            for (int attempt = 0; attempt < 20 && !found; attempt++) {
                for (int k = 0; k < r->nd; k++) {
                    uint64_t e = 1 + rnd((uint32_t)r->d[k]);
                    if (rnd(3) == 0)
                        e = 1 + rnd((uint32_t)(r->d[k] / 2));
                    sr[k].first = rnd((uint32_t)(r->d[k] - e + 1));
                    dr[k].first = rnd((uint32_t)(r->d[k] - e + 1));
                    sr[k].last = sr[k].first + e - 1;
                    dr[k].last = dr[k].first + e - 1;
                    src.o[k] = sr[k].first;
                    dst.o[k] = dr[k].first;
                    src.e[k] = dst.e[k] = e;
                }
                for (int k = r->nd; k < 3; k++)
                    src.e[k] = dst.e[k] = 1;
                src.r = r;
                dst.r = r2;
                found = !boxes_overlap(&src, &dst);
            }
            if (!found)
                continue;
            bool whole_src = true, whole_dst = true;
            for (int k = 0; k < r->nd; k++) {
                whole_src = whole_src && src.e[k] == r->d[k];
                whole_dst = whole_dst && dst.e[k] == r2->d[k];
            }
            src = whole_src && rnd(2) ? whole(r) : mkbox(ctx, r, sr, NULL);
            if (whole_dst && rnd(2)) {
                dst = whole(r2);
            } else if (rnd(4) == 0) {
                hpl_range own[3];
                for (int k = 0; k < r2->nd; k++) {
                    own[k] = dr[k];
                    if (dr[k].last - dr[k].first >= 2) {
                        own[k].first++;
                        own[k].last--;
                    }
                }
                dst = mkbox(ctx, r2, dr, own);
            } else {
                dst = mkbox(ctx, r2, dr, NULL);
            }
            if (rnd(3) == 0) {
                op_add(ctx, &dst, &src, (int)rnd(NDEV), (float)rnd(5));
            } else {
                int where = random_where();
                op_assign(ctx, &dst, &src, where);
            }
            if (src.h.id != r->h.id && rnd(3) == 0)
                CHECK_OK(hpl_array_destroy(ctx, src.h));
            if (dst.h.id != r2->h.id && rnd(3) == 0)
                CHECK_OK(hpl_array_destroy(ctx, dst.h));
        }
        if (op % 25 == 24)
            for (int q = 0; q < 5; q++)
                verify(ctx, &R[q], what);
    }
    snprintf(what, sizeof what, "seed %llu, after %d random operations", (unsigned long long)seed, nops);
    for (int q = 0; q < 5; q++) {
        verify(ctx, &R[q], what);
        freeroot(ctx, &R[q]);
    }
}

/* ---- 6. a chain -------------------------------------------------------- */

static void chain(hpl_context *ctx)
{
    root_t M, N2;
    mkroot(ctx, &M, "Mchain", 32, 16, 0, 10.0f);
    mkroot(ctx, &N2, "Nchain", 16, 16, 0, 20.0f);
    box_t rb[4], cb[4], nb[2], wm = whole(&M), wn = whole(&N2);
    for (uint64_t b = 0; b < 4; b++) {
        rb[b] = mkbox(ctx, &M, (const hpl_range[]){{8 * b, 8 * b + 7}, HPL_ALL}, NULL);
        cb[b] = mkbox(ctx, &M, (const hpl_range[]){HPL_ALL, {4 * b, 4 * b + 3}}, NULL);
    }
    nb[0] = mkbox(ctx, &N2, (const hpl_range[]){{0, 7}, HPL_ALL}, NULL);
    nb[1] = mkbox(ctx, &N2, (const hpl_range[]){{8, 15}, HPL_ALL}, NULL);
    box_t ghost = mkbox(ctx, &M, (const hpl_range[]){{6, 17}, {2, 13}}, (const hpl_range[]){{8, 15}, {4, 11}});
    static const int wsel[] = {HPL_ON_HOST, HPL_WHERE_LAST_USED, -100 /* the step's device */};
    for (int s = 0; s < 50; s++) {
        int dev = s % NDEV;
        int w = wsel[(s / 5) % 3];
        if (w == -100)
            w = dev;
        int b = (s / 5) % 4, b2 = (b + 1 + s % 3) % 4;
        switch (s % 5) {
        case 0: op_assign(ctx, &rb[b2], &rb[b], w); break;
        case 1: op_inc(ctx, (s / 5) % 2 ? &wm : &ghost, dev, (float)s); break;
        case 2: op_assign(ctx, &cb[b2], &cb[b], w); break;
        case 3:
            op_inc(ctx, &rb[b], dev, 0.5f * (float)s);
            op_assign(ctx, &nb[s % 2], &rb[b2], (dev + 1) % NDEV);
            break;
        case 4:
            if ((s / 5) % 2)
                op_fill(ctx, &cb[b], (float)(-s), w);
            else
                op_inc(ctx, &wn, dev, 1.0f);
            op_assign(ctx, &rb[b], &nb[(s / 5) % 2], w);
            break;
        }
        if (s == 24) {
            verify(ctx, &M, "chain, after 25 steps");
            verify(ctx, &N2, "chain, after 25 steps");
        }
    }
    verify(ctx, &M, "chain of 50 assignments, fills and kernels");
    verify(ctx, &N2, "chain of 50 assignments, fills and kernels");
    freeroot(ctx, &M);
    freeroot(ctx, &N2);
}

int main(void)
{
    /* Owned boxes and hpl_stats behave as tested here on devices with their
     * own copies (replicas of one physical device are, by default; OFF says
     * so whatever HPLVK_ZERO_COPY says). */
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:3", .zero_copy = HPL_ZERO_COPY_OFF});
    CHECK(hpl_device_count(ctx) == NDEV, "cpu:3 opened %d devices", hpl_device_count(ctx));
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(!info.zero_copy, "device %d of cpu:3 is zero-copy", d);
    }
    K[1] = th_kernel(ctx, inc1_src());
    K[2] = th_kernel(ctx, inc2_src());
    K[3] = th_kernel(ctx, inc3_src());
    KADD[1] = th_kernel(ctx, add1_src);
    KADD[2] = th_kernel(ctx, add2_src);
    KADD[3] = th_kernel(ctx, add3_src);
    assignments(ctx);
    stats_where(ctx);
    owned_boxes(ctx);
    typed(ctx);
    errors(ctx);
    chain(ctx);
    for (uint64_t seed = 1; seed <= 6; seed++)
        random_ops(ctx, seed * 0x9e3779b97f4a7c15ull, 200);
    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
