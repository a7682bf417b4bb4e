/*
 * ep — NAS Parallel Benchmarks' EP (Embarrassingly Parallel) kernel, as in
 * NPB 3.x, in double precision, split over every device of the context
 * (HPLVK_DEVICES, e.g. "cpu:3"; the default devices otherwise).
 *
 *   ep [S|W|A|B|C|D|E|T [balancer]]
 *                         the class (default S): 2^M pairs of uniform
 *                         numbers, M = 24, 25, 28, 30, 32, 36, 40; T (a
 *                         quick run, not NPB's) is M = 20. D and E take
 *                         about 1 s and 16 s a run on one H200, minutes
 *                         and hours on Lavapipe. With a balancer (none,
 *                         exhaustive, single_step, iterative, adaptive,
 *                         dynamic, hguided, auto_tune) the runs go through
 *                         an execution plan over every device with it (a
 *                         GPU and the CPU: the CPU's share is the plan's
 *                         to find); without, an even split.
 *
 * NPB's EP: the linear congruential generator x_{j+1} = a x_j mod 2^46
 * (a = 5^13, x_0 = 271828183) gives the uniform numbers r_j = x_j 2^-46,
 * and pair i is (r_{2i+1}, r_{2i+2}). Each pair becomes X = 2 r - 1,
 * Y = 2 r' - 1; those with t = X^2 + Y^2 <= 1 (Marsaglia's polar method)
 * give the Gaussian deviates X sqrt(-2 log t / t), Y sqrt(-2 log t / t),
 * which are summed (sx, sy) and counted in the square annuli
 * l <= max(|X|, |Y|) < l + 1, l = 0..9 (q[l]).
 *
 * One kernel: each work-item takes a run of consecutive pairs, jumps the
 * generator to the run's first number (a^k mod 2^46 by squaring) and
 * writes its partial sums and counts into a row of two arrays, which are
 * split by rows over the devices (hpl_part1), so the work splits like the
 * rows. The host reads the rows and adds them up in double. The log is
 * hpl_log_f64 from <hplvk.glsl> (GLSL's log() is float only).
 *
 * The shape of a run (shape_of): runs of 16 to 4096 pairs, 2^16 work-items
 * or more (classes S to C: C is 2^20 work-items of 4096 pairs). Past 2^21
 * work-items the rows would cost the host more to read back and add up
 * than eight GPUs take to compute them, so a work-item's run grows instead,
 * up to 32768 pairs (Mesa 22.3's llvmpipe stops an invocation's loops at
 * 65 535 iterations in all: README.md), and past that the class runs in
 * passes of 2^21 work-items (one eval each, the first pair a scalar),
 * writing two sets of rows in turn: the host adds up one pass's rows while
 * the devices run the next. D: one pass of 2^21 x 32768 pairs; E: 16
 * passes. 2^21 work-items are 2^18 per GPU on eight, about one resident
 * wave of an H200 (132 SMs x 2048 threads); their rows are 126 MB. The
 * counts: a work-item's fit its uint row (at most 32768 pairs), the
 * class's add up in uint64 (E accepts some 8.6e11 pairs).
 *
 * Verified as NPB verifies: sx and sy within a relative 1e-8 of NPB's
 * reference sums of the class (for D and E as NPB 3.3's ep.f gives them,
 * E to 13 digits). Besides, the counts q[0..9] must add up to
 * the pairs accepted (counted apart), and for class S equal those NPB
 * prints. Class T, which has no NPB reference, is checked against the same
 * computation on the host instead: every count exactly, the sums within
 * 1e-10 of the sum of their terms' magnitudes (the host's log is the C
 * library's, and the additions run in another order).
 *
 * One eval of a single item per device first makes the pipelines; then
 * the class runs RUNS times, each timed from the first eval to the sums on
 * the host and verified; the fastest is reported (a GPU's clocks follow its
 * recent load: a first run after an idle spell runs at a fraction of
 * them), and the rate is NPB's: 2^(M+1) random numbers / time, in millions
 * per second (Mop/s). With a plan the first run also searches.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "ep"
#include "sample_util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>

#define EP_NQ 10                       /* the annuli q[0..9] */
#define EP_COUNT_COLUMNS (EP_NQ + 1)   /* a count row: q[0..9], then the pairs accepted */
#define EP_EPSILON 1e-8                /* NPB's verification tolerance */
#define EP_MULTIPLIER UINT64_C(1220703125) /* a = 5^13 */
#define EP_SEED UINT64_C(271828183)
#define RUNS 3
#define EP_MASK46 ((UINT64_C(1) << 46) - 1)
/* The shape of the larger classes (shape_of); compile-time overrides make
 * small classes run in passes, to test them on Lavapipe. */
