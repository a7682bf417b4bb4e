/*
 * bench_plan — execution plans on balanced kernels: a matrix product
 * (C = A x B split by rows, with matmul_host.h's tiled kernel as
 * samples/matmul.c runs it) and a 5-point stencil (two grids swapped each
 * step, one halo row), over every device of the context (HPLVK_DEVICES,
 * e.g. "gpu0,cpu": the GPU and the CPU side by side).
 *
 *   bench_plan [n [evals [alone_ms]]]   n x n matrices and grids (3 to
 *                                       16384); default 128 4 1000
 *
 * For each kernel it times `evals` evals with each device alone (a plan
 * with all the work on it; evals stop early once they have taken 3 s). A
 * device alone on the matrix product runs the first tile's rows twice
 * first: when that says an eval of all n rows would take more than
 * alone_ms, it is timed on the first rows (whole tiles) that take about
 * alone_ms and its time per eval is scaled to all the tiles of n rows, as
 * its line says (Lavapipe alone at n = 8192 takes seconds per eval). Then
 * it holds a contest: the fastest device alone and a plan per balancer
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
 * The matrix product's launch gives the kernel's local size {BM, LY}, so
 * that plans cut its rows on whole tiles of BM rows (hplvk.h chapter 7c)
 * and no tile is computed twice. A search's candidates are whole evals:
 * EXHAUSTIVE's (a 5% grid, 2 runs each) cost some 21 evals of the slowest
 * device alone, minutes for Lavapipe at n = 8192.
 *
 * Every plan's results are checked against the host: C by matmul_host.h's
 * mm_check_product (a double product within the float-summation bound:
 * every element up to 2^28 multiply-adds, beyond that every row, so every
 * device's part and its edges, at spaced columns within that budget); the
 * stencil bit for bit (integer cells) after all the steps that plan ran
 * (some 65 ms per step at n = 8192).
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "bench_plan"
#include "sample_util.h"

#include "matmul_host.h"

#include <math.h>
#include <stdlib.h>

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

#define MAX_N 16384            /* matrices and grids of 1 GiB: below Lavapipe's 2 GiB buffers */

typedef struct bench {
    hpl_context *ctx;
    uint64_t n;
    int evals;
    double alone_ms; /* matmul: a device alone slower than this per eval is timed on a slice */
    bool stencil;
    hpl_kernel kernel;
    hpl_array x, y, b; /* matmul: c, a, b; stencil: the grids */
    mm_tiles tiles;    /* matmul */
    mm_problem mm;     /* matmul: the host's A and B; mm.c is C, mapped, during a check */
    uint64_t rows;     /* matmul: evals compute C's first `rows` rows (n, or a device alone's slice) */
    hpl_array cs, as;  /* ... through these subarrays of C and A when rows < n */
    uint32_t *grid[2]; /* stencil host mirror */
    int steps;         /* stencil steps run on the device (and mirrored) */
    int devices;
    bool verified;
    double worst_ratio; /* of the balancers to the fastest device alone */
} bench;

/* Work-group rows along dimension 1 of the matrix product's domain. */
static uint32_t tile_ly(mm_tiles t)
{
    return mm_tiles_threads(t) / t.bm;
}

static int eval_once(bench *bn, hpl_plan *plan)
{
    if (!bn->stencil) {
        /* As matmul.c: rows of C (cut between devices on whole tiles: the
         * local size is given), LY invocations per BN columns. */
        const mm_tiles t = bn->tiles;
        const hpl_launch launch = {.global = {bn->rows, (bn->n + t.bn - 1) / t.bn * tile_ly(t), 1},
                                   .local = {t.bm, tile_ly(t), 1}};
        const bool slice = bn->rows < bn->n;
        return hpl_plan_eval(plan, bn->kernel, &launch,
                             HPL_ARGS(hpl_part1(slice ? bn->cs : bn->x, 0), hpl_part1(slice ? bn->as : bn->y, 0),
                                      hpl_arr(bn->b)));
    }
    hpl_array in = bn->steps % 2 ? bn->y : bn->x, out = bn->steps % 2 ? bn->x : bn->y;
    int rc = hpl_plan_eval(plan, bn->kernel, NULL, HPL_ARGS(hpl_part1(in, 1), hpl_part1(out, 1)));
    bn->steps += rc == HPL_OK;
    return rc;
}

