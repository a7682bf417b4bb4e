/* What several tests share besides the harness (harness.h), header-only:
 * static inline functions, so that a test uses what it needs of it.
 *   - rng(), rng_below(): xorshift64*, reproducible across platforms, unlike
 *     rand(); its state rng_state is the test's own, seeded by the test
 *     (a fixed value until then);
 *   - box1(), box2(), box3(): lib/base/region.h's boxes, for the tests that
 *     include it (the region and coherence unit tests);
 *   - kernel sources that tests run alike (and a host reference of one). */
#ifndef HPLVK_TESTS_TEST_UTIL_H
#define HPLVK_TESTS_TEST_UTIL_H

#include <stdint.h>

static uint64_t rng_state = 88172645463325252ull;

static inline uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static inline uint64_t rng_below(uint64_t n)
{
    return rng() % n;
}

#ifdef HPL_REGION_H
/* [x0,x1) x [y0,y1) x [z0,z1); box2 and box1 one cell deep in the others. */
static inline hpl__box box3(uint64_t x0, uint64_t x1, uint64_t y0, uint64_t y1, uint64_t z0, uint64_t z1)
{
    return (hpl__box){{x0, y0, z0}, {x1, y1, z1}};
}
static inline hpl__box box1(uint64_t x0, uint64_t x1)
{
    return box3(x0, x1, 0, 1, 0, 1);
}
static inline hpl__box box2(uint64_t x0, uint64_t x1, uint64_t y0, uint64_t y1)
{
    return box3(x0, x1, y0, y1, 0, 1);
}
#endif

/* b[i] = a[i-1] + 2 a[i] + a[i+1] over n elements, 0 beyond either end:
 * a 1-D stencil whose split runs need one halo element each side. */
static inline const char *stencil1d_src(void)
{
    return "#include <hplvk.glsl>\n"
           "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; uint n; };\n"
           "void main() {\n"
           "    uint i = hpl_global_id.x;\n"
           "    uint l = i > 0u ? hpl_at(a, i - 1u) : 0u, r = i + 1u < n ? hpl_at(a, i + 1u) : 0u;\n"
           "    hpl_at(b, i) = l + 2u * hpl_at(a, i) + r;\n"
           "}\n";
}

/* b[i] = a[i] + 2 a[i-1] + 1 (a[0] for i = 0): reads one element below. */
static inline const char *stencil_left_src(void)
{
    return "#include <hplvk.glsl>\n"
           "hpl_args { hpl_in(uint, 1) a; hpl_out(uint, 1) b; };\n"
           "void main() { uint i = hpl_global_id.x; uint l = i == 0u ? 0u : i - 1u;\n"
           "              hpl_at(b, i) = hpl_at(a, i) + hpl_at(a, l) * 2u + 1u; }\n";
}


/* dst = src + K src (K a GLSL uint literal such as "2u") + the rows above
 * and below, on every row but the first and last (copied): a 2-D stencil
 * over rows, exact in uint arithmetic. */
#define STENCIL_ROWS_SRC(K)                                                   \
    "#include <hplvk.glsl>\n"                                                 \
    "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"              \
    "void main() {\n"                                                         \
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"                    \
    "    uint v = hpl_at2(src, r, c);\n"                                      \
    "    if (r > 0u && r + 1u < src.dims.x)\n"                                \
    "        v = hpl_at2(src, r - 1u, c) + " K " * v + hpl_at2(src, r + 1u, c);\n" \
    "    hpl_at2(dst, r, c) = v;\n"                                           \
    "}\n"

/* x += s over 1, 2 and 3 dimensions (floats, read-write). */
static inline const char *inc1_src(void)
{
    return "#include <hplvk.glsl>\n"
           "hpl_args { hpl_inout(float, 1) x; float s; };\n"
           "void main() { uint i = hpl_global_id.x; hpl_at(x, i) += s; }\n";
}
static inline const char *inc2_src(void)
{
    return "#include <hplvk.glsl>\n"
           "hpl_args { hpl_inout(float, 2) x; float s; };\n"
           "void main() { uvec3 id = hpl_global_id; hpl_at2(x, id.x, id.y) += s; }\n";
}
static inline const char *inc3_src(void)
{
    return "#include <hplvk.glsl>\n"
           "hpl_args { hpl_inout(float, 3) x; float s; };\n"
           "void main() { uvec3 id = hpl_global_id; hpl_at3(x, id.x, id.y, id.z) += s; }\n";
}

/* How many pieces of at most max elements a box of extents e (3 dims,
 * missing ones 1) is cut into: whole planes (dim 0) when a plane fits, else
 * rows of one plane, else pieces of one row. */
static inline uint64_t box_pieces(const uint64_t e[3], uint64_t max)
{
    uint64_t plane = e[1] * e[2];
    if (plane <= max)
        return (e[0] + max / plane - 1) / (max / plane);
    if (e[2] <= max)
        return e[0] * ((e[1] + max / e[2] - 1) / (max / e[2]));
    return e[0] * e[1] * ((e[2] + max - 1) / max);
}

/* A row stencil, radius 1 along dimension 0 (rows) of a uint 2-D array,
 * each element a hash of its position and its column's neighbours, and the
 * same on the host: the tests of contexts over ranks split it by rows. */
static inline const char *rows_stencil_src(void)
{
    return "#include <hplvk.glsl>\n"
           "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"
           "void main() {\n"
           "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
           "    int n = int(src.dims.x);\n"
           "    uint h = r * 2654435761u + c;\n"
           "    for (int d = -1; d <= 1; d++) {\n"
           "        int k = int(r) + d;\n"
           "        if (k < 0 || k >= n) continue;\n"
           "        h = h * 31u + hpl_at2(src, uint(k), c) * uint(d + 7);\n"
           "    }\n"
           "    hpl_at2(dst, r, c) = h;\n"
           "}\n";
}

static inline void rows_stencil_host(uint64_t rows, uint64_t cols, const uint32_t *src, uint32_t *dst)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            uint32_t h = (uint32_t)r * 2654435761u + (uint32_t)c;
            for (int d = -1; d <= 1; d++) {
                int64_t k = (int64_t)r + d;
                if (k < 0 || k >= (int64_t)rows)
                    continue;
                h = h * 31u + src[(uint64_t)k * cols + c] * (uint32_t)(d + 7);
            }
            dst[r * cols + c] = h;
        }
}

#endif