#ifndef EP_MAX_ITEMS
#define EP_MAX_ITEMS (UINT64_C(1) << 21) /* work-items per pass */
#endif
#ifndef EP_MAX_PAIRS_PER_ITEM
#define EP_MAX_PAIRS_PER_ITEM 32768 /* a work-item's run, past 4096 pairs: < llvmpipe's 65 535 loop iterations */
#endif

/* The modulus is 2^46, a power of two that divides 2^64, so a product of
 * two 46-bit numbers wrapped to 64 bits keeps its low 46 bits right: one
 * uint64 multiply and a mask are NPB's randlc exactly (which splits the
 * factors in 23-bit halves only because it works in doubles). */
static const char *ep_src =
    "#include <hplvk.glsl>\n"
    "hpl_args {\n"
    "    hpl_out(double, 2) sums;  // a row per work-item: sx, sy of its pairs\n"
    "    hpl_out(uint, 2) counts;  // a row per work-item: q[0..9], the pairs accepted\n"
    "    uint pairs_per_item;\n"
    "    uint64_t first_pair;      // the pass's first pair\n"
    "};\n"
    "const uint64_t A = 1220703125ul;                      // 5^13\n"
    "const uint64_t SEED = 271828183ul;\n"
    "const uint64_t MASK46 = (1ul << 46) - 1ul;\n"
    "const double R46 = 1.42108547152020037174224853515625e-14lf; // 2^-46, exactly\n"
    "\n"
    "// a^e mod 2^46, by squaring: at most 64 steps.\n"
    "uint64_t pow_mod46(uint64_t a, uint64_t e) {\n"
    "    uint64_t r = 1ul;\n"
    "    for (; e != 0ul; e >>= 1) {\n"
    "        if ((e & 1ul) != 0ul) r = (r * a) & MASK46;\n"
    "        a = (a * a) & MASK46;\n"
    "    }\n"
    "    return r;\n"
    "}\n"
    "\n"
    "// The next uniform number of the generator, in (0, 1).\n"
    "double next_uniform(inout uint64_t x) {\n"
    "    x = (A * x) & MASK46;\n"
    "    return double(x) * R46;\n"
    "}\n"
    "\n"
    "void main() {\n"
    "    uint item = hpl_global_id.x;\n"
    "    // Pair i uses numbers 2i+1 and 2i+2: start at number 2 i0, i0 the first pair.\n"
    "    uint64_t i0 = first_pair + uint64_t(item) * uint64_t(pairs_per_item);\n"
    "    uint64_t x = (SEED * pow_mod46(A, 2ul * i0)) & MASK46;\n"
    "    double sx = 0.0lf, sy = 0.0lf;\n"
    "    uint q[10] = uint[10](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);\n"
    "    uint accepted = 0u;\n"
    "    for (uint i = 0u; i < pairs_per_item; i++) {\n"
    "        // precise: NPB's roundings, no fused multiply-adds, so that the\n"
    "        // acceptance and the annulus of every pair are the host's.\n"
    "        precise double x1 = 2.0lf * next_uniform(x) - 1.0lf;\n"
    "        precise double x2 = 2.0lf * next_uniform(x) - 1.0lf;\n"
    "        precise double t = x1 * x1 + x2 * x2;\n"
    "        if (t <= 1.0lf) {\n"
    "            precise double f = sqrt(-2.0lf * hpl_log_f64(t) / t);\n"
    "            precise double gx = x1 * f, gy = x2 * f;\n"
    "            uint l = uint(max(abs(gx), abs(gy)));\n"
    "            if (l < 10u) q[l]++;  // never past 9 in NPB's classes; a miss shows in the totals\n"
    "            accepted++;\n"
    "            sx += gx;\n"
    "            sy += gy;\n"
    "        }\n"
    "    }\n"
    "    hpl_at2(sums, item, 0u) = sx;\n"
    "    hpl_at2(sums, item, 1u) = sy;\n"
    "    for (uint l = 0u; l < 10u; l++) hpl_at2(counts, item, l) = q[l];\n"
    "    hpl_at2(counts, item, 10u) = accepted;\n"
    "}\n";

