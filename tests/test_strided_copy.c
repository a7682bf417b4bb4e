/* Strided boxes: copies of a box whose contiguous runs are many and short (a
 * column panel of a row-major 2-D array: one run per row; a 3-D subarray:
 * one run per row of each plane; whole rows of some planes: one run per
 * plane), which HPLVK_STRIDED_COPY (hplvk.h chapter 8) moves by the copy
 * kernel (shaders/copy.comp) or as one copy region per run. Every value is
 * checked against a host reference computed here, every element of the
 * arrays (the ones moved and the ones around them), on two logical devices
 * with separate memories ("cpu:2", or one GPU twice with TH_DEVICE_KIND):
 *  1. column panels of 1, 3 and 64 floats of a 300 x 257 array: host ->
 *     device -> host, into a buffer of the panel's own and into the whole
 *     array's buffer, device -> host -> device;
 *  2. a column block written on device 0 (write-only kernel), read on
 *     device 1 through panels equal to it, overlapping it, and wider;
 *  3. 3-D: a subarray strided in every dimension (n0 x n1 runs) and boxes
 *     of whole rows but not whole planes (n0 runs), between devices;
 *  4. element types float, double, int64, uint64 (where the devices have
 *     them) and uint, runs of 12 and 24 bytes (not multiples of 16) and of
 *     16 and 32 bytes with 16-byte aligned pitches and offsets. Every hplvk
 *     type is 4 or 8 bytes: none of the "size not a multiple of 4" kind;
 *  5. user host storage at a pointer 4 bytes past a 64-byte boundary;
 *  6. assignments with a shift: a column panel to another column position
 *     of the same array (on a device, where last used, on the host), to
 *     another array, and a 3-D box shifted along dimension 2;
 *  7. a one-column panel of a 70000 x 4 array: 70000 runs of 4 bytes (more
 *     than 65535: the copy kernel's grid-stride loop), up, down, and down
 *     from a whole-array buffer;
 *  8. hpl_device_stats.copy_kernels: with HPLVK_STRIDED_COPY=kernel column
 *     panel uploads, downloads, device -> device copies and shifted
 *     assignments count on the device that makes them (devices with
 *     shaderInt64, hpl_device_info.int64); with "dma" nothing counts; with
 *     "auto" (or unset) they count on GPUs only; a block of whole rows (one
 *     run per box) never counts;
 *  9. HPLVK_STRIDED_COPY=sideways makes hpl_context_create fail with
 *     HPL_ERROR_INVALID_ARGUMENT naming the variable; auto, kernel and dma
 *     are accepted.
 * Registered as test_strided_copy and again with HPLVK_STRIDED_COPY=kernel
 * (plain, staged, and beside a shared transfer lane) and =dma
 * (tests/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L /* setenv, posix_memalign */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the mode under test ------------------------------------------------- */

typedef enum copy_mode { MODE_AUTO, MODE_KERNEL, MODE_DMA } copy_mode;

static const char *mode_name(copy_mode m)
{
    return m == MODE_KERNEL ? "kernel" : m == MODE_DMA ? "dma" : "auto";
}

/* HPLVK_STRIDED_COPY as the library reads it (unset: auto). */
static copy_mode mode_from_env(void)
{
    const char *e = getenv("HPLVK_STRIDED_COPY");
    if (e && !strcmp(e, "kernel"))
        return MODE_KERNEL;
    if (e && !strcmp(e, "dma"))
        return MODE_DMA;
    return MODE_AUTO;
}

/* ---- contexts and kernels ------------------------------------------------ */

enum { K_INC, K_COPY, K_SET, K_KINDS };

/* Kernels of the open context, by kind, element type and dimensions. */
static hpl_kernel kcache[K_KINDS][HPL_TYPE_COUNT_][4];

/* Two devices with separate memories (never zero copy: data must move). */
static hpl_context *open_ctx(void)
{
    memset(kcache, 0, sizeof kcache);
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_OFF});
    CHECK(hpl_device_count(ctx) == 2, "cpu:2 opened %d devices", hpl_device_count(ctx));
    return ctx;
}

static void close_ctx(hpl_context *ctx)
{
    CHECK_OK(hpl_finish(ctx));
    hpl_context_destroy(ctx);
    memset(kcache, 0, sizeof kcache);
}

/*   K_INC:  x += s                       (in place)
 *   K_COPY: b = a + s                    (a read-only, b write-only)
 *   K_SET:  x = s + T(1000 i + 10 j + k) (write-only, i j k in x's coordinates) */
static hpl_kernel kernel_for(hpl_context *ctx, int kind, hpl_type t, int nd)
{
    if (kcache[kind][t][nd].id)
        return kcache[kind][t][nd];
    static const char *const at[4] = {"", "hpl_at(%s, id.x)", "hpl_at2(%s, id.x, id.y)",
                                      "hpl_at3(%s, id.x, id.y, id.z)"};
    const char *T = hpl_type_name(t);
    char ax[64], aa[64], ab[64], src[1024];
    snprintf(ax, sizeof ax, at[nd], "x");
    snprintf(aa, sizeof aa, at[nd], "a");
    snprintf(ab, sizeof ab, at[nd], "b");
    if (kind == K_INC)
        snprintf(src, sizeof src,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_inout(%s, %d) x; %s s; };\n"
                 "void main() { uvec3 id = hpl_global_id; %s += s; }\n",
                 T, nd, T, ax);
    else if (kind == K_COPY)
        snprintf(src, sizeof src,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_in(%s, %d) a; hpl_out(%s, %d) b; %s s; };\n"
                 "void main() { uvec3 id = hpl_global_id; %s = %s + s; }\n",
                 T, nd, T, nd, T, ab, aa);
    else
        snprintf(src, sizeof src,
                 "#include <hplvk.glsl>\n"
                 "hpl_args { hpl_out(%s, %d) x; %s s; };\n"
                 "void main() { uvec3 id = hpl_global_id; %s = s + %s(id.x * 1000u + id.y * 10u + id.z); }\n",
                 T, nd, T, ax, T);
    kcache[kind][t][nd] = th_kernel(ctx, src);
    return kcache[kind][t][nd];
}

