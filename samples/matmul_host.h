/*
 * matmul_host.h — what samples/matmul.c and its hand-written Vulkan twin
 * samples/twins/twin_matmul.c both need, identically: the tiled SGEMM kernel
 * (GLSL text) and its tile sets, the arguments, the fixed-seed inputs, the
 * check of the product, a clock and the RESULT line. Kept in one place so
 * that the two programs differ only in how they reach the devices
 * (count_lines.sh counts neither this header nor the kernels), and so that
 * SUMMA (summa.c) can run the same kernel as C += A x B.
 *
 * Pure C11 and header-only (static inline functions): it includes neither
 * hplvk.h nor vulkan.h, since the twin links only Vulkan and shaderc. Define
 * SAMPLE_NAME (the program's name: messages, the RESULT line) and
 * _POSIX_C_SOURCE >= 199309L (clock_gettime) before including it.
 *
 * The kernel. C = A x B in float, row-major, every matrix below 2^32
 * elements (it indexes with uint). A tiled SGEMM with register blocking (as
 * in CUTLASS or Simon Boehm's "How to optimize a CUDA matmul kernel"): a
 * work-group computes a BM x BN tile of C, walking K in steps of BK with
 * the A and B tiles staged in shared memory; each invocation accumulates a
 * TM x TN block of the tile in registers. mm_kernel_source() writes the
 * whole source for a tile set: #defines of the tile sizes, the arguments in
 * one of two bindings (mm_bindings: an hplvk kernel's hpl_args, or plain
 * descriptors and push constants for the twin), then the one algorithm,
 * which reaches its arguments only through the MM_* accessors each binding
 * defines. With `accumulate` it computes C += A x B (C read and written):
 * the only difference is under #ifdef MM_ACCUMULATE, so the default kernel
 * is exactly the plain product.
 */
#ifndef HPLVK_MATMUL_HOST_H
#define HPLVK_MATMUL_HOST_H

#ifndef SAMPLE_NAME
#error "define SAMPLE_NAME before including matmul_host.h"
#endif

#include "sample_args.h" /* no hplvk either: the twin's arguments too */
#include "sample_result.h" /* the RESULT line's hooks */
#include "sample_warm.h" /* and its warm-up */

#include <float.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ---- the kernel --------------------------------------------------------- */

/* Each binding defines what the algorithm reaches its arguments through:
 *   MM_ROW0, MM_COL0   the first row and column of the work-group's tile of C
 *   MM_BEGIN()         what main does before the K loop
 *   MM_ROW_END         rows of C and A at and past it are left out
 *   MM_A_COLS, MM_B_ROWS, MM_B_COLS, MM_C_COLS   K, K, N, N
 *   MM_A_VEC4 ...      whether A's (B's, C's) rows may be read as vec4s
 *   MM_A4(i, k) ...    the vec4 at A[i][k .. k+3] (B's, C's)
 *   MM_A1(i, k) ...    the float A[i][k] (B's, C's)
 * The tile sizes MM_BM .. MM_TN and MM_ACCUMULATE come before it. */

/* The arguments of an hplvk kernel: hpl_args { c; a; b; }, each a 2-D float
 * array with its own strides and origin (whole arrays, parts, subarrays).
 * The domain is {rows of C, LY * tiles along N}, LY = mm_tiles_threads() /
 * BM, with the kernel's own local size {BM, LY}: along dimension 0 (the one
 * split over devices) one work-group per BM rows of the subkernel's part,
 * along dimension 1 one per BN columns. The part's rows end at row_end: a
 * part need not start on a tile boundary, tiles start at the part's first
 * row and rows past its end are left out (loads read zeros, stores are
 * skipped). Invocations past the domain stay (HPL_NO_MASK): every one of a
 * work-group takes part in its barriers. An array's rows are read (and C's
 * written) as vec4s when they allow it: stride 1 along a row, rows and base
 * address 16-byte aligned (the base is x.p, element x.part_lo). */