typedef struct ep_class {
    char name;
    int m;                /* 2^m pairs */
    bool has_reference;   /* NPB's sums (else the host computes the class) */
    double sx_ref, sy_ref;
    const uint64_t *q_ref; /* NPB's counts where we have them, else NULL */
} ep_class;

/* What NPB 3.3's serial EP prints for class S ("Counts:"): not part of
 * NPB's verification, but a count off by one would show a pair treated
 * differently. */
static const uint64_t ep_counts_s[EP_NQ] = {6140517, 5865300, 1100361, 68546, 1648, 17, 0, 0, 0, 0};

/* The sums: NPB 3.x ep.f / ep.c, the verification block (D and E checked
 * against NPB 3.3's NPB3.3-SER/EP/ep.f; E's are given to 13 digits). */
static const ep_class ep_classes[] = {
    {'T', 20, false, 0.0, 0.0, NULL},
    {'S', 24, true, -3.247834652034740e+3, -6.958407078382297e+3, ep_counts_s},
    {'W', 25, true, -2.863319731645753e+3, -6.320053679109499e+3, NULL},
    {'A', 28, true, -4.295875165629892e+3, -1.580732573678431e+4, NULL},
    {'B', 30, true, 4.033815542441498e+4, -2.660669192809235e+4, NULL},
    {'C', 32, true, 4.764367927995374e+4, -8.084072988043731e+4, NULL},
    {'D', 36, true, 1.982481200946593e+5, -1.020596636361769e+5, NULL},
    {'E', 40, true, -5.319717441530e+5, -3.688834557731e+5, NULL},
};

typedef struct ep_result {
    double sx, sy;
    double sx_magnitude, sy_magnitude; /* sums of |terms|: the host's reference only */
    uint64_t q[EP_NQ];
    uint64_t accepted;
} ep_result;

/* A class's run: `passes` evals of `items` work-items of `per_item` pairs,
 * pass p starting at pair p * items * per_item. */
typedef struct ep_shape {
    uint32_t per_item;
    uint64_t items, passes;
} ep_shape;

/* 2^16 work-items or more where each still gets 16 pairs (enough for a
 * GPU to run them side by side), and at most 4096 pairs each, so that no
 * invocation loops for long (Mesa 22.3's llvmpipe stops an invocation's
 * loops at 65 535 iterations in all: README.md); past EP_MAX_ITEMS
 * work-items, longer runs up to EP_MAX_PAIRS_PER_ITEM, then passes. Every
 * count is a power of two: the passes cover the 2^m pairs exactly. */
