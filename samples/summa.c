/*
 * summa — C = A x B (float, n x n) by SUMMA (van de Geijn and Watts'
 * Scalable Universal Matrix Multiplication Algorithm) over every device of
 * the context arranged as a grid, with the library moving the panels.
 *
 *   summa [n [kb]]      n: matrix size (1..32768), kb: panel width (1..n);
 *                       default 256 32
 *
 * The grid. P devices form the most square pr x pc grid with pr <= pc
 * (1 -> 1x1, 2 -> 1x2, 3 -> 1x3, 4 -> 2x2, 6 -> 2x3). Grid row i owns the
 * rows R_i of every matrix and grid column j the columns C_j, cut as
 * section 7b cuts parts (differing by at most one, the larger first; n not
 * a multiple of the grid is fine, and n below pr or pc leaves devices with
 * empty blocks that run nothing). Device (i, j) owns the blocks
 * A(R_i, C_j), B(R_i, C_j) and C(R_i, C_j): it generates its A and B blocks
 * with a kernel and zeroes its C block, so before the multiplication the
 * only valid copy of each block is on its owner (on a zero-copy device: the
 * host's copy, which is where that device works).
 *
 * The algorithm. For each panel K = [k, k + kb) of the inner dimension
 * (the last one narrower when kb does not divide n), every device (i, j)
 * runs C(R_i, C_j) += A(R_i, K) * B(K, C_j): one hpl_eval on that device
 * whose arguments are three subarrays, its C block, the panel A(R_i, K)
 * and the panel B(K, C_j). The panel subarray A(R_i, K) is one object
 * read by the pc devices of grid row i, and B(K, C_j) one read by the pr
 * devices of grid column j: that is SUMMA's row and column broadcast, and
 * the program has no copy in it. The coherence layer does the moving: when
 * device (i, j) reads A(R_i, K) it finds the part it owns in its own A
 * block (a copy within the device, or nothing), and fetches the rest from
 * the owners, A(R_i, K inter C_j') from device (i, j'): the first reader
 * pulls it through the host storage (to_host on the owner, to_device on the
 * reader), after which the host copy is valid and every other reader of
 * grid row i gets it from the host (to_device only). B's panels go down the
 * grid columns the same way. A panel that straddles two owners' columns
 * (kb not dividing the blocks) comes from both, only their elements. The
 * library waits for nothing the eval does not need: panel K + 1's copies
 * are recorded while panel K's kernels run.
 *
 * The kernel. The panel update is matmul's tiled SGEMM kernel
 * (matmul_host.h, the one samples/matmul.c runs), compiled to accumulate:
 * hpl_args { c; a; b; } computes c += a x b over subarrays of any origin
 * and stride, so the three panel arguments go in as they are. Each
 * work-group computes a BM x BN tile of the C block in steps of BK along
 * the panel, with the A and B tiles in shared memory and TM x TN outputs
 * per invocation in registers; its domain is {rows of the C block,
 * ceil(columns / BN) * LY} with the kernel's own local size {BM, LY}
 * (LY = invocations / BM). Loads past the block's rows and columns, and
 * past the panel's kb columns in its last K step, read zeros, and nothing
 * is stored past the block, so any n and kb work: kb not a multiple of BK,
 * kb = 1, the narrower last panel. An argument's rows are read (C's
 * written) as vec4s where the subarray allows it (n and its width
 * multiples of 4, its first element 16-byte aligned), as floats otherwise.
 * The tiles are the largest that every device of the grid can run
 * (matmul's sets; MATMUL_TILES="BM,BN,BK,TM,TN" chooses others).
 *
 * Why plain evals on explicit devices (hpl_launch.device), one per block
 * per panel: a plan (chapter 7c) cuts dimension 0 of the domain by shares,
 * one range of rows per device, so the pc devices of a grid row, which
 * share rows, cannot be the parts of one plan eval of C's domain; SUMMA's
 * distribution is 2-D (annotations cannot express it either, as paper 000
 * section 4.1 says). A plan over a made-up domain whose dimension 0 counts
 * the devices, one "row" each, would do, but its shares would mean nothing
 * and its partitioner would only be this loop in disguise.
 *
 * Traffic. SUMMA's broadcasts deliver each block to every other device of
 * its grid row (A) or column (B), once: device (i, j) receives
 * |R_i| (n - |C_j|) elements of A and (n - |R_i|) |C_j| of B, in all
 * n^2 (pc - 1) + n^2 (pr - 1) elements when the grid divides n. Through the
 * host each block that someone else reads leaves its owner once: when the
 * first panel that needs it is read, or, from the second run on, when its
 * owner generates it again (a push, hplvk.h chapter 7b: the owner sends
 * what others read from it with the kernel that writes it, a block of up
 * to 8 MiB). The program prints both, the bytes hpl_stats_get counted
 * during the generation and the multiplication against these, and fails
 * when they differ (zero-copy devices neither send nor receive: they work
 * on the host's copy). Over MPI ranks (sample_ranks.h) hpl_stats_get counts
 * this rank's devices only, and so does the expectation: each rank checks
 * its own devices' share of the broadcasts.
 *
 * Timing. Each of 1 + reps runs generates A and B on their owners again
 * (so every run moves the same panels), then times the multiplication up to
 * hpl_finish (blocks pushed at their generation are on the host by then); the first run also creates the pipelines (and on a GPU is
 * repeated for 500 ms: its clocks, sample_warm.h), the best of the others
 * is reported as GFLOP/s (2 n^3 flops). C is checked against a host
 * product in double: |C - ref| <= (n + 2) * FLT_EPSILON * sum_k |a||b| (the
 * bound for float summation) by matmul_host.h's mm_check_product: every
 * element when n^3 <= 2^28, else every row at spaced columns. The
 * kernel sums each panel's kb products in k order in a register from zero
 * (the padding zeros add exactly; vec4s hold four columns, not four k) and
 * adds that to C: each product is rounded once and then by at most
 * (kb - 1) + (panels - 1) <= n - 1 additions, so the error stays within
 * about n/2 FLT_EPSILON sum_k |a||b| (FLT_EPSILON is twice float's unit
 * roundoff), inside the bound.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "summa"
#include "sample_util.h"

#include "matmul_host.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <stdlib.h>

/* Fills a block with values in [-1, 1) that depend only on the element's
 * place in the whole matrix (x.origin is the block's first element), so
 * the matrix is the same whatever the grid. A 24-bit integer scaled by a
 * power of two is exact in float. */