/* ---- typed elements -------------------------------------------------------- */

/* A scalar argument: f for the float types, u (two's complement) for the
 * integer ones. */
typedef struct scal {
    double f;
    uint64_t u;
} scal;

static scal S(double f, uint64_t u)
{
    scal s = {f, u};
    return s;
}

static hpl_arg sarg(hpl_type t, scal s)
{
    switch (t) {
    case HPL_FLOAT32: return hpl_f32((float)s.f);
    case HPL_FLOAT64: return hpl_f64(s.f);
    case HPL_INT32: return hpl_i32((int32_t)(uint32_t)s.u);
    case HPL_UINT32: return hpl_u32((uint32_t)s.u);
    case HPL_INT64: return hpl_i64((int64_t)(s.u & 0x7fffffffffffffffull));
    case HPL_UINT64: return hpl_u64(s.u);
    default: return hpl_u32(0);
    }
}

/* Element n of a pattern (seed): distinct, exactly representable values
 * whose sums with the scalars used here stay exact (floats: multiples of
 * 1/4 below 2^19; doubles: of 1/8 below 2^38, past float precision; 64-bit
 * integers: both halves non-zero). */
static void eput(hpl_type t, unsigned char *p, uint64_t n, uint32_t seed)
{
    uint64_t m = (n * 37 + seed) % 100003;
    switch (t) {
    case HPL_FLOAT32: {
        float v = (float)m + 0.25f * (float)(n % 4);
        memcpy(p, &v, 4);
        break;
    }
    case HPL_FLOAT64: {
        double v = (double)m * 1048576.0 + 0.125 * (double)(n % 8);
        memcpy(p, &v, 8);
        break;
    }
    case HPL_INT32:
    case HPL_UINT32: {
        uint32_t v = (uint32_t)n * 2654435761u + seed;
        memcpy(p, &v, 4);
        break;
    }
    case HPL_INT64:
    case HPL_UINT64: {
        uint64_t v = (n + seed) * 0x9e3779b97f4a7c15ull;
        memcpy(p, &v, 8);
        break;
    }
    default: break;
    }
}

/* *dst = *src + s (what K_COPY and K_INC compute). */
static void eadd(hpl_type t, unsigned char *dst, const unsigned char *src, scal s)
{
    switch (t) {
    case HPL_FLOAT32: {
        float v;
        memcpy(&v, src, 4);
        v = v + (float)s.f;
        memcpy(dst, &v, 4);
        break;
    }
    case HPL_FLOAT64: {
        double v;
        memcpy(&v, src, 8);
        v = v + s.f;
        memcpy(dst, &v, 8);
        break;
    }
    case HPL_INT32:
    case HPL_UINT32: {
        uint32_t v;
        memcpy(&v, src, 4);
        v += (uint32_t)s.u;
        memcpy(dst, &v, 4);
        break;
    }
    case HPL_INT64:
    case HPL_UINT64: {
        uint64_t v;
        memcpy(&v, src, 8);
        v += t == HPL_INT64 ? (s.u & 0x7fffffffffffffffull) : s.u;
        memcpy(dst, &v, 8);
        break;
    }
    default: break;
    }
}

/* *p = s + T(v) (what K_SET computes; float types only here). */
static void eset(hpl_type t, unsigned char *p, scal s, uint64_t v)
{
    if (t == HPL_FLOAT32) {
        float x = (float)s.f + (float)v;
        memcpy(p, &x, 4);
    } else if (t == HPL_FLOAT64) {
        double x = s.f + (double)v;
        memcpy(p, &x, 8);
    }
}

static void describe(hpl_type t, const unsigned char *p, char *buf, size_t size)
{
    switch (t) {
    case HPL_FLOAT32: {
        float v;
        memcpy(&v, p, 4);
        snprintf(buf, size, "%.9g", v);
        break;
    }
    case HPL_FLOAT64: {
        double v;
        memcpy(&v, p, 8);
        snprintf(buf, size, "%.17g", v);
        break;
    }
    case HPL_INT32:
    case HPL_UINT32: {
        uint32_t v;
        memcpy(&v, p, 4);
        snprintf(buf, size, "%#x", v);
        break;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        snprintf(buf, size, "%#llx", (unsigned long long)v);
        break;
    }
    }
}

/* ---- arrays and boxes with a host reference ------------------------------- */

typedef struct root {
    hpl_array h;
    hpl_type t;
    size_t es;
    int nd;
    uint64_t d[3]; /* unused dimensions 1 */
    unsigned char *ref;
    char name[32];
} root_t;

typedef struct box {
    root_t *r;
    hpl_array h;
    uint64_t o[3], e[3]; /* origin in the root, extents */
} box_t;

static size_t rcount(const root_t *r)
{
    return (size_t)(r->d[0] * r->d[1] * r->d[2]);
}

static unsigned char *rref(const root_t *r, uint64_t i, uint64_t j, uint64_t k)
{
    return r->ref + (size_t)((i * r->d[1] + j) * r->d[2] + k) * r->es;
}

static unsigned char *bref(const box_t *b, uint64_t i, uint64_t j, uint64_t k)
{
    return rref(b->r, b->o[0] + i, b->o[1] + j, b->o[2] + k);
}

#define FOR_BOX(b)                                 \
    for (uint64_t i = 0; i < (b)->e[0]; i++)       \
        for (uint64_t j = 0; j < (b)->e[1]; j++)   \
            for (uint64_t k = 0; k < (b)->e[2]; k++)