static ep_shape shape_of(int m)
{
    uint64_t pairs = UINT64_C(1) << m, per_item = pairs >> 16;
    per_item = per_item < 16 ? 16 : per_item > 4096 ? 4096 : per_item;
    while (pairs / per_item > EP_MAX_ITEMS && per_item < EP_MAX_PAIRS_PER_ITEM)
        per_item *= 2;
    uint64_t items = pairs / per_item;
    ep_shape s = {(uint32_t)per_item, items < EP_MAX_ITEMS ? items : EP_MAX_ITEMS, 1};
    s.passes = items / s.items;
    return s;
}

/* ---- the host's EP, for class T ---------------------------------------- */

static double host_next_uniform(uint64_t *x)
{
    *x = (EP_MULTIPLIER * *x) & EP_MASK46;
    return (double)*x * 0x1p-46;
}

/* The first `pairs` pairs, in NPB's order, with the C library's log. */
static void host_ep(uint64_t pairs, ep_result *r)
{
    *r = (ep_result){0};
    uint64_t x = EP_SEED;
    for (uint64_t i = 0; i < pairs; i++) {
        double x1 = 2.0 * host_next_uniform(&x) - 1.0, x2 = 2.0 * host_next_uniform(&x) - 1.0;
        double t = x1 * x1 + x2 * x2;
        if (t > 1.0)
            continue;
        double f = sqrt(-2.0 * log(t) / t), gx = x1 * f, gy = x2 * f;
        unsigned l = (unsigned)fmax(fabs(gx), fabs(gy));
        if (l < EP_NQ)
            r->q[l]++;
        r->accepted++;
        r->sx += gx;
        r->sy += gy;
        r->sx_magnitude += fabs(gx);
        r->sy_magnitude += fabs(gy);
    }
}

/* ---- the run on the devices -------------------------------------------- */

/* The partial results: a row per work-item, split by rows over the devices. */
static int make_partials(hpl_context *ctx, uint64_t items, hpl_array *sums, hpl_array *counts)
{
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT64, .dims = {items, 2}, .name = "sums"}, sums));
    SAMPLE_TRY(hpl_array_create(
        ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {items, EP_COUNT_COLUMNS}, .name = "counts"}, counts));
    return HPL_OK;
}

/* plan NULL: an even split over every device. */
static int eval_ep(hpl_context *ctx, hpl_plan *plan, hpl_kernel ep, uint64_t items, uint32_t per_item,
                   uint64_t first_pair, hpl_array sums, hpl_array counts)
{
    const hpl_arg args[] = {hpl_part1(sums, 0), hpl_part1(counts, 0), hpl_u32(per_item), hpl_u64(first_pair)};
    if (plan) {
        SAMPLE_TRY(hpl_plan_eval(plan, ep, &(hpl_launch){.global = {items}}, args, 4));
        return HPL_OK;
    }
    hpl_launch launch = sample_launch(ctx);
    launch.global[0] = items;
    SAMPLE_TRY(hpl_eval(ctx, ep, &launch, args, 4));
    return HPL_OK;
}

/* One pair per work-item, a work-item for every device there can be:
 * makes every device's pipeline, so that the timed run does not. */
static int warm_up(hpl_context *ctx, hpl_kernel ep)
{
    hpl_array sums, counts;
    uint64_t items = HPL_MAX_DEVICES;
    SAMPLE_TRY(make_partials(ctx, items, &sums, &counts));
    SAMPLE_TRY(eval_ep(ctx, NULL, ep, items, 1, 0, sums, counts));
    SAMPLE_TRY(hpl_array_destroy(ctx, sums));
    SAMPLE_TRY(hpl_array_destroy(ctx, counts));
    SAMPLE_TRY(hpl_finish(ctx));
    return HPL_OK;
}

/* The host's share of the work: the rows added up in double, into r. */
static void add_rows(const double *sums, const uint32_t *counts, uint64_t items, ep_result *r)
{
    for (uint64_t i = 0; i < items; i++) {
        r->sx += sums[2 * i];
        r->sy += sums[2 * i + 1];
        const uint32_t *row = counts + i * EP_COUNT_COLUMNS;
        for (int l = 0; l < EP_NQ; l++)
            r->q[l] += row[l];
        r->accepted += row[EP_NQ];
    }
}

