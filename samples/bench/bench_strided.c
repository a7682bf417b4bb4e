/*
 * bench_strided — a column panel A[:, k:k+kb] of a row-major n x n float
 * matrix (one contiguous run of kb floats per row: n short runs) between
 * the host and a device, moved by the library's copy kernel (one dispatch)
 * and as vkCmdCopyBuffer regions (one per run), next to a row panel of the
 * same bytes (one run), in one run on the same device.
 *
 *   bench_strided [n [rounds]]
 *       n       matrix order, 1 to 32768 (default 16384 on a GPU, 2048
 *               otherwise, 256 under validation; a default too big for the
 *               device or the host is halved until it fits)
 *       rounds  rounds per panel width, 1 to 1000 (default 5, 1 under
 *               validation)
 *
 * Device 0 of the context's devices (HPLVK_DEVICES chooses), zero copy off
 * (so that Lavapipe keeps a device copy of its own and data really moves),
 * in two contexts open side by side, each with the whole matrix resident
 * on device 0 and on the host (so that a panel lives inside the matrix's
 * buffer, strided on both sides, as SUMMA's panels do):
 *   kernel   HPLVK_STRIDED_COPY=kernel (set while hpl_context_create runs,
 *            the user's value restored after): the column panel goes by
 *            the copy kernel where the library's rule says (16 runs or
 *            more, each under 64 KiB, a device with shaderInt64);
 *   regions  HPLVK_STRIDED_COPY=dma: the same panel as one copy region
 *            per row;
 *   rows     the row panel A[k:k+kb, :] (the same bytes, one run) in the
 *            kernel context: the ceiling a strided panel can approach.
 * For panel widths kb in {1, 8, 32, 128, 512, 2048} up to n, k in the
 * middle of the matrix (a multiple of 4: 16-byte aligned runs), both
 * directions:
 *   d2h  a kernel on device 0 writes the panel (untimed, waited); timed:
 *        hpl_array_access(HPL_READ) of the panel subarray; the host then
 *        checks every element;
 *   h2d  the host writes the panel through hpl_array_access(HPL_WRITE)
 *        (untimed); timed: hpl_array_prefetch(device 0) + hpl_array_wait;
 *        a kernel on device 0 then checks every element.
 * Every timed copy must move exactly the panel's bytes, that way only
 * (hpl_stats); the kernel context's column panel must have gone by the
 * copy kernel (hpl_device_stats.copy_kernels > 0) where the rule says so,
 * and the regions context's and every row panel never. Each element's
 * value is a hash of its place in the matrix and of the round, so stale
 * data and misplaced elements are both caught.
 *
 * One untimed warm-up round first; then, per width, rounds that run every
 * measurement once in turn (so a slow phase of a shared machine hits all
 * alike). The table gives the median round's ms and GB/s (1e9 bytes/s) and
 * the speedup regions ms / kernel ms. The RESULT line gives kb = 128 (or
 * the largest width measured below it): time_ms the kernel context's
 * median d2h + h2d, rate their GB/s; size n x that kb; verified when every
 * check passed and the library and the validation layer logged no error.
 * The exit status is non-zero when not verified, 2 on a usage error.
 *
 * Validation: HPLVK_VALIDATION=1 turns the layer on in both contexts; any
 * message fails the run, and the defaults shrink (timings are not
 * representative then).
 */
#define _POSIX_C_SOURCE 200809L
#define SAMPLE_NAME "bench_strided"
#include "bench_vk.h"

#include <errno.h>

#define MAX_N 32768u
#define MAX_ROUNDS 1000u
#define RESULT_KB 128u
/* The library's rule for the copy kernel (HPLVK_STRIDED_COPY, chapter 8). */
#define KERNEL_MIN_RUNS 16u
#define KERNEL_RUN_BYTES (64u * 1024u)

static const uint64_t kb_list[] = {1, 8, 32, 128, 512, 2048};
#define KBS (sizeof kb_list / sizeof *kb_list)

enum { KERNEL_CTX, DMA_CTX, CTXS };
static const char *const ctx_policy[CTXS] = {"kernel", "dma"};

/* The column panel in the kernel context, in the dma context, and the row
 * panel in the kernel context. */
enum { COLS_KERNEL, COLS_REGIONS, ROWS, WAYS };