static const char *generate_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) x; uint cols; uint seed; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x, j = hpl_global_id.y;\n"
    "    uint h = ((x.origin.x + i) * cols + x.origin.y + j) ^ seed;\n"
    "    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;\n"
    "    hpl_at2(x, i, j) = float(int(h >> 8) - 8388608) * (1.0 / 8388608.0);\n"
    "}\n";

#define SUMMA_MAX_N 32768u /* n^2 element indices fit the kernel's uint */
#define SUMMA_REPS 3       /* timed runs after the first */
#define SEED_A 0x1234567u
#define SEED_B 0x7654321u

typedef struct summa_size {
    uint64_t n, kb;
} summa_size;

/* The device grid: device (i, j) is devices[i * pc + j]; grid row i owns
 * rows [row_lo[i], row_hi[i]), grid column j columns [col_lo[j], col_hi[j])
 * (empty when lo == hi). */
typedef struct summa_grid {
    int pr, pc;
    int devices[HPL_MAX_DEVICES];
    uint64_t row_lo[HPL_MAX_DEVICES], row_hi[HPL_MAX_DEVICES];
    uint64_t col_lo[HPL_MAX_DEVICES], col_hi[HPL_MAX_DEVICES];
} summa_grid;

/* The matrices and each device's blocks of them, as subarrays. */
typedef struct summa_arrays {
    hpl_array a, b, c;
    hpl_array a_blk[HPL_MAX_DEVICES], b_blk[HPL_MAX_DEVICES], c_blk[HPL_MAX_DEVICES];
} summa_arrays;

/* The generator, and the panel update: matmul's tiled kernel compiled to
 * accumulate (C += A x B) with `tiles`. */
typedef struct summa_kernels {
    hpl_kernel generate, panel;
    mm_tiles tiles;
} summa_kernels;

/* What the generation and the multiplication moved, and what SUMMA's broadcasts should. */
typedef struct summa_traffic {
    uint64_t to_device, to_host, local;
    uint64_t copy_kernels; /* strided boxes (A's column panels) moved by the copy kernel */
    uint64_t want_to_device, want_to_host;
} summa_traffic;

/* ---- the grid ------------------------------------------------------- */

/* The most square pr x pc = p with pr <= pc: pr the largest divisor of p
 * not above sqrt(p). */
static void grid_shape(int p, int *pr, int *pc)
{
    *pr = 1;
    for (int r = 1; r * r <= p; r++)
        if (p % r == 0)
            *pr = r;
    *pc = p / *pr;
}