/* An array of type t and extents d0 x d1 x d2 (trailing zeros: fewer
 * dimensions) holding pattern `seed`: written with hpl_array_write, or in
 * user storage `host` (filled before the array is made). */
static void mkroot(hpl_context *ctx, root_t *r, const char *name, hpl_type t, uint64_t d0, uint64_t d1, uint64_t d2,
                   uint32_t seed, void *host)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->t = t;
    r->es = hpl_type_size(t);
    r->nd = d2 ? 3 : d1 ? 2 : 1;
    r->d[0] = d0;
    r->d[1] = d1 ? d1 : 1;
    r->d[2] = d2 ? d2 : 1;
    r->ref = malloc(rcount(r) * r->es);
    for (size_t n = 0; n < rcount(r); n++)
        eput(t, r->ref + n * r->es, n, seed);
    if (host)
        memcpy(host, r->ref, rcount(r) * r->es);
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = t, .dims = {d0, d1, d2}, .host = host, .name = r->name},
                              &r->h));
    if (!host)
        CHECK_OK(hpl_array_write(ctx, r->h, r->ref, rcount(r) * r->es));
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
    for (int q = 0; q < 3; q++)
        b.e[q] = r->d[q];
    return b;
}

/* The subarray of r given by r->nd inclusive ranges (HPL_END allowed). */
static box_t mkbox(hpl_context *ctx, root_t *r, const hpl_range *rr)
{
    box_t b = {.r = r};
    for (int q = 0; q < 3; q++) {
        if (q < r->nd) {
            uint64_t last = rr[q].last == HPL_END ? r->d[q] - 1 : rr[q].last;
            b.o[q] = rr[q].first;
            b.e[q] = last - rr[q].first + 1;
        } else {
            b.e[q] = 1;
        }
    }
    CHECK_OK(hpl_subarray(ctx, r->h, r->nd, rr, &b.h));
    return b;
}

/* Columns [c0, c0 + kb) of every row of a 2-D array. */
static box_t panel(hpl_context *ctx, root_t *r, uint64_t c0, uint64_t kb)
{
    return mkbox(ctx, r, (const hpl_range[]){HPL_ALL, {c0, c0 + kb - 1}});
}

/* x += s by a kernel on device dev. */
static void op_inc(hpl_context *ctx, const box_t *b, int dev, scal s)
{
    hpl_launch l = th_on(dev);
    hpl_kernel kern = kernel_for(ctx, K_INC, b->r->t, b->r->nd);
    if (!CHECK_OK(hpl_eval(ctx, kern, &l, HPL_ARGS(hpl_arr(b->h), sarg(b->r->t, s)))))
        return;
    FOR_BOX(b)
    eadd(b->r->t, bref(b, i, j, k), bref(b, i, j, k), s);
}

/* dst = src + s by a kernel on device dev (boxes of different arrays, or
 * disjoint). */
static void op_copy(hpl_context *ctx, const box_t *dst, const box_t *src, int dev, scal s)
{
    hpl_type t = src->r->t;
    hpl_launch l = th_on(dev);
    if (!CHECK_OK(hpl_eval(ctx, kernel_for(ctx, K_COPY, t, src->r->nd), &l,
                           HPL_ARGS(hpl_arr(src->h), hpl_arr(dst->h), sarg(t, s)))))
        return;
    FOR_BOX(src)
    eadd(t, bref(dst, i, j, k), bref(src, i, j, k), s);
}

/* x = s + (1000 i + 10 j + k) by a write-only kernel on device dev. */
static void op_set(hpl_context *ctx, const box_t *b, int dev, scal s)
{
    hpl_launch l = th_on(dev);
    hpl_kernel kern = kernel_for(ctx, K_SET, b->r->t, b->r->nd);
    if (!CHECK_OK(hpl_eval(ctx, kern, &l, HPL_ARGS(hpl_arr(b->h), sarg(b->r->t, s)))))
        return;
    FOR_BOX(b)
    eset(b->r->t, bref(b, i, j, k), s, i * 1000 + j * 10 + k);
}

static void op_assign(hpl_context *ctx, const box_t *dst, const box_t *src, int where)
{
    if (!CHECK_OK(hpl_array_assign(ctx, dst->h, src->h, where)))
        return;
    FOR_BOX(src)
    memcpy(bref(dst, i, j, k), bref(src, i, j, k), src->r->es);
}

/* The host writes the box through hpl_array_access (HPL_WRITE, the root's
 * strides): pattern `seed`. */
static void op_hostwrite(hpl_context *ctx, const box_t *b, uint32_t seed)
{
    hpl_array_info info;
    if (!CHECK_OK(hpl_array_get_info(ctx, b->h, &info)))
        return;
    unsigned char *p = th_access(ctx, b->h, HPL_WRITE);
    if (!p)
        return;
    size_t es = b->r->es;
    FOR_BOX(b)
    {
        uint64_t n = (i * b->e[1] + j) * b->e[2] + k;
        unsigned char *e = p + (size_t)(i * info.host_stride[0] + j * info.host_stride[1] + k) * es;
        eput(b->r->t, e, n, seed);
        memcpy(bref(b, i, j, k), e, es);
    }
}

/* Every element of the root, read back with hpl_array_read, equals the
 * reference. */
static void check_root(hpl_context *ctx, const root_t *r, const char *what)
{
    size_t n = rcount(r);
    unsigned char *got = malloc(n * r->es);
    if (CHECK_OK(hpl_array_read(ctx, r->h, got, n * r->es))) {
        size_t bad = 0, first = 0;
        for (size_t x = 0; x < n; x++)
            if (memcmp(got + x * r->es, r->ref + x * r->es, r->es) != 0 && bad++ == 0)
                first = x;
        char g[40] = "", w[40] = "";
        if (bad) {
            describe(r->t, got + first * r->es, g, sizeof g);
            describe(r->t, r->ref + first * r->es, w, sizeof w);
        }
        CHECK(bad == 0,
              "%s: %s %s [%llu x %llu x %llu]: %zu of %zu elements wrong, first (%llu, %llu, %llu) = %s want %s", what,
              hpl_type_name(r->t), r->name, (unsigned long long)r->d[0], (unsigned long long)r->d[1],
              (unsigned long long)r->d[2], bad, n, (unsigned long long)(first / (r->d[1] * r->d[2])),
              (unsigned long long)(first / r->d[2] % r->d[1]), (unsigned long long)(first % r->d[2]), g, w);
    }
    free(got);
}