enum { D2H, H2D, DIRS };
static const char *const dir_name[DIRS] = {"d2h", "h2d"};

/* ======================================================================
 * The pattern: element (i, j) of round `seed` is a hash of i * n + j,
 * below 2^24 so that the float holds it exactly
 * ====================================================================== */

#define PATTERN_GLSL                                                                                         \
    "float pattern(uint idx, uint seed) { return float(((idx * 2654435761u) ^ (seed * 0x9E3779B9u)) >> 8); }\n"

static inline float pattern(uint32_t idx, uint32_t seed)
{
    return (float)(((idx * 2654435761u) ^ (seed * 0x9E3779B9u)) >> 8);
}

/* Writes the pattern into the panel (a subarray: x.origin is its place in
 * the matrix). */
static const char stamp_src[] = "#include <hplvk.glsl>\n"
                                "hpl_args { hpl_out(float, 2) x; uint n; uint seed; };\n" PATTERN_GLSL
                                "void main() {\n"
                                "    uvec2 id = hpl_global_id.xy;\n"
                                "    hpl_at2(x, id.x, id.y) = pattern((x.origin.x + id.x) * n + x.origin.y + id.y, seed);\n"
                                "}\n";
/* Counts the panel's elements that differ from the pattern. */
static const char check_src[] = "#include <hplvk.glsl>\n"
                                "hpl_args { hpl_in(float, 2) x; hpl_inout(uint, 1) bad; uint n; uint seed; };\n" PATTERN_GLSL
                                "void main() {\n"
                                "    uvec2 id = hpl_global_id.xy;\n"
                                "    if (hpl_at2(x, id.x, id.y) != pattern((x.origin.x + id.x) * n + x.origin.y + id.y, seed))\n"
                                "        atomicAdd(hpl_at(bad, 0), 1u);\n"
                                "}\n";

/* ======================================================================
 * A context: the matrix, the kernels, the mismatch counter
 * ====================================================================== */

typedef struct side {
    hpl_context *ctx;
    hpl_device_info info;
    hpl_array a, bad;
    hpl_kernel stamp, check;
    bool made_a, made_bad, made_stamp, made_check;
} side;

/* Creates the context with HPLVK_STRIDED_COPY=policy (read when its
 * devices open), then puts the user's value back. */
static bool side_open(side *s, const char *policy)
{
    const char *old = getenv("HPLVK_STRIDED_COPY");
    char *saved = old ? strdup(old) : NULL;
    if (old && !saved) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
        return false;
    }
    int rc = HPL_OK;
    if (setenv("HPLVK_STRIDED_COPY", policy, 1) != 0) {
        fprintf(stderr, SAMPLE_NAME ": setenv(HPLVK_STRIDED_COPY) failed: %s\n", strerror(errno));
        rc = HPL_ERROR_OUT_OF_HOST_MEMORY;
    } else {
        /* Zero copy off: a CPU device opened once would otherwise work on
         * the host's copy, and nothing would move. */
        rc = hpl_context_create(&(hpl_context_desc){.log = sample_log, .zero_copy = HPL_ZERO_COPY_OFF}, &s->ctx);
        if (rc != HPL_OK)
            fprintf(stderr, SAMPLE_NAME ": hpl_context_create (HPLVK_STRIDED_COPY=%s) failed: %s: %s\n", policy,
                    hpl_error_name(rc), hpl_last_error());
    }
    int restored = saved ? setenv("HPLVK_STRIDED_COPY", saved, 1) : unsetenv("HPLVK_STRIDED_COPY");
    free(saved);
    if (restored != 0) {
        fprintf(stderr, SAMPLE_NAME ": restoring HPLVK_STRIDED_COPY failed: %s\n", strerror(errno));
        return false;
    }
    if (rc != HPL_OK) {
        s->ctx = NULL;
        return false;
    }
    BENCH_HPL(hpl_device_get_info(s->ctx, 0, &s->info));
    return true;
}

/* The matrix, written on the host (every page touched) and prefetched
 * whole to device 0: both copies valid, the device's one buffer. */