/* Prints which work-items each device ran (its part of the rows). */
static int report_parts(hpl_context *ctx, hpl_array sums)
{
    int parts = hpl_array_part_count(ctx, sums);
    for (int i = 0; i < parts; i++) {
        hpl_array part;
        hpl_array_info info;
        int device = -1;
        SAMPLE_TRY(hpl_array_part(ctx, sums, i, &part, &device));
        SAMPLE_TRY(hpl_array_get_info(ctx, part, &info));
        printf("ep: part %d: device %d, work-items %" PRIu64 "..%" PRIu64 "\n", i, device, info.origin[0],
               info.origin[0] + info.dims[0] - 1);
    }
    return HPL_OK;
}

/* One pass's rows, read back and added into r. */
static int add_pass(hpl_context *ctx, hpl_array sums, hpl_array counts, uint64_t items, ep_result *r)
{
    void *s, *q;
    SAMPLE_TRY(hpl_array_access(ctx, sums, HPL_READ, &s));
    SAMPLE_TRY(hpl_array_access(ctx, counts, HPL_READ, &q));
    add_rows(s, q, items, r);
    return HPL_OK;
}

/* The timed run: the evals, and the rows added up on the host. Pass p
 * writes row set p % 2; the host adds up pass p - 1's rows while the
 * devices run pass p (an eval returns once submitted). */
static int run_ep(hpl_context *ctx, hpl_plan *plan, hpl_kernel ep, const ep_class *c, ep_result *r, double *ms)
{
    const ep_shape sh = shape_of(c->m);
    const int sets = sh.passes > 1 ? 2 : 1;
    hpl_array sums[2], counts[2];
    for (int i = 0; i < sets; i++)
        SAMPLE_TRY(make_partials(ctx, sh.items, &sums[i], &counts[i]));
    printf("ep: class %c, 2^%d pairs: %" PRIu64 " work-items of %" PRIu32 " pairs", c->name, c->m, sh.items,
           sh.per_item);
    if (sh.passes > 1)
        printf(" in each of %" PRIu64 " passes", sh.passes);
    printf(" over %d device%s\n", hpl_device_count(ctx), hpl_device_count(ctx) == 1 ? "" : "s");
    *r = (ep_result){0};
    const uint64_t pass_pairs = sh.items * sh.per_item;
    double t0 = sample_now_ms();
    for (uint64_t p = 0; p < sh.passes; p++) {
        SAMPLE_TRY(eval_ep(ctx, plan, ep, sh.items, sh.per_item, p * pass_pairs, sums[p % 2], counts[p % 2]));
        if (p > 0)
            SAMPLE_TRY(add_pass(ctx, sums[(p - 1) % 2], counts[(p - 1) % 2], sh.items, r));
    }
    SAMPLE_TRY(add_pass(ctx, sums[(sh.passes - 1) % 2], counts[(sh.passes - 1) % 2], sh.items, r));
    *ms = sample_now_ms() - t0;
    SAMPLE_TRY(report_parts(ctx, sums[0]));
    for (int i = 0; i < sets; i++) {
        SAMPLE_TRY(hpl_array_destroy(ctx, sums[i]));
        SAMPLE_TRY(hpl_array_destroy(ctx, counts[i]));
    }
    return HPL_OK;
}

/* ---- verification -------------------------------------------------------- */

static void print_report(const ep_class *c, const ep_result *r)
{
    printf("ep: N = 2^%d, Gaussian pairs %" PRIu64 ", sums %.15e %.15e\n", c->m + 1, r->accepted, r->sx, r->sy);
    for (int l = 0; l < EP_NQ; l++)
        printf("ep: q[%d] = %" PRIu64 "\n", l, r->q[l]);
}

