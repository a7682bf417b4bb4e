/*
 * matmul — C = A x B in float, split by rows over every device of the
 * context with one eval: the paper's MMRow (fig. 5),
 * eval(mxProduct)(PART1(c), PART1(a), b). One device or many: the same
 * program, the same kernel.
 *
 *   matmul [n [reps]]        n x n x n (default 256)
 *   matmul M N K [reps]      C is M x N, A is M x K, B is K x N
 *
 * C and A are split by rows (hpl_part1(c, 0), hpl_part1(a, 0)): device i
 * gets rows of both, the parts differing by at most one row, the larger
 * first; B is not annotated, so every device gets all of it. With M below
 * the device count the last devices get no part and run nothing. Prints
 * which rows each device got (hpl_array_part), and checks that against the
 * partition rule of section 7b.
 *
 * The kernel is a tiled SGEMM (register blocking, as in CUTLASS or Simon
 * Boehm's "How to optimize a CUDA matmul kernel"): a work-group computes a
 * BM x BN tile of C, walking K in steps of BK with the A and B tiles staged
 * in shared memory; each invocation accumulates a TM x TN block of the
 * tile in registers. The tile sizes are preprocessor defines given at
 * kernel creation (hpl_kernel_desc.defines): 128 x 128 x 8 with 8 x 8 per
 * invocation by default (default_tiles), or MATMUL_TILES="BM,BN,BK,TM,TN"
 * in the environment to try others (tiles_valid() says which are allowed).
 *
 * One eval warms up (compile, uploads); then `reps` evals (default 3) are
 * each timed with the wait for C, and the best is reported as GFLOP/s
 * (2*M*N*K flops). C, read back whole (the library gathers the parts), is
 * checked against a host product in double precision with a relative
 * tolerance: |C - ref| <= (K + 2) * FLT_EPSILON * sum_k |A[i][k]| |B[k][j]|
 * (the bound for float summation), every element when M*N*K <= 2^28, else
 * every row at 64 columns.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "matmul"
#include "sample_util.h"

#include <float.h>
#include <stdlib.h>

/* The domain is {M, LY * tiles along N}, with local size {BM, LY}: along
 * dimension 0 (the one split over devices) one work-group per BM rows of
 * the subkernel's part, along dimension 1 one per BN columns. A part need
 * not start on a tile boundary: tiles start at the part's first row and
 * every row past the part's end is left out (loads read zeros, stores are
 * skipped), so any split is computed right. Invocations past the domain
 * stay (HPL_NO_MASK), since every one of a work-group takes part in its
 * barriers.
 *
 * Global loads are vec4s when an array's rows allow it (stride 1 along a
 * row, rows and base address 16-byte aligned: K and N multiples of 4), else
 * four guarded floats. Shared memory holds the A tile transposed (k-major)
 * so that an invocation reads its TM rows as vec4s, with one vec4 of
 * padding per k-row so that the transposing stores do not collide on
 * banks; an invocation's TM rows and TN columns are TM/4 and TN/4 vec4s
 * spread a quarter-tile apart, so that the invocations of a warp read
 * consecutive vec4s. The next K-step's global loads are issued before the
 * current step's products (into registers) to hide their latency. */