/* The box, read through hpl_array_access (HPL_READ: only its elements
 * move), equals the reference. */
static void check_box(hpl_context *ctx, const box_t *b, const char *what)
{
    hpl_array_info info;
    if (!CHECK_OK(hpl_array_get_info(ctx, b->h, &info)))
        return;
    const unsigned char *p = th_access(ctx, b->h, HPL_READ);
    if (!p)
        return;
    size_t es = b->r->es, bad = 0;
    uint64_t fi = 0, fj = 0, fk = 0;
    FOR_BOX(b)
    {
        const unsigned char *e = p + (size_t)(i * info.host_stride[0] + j * info.host_stride[1] + k) * es;
        if (memcmp(e, bref(b, i, j, k), es) != 0 && bad++ == 0) {
            fi = i;
            fj = j;
            fk = k;
        }
    }
    CHECK(bad == 0, "%s: %s box of %s at (%llu, %llu, %llu), extents %llu x %llu x %llu: %zu elements wrong, first "
                    "(%llu, %llu, %llu) of the box",
          what, hpl_type_name(b->r->t), b->r->name, (unsigned long long)b->o[0], (unsigned long long)b->o[1],
          (unsigned long long)b->o[2], (unsigned long long)b->e[0], (unsigned long long)b->e[1],
          (unsigned long long)b->e[2], bad, (unsigned long long)fi, (unsigned long long)fj, (unsigned long long)fk);
}

/* ---- the panel sequence (cases 1, 4, 5) ------------------------------------ */

/* Column panel P (columns [c0, c0 + kb) of M) moved every way a panel
 * moves: host -> a buffer of its own on device 0 -> host; into the whole
 * array's buffer on device 1 and from there to device 0; written on the
 * host and sent to device 1's whole-array buffer; device 0's whole-array
 * buffer -> device 1. Checks every element of M and of the copies. */
static void panel_sequence(hpl_context *ctx, root_t *M, uint64_t c0, uint64_t kb, const char *tag)
{
    char what[200];
    hpl_type t = M->t;
    box_t P = panel(ctx, M, c0, kb), W = whole(M);
    root_t Q;
    mkroot(ctx, &Q, "Q", t, M->d[0], kb, 0, 977, NULL);
    box_t QW = whole(&Q);

    /* host (strided) -> device 0 (a buffer of the panel alone) -> host */
    op_inc(ctx, &P, 0, S(1024.5, 0x9e3779b9ull));
    snprintf(what, sizeof what, "%s: panel changed on device 0, read back", tag);
    check_root(ctx, M, what);

    /* The whole array on device 1, the panel changed there in place, then
     * read on device 0: device 1's whole-array buffer (strided) -> host
     * (strided) -> device 0's panel buffer. */
    op_inc(ctx, &W, 1, S(2.0, 3));
    op_inc(ctx, &P, 1, S(16.25, 0x0123456789abcdefull));
    op_copy(ctx, &QW, &P, 0, S(0.5, 7));
    snprintf(what, sizeof what, "%s: panel of device 1 copied on device 0", tag);
    check_root(ctx, &Q, what);
    snprintf(what, sizeof what, "%s: array after the panel went device 1 -> device 0", tag);
    check_root(ctx, M, what);

    /* Written on the host through its strides, then changed on device 1
     * (host -> device 1's whole-array buffer, both strided). */
    op_hostwrite(ctx, &P, 4242);
    op_inc(ctx, &P, 1, S(8.0, 0xfedcba987654321ull));
    snprintf(what, sizeof what, "%s: panel written on the host, changed on device 1 (host access)", tag);
    check_box(ctx, &P, what);
    snprintf(what, sizeof what, "%s: panel written on the host, changed on device 1", tag);
    check_root(ctx, M, what);

    /* The whole array and then the panel on device 0, read on device 1. */
    op_inc(ctx, &W, 0, S(4.0, 11));
    op_inc(ctx, &P, 0, S(32.0, 0x100000001ull));
    op_copy(ctx, &QW, &P, 1, S(64.0, 13));
    snprintf(what, sizeof what, "%s: panel of device 0's whole array copied on device 1", tag);
    check_root(ctx, &Q, what);
    snprintf(what, sizeof what, "%s: array at the end", tag);
    check_root(ctx, M, what);
    freeroot(ctx, &Q);
}

/* ---- 1. column panels of a float array ------------------------------------- */

static void case_column_panels(void)
{
    hpl_context *ctx = open_ctx();
    static const uint64_t kbs[] = {1, 3, 64};
    for (size_t x = 0; x < sizeof kbs / sizeof kbs[0]; x++) {
        root_t M;
        mkroot(ctx, &M, "M", HPL_FLOAT32, 300, 257, 0, 11 + (uint32_t)x, NULL);
        char tag[80];
        snprintf(tag, sizeof tag, "case 1, 300 x 257 float, columns [37, %llu)", (unsigned long long)(37 + kbs[x]));
        panel_sequence(ctx, &M, 37, kbs[x], tag);
        freeroot(ctx, &M);
    }
    close_ctx(ctx);
}

/* ---- 2. a column block written on device 0, read on device 1 ---------------- */

