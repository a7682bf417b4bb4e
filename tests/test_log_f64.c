/* hpl_log_f64 (<hplvk.glsl>: fdlibm's log in double precision, since
 * GLSL's log() takes float only) on the device against the host:
 *   - inputs across the whole double range: every power of two of the
 *     normal range, 1 +- 2^-k, the 2000 doubles nearest 1 (fdlibm's
 *     |f| < 2^-20 branch), the mantissas around fdlibm's thresholds
 *     (sqrt(2), 1.38, 1.42), random bit patterns of every normal exponent,
 *     what NPB EP feeds it (t = x^2 + y^2 <= 1 of uniform x, y in (-1, 1))
 *     and uniform values in (0, 1], subnormals (random, the smallest, the
 *     largest), DBL_MIN, DBL_MAX;
 *   - each result against logl() (long double) in ulps of the result: at
 *     most MAX_ULPS (fdlibm's bound is 1), and at most one double away from
 *     the C library's log();
 *   - exactly: log(1) = +0, log(+-0) = -Inf, log(+Inf) = +Inf, and NaN for
 *     negative numbers, -Inf and NaN.
 * Prints the largest error found. Skipped (passing) on a device without
 * shaderFloat64. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fdlibm's own claim ("error < 1 ulp"); measured on Lavapipe: see the
 * report line. */
#define MAX_ULPS 1.0

static const char *log_src = "#include <hplvk.glsl>\n"
                             "hpl_args { hpl_in(double, 1) x; hpl_out(double, 1) y; };\n"
                             "void main() { uint i = hpl_global_id.x; hpl_at(y, i) = hpl_log_f64(hpl_at(x, i)); }\n";

typedef struct inputs {
    double *v;
    size_t n, cap;
} inputs;

static void add(inputs *in, double x)
{
    if (in->n < in->cap)
        in->v[in->n++] = x;
}

/* splitmix64: a fixed sequence, the same every run. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static uint64_t to_bits(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return bits;
}

/* A uniform double in (0, 1] with 53 random bits. */
static double uniform01(uint64_t *state)
{
    return (double)((next_random(state) >> 11) + 1) * 0x1p-53;
}

static void add_structured(inputs *in)
{
    for (int e = DBL_MIN_EXP - 1; e < DBL_MAX_EXP; e++) /* 2^-1022 .. 2^1023 */
        add(in, ldexp(1.0, e));
    for (int k = 1; k <= 53; k++) {
        add(in, 1.0 + ldexp(1.0, -k)); /* 1 + 2^-53 rounds to 1: log(1) once more */
        add(in, 1.0 - ldexp(1.0, -k));
    }
    double up = 1.0, down = 1.0;
    for (int j = 0; j < 1000; j++) {
        add(in, up = nextafter(up, 2.0));
        add(in, down = nextafter(down, 0.0));
    }
    /* fdlibm's thresholds on the mantissa (sqrt(2): halving; 0x6147a and
     * 0x6b851 of the high word: where f^2/2 is kept apart), 50 doubles on
     * each side, at a few exponents. */
    const uint64_t thresholds[] = {0x3ff6a09e667f3bcdull, 0x3ff6147a00000000ull, 0x3ff6b85100000000ull,
                                   0x3ff6b851ffffffffull};
    const int exponents[] = {-1000, -1, 0, 1, 500};
    for (size_t t = 0; t < sizeof thresholds / sizeof thresholds[0]; t++)
        for (size_t e = 0; e < sizeof exponents / sizeof exponents[0]; e++)
            for (int d = -50; d <= 50; d++)
                add(in, ldexp(from_bits(thresholds[t] + (uint64_t)(int64_t)d), exponents[e]));
    add(in, DBL_MIN);
    add(in, DBL_MAX);
    add(in, DBL_TRUE_MIN);
    add(in, DBL_MIN - DBL_TRUE_MIN); /* the largest subnormal */
}

static void add_random(inputs *in, size_t count, uint64_t *state)
{
    /* Random mantissas at random normal exponents (positive sign). */
    for (size_t i = 0; i < count; i++) {
        uint64_t r = next_random(state);
        uint64_t exponent = 1 + (r >> 52) % 2046;
        add(in, from_bits(exponent << 52 | (next_random(state) & 0xfffffffffffffull)));
    }
    /* What NPB EP feeds it: t = x^2 + y^2 <= 1, x and y uniform in (-1, 1). */
    for (size_t i = 0; i < count;) {
        double x = 2.0 * uniform01(state) - 1.0, y = 2.0 * uniform01(state) - 1.0, t = x * x + y * y;
        if (t <= 1.0 && t > 0.0) {
            add(in, t);
            i++;
        }
    }
    for (size_t i = 0; i < count; i++)
        add(in, uniform01(state));
    for (size_t i = 0; i < count / 16; i++) /* subnormals */
        add(in, from_bits(1 + next_random(state) % 0xfffffffffffffull));
}