static const char *const mm_hplvk_bindings_src =
    "#define HPL_NO_MASK\n"
    "#include <hplvk.glsl>\n"
    "#extension GL_EXT_buffer_reference_uvec2 : require\n"
    "#extension GL_EXT_control_flow_attributes : require\n"
    "layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ro_vec4s { vec4 v[]; };\n"
    "// Element (i, j) of m from m.p, which points at m.part_lo (hplvk.h chapter 6).\n"
    "#define MM_AT(m, i, j) (((i) - m.part_lo.x) * m.stride.x + (j) - m.part_lo.y)\n"
    "#ifdef MM_ACCUMULATE\n"
    "hpl_args { hpl_inout(float, 2) c; hpl_in(float, 2) a; hpl_in(float, 2) b; };\n"
    "layout(buffer_reference, std430, buffer_reference_align = 16) buffer rw_vec4s { vec4 v[]; };\n"
    "#define MM_C4(i, j) rw_vec4s(c.p).v[MM_AT(c, i, j) / 4u]\n"
    "#else\n"
    "hpl_args { hpl_out(float, 2) c; hpl_in(float, 2) a; hpl_in(float, 2) b; };\n"
    "layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer wo_vec4s { vec4 v[]; };\n"
    "#define MM_C4(i, j) wo_vec4s(c.p).v[MM_AT(c, i, j) / 4u]\n"
    "#endif\n"
    "uint row_end;\n"
    "bool a_vec, b_vec;\n"
    "bool rows_vec4(uint addr, uvec2 stride, uint cols, uint col_lo) {\n"
    "    return stride.y == 1u && stride.x % 4u == 0u && cols % 4u == 0u && col_lo % 4u == 0u && addr % 16u == 0u;\n"
    "}\n"
    "#define MM_ROW0 (hpl_global_id.x - gl_LocalInvocationID.x)\n"
    "#define MM_COL0 ((hpl_global_id.y - gl_LocalInvocationID.y) / LY * MM_BN)\n"
    "#define MM_BEGIN()                                            \\\n"
    "    row_end = hpl_subkernel_offset.x + hpl_subkernel_size.x; \\\n"
    "    a_vec = rows_vec4(uvec2(a.p).x, a.stride, a.dims.y, a.part_lo.y); \\\n"
    "    b_vec = rows_vec4(uvec2(b.p).x, b.stride, b.dims.y, b.part_lo.y)\n"
    "#define MM_ROW_END row_end\n"
    "#define MM_A_COLS a.dims.y\n"
    "#define MM_B_ROWS b.dims.x\n"
    "#define MM_B_COLS b.dims.y\n"
    "#define MM_C_COLS c.dims.y\n"
    "#define MM_A_VEC4 a_vec\n"
    "#define MM_B_VEC4 b_vec\n"
    "#define MM_C_VEC4 rows_vec4(uvec2(c.p).x, c.stride, c.dims.y, c.part_lo.y)\n"
    "#define MM_A4(i, k) ro_vec4s(a.p).v[MM_AT(a, i, k) / 4u]\n"
    "#define MM_B4(k, j) ro_vec4s(b.p).v[MM_AT(b, k, j) / 4u]\n"
    "#define MM_A1(i, k) hpl_at2(a, i, k)\n"
    "#define MM_B1(k, j) hpl_at2(b, k, j)\n"
    "#define MM_C1(i, j) hpl_at2(c, i, j)\n";

/* The twin's arguments: dense row-major matrices in storage buffers A, B, C
 * at bindings 0, 1, 2 of set 0 (each declared twice, as floats and as
 * vec4s), the sizes in push constants { uint M, N, K; }. One work-group per
 * BM x BN tile of C: dispatch ceil(M / BM) x ceil(N / BN) x 1. */