static const char *mxproduct_src =
    "#define HPL_NO_MASK\n"
    "#include <hplvk.glsl>\n"
    "#extension GL_EXT_buffer_reference_uvec2 : require\n"
    "#extension GL_EXT_control_flow_attributes : require\n"
    "#define THREADS ((MM_BM / MM_TM) * (MM_BN / MM_TN))\n"
    "#define LY (THREADS / MM_BM)\n"
    "#define AS4 (MM_BM / 4 + 1)\n" /* vec4s per k-row of the A tile, padded */
    "#define BS4 (MM_BN / 4)\n"
    "#define RM (MM_TM / 4)\n"
    "#define RN (MM_TN / 4)\n"
    "#define LA (MM_BM * MM_BK / 4 / THREADS)\n" /* vec4 loads per invocation per step */
    "#define LB (MM_BK * MM_BN / 4 / THREADS)\n"
    "layout(local_size_x = MM_BM, local_size_y = LY) in;\n"
    "hpl_args { hpl_out(float, 2) c; hpl_in(float, 2) a; hpl_in(float, 2) b; };\n"
    "layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ro_vec4s { vec4 v[]; };\n"
    "layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer wo_vec4s { vec4 v[]; };\n"
    "shared vec4 tile_a[MM_BK * AS4];\n" /* (i, k) at tile_a[k * AS4 + i / 4][i % 4] */
    "shared vec4 tile_b[MM_BK * BS4];\n" /* (k, j) at tile_b[k * BS4 + j / 4][j % 4] */
    "uint row_end;\n" /* the part's rows end here */
    "bool a_vec, b_vec;\n"
    "bool rows_vec4(uint addr, uvec2 stride, uint cols) {\n"
    "    return stride.y == 1u && stride.x % 4u == 0u && cols % 4u == 0u && addr % 16u == 0u;\n"
    "}\n"
    /* A[i][k .. k+3], zeros outside the part's rows and past K. */
    "vec4 load_a(uint i, uint k) {\n"
    "    uint K = a.dims.y;\n"
    "    if (i >= row_end || k >= K) return vec4(0.0);\n"
    "    if (a_vec) return ro_vec4s(a.p).v[(i * a.stride.x + k) / 4u];\n"
    "    vec4 r = vec4(0.0);\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (k + t < K) r[t] = hpl_at2(a, i, k + t);\n"
    "    return r;\n"
    "}\n"
    /* B[k][j .. j+3], zeros past K and N. */
    "vec4 load_b(uint k, uint j) {\n"
    "    uint N = b.dims.y;\n"
    "    if (k >= b.dims.x || j >= N) return vec4(0.0);\n"
    "    if (b_vec) return ro_vec4s(b.p).v[(k * b.stride.x + j) / 4u];\n"
    "    vec4 r = vec4(0.0);\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (j + t < N) r[t] = hpl_at2(b, k, j + t);\n"
    "    return r;\n"
    "}\n"
    "void load_tiles(uint row0, uint col0, uint k0, out vec4 pa[LA], out vec4 pb[LB]) {\n"
    "    uint tid = gl_LocalInvocationIndex;\n"
    "    [[unroll]] for (uint l = 0u; l < LA; l++) {\n"
    "        uint v = tid + l * THREADS;\n"
    "        pa[l] = load_a(row0 + v / (MM_BK / 4), k0 + (v % (MM_BK / 4)) * 4u);\n"
    "    }\n"
    "    [[unroll]] for (uint l = 0u; l < LB; l++) {\n"
    "        uint v = tid + l * THREADS;\n"
    "        pb[l] = load_b(k0 + v / BS4, col0 + (v % BS4) * 4u);\n"
    "    }\n"
    "}\n"
    "void store_tiles(vec4 pa[LA], vec4 pb[LB]) {\n"
    "    uint tid = gl_LocalInvocationIndex;\n"
    "    [[unroll]] for (uint l = 0u; l < LA; l++) {\n"
    "        uint v = tid + l * THREADS, i = v / (MM_BK / 4), k = (v % (MM_BK / 4)) * 4u;\n"
    "        [[unroll]] for (uint q = 0u; q < 4u; q++) tile_a[(k + q) * AS4 + i / 4u][i % 4u] = pa[l][q];\n"
    "    }\n"
    "    [[unroll]] for (uint l = 0u; l < LB; l++) tile_b[gl_LocalInvocationIndex + l * THREADS] = pb[l];\n"
    "}\n"
    "void store_c(uint i, uint j, vec4 v, bool c_vec) {\n"
    "    uint N = c.dims.y;\n"
    "    if (i >= row_end || j >= N) return;\n"
    "    if (c_vec) { wo_vec4s(c.p).v[(i * c.stride.x + j) / 4u] = v; return; }\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (j + t < N) hpl_at2(c, i, j + t) = v[t];\n"
    "}\n"
    "void main() {\n"
    "    uint tid = gl_LocalInvocationIndex;\n"
    "    uint trow = tid / (MM_BN / MM_TN), tcol = tid % (MM_BN / MM_TN);\n"
    "    uint row0 = hpl_global_id.x - gl_LocalInvocationID.x;\n"
    "    uint col0 = (hpl_global_id.y - gl_LocalInvocationID.y) / LY * MM_BN;\n"
    "    row_end = hpl_subkernel_offset.x + hpl_subkernel_size.x;\n"
    "    a_vec = rows_vec4(uvec2(a.p).x, a.stride, a.dims.y);\n"
    "    b_vec = rows_vec4(uvec2(b.p).x, b.stride, b.dims.y);\n"
    "    vec4 acc[MM_TM][RN];\n"
    "    [[unroll]] for (uint m = 0u; m < MM_TM; m++)\n"
    "        [[unroll]] for (uint n = 0u; n < RN; n++) acc[m][n] = vec4(0.0);\n"
    "    vec4 pa[LA], pb[LB];\n"
    "    load_tiles(row0, col0, 0u, pa, pb);\n"
    "    for (uint k0 = 0u; k0 < a.dims.y; k0 += MM_BK) {\n"
    "        barrier();\n" /* the previous step's reads of the tiles are done */
    "        store_tiles(pa, pb);\n"
    "        barrier();\n"
    "        if (k0 + MM_BK < a.dims.y) load_tiles(row0, col0, k0 + MM_BK, pa, pb);\n"
    "        [[unroll]] for (uint kk = 0u; kk < MM_BK; kk++) {\n"
    "            vec4 av[RM], bv[RN];\n"
    "            [[unroll]] for (uint r = 0u; r < RM; r++) av[r] = tile_a[kk * AS4 + r * (MM_BM / MM_TM) + trow];\n"
    "            [[unroll]] for (uint n = 0u; n < RN; n++) bv[n] = tile_b[kk * BS4 + n * (MM_BN / MM_TN) + tcol];\n"
    "            [[unroll]] for (uint r = 0u; r < RM; r++)\n"
    "                [[unroll]] for (uint q = 0u; q < 4u; q++)\n"
    "                    [[unroll]] for (uint n = 0u; n < RN; n++) acc[r * 4u + q][n] += av[r][q] * bv[n];\n"
    "        }\n"
    "    }\n"
    "    bool c_vec = rows_vec4(uvec2(c.p).x, c.stride, c.dims.y);\n"
    "    [[unroll]] for (uint r = 0u; r < RM; r++)\n"
    "        [[unroll]] for (uint q = 0u; q < 4u; q++)\n"
    "            [[unroll]] for (uint n = 0u; n < RN; n++)\n"
    "                store_c(row0 + (r * (MM_BM / MM_TM) + trow) * 4u + q, col0 + (n * (MM_BN / MM_TN) + tcol) * 4u,\n"
    "                        acc[r * 4u + q][n], c_vec);\n"
    "}\n";