static bool side_prepare(side *s, uint64_t n)
{
    BENCH_HPL(hpl_array_create(s->ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {n, n}, .name = "A"}, &s->a));
    s->made_a = true;
    BENCH_HPL(hpl_array_create(s->ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {1}, .name = "bad"}, &s->bad));
    s->made_bad = true;
    BENCH_HPL(hpl_kernel_create(s->ctx, &(hpl_kernel_desc){.source = {.glsl = stamp_src, .name = "stamp"}},
                                &s->stamp));
    s->made_stamp = true;
    BENCH_HPL(hpl_kernel_create(s->ctx, &(hpl_kernel_desc){.source = {.glsl = check_src, .name = "check"}},
                                &s->check));
    s->made_check = true;
    float *p;
    BENCH_HPL(hpl_array_access(s->ctx, s->a, HPL_WRITE, (void **)&p));
    memset(p, 0, n * n * sizeof *p);
    BENCH_HPL(hpl_array_prefetch(s->ctx, s->a, 0));
    BENCH_HPL(hpl_array_wait(s->ctx, s->a));
    return true;
}

/* Destroys what side_open and side_prepare made; false when a call failed. */
static bool side_close(side *s)
{
    bool ok = true;
    if (!s->ctx)
        return true;
    if (s->made_stamp && hpl_kernel_destroy(s->ctx, s->stamp) != HPL_OK)
        ok = false;
    if (s->made_check && hpl_kernel_destroy(s->ctx, s->check) != HPL_OK)
        ok = false;
    if (s->made_bad && hpl_array_destroy(s->ctx, s->bad) != HPL_OK)
        ok = false;
    if (s->made_a && hpl_array_destroy(s->ctx, s->a) != HPL_OK)
        ok = false;
    if (ok && hpl_finish(s->ctx) != HPL_OK)
        ok = false;
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": cleanup failed: %s\n", hpl_last_error());
    hpl_context_destroy(s->ctx);
    memset(s, 0, sizeof *s);
    return ok;
}

/* ======================================================================
 * One measurement: a panel one way, one direction
 * ====================================================================== */

typedef struct panel {
    side *s;
    hpl_array sub;
    uint64_t n, row0, rows, col0, cols, stride; /* stride: host elements per row (the matrix's) */
    uint64_t bytes;
    /* copy_kernels of a timed copy: 1 more than zero, 0 exactly zero, -1 anything */
    int want_kernels;
    const char *what;
} panel;

static bool panel_make(panel *pn, side *s, uint64_t n, uint64_t row0, uint64_t rows, uint64_t col0, uint64_t cols,
                       int want_kernels, const char *what)
{
    *pn = (panel){.n = n, .row0 = row0, .rows = rows, .col0 = col0, .cols = cols,
                  .bytes = rows * cols * sizeof(float), .want_kernels = want_kernels, .what = what};
    BENCH_HPL(hpl_subarray(s->ctx, s->a, HPL_RANGES({row0, row0 + rows - 1}, {col0, col0 + cols - 1}), &pn->sub));
    pn->s = s; /* made: panel_free destroys it */
    hpl_array_info info;
    BENCH_HPL(hpl_array_get_info(s->ctx, pn->sub, &info));
    pn->stride = info.host_stride[0];
    return true;
}

static bool panel_free(panel *pn)
{
    if (pn->s)
        BENCH_HPL(hpl_array_destroy(pn->s->ctx, pn->sub));
    pn->s = NULL;
    return true;
}

/* Exactly the panel moved, in the direction asked, by the path asked. */
static bool panel_moved(const panel *pn, int dir, uint64_t *copy_kernels)
{
    hpl_stats st;
    BENCH_HPL(hpl_stats_get(pn->s->ctx, &st));
    const hpl_device_stats *d = &st.device[0];
    uint64_t want_in = dir == H2D ? pn->bytes : 0, want_out = dir == D2H ? pn->bytes : 0;
    *copy_kernels = d->copy_kernels;
    bool ok = true;
    if (d->to_device_bytes != want_in || d->to_host_bytes != want_out) {
        fprintf(stderr,
                SAMPLE_NAME ": %s %s: device 0 moved %" PRIu64 " bytes in and %" PRIu64 " out, expected %" PRIu64
                            " and %" PRIu64 "\n",
                pn->what, dir_name[dir], d->to_device_bytes, d->to_host_bytes, want_in, want_out);
        ok = false;
    }
    if ((pn->want_kernels == 1 && d->copy_kernels == 0) || (pn->want_kernels == 0 && d->copy_kernels != 0)) {
        fprintf(stderr, SAMPLE_NAME ": %s %s: %" PRIu64 " boxes went by the copy kernel, expected %s\n", pn->what,
                dir_name[dir], d->copy_kernels, pn->want_kernels ? "some" : "none");
        ok = false;
    }
    return ok;
}