/* The counts add up to the pairs accepted: no deviate fell past q[9]. */
static bool counts_add_up(const ep_result *r)
{
    uint64_t total = 0;
    for (int l = 0; l < EP_NQ; l++)
        total += r->q[l];
    if (total != r->accepted)
        fprintf(stderr, SAMPLE_NAME ": the counts add up to %" PRIu64 ", but %" PRIu64 " pairs were accepted\n", total,
                r->accepted);
    return total == r->accepted;
}

/* NPB's check: both sums within a relative EP_EPSILON of the reference;
 * and the counts NPB prints, where we have them. */
static bool matches_npb(const ep_class *c, const ep_result *r)
{
    double sx_err = fabs((r->sx - c->sx_ref) / c->sx_ref), sy_err = fabs((r->sy - c->sy_ref) / c->sy_ref);
    printf("ep: relative error against NPB's sums: sx %.3e, sy %.3e (tolerance %.0e)\n", sx_err, sy_err, EP_EPSILON);
    bool counts_ok = true;
    for (int l = 0; c->q_ref && l < EP_NQ; l++) {
        if (r->q[l] != c->q_ref[l])
            fprintf(stderr, SAMPLE_NAME ": q[%d] = %" PRIu64 ", NPB counts %" PRIu64 "\n", l, r->q[l], c->q_ref[l]);
        counts_ok = counts_ok && r->q[l] == c->q_ref[l];
    }
    return sx_err <= EP_EPSILON && sy_err <= EP_EPSILON && counts_ok;
}

/* Class T: the device's results against the host's, counts exactly. */
static bool matches_host(const ep_class *c, const ep_result *r)
{
    ep_result h;
    host_ep(UINT64_C(1) << c->m, &h);
    bool ok = r->accepted == h.accepted;
    for (int l = 0; l < EP_NQ; l++) {
        if (r->q[l] != h.q[l])
            fprintf(stderr, SAMPLE_NAME ": q[%d] = %" PRIu64 ", the host counts %" PRIu64 "\n", l, r->q[l], h.q[l]);
        ok = ok && r->q[l] == h.q[l];
    }
    if (r->accepted != h.accepted)
        fprintf(stderr, SAMPLE_NAME ": %" PRIu64 " pairs accepted, the host accepts %" PRIu64 "\n", r->accepted,
                h.accepted);
    double sx_err = fabs(r->sx - h.sx) / h.sx_magnitude, sy_err = fabs(r->sy - h.sy) / h.sy_magnitude;
    printf("ep: host sums %.15e %.15e; differences relative to the sums of magnitudes: %.3e %.3e\n", h.sx, h.sy, sx_err,
           sy_err);
    return ok && sx_err <= 1e-10 && sy_err <= 1e-10;
}

static bool verify(const ep_class *c, const ep_result *r)
{
    print_report(c, r);
    bool adds_up = counts_add_up(r);
    return (c->has_reference ? matches_npb(c, r) : matches_host(c, r)) && adds_up;
}

/* ---- main ---------------------------------------------------------------- */

/* The class's runs (through a plan when `plan` is not NULL), each
 * verified: *verified when all were, *ms the fastest. */
static int run_class(hpl_context *ctx, hpl_plan *plan, hpl_kernel ep, const ep_class *c, bool *verified, double *ms)
{
    *verified = true;
    *ms = INFINITY;
    for (int i = 0; i < RUNS; i++) {
        ep_result r;
        double t;
        SAMPLE_TRY(run_ep(ctx, plan, ep, c, &r, &t));
        printf("ep: run %d: %.3f ms\n", i + 1, t);
        sample_checksum_print("sums and counts", &r, sizeof r);
        *verified = verify(c, &r) && *verified;
        *ms = fmin(*ms, t);
    }
    if (plan) {
        char line[1024];
        hpl_plan_describe(plan, line, sizeof line);
        printf("ep: %s\n", line);
    }
    return HPL_OK;
}