/* The matrix product's evals compute C's first `rows` rows from A's. */
static int set_rows(bench *bn, uint64_t rows)
{
    if (bn->rows < bn->n) {
        hpl_array_destroy(bn->ctx, bn->cs);
        hpl_array_destroy(bn->ctx, bn->as);
    }
    bn->rows = rows;
    if (rows < bn->n) {
        SAMPLE_TRY(hpl_subarray(bn->ctx, bn->x, HPL_RANGES({0, rows - 1}, HPL_ALL), &bn->cs));
        SAMPLE_TRY(hpl_subarray(bn->ctx, bn->y, HPL_RANGES({0, rows - 1}, HPL_ALL), &bn->as));
    }
    return HPL_OK;
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

static bool check_stencil(bench *bn)
{
    uint64_t n = bn->n;
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

/* C's first bn->rows rows after a plan's last eval, by matmul_host.h's
 * check (the double product within its float-summation bound; every row,
 * so every device's part and its edges, within a budget of host work). */
static bool check_product(bench *bn)
{
    float *c = NULL;
    if (hpl_array_access(bn->ctx, bn->x, HPL_READ, (void **)&c) != HPL_OK)
        return false;
    bn->mm.size = (mm_size){(uint32_t)bn->rows, (uint32_t)bn->n, (uint32_t)bn->n};
    bn->mm.c = c;
    bool ok = mm_check_product(&bn->mm);
    bn->mm.c = NULL;
    hpl_array_discard(bn->ctx, bn->x);
    return ok;
}

/* The device results after a plan against the host. */
static bool check(bench *bn)
{
    return bn->stencil ? check_stencil(bn) : check_product(bn);
}

#define TIME_CAP_MS 3000.0

/* ms per eval over bn->evals evals in a row (fewer past TIME_CAP_MS), and
 * the bytes each moved (to and from the host and within devices): a
 * balanced plan should move no more than its best single device does. It
 * waits after the first eval, then after every 8th, or after each when
 * they take more than TIME_CAP_MS / 8. */
static int time_evals(bench *bn, hpl_plan *plan, double *ms, double *moved_kib)
{
    SAMPLE_TRY(hpl_stats_reset(bn->ctx));
    double t0 = sample_now_ms();
    int e = 0, every = 1;
    while (e < bn->evals) { /* a slow device alone stops after about TIME_CAP_MS */
        SAMPLE_TRY(eval_once(bn, plan));
        if (++e % every == 0 || e == bn->evals) {
            SAMPLE_TRY(hpl_finish(bn->ctx));
            double spent = sample_now_ms() - t0;
            if (spent > TIME_CAP_MS)
                break;
            every = spent / e > TIME_CAP_MS / 8 ? 1 : 8;
        }
    }
    SAMPLE_TRY(hpl_finish(bn->ctx));
    *ms = (sample_now_ms() - t0) / e;
    hpl_stats st;
    SAMPLE_TRY(hpl_stats_get(bn->ctx, &st));
    *moved_kib = (double)(st.total.to_device_bytes + st.total.to_host_bytes + st.total.local_bytes) / 1024.0 / e;
    return HPL_OK;
}

/* One eval, waited for. */
static int timed_eval(bench *bn, hpl_plan *plan, double *ms)
{
    double t0 = sample_now_ms();
    SAMPLE_TRY(eval_once(bn, plan));
    SAMPLE_TRY(hpl_finish(bn->ctx));
    *ms = sample_now_ms() - t0;
    return HPL_OK;
}

/* The matrix product's rows to time device d alone on (set as bn->rows):
 * all n, unless an eval of the first tile's rows (after one that warms
 * up: *first_ms) says that all would take more than bn->alone_ms; then the
 * first whole tiles that take about alone_ms. */
static int alone_rows(bench *bn, hpl_plan *plan, double *first_ms)
{
    const uint64_t n = bn->n, bm = bn->tiles.bm;
    double probe_ms = 0;
    SAMPLE_TRY(set_rows(bn, bm));
    SAMPLE_TRY(timed_eval(bn, plan, first_ms));
    SAMPLE_TRY(timed_eval(bn, plan, &probe_ms));
    uint64_t rows = n;
    if (probe_ms * (double)((n + bm - 1) / bm) > bn->alone_ms) {
        double tiles = floor(bn->alone_ms / probe_ms);
        rows = tiles < 1 ? bm : (uint64_t)tiles * bm;
        rows = rows < n ? rows : n;
    }
    return set_rows(bn, rows);
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
 * the timed ones; the matrix product on fewer rows when the device is slow
 * (alone_rows), its time per eval scaled to n rows. Its ratios are to
 * itself (1). */
static int run_alone(bench *bn, int d, double *ms)
{
    double shares[HPL_MAX_DEVICES] = {0};
    shares[d] = 1;
    char label[32];
    snprintf(label, sizeof label, "device %d", d);
    hpl_plan *plan = NULL;
    SAMPLE_TRY(hpl_plan_create(bn->ctx, &(hpl_plan_desc){.shares = shares}, &plan));
    double first_ms = 0, warm_ms = 0, moved_kib = 0;
    int rc = HPL_OK;
    const bool probe = !bn->stencil && bn->n > bn->tiles.bm;
    if (probe)
        rc = alone_rows(bn, plan, &first_ms);
    if (rc == HPL_OK && (!probe || bn->rows > bn->tiles.bm)) /* a warm-up at the rows timed */
        rc = timed_eval(bn, plan, probe ? &warm_ms : &first_ms);
    if (rc == HPL_OK)
        rc = time_evals(bn, plan, ms, &moved_kib);
    /* A slice is whole tiles; the last tile of n rows costs a whole one. */
    const uint64_t rows = bn->stencil ? bn->n : bn->rows, bm = bn->tiles.bm;
    const double scale = rows < bn->n ? (double)((bn->n + bm - 1) / bm) / (double)(rows / bm) : 1.0;
    if (rc == HPL_OK)
        *ms *= scale;
    hpl_plan_info in;
    if (rc == HPL_OK)
        rc = hpl_plan_get_info(plan, &in);
    bool ok = rc == HPL_OK && check(bn);
    bn->verified = bn->verified && ok;
    if (rc == HPL_OK) {
        printf("%-8s %-15s %9.3f %9.1f %8.3f %8.3f %6d %9.1f ", bn->stencil ? "stencil" : "matmul", label, *ms,
               first_ms, 1.0, 1.0, in.distributions, moved_kib);
        print_shares(&in);
        if (rows < bn->n)
            printf("  (timed on rows 0..%" PRIu64 " of %" PRIu64 ", ms/eval scaled x%.2f)", rows - 1, bn->n, scale);
        printf("%s\n", ok ? "" : "  WRONG RESULT");
    }
    if (!bn->stencil)
        set_rows(bn, bn->n); /* all rows again: drops the slice, cannot fail */
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
    char source[MM_KERNEL_SOURCE_CAP];
    const char *glsl = bn->stencil ? stencil_src
                                   : mm_kernel_source(source, sizeof source, MM_HPLVK_ARGS, bn->tiles, false);
    if (!glsl)
        return HPL_ERROR_INVALID_ARGUMENT;
    SAMPLE_TRY(hpl_kernel_create(
        bn->ctx, &(hpl_kernel_desc){.source = {.glsl = glsl, .name = bn->stencil ? "stencil" : "mxproduct"}},
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
    bn->rows = n;
    SAMPLE_TRY(hpl_array_create(bn->ctx, &(hpl_array_desc){.type = t, .dims = {n, n}}, &bn->b));
    SAMPLE_TRY(hpl_array_write(bn->ctx, bn->y, bn->mm.a, n * n * 4));
    SAMPLE_TRY(hpl_array_write(bn->ctx, bn->b, bn->mm.b, n * n * 4));
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

/* matmul.c's tiles: the largest that every device can run. */
static bool choose_tiles(bench *bn, const int *devices)
{
    uint32_t max_invocations = UINT32_MAX;
    for (int i = 0; i < bn->devices; i++) {
        hpl_device_info info;
        if (hpl_device_get_info(bn->ctx, devices[i], &info) != HPL_OK)
            return false;
        max_invocations = (uint32_t)sample_min(max_invocations, info.max_workgroup_invocations);
    }
    return mm_choose_tiles(max_invocations, &bn->tiles);
}

int main(int argc, char **argv)
{
    uint64_t n = 128;
    int evals = 4;
    double alone_ms = 1000.0;
    bool numbers = (argc <= 1 || sample_arg_u64("n", argv[1], UINT64_MAX, &n)) &&
                   (argc <= 2 || sample_arg_int("evals", argv[2], &evals)) &&
                   (argc <= 3 || sample_arg_double("alone_ms", argv[3], &alone_ms));
    if (!numbers || argc > 4 || n < 3 || n > MAX_N || evals < 1 || evals > 100000 || !(alone_ms > 0)) {
        fprintf(stderr, "usage: bench_plan [n (3..%d) [evals (>= 1) [alone_ms (> 0)]]]\n", MAX_N);
        return 2;
    }
    hpl_context *ctx = NULL;
    int rc = hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx);
    if (rc != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create: %s: %s\n", hpl_error_name(rc), hpl_last_error());
        return 1;
    }
    int devices[HPL_MAX_DEVICES];
    bench bn = {.ctx = ctx,
                .n = n,
                .evals = evals,
                .alone_ms = alone_ms,
                .devices = sample_devices(ctx, devices),
                .verified = true,
                .mm = {.size = {(uint32_t)n, (uint32_t)n, (uint32_t)n}}};
    bn.mm.a = malloc(n * n * 4);
    bn.mm.b = malloc(n * n * 4);
    bn.grid[0] = malloc(n * n * 4);
    bn.grid[1] = malloc(n * n * 4);
    bool allocated = bn.mm.a && bn.mm.b && bn.grid[0] && bn.grid[1];
    if (!allocated)
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
    if (allocated) { /* matmul_host.h's inputs, as matmul's */
        mm_fill_random(bn.mm.a, n * n, 12345u);
        mm_fill_random(bn.mm.b, n * n, 67890u);
    }
    bool tiles = choose_tiles(&bn, devices);
    printf("kernel   plan             ms/eval search_ms  /exhaus   /alone  tried KiB/eval  shares\n");
    double t0 = sample_now_ms();
    for (int s = 0; rc == HPL_OK && s < 2 && allocated && tiles; s++) {
        bn.stencil = s == 1;
        rc = setup(&bn);
        if (rc == HPL_OK)
            rc = run_kernel(&bn);
        teardown(&bn);
    }
    double total = sample_now_ms() - t0;
    bool verified = rc == HPL_OK && bn.verified && sample_log_clean() && allocated && tiles;
    char list[512];
    sample_device_list(ctx, devices, bn.devices, list, sizeof list);
    printf("RESULT name=bench_plan devices=%s size=%" PRIu64 "x%" PRIu64 " time_ms=%.1f rate=%.3f verified=%s\n", list,
           n, n, total, bn.worst_ratio, verified ? "yes" : "no");
    free(bn.mm.a);
    free(bn.mm.b);
    free(bn.grid[0]);
    free(bn.grid[1]);
    hpl_context_destroy(ctx);
    return verified ? 0 : 1;
}