/* d2h: a kernel writes the panel on device 0 (untimed); timed: the host
 * read; then every element checked on the host. */
static bool panel_d2h(const panel *pn, uint32_t seed, double *ms, uint64_t *copy_kernels)
{
    side *s = pn->s;
    const hpl_launch launch = {.device = 0};
    BENCH_HPL(hpl_eval(s->ctx, s->stamp, &launch, HPL_ARGS(hpl_arr(pn->sub), hpl_u32((uint32_t)pn->n), hpl_u32(seed))));
    BENCH_HPL(hpl_array_wait(s->ctx, pn->sub));
    BENCH_HPL(hpl_stats_reset(s->ctx));
    const float *p;
    double t0 = sample_now_ms();
    BENCH_HPL(hpl_array_access(s->ctx, pn->sub, HPL_READ, (void **)&p));
    *ms = sample_now_ms() - t0;
    if (!panel_moved(pn, D2H, copy_kernels))
        return false;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < pn->rows; i++) {
        const float *row = p + i * pn->stride;
        uint32_t base = (uint32_t)((pn->row0 + i) * pn->n + pn->col0);
        for (uint64_t j = 0; j < pn->cols; j++) {
            float want = pattern(base + (uint32_t)j, seed);
            if (row[j] != want && bad++ < 3)
                fprintf(stderr, SAMPLE_NAME ": %s d2h: element (%" PRIu64 ", %" PRIu64 ") = %.1f, expected %.1f\n",
                        pn->what, pn->row0 + i, pn->col0 + j, (double)row[j], (double)want);
        }
    }
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": %s d2h: %" PRIu64 " of %" PRIu64 " elements wrong on the host\n", pn->what, bad,
                pn->rows * pn->cols);
    return bad == 0;
}

/* h2d: the host writes the panel (untimed); timed: prefetch to device 0
 * and wait; then every element checked there by a kernel. */
static bool panel_h2d(const panel *pn, uint32_t seed, double *ms, uint64_t *copy_kernels)
{
    side *s = pn->s;
    float *p;
    BENCH_HPL(hpl_array_access(s->ctx, pn->sub, HPL_WRITE, (void **)&p));
    for (uint64_t i = 0; i < pn->rows; i++) {
        float *row = p + i * pn->stride;
        uint32_t base = (uint32_t)((pn->row0 + i) * pn->n + pn->col0);
        for (uint64_t j = 0; j < pn->cols; j++)
            row[j] = pattern(base + (uint32_t)j, seed);
    }
    BENCH_HPL(hpl_stats_reset(s->ctx));
    double t0 = sample_now_ms();
    BENCH_HPL(hpl_array_prefetch(s->ctx, pn->sub, 0));
    BENCH_HPL(hpl_array_wait(s->ctx, pn->sub));
    *ms = sample_now_ms() - t0;
    if (!panel_moved(pn, H2D, copy_kernels))
        return false;
    const hpl_launch launch = {.device = 0};
    uint32_t bad = 0;
    BENCH_HPL(hpl_array_write(s->ctx, s->bad, &bad, sizeof bad));
    BENCH_HPL(hpl_eval(s->ctx, s->check, &launch,
                       HPL_ARGS(hpl_arr(pn->sub), hpl_arr(s->bad), hpl_u32((uint32_t)pn->n), hpl_u32(seed))));
    BENCH_HPL(hpl_array_read(s->ctx, s->bad, &bad, sizeof bad));
    if (bad)
        fprintf(stderr, SAMPLE_NAME ": %s h2d: %u of %" PRIu64 " elements wrong on device 0\n", pn->what, bad,
                pn->rows * pn->cols);
    return bad == 0;
}

/* ======================================================================
 * One panel width: every way, both directions, interleaved rounds
 * ====================================================================== */