static void case_between_devices(void)
{
    hpl_context *ctx = open_ctx();
    static const uint64_t kbs[] = {1, 5};
    for (size_t x = 0; x < sizeof kbs / sizeof kbs[0]; x++) {
        uint64_t kb = kbs[x], c0 = 40;
        char what[160];
        root_t A, Q1, Q2, Q3;
        mkroot(ctx, &A, "A", HPL_FLOAT32, 300, 257, 0, 21, NULL);
        mkroot(ctx, &Q1, "Q1", HPL_FLOAT32, 300, kb, 0, 22, NULL);
        mkroot(ctx, &Q2, "Q2", HPL_FLOAT32, 300, kb + 4, 0, 23, NULL);
        mkroot(ctx, &Q3, "Q3", HPL_FLOAT32, 300, 30, 0, 24, NULL);
        box_t blk = panel(ctx, &A, c0, kb), wider = panel(ctx, &A, c0 - 2, kb + 4), far = panel(ctx, &A, 30, 30);
        box_t W = whole(&A), q1 = whole(&Q1), q2 = whole(&Q2), q3 = whole(&Q3);

        /* Written (not read) on device 0: only device 0 holds it. */
        op_set(ctx, &blk, 0, S(0.5, 0));
        /* The same columns read on device 1: device 0 -> host -> device 1. */
        op_copy(ctx, &q1, &blk, 1, S(1.0, 0));
        /* Two more columns each side: the block from device 1's copy, the
         * sides from the host. */
        op_copy(ctx, &q2, &wider, 1, S(2.0, 0));
        snprintf(what, sizeof what, "case 2, %llu columns written on device 0, read on device 1",
                 (unsigned long long)kb);
        check_root(ctx, &Q1, what);
        check_root(ctx, &Q2, what);
        /* The whole array changed on device 0 (its block from device 0's
         * block buffer), a panel of it read on device 1. */
        op_inc(ctx, &W, 0, S(3.0, 0));
        op_copy(ctx, &q3, &far, 1, S(4.0, 0));
        snprintf(what, sizeof what, "case 2, panel of device 0's whole array read on device 1 (block of %llu)",
                 (unsigned long long)kb);
        check_root(ctx, &Q3, what);
        check_root(ctx, &A, what);
        freeroot(ctx, &A);
        freeroot(ctx, &Q1);
        freeroot(ctx, &Q2);
        freeroot(ctx, &Q3);
    }
    close_ctx(ctx);
}

/* ---- 3. 3-D boxes ---------------------------------------------------------- */

static void case_3d(void)
{
    hpl_context *ctx = open_ctx();
    root_t T, C, D, E;
    mkroot(ctx, &T, "T", HPL_FLOAT32, 20, 30, 41, 31, NULL);
    mkroot(ctx, &C, "C", HPL_FLOAT32, 16, 20, 8, 32, NULL);
    mkroot(ctx, &D, "D", HPL_FLOAT32, 20, 20, 41, 33, NULL);
    mkroot(ctx, &E, "E", HPL_FLOAT32, 16, 20, 41, 34, NULL);
    /* Strided in every dimension: 16 x 20 runs of 8 floats. */
    box_t sub = mkbox(ctx, &T, (const hpl_range[]){{2, 17}, {5, 24}, {3, 10}});
    /* Whole rows, not whole planes: 20 runs of 20 x 41 floats, and 16. */
    box_t rows = mkbox(ctx, &T, (const hpl_range[]){HPL_ALL, {5, 24}, HPL_ALL});
    box_t rows2 = mkbox(ctx, &T, (const hpl_range[]){{2, 17}, {5, 24}, HPL_ALL});
    box_t W = whole(&T), c = whole(&C), d = whole(&D), e = whole(&E);

    op_inc(ctx, &sub, 0, S(100.25, 0));
    op_copy(ctx, &c, &sub, 1, S(1.0, 0));
    check_root(ctx, &C, "case 3, 3-D subarray changed on device 0, read on device 1");
    check_root(ctx, &T, "case 3, 3-D subarray changed on device 0");

    op_inc(ctx, &rows, 1, S(7.5, 0));
    op_copy(ctx, &d, &rows, 0, S(2.0, 0));
    check_root(ctx, &D, "case 3, whole rows of every plane changed on device 1, read on device 0");
    op_inc(ctx, &rows2, 0, S(0.25, 0));
    op_copy(ctx, &e, &rows2, 1, S(3.0, 0));
    check_root(ctx, &E, "case 3, whole rows of 16 planes changed on device 0, read on device 1");
    check_root(ctx, &T, "case 3, after the boxes of whole rows");

    /* In the whole array's buffers: device 1's (strided) -> host -> device
     * 0, both shapes. */
    op_inc(ctx, &W, 1, S(5.0, 0));
    op_inc(ctx, &sub, 1, S(9.0, 0));
    op_copy(ctx, &c, &sub, 0, S(4.0, 0));
    op_inc(ctx, &rows2, 1, S(11.0, 0));
    op_copy(ctx, &e, &rows2, 0, S(5.0, 0));
    check_root(ctx, &C, "case 3, subarray of device 1's whole array read on device 0");
    check_root(ctx, &E, "case 3, whole rows of device 1's whole array read on device 0");
    /* Written on the host through its strides, then changed on device 0
     * (host -> device 0's whole-array buffer after a kernel on all of it). */
    op_inc(ctx, &W, 0, S(1.0, 0));
    op_hostwrite(ctx, &sub, 515);
    op_hostwrite(ctx, &rows, 616);
    op_inc(ctx, &sub, 0, S(2.0, 0));
    op_inc(ctx, &rows, 0, S(3.0, 0));
    check_box(ctx, &sub, "case 3, subarray written on the host, changed on device 0 (host access)");
    check_root(ctx, &T, "case 3, at the end");
    freeroot(ctx, &T);
    freeroot(ctx, &C);
    freeroot(ctx, &D);
    freeroot(ctx, &E);
    close_ctx(ctx);
}