/* ---- tiles ------------------------------------------------------------ */

typedef struct mm_tiles {
    unsigned bm, bn, bk, tm, tn;
} mm_tiles;

/* 128 x 128 tiles, 256 invocations of 8 x 8 each, BK 8: 8.1 KiB of shared
 * memory, within Vulkan's guaranteed 16 KiB. Lavapipe (which runs a
 * work-group as one thread, 8 invocations per SIMD instruction) measured
 * no better with smaller ones (32 x 32 of 4 x 4: about half the rate at
 * 512 and 1024). Devices allowing fewer than 256 invocations per
 * work-group get 64 x 64 tiles (64 invocations), within Vulkan's
 * guaranteed 128. */
static const mm_tiles default_tiles = {128, 128, 8, 8, 8};
static const mm_tiles small_tiles = {64, 64, 8, 8, 8};

static unsigned tiles_threads(mm_tiles t) { return (t.bm / t.tm) * (t.bn / t.tn); }

/* What the kernel's indexing assumes: vec4 micro-tiles and loads, the
 * local size {BM, LY} a whole number of rows, whole vec4 loads per
 * invocation, and the A tile's rows of vec4s. */
static bool tiles_valid(mm_tiles t, uint32_t max_invocations)
{
    if (!t.bm || !t.bn || !t.bk || !t.tm || !t.tn || t.tm % 4 || t.tn % 4 || t.bk % 4 || t.bm % t.tm ||
        t.bn % t.tn || t.bm % 4)
        return false;
    unsigned threads = tiles_threads(t);
    return threads % t.bm == 0 && threads <= max_invocations && (t.bm * t.bk / 4) % threads == 0 &&
           (t.bk * t.bn / 4) % threads == 0;
}