typedef struct width_result {
    uint64_t kb, bytes, runs;          /* runs of the column panel (1 at kb = n: whole rows) */
    double ms[WAYS][DIRS];           /* medians */
    uint64_t copy_kernels[WAYS][DIRS]; /* of the last round's copy */
} width_result;

/* Whether the library's rule sends the kernel context's column panel by
 * the copy kernel: a device with shaderInt64, n runs (16 or more) of kb
 * floats (under 64 KiB each, and not whole rows, which make one run). */
static bool kernel_expected(const side *s, uint64_t n, uint64_t kb)
{
    return s->info.int64 && kb < n && n >= KERNEL_MIN_RUNS && kb * sizeof(float) < KERNEL_RUN_BYTES;
}

/* Runs `rounds` rounds of width kb (timed: rounds >= 1 and res given;
 * warm-up otherwise), with seeds from *seed on. */
static bool run_width(side sides[CTXS], uint64_t n, uint64_t kb, int rounds, uint32_t *seed, width_result *res)
{
    uint64_t k = ((n - kb) / 2) & ~(uint64_t)3; /* the middle, 16-byte aligned */
    panel pn[WAYS] = {{0}};
    double *ms = calloc((size_t)rounds * WAYS * DIRS, sizeof *ms);
    bool ok = ms != NULL;
    if (!ok)
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
    int want = kernel_expected(&sides[KERNEL_CTX], n, kb) ? 1 : -1;
    ok = ok && panel_make(&pn[COLS_KERNEL], &sides[KERNEL_CTX], n, 0, n, k, kb, want, "kernel (column panel)");
    ok = ok && panel_make(&pn[COLS_REGIONS], &sides[DMA_CTX], n, 0, n, k, kb, 0, "regions (column panel)");
    ok = ok && panel_make(&pn[ROWS], &sides[KERNEL_CTX], n, k, kb, 0, n, 0, "rows (row panel)");
    for (int r = 0; ok && r < rounds; r++)
        for (int w = 0; ok && w < WAYS; w++) {
            double *m = ms + ((size_t)r * WAYS + (size_t)w) * DIRS;
            uint64_t ck[DIRS] = {0, 0};
            ok = panel_d2h(&pn[w], (*seed)++, &m[D2H], &ck[D2H]) && panel_h2d(&pn[w], (*seed)++, &m[H2D], &ck[H2D]);
            if (ok && res)
                for (int d = 0; d < DIRS; d++)
                    res->copy_kernels[w][d] = ck[d];
        }
    if (ok && res) {
        res->kb = kb;
        res->bytes = pn[COLS_KERNEL].bytes;
        res->runs = kb < n ? n : 1;
        double *v = malloc((size_t)rounds * sizeof *v);
        ok = v != NULL;
        for (int w = 0; ok && w < WAYS; w++)
            for (int d = 0; d < DIRS; d++) {
                for (int r = 0; r < rounds; r++)
                    v[r] = ms[((size_t)r * WAYS + (size_t)w) * DIRS + (size_t)d];
                res->ms[w][d] = bench_stats(v, rounds).median;
            }
        free(v);
        if (!ok)
            fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
    }
    /* At kb = n both panels of the kernel context are the whole matrix:
     * one subarray (the same box gives the same one), destroyed once. */
    if (pn[ROWS].s && pn[COLS_KERNEL].s && pn[ROWS].sub.id == pn[COLS_KERNEL].sub.id)
        pn[ROWS].s = NULL;
    for (int w = 0; w < WAYS; w++)
        ok = panel_free(&pn[w]) && ok;
    free(ms);
    return ok;
}

/* ======================================================================
 * Arguments, sizes, output
 * ====================================================================== */

typedef struct config {
    uint64_t n; /* 0 until chosen */
    uint64_t rounds;
    bool n_given, rounds_given, validation;
} config;