/* ---- 4. element types ------------------------------------------------------ */

static void case_types(void)
{
    hpl_context *ctx = open_ctx();
    bool f64 = true, i64 = true;
    for (int d = 0; d < 2; d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info))) {
            f64 = f64 && info.float64;
            i64 = i64 && info.int64;
        }
    }
    static const hpl_type types[] = {HPL_FLOAT32, HPL_FLOAT64, HPL_INT64, HPL_UINT64, HPL_UINT32};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        hpl_type t = types[ti];
        if ((t == HPL_FLOAT64 && !f64) || ((t == HPL_INT64 || t == HPL_UINT64) && !i64)) {
            th_note("case 4: %s not supported by both devices, skipped", hpl_type_name(t));
            continue;
        }
        size_t es = hpl_type_size(t);
        /* Width, first column and columns: runs of 12 or 24 bytes on odd
         * pitches, then runs of 16 or 32 bytes at 16-byte aligned offsets
         * with 16-byte aligned pitches (1040 bytes). */
        struct {
            uint64_t w, c0, kb;
        } shapes[2];
        if (es == 4) {
            shapes[0].w = 257, shapes[0].c0 = 37, shapes[0].kb = 3;
            shapes[1].w = 260, shapes[1].c0 = 36, shapes[1].kb = 8;
        } else {
            shapes[0].w = 257, shapes[0].c0 = 37, shapes[0].kb = 3;
            shapes[1].w = 130, shapes[1].c0 = 18, shapes[1].kb = 2;
        }
        for (int s = 0; s < 2; s++) {
            root_t M;
            mkroot(ctx, &M, "M", t, 64, shapes[s].w, 0, 41 + (uint32_t)(ti * 2 + (size_t)s), NULL);
            char tag[120];
            snprintf(tag, sizeof tag, "case 4, 64 x %llu %s, columns [%llu, %llu) (runs of %llu bytes)",
                     (unsigned long long)shapes[s].w, hpl_type_name(t), (unsigned long long)shapes[s].c0,
                     (unsigned long long)(shapes[s].c0 + shapes[s].kb), (unsigned long long)(shapes[s].kb * es));
            panel_sequence(ctx, &M, shapes[s].c0, shapes[s].kb, tag);
            freeroot(ctx, &M);
        }
    }
    close_ctx(ctx);
}

/* ---- 5. user host storage at an odd address --------------------------------- */