/* Part `index` of n split over `parts` as section 7b splits, or empty. */
static void grid_cut(uint64_t n, int parts, int index, uint64_t *lo, uint64_t *hi)
{
    if (!sample_part_rows(n, parts, index, lo, hi))
        *lo = *hi = n;
}

static void grid_make(hpl_context *ctx, uint64_t n, summa_grid *g)
{
    int ndev = sample_devices(ctx, g->devices);
    grid_shape(ndev, &g->pr, &g->pc);
    for (int i = 0; i < g->pr; i++)
        grid_cut(n, g->pr, i, &g->row_lo[i], &g->row_hi[i]);
    for (int j = 0; j < g->pc; j++)
        grid_cut(n, g->pc, j, &g->col_lo[j], &g->col_hi[j]);
}

static uint64_t grid_rows(const summa_grid *g, int i) { return g->row_hi[i] - g->row_lo[i]; }
static uint64_t grid_cols(const summa_grid *g, int j) { return g->col_hi[j] - g->col_lo[j]; }

/* Does device (i, j) own a block (and so run anything)? */
static bool grid_busy(const summa_grid *g, int i, int j) { return grid_rows(g, i) > 0 && grid_cols(g, j) > 0; }

static hpl_range grid_row_range(const summa_grid *g, int i) { return (hpl_range){g->row_lo[i], g->row_hi[i] - 1}; }
static hpl_range grid_col_range(const summa_grid *g, int j) { return (hpl_range){g->col_lo[j], g->col_hi[j] - 1}; }

/* ---- arrays and their distribution ---------------------------------- */

static int make_matrix(hpl_context *ctx, uint64_t n, const char *name, hpl_array *out)
{
    return hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {n, n}, .name = name}, out);
}

/* The three matrices and, for every busy device, its block of each. */
static int make_arrays(hpl_context *ctx, const summa_grid *g, uint64_t n, summa_arrays *m)
{
    SAMPLE_TRY(make_matrix(ctx, n, "A", &m->a));
    SAMPLE_TRY(make_matrix(ctx, n, "B", &m->b));
    SAMPLE_TRY(make_matrix(ctx, n, "C", &m->c));
    for (int i = 0; i < g->pr; i++)
        for (int j = 0; j < g->pc; j++) {
            if (!grid_busy(g, i, j))
                continue;
            const hpl_range box[2] = {grid_row_range(g, i), grid_col_range(g, j)};
            int d = i * g->pc + j;
            SAMPLE_TRY(hpl_subarray(ctx, m->a, 2, box, &m->a_blk[d]));
            SAMPLE_TRY(hpl_subarray(ctx, m->b, 2, box, &m->b_blk[d]));
            SAMPLE_TRY(hpl_subarray(ctx, m->c, 2, box, &m->c_blk[d]));
        }
    return HPL_OK;
}

static int generate_block(hpl_context *ctx, hpl_kernel k, hpl_array block, int device, uint64_t n, uint32_t seed)
{
    return hpl_eval(ctx, k, &(hpl_launch){.device = device},
                    HPL_ARGS(hpl_arr(block), hpl_u32((uint32_t)n), hpl_u32(seed)));
}

/* Each owner writes its blocks of A and B and zeroes its block of C, on
 * its device: afterwards the owner holds the only valid copy. */
static int distribute(hpl_context *ctx, const summa_kernels *k, const summa_grid *g, const summa_arrays *m,
                      uint64_t n)
{
    const float zero = 0.0f;
    for (int i = 0; i < g->pr; i++)
        for (int j = 0; j < g->pc; j++) {
            int d = i * g->pc + j;
            if (!grid_busy(g, i, j))
                continue;
            SAMPLE_TRY(generate_block(ctx, k->generate, m->a_blk[d], g->devices[d], n, SEED_A));
            SAMPLE_TRY(generate_block(ctx, k->generate, m->b_blk[d], g->devices[d], n, SEED_B));
            SAMPLE_TRY(hpl_array_fill(ctx, m->c_blk[d], &zero, g->devices[d]));
        }
    return hpl_finish(ctx);
}

/* ---- the multiplication --------------------------------------------- */

/* Panel [k0, k1): every busy device (i, j) adds A(R_i, K) B(K, C_j) to its
 * C block. The panel subarrays are the broadcast: the library brings each
 * to the devices that read it. */