static bool parse_args(int argc, char **argv, config *cfg)
{
    if (argc > 3) {
        fprintf(stderr, SAMPLE_NAME ": too many arguments\n");
        return false;
    }
    if (argc > 1 && !sample_parse_u64_range(argv[1], 1, MAX_N, &cfg->n)) {
        fprintf(stderr, SAMPLE_NAME ": n must be a whole number from 1 to %u, not \"%s\"\n", MAX_N, argv[1]);
        return false;
    }
    if (argc > 2 && !sample_parse_u64_range(argv[2], 1, MAX_ROUNDS, &cfg->rounds)) {
        fprintf(stderr, SAMPLE_NAME ": rounds must be a whole number from 1 to %u, not \"%s\"\n", MAX_ROUNDS,
                argv[2]);
        return false;
    }
    cfg->n_given = argc > 1;
    cfg->rounds_given = argc > 2;
    cfg->validation = bench_validation_env();
    return true;
}

/* Why an n x n matrix in each of the two contexts does not fit device 0
 * or the host; NULL when it fits. */
static const char *does_not_fit(const hpl_device_info *info, uint64_t n)
{
    uint64_t bytes = n * n * sizeof(float), heap = bench_device_heap(info), ram = bench_host_ram();
    bool cpu = info->type == HPL_DEVICE_CPU;
    /* Per context: the host's copy and the device's (host memory too on a
     * CPU device); the panels live inside the matrix's buffers. */
    uint64_t host_need = 2 * bytes * (cpu ? 2 : 1);
    if (bytes > info->max_buffer_size)
        return "the matrix is larger than the device's largest buffer";
    if (info->memory_limit && bytes + (1u << 20) > info->memory_limit)
        return "the matrix exceeds the device's memory limit (HPLVK_DEVICE_MEMORY_LIMIT)";
    if (heap && 4 * bytes > heap)
        return "two contexts' matrices exceed half the device's local heap";
    if (ram && host_need > ram / 2)
        return "the matrices' copies exceed half the host's memory";
    return NULL;
}

/* Defaults and the size check; false on a usage error. */
static bool choose_size(config *cfg, const hpl_device_info *info)
{
    if (!cfg->rounds_given)
        cfg->rounds = cfg->validation ? 1 : 5;
    if (!cfg->n_given) {
        cfg->n = cfg->validation ? 256 : (info->type & HPL_DEVICE_GPU) ? 16384 : 2048;
        while (cfg->n > 16 && does_not_fit(info, cfg->n))
            cfg->n /= 2;
    }
    const char *why = does_not_fit(info, cfg->n);
    if (why)
        fprintf(stderr, SAMPLE_NAME ": n = %" PRIu64 " is too large: %s\n", cfg->n, why);
    return why == NULL;
}

static void print_header(const config *cfg, const hpl_device_info *info)
{
    printf("bench_strided: device 0: %s (shaderInt64 %s, host import %s, %s transfer queue); n = %" PRIu64
           " (%.1f MiB matrix); %" PRIu64 " round%s per width, medians%s\n",
           info->name, info->int64 ? "yes" : "no", info->host_import ? "yes" : "no",
           info->dedicated_transfer_queue ? "a dedicated" : "no dedicated", cfg->n,
           (double)(cfg->n * cfg->n * sizeof(float)) / BENCH_MIB, cfg->rounds, cfg->rounds == 1 ? "" : "s",
           cfg->validation ? " (VALIDATION ON: timings not representative)" : "");
    printf("bench_strided: kernel  = column panel A[:, k:k+kb] (n runs of kb floats), HPLVK_STRIDED_COPY=kernel "
           "(one copy-kernel dispatch)\n");
    printf("bench_strided: regions = the same panel, HPLVK_STRIDED_COPY=dma (one vkCmdCopyBuffer region per row)\n");
    printf("bench_strided: rows    = row panel A[k:k+kb, :] of the same bytes (one run), kernel context: the ceiling\n");
    printf("bench_strided: d2h = a kernel writes the panel on device 0 (untimed), then hpl_array_access(HPL_READ); "
           "h2d = the host writes it (untimed), then hpl_array_prefetch(device 0) + hpl_array_wait; "
           "every element checked\n");
    printf("%6s %11s %4s %10s %7s %11s %7s %10s %7s %9s  %s\n", "kb", "bytes", "dir", "kernel ms", "GB/s",
           "regions ms", "GB/s", "rows ms", "GB/s", "speedup", "kernel context moved it by");
}

static double gbs(uint64_t bytes, double ms)
{
    return ms > 0.0 ? (double)bytes / (ms * 1e6) : 0.0;
}