static void case_user_storage(void)
{
    hpl_context *ctx = open_ctx();
    struct {
        uint64_t w, c0, kb;
    } shapes[] = {{257, 37, 3}, {260, 36, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t bytes = 300 * shapes[s].w * sizeof(float);
        void *mem = NULL;
        if (!CHECK(posix_memalign(&mem, 64, bytes + 64) == 0, "posix_memalign of %zu bytes failed", bytes + 64))
            continue;
        float *host = (float *)((unsigned char *)mem + 4); /* 4 past a 64-byte boundary */
        root_t M;
        mkroot(ctx, &M, "U", HPL_FLOAT32, 300, shapes[s].w, 0, 51 + (uint32_t)s, host);
        const float *p = th_access(ctx, M.h, HPL_READ);
        CHECK(p == host, "user storage %p: hpl_array_access returned %p", (void *)host, (const void *)p);
        char tag[120];
        snprintf(tag, sizeof tag, "case 5, user storage at 64n + 4, 300 x %llu float, columns [%llu, %llu)",
                 (unsigned long long)shapes[s].w, (unsigned long long)shapes[s].c0,
                 (unsigned long long)(shapes[s].c0 + shapes[s].kb));
        panel_sequence(ctx, &M, shapes[s].c0, shapes[s].kb, tag);
        /* What the user storage holds at the end, read directly. */
        p = th_access(ctx, M.h, HPL_READ);
        if (p)
            CHECK(memcmp(p, M.ref, bytes) == 0, "%s: user storage differs from the reference", tag);
        freeroot(ctx, &M);
        free(mem);
    }
    close_ctx(ctx);
}

/* ---- 6. assignments with a shift ---------------------------------------------- */

static void case_assign(void)
{
    hpl_context *ctx = open_ctx();
    root_t M, N, T;
    mkroot(ctx, &M, "M", HPL_FLOAT32, 300, 257, 0, 61, NULL);
    mkroot(ctx, &N, "N", HPL_FLOAT32, 300, 150, 0, 62, NULL);
    mkroot(ctx, &T, "T", HPL_FLOAT32, 20, 30, 41, 63, NULL);
    box_t MW = whole(&M), NW = whole(&N), TW = whole(&T);
    box_t p1 = panel(ctx, &M, 37, 3), p2 = panel(ctx, &M, 100, 3), p3 = panel(ctx, &M, 200, 3);
    box_t n1 = panel(ctx, &N, 5, 3);

    /* Within device 0's whole-array buffer: column 37 -> column 100. */
    op_inc(ctx, &MW, 0, S(1.0, 0));
    op_inc(ctx, &p1, 0, S(2.0, 0));
    op_assign(ctx, &p2, &p1, 0);
    check_root(ctx, &M, "case 6, panel assigned 63 columns to the right on device 0");
    /* On device 1, which holds nothing of M: the source comes from device 0. */
    op_inc(ctx, &p1, 0, S(4.0, 0));
    op_assign(ctx, &p3, &p1, 1);
    check_root(ctx, &M, "case 6, panel assigned on device 1, source on device 0");
    /* Where the destination was last used (device 1), the other way. */
    op_inc(ctx, &p2, 1, S(8.0, 0));
    op_inc(ctx, &p1, 1, S(16.0, 0));
    op_assign(ctx, &p2, &p1, HPL_WHERE_LAST_USED);
    check_root(ctx, &M, "case 6, panel assigned where last used");
    /* On the host, source on device 1. */
    op_inc(ctx, &p3, 1, S(32.0, 0));
    op_assign(ctx, &p1, &p3, HPL_ON_HOST);
    check_root(ctx, &M, "case 6, panel assigned on the host");
    /* To another array held whole on device 0. */
    op_inc(ctx, &NW, 0, S(0.5, 0));
    op_inc(ctx, &p1, 0, S(0.25, 0));
    op_assign(ctx, &n1, &p1, 0);
    check_root(ctx, &N, "case 6, panel of M assigned to columns 5..7 of N on device 0");
    check_root(ctx, &M, "case 6, M after the assignment to N");
    /* 3-D: a box shifted along dimension 2 within device 1's whole array. */
    box_t t1 = mkbox(ctx, &T, (const hpl_range[]){{2, 17}, {5, 24}, {3, 10}});
    box_t t2 = mkbox(ctx, &T, (const hpl_range[]){{2, 17}, {5, 24}, {20, 27}});
    op_inc(ctx, &TW, 1, S(1.5, 0));
    op_assign(ctx, &t2, &t1, 1);
    check_root(ctx, &T, "case 6, 3-D box assigned 17 elements along dimension 2 on device 1");
    freeroot(ctx, &M);
    freeroot(ctx, &N);
    freeroot(ctx, &T);
    close_ctx(ctx);
}

/* ---- 7. 70000 runs ------------------------------------------------------------- */

static void case_many_runs(void)
{
    hpl_context *ctx = open_ctx();
    root_t A;
    mkroot(ctx, &A, "A", HPL_UINT32, 70000, 4, 0, 71, NULL);
    box_t col = panel(ctx, &A, 1, 1), W = whole(&A);
    /* Host (strided) -> a buffer of the column alone on device 0 -> host. */
    op_inc(ctx, &col, 0, S(0, 0x10001u));
    check_root(ctx, &A, "case 7, column of a 70000 x 4 array changed on device 0");
    /* Device 1's whole-array buffer (strided) -> host (strided). Three
     * transfers of 70000 runs only: as copy regions, each costs ~0.5 s of
     * the validation layer's time on Lavapipe. */
    op_inc(ctx, &W, 1, S(0, 3));
    check_root(ctx, &A, "case 7, array changed on device 1"); /* one run */
    op_inc(ctx, &col, 1, S(0, 0x20002u));
    check_root(ctx, &A, "case 7, column of device 1's whole array read back");
    freeroot(ctx, &A);
    close_ctx(ctx);
}

/* ---- 8. hpl_device_stats.copy_kernels ------------------------------------------- */

/* Whether a fragmented box on this device goes by the copy kernel in mode
 * m; *known false when the spec does not say (a device neither CPU nor GPU
 * in auto mode). */
static bool kernel_expected(const hpl_device_info *info, copy_mode m, bool *known)
{
    *known = true;
    if (!info->int64) /* the kernel needs shaderInt64: the rest keep regions */
        return false;
    if (m == MODE_KERNEL)
        return true;
    if (m == MODE_DMA || (info->type & HPL_DEVICE_CPU))
        return false;
    if (info->type & HPL_DEVICE_GPU)
        return true;
    *known = false;
    return false;
}

/* After the transfers of `what`: copy_kernels of each device in `devs` (the
 * devices that moved the fragmented box) as the mode says, 0 on the others,
 * and the total is the devices' sum. Then resets the counters. */
static void expect_copy_kernels(hpl_context *ctx, const hpl_device_info *info, copy_mode m, const bool devs[2],
                                const char *what)
{
    hpl_stats st;
    CHECK_OK(hpl_finish(ctx));
    if (!CHECK_OK(hpl_stats_get(ctx, &st)))
        return;
    for (int d = 0; d < 2; d++) {
        bool known, want = devs[d] && kernel_expected(&info[d], m, &known);
        unsigned long long got = (unsigned long long)st.device[d].copy_kernels;
        if (devs[d] && !known) {
            th_note("%s: device %d (type %#x) in auto mode: copy_kernels %llu, not checked", what, d, info[d].type,
                    got);
            continue;
        }
        if (want)
            CHECK(got > 0, "%s: HPLVK_STRIDED_COPY=%s, device %d (%s, type %#x, int64 %d): copy_kernels %llu, want > 0",
                  what, mode_name(m), d, info[d].name, info[d].type, info[d].int64, got);
        else
            CHECK(got == 0, "%s: HPLVK_STRIDED_COPY=%s, device %d (%s, type %#x, int64 %d): copy_kernels %llu, want 0",
                  what, mode_name(m), d, info[d].name, info[d].type, info[d].int64, got);
    }
    CHECK(st.total.copy_kernels == st.device[0].copy_kernels + st.device[1].copy_kernels,
          "%s: total copy_kernels %llu, devices %llu + %llu", what, (unsigned long long)st.total.copy_kernels,
          (unsigned long long)st.device[0].copy_kernels, (unsigned long long)st.device[1].copy_kernels);
    CHECK_OK(hpl_stats_reset(ctx));
}

static void case_stats(void)
{
    copy_mode m = mode_from_env();
    th_note("case 8: HPLVK_STRIDED_COPY=%s", mode_name(m));
    hpl_context *ctx = open_ctx();
    hpl_device_info info[2];
    memset(info, 0, sizeof info);
    for (int d = 0; d < 2; d++)
        CHECK_OK(hpl_device_get_info(ctx, d, &info[d]));
    root_t M, Q;
    mkroot(ctx, &M, "M", HPL_FLOAT32, 300, 257, 0, 81, NULL);
    mkroot(ctx, &Q, "Q", HPL_FLOAT32, 300, 3, 0, 82, NULL);
    box_t W = whole(&M), q = whole(&Q);
    box_t rows = mkbox(ctx, &M, (const hpl_range[]){{10, 39}, HPL_ALL});
    box_t P = panel(ctx, &M, 37, 3), P2 = panel(ctx, &M, 100, 3);
    /* M whole on both devices (their whole-array buffers hold every
     * subarray below) and on the host. */
    op_inc(ctx, &W, 0, S(1.0, 0));
    CHECK_OK(hpl_array_prefetch(ctx, M.h, 1));
    check_root(ctx, &M, "case 8, setup");
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    hpl_stats st;

    /* Whole rows (one contiguous run per box): up to device 0 and back. */
    op_hostwrite(ctx, &rows, 808);
    op_inc(ctx, &rows, 0, S(2.0, 0));
    check_box(ctx, &rows, "case 8, row block changed on device 0");
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st))) {
        CHECK(st.device[0].to_device_count > 0 && st.device[0].to_host_count > 0,
              "case 8, row block: device 0 made %llu uploads and %llu downloads, want > 0 each",
              (unsigned long long)st.device[0].to_device_count, (unsigned long long)st.device[0].to_host_count);
        CHECK(st.total.copy_kernels == 0,
              "case 8, row block (whole rows, one run per box), HPLVK_STRIDED_COPY=%s: copy_kernels %llu (device 0: "
              "%llu), want 0",
              mode_name(m), (unsigned long long)st.total.copy_kernels, (unsigned long long)st.device[0].copy_kernels);
    }
    CHECK_OK(hpl_stats_reset(ctx));

    /* A column panel of 300 runs of 12 bytes, host -> device 0. */
    op_hostwrite(ctx, &P, 909);
    op_inc(ctx, &P, 0, S(4.0, 0));
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(st.device[0].to_device_count > 0, "case 8, panel upload: device 0 made %llu uploads",
              (unsigned long long)st.device[0].to_device_count);
    expect_copy_kernels(ctx, info, m, (const bool[]){true, false}, "case 8, column panel host -> device 0");

    /* Device 0 -> host. */
    check_box(ctx, &P, "case 8, column panel read back from device 0");
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(st.device[0].to_host_count > 0, "case 8, panel download: device 0 made %llu downloads",
              (unsigned long long)st.device[0].to_host_count);
    expect_copy_kernels(ctx, info, m, (const bool[]){true, false}, "case 8, column panel device 0 -> host");

    /* Device 0 -> host -> device 1 (its whole-array buffer). */
    op_inc(ctx, &P, 0, S(8.0, 0));
    op_copy(ctx, &q, &P, 1, S(0.5, 0));
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(st.device[0].to_host_count > 0 && st.device[1].to_device_count > 0,
              "case 8, panel device 0 -> device 1: %llu downloads on device 0, %llu uploads on device 1",
              (unsigned long long)st.device[0].to_host_count, (unsigned long long)st.device[1].to_device_count);
    expect_copy_kernels(ctx, info, m, (const bool[]){true, true}, "case 8, column panel device 0 -> device 1");

    /* An assignment with a shift within device 0's whole-array buffer. */
    op_assign(ctx, &P2, &P, 0);
    CHECK_OK(hpl_finish(ctx));
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(st.device[0].local_count > 0, "case 8, shifted assignment: device 0 made %llu local copies",
              (unsigned long long)st.device[0].local_count);
    expect_copy_kernels(ctx, info, m, (const bool[]){true, false}, "case 8, column panel assigned on device 0");

    check_root(ctx, &Q, "case 8, panel copied on device 1");
    check_root(ctx, &M, "case 8, at the end");
    freeroot(ctx, &M);
    freeroot(ctx, &Q);
    close_ctx(ctx);
}