static const char *const mm_vulkan_bindings_src =
    "#extension GL_EXT_control_flow_attributes : require\n"
    "#ifdef MM_ACCUMULATE\n"
    "#define MM_C_ACCESS\n"
    "#else\n"
    "#define MM_C_ACCESS writeonly\n"
    "#endif\n"
    "layout(set = 0, binding = 0) readonly buffer A { float a[]; };\n"
    "layout(set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer B { float b[]; };\n"
    "layout(set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };\n"
    "layout(set = 0, binding = 2) MM_C_ACCESS buffer C { float c[]; };\n"
    "layout(set = 0, binding = 2) MM_C_ACCESS buffer C4 { vec4 c4[]; };\n"
    "layout(push_constant) uniform Sizes { uint M, N, K; } size;\n"
    "#define MM_ROW0 (gl_WorkGroupID.x * MM_BM)\n"
    "#define MM_COL0 (gl_WorkGroupID.y * MM_BN)\n"
    "#define MM_BEGIN()\n"
    "#define MM_ROW_END size.M\n"
    "#define MM_A_COLS size.K\n"
    "#define MM_B_ROWS size.K\n"
    "#define MM_B_COLS size.N\n"
    "#define MM_C_COLS size.N\n"
    "#define MM_A_VEC4 (size.K % 4u == 0u)\n"
    "#define MM_B_VEC4 (size.N % 4u == 0u)\n"
    "#define MM_C_VEC4 (size.N % 4u == 0u)\n"
    "#define MM_A4(i, k) a4[((i) * size.K + (k)) / 4u]\n"
    "#define MM_B4(k, j) b4[((k) * size.N + (j)) / 4u]\n"
    "#define MM_C4(i, j) c4[((i) * size.N + (j)) / 4u]\n"
    "#define MM_A1(i, k) a[(i) * size.K + (k)]\n"
    "#define MM_B1(k, j) b[(k) * size.N + (j)]\n"
    "#define MM_C1(i, j) c[(i) * size.N + (j)]\n";

/* The algorithm, over either binding. Shared memory holds the A tile
 * transposed (k-major) so that an invocation reads its TM rows as vec4s,
 * with one vec4 of padding per k-row so that the transposing stores do not
 * collide on banks; an invocation's TM rows and TN columns are TM/4 and
 * TN/4 vec4s spread a quarter-tile apart, so that the invocations of a warp
 * read consecutive vec4s. The next K-step's global loads are issued before
 * the current step's products (into registers) to hide their latency.
 * Loads outside the matrices (past K, N or the rows) read zeros. */
