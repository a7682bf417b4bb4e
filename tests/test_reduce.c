/* hpl_array_reduce (chapter 4) for every element type (float, double, int32,
 * uint32, int64, uint64) and every operation (sum, product, min, max),
 * against a host reduction of a host model of the array, on "cpu:4"
 * (separate memories):
 *   - 1-D (1, 7, 1000, 100003 elements: not multiples of 256), 2-D (37x29,
 *     317x316) and 3-D (11x13x7, 23x21x19) arrays;
 *   - where the newest data is: a never-written array (zero-filled); the
 *     host only; one device (a kernel wrote it: device 1); spread over the 4
 *     devices by an annotated eval with a halo of one (each part's owned box
 *     valid only on its device, split by rows, or by columns for 3-D; the
 *     parts themselves reduced too, halo included); mixed (then the host rewrote a block
 *     of rows); the host again after a full host write;
 *   - subarrays of the spread and mixed data: a 1-D range, a 2-D row block
 *     and column block, a 3-D inner box;
 *   - integers exact (sums and products wrap modulo 2^bits; the reference
 *     uses unsigned arithmetic); min and max exact for every type; products
 *     on data that is mostly 1 with a few other values (3, 5, -1 for
 *     integers: odd, so that a product modulo 2^bits does not collapse to 0;
 *     2, 0.5, -1 for floats: every product exact in any order);
 *   - float and double sums within the header's bound: "a few ulps times
 *     log2(count) relative to the sum of magnitudes", taken here as
 *     |r - ref| <= 4 * eps * (log2(count) + 2) * sum|x| with eps = FLT_EPSILON
 *     or DBL_EPSILON and ref in long double (exact for these data);
 *   - hpl_stats: reducing host data moves nothing; reducing device data
 *     moves nothing to any device and at most 1/8 of the array to the host
 *     (partial values only), and the array stays where it was (a host read
 *     right after moves all of it out of the devices);
 *   - the array is unchanged by the reductions (read back), and a reduction
 *     after the host changed it sees the new values;
 *   - only one element of the result is written;
 *   - errors: NULL result, invalid operations, a destroyed array. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NDEV 4

/* ---- types ------------------------------------------------------------------ */

typedef struct tdesc {
    hpl_type t;
    const char *glsl, *gen, *p0, *p1, *p2, *one;
    bool is_float, is_signed;
} tdesc;

/* gen: a general value from two hashes a and b; p0..p2: the rare values of
 * product data (the rest is one). */