/* ---- 9. HPLVK_STRIDED_COPY's values -------------------------------------------- */

static void case_env(void)
{
    const char *old = getenv("HPLVK_STRIDED_COPY");
    char *saved = old ? strdup(old) : NULL;

    setenv("HPLVK_STRIDED_COPY", "sideways", 1);
    hpl_context_desc desc = {.devices = th_devices("cpu")};
    th_prepare_desc(&desc);
    hpl_context *ctx = (hpl_context *)&ctx;
    int rc = hpl_context_create(&desc, &ctx);
    if (CHECK_FAILS(rc, HPL_ERROR_INVALID_ARGUMENT, "HPLVK_STRIDED_COPY"))
        CHECK_MSG("sideways");
    if (rc != HPL_OK)
        CHECK(ctx == (hpl_context *)&ctx, "a refused hpl_context_create wrote *out");
    else if (ctx != (hpl_context *)&ctx)
        hpl_context_destroy(ctx);

    static const char *const good[] = {"auto", "kernel", "dma"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("HPLVK_STRIDED_COPY", good[i], 1);
        hpl_context *c = NULL;
        if (CHECK_OK(hpl_context_create(&desc, &c)))
            hpl_context_destroy(c);
    }

    if (saved)
        setenv("HPLVK_STRIDED_COPY", saved, 1);
    else
        unsetenv("HPLVK_STRIDED_COPY");
    const char *now = getenv("HPLVK_STRIDED_COPY");
    CHECK((!saved && !now) || (saved && now && !strcmp(saved, now)), "HPLVK_STRIDED_COPY not restored");
    free(saved);
}

int main(void)
{
    struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        {"column panels", case_column_panels},
        {"between devices", case_between_devices},
        {"3-D boxes", case_3d},
        {"element types", case_types},
        {"user host storage", case_user_storage},
        {"assignments with a shift", case_assign},
        {"70000 runs", case_many_runs},
        {"copy_kernels", case_stats},
        {"HPLVK_STRIDED_COPY values", case_env},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t0 = th_now();
        int before = th_failures();
        cases[i].fn();
        th_note("case %zu (%s): %s, %.2f s", i + 1, cases[i].name, th_failures() == before ? "ok" : "FAILED",
                th_now() - t0);
    }
    return th_finish(NULL);
}