static const char *const mm_algorithm_src =
    "#define THREADS ((MM_BM / MM_TM) * (MM_BN / MM_TN))\n"
    "#define LY (THREADS / MM_BM)\n"
    "#define AS4 (MM_BM / 4 + 1)\n" /* vec4s per k-row of the A tile, padded */
    "#define BS4 (MM_BN / 4)\n"
    "#define RM (MM_TM / 4)\n"
    "#define RN (MM_TN / 4)\n"
    "#define LA (MM_BM * MM_BK / 4 / THREADS)\n" /* vec4 loads per invocation per step */
    "#define LB (MM_BK * MM_BN / 4 / THREADS)\n"
    /* C += A x B adds C's old value where the tile is stored: one read per
     * element, after the K loop, which stays the plain product's. */
    "#ifdef MM_ACCUMULATE\n"
    "#define MM_STORE(dst, v) dst += v\n"
    "#else\n"
    "#define MM_STORE(dst, v) dst = v\n"
    "#endif\n"
    "layout(local_size_x = MM_BM, local_size_y = LY) in;\n"
    "shared vec4 tile_a[MM_BK * AS4];\n" /* (i, k) at tile_a[k * AS4 + i / 4][i % 4] */
    "shared vec4 tile_b[MM_BK * BS4];\n" /* (k, j) at tile_b[k * BS4 + j / 4][j % 4] */
    /* A[i][k .. k+3] */
    "vec4 load_a(uint i, uint k) {\n"
    "    uint K = MM_A_COLS;\n"
    "    if (i >= MM_ROW_END || k >= K) return vec4(0.0);\n"
    "    if (MM_A_VEC4) return MM_A4(i, k);\n"
    "    vec4 r = vec4(0.0);\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (k + t < K) r[t] = MM_A1(i, k + t);\n"
    "    return r;\n"
    "}\n"
    /* B[k][j .. j+3] */
    "vec4 load_b(uint k, uint j) {\n"
    "    uint N = MM_B_COLS;\n"
    "    if (k >= MM_B_ROWS || j >= N) return vec4(0.0);\n"
    "    if (MM_B_VEC4) return MM_B4(k, j);\n"
    "    vec4 r = vec4(0.0);\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (j + t < N) r[t] = MM_B1(k, j + t);\n"
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
    /* C[i][j .. j+3] = v, or += v with MM_ACCUMULATE */
    "void store_c(uint i, uint j, vec4 v, bool c_vec) {\n"
    "    uint N = MM_C_COLS;\n"
    "    if (i >= MM_ROW_END || j >= N) return;\n"
    "    if (c_vec) { MM_STORE(MM_C4(i, j), v); return; }\n"
    "    [[unroll]] for (uint t = 0u; t < 4u; t++) if (j + t < N) MM_STORE(MM_C1(i, j + t), v[t]);\n"
    "}\n"
    "void main() {\n"
    "    uint tid = gl_LocalInvocationIndex;\n"
    "    uint trow = tid / (MM_BN / MM_TN), tcol = tid % (MM_BN / MM_TN);\n"
    "    uint row0 = MM_ROW0;\n"
    "    uint col0 = MM_COL0;\n"
    "    MM_BEGIN();\n"
    "    vec4 acc[MM_TM][RN];\n"
    "    [[unroll]] for (uint m = 0u; m < MM_TM; m++)\n"
    "        [[unroll]] for (uint n = 0u; n < RN; n++) acc[m][n] = vec4(0.0);\n"
    "    vec4 pa[LA], pb[LB];\n"
    "    load_tiles(row0, col0, 0u, pa, pb);\n"
    "    for (uint k0 = 0u; k0 < MM_A_COLS; k0 += MM_BK) {\n"
    "        barrier();\n" /* the previous step's reads of the tiles are done */
    "        store_tiles(pa, pb);\n"
    "        barrier();\n"
    "        if (k0 + MM_BK < MM_A_COLS) load_tiles(row0, col0, k0 + MM_BK, pa, pb);\n"
    "        [[unroll]] for (uint kk = 0u; kk < MM_BK; kk++) {\n"
    "            vec4 av[RM], bv[RN];\n"
    "            [[unroll]] for (uint r = 0u; r < RM; r++) av[r] = tile_a[kk * AS4 + r * (MM_BM / MM_TM) + trow];\n"
    "            [[unroll]] for (uint n = 0u; n < RN; n++) bv[n] = tile_b[kk * BS4 + n * (MM_BN / MM_TN) + tcol];\n"
    "            [[unroll]] for (uint r = 0u; r < RM; r++)\n"
    "                [[unroll]] for (uint q = 0u; q < 4u; q++)\n"
    "                    [[unroll]] for (uint n = 0u; n < RN; n++) acc[r * 4u + q][n] += av[r][q] * bv[n];\n"
    "        }\n"
    "    }\n"
    "    bool c_vec = MM_C_VEC4;\n"
    "    [[unroll]] for (uint r = 0u; r < RM; r++)\n"
    "        [[unroll]] for (uint q = 0u; q < 4u; q++)\n"
    "            [[unroll]] for (uint n = 0u; n < RN; n++)\n"
    "                store_c(row0 + (r * (MM_BM / MM_TM) + trow) * 4u + q, col0 + (n * (MM_BN / MM_TN) + tcol) * 4u,\n"
    "                        acc[r * 4u + q][n], c_vec);\n"
    "}\n";

/* How the kernel reaches its arguments, and so how it is launched (see
 * the two *_bindings_src). */
typedef enum mm_bindings {
    MM_HPLVK_ARGS,         /* an hplvk kernel: hpl_args { c; a; b; } */
    MM_VULKAN_DESCRIPTORS, /* set 0, bindings 0..2: A, B, C; push constants M, N, K */
} mm_bindings;

/* The tile sizes: a work-group computes BM x BN of C in steps of BK along
 * K, each invocation TM x TN of it. */
typedef struct mm_tiles {
    unsigned bm, bn, bk, tm, tn;
} mm_tiles;

/* Room for any kernel mm_kernel_source writes (about 5.3 KiB). */
#define MM_KERNEL_SOURCE_CAP 16384