static int summa_panel(hpl_context *ctx, const summa_kernels *k, const summa_grid *g, const summa_arrays *m,
                       uint64_t k0, uint64_t k1)
{
    const hpl_range panel_range = {k0, k1 - 1};
    const uint64_t ly = mm_tiles_threads(k->tiles) / k->tiles.bm;
    for (int i = 0; i < g->pr; i++)
        for (int j = 0; j < g->pc; j++) {
            int d = i * g->pc + j;
            if (!grid_busy(g, i, j))
                continue;
            hpl_array a_panel, b_panel;
            SAMPLE_TRY(hpl_subarray(ctx, m->a, HPL_RANGES(grid_row_range(g, i), panel_range), &a_panel));
            SAMPLE_TRY(hpl_subarray(ctx, m->b, HPL_RANGES(panel_range, grid_col_range(g, j)), &b_panel));
            /* The kernel's domain: the block's rows, LY invocations per BN
             * of its columns; its local size is its own, {BM, LY}. */
            hpl_launch launch = {.device = g->devices[d]};
            launch.global[0] = grid_rows(g, i);
            launch.global[1] = (grid_cols(g, j) + k->tiles.bn - 1) / k->tiles.bn * ly;
            SAMPLE_TRY(hpl_eval(ctx, k->panel, &launch,
                                HPL_ARGS(hpl_arr(m->c_blk[d]), hpl_arr(a_panel), hpl_arr(b_panel))));
        }
    return HPL_OK;
}

/* All panels, up to the end of their work; *ms the time it took. */
static int summa_multiply(hpl_context *ctx, const summa_kernels *k, const summa_grid *g, const summa_arrays *m,
                          summa_size sz, double *ms)
{
    double t0 = sample_now_ms();
    for (uint64_t k0 = 0; k0 < sz.n; k0 += sz.kb)
        SAMPLE_TRY(summa_panel(ctx, k, g, m, k0, sample_min(k0 + sz.kb, sz.n)));
    SAMPLE_TRY(hpl_finish(ctx));
    *ms = sample_now_ms() - t0;
    return HPL_OK;
}

/* ---- traffic -------------------------------------------------------- */

/* Elements device (i, j) receives by SUMMA's broadcasts: the A blocks of
 * its grid row and the B blocks of its grid column it does not own. */
static uint64_t expected_received(const summa_grid *g, uint64_t n, int i, int j)
{
    if (!grid_busy(g, i, j))
        return 0;
    return grid_rows(g, i) * (n - grid_cols(g, j)) + (n - grid_rows(g, i)) * grid_cols(g, j);
}

/* Busy devices of grid row i other than column j (readers of A(R_i, C_j)
 * besides its owner), and of grid column j other than row i (of B's). */
static bool row_has_other_reader(const summa_grid *g, int i, int j)
{
    for (int jj = 0; jj < g->pc; jj++)
        if (jj != j && grid_busy(g, i, jj))
            return true;
    return false;
}

static bool column_has_other_reader(const summa_grid *g, int i, int j)
{
    for (int ii = 0; ii < g->pr; ii++)
        if (ii != i && grid_busy(g, ii, j))
            return true;
    return false;
}

/* Elements device (i, j) sends to the host: each of its blocks that
 * another device reads, once. */
static uint64_t expected_sent(const summa_grid *g, int i, int j)
{
    if (!grid_busy(g, i, j))
        return 0;
    uint64_t block = grid_rows(g, i) * grid_cols(g, j);
    return block * ((uint64_t)row_has_other_reader(g, i, j) + (uint64_t)column_has_other_reader(g, i, j));
}

/* SUMMA's traffic in bytes, through the host: zero-copy devices work on
 * the host's copy, so they neither receive nor send. */
static void expected_traffic(hpl_context *ctx, const summa_grid *g, uint64_t n, summa_traffic *t)
{
    t->want_to_device = t->want_to_host = 0;
    for (int i = 0; i < g->pr; i++)
        for (int j = 0; j < g->pc; j++) {
            int d = g->devices[i * g->pc + j];
            if (sample_zero_copy(ctx, d) || !sample_own_device(ctx, d)) /* hpl_stats_get: this rank's */
                continue;
            t->want_to_device += expected_received(g, n, i, j) * sizeof(float);
            t->want_to_host += expected_sent(g, i, j) * sizeof(float);
        }
}

static int measure_traffic(hpl_context *ctx, summa_traffic *t)
{
    hpl_stats st;
    SAMPLE_TRY(hpl_stats_get(ctx, &st));
    t->to_device = st.total.to_device_bytes;
    t->to_host = st.total.to_host_bytes;
    t->local = st.total.local_bytes;
    t->copy_kernels = st.total.copy_kernels;
    return HPL_OK;
}