static const tdesc TYPES[] = {
    {HPL_FLOAT32, "float", "float(int(a % 200001u) - 100000) / 64.0", "2.0", "0.5", "-1.0", "1.0", true, true},
    {HPL_FLOAT64, "double", "double(int(a % 2000001u) - 1000000) / 1024.0lf + double(b % 1024u) / 1048576.0lf",
     "2.0lf", "0.5lf", "-1.0lf", "1.0lf", true, true},
    {HPL_INT32, "int", "int(a)", "3", "5", "-1", "1", false, true},
    {HPL_UINT32, "uint", "a", "3u", "5u", "0xFFFFFFFFu", "1u", false, false},
    {HPL_INT64, "int64_t", "int64_t((uint64_t(a) << 32) | uint64_t(b))", "int64_t(3)", "int64_t(5)", "int64_t(-1)",
     "int64_t(1)", false, true},
    {HPL_UINT64, "uint64_t", "(uint64_t(a) << 32) | uint64_t(b)", "uint64_t(3)", "uint64_t(5)", "~uint64_t(0)",
     "uint64_t(1)", false, false},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

static const char *op_name(hpl_reduction op)
{
    switch (op) {
    case HPL_REDUCE_SUM: return "sum";
    case HPL_REDUCE_PRODUCT: return "product";
    case HPL_REDUCE_MIN: return "min";
    case HPL_REDUCE_MAX: return "max";
    }
    return "?";
}

/* The float (HPL_FLOAT32) or double at p (unaligned). */
static long double load_float(hpl_type t, const void *p)
{
    if (t == HPL_FLOAT32) {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    double x;
    memcpy(&x, p, 8);
    return x;
}

static uint32_t hsh(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* The value of element lin (row-major index in the root), as the kernel
 * computes it. mode 0: general values; mode 1: product data, one in m rare. */
static void gen_value(hpl_type t, uint32_t lin, uint32_t seed, uint32_t mode, uint32_t m, void *out)
{
    uint32_t a = hsh(lin * 2u + seed), b = hsh(lin * 2u + 1u + seed * 7u);
    int rare = -1;
    if (mode == 1) {
        uint32_t s = a % m;
        rare = s < 3 ? (int)s : 3;
    }
    switch (t) {
    case HPL_FLOAT32: {
        static const float r[] = {2.0f, 0.5f, -1.0f, 1.0f};
        float v = rare >= 0 ? r[rare] : (float)((int32_t)(a % 200001u) - 100000) / 64.0f;
        memcpy(out, &v, 4);
        break;
    }
    case HPL_FLOAT64: {
        static const double r[] = {2.0, 0.5, -1.0, 1.0};
        double v = rare >= 0 ? r[rare]
                             : (double)((int32_t)(a % 2000001u) - 1000000) / 1024.0 + (double)(b % 1024u) / 1048576.0;
        memcpy(out, &v, 8);
        break;
    }
    case HPL_INT32:
    case HPL_UINT32: {
        static const uint32_t r[] = {3u, 5u, 0xFFFFFFFFu, 1u};
        uint32_t v = rare >= 0 ? r[rare] : a;
        memcpy(out, &v, 4);
        break;
    }
    case HPL_INT64:
    case HPL_UINT64: {
        static const uint64_t r[] = {3u, 5u, UINT64_MAX, 1u};
        uint64_t v = rare >= 0 ? r[rare] : ((uint64_t)a << 32) | b;
        memcpy(out, &v, 8);
        break;
    }
    default:
        break;
    }
}

static char *gen_source(const tdesc *td, int nd)
{
    static const char *body[4] = {
        NULL,
        "    uint i = hpl_global_id.x;\n"
        "    hpl_at(x, i) = gen(x.origin + i);\n",
        "    uvec3 id = hpl_global_id;\n"
        "    hpl_at2(x, id.x, id.y) = gen((x.origin.x + id.x) * D1 + x.origin.y + id.y);\n",
        "    uvec3 id = hpl_global_id;\n"
        "    hpl_at3(x, id.x, id.y, id.z) = gen(((x.origin.x + id.x) * D1 + x.origin.y + id.y) * D2 + x.origin.z + id.z);\n",
    };
    size_t cap = 4096;
    char *s = malloc(cap);
    snprintf(s, cap,
             "#include <hplvk.glsl>\n"
             "hpl_args { hpl_out(%s, %d) x; uint seed; uint mode; uint m; uint D1; uint D2; };\n"
             "uint hsh(uint x) { x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;\n"
             "    return x; }\n"
             "%s gen(uint lin) {\n"
             "    uint a = hsh(lin * 2u + seed), b = hsh(lin * 2u + 1u + seed * 7u);\n"
             "    if (mode == 1u) { uint s = a %% m;\n"
             "        return s == 0u ? %s : s == 1u ? %s : s == 2u ? %s : %s; }\n"
             "    return %s;\n"
             "}\n"
             "void main() {\n%s}\n",
             td->glsl, nd, td->glsl, td->p0, td->p1, td->p2, td->one, td->gen, body[nd]);
    return s;
}

/* ---- host reference ------------------------------------------------------------ */

typedef struct box {
    uint64_t o[3], d[3]; /* origin in the root and extents (unused: 0 and 1) */
} box;

typedef struct refval {
    uint64_t u;      /* integers: the exact result (modulo 2^bits) */
    long double f;   /* floats */
    long double abs; /* floats: sum of magnitudes */
    uint64_t count;
} refval;

static refval host_reduce(const tdesc *td, const uint8_t *root, const uint64_t rd[3], const box *b, hpl_reduction op)
{
    refval r;
    memset(&r, 0, sizeof r);
    size_t es = hpl_type_size(td->t);
    bool first = true;
    uint64_t acc = op == HPL_REDUCE_PRODUCT ? 1 : 0;
    long double facc = op == HPL_REDUCE_PRODUCT ? 1.0L : 0.0L;
    for (uint64_t i = 0; i < b->d[0]; i++)
        for (uint64_t j = 0; j < b->d[1]; j++)
            for (uint64_t k = 0; k < b->d[2]; k++) {
                uint64_t lin = ((b->o[0] + i) * rd[1] + b->o[1] + j) * rd[2] + b->o[2] + k;
                const uint8_t *p = root + lin * es;
                r.count++;
                if (td->is_float) {
                    long double v = load_float(td->t, p);
                    r.abs += fabsl(v);
                    switch (op) {
                    case HPL_REDUCE_SUM: facc += v; break;
                    case HPL_REDUCE_PRODUCT: facc *= v; break;
                    case HPL_REDUCE_MIN: facc = first || v < facc ? v : facc; break;
                    case HPL_REDUCE_MAX: facc = first || v > facc ? v : facc; break;
                    }
                } else {
                    uint64_t u;
                    int64_t sv;
                    if (es == 4) {
                        uint32_t x;
                        memcpy(&x, p, 4);
                        u = x;
                        sv = (int64_t)(int32_t)x;
                    } else {
                        memcpy(&u, p, 8);
                        sv = (int64_t)u;
                    }
                    bool less, greater;
                    if (td->is_signed) {
                        int64_t ca = es == 4 ? (int64_t)(int32_t)(uint32_t)acc : (int64_t)acc;
                        less = sv < ca;
                        greater = sv > ca;
                    } else {
                        less = u < acc;
                        greater = u > acc;
                    }
                    switch (op) {
                    case HPL_REDUCE_SUM: acc += u; break;
                    case HPL_REDUCE_PRODUCT: acc *= u; break;
                    case HPL_REDUCE_MIN: acc = first || less ? u : acc; break;
                    case HPL_REDUCE_MAX: acc = first || greater ? u : acc; break;
                    }
                }
                first = false;
            }
    r.u = es == 4 ? (uint64_t)(uint32_t)acc : acc;
    r.f = facc;
    return r;
}

/* ---- checks --------------------------------------------------------------------- */

static int reductions; /* how many hpl_array_reduce calls were checked */

/* Reduces arr (the box b of the root modelled by `model`) with op and checks
 * the result against the host. `exact_product`: the data are product data
 * (float products are then exact); float products of general data are not
 * checked (they overflow, order-dependently). */
static void check_reduce(hpl_context *ctx, const tdesc *td, hpl_array arr, const uint8_t *model,
                         const uint64_t rd[3], const box *b, hpl_reduction op, const char *what)
{
    uint8_t res[16];
    memset(res, 0xcd, sizeof res);
    int rc = hpl_array_reduce(ctx, arr, op, res);
    reductions++;
    if (!CHECK(rc == HPL_OK, "%s %s %s: hpl_array_reduce = %s: %s", hpl_type_name(td->t), op_name(op), what,
               hpl_error_name(rc), hpl_last_error()))
        return;
    size_t es = hpl_type_size(td->t);
    bool tail = true;
    for (size_t i = es; i < sizeof res; i++)
        tail = tail && res[i] == 0xcd;
    CHECK(tail, "%s %s %s: hpl_array_reduce wrote past one element", hpl_type_name(td->t), op_name(op), what);
    refval r = host_reduce(td, model, rd, b, op);
    if (td->is_float) {
        long double got = load_float(td->t, res);
        if (op == HPL_REDUCE_SUM) {
            long double eps = td->t == HPL_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
            long double tol = 4.0L * eps * (log2l((long double)r.count) + 2.0L) * r.abs;
            CHECK(fabsl(got - r.f) <= tol, "%s sum %s (%" PRIu64 " elements): %.17Lg, want %.17Lg within %.3Lg "
                  "(error %.3Lg, sum|x| %.6Lg)", hpl_type_name(td->t), what, r.count, got, r.f, tol,
                  fabsl(got - r.f), r.abs);
        } else {
            /* min, max, products of powers of two: exact. */
            long double want = td->t == HPL_FLOAT32 ? (long double)(float)r.f : (long double)(double)r.f;
            CHECK(got == want, "%s %s %s (%" PRIu64 " elements): %.17Lg, want %.17Lg", hpl_type_name(td->t),
                  op_name(op), what, r.count, got, want);
        }
    } else {
        uint64_t got = 0;
        memcpy(&got, res, es);
        CHECK(got == r.u, "%s %s %s (%" PRIu64 " elements): 0x%" PRIx64 ", want 0x%" PRIx64, hpl_type_name(td->t),
              op_name(op), what, r.count, got, r.u);
    }
}

static void check_all_ops(hpl_context *ctx, const tdesc *td, hpl_array arr, const uint8_t *model,
                          const uint64_t rd[3], const box *b, bool product_data, const char *what)
{
    static const hpl_reduction ops[] = {HPL_REDUCE_SUM, HPL_REDUCE_PRODUCT, HPL_REDUCE_MIN, HPL_REDUCE_MAX};
    for (int i = 0; i < 4; i++) {
        if (ops[i] == HPL_REDUCE_PRODUCT && td->is_float && !product_data)
            continue;
        check_reduce(ctx, td, arr, model, rd, b, ops[i], what);
    }
}

/* The whole root read back equals the model. */
static void check_contents(hpl_context *ctx, const tdesc *td, hpl_array a, const uint8_t *model, uint64_t n,
                           const char *what)
{
    size_t es = hpl_type_size(td->t);
    uint8_t *buf = malloc(n * es);
    if (CHECK_OK(hpl_array_read(ctx, a, buf, n * es))) {
        uint64_t bad = 0, first = 0;
        for (uint64_t i = 0; i < n; i++)
            if (memcmp(buf + i * es, model + i * es, es) != 0 && bad++ == 0)
                first = i;
        CHECK(bad == 0, "%s %s: array changed: %" PRIu64 " of %" PRIu64 " elements differ from the model, first [%"
              PRIu64 "]", hpl_type_name(td->t), what, bad, n, first);
    }
    free(buf);
}

/* After reducing data held by devices: nothing went to a device, and at most
 * an eighth of the array (plus a little) came to the host. */
static void check_partials_only(const hpl_stats *s, uint64_t bytes, uint64_t n, const char *what, const tdesc *td)
{
    uint64_t to_host = 0, to_dev = 0;
    for (int d = 0; d < s->device_count && d < 16; d++) {
        to_host += s->device[d].to_host_bytes;
        to_dev += s->device[d].to_device_bytes;
    }
    CHECK(to_dev == 0, "%s %s: reducing moved %" PRIu64 " bytes to devices", hpl_type_name(td->t), what, to_dev);
    if (n >= 1000)
        CHECK(to_host <= bytes / 8, "%s %s: reducing %" PRIu64 " bytes of device data moved %" PRIu64
              " bytes to the host (more than partial values)", hpl_type_name(td->t), what, bytes, to_host);
}

/* ---- one scenario: one type, one shape ------------------------------------------- */

typedef struct shape {
    int nd;
    uint64_t d[3];
    int split_dim; /* dimension the spread state splits */
} shape;

static uint64_t sum_to_host(const hpl_stats *s)
{
    uint64_t n = 0;
    for (int d = 0; d < s->device_count && d < 16; d++)
        n += s->device[d].to_host_bytes;
    return n;
}

static void fill_model(const tdesc *td, uint8_t *model, uint64_t n, uint32_t seed, uint32_t mode, uint32_t m)
{
    size_t es = hpl_type_size(td->t);
    for (uint64_t i = 0; i < n; i++)
        gen_value(td->t, (uint32_t)i, seed, mode, m, model + i * es);
}

static void scenario(hpl_context *ctx, const tdesc *td, hpl_kernel gen, const shape *sh)
{
    const int nd = sh->nd;
    uint64_t rd[3] = {sh->d[0], nd > 1 ? sh->d[1] : 1, nd > 2 ? sh->d[2] : 1};
    uint64_t n = rd[0] * rd[1] * rd[2];
    size_t es = hpl_type_size(td->t);
    uint64_t bytes = n * es;
    uint32_t m = n < 100 ? 4 : 1000;
    char what[160];
    int w0 = snprintf(what, sizeof what, "%dD %" PRIu64, nd, rd[0]);
    for (int k = 1; k < nd; k++)
        w0 += snprintf(what + w0, sizeof what - (size_t)w0, "x%" PRIu64, rd[k]);
    char w[256];

    hpl_array a = th_array(ctx, td->t, sh->d[0], nd > 1 ? sh->d[1] : 0, nd > 2 ? sh->d[2] : 0);
    uint8_t *model = calloc(n, es);
    const box whole = {{0, 0, 0}, {rd[0], rd[1], rd[2]}};

    /* Subarrays: a 1-D range, a row block and a column block, an inner box. */
    box subs[2];
    hpl_array sa[2];
    int nsub = 0;
    if (nd == 1 && n >= 7) {
        subs[0] = (box){{n / 5, 0, 0}, {n * 3 / 4 - n / 5, 1, 1}};
        nsub = 1;
    } else if (nd == 2) {
        subs[0] = (box){{rd[0] / 4, 0, 0}, {rd[0] / 2 - rd[0] / 4 + 1, rd[1], 1}};
        subs[1] = (box){{0, rd[1] / 3, 0}, {rd[0], rd[1] / 2 - rd[1] / 3 + 1, 1}};
        nsub = 2;
    } else if (nd == 3) {
        subs[0] = (box){{1, 2, 1}, {rd[0] - 2, rd[1] - 4, rd[2] - 2}};
        nsub = 1;
    }
    for (int i = 0; i < nsub; i++) {
        hpl_range r[3];
        for (int k = 0; k < nd; k++)
            r[k] = (hpl_range){subs[i].o[k], subs[i].o[k] + subs[i].d[k] - 1};
        sa[i] = (hpl_array){0};
        CHECK_OK(hpl_subarray(ctx, a, nd, r, &sa[i]));
    }

    /* 0. Never written: the library's zero-filled storage. */
    snprintf(w, sizeof w, "%s never written", what);
    check_all_ops(ctx, td, a, model, rd, &whole, true, w);

    /* 1. The host only. */
    fill_model(td, model, n, 11, 0, m);
    CHECK_OK(hpl_array_write(ctx, a, model, bytes));
    CHECK_OK(hpl_stats_reset(ctx));
    snprintf(w, sizeof w, "%s on the host", what);
    check_all_ops(ctx, td, a, model, rd, &whole, false, w);
    for (int i = 0; i < nsub; i++)
        check_all_ops(ctx, td, sa[i], model, rd, &subs[i], false, w);
    hpl_stats s = th_stats(ctx);
    uint64_t mv = 0;
    for (int d = 0; d < s.device_count && d < 16; d++)
        mv += s.device[d].to_device_bytes + s.device[d].to_host_bytes + s.device[d].local_bytes;
    CHECK(mv == 0, "%s %s: reducing host data moved %" PRIu64 " bytes", hpl_type_name(td->t), w, mv);

    /* 2. One device: a kernel on device 1 wrote it. */
    {
        hpl_launch l = {.device = 1};
        CHECK_OK(hpl_eval(ctx, gen, &l,
                          HPL_ARGS(hpl_arr(a), hpl_u32(23), hpl_u32(0), hpl_u32(m), hpl_u32((uint32_t)rd[1]),
                                   hpl_u32((uint32_t)rd[2]))));
        fill_model(td, model, n, 23, 0, m);
        CHECK_OK(hpl_stats_reset(ctx));
        snprintf(w, sizeof w, "%s on device 1", what);
        check_all_ops(ctx, td, a, model, rd, &whole, false, w);
        s = th_stats(ctx);
        check_partials_only(&s, bytes, n, w, td);
        for (int d = 0; d < s.device_count && d < 16; d++)
            if (d != 1)
                CHECK(s.device[d].to_host_bytes == 0, "%s %s: device %d sent %" PRIu64 " bytes", hpl_type_name(td->t),
                      w, d, s.device[d].to_host_bytes);
        /* The data stayed on device 1: the host read moves all of it. */
        CHECK_OK(hpl_stats_reset(ctx));
        check_contents(ctx, td, a, model, n, w);
        s = th_stats(ctx);
        CHECK(s.device[1].to_host_bytes == bytes && sum_to_host(&s) == bytes,
              "%s %s: the host read after the reductions moved %" PRIu64 " bytes from device 1 (%" PRIu64
              " in all), want the whole array %" PRIu64,
              hpl_type_name(td->t), w, s.device[1].to_host_bytes, sum_to_host(&s), bytes);
    }

    /* 3. Spread over the devices by an annotated eval (product data), with
     * a halo of one element: each device holds its neighbours' edges too,
     * invalid there, which must not be counted twice. */
    {
        CHECK_OK(hpl_eval(ctx, gen, NULL,
                          HPL_ARGS(hpl_part(a, sh->split_dim, 1), hpl_u32(37), hpl_u32(1), hpl_u32(m),
                                   hpl_u32((uint32_t)rd[1]), hpl_u32((uint32_t)rd[2]))));
        fill_model(td, model, n, 37, 1, m);
        int parts = hpl_array_part_count(ctx, a);
        uint64_t ext = rd[sh->split_dim];
        CHECK(parts == (int)(ext < NDEV ? ext : NDEV), "%s %s: %d parts", hpl_type_name(td->t), what, parts);
        CHECK_OK(hpl_stats_reset(ctx));
        snprintf(w, sizeof w, "%s spread over %d devices", what, parts);
        check_all_ops(ctx, td, a, model, rd, &whole, true, w);
        for (int i = 0; i < nsub; i++) {
            char ws[300];
            snprintf(ws, sizeof ws, "%s, subarray %d", w, i);
            check_all_ops(ctx, td, sa[i], model, rd, &subs[i], true, ws);
        }
        /* The first and last parts (subarrays with a ghost halo): all of
         * their elements. */
        for (int i = 0; i < parts; i = i + 1 < parts - 1 ? parts - 1 : i + 1) {
            hpl_array part = {0};
            hpl_array_info info;
            memset(&info, 0, sizeof info);
            if (!CHECK_OK(hpl_array_part(ctx, a, i, &part, NULL)) || !CHECK_OK(hpl_array_get_info(ctx, part, &info)))
                continue;
            box pb = {{info.origin[0], info.origin[1], info.origin[2]}, {info.dims[0], info.dims[1], info.dims[2]}};
            char ws[300];
            snprintf(ws, sizeof ws, "%s, part %d with its halo", w, i);
            check_all_ops(ctx, td, part, model, rd, &pb, true, ws);
        }
        s = th_stats(ctx);
        check_partials_only(&s, bytes, n, w, td);
    }

    /* 4. Mixed: the host rewrites a block of rows (general data there). */
    {
        uint64_t r0 = rd[0] / 3, r1 = rd[0] / 3 + (rd[0] + 4) / 5 - 1; /* about a fifth of the rows */
        hpl_range r[3] = {{r0, r1}, HPL_ALL, HPL_ALL};
        hpl_array rows = {0};
        CHECK_OK(hpl_subarray(ctx, a, nd, r, &rows));
        uint64_t per_row = rd[1] * rd[2], nrows = r1 - r0 + 1;
        uint8_t *blk = malloc(nrows * per_row * es);
        for (uint64_t i = 0; i < nrows * per_row; i++)
            gen_value(td->t, (uint32_t)(r0 * per_row + i), 41, 1, m, blk + i * es);
        memcpy(model + r0 * per_row * es, blk, nrows * per_row * es);
        CHECK_OK(hpl_array_write(ctx, rows, blk, nrows * per_row * es));
        free(blk);
        CHECK_OK(hpl_stats_reset(ctx));
        snprintf(w, sizeof w, "%s spread, rows %" PRIu64 "..%" PRIu64 " rewritten on the host", what, r0, r1);
        check_all_ops(ctx, td, a, model, rd, &whole, true, w);
        for (int i = 0; i < nsub; i++) {
            char ws[300];
            snprintf(ws, sizeof ws, "%s, subarray %d", w, i);
            check_all_ops(ctx, td, sa[i], model, rd, &subs[i], true, ws);
        }
        box rb = {{r0, 0, 0}, {nrows, rd[1], rd[2]}};
        char ws[300];
        snprintf(ws, sizeof ws, "%s, the rewritten rows", w);
        check_all_ops(ctx, td, rows, model, rd, &rb, true, ws);
        s = th_stats(ctx);
        check_partials_only(&s, bytes, n, w, td);
        /* Unchanged, and still on the devices but for the host's rows. */
        CHECK_OK(hpl_stats_reset(ctx));
        check_contents(ctx, td, a, model, n, w);
        s = th_stats(ctx);
        uint64_t want = bytes - nrows * per_row * es;
        CHECK(sum_to_host(&s) == want, "%s %s: the host read after the reductions moved %" PRIu64 " bytes, want %"
              PRIu64, hpl_type_name(td->t), w, sum_to_host(&s), want);
    }

    /* 5. The host rewrites everything: the reductions see the new values,
     * and move nothing. */
    {
        fill_model(td, model, n, 53, 1, m);
        CHECK_OK(hpl_array_write(ctx, a, model, bytes));
        CHECK_OK(hpl_stats_reset(ctx));
        snprintf(w, sizeof w, "%s rewritten on the host", what);
        check_all_ops(ctx, td, a, model, rd, &whole, true, w);
        s = th_stats(ctx);
        CHECK(sum_to_host(&s) == 0 && s.total.to_device_bytes == 0, "%s %s: moved %" PRIu64 " / %" PRIu64 " bytes",
              hpl_type_name(td->t), w, sum_to_host(&s), s.total.to_device_bytes);
        check_contents(ctx, td, a, model, n, w);
    }
    CHECK_OK(hpl_array_destroy(ctx, a));
    free(model);
}

/* ---- errors ------------------------------------------------------------------------ */

static void errors(hpl_context *ctx)
{
    hpl_array a = th_array(ctx, HPL_FLOAT32, 10, 0, 0);
    float v[10];
    for (int i = 0; i < 10; i++)
        v[i] = (float)i;
    CHECK_OK(hpl_array_write(ctx, a, v, sizeof v));
    float r = -7.0f;
    CHECK_FAILS(hpl_array_reduce(ctx, a, HPL_REDUCE_SUM, NULL), HPL_ERROR_INVALID_ARGUMENT, "result");
    CHECK_FAILS(hpl_array_reduce(ctx, a, (hpl_reduction)0, &r), HPL_ERROR_INVALID_ARGUMENT, "op");
    CHECK_FAILS(hpl_array_reduce(ctx, a, (hpl_reduction)(HPL_REDUCE_MAX + 1), &r), HPL_ERROR_INVALID_ARGUMENT, "op");
    CHECK_FAILS(hpl_array_reduce(ctx, a, (hpl_reduction)-1, &r), HPL_ERROR_INVALID_ARGUMENT, "op");
    CHECK(r == -7.0f, "a failing hpl_array_reduce wrote its result (%g)", (double)r);
    CHECK_OK(hpl_array_reduce(ctx, a, HPL_REDUCE_SUM, &r));
    CHECK(r == 45.0f, "sum of 0..9 = %g", (double)r);
    hpl_array sub = {0};
    CHECK_OK(hpl_subarray(ctx, a, 1, (const hpl_range[]){{2, 4}}, &sub));
    CHECK_OK(hpl_array_reduce(ctx, sub, HPL_REDUCE_PRODUCT, &r));
    CHECK(r == 24.0f, "product of 2..4 = %g", (double)r);
    CHECK_OK(hpl_array_destroy(ctx, a));
    r = -7.0f;
    CHECK_FAILS(hpl_array_reduce(ctx, a, HPL_REDUCE_SUM, &r), HPL_ERROR_INVALID_HANDLE, "array");
    CHECK_FAILS(hpl_array_reduce(ctx, sub, HPL_REDUCE_SUM, &r), HPL_ERROR_INVALID_HANDLE, "array");
    CHECK_FAILS(hpl_array_reduce(ctx, (hpl_array){0}, HPL_REDUCE_SUM, &r), HPL_ERROR_INVALID_HANDLE, "array");
    CHECK(r == -7.0f, "a failing hpl_array_reduce wrote its result (%g)", (double)r);
}

/* A float sum over millions of elements valid on 4 devices: each
 * invocation of the reduction adds many elements, so this checks the stated
 * error bound where it is hardest to meet (values in [0, 1), so the bound
 * is relative to the sum itself). */
static void big_float_sum(hpl_context *ctx)
{
    const uint64_t n = (1u << 22) + 17;
    float *v = malloc(n * sizeof *v);
    long double ref = 0;
    uint32_t x = 12345;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        v[i] = (float)(x >> 8) / 16777216.0f;
        ref += v[i];
    }
    hpl_array src = th_array(ctx, HPL_FLOAT32, n, 0, 0), dst = th_array(ctx, HPL_FLOAT32, n, 0, 0);
    hpl_kernel copy = th_kernel(ctx, "#include <hplvk.glsl>\n"
                                     "hpl_args { hpl_out(float, 1) y; hpl_in(float, 1) x; };\n"
                                     "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_at(x, i); }\n");
    CHECK_OK(hpl_array_write(ctx, src, v, n * sizeof *v));
    CHECK_OK(hpl_eval(ctx, copy, NULL, HPL_ARGS(hpl_part1(dst, 0), hpl_part1(src, 0))));
    float sum = 0;
    hpl_stats before = th_stats(ctx);
    if (CHECK_OK(hpl_array_reduce(ctx, dst, HPL_REDUCE_SUM, &sum))) {
        hpl_stats after = th_stats(ctx);
        th_note("sum of %llu floats on 4 devices: relative error %.2g", (unsigned long long)n,
                (double)(fabsl((long double)sum - ref) / ref));
        double bound = 4.0 * FLT_EPSILON * (log2((double)n) + 2.0) * (double)ref;
        CHECK(fabsl((long double)sum - ref) <= bound, "sum of %llu floats on 4 devices: %.9g, reference %.9Lg, bound %.3g",
              (unsigned long long)n, sum, ref, bound);
        CHECK(sum_to_host(&after) - sum_to_host(&before) < n * sizeof(float) / 64,
              "the reduction moved %llu bytes to the host (array %llu)",
              (unsigned long long)(sum_to_host(&after) - sum_to_host(&before)), (unsigned long long)(n * sizeof(float)));
        reductions++;
    }
    CHECK_OK(hpl_array_destroy(ctx, src));
    CHECK_OK(hpl_array_destroy(ctx, dst));
    CHECK_OK(hpl_kernel_destroy(ctx, copy));
    free(v);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = th_now();
    /* Separate memories (OFF whatever HPLVK_ZERO_COPY says): the statistics
     * checked here are those of devices holding their own copies. */
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:4", .zero_copy = HPL_ZERO_COPY_OFF});
    CHECK(hpl_device_count(ctx) == NDEV, "cpu:4 opened %d devices", hpl_device_count(ctx));
    bool f64 = true, i64 = true;
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info))) {
            f64 = f64 && info.float64;
            i64 = i64 && info.int64;
        }
    }
    errors(ctx);
    static const shape shapes[] = {
        {1, {1, 0, 0}, 0},     {1, {7, 0, 0}, 0},       {1, {1000, 0, 0}, 0}, {1, {100003, 0, 0}, 0},
        {2, {37, 29, 0}, 0},   {2, {317, 316, 0}, 0},   {3, {11, 13, 7}, 1},  {3, {23, 21, 19}, 1},
    };
    for (size_t t = 0; t < NTYPES; t++) {
        const tdesc *td = &TYPES[t];
        if ((td->t == HPL_FLOAT64 && !f64) || ((td->t == HPL_INT64 || td->t == HPL_UINT64) && !i64)) {
            th_note("%s arrays not supported by the devices: skipped", td->glsl);
            continue;
        }
        hpl_kernel gen[4] = {{0}};
        for (int nd = 1; nd <= 3; nd++) {
            char *src = gen_source(td, nd);
            gen[nd] = th_kernel(ctx, src);
            free(src);
        }
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            scenario(ctx, td, gen[shapes[i].nd], &shapes[i]);
        for (int nd = 1; nd <= 3; nd++)
            CHECK_OK(hpl_kernel_destroy(ctx, gen[nd]));
        th_note("%s: %d reductions so far, %.2f s", td->glsl, reductions, th_now() - t0);
    }
    big_float_sum(ctx);
    hpl_context_destroy(ctx);

    /* One device opened once (zero copy where it shares memory with the
     * host): reductions of host data and of kernel output. */
    ctx = th_context("cpu");
    {
        const tdesc *td = &TYPES[0];
        char *src = gen_source(td, 1);
        hpl_kernel g = th_kernel(ctx, src);
        free(src);
        const uint64_t n = 1000, rd[3] = {n, 1, 1};
        uint8_t *model = calloc(n, 4);
        hpl_array a = th_array(ctx, HPL_FLOAT32, n, 0, 0);
        CHECK_OK(hpl_eval(ctx, g, NULL, HPL_ARGS(hpl_arr(a), hpl_u32(5), hpl_u32(0), hpl_u32(1000), hpl_u32(1),
                                                 hpl_u32(1))));
        fill_model(td, model, n, 5, 0, 1000);
        const box whole = {{0, 0, 0}, {n, 1, 1}};
        check_all_ops(ctx, td, a, model, rd, &whole, false, "zero-copy cpu");
        check_contents(ctx, td, a, model, n, "zero-copy cpu");
        CHECK_OK(hpl_array_destroy(ctx, a));
        free(model);
    }
    th_note("%d reductions, %.2f s", reductions, th_now() - t0);
    return th_finish(ctx);
}