/* Compiles the kernel, warms up and runs the class on every device of the
 * context, with a plan when a balancer is given. */
static int run_devices(hpl_context *ctx, const ep_class *c, const hpl_balance *balance, char *devnames, size_t cap,
                       bool *verified, double *ms)
{
    int devices[HPL_MAX_DEVICES];
    int ndev = sample_devices(ctx, devices);
    hpl_kernel ep;
    SAMPLE_TRY(sample_device_list(ctx, devices, ndev, devnames, cap));
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = ep_src, .name = "ep"}}, &ep));
    SAMPLE_TRY(warm_up(ctx, ep));
    hpl_plan *plan = NULL;
    if (balance)
        SAMPLE_TRY(hpl_plan_create(ctx, &(hpl_plan_desc){.balance = *balance}, &plan));
    int rc = run_class(ctx, plan, ep, c, verified, ms);
    hpl_plan_destroy(plan);
    return rc;
}

/* Everything but the RESULT line; returns whether the runs are verified. */
static bool run_all(const ep_class *c, const hpl_balance *balance, char *devnames, size_t cap, double *ms)
{
    hpl_context *ctx = NULL;
    if (sample_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
        return false;
    }
    bool verified = false;
    bool ok = run_devices(ctx, c, balance, devnames, cap, &verified, ms) == HPL_OK && verified;
    /* An error that surfaced asynchronously fails the run too. */
    ok = hpl_finish(ctx) == HPL_OK && ok;
    hpl_context_destroy(ctx);
    return sample_log_clean() && ok;
}

/* The class named on the command line (S without one); NULL, said why, on
 * a bad command line. */
static const ep_class *parse_class(int argc, char **argv)
{
    if (argc == 1)
        return &ep_classes[1]; /* S */
    if (argc > 3) {
        fprintf(stderr, SAMPLE_NAME ": at most two arguments expected, the class and a balancer; got %d\n", argc - 1);
        return NULL;
    }
    for (size_t i = 0; strlen(argv[1]) == 1 && i < sizeof ep_classes / sizeof ep_classes[0]; i++)
        if (ep_classes[i].name == toupper((unsigned char)argv[1][0]))
            return &ep_classes[i];
    fprintf(stderr, SAMPLE_NAME ": unknown class \"%s\"\n", argv[1]);
    return NULL;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    const ep_class *c = parse_class(argc, argv);
    hpl_balance balance = HPL_BALANCE_NONE;
    if (c && argc == 3 && !sample_parse_balance(argv[2], strlen(argv[2]), &balance)) {
        fprintf(stderr, SAMPLE_NAME ": unknown balancer \"%s\"\n", argv[2]);
        c = NULL;
    }
    if (!c) {
        fprintf(stderr,
                "usage: %s [S|W|A|B|C|D|E|T [balancer]]   (NPB EP class, default S: 2^24 pairs, W 2^25, A 2^28,\n"
                "       B 2^30, C 2^32, D 2^36, E 2^40; T: 2^20 pairs, checked on the host;\n"
                "       balancer: none, exhaustive, single_step, iterative, adaptive, dynamic, hguided, auto_tune)\n",
                argv[0]);
        return 2;
    }
    char devnames[4096] = "none";
    double ms = 0.0;
    bool verified = run_all(c, argc == 3 ? &balance : NULL, devnames, sizeof devnames, &ms);
    double mops = ms > 0.0 ? ldexp(1.0, c->m + 1) / (ms * 1e-3) / 1e6 : 0.0;
    printf("RESULT name=ep devices=%s size=%c time_ms=%.3f rate=%.4gMop/s verified=%s%s\n", devnames, c->name, ms, mops,
           sample_verified_everywhere(verified) ? "yes" : "no", sample_ranks_field());
    return verified ? 0 : 1;
}