/* Writes the kernel's whole source for tile set t into out[cap] and
 * returns out; C += A x B with `accumulate`, else C = A x B. NULL (and a
 * message) when it does not fit. */
static inline const char *mm_kernel_source(char *out, size_t cap, mm_bindings bindings, mm_tiles t, bool accumulate)
{
    const bool vulkan = bindings == MM_VULKAN_DESCRIPTORS;
    int n = snprintf(out, cap, "%s#define MM_BM %u\n#define MM_BN %u\n#define MM_BK %u\n#define MM_TM %u\n"
                               "#define MM_TN %u\n%s%s%s",
                     vulkan ? "#version 450\n" : "", t.bm, t.bn, t.bk, t.tm, t.tn,
                     accumulate ? "#define MM_ACCUMULATE\n" : "",
                     vulkan ? mm_vulkan_bindings_src : mm_hplvk_bindings_src, mm_algorithm_src);
    if (n >= 0 && (size_t)n < cap)
        return out;
    fprintf(stderr, SAMPLE_NAME ": the matmul kernel needs %d bytes of source, more than %zu\n", n, cap);
    return NULL;
}

/* ---- tile sets ---------------------------------------------------------- */

/* 128 x 128 tiles, 256 invocations of 8 x 8 each, BK 8: 8.1 KiB of shared
 * memory, within Vulkan's guaranteed 16 KiB. Lavapipe (which runs a
 * work-group as one thread, 8 invocations per SIMD instruction) measured
 * no better with smaller ones (32 x 32 of 4 x 4: about half the rate at
 * 512 and 1024). Devices allowing fewer than 256 invocations per
 * work-group get 64 x 64 tiles (64 invocations), within Vulkan's
 * guaranteed 128. */
static const mm_tiles mm_default_tiles = {128, 128, 8, 8, 8};
static const mm_tiles mm_small_tiles = {64, 64, 8, 8, 8};

static inline unsigned mm_tiles_threads(mm_tiles t)
{
    return (t.bm / t.tm) * (t.bn / t.tn);
}

/* What the kernel's indexing assumes: vec4 micro-tiles and loads, the
 * local size {BM, LY} a whole number of rows, whole vec4 loads per
 * invocation, and the A tile's rows of vec4s. */
static inline bool mm_tiles_valid(mm_tiles t, uint32_t max_invocations)
{
    if (!t.bm || !t.bn || !t.bk || !t.tm || !t.tn || t.tm % 4 || t.tn % 4 || t.bk % 4 || t.bm % t.tm ||
        t.bn % t.tn || t.bm % 4)
        return false;
    unsigned threads = mm_tiles_threads(t);
    return threads % t.bm == 0 && threads <= max_invocations && (t.bm * t.bk / 4) % threads == 0 &&
           (t.bk * t.bn / 4) % threads == 0;
}

/* The tiles for devices that allow max_invocations per work-group (the
 * smallest over the devices used): MATMUL_TILES="BM,BN,BK,TM,TN" when set,
 * else the default set when they can run it, else the small set. False,
 * with a message, when MATMUL_TILES names tiles the kernel cannot run. */
static inline bool mm_choose_tiles(uint32_t max_invocations, mm_tiles *out)
{
    const char *env = getenv("MATMUL_TILES");
    if (env && *env) {
        mm_tiles t = {0};
        unsigned *field[5] = {&t.bm, &t.bn, &t.bk, &t.tm, &t.tn};
        const char *at = env;
        bool numbers = true;
        for (int i = 0; i < 5 && numbers; i++) { /* five whole numbers, a comma between two */
            size_t len = strcspn(at, ",");
            uint64_t v = 0;
            numbers = sample_parse_u64_n(at, len, &v) && v <= UINT_MAX && (at[len] == '\0') == (i == 4);
            *field[i] = (unsigned)v;
            at += len + (i < 4);
        }
        if (!numbers || !mm_tiles_valid(t, max_invocations)) {
            fprintf(stderr, SAMPLE_NAME ": MATMUL_TILES=\"%s\" is not a valid BM,BN,BK,TM,TN\n", env);
            return false;
        }
        *out = t;
    } else {
        *out = mm_tiles_valid(mm_default_tiles, max_invocations) ? mm_default_tiles : mm_small_tiles;
    }
    printf("tiles: BM %u BN %u BK %u, TM %u TN %u (%u invocations per work-group)\n", out->bm, out->bn, out->bk,
           out->tm, out->tn, mm_tiles_threads(*out));
    return true;
}