/* |got - ref| in units of the last place of the double nearest ref. */
static double ulp_error(double got, long double ref)
{
    if (ref == 0.0L)
        return got == 0.0 ? 0.0 : INFINITY;
    int e;
    frexpl(ref, &e); /* |ref| in [2^(e-1), 2^e): its doubles are 2^(e-53) apart */
    return (double)(fabsl((long double)got - ref) / ldexpl(1.0L, e - DBL_MANT_DIG));
}

/* Doubles between a and b (both finite, same sign or zero). */
static uint64_t doubles_apart(double a, double b)
{
    int64_t ia = (int64_t)to_bits(a), ib = (int64_t)to_bits(b);
    if (ia < 0)
        ia = INT64_MIN - ia; /* negative numbers: order the bit patterns */
    if (ib < 0)
        ib = INT64_MIN - ib;
    return ia > ib ? (uint64_t)ia - (uint64_t)ib : (uint64_t)ib - (uint64_t)ia;
}

typedef struct log_report {
    double worst_ulps, worst_x;
    uint64_t worst_apart;
    size_t over;
} log_report;

static void compare(const double *x, const double *y, size_t n, log_report *r)
{
    for (size_t i = 0; i < n; i++) {
        double ulps = ulp_error(y[i], logl((long double)x[i]));
        uint64_t apart = isfinite(y[i]) ? doubles_apart(y[i], log(x[i])) : UINT64_MAX;
        if (!(ulps <= MAX_ULPS) || apart > 1) {
            if (r->over++ < 10)
                CHECK(false, "log(%a) = %a on the device, %a on the host (%.3f ulps, %" PRIu64 " doubles apart)", x[i],
                      y[i], log(x[i]), ulps, apart);
        }
        if (ulps > r->worst_ulps || isnan(ulps)) {
            r->worst_ulps = ulps;
            r->worst_x = x[i];
        }
        if (apart > r->worst_apart)
            r->worst_apart = apart;
    }
}

/* The inputs whose result is a special value, checked bit for bit. */
static const struct {
    double x;
    const char *what;
} specials[] = {
    {1.0, "log(1) = +0"},
    {0.0, "log(+0) = -Inf"},
    {-0.0, "log(-0) = -Inf"},
    {INFINITY, "log(+Inf) = +Inf"},
    {-1.0, "log(-1) = NaN"},
    {-INFINITY, "log(-Inf) = NaN"},
    {NAN, "log(NaN) = NaN"},
    {-DBL_TRUE_MIN, "log(-2^-1074) = NaN"},
};
#define SPECIALS (sizeof specials / sizeof specials[0])

static bool special_ok(size_t i, double y)
{
    double x = specials[i].x;
    if (isnan(x) || x < 0.0)
        return isnan(y);
    if (x == 0.0)
        return y == -INFINITY;
    if (x == 1.0)
        return y == 0.0 && !signbit(y);
    return y == INFINITY;
}

static void run_logs(hpl_context *ctx, const inputs *in)
{
    size_t n = in->n + SPECIALS;
    hpl_kernel k = th_kernel(ctx, log_src);
    hpl_array ax = th_array(ctx, HPL_FLOAT64, n, 0, 0), ay = th_array(ctx, HPL_FLOAT64, n, 0, 0);
    double *x = th_access(ctx, ax, HPL_WRITE);
    if (!x)
        return;
    memcpy(x, in->v, in->n * sizeof *x);
    for (size_t i = 0; i < SPECIALS; i++)
        x[in->n + i] = specials[i].x;
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(ax), hpl_arr(ay))));
    const double *y = th_access(ctx, ay, HPL_READ);
    x = th_access(ctx, ax, HPL_READ);
    if (x && y) {
        log_report r = {0};
        compare(x, y, in->n, &r);
        CHECK(r.over == 0, "%zu of %zu results over %.1f ulps or more than one double from log()", r.over, in->n,
              MAX_ULPS);
        th_note("%zu inputs: largest error %.3f ulps (log(%a)); at most %" PRIu64
                " double(s) from the C library's log()",
                in->n, r.worst_ulps, r.worst_x, r.worst_apart);
        for (size_t i = 0; i < SPECIALS; i++)
            CHECK(special_ok(i, y[in->n + i]), "%s: got %a", specials[i].what, y[in->n + i]);
    }
    CHECK_OK(hpl_array_destroy(ctx, ax));
    CHECK_OK(hpl_array_destroy(ctx, ay));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

int main(void)
{
    hpl_context *ctx = th_context("cpu");
    hpl_device_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(hpl_device_get_info(ctx, 0, &info));
    if (!info.float64) {
        th_note("SKIPPED: %s has no shaderFloat64", info.name);
        return th_finish(ctx);
    }
    enum { RANDOM = 100000 };
    inputs in = {.cap = 8192 + 3 * RANDOM + RANDOM / 16};
    in.v = malloc(in.cap * sizeof *in.v);
    CHECK(in.v != NULL, "out of host memory");
    if (in.v) {
        uint64_t state = 20240917u;
        add_structured(&in);
        add_random(&in, RANDOM, &state);
        CHECK(in.n < in.cap, "%zu inputs fill the buffer of %zu", in.n, in.cap);
        run_logs(ctx, &in);
    }
    free(in.v);
    return th_finish(ctx);
}