/* The tiles for the devices: MATMUL_TILES when set, else the default set
 * when every device can run it, else the small set. */
static int choose_tiles(hpl_context *ctx, const int *devices, int ndev, mm_tiles *out)
{
    uint32_t max_invocations = UINT32_MAX;
    for (int i = 0; i < ndev; i++) {
        hpl_device_info info;
        SAMPLE_TRY(hpl_device_get_info(ctx, devices[i], &info));
        max_invocations = sample_min(max_invocations, info.max_workgroup_invocations);
    }
    const char *env = getenv("MATMUL_TILES");
    if (env && *env) {
        mm_tiles t = {0};
        if (sscanf(env, "%u,%u,%u,%u,%u", &t.bm, &t.bn, &t.bk, &t.tm, &t.tn) != 5 || !tiles_valid(t, max_invocations)) {
            fprintf(stderr, SAMPLE_NAME ": MATMUL_TILES=\"%s\" is not a valid BM,BN,BK,TM,TN\n", env);
            return HPL_ERROR_INVALID_ARGUMENT;
        }
        *out = t;
    } else {
        *out = tiles_valid(default_tiles, max_invocations) ? default_tiles : small_tiles;
    }
    printf("tiles: BM %u BN %u BK %u, TM %u TN %u (%u invocations per work-group)\n", out->bm, out->bn, out->bk,
           out->tm, out->tn, tiles_threads(*out));
    return HPL_OK;
}

static int make_kernel(hpl_context *ctx, mm_tiles t, hpl_kernel *k)
{
    char defs[5][32];
    snprintf(defs[0], sizeof defs[0], "MM_BM=%u", t.bm);
    snprintf(defs[1], sizeof defs[1], "MM_BN=%u", t.bn);
    snprintf(defs[2], sizeof defs[2], "MM_BK=%u", t.bk);
    snprintf(defs[3], sizeof defs[3], "MM_TM=%u", t.tm);
    snprintf(defs[4], sizeof defs[4], "MM_TN=%u", t.tn);
    const char *const defines[] = {defs[0], defs[1], defs[2], defs[3], defs[4], NULL};
    return hpl_kernel_create(
        ctx, &(hpl_kernel_desc){.source = {.glsl = mxproduct_src, .name = "mxproduct"}, .defines = defines}, k);
}

/* ---- the product ------------------------------------------------------ */

typedef struct mm_size {
    uint64_t m, n, p; /* C is m x n, A m x p, B p x n */
} mm_size;

static double absd(double x) { return x < 0.0 ? -x : x; }

/* Fixed-seed values in [-1, 1), the same on every run. */
static void fill_random(float *x, uint64_t count, uint32_t seed)
{
    for (uint64_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

typedef struct mm_data {
    float *a, *b, *c; /* host copies: A, B, and C as read back */
} mm_data;

static int make_arrays(hpl_context *ctx, const mm_data *h, mm_size sz, hpl_array *a, hpl_array *b, hpl_array *c)
{
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.m, sz.p}, .name = "A"}, a));
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.p, sz.n}, .name = "B"}, b));
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.m, sz.n}, .name = "C"}, c));
    SAMPLE_TRY(hpl_array_write(ctx, *a, h->a, sz.m * sz.p * sizeof(float)));
    SAMPLE_TRY(hpl_array_write(ctx, *b, h->b, sz.p * sz.n * sizeof(float)));
    return HPL_OK;
}

/* One warm-up eval, then `reps` timed ones; *best_ms the fastest. */
static int run_evals(hpl_context *ctx, hpl_kernel k, hpl_array a, hpl_array b, hpl_array c, mm_size sz, mm_tiles t,
                     int reps, double *best_ms)
{
    hpl_launch launch = sample_launch(ctx);
    launch.global[0] = sz.m;
    launch.global[1] = (sz.n + t.bn - 1) / t.bn * (tiles_threads(t) / t.bm);
    for (int r = -1; r < reps; r++) {
        double t0 = sample_now_ms();
        SAMPLE_TRY(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_part1(c, 0), hpl_part1(a, 0), hpl_arr(b))));
        SAMPLE_TRY(hpl_array_wait(ctx, c));
        double ms = sample_now_ms() - t0;
        if (r == 0 || (r > 0 && ms < *best_ms))
            *best_ms = ms;
    }
    return HPL_OK;
}