static void print_width(const width_result *r)
{
    for (int d = 0; d < DIRS; d++) {
        const double *k = &r->ms[COLS_KERNEL][d], *g = &r->ms[COLS_REGIONS][d], *w = &r->ms[ROWS][d];
        printf("%6" PRIu64 " %11" PRIu64 " %4s %10.3f %7.2f %11.3f %7.2f %10.3f %7.2f %8.2fx  %s\n", r->kb, r->bytes,
               dir_name[d], *k, gbs(r->bytes, *k), *g, gbs(r->bytes, *g), *w, gbs(r->bytes, *w),
               *k > 0.0 ? *g / *k : 0.0,
               r->copy_kernels[COLS_KERNEL][d] ? "copy kernel"
               : r->runs == 1                  ? "one region (kb = n: one run)"
                                               : "regions");
    }
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    config cfg = {0};
    if (!parse_args(argc, argv, &cfg)) {
        fprintf(stderr, "usage: %s [n [rounds]]   (n x n floats, column panels of 1 to 2048 columns)\n", argv[0]);
        return 2;
    }
    side sides[CTXS] = {{0}};
    width_result res[KBS];
    memset(res, 0, sizeof res);
    size_t measured = 0;
    bool ok = side_open(&sides[KERNEL_CTX], ctx_policy[KERNEL_CTX]);
    if (ok && !choose_size(&cfg, &sides[KERNEL_CTX].info)) {
        side_close(&sides[KERNEL_CTX]);
        fprintf(stderr, "usage: %s [n [rounds]]\n", argv[0]);
        return 2;
    }
    ok = ok && side_open(&sides[DMA_CTX], ctx_policy[DMA_CTX]);
    if (ok && strcmp(sides[DMA_CTX].info.name, sides[KERNEL_CTX].info.name) != 0) {
        fprintf(stderr, SAMPLE_NAME ": the two contexts opened different devices 0: %s and %s\n",
                sides[KERNEL_CTX].info.name, sides[DMA_CTX].info.name);
        ok = false;
    }
    for (int c = 0; ok && c < CTXS; c++)
        ok = side_prepare(&sides[c], cfg.n);
    if (ok)
        print_header(&cfg, &sides[KERNEL_CTX].info);
    uint32_t seed = 1;
    /* Warm-up (untimed): the first copies and kernels of each context. */
    ok = ok && run_width(sides, cfg.n, kb_list[0], 1, &seed, NULL);
    for (size_t i = 0; ok && i < KBS && kb_list[i] <= cfg.n; i++) {
        ok = run_width(sides, cfg.n, kb_list[i], (int)cfg.rounds, &seed, &res[i]);
        if (ok) {
            print_width(&res[i]);
            measured = i + 1;
        }
    }

    char devname[300] = "";
    sample_append_name(devname, sizeof devname, sides[KERNEL_CTX].ctx ? sides[KERNEL_CTX].info.name : "none");
    for (int c = CTXS - 1; c >= 0; c--)
        ok = side_close(&sides[c]) && ok;
    bool verified = ok && measured > 0 && sample_log_clean();

    /* The RESULT width: 128, or the largest measured below it (kb_list is
     * ascending and starts at 1). */
    const width_result *best = NULL;
    for (size_t i = 0; i < measured && res[i].kb <= RESULT_KB; i++)
        best = &res[i];
    double ms = best ? best->ms[COLS_KERNEL][D2H] + best->ms[COLS_KERNEL][H2D] : 0.0;
    if (best)
        printf("bench_strided: kb = %" PRIu64 ": kernel %.3f ms, regions %.3f ms (d2h + h2d medians): %.2fx\n",
               best->kb, ms, best->ms[COLS_REGIONS][D2H] + best->ms[COLS_REGIONS][H2D],
               ms > 0.0 ? (best->ms[COLS_REGIONS][D2H] + best->ms[COLS_REGIONS][H2D]) / ms : 0.0);
    printf("RESULT name=bench_strided devices=%s size=%" PRIu64 "x%" PRIu64 " time_ms=%.3f rate=%.2fGB/s verified=%s\n",
           devname[0] ? devname : "none", cfg.n, best ? best->kb : 0, ms, best ? gbs(2 * best->bytes, ms) : 0.0,
           verified ? "yes" : "no");
    return verified ? 0 : 1;
}