/* ---- the problem: arguments and inputs ---------------------------------- */

/* C is m x n, A m x k, B k x n. uint32_t in this order: the push constants
 * { M, N, K } of MM_VULKAN_DESCRIPTORS. */
typedef struct mm_size {
    uint32_t m, n, k;
} mm_size;

/* One run: its arguments, the host's matrices, what the RESULT line
 * reports. */
typedef struct mm_problem {
    mm_size size;
    int reps;          /* timed runs after the warm-up */
    float *a, *b, *c;  /* A and B the inputs, C where the product is read back */
    double best_ms;    /* the fastest timed run (mm_keep_best) */
    char devices[4096]; /* the devices, comma-separated; empty: "none" */
} mm_problem;

/* Bytes of a rows x cols matrix of floats. */
static inline size_t mm_bytes(uint32_t rows, uint32_t cols)
{
    return (size_t)rows * cols * sizeof(float);
}

/* [n [reps]] (n x n x n) or M N K [reps]; defaults 256 and 3. Every matrix
 * stays below 2^32 elements: the kernel indexes with uint. Prints the usage
 * when they are wrong. */
static inline bool mm_parse_args(int argc, char **argv, mm_problem *p)
{
    uint64_t v[4] = {0}, m = 256, n = 256, k = 256;
    p->reps = 3;
    const char *names[4] = {argc <= 3 ? "n" : "M", argc <= 3 ? "reps" : "N", "K", "reps"};
    bool numbers = argc <= 5;
    for (int i = 1; numbers && i < argc; i++)
        numbers = sample_arg_u64(names[i - 1], argv[i], UINT64_MAX, &v[i - 1]);
    if (argc == 2 || argc == 3)
        m = n = k = v[0];
    if (argc == 4 || argc == 5)
        m = v[0], n = v[1], k = v[2];
    if (argc == 3 || argc == 5)
        p->reps = v[argc - 2] > 1000000 ? 1000000 : (int)v[argc - 2];
    p->size = (mm_size){(uint32_t)m, (uint32_t)n, (uint32_t)k};
    const double most = UINT32_MAX;
    bool ok = numbers && m && n && k && p->reps > 0 && (double)m * (double)k <= most &&
              (double)k * (double)n <= most && (double)m * (double)n <= most;
    if (!ok)
        fprintf(stderr, "usage: %s [n [reps]] | M N K [reps] (each matrix below 2^32 elements)\n", argv[0]);
    return ok;
}

