/*
 * bench_plan — execution plans on balanced kernels: a matrix product
 * (C = A x B by rows) and a 5-point stencil (two grids swapped each step,
 * one halo row), over every device of the context (HPLVK_DEVICES, e.g.
 * "gpu0,cpu": the GPU and the CPU side by side).
 *
 *   bench_plan [n [evals]]        n x n matrices and grids; default 128 4
 *
 * For each kernel it times `evals` evals with each device alone (a plan
 * with all the work on it; evals stop early once one has taken 3 s), then
 * holds a contest: the fastest device alone and a plan per balancer
 * (EXHAUSTIVE, SINGLE_STEP, ITERATIVE: their first eval searches, timed as
 * search_ms; AUTO_TUNE: packages) run 10 rounds, each contender a batch of
 * evals/10 evals per round in turn, so that all see the same GPU clock
 * history. It prints the median time per eval, the medians of the
 * per-round ratios to EXHAUSTIVE and to the fastest device alone, what the
 * search tried, the KiB each eval moved (taking turns moves a stencil's
 * rows between devices when contenders split differently), and the shares.
 * The targets on balanced kernels: SINGLE_STEP within 1.03x of
 * EXHAUSTIVE with one distribution; a plan never slower than its fastest
 * device alone.
 *
 * Every plan's results are checked against the host: C against a double
 * product with a float-summation bound, the stencil bit for bit (integer
 * cells) after all the steps that plan ran.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "bench_plan"
#include "sample_util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static const char *mxproduct_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) c; hpl_in(float, 2) a; hpl_in(float, 2) b; int p; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
    "    float s = 0.0;\n"
    "    for (uint k = 0u; k < uint(p); k++) s += hpl_at2(a, i, k) * hpl_at2(b, k, j);\n"
    "    hpl_at2(c, i, j) = s;\n"
    "}\n";

/* Integer cells: the result is exact on every device. Edges stay. */
static const char *stencil_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
    "    uint v = hpl_at2(src, r, c);\n"
    "    if (r > 0u && c > 0u && r + 1u < src.dims.x && c + 1u < src.dims.y)\n"
    "        v = 4u * v + hpl_at2(src, r - 1u, c) + hpl_at2(src, r + 1u, c) + hpl_at2(src, r, c - 1u)\n"
    "            + hpl_at2(src, r, c + 1u) + 1u;\n"
    "    hpl_at2(dst, r, c) = v;\n"
    "}\n";

typedef struct bench {
    hpl_context *ctx;
    uint64_t n;
    int evals;
    bool stencil;
    hpl_kernel kernel;
    hpl_array x, y, b; /* matmul: c, a, b; stencil: the grids */
    float *ha, *hb;    /* matmul inputs */
    uint32_t *grid[2]; /* stencil host mirror */
    int steps;         /* stencil steps run on the device (and mirrored) */
    int devices;
    bool verified;
    double worst_ratio; /* of the balancers to the fastest device alone */
} bench;