/* Prints which rows of C each device got and checks them against the
 * partition rule: *parts_ok false on any difference. */
static int report_parts(hpl_context *ctx, hpl_array c, mm_size sz, const int *devices, int ndev, bool *parts_ok)
{
    int count = hpl_array_part_count(ctx, c);
    int want = sz.m < (uint64_t)ndev ? (int)sz.m : ndev;
    *parts_ok = count == want;
    if (count != want)
        fprintf(stderr, SAMPLE_NAME ": C has %d parts, expected %d\n", count, want);
    for (int i = 0; i < count; i++) {
        hpl_array part;
        hpl_array_info info;
        int device = -1;
        uint64_t lo = 0, hi = 0;
        SAMPLE_TRY(hpl_array_part(ctx, c, i, &part, &device));
        SAMPLE_TRY(hpl_array_get_info(ctx, part, &info));
        printf("part %d: device %d, rows %" PRIu64 "..%" PRIu64 " (%" PRIu64 " x %" PRIu64 " at (%" PRIu64 ", %" PRIu64
               "))\n",
               i, device, info.origin[0], info.origin[0] + info.dims[0] - 1, info.dims[0], info.dims[1],
               info.origin[0], info.origin[1]);
        bool ok = sample_part_rows(sz.m, ndev, i, &lo, &hi) && device == devices[i] && info.origin[0] == lo &&
                  info.dims[0] == hi - lo && info.origin[1] == 0 && info.dims[1] == sz.n;
        if (!ok)
            fprintf(stderr, SAMPLE_NAME ": part %d should be rows %" PRIu64 "..%" PRIu64 " x %" PRIu64 " on device %d\n",
                    i, lo, hi - 1, sz.n, devices[i]);
        *parts_ok = *parts_ok && ok;
    }
    for (int i = count; i < ndev; i++)
        printf("device %d: no part (%" PRIu64 " rows for %d devices)\n", devices[i], sz.m, ndev);
    return HPL_OK;
}

/* The error of element (i, j) against the double-precision product,
 * relative to sum_k |A[i][k] B[k][j]|. */
static double element_error(const mm_data *h, mm_size sz, uint64_t i, uint64_t j, double *ref)
{
    double mag = 0.0;
    *ref = 0.0;
    for (uint64_t k = 0; k < sz.p; k++) {
        double prod = (double)h->a[i * sz.p + k] * (double)h->b[k * sz.n + j];
        *ref += prod;
        mag += absd(prod);
    }
    return absd((double)h->c[i * sz.n + j] - *ref) / (mag > 0.0 ? mag : 1.0);
}

static bool check_product(const mm_data *h, mm_size sz)
{
    const bool full = (double)sz.m * (double)sz.n * (double)sz.p <= (double)(1u << 28);
    const uint64_t col_step = full || sz.n <= 64 ? 1 : sz.n / 64;
    const double tol = (double)(sz.p + 2) * FLT_EPSILON;
    uint64_t bad = 0, checked = 0;
    double worst = 0.0, ref;
    for (uint64_t i = 0; i < sz.m; i++)
        for (uint64_t j = 0; j < sz.n; j += col_step, checked++) {
            double err = element_error(h, sz, i, j, &ref);
            worst = err > worst ? err : worst;
            if (!(err <= tol) && bad++ < 5)
                fprintf(stderr, SAMPLE_NAME ": C[%" PRIu64 "][%" PRIu64 "] = %.8g, expected %.8g\n", i, j,
                        (double)h->c[i * sz.n + j], ref);
        }
    fprintf(stderr, SAMPLE_NAME ": checked %" PRIu64 " elements, worst relative error %.3g (tolerance %.3g), %" PRIu64
                    " wrong\n",
            checked, worst, tol, bad);
    return bad == 0;
}