/* Fixed-seed values in [-1, 1), the same on every run. */
static inline void mm_fill_random(float *x, uint64_t count, uint32_t seed)
{
    for (uint64_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

/* Allocates the host's matrices and fills A and B. */
static inline bool mm_alloc_inputs(mm_problem *p)
{
    mm_size sz = p->size;
    p->a = malloc(mm_bytes(sz.m, sz.k));
    p->b = malloc(mm_bytes(sz.k, sz.n));
    p->c = malloc(mm_bytes(sz.m, sz.n));
    if (!p->a || !p->b || !p->c) {
        fprintf(stderr, SAMPLE_NAME ": out of host memory\n");
        return false;
    }
    mm_fill_random(p->a, (uint64_t)sz.m * sz.k, 12345u);
    mm_fill_random(p->b, (uint64_t)sz.k * sz.n, 67890u);
    return true;
}

static inline void mm_free_inputs(mm_problem *p)
{
    free(p->a);
    free(p->b);
    free(p->c);
}

/* ---- the check ---------------------------------------------------------- */

static inline double mm_absd(double x)
{
    return x < 0.0 ? -x : x;
}

/* The error of C[i][j] against the double-precision product, relative to
 * sum_k |A[i][k] B[k][j]|; *ref the product. */
static inline double mm_element_error(const mm_problem *p, uint64_t i, uint64_t j, double *ref)
{
    const mm_size sz = p->size;
    double mag = 0.0;
    *ref = 0.0;
    for (uint64_t k = 0; k < sz.k; k++) {
        double prod = (double)p->a[i * sz.k + k] * (double)p->b[k * sz.n + j];
        *ref += prod;
        mag += mm_absd(prod);
    }
    return mm_absd((double)p->c[i * sz.n + j] - *ref) / (mag > 0.0 ? mag : 1.0);
}

/* Checks C within the bound for float summation, |C - ref| <= (K + 2) *
 * FLT_EPSILON * sum_k |A[i][k] B[k][j]|: every element when M*N*K <= 2^28,
 * else every row (each device's rows) at evenly spaced columns, about 2^28
 * multiply-adds in all, at least one column per row, starting one column
 * further in each row so that every place in a tile and a vec4 is checked:
 * within seconds at any size. */
static inline bool mm_check_product(const mm_problem *p)
{
    const mm_size sz = p->size;
    const double budget = (double)(1u << 28), work = (double)sz.m * (double)sz.n * (double)sz.k;
    uint64_t col_step = work <= budget ? 1 : (uint64_t)(work / budget) + 1;
    col_step = col_step < sz.n ? col_step : sz.n;
    const double tol = (double)(sz.k + 2) * FLT_EPSILON;
    uint64_t bad = 0, checked = 0;
    double worst = 0.0, ref;
    for (uint64_t i = 0; i < sz.m; i++)
        for (uint64_t j = i % col_step; j < sz.n; j += col_step, checked++) {
            double err = mm_element_error(p, i, j, &ref);
            worst = err > worst ? err : worst;
            if (!(err <= tol) && bad++ < 5)
                fprintf(stderr, SAMPLE_NAME ": C[%" PRIu64 "][%" PRIu64 "] = %.8g, expected %.8g\n", i, j,
                        (double)p->c[i * sz.n + j], ref);
        }
    fprintf(stderr, SAMPLE_NAME ": checked %" PRIu64 " elements, worst relative error %.3g (tolerance %.3g), %" PRIu64
                    " wrong\n",
            checked, worst, tol, bad);
    return bad == 0;
}

/* ---- timing and the RESULT line ----------------------------------------- */

/* Milliseconds on a monotonic clock. */
static inline double mm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* After run `run` (-1: the warm-up), the next one's number: the warm-up
 * again while a GPU has run it for less than SAMPLE_WARM_MS since warm0
 * (sample_warm.h; a product overwrites C, so it changes nothing). */
static inline int mm_next_run(int run, bool gpu, double warm0)
{
    return run == -1 && gpu && mm_now_ms() - warm0 < SAMPLE_WARM_MS ? -1 : run + 1;
}

/* Keeps the best of the timed runs 0 .. reps-1; run -1, the warm-up
 * (compiles, uploads), is not one of them. */
static inline void mm_keep_best(mm_problem *p, int run, double ms)
{
    if (run == 0 || (run > 0 && ms < p->best_ms))
        p->best_ms = ms;
}

/* The RESULT line: the best time and its rate (2*M*N*K flops). */
static inline void mm_print_result(const mm_problem *p, bool verified)
{
    const mm_size sz = p->size;
    double flops = 2.0 * (double)sz.m * (double)sz.n * (double)sz.k;
    double gflops = p->best_ms > 0.0 ? flops / (p->best_ms * 1e-3) / 1e9 : 0.0;
    printf("RESULT name=" SAMPLE_NAME " devices=%s size=%" PRIu32 "x%" PRIu32 "x%" PRIu32
           " time_ms=%.3f rate=%.4gGFLOP/s verified=%s%s\n",
           p->devices[0] ? p->devices : "none", sz.m, sz.n, sz.k, p->best_ms, gflops, SAMPLE_RESULT_VERIFIED(verified) ? "yes" : "no",
           SAMPLE_RESULT_TAIL());
}

#endif