static void fill(float *x, uint64_t count, uint32_t seed)
{
    for (uint64_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

static int eval_once(bench *bn, hpl_plan *plan)
{
    if (!bn->stencil)
        return hpl_plan_eval(plan, bn->kernel, NULL,
                             HPL_ARGS(hpl_part1(bn->x, 0), hpl_part1(bn->y, 0), hpl_arr(bn->b), hpl_i32((int)bn->n)));
    hpl_array in = bn->steps % 2 ? bn->y : bn->x, out = bn->steps % 2 ? bn->x : bn->y;
    int rc = hpl_plan_eval(plan, bn->kernel, NULL, HPL_ARGS(hpl_part1(in, 1), hpl_part1(out, 1)));
    bn->steps += rc == HPL_OK;
    return rc;
}

static void host_stencil_step(const uint32_t *in, uint32_t *out, uint64_t n)
{
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t c = 0; c < n; c++) {
            uint32_t v = in[r * n + c];
            if (r > 0 && c > 0 && r + 1 < n && c + 1 < n)
                v = 4u * v + in[(r - 1) * n + c] + in[(r + 1) * n + c] + in[r * n + c - 1] + in[r * n + c + 1] + 1u;
            out[r * n + c] = v;
        }
}

/* The device results after a plan against the host. */
static bool check(bench *bn)
{
    uint64_t n = bn->n;
    if (bn->stencil) {
        for (int s = 0; s < bn->steps; s++)
            host_stencil_step(bn->grid[s % 2], bn->grid[1 - s % 2], n);
        uint32_t *got = NULL;
        hpl_array now = bn->steps % 2 ? bn->y : bn->x;
        bool ok = hpl_array_access(bn->ctx, now, HPL_READ, (void **)&got) == HPL_OK &&
                  memcmp(got, bn->grid[bn->steps % 2], n * n * 4) == 0;
        /* Next plan starts where this one ended, on both sides. */
        memcpy(bn->grid[0], bn->grid[bn->steps % 2], n * n * 4);
        if (bn->steps % 2)
            hpl_array_assign(bn->ctx, bn->x, bn->y, HPL_ON_HOST);
        bn->steps = 0;
        return ok;
    }
    float *c = NULL;
    if (hpl_array_access(bn->ctx, bn->x, HPL_READ, (void **)&c) != HPL_OK)
        return false;
    for (uint64_t i = 0; i < n; i += 7)
        for (uint64_t j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            for (uint64_t k = 0; k < n; k++) {
                ref += (double)bn->ha[i * n + k] * bn->hb[k * n + j];
                mag += fabs((double)bn->ha[i * n + k] * bn->hb[k * n + j]);
            }
            if (fabs(c[i * n + j] - ref) > (double)(n + 2) * FLT_EPSILON * mag)
                return false;
        }
    hpl_array_discard(bn->ctx, bn->x);
    return true;
}

#define TIME_CAP_MS 3000.0

/* ms per eval over bn->evals evals in a row (fewer past TIME_CAP_MS), and the bytes each moved
 * (to and from the host and within devices): a balanced plan should move
 * no more than its best single device does. */
static int time_evals(bench *bn, hpl_plan *plan, double *ms, double *moved_kib)
{
    SAMPLE_TRY(hpl_stats_reset(bn->ctx));
    double t0 = sample_now_ms();
    int e = 0;
    while (e < bn->evals) { /* a slow device alone stops after about TIME_CAP_MS */
        SAMPLE_TRY(eval_once(bn, plan));
        if (++e % 8 == 0 || e == bn->evals) {
            SAMPLE_TRY(hpl_finish(bn->ctx));
            if (sample_now_ms() - t0 > TIME_CAP_MS)
                break;
        }
    }
    SAMPLE_TRY(hpl_finish(bn->ctx));
    *ms = (sample_now_ms() - t0) / e;
    hpl_stats st;
    SAMPLE_TRY(hpl_stats_get(bn->ctx, &st));
    *moved_kib = (double)(st.total.to_device_bytes + st.total.to_host_bytes + st.total.local_bytes) / 1024.0 / e;
    return HPL_OK;
}

/* A plan's shares; for package balancers, the share of the rows each
 * device ran in the last eval. */
static void print_shares(const hpl_plan_info *in)
{
    uint64_t rows = 0;
    for (int i = 0; i < in->device_count; i++)
        rows += in->rows[i];
    bool packages = in->balance == HPL_BALANCE_DYNAMIC || in->balance == HPL_BALANCE_HGUIDED ||
                    in->balance == HPL_BALANCE_AUTO_TUNE;
    for (int i = 0; i < in->device_count; i++)
        printf("%s%.3f", i ? ":" : " ", packages && rows ? (double)in->rows[i] / (double)rows : in->shares[i]);
    if (packages)
        printf(" (rows run)");
}

/* Device d alone (a plan with all the work on it): a warm-up eval, then
 * the timed ones. Its ratios are to itself (1). */
static int run_alone(bench *bn, int d, double *ms)
{
    double shares[HPL_MAX_DEVICES] = {0};
    shares[d] = 1;
    char label[32];
    snprintf(label, sizeof label, "device %d", d);
    hpl_plan *plan = NULL;
    SAMPLE_TRY(hpl_plan_create(bn->ctx, &(hpl_plan_desc){.shares = shares}, &plan));
    double t0 = sample_now_ms();
    int rc = eval_once(bn, plan);
    if (rc == HPL_OK)
        rc = hpl_finish(bn->ctx);
    double first_ms = sample_now_ms() - t0;
    double moved_kib = 0;
    if (rc == HPL_OK)
        rc = time_evals(bn, plan, ms, &moved_kib);
    hpl_plan_info in;
    if (rc == HPL_OK)
        rc = hpl_plan_get_info(plan, &in);
    bool ok = rc == HPL_OK && check(bn);
    bn->verified = bn->verified && ok;
    if (rc == HPL_OK) {
        printf("%-8s %-15s %9.3f %9.1f %8.3f %8.3f %6d %9.1f ", bn->stencil ? "stencil" : "matmul", label, *ms,
               first_ms, 1.0, 1.0, in.distributions, moved_kib);
        print_shares(&in);
        printf("%s\n", ok ? "" : "  WRONG RESULT");
    }
    hpl_plan_destroy(plan);
    if (rc != HPL_OK)
        fprintf(stderr, SAMPLE_NAME ": %s: %s: %s\n", label, hpl_error_name(rc), hpl_last_error());
    return rc;
}

/* ---- the contest: the balancers and the fastest device alone, in turns --- */

#define ROUNDS 10

typedef struct contender {
    char label[32];
    hpl_plan *plan;
    double search_ms;
    double ms[ROUNDS]; /* per eval, each round */
    double moved_kib;  /* per eval, all rounds */
} contender;

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n <= ROUNDS */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median over the rounds of a's time over b's in the same round. */
static double ratio(const contender *a, const contender *b)
{
    double r[ROUNDS];
    for (int i = 0; i < ROUNDS; i++)
        r[i] = a->ms[i] / b->ms[i];
    return median(r, ROUNDS);
}

static int batch(bench *bn, contender *c, int round, int evals)
{
    SAMPLE_TRY(hpl_stats_reset(bn->ctx));
    double t0 = sample_now_ms();
    for (int e = 0; e < evals; e++)
        SAMPLE_TRY(eval_once(bn, c->plan));
    SAMPLE_TRY(hpl_finish(bn->ctx));
    c->ms[round] = (sample_now_ms() - t0) / evals;
    hpl_stats st;
    SAMPLE_TRY(hpl_stats_get(bn->ctx, &st));
    c->moved_kib += (double)(st.total.to_device_bytes + st.total.to_host_bytes + st.total.local_bytes) / 1024.0 /
                    evals / ROUNDS;
    return HPL_OK;
}

static void print_contender(bench *bn, contender *c, const contender *exhaustive, const contender *alone)
{
    hpl_plan_info in;
    if (hpl_plan_get_info(c->plan, &in) != HPL_OK)
        return;
    double ms[ROUNDS];
    memcpy(ms, c->ms, sizeof ms);
    printf("%-8s %-15s %9.3f %9.1f %8.3f %8.3f %6d %9.1f ", bn->stencil ? "stencil" : "matmul", c->label,
           median(ms, ROUNDS), c->search_ms, ratio(c, exhaustive), ratio(c, alone), in.distributions, c->moved_kib);
    print_shares(&in);
    char line[1024];
    hpl_plan_describe(c->plan, line, sizeof line);
    printf("\n         %s\n", line);
}

/* Each contender's first eval (the searches), then ROUNDS rounds in which
 * each runs a batch of evals in turn: a GPU's clocks follow its recent load
 * (an H200 sat at 900 MHz instead of 1980 after a search that kept it
 * mostly idle), so times taken one plan after the other compare clock
 * states, not plans; ratios are medians of ratios within a round. */
static int contest(bench *bn, contender *c, int count)
{
    int rc = HPL_OK;
    for (int i = 0; rc == HPL_OK && i < count; i++) {
        double t0 = sample_now_ms();
        rc = eval_once(bn, c[i].plan);
        if (rc == HPL_OK)
            rc = hpl_finish(bn->ctx);
        c[i].search_ms = sample_now_ms() - t0;
    }
    int evals = bn->evals / ROUNDS > 1 ? bn->evals / ROUNDS : 1;
    for (int r = 0; rc == HPL_OK && r < ROUNDS; r++)
        for (int i = 0; rc == HPL_OK && i < count; i++) {
            int k = (i + r) % count; /* each round starts one later: none always follows the same one */
            rc = batch(bn, &c[k], r, evals);
            if (rc == HPL_OK && r == ROUNDS - 1 && !bn->stencil && !check(bn)) {
                printf("%s: WRONG RESULT\n", c[k].label);
                bn->verified = false;
            }
        }
    if (rc == HPL_OK && bn->stencil && !check(bn)) {
        printf("stencil: WRONG RESULT after the contest\n");
        bn->verified = false;
    }
    return rc;
}

static int run_kernel(bench *bn)
{
    double alone = INFINITY, ms = 0;
    int fastest = 0;
    for (int d = 0; d < bn->devices && bn->devices > 1; d++) {
        SAMPLE_TRY(run_alone(bn, d, &ms));
        fastest = ms < alone ? d : fastest;
        alone = ms < alone ? ms : alone;
    }
    const hpl_balance kinds[] = {HPL_BALANCE_EXHAUSTIVE, HPL_BALANCE_SINGLE_STEP, HPL_BALANCE_ITERATIVE,
                                 HPL_BALANCE_AUTO_TUNE};
    enum { KINDS = sizeof kinds / sizeof kinds[0] };
    contender c[KINDS + 1];
    memset(c, 0, sizeof c);
    double shares[HPL_MAX_DEVICES] = {0};
    shares[fastest] = 1;
    snprintf(c[0].label, sizeof c[0].label, "device %d again", fastest);
    int rc = hpl_plan_create(bn->ctx, &(hpl_plan_desc){.shares = shares}, &c[0].plan);
    for (int i = 0; rc == HPL_OK && i < KINDS; i++) {
        snprintf(c[i + 1].label, sizeof c[i + 1].label, "%s", hpl_balance_name(kinds[i]));
        rc = hpl_plan_create(bn->ctx, &(hpl_plan_desc){.balance = kinds[i]}, &c[i + 1].plan);
    }
    if (rc == HPL_OK)
        rc = contest(bn, c, KINDS + 1);
    for (int i = 0; i <= KINDS; i++) {
        if (rc == HPL_OK) {
            print_contender(bn, &c[i], &c[1], &c[0]);
            double r = ratio(&c[i], &c[0]);
            bn->worst_ratio = r > bn->worst_ratio ? r : bn->worst_ratio;
        }
        hpl_plan_destroy(c[i].plan);
    }
    if (rc != HPL_OK)
        fprintf(stderr, SAMPLE_NAME ": %s: %s\n", hpl_error_name(rc), hpl_last_error());
    return rc;
}

static int setup(bench *bn)
{
    uint64_t n = bn->n;
    hpl_type t = bn->stencil ? HPL_UINT32 : HPL_FLOAT32;
    SAMPLE_TRY(hpl_kernel_create(bn->ctx, &(hpl_kernel_desc){.source = {.glsl = bn->stencil ? stencil_src : mxproduct_src}},
                                 &bn->kernel));
    SAMPLE_TRY(hpl_array_create(bn->ctx, &(hpl_array_desc){.type = t, .dims = {n, n}}, &bn->x));
    SAMPLE_TRY(hpl_array_create(bn->ctx, &(hpl_array_desc){.type = t, .dims = {n, n}}, &bn->y));
    void *p = NULL;
    if (bn->stencil) {
        SAMPLE_TRY(hpl_array_access(bn->ctx, bn->x, HPL_WRITE, &p));
        for (uint64_t i = 0; i < n * n; i++)
            bn->grid[0][i] = ((uint32_t *)p)[i] = (uint32_t)(i * 2654435761u);
        return HPL_OK;
    }
    SAMPLE_TRY(hpl_array_create(bn->ctx, &(hpl_array_desc){.type = t, .dims = {n, n}}, &bn->b));
    fill(bn->ha, n * n, 7);
    fill(bn->hb, n * n, 11);
    SAMPLE_TRY(hpl_array_write(bn->ctx, bn->y, bn->ha, n * n * 4));
    SAMPLE_TRY(hpl_array_write(bn->ctx, bn->b, bn->hb, n * n * 4));
    return HPL_OK;
}

static void teardown(bench *bn)
{
    hpl_array_destroy(bn->ctx, bn->x);
    hpl_array_destroy(bn->ctx, bn->y);
    if (!bn->stencil)
        hpl_array_destroy(bn->ctx, bn->b);
    hpl_kernel_destroy(bn->ctx, bn->kernel);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 128;
    int evals = argc > 2 ? atoi(argv[2]) : 4;
    if (n < 3 || n > 8192 || evals < 1 || evals > 100000) {
        fprintf(stderr, "usage: bench_plan [n (3..8192) [evals (>= 1)]]\n");
        return 2;
    }
    hpl_context *ctx = NULL;
    int rc = hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx);
    if (rc != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create: %s: %s\n", hpl_error_name(rc), hpl_last_error());
        return 1;
    }
    int devices[HPL_MAX_DEVICES];
    bench bn = {.ctx = ctx, .n = n, .evals = evals, .devices = sample_devices(ctx, devices), .verified = true};
    bn.ha = malloc(n * n * 4);
    bn.hb = malloc(n * n * 4);
    bn.grid[0] = malloc(n * n * 4);
    bn.grid[1] = malloc(n * n * 4);
    printf("kernel   plan             ms/eval search_ms  /exhaus   /alone  tried KiB/eval  shares\n");
    double t0 = sample_now_ms();
    for (int s = 0; rc == HPL_OK && s < 2 && bn.ha && bn.hb && bn.grid[0] && bn.grid[1]; s++) {
        bn.stencil = s == 1;
        rc = setup(&bn);
        if (rc == HPL_OK)
            rc = run_kernel(&bn);
        teardown(&bn);
    }
    double total = sample_now_ms() - t0;
    bool verified = rc == HPL_OK && bn.verified && sample_log_clean() && bn.ha && bn.grid[1];
    char list[512];
    sample_device_list(ctx, devices, bn.devices, list, sizeof list);
    printf("RESULT name=bench_plan devices=%s size=%" PRIu64 "x%" PRIu64 " time_ms=%.1f rate=%.3f verified=%s\n", list,
           n, n, total, bn.worst_ratio, verified ? "yes" : "no");
    free(bn.ha);
    free(bn.hb);
    free(bn.grid[0]);
    free(bn.grid[1]);
    hpl_context_destroy(ctx);
    return verified ? 0 : 1;
}