/* Runs the product on every device of the context and reads C into h->c. */
static int run_devices(hpl_context *ctx, const int *devices, int ndev, const mm_data *h, mm_size sz, int reps,
                       char *devnames, size_t cap, double *best_ms, bool *parts_ok)
{
    mm_tiles t;
    hpl_kernel k;
    hpl_array a, b, c;
    SAMPLE_TRY(sample_device_list(ctx, devices, ndev, devnames, cap));
    SAMPLE_TRY(choose_tiles(ctx, devices, ndev, &t));
    SAMPLE_TRY(make_kernel(ctx, t, &k));
    SAMPLE_TRY(make_arrays(ctx, h, sz, &a, &b, &c));
    SAMPLE_TRY(run_evals(ctx, k, a, b, c, sz, t, reps, best_ms));
    SAMPLE_TRY(report_parts(ctx, c, sz, devices, ndev, parts_ok));
    SAMPLE_TRY(hpl_array_read(ctx, c, h->c, sz.m * sz.n * sizeof(float)));
    return HPL_OK;
}

/* Everything but the RESULT line; returns whether the run is verified. */
static bool run_all(const mm_data *h, mm_size sz, int reps, char *devnames, size_t cap, double *best_ms)
{
    hpl_context *ctx = NULL;
    if (hpl_context_create(&(hpl_context_desc){.log = sample_log}, &ctx) != HPL_OK) {
        fprintf(stderr, SAMPLE_NAME ": hpl_context_create failed: %s\n", hpl_last_error());
        return false;
    }
    int devices[HPL_MAX_DEVICES];
    int ndev = sample_devices(ctx, devices);
    bool parts_ok = false;
    bool ok = run_devices(ctx, devices, ndev, h, sz, reps, devnames, cap, best_ms, &parts_ok) == HPL_OK &&
              parts_ok && check_product(h, sz);
    /* An error that surfaced asynchronously fails the run too. */
    ok = hpl_finish(ctx) == HPL_OK && ok;
    hpl_context_destroy(ctx);
    return sample_log_clean() && ok;
}

/* [n [reps]] or M N K [reps]. Every matrix stays below 2^32 elements:
 * the kernel indexes with uint. */
static bool parse_args(int argc, char **argv, mm_size *sz, int *reps)
{
    *sz = (mm_size){256, 256, 256};
    *reps = 3;
    uint64_t v[4] = {0};
    if (argc > 5)
        return false;
    for (int i = 1; i < argc; i++)
        v[i - 1] = strtoull(argv[i], NULL, 0);
    if (argc == 2 || argc == 3)
        *sz = (mm_size){v[0], v[0], v[0]};
    if (argc == 4 || argc == 5)
        *sz = (mm_size){v[0], v[1], v[2]};
    if (argc == 3 || argc == 5)
        *reps = (int)sample_min(v[argc - 2], 1000000);
    const double lim = UINT32_MAX;
    return sz->m && sz->n && sz->p && *reps > 0 && (double)sz->m * (double)sz->p <= lim &&
           (double)sz->p * (double)sz->n <= lim && (double)sz->m * (double)sz->n <= lim;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    mm_size sz;
    int reps;
    if (!parse_args(argc, argv, &sz, &reps)) {
        fprintf(stderr, "usage: %s [n [reps]] | M N K [reps]\n", argv[0]);
        return 2;
    }
    mm_data h = {malloc(sz.m * sz.p * sizeof(float)), malloc(sz.p * sz.n * sizeof(float)),
                 malloc(sz.m * sz.n * sizeof(float))};
    char devnames[4096] = "none";
    double best = 0.0;
    bool verified = false;
    if (h.a && h.b && h.c) {
        fill_random(h.a, sz.m * sz.p, 12345u);
        fill_random(h.b, sz.p * sz.n, 67890u);
        verified = run_all(&h, sz, reps, devnames, sizeof devnames, &best);
    } else {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
    }
    free(h.a);
    free(h.b);
    free(h.c);
    double gflops = best > 0.0 ? 2.0 * (double)sz.m * (double)sz.n * (double)sz.p / (best * 1e-3) / 1e9 : 0.0;
    printf("RESULT name=matmul devices=%s size=%" PRIu64 "x%" PRIu64 "x%" PRIu64
           " time_ms=%.3f rate=%.4gGFLOP/s verified=%s\n",
           devnames, sz.m, sz.n, sz.p, best, gflops, verified ? "yes" : "no");
    return verified ? 0 : 1;
}