/* Prints measured against expected; true when they agree. */
static bool report_traffic(const summa_traffic *t, uint64_t n)
{
    printf("traffic: %" PRIu64 " bytes to devices, %" PRIu64 " to the host, %" PRIu64
           " within devices (matrix %" PRIu64 " bytes); %" PRIu64 " boxes by the copy kernel\n",
           t->to_device, t->to_host, t->local, n * n * (uint64_t)sizeof(float), t->copy_kernels);
    printf("summa:   %" PRIu64 " bytes to devices (each block to the rest of its grid row or column), %" PRIu64
           " to the host (each block read elsewhere leaves its owner once)\n",
           t->want_to_device, t->want_to_host);
    bool ok = t->to_device == t->want_to_device && t->to_host == t->want_to_host;
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": the generation and the multiplication moved other bytes than SUMMA's broadcasts\n");
    return ok;
}

/* ---- checking ------------------------------------------------------- */

/* Host copies of A, B and C as read back. */
typedef struct summa_host {
    float *a, *b, *c;
} summa_host;

/* C against the double-precision product, by matmul_host.h's check. */
static bool check_product(const summa_host *h, uint64_t n)
{
    const mm_problem p = {.size = {(uint32_t)n, (uint32_t)n, (uint32_t)n}, .a = h->a, .b = h->b, .c = h->c};
    return mm_check_product(&p);
}

/* Reads A, B and C back (the library gathers the blocks from their owners). */
static int read_back(hpl_context *ctx, const summa_arrays *m, uint64_t n, const summa_host *h)
{
    size_t bytes = n * n * sizeof(float);
    SAMPLE_TRY(hpl_array_read(ctx, m->a, h->a, bytes));
    SAMPLE_TRY(hpl_array_read(ctx, m->b, h->b, bytes));
    SAMPLE_TRY(hpl_array_read(ctx, m->c, h->c, bytes));
    return HPL_OK;
}

/* ---- runs ----------------------------------------------------------- */

/* The generator and the panel kernel. The tiles are the largest that
 * every device of the grid can run (MATMUL_TILES when set): as in matmul,
 * the device allowing the fewest invocations per work-group decides. */
static int make_kernels(hpl_context *ctx, const summa_grid *g, summa_kernels *k)
{
    uint32_t max_invocations = UINT32_MAX;
    for (int d = 0; d < g->pr * g->pc; d++) {
        hpl_device_info info;
        SAMPLE_TRY(hpl_device_get_info(ctx, g->devices[d], &info));
        max_invocations = sample_min(max_invocations, info.max_workgroup_invocations);
    }
    if (!mm_choose_tiles(max_invocations, &k->tiles))
        return HPL_ERROR_INVALID_ARGUMENT;
    char source[MM_KERNEL_SOURCE_CAP];
    const char *panel_src = mm_kernel_source(source, sizeof source, MM_HPLVK_ARGS, k->tiles, true);
    if (!panel_src)
        return HPL_ERROR_INVALID_ARGUMENT;
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = generate_src, .name = "generate"}},
                                 &k->generate));
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = panel_src, .name = "summa_panel"}},
                                 &k->panel));
    return HPL_OK;
}

/* One run from freshly distributed A and B and a zero C; its ms. */
static int run_once(hpl_context *ctx, const summa_kernels *k, const summa_grid *g, const summa_arrays *m,
                    summa_size sz, double *ms)
{
    SAMPLE_TRY(hpl_stats_reset(ctx));
    SAMPLE_TRY(distribute(ctx, k, g, m, sz.n));
    return summa_multiply(ctx, k, g, m, sz, ms);
}

/* An untimed run (repeated for SAMPLE_WARM_MS on a GPU: sample_warm.h),
 * then SUMMA_REPS timed ones: *best_ms the fastest; *t the last run's
 * traffic (every run moves the same). */
static int run_reps(hpl_context *ctx, const summa_kernels *k, const summa_grid *g, const summa_arrays *m,
                    summa_size sz, double *best_ms, summa_traffic *t)
{
    double ms;
    SAMPLE_WARM_UP(ctx, run_once(ctx, k, g, m, sz, &ms));
    for (int r = 0; r < SUMMA_REPS; r++) {
        SAMPLE_TRY(run_once(ctx, k, g, m, sz, &ms));
        *best_ms = r == 0 ? ms : fmin(*best_ms, ms);
    }
    return measure_traffic(ctx, t);
}

/* The whole program in a context: *traffic_ok whether the bytes moved are
 * SUMMA's. */
static int run_context(hpl_context *ctx, summa_size sz, const summa_host *h, char *devnames, size_t cap,
                       double *best_ms, bool *traffic_ok)
{
    summa_grid g;
    summa_kernels k;
    summa_arrays m = {0};
    summa_traffic t;
    grid_make(ctx, sz.n, &g);
    SAMPLE_TRY(sample_device_list(ctx, g.devices, g.pr * g.pc, devnames, cap));
    printf("grid %dx%d, n = %" PRIu64 ", panels of %" PRIu64 " (%" PRIu64 " panels)\n", g.pr, g.pc, sz.n, sz.kb,
           (sz.n + sz.kb - 1) / sz.kb);
    SAMPLE_TRY(make_kernels(ctx, &g, &k));
    SAMPLE_TRY(make_arrays(ctx, &g, sz.n, &m));
    SAMPLE_TRY(run_reps(ctx, &k, &g, &m, sz, best_ms, &t));
    expected_traffic(ctx, &g, sz.n, &t);
    *traffic_ok = report_traffic(&t, sz.n);
    SAMPLE_TRY(read_back(ctx, &m, sz.n, h));
    sample_checksum_print("C", h->c, sz.n * sz.n * sizeof(float));
    return HPL_OK;
}

/* Everything but the RESULT line; returns whether the run is verified. */
static bool run_all(summa_size sz, const summa_host *h, char *devnames, size_t cap, double *best_ms)
{
    hpl_context *ctx = NULL;
    if (sample_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
        return false;
    }
    bool traffic_ok = false;
    bool ok = run_context(ctx, sz, h, devnames, cap, best_ms, &traffic_ok) == HPL_OK && traffic_ok &&
              check_product(h, sz.n);
    /* An error that surfaced asynchronously fails the run too. */
    ok = hpl_finish(ctx) == HPL_OK && ok;
    hpl_context_destroy(ctx);
    return sample_log_clean() && ok;
}

/* ---- command line --------------------------------------------------- */

static bool parse_args(int argc, char **argv, summa_size *sz)
{
    *sz = (summa_size){256, 32};
    if (argc > 3) {
        fprintf(stderr, SAMPLE_NAME ": too many arguments\n");
        return false;
    }
    if (argc > 1 && !sample_parse_u64_range(argv[1], 1, SUMMA_MAX_N, &sz->n)) {
        fprintf(stderr, SAMPLE_NAME ": n must be a whole number from 1 to %u, not \"%s\"\n", SUMMA_MAX_N, argv[1]);
        return false;
    }
    if (argc > 2 && !sample_parse_u64_range(argv[2], 1, sz->n, &sz->kb)) {
        fprintf(stderr, SAMPLE_NAME ": kb must be a whole number from 1 to n = %" PRIu64 ", not \"%s\"\n", sz->n,
                argv[2]);
        return false;
    }
    /* The default panel width, not asked for, shrinks to a small n. */
    if (argc <= 2 && sz->kb > sz->n)
        sz->kb = sz->n;
    return true;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    summa_size sz;
    if (!parse_args(argc, argv, &sz)) {
        fprintf(stderr, "usage: %s [n [kb]]   (C = A x B, n x n floats, panels of kb columns; default 256 32)\n",
                argv[0]);
        return 2;
    }
    size_t bytes = sz.n * sz.n * sizeof(float);
    summa_host h = {malloc(bytes), malloc(bytes), malloc(bytes)};
    char devnames[4096] = "none";
    double best = 0.0;
    bool verified = false;
    if (h.a && h.b && h.c)
        verified = run_all(sz, &h, devnames, sizeof devnames, &best);
    else
        fprintf(stderr, SAMPLE_NAME ": out of host memory (3 matrices of %zu bytes)\n", bytes);
    free(h.a);
    free(h.b);
    free(h.c);
    double n = (double)sz.n, gflops = best > 0.0 ? 2.0 * n * n * n / (best * 1e-3) / 1e9 : 0.0;
    printf("RESULT name=summa devices=%s size=%" PRIu64 "x%" PRIu64 " time_ms=%.3f rate=%.4gGFLOP/s verified=%s%s\n",
           devnames, sz.n, sz.kb, best, gflops, sample_verified_everywhere(verified) ? "yes" : "no",
           sample_ranks_field());
    return verified ? 0 : 1;
}
