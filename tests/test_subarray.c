/* Subarrays (chapter 4b) against a host reference computed here:
 *  - 1-D, 2-D and 3-D arrays; subarrays by ranges (HPL_ALL, HPL_END), read
 *    back with hpl_array_read (dense) and hpl_array_access (host_stride);
 *    hpl_array_info of arrays and subarrays (dims, count, bytes, origin,
 *    is_subarray, parent, root, contiguous, owned box, host strides);
 *  - views, not copies: writes through a subarray (hpl_array_write, HPL_WRITE
 *    access, fill, kernels) change the parent, writes to the parent are seen
 *    through the subarray, and only the subarray's elements count as written;
 *  - nesting (coordinates relative to the parent, origin in the root);
 *  - the cache of subarrays (same box -> same handle), hpl_subarray_count and
 *    hpl_subarray_get in creation order, destroying subarrays and parents;
 *  - kernels on row blocks, column blocks, 1-D and 3-D ranges, nested
 *    subarrays, on devices 0 and 1, with x.dims / x.origin as the kernel sees
 *    them; two subarrays of one array in one eval;
 *  - owned boxes: ghost parts written by a kernel on a device with memory of
 *    its own are not written (the discard chapter 4b allows); owned boxes
 *    decide overlaps; without owned boxes the later write wins;
 *  - only a subarray's missing elements move on a host read (hpl_stats);
 *    subarrays of user storage;
 *  - zero-copy replicas: views work, nothing moves, and writes outside an
 *    owned box land where the host's copy is the only one (chapter 4b);
 *  - errors, each with its code and a message naming the problem. */
#include "harness.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- kernels ----------------------------------------------------------- */

/* x(i, j) = base + 100 i + j (write-only), and what the kernel sees of x. */
static const char *set2_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 2) x; hpl_inout(uint, 1) meta; float base; };\n"
    "void main() {\n"
    "    uvec3 id = hpl_global_id;\n"
    "    hpl_at2(x, id.x, id.y) = base + float(id.x * 100u + id.y);\n"
    "    if (id.x == 0u && id.y == 0u) {\n"
    "        hpl_at(meta, 0) = x.dims.x; hpl_at(meta, 1) = x.dims.y;\n"
    "        hpl_at(meta, 2) = x.origin.x; hpl_at(meta, 3) = x.origin.y;\n"
    "        hpl_at(meta, 4) = hpl_domain_size.x; hpl_at(meta, 5) = hpl_domain_size.y;\n"
    "    }\n"
    "}\n";

static const char *set1_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(float, 1) x; hpl_inout(uint, 1) meta; float base; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x;\n"
    "    hpl_at(x, i) = base + float(i);\n"
    "    if (i == 0u) { hpl_at(meta, 0) = x.dims; hpl_at(meta, 1) = x.origin; hpl_at(meta, 4) = hpl_domain_size.x; }\n"
    "}\n";

/* b = 2 a + s over a's extents. */
static const char *axpy2_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(float, 2) a; hpl_out(float, 2) b; float s; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(b, id.x, id.y) = 2.0 * hpl_at2(a, id.x, id.y) + s; }\n";

/* Kernels for the argument checks (distinctive argument names). */
static const char *line_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(float, 1) line_arg; };\n"
    "void main() { hpl_at(line_arg, hpl_global_id.x) += 1.0; }\n";

static const char *intgrid_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(int, 2) int_grid; };\n"
    "void main() { uvec3 id = hpl_global_id; hpl_at2(int_grid, id.x, id.y) += 1; }\n";

/* ---- helpers ----------------------------------------------------------- */

static hpl_array sub(hpl_context *ctx, hpl_array parent, int n, const hpl_range *r)
{
    hpl_array s = {0};
    CHECK_OK(hpl_subarray(ctx, parent, n, r, &s));
    return s;
}

static hpl_array sub_owned(hpl_context *ctx, hpl_array parent, int n, const hpl_range *r, const hpl_range *owned)
{
    hpl_array s = {0};
    CHECK_OK(hpl_subarray_owned(ctx, parent, n, r, owned, &s));
    return s;
}

static uint64_t vol(const uint64_t d[3])
{
    return d[0] * d[1] * d[2];
}

/* Index of (i, j, k) in a dense row-major array of extents d. */
static size_t at(const uint64_t d[3], uint64_t i, uint64_t j, uint64_t k)
{
    return (size_t)((i * d[1] + j) * d[2] + k);
}

/* Distinct, exactly representable values. */
static void init_ref(float *ref, size_t n, float seed)
{
    for (size_t i = 0; i < n; i++)
        ref[i] = seed + (float)((i * 37) % 1009) + 0.25f * (float)(i % 4);
}

static void compare(const float *got, const float *want, size_t n, const char *what)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s: %zu of %zu elements wrong, first [%zu] = %g want %g", what, bad, n, first,
          bad ? got[first] : 0.0, bad ? want[first] : 0.0);
}

/* The whole (sub)array read with hpl_array_read equals want (n elements). */
static void expect_all(hpl_context *ctx, hpl_array a, const float *want, size_t n, const char *what)
{
    float *got = malloc(n * sizeof(float));
    if (CHECK_OK(hpl_array_read(ctx, a, got, n * sizeof(float))))
        compare(got, want, n, what);
    free(got);
}

/* The subarray s of a root whose host reference is root (extents rd) covers
 * the box at origin o (root coordinates) of extents d: checks its contents
 * with hpl_array_read and with hpl_array_access + host_stride. */
static void check_view(hpl_context *ctx, hpl_array s, const float *root, const uint64_t rd[3], const uint64_t o[3],
                       const uint64_t d[3], const char *what)
{
    size_t n = (size_t)vol(d);
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    for (uint64_t i = 0; i < d[0]; i++)
        for (uint64_t j = 0; j < d[1]; j++)
            for (uint64_t k = 0; k < d[2]; k++)
                want[at(d, i, j, k)] = root[at(rd, o[0] + i, o[1] + j, o[2] + k)];
    char w[256];
    snprintf(w, sizeof w, "%s (hpl_array_read)", what);
    if (CHECK_OK(hpl_array_read(ctx, s, got, n * sizeof(float))))
        compare(got, want, n, w);
    hpl_array_info info;
    if (CHECK_OK(hpl_array_get_info(ctx, s, &info))) {
        const float *p = th_access(ctx, s, HPL_READ);
        if (p) {
            for (uint64_t i = 0; i < d[0]; i++)
                for (uint64_t j = 0; j < d[1]; j++)
                    for (uint64_t k = 0; k < d[2]; k++)
                        got[at(d, i, j, k)] = p[i * info.host_stride[0] + j * info.host_stride[1] + k];
            snprintf(w, sizeof w, "%s (hpl_array_access, host_stride %llu,%llu)", what,
                     (unsigned long long)info.host_stride[0], (unsigned long long)info.host_stride[1]);
            compare(got, want, n, w);
        }
    }
    free(want);
    free(got);
}

/* hpl_array_info of a subarray (or array) against the expected values. The
 * owned box is given in the array's own coordinates; NULL: all of it. */
static void check_info(hpl_context *ctx, hpl_array s, const char *what, hpl_type type, int ndims,
                       const uint64_t d[3], const uint64_t o[3], bool is_sub, hpl_array parent, hpl_array root,
                       bool contiguous, const uint64_t *owned_first, const uint64_t *owned_last,
                       const uint64_t root_dims[3])
{
    hpl_array_info info;
    memset(&info, 0xab, sizeof info);
    if (!CHECK_OK(hpl_array_get_info(ctx, s, &info)))
        return;
    size_t es = hpl_type_size(type);
    CHECK(info.type == type, "%s: type %d want %d", what, info.type, type);
    CHECK(info.ndims == ndims, "%s: ndims %d want %d", what, info.ndims, ndims);
    CHECK(info.dims[0] == d[0] && info.dims[1] == d[1] && info.dims[2] == d[2],
          "%s: dims %llu,%llu,%llu want %llu,%llu,%llu", what, (unsigned long long)info.dims[0],
          (unsigned long long)info.dims[1], (unsigned long long)info.dims[2], (unsigned long long)d[0],
          (unsigned long long)d[1], (unsigned long long)d[2]);
    CHECK(info.count == vol(d) && info.bytes == vol(d) * es, "%s: count %llu bytes %llu want %llu, %llu", what,
          (unsigned long long)info.count, (unsigned long long)info.bytes, (unsigned long long)vol(d),
          (unsigned long long)(vol(d) * es));
    CHECK(info.is_subarray == is_sub, "%s: is_subarray %d want %d", what, info.is_subarray, is_sub);
    CHECK(info.parent.id == parent.id, "%s: parent id %llx want %llx", what, (unsigned long long)info.parent.id,
          (unsigned long long)parent.id);
    CHECK(info.root.id == root.id, "%s: root id %llx want %llx", what, (unsigned long long)info.root.id,
          (unsigned long long)root.id);
    for (int k = 0; k < ndims; k++) {
        uint64_t of = owned_first ? owned_first[k] : 0, ol = owned_last ? owned_last[k] : d[k] - 1;
        CHECK(info.origin[k] == o[k], "%s: origin[%d] %llu want %llu", what, k, (unsigned long long)info.origin[k],
              (unsigned long long)o[k]);
        CHECK(info.owned_first[k] == of && info.owned_last[k] == ol, "%s: owned box dim %d: %llu..%llu want %llu..%llu",
              what, k, (unsigned long long)info.owned_first[k], (unsigned long long)info.owned_last[k],
              (unsigned long long)of, (unsigned long long)ol);
    }
    /* Host strides are the root's row-major strides. */
    uint64_t hs[3] = {root_dims[1] * root_dims[2], root_dims[2], 1};
    for (int k = 0; k < ndims; k++)
        CHECK(info.host_stride[k] == hs[k], "%s: host_stride[%d] %llu want %llu", what, k,
              (unsigned long long)info.host_stride[k], (unsigned long long)hs[k]);
    CHECK(info.contiguous == contiguous, "%s: contiguous %d want %d", what, info.contiguous, contiguous);
    CHECK(info.name != NULL && info.name[0], "%s: no name", what);
}

/* Does the last error name dimension d ("[1]", "dimension 1", "dim 1")? */
static bool msg_names_dim(int d)
{
    char a[32], b[32], c[32], e[32];
    snprintf(a, sizeof a, "[%d]", d);
    snprintf(b, sizeof b, "dimension %d", d);
    snprintf(c, sizeof c, "dim %d", d);
    snprintf(e, sizeof e, "dims %d", d);
    const char *m = hpl_last_error();
    return th_contains(m, a) || th_contains(m, b) || th_contains(m, c) || th_contains(m, e);
}

#define U3(a, b, c) ((const uint64_t[3]){(a), (b), (c)})

/* ---- 1. views of 1-D, 2-D and 3-D arrays ------------------------------- */

static void views(hpl_context *ctx)
{
    /* 1-D */
    {
        enum { N = 100 };
        float ref[N];
        init_ref(ref, N, 1.0f);
        hpl_array a;
        if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {N}, .name = "line"}, &a)))
            return;
        CHECK_OK(hpl_array_write(ctx, a, ref, sizeof ref));
        const uint64_t rd[3] = {N, 1, 1};
        check_info(ctx, a, "1-D array itself", HPL_FLOAT32, 1, rd, U3(0, 0, 0), false, a, a, true, NULL, NULL, rd);
        hpl_array s1 = sub(ctx, a, HPL_RANGES({10, 29}));
        hpl_array s2 = sub(ctx, a, HPL_RANGES(HPL_ALL));
        hpl_array s3 = sub(ctx, a, HPL_RANGES({90, HPL_END}));
        hpl_array s4 = sub(ctx, a, HPL_RANGES({50, 50}));
        check_info(ctx, s1, "1-D {10,29}", HPL_FLOAT32, 1, U3(20, 1, 1), U3(10, 0, 0), true, a, a, true, NULL, NULL,
                   rd);
        check_info(ctx, s2, "1-D HPL_ALL", HPL_FLOAT32, 1, U3(N, 1, 1), U3(0, 0, 0), true, a, a, true, NULL, NULL,
                   rd);
        check_info(ctx, s3, "1-D {90,HPL_END}", HPL_FLOAT32, 1, U3(10, 1, 1), U3(90, 0, 0), true, a, a, true, NULL,
                   NULL, rd);
        check_info(ctx, s4, "1-D {50,50}", HPL_FLOAT32, 1, U3(1, 1, 1), U3(50, 0, 0), true, a, a, true, NULL, NULL,
                   rd);
        check_view(ctx, s1, ref, rd, U3(10, 0, 0), U3(20, 1, 1), "1-D {10,29}");
        check_view(ctx, s2, ref, rd, U3(0, 0, 0), U3(N, 1, 1), "1-D HPL_ALL");
        check_view(ctx, s3, ref, rd, U3(90, 0, 0), U3(10, 1, 1), "1-D {90,HPL_END}");
        check_view(ctx, s4, ref, rd, U3(50, 0, 0), U3(1, 1, 1), "1-D {50,50}");
        CHECK_OK(hpl_array_destroy(ctx, a));
    }
    /* 2-D */
    {
        enum { R = 24, C = 16 };
        static float ref[R * C];
        init_ref(ref, R * C, 3.0f);
        hpl_array m;
        if (!CHECK_OK(
                hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {R, C}, .name = "mat"}, &m)))
            return;
        CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
        const uint64_t rd[3] = {R, C, 1};
        check_info(ctx, m, "2-D array itself", HPL_FLOAT32, 2, rd, U3(0, 0, 0), false, m, m, true, NULL, NULL, rd);
        hpl_array rows = sub(ctx, m, HPL_RANGES({4, 9}, HPL_ALL));
        hpl_array cols = sub(ctx, m, HPL_RANGES(HPL_ALL, {3, 7}));
        hpl_array inner = sub(ctx, m, HPL_RANGES({2, 5}, {1, 14}));
        hpl_array onerow = sub(ctx, m, HPL_RANGES({7, 7}, {2, 9}));
        hpl_array tail = sub(ctx, m, HPL_RANGES({20, HPL_END}, {10, HPL_END}));
        hpl_array lastcol = sub(ctx, m, HPL_RANGES({0, HPL_END}, {C - 1, C - 1}));
        check_info(ctx, rows, "2-D row block", HPL_FLOAT32, 2, U3(6, C, 1), U3(4, 0, 0), true, m, m, true, NULL, NULL,
                   rd);
        check_info(ctx, cols, "2-D column block", HPL_FLOAT32, 2, U3(R, 5, 1), U3(0, 3, 0), true, m, m, false, NULL,
                   NULL, rd);
        check_info(ctx, inner, "2-D inner block", HPL_FLOAT32, 2, U3(4, 14, 1), U3(2, 1, 0), true, m, m, false, NULL,
                   NULL, rd);
        check_info(ctx, onerow, "2-D part of one row", HPL_FLOAT32, 2, U3(1, 8, 1), U3(7, 2, 0), true, m, m, true,
                   NULL, NULL, rd);
        check_info(ctx, tail, "2-D {20,END},{10,END}", HPL_FLOAT32, 2, U3(4, 6, 1), U3(20, 10, 0), true, m, m, false,
                   NULL, NULL, rd);
        check_info(ctx, lastcol, "2-D last column", HPL_FLOAT32, 2, U3(R, 1, 1), U3(0, C - 1, 0), true, m, m, false,
                   NULL, NULL, rd);
        /* A subarray's host pointer is its first element inside the root's
         * host storage. */
        const float *proot = th_access(ctx, m, HPL_READ);
        const float *prows = th_access(ctx, rows, HPL_READ);
        const float *pcols = th_access(ctx, cols, HPL_READ);
        const float *pinner = th_access(ctx, inner, HPL_READ);
        if (proot && prows && pcols && pinner)
            CHECK(prows == proot + 4 * C && pcols == proot + 3 && pinner == proot + 2 * C + 1,
                  "host pointers of row/column/inner blocks are root + %td, %td, %td; want %d, 3, %d",
                  prows - proot, pcols - proot, pinner - proot, 4 * C, 2 * C + 1);
        check_view(ctx, rows, ref, rd, U3(4, 0, 0), U3(6, C, 1), "2-D row block");
        check_view(ctx, cols, ref, rd, U3(0, 3, 0), U3(R, 5, 1), "2-D column block");
        check_view(ctx, inner, ref, rd, U3(2, 1, 0), U3(4, 14, 1), "2-D inner block");
        check_view(ctx, onerow, ref, rd, U3(7, 2, 0), U3(1, 8, 1), "2-D part of one row");
        check_view(ctx, tail, ref, rd, U3(20, 10, 0), U3(4, 6, 1), "2-D {20,END},{10,END}");
        check_view(ctx, lastcol, ref, rd, U3(0, C - 1, 0), U3(R, 1, 1), "2-D last column");
        CHECK_OK(hpl_array_destroy(ctx, m));
    }
    /* 3-D */
    {
        enum { A = 5, B = 6, C = 7 };
        static float ref[A * B * C];
        init_ref(ref, A * B * C, 7.0f);
        hpl_array t;
        if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {A, B, C}, .name = "cube"},
                                       &t)))
            return;
        CHECK_OK(hpl_array_write(ctx, t, ref, sizeof ref));
        const uint64_t rd[3] = {A, B, C};
        check_info(ctx, t, "3-D array itself", HPL_FLOAT32, 3, rd, U3(0, 0, 0), false, t, t, true, NULL, NULL, rd);
        hpl_array planes = sub(ctx, t, HPL_RANGES({1, 3}, HPL_ALL, HPL_ALL));
        hpl_array mid = sub(ctx, t, HPL_RANGES(HPL_ALL, {2, 4}, HPL_ALL));
        hpl_array box = sub(ctx, t, HPL_RANGES({1, 2}, {1, 3}, {2, 5}));
        hpl_array run = sub(ctx, t, HPL_RANGES({2, 2}, {1, 4}, HPL_ALL));
        hpl_array end = sub(ctx, t, HPL_RANGES({3, HPL_END}, {4, HPL_END}, {6, HPL_END}));
        check_info(ctx, planes, "3-D planes 1..3", HPL_FLOAT32, 3, U3(3, B, C), U3(1, 0, 0), true, t, t, true, NULL,
                   NULL, rd);
        check_info(ctx, mid, "3-D rows 2..4 of every plane", HPL_FLOAT32, 3, U3(A, 3, C), U3(0, 2, 0), true, t, t,
                   false, NULL, NULL, rd);
        check_info(ctx, box, "3-D inner box", HPL_FLOAT32, 3, U3(2, 3, 4), U3(1, 1, 2), true, t, t, false, NULL, NULL,
                   rd);
        check_info(ctx, run, "3-D full rows 1..4 of plane 2", HPL_FLOAT32, 3, U3(1, 4, C), U3(2, 1, 0), true, t, t,
                   true, NULL, NULL, rd);
        check_info(ctx, end, "3-D corner with HPL_END", HPL_FLOAT32, 3, U3(2, 2, 1), U3(3, 4, 6), true, t, t, false,
                   NULL, NULL, rd);
        check_view(ctx, planes, ref, rd, U3(1, 0, 0), U3(3, B, C), "3-D planes 1..3");
        check_view(ctx, mid, ref, rd, U3(0, 2, 0), U3(A, 3, C), "3-D rows 2..4 of every plane");
        check_view(ctx, box, ref, rd, U3(1, 1, 2), U3(2, 3, 4), "3-D inner box");
        check_view(ctx, run, ref, rd, U3(2, 1, 0), U3(1, 4, C), "3-D full rows of plane 2");
        check_view(ctx, end, ref, rd, U3(3, 4, 6), U3(2, 2, 1), "3-D corner with HPL_END");
        CHECK_OK(hpl_array_destroy(ctx, t));
    }
}

/* ---- 2. a view, not a copy --------------------------------------------- */

enum { VR = 24, VC = 16 };

/* ref of box (o, d) of a VR x VC reference. */
static void ref_box_apply(float *ref, uint64_t r0, uint64_t nr, uint64_t c0, uint64_t nc, float add, float mul)
{
    for (uint64_t i = r0; i < r0 + nr; i++)
        for (uint64_t j = c0; j < c0 + nc; j++)
            ref[i * VC + j] = ref[i * VC + j] * mul + add;
}

static void not_a_copy(hpl_context *ctx, hpl_kernel inc2)
{
    static float ref[VR * VC];
    const uint64_t rd[3] = {VR, VC, 1};
    init_ref(ref, VR * VC, 11.0f);
    hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
    CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
    hpl_array rows = sub(ctx, m, HPL_RANGES({4, 9}, HPL_ALL));
    hpl_array cols = sub(ctx, m, HPL_RANGES(HPL_ALL, {3, 7}));

    /* hpl_array_write through a row block and a column block. */
    {
        float buf[VR * 5];
        for (int i = 0; i < 6 * VC; i++)
            buf[i] = 5000.0f + (float)i;
        CHECK_OK(hpl_array_write(ctx, rows, buf, 6 * VC * sizeof(float)));
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < VC; j++)
                ref[(4 + i) * VC + j] = buf[i * VC + j];
        expect_all(ctx, m, ref, VR * VC, "parent after hpl_array_write of a row block");
        for (int i = 0; i < VR * 5; i++)
            buf[i] = -3000.0f - (float)i;
        CHECK_OK(hpl_array_write(ctx, cols, buf, sizeof buf));
        for (int i = 0; i < VR; i++)
            for (int j = 0; j < 5; j++)
                ref[i * VC + 3 + j] = buf[i * 5 + j];
        expect_all(ctx, m, ref, VR * VC, "parent after hpl_array_write of a column block");
        check_view(ctx, rows, ref, rd, U3(4, 0, 0), U3(6, VC, 1), "row block after a column block write");
    }
    /* HPL_WRITE access through a column block, with host_stride. */
    {
        hpl_array_info info;
        float *p = th_access(ctx, cols, HPL_WRITE);
        if (p && CHECK_OK(hpl_array_get_info(ctx, cols, &info))) {
            for (int i = 0; i < VR; i++)
                for (int j = 0; j < 5; j++)
                    ref[i * VC + 3 + j] = p[i * info.host_stride[0] + j * info.host_stride[1]] =
                        (float)(i * 10 + j) + 0.5f;
        }
        expect_all(ctx, m, ref, VR * VC, "parent after an HPL_WRITE access of a column block");
    }
    /* HPL_READ_WRITE access through a row block. */
    {
        hpl_array_info info;
        float *p = th_access(ctx, rows, HPL_READ_WRITE);
        if (p && CHECK_OK(hpl_array_get_info(ctx, rows, &info))) {
            int bad = 0;
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < VC; j++) {
                    float *e = &p[i * info.host_stride[0] + j * info.host_stride[1]];
                    bad += *e != ref[(4 + i) * VC + j];
                    ref[(4 + i) * VC + j] = *e = *e * 2.0f;
                }
            CHECK(bad == 0, "HPL_READ_WRITE access of a row block: %d elements differ from the parent's", bad);
        }
        expect_all(ctx, m, ref, VR * VC, "parent after an HPL_READ_WRITE access of a row block");
    }
    /* Fill of the subarrays, on the host and on device 1. */
    {
        float v = 42.0f;
        CHECK_OK(hpl_array_fill(ctx, rows, &v, HPL_ON_HOST));
        ref_box_apply(ref, 4, 6, 0, VC, 42.0f, 0.0f);
        expect_all(ctx, m, ref, VR * VC, "parent after a host fill of a row block");
        v = -8.0f;
        CHECK_OK(hpl_array_fill(ctx, cols, &v, 1));
        ref_box_apply(ref, 0, VR, 3, 5, -8.0f, 0.0f);
        expect_all(ctx, m, ref, VR * VC, "parent after a fill of a column block on device 1");
        check_view(ctx, rows, ref, rd, U3(4, 0, 0), U3(6, VC, 1), "row block after a column fill on device 1");
    }
    /* Kernels through the subarrays change the parent. */
    {
        hpl_launch l0 = th_on(0), l1 = th_on(1);
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(rows), hpl_f32(1.0f))));
        ref_box_apply(ref, 4, 6, 0, VC, 1.0f, 1.0f);
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(cols), hpl_f32(2.0f))));
        ref_box_apply(ref, 0, VR, 3, 5, 2.0f, 1.0f);
        expect_all(ctx, m, ref, VR * VC, "parent after kernels on a row block (dev 0) and a column block (dev 1)");
    }
    /* Writes to the parent are seen through the subarrays: host write, then
     * a kernel on the whole parent on device 1. */
    {
        init_ref(ref, VR * VC, 100.0f);
        CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
        check_view(ctx, rows, ref, rd, U3(4, 0, 0), U3(6, VC, 1), "row block after a parent host write");
        check_view(ctx, cols, ref, rd, U3(0, 3, 0), U3(VR, 5, 1), "column block after a parent host write");
        hpl_launch l1 = th_on(1);
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(m), hpl_f32(0.5f))));
        ref_box_apply(ref, 0, VR, 0, VC, 0.5f, 1.0f);
        check_view(ctx, cols, ref, rd, U3(0, 3, 0), U3(VR, 5, 1), "column block after a kernel on the parent");
        check_view(ctx, rows, ref, rd, U3(4, 0, 0), U3(6, VC, 1), "row block after a kernel on the parent");
    }
    /* Only the subarray counts as written: the parent written on device 0,
     * then a host write of a row block; the rest of the parent must come
     * from device 0, the row block from the host. */
    {
        hpl_launch l0 = th_on(0);
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(m), hpl_f32(3.0f))));
        ref_box_apply(ref, 0, VR, 0, VC, 3.0f, 1.0f);
        float buf[6 * VC];
        for (int i = 0; i < 6 * VC; i++)
            buf[i] = 777.0f + (float)i;
        CHECK_OK(hpl_array_write(ctx, rows, buf, sizeof buf));
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < VC; j++)
                ref[(4 + i) * VC + j] = buf[i * VC + j];
        /* A kernel on device 0 must see the host's row block and its own rest. */
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(m), hpl_f32(1.0f))));
        ref_box_apply(ref, 0, VR, 0, VC, 1.0f, 1.0f);
        expect_all(ctx, m, ref, VR * VC, "parent written on device 0 then a row block on the host, then device 0");
        /* Same with a column block and device 1. */
        hpl_launch l1 = th_on(1);
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(m), hpl_f32(2.0f))));
        ref_box_apply(ref, 0, VR, 0, VC, 2.0f, 1.0f);
        float *p = th_access(ctx, cols, HPL_WRITE);
        hpl_array_info info;
        if (p && CHECK_OK(hpl_array_get_info(ctx, cols, &info)))
            for (int i = 0; i < VR; i++)
                for (int j = 0; j < 5; j++)
                    ref[i * VC + 3 + j] = p[i * info.host_stride[0] + j * info.host_stride[1]] = -(float)(i + j);
        expect_all(ctx, m, ref, VR * VC, "parent written on device 1 then a column block on the host");
    }
    CHECK_OK(hpl_array_destroy(ctx, m));
}

/* ---- 3. nesting -------------------------------------------------------- */

static void nesting(hpl_context *ctx, hpl_kernel inc2, hpl_kernel set2)
{
    static float ref[VR * VC];
    const uint64_t rd[3] = {VR, VC, 1};
    init_ref(ref, VR * VC, 21.0f);
    hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
    CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
    hpl_array s1 = sub(ctx, m, HPL_RANGES({4, 19}, {2, 13}));          /* rows 4..19, cols 2..13 */
    hpl_array s2 = sub(ctx, s1, HPL_RANGES({2, 5}, {3, HPL_END}));     /* root rows 6..9, cols 5..13 */
    hpl_array s3 = sub(ctx, s2, HPL_RANGES({1, 1}, {0, 2}));           /* root row 7, cols 5..7 */
    hpl_array s4 = sub(ctx, s1, HPL_RANGES(HPL_ALL, {0, 0}));          /* root rows 4..19, col 2 */
    check_info(ctx, s1, "nested level 1", HPL_FLOAT32, 2, U3(16, 12, 1), U3(4, 2, 0), true, m, m, false, NULL, NULL,
               rd);
    check_info(ctx, s2, "nested level 2", HPL_FLOAT32, 2, U3(4, 9, 1), U3(6, 5, 0), true, s1, m, false, NULL, NULL,
               rd);
    check_info(ctx, s3, "nested level 3", HPL_FLOAT32, 2, U3(1, 3, 1), U3(7, 5, 0), true, s2, m, true, NULL, NULL,
               rd);
    check_info(ctx, s4, "nested column", HPL_FLOAT32, 2, U3(16, 1, 1), U3(4, 2, 0), true, s1, m, false, NULL, NULL,
               rd);
    check_view(ctx, s2, ref, rd, U3(6, 5, 0), U3(4, 9, 1), "nested level 2");
    check_view(ctx, s3, ref, rd, U3(7, 5, 0), U3(1, 3, 1), "nested level 3");
    check_view(ctx, s4, ref, rd, U3(4, 2, 0), U3(16, 1, 1), "nested column");
    /* A row block of a row block of the whole width stays contiguous. */
    hpl_array r1 = sub(ctx, m, HPL_RANGES({10, 20}, HPL_ALL));
    hpl_array r2 = sub(ctx, r1, HPL_RANGES({3, 5}, HPL_ALL));
    check_info(ctx, r2, "row block of a row block", HPL_FLOAT32, 2, U3(3, VC, 1), U3(13, 0, 0), true, r1, m, true, NULL,
               NULL, rd);
    /* Nested subarrays are listed in their own parent only. */
    CHECK(hpl_subarray_count(ctx, m) == 2, "root lists %d subarrays, want 2 (s1, r1)", hpl_subarray_count(ctx, m));
    CHECK(hpl_subarray_count(ctx, s1) == 2, "s1 lists %d subarrays, want 2 (s2, s4)", hpl_subarray_count(ctx, s1));
    CHECK(hpl_subarray_count(ctx, s2) == 1, "s2 lists %d subarrays, want 1", hpl_subarray_count(ctx, s2));
    CHECK(hpl_subarray_count(ctx, s3) == 0, "s3 lists %d subarrays, want 0", hpl_subarray_count(ctx, s3));

    /* Writes through nested subarrays. */
    float buf[4 * 9];
    for (int i = 0; i < 36; i++)
        buf[i] = 9000.0f + (float)i;
    CHECK_OK(hpl_array_write(ctx, s2, buf, sizeof buf));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 9; j++)
            ref[(6 + i) * VC + 5 + j] = buf[i * 9 + j];
    expect_all(ctx, m, ref, VR * VC, "root after hpl_array_write of a level-2 subarray");
    check_view(ctx, s1, ref, rd, U3(4, 2, 0), U3(16, 12, 1), "level 1 after a level-2 write");
    hpl_launch l1 = th_on(1), l0 = th_on(0);
    CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(s3), hpl_f32(10.0f))));
    ref_box_apply(ref, 7, 1, 5, 3, 10.0f, 1.0f);
    CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(s4), hpl_f32(20.0f))));
    ref_box_apply(ref, 4, 16, 2, 1, 20.0f, 1.0f);
    expect_all(ctx, m, ref, VR * VC, "root after kernels on nested subarrays (dev 1, dev 0)");
    /* x.origin of a nested subarray is in the root's coordinates. */
    hpl_array meta = th_array(ctx, HPL_UINT32, 8, 0, 0);
    CHECK_OK(hpl_eval(ctx, set2, &l1, HPL_ARGS(hpl_arr(s2), hpl_arr(meta), hpl_f32(-50.0f))));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 9; j++)
            ref[(6 + i) * VC + 5 + j] = -50.0f + (float)(i * 100 + j);
    uint32_t mt[8];
    if (CHECK_OK(hpl_array_read(ctx, meta, mt, sizeof mt)))
        CHECK(mt[0] == 4 && mt[1] == 9 && mt[2] == 6 && mt[3] == 5,
              "kernel on a nested subarray saw dims %u,%u origin %u,%u; want 4,9 and 6,5", mt[0], mt[1], mt[2], mt[3]);
    expect_all(ctx, m, ref, VR * VC, "root after a write-only kernel on a nested subarray");
    CHECK_OK(hpl_array_destroy(ctx, meta));
    /* Destroying the root invalidates every level. */
    CHECK_OK(hpl_array_destroy(ctx, m));
    hpl_array_info info;
    CHECK_FAILS(hpl_array_get_info(ctx, s1, &info), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_get_info(ctx, s3, &info), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_array_get_info(ctx, r2, &info), HPL_ERROR_INVALID_HANDLE, "handle");
}

/* ---- 4. the subarray cache and the list -------------------------------- */

static void caching(hpl_context *ctx, hpl_kernel inc2)
{
    static float ref[VR * VC];
    init_ref(ref, VR * VC, 31.0f);
    hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
    CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
    CHECK(hpl_subarray_count(ctx, m) == 0, "a new array lists %d subarrays", hpl_subarray_count(ctx, m));

    hpl_array a = sub(ctx, m, HPL_RANGES({0, 5}, HPL_ALL));
    hpl_array a2 = sub(ctx, m, HPL_RANGES({0, 5}, HPL_ALL));
    hpl_array a3 = sub(ctx, m, HPL_RANGES({0, 5}, {0, VC - 1}));
    CHECK(a.id != 0 && a.id != m.id, "subarray id %llx (parent %llx)", (unsigned long long)a.id,
          (unsigned long long)m.id);
    CHECK(a2.id == a.id, "the same ranges twice gave ids %llx and %llx", (unsigned long long)a.id,
          (unsigned long long)a2.id);
    CHECK(a3.id == a.id, "HPL_ALL and {0, %d} (the same box) gave ids %llx and %llx", VC - 1, (unsigned long long)a.id,
          (unsigned long long)a3.id);
    hpl_array b = sub(ctx, m, HPL_RANGES({6, 11}, HPL_ALL));
    CHECK(b.id != a.id, "different ranges gave the same id %llx", (unsigned long long)a.id);
    hpl_array c = sub_owned(ctx, m, HPL_RANGES({0, 5}, HPL_ALL), ((const hpl_range[]){{1, 4}, HPL_ALL}));
    hpl_array c2 = sub_owned(ctx, m, HPL_RANGES({0, 5}, HPL_ALL), ((const hpl_range[]){{1, 4}, HPL_ALL}));
    hpl_array d = sub_owned(ctx, m, HPL_RANGES({0, 5}, HPL_ALL), ((const hpl_range[]){{2, 5}, HPL_ALL}));
    CHECK(c.id != a.id, "an owned box gave the same subarray as none (%llx)", (unsigned long long)c.id);
    CHECK(c2.id == c.id, "the same ranges and owned box twice gave ids %llx and %llx", (unsigned long long)c.id,
          (unsigned long long)c2.id);
    CHECK(d.id != c.id && d.id != a.id, "another owned box gave id %llx (others %llx, %llx)", (unsigned long long)d.id,
          (unsigned long long)c.id, (unsigned long long)a.id);
    hpl_array e = sub(ctx, m, HPL_RANGES(HPL_ALL, {2, 3}));

    /* The list: a, b, c, d, e in creation order (repeats not listed). */
    hpl_array want[5] = {a, b, c, d, e};
    int n = hpl_subarray_count(ctx, m);
    CHECK(n == 5, "hpl_subarray_count = %d, want 5", n);
    for (int i = 0; i < 5 && i < n; i++) {
        hpl_array g = {0};
        if (CHECK_OK(hpl_subarray_get(ctx, m, i, &g)))
            CHECK(g.id == want[i].id, "hpl_subarray_get(%d) = %llx, want %llx", i, (unsigned long long)g.id,
                  (unsigned long long)want[i].id);
    }
    /* Destroying a subarray removes it from the list, keeps the order of the
     * rest, and never changes the parent's data: not even when the only
     * valid copy of its elements is on a device. */
    hpl_launch l1 = th_on(1);
    CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(b), hpl_f32(64.0f))));
    ref_box_apply(ref, 6, 6, 0, VC, 64.0f, 1.0f);
    CHECK_OK(hpl_array_destroy(ctx, b));
    hpl_array_info info;
    CHECK_FAILS(hpl_array_get_info(ctx, b, &info), HPL_ERROR_INVALID_HANDLE, "handle");
    float tmp[VC];
    CHECK_FAILS(hpl_array_read(ctx, b, tmp, sizeof tmp), HPL_ERROR_INVALID_HANDLE, "handle");
    expect_all(ctx, m, ref, VR * VC, "parent after destroying a subarray written on device 1");
    hpl_array want2[4] = {a, c, d, e};
    n = hpl_subarray_count(ctx, m);
    CHECK(n == 4, "after destroying one: hpl_subarray_count = %d, want 4", n);
    for (int i = 0; i < 4 && i < n; i++) {
        hpl_array g = {0};
        if (CHECK_OK(hpl_subarray_get(ctx, m, i, &g)))
            CHECK(g.id == want2[i].id, "after destroying one: hpl_subarray_get(%d) = %llx, want %llx", i,
                  (unsigned long long)g.id, (unsigned long long)want2[i].id);
    }
    /* Asking again for a destroyed box makes a new, listed, usable subarray. */
    hpl_array b2 = sub(ctx, m, HPL_RANGES({6, 11}, HPL_ALL));
    CHECK(hpl_subarray_count(ctx, m) == 5, "after re-creating: count %d", hpl_subarray_count(ctx, m));
    hpl_array g = {0};
    if (CHECK_OK(hpl_subarray_get(ctx, m, 4, &g)))
        CHECK(g.id == b2.id, "re-created subarray is listed last: get(4) = %llx, want %llx", (unsigned long long)g.id,
              (unsigned long long)b2.id);
    check_view(ctx, b2, ref, (const uint64_t[3]){VR, VC, 1}, U3(6, 0, 0), U3(6, VC, 1), "re-created row block");
    /* Destroying the parent destroys its subarrays. */
    CHECK_OK(hpl_array_destroy(ctx, m));
    hpl_array all[6] = {a, b2, c, d, e, a3};
    for (int i = 0; i < 6; i++) {
        CHECK_FAILS(hpl_array_get_info(ctx, all[i], &info), HPL_ERROR_INVALID_HANDLE, "handle");
        float v = 0;
        CHECK_FAILS(hpl_array_fill(ctx, all[i], &v, 0), HPL_ERROR_INVALID_HANDLE, "handle");
    }
    CHECK_FAILS(hpl_array_destroy(ctx, a), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK(hpl_subarray_count(ctx, m) == HPL_ERROR_INVALID_HANDLE, "hpl_subarray_count of a destroyed array = %d",
          hpl_subarray_count(ctx, m));
}

/* ---- 5. kernels on subarrays ------------------------------------------- */

static void kernels(hpl_context *ctx, hpl_kernel inc1, hpl_kernel inc2, hpl_kernel inc3, hpl_kernel set1,
                    hpl_kernel set2, hpl_kernel axpy2)
{
    static float ref[VR * VC];
    const uint64_t rd[3] = {VR, VC, 1};
    init_ref(ref, VR * VC, 41.0f);
    hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
    CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
    hpl_array meta = th_array(ctx, HPL_UINT32, 8, 0, 0);
    uint32_t mt[8];
    hpl_array rows = sub(ctx, m, HPL_RANGES({5, 12}, HPL_ALL));
    hpl_array cols = sub(ctx, m, HPL_RANGES(HPL_ALL, {9, 13}));
    hpl_array inner = sub(ctx, m, HPL_RANGES({14, 20}, {1, 6}));
    for (int dev = 0; dev < 2; dev++) {
        hpl_launch l = th_on(dev);
        char what[160];
        CHECK_OK(hpl_eval(ctx, inc2, &l, HPL_ARGS(hpl_arr(rows), hpl_f32(1.0f + (float)dev))));
        ref_box_apply(ref, 5, 8, 0, VC, 1.0f + (float)dev, 1.0f);
        snprintf(what, sizeof what, "parent after a kernel on a row block on device %d", dev);
        expect_all(ctx, m, ref, VR * VC, what);
        CHECK_OK(hpl_eval(ctx, inc2, &l, HPL_ARGS(hpl_arr(cols), hpl_f32(10.0f + (float)dev))));
        ref_box_apply(ref, 0, VR, 9, 5, 10.0f + (float)dev, 1.0f);
        snprintf(what, sizeof what, "parent after a kernel on a column block on device %d", dev);
        expect_all(ctx, m, ref, VR * VC, what);
        /* Write-only kernel: index 0 at the subarray's first element, dims and
         * origin as the kernel sees them, the domain is the subarray's. */
        CHECK_OK(hpl_eval(ctx, set2, &l, HPL_ARGS(hpl_arr(cols), hpl_arr(meta), hpl_f32(1000.0f * (float)(dev + 1)))));
        for (int i = 0; i < VR; i++)
            for (int j = 0; j < 5; j++)
                ref[i * VC + 9 + j] = 1000.0f * (float)(dev + 1) + (float)(i * 100 + j);
        snprintf(what, sizeof what, "parent after a write-only kernel on a column block on device %d", dev);
        expect_all(ctx, m, ref, VR * VC, what);
        if (CHECK_OK(hpl_array_read(ctx, meta, mt, sizeof mt)))
            CHECK(mt[0] == VR && mt[1] == 5 && mt[2] == 0 && mt[3] == 9 && mt[4] == VR && mt[5] == 5,
                  "device %d: column block seen as dims %u,%u origin %u,%u domain %u,%u; want %d,5 0,9 %d,5", dev,
                  mt[0], mt[1], mt[2], mt[3], mt[4], mt[5], VR, VR);
        CHECK_OK(hpl_eval(ctx, set2, &l, HPL_ARGS(hpl_arr(inner), hpl_arr(meta), hpl_f32(-1000.0f))));
        for (int i = 0; i < 7; i++)
            for (int j = 0; j < 6; j++)
                ref[(14 + i) * VC + 1 + j] = -1000.0f + (float)(i * 100 + j);
        snprintf(what, sizeof what, "parent after a write-only kernel on an inner block on device %d", dev);
        expect_all(ctx, m, ref, VR * VC, what);
        if (CHECK_OK(hpl_array_read(ctx, meta, mt, sizeof mt)))
            CHECK(mt[0] == 7 && mt[1] == 6 && mt[2] == 14 && mt[3] == 1 && mt[4] == 7 && mt[5] == 6,
                  "device %d: inner block seen as dims %u,%u origin %u,%u domain %u,%u; want 7,6 14,1 7,6", dev,
                  mt[0], mt[1], mt[2], mt[3], mt[4], mt[5]);
        check_view(ctx, inner, ref, rd, U3(14, 1, 0), U3(7, 6, 1), "inner block after kernels");
    }
    /* Two subarrays of the same array in one eval: rows 0..3 read, rows
     * 20..23 written (disjoint), on each device. */
    for (int dev = 0; dev < 2; dev++) {
        hpl_array top = sub(ctx, m, HPL_RANGES({0, 3}, HPL_ALL));
        hpl_array bottom = sub(ctx, m, HPL_RANGES({20, 23}, HPL_ALL));
        hpl_launch l = th_on(dev);
        CHECK_OK(hpl_eval(ctx, axpy2, &l, HPL_ARGS(hpl_arr(top), hpl_arr(bottom), hpl_f32((float)dev - 0.5f))));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < VC; j++)
                ref[(20 + i) * VC + j] = 2.0f * ref[i * VC + j] + ((float)dev - 0.5f);
        char what[96];
        snprintf(what, sizeof what, "rows 20..23 = 2 rows 0..3 + s in one eval on device %d", dev);
        expect_all(ctx, m, ref, VR * VC, what);
        /* Column blocks too: cols 0..3 -> cols 12..15. */
        hpl_array left = sub(ctx, m, HPL_RANGES(HPL_ALL, {0, 3}));
        hpl_array right = sub(ctx, m, HPL_RANGES(HPL_ALL, {12, 15}));
        CHECK_OK(hpl_eval(ctx, axpy2, &l, HPL_ARGS(hpl_arr(left), hpl_arr(right), hpl_f32(3.0f))));
        for (int i = 0; i < VR; i++)
            for (int j = 0; j < 4; j++)
                ref[i * VC + 12 + j] = 2.0f * ref[i * VC + j] + 3.0f;
        snprintf(what, sizeof what, "cols 12..15 = 2 cols 0..3 + 3 in one eval on device %d", dev);
        expect_all(ctx, m, ref, VR * VC, what);
    }
    /* The parent read on the other device after all that. */
    hpl_launch l1 = th_on(1);
    CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(m), hpl_f32(0.25f))));
    ref_box_apply(ref, 0, VR, 0, VC, 0.25f, 1.0f);
    expect_all(ctx, m, ref, VR * VC, "whole parent incremented on device 1 after subarray kernels");
    CHECK_OK(hpl_array_destroy(ctx, m));

    /* 1-D middle range on both devices. */
    {
        enum { N = 1000 };
        static float r1[N];
        init_ref(r1, N, 2.0f);
        hpl_array v = th_array(ctx, HPL_FLOAT32, N, 0, 0);
        CHECK_OK(hpl_array_write(ctx, v, r1, sizeof r1));
        hpl_array mid = sub(ctx, v, HPL_RANGES({300, 649}));
        for (int dev = 0; dev < 2; dev++) {
            hpl_launch l = th_on(dev);
            CHECK_OK(hpl_eval(ctx, inc1, &l, HPL_ARGS(hpl_arr(mid), hpl_f32(5.0f))));
            for (int i = 300; i <= 649; i++)
                r1[i] += 5.0f;
            char what[80];
            snprintf(what, sizeof what, "1-D array after a kernel on 300..649 on device %d", dev);
            expect_all(ctx, v, r1, N, what);
            CHECK_OK(hpl_eval(ctx, set1, &l, HPL_ARGS(hpl_arr(mid), hpl_arr(meta), hpl_f32(-7.0f))));
            for (int i = 300; i <= 649; i++)
                r1[i] = -7.0f + (float)(i - 300);
            snprintf(what, sizeof what, "1-D array after a write-only kernel on 300..649 on device %d", dev);
            expect_all(ctx, v, r1, N, what);
            if (CHECK_OK(hpl_array_read(ctx, meta, mt, sizeof mt)))
                CHECK(mt[0] == 350 && mt[1] == 300 && mt[4] == 350,
                      "device %d: 1-D range seen as dims %u origin %u domain %u; want 350, 300, 350", dev, mt[0],
                      mt[1], mt[4]);
        }
        /* The whole array on device 1 after device 0 wrote its middle. */
        CHECK_OK(hpl_eval(ctx, inc1, &l1, HPL_ARGS(hpl_arr(v), hpl_f32(1.0f))));
        for (int i = 0; i < N; i++)
            r1[i] += 1.0f;
        expect_all(ctx, v, r1, N, "1-D whole array after subarray kernels");
        CHECK_OK(hpl_array_destroy(ctx, v));
    }
    /* 3-D box on both devices. */
    {
        enum { A = 6, B = 5, C = 9 };
        static float r3[A * B * C];
        const uint64_t d3[3] = {A, B, C};
        init_ref(r3, A * B * C, 4.0f);
        hpl_array t = th_array(ctx, HPL_FLOAT32, A, B, C);
        CHECK_OK(hpl_array_write(ctx, t, r3, sizeof r3));
        hpl_array box = sub(ctx, t, HPL_RANGES({1, 4}, {1, 3}, {2, 7}));
        for (int dev = 0; dev < 2; dev++) {
            hpl_launch l = th_on(dev);
            CHECK_OK(hpl_eval(ctx, inc3, &l, HPL_ARGS(hpl_arr(box), hpl_f32(8.0f * (float)(dev + 1)))));
            for (int i = 1; i <= 4; i++)
                for (int j = 1; j <= 3; j++)
                    for (int k = 2; k <= 7; k++)
                        r3[at(d3, i, j, k)] += 8.0f * (float)(dev + 1);
            char what[80];
            snprintf(what, sizeof what, "3-D array after a kernel on a box on device %d", dev);
            expect_all(ctx, t, r3, A * B * C, what);
        }
        check_view(ctx, box, r3, d3, U3(1, 1, 2), U3(4, 3, 6), "3-D box after kernels");
        CHECK_OK(hpl_array_destroy(ctx, t));
    }
    CHECK_OK(hpl_array_destroy(ctx, meta));
}

/* ---- 6. owned boxes and overlaps --------------------------------------- */

static void owned(hpl_context *ctx, hpl_kernel inc2, hpl_kernel set2)
{
    static float ref[VR * VC];
    const uint64_t rd[3] = {VR, VC, 1};
    hpl_launch l0 = th_on(0), l1 = th_on(1);
    hpl_array meta = th_array(ctx, HPL_UINT32, 8, 0, 0);

    /* A kernel writing all of a subarray with a ghost part, on device 1: only
     * the owned box is written; the ghost part keeps the host's values. */
    {
        init_ref(ref, VR * VC, 51.0f);
        hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
        CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
        hpl_array g = sub_owned(ctx, m, HPL_RANGES({4, 11}, HPL_ALL), ((const hpl_range[]){{6, 9}, HPL_ALL}));
        check_info(ctx, g, "subarray with owned rows", HPL_FLOAT32, 2, U3(8, VC, 1), U3(4, 0, 0), true, m, m, true,
                   U3(2, 0, 0), U3(5, VC - 1, 0), rd);
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(g), hpl_f32(100.0f))));
        ref_box_apply(ref, 6, 4, 0, VC, 100.0f, 1.0f);
        expect_all(ctx, m, ref, VR * VC, "owned rows 6..9 of ghost rows 4..11 written on device 1");
        check_view(ctx, g, ref, rd, U3(4, 0, 0), U3(8, VC, 1), "subarray with a ghost part after the kernel");
        /* Owned columns, non-contiguous, write-only kernel on device 0. */
        hpl_array gc = sub_owned(ctx, m, HPL_RANGES({2, 21}, {3, 12}), ((const hpl_range[]){{4, 19}, {5, 10}}));
        check_info(ctx, gc, "block with an owned inner block", HPL_FLOAT32, 2, U3(20, 10, 1), U3(2, 3, 0), true, m, m,
                   false, U3(2, 2, 0), U3(17, 7, 0), rd);
        CHECK_OK(hpl_eval(ctx, set2, &l0, HPL_ARGS(hpl_arr(gc), hpl_arr(meta), hpl_f32(-2000.0f))));
        for (int i = 2; i < 18; i++)
            for (int j = 2; j < 8; j++)
                ref[(2 + i) * VC + 3 + j] = -2000.0f + (float)(i * 100 + j);
        expect_all(ctx, m, ref, VR * VC, "write-only kernel on a block with an owned inner block (device 0)");
        uint32_t mt[8];
        if (CHECK_OK(hpl_array_read(ctx, meta, mt, sizeof mt)))
            CHECK(mt[0] == 20 && mt[1] == 10 && mt[2] == 2 && mt[3] == 3,
                  "a subarray with an owned box is seen with dims %u,%u origin %u,%u; want 20,10 2,3", mt[0], mt[1],
                  mt[2], mt[3]);
        CHECK_OK(hpl_array_destroy(ctx, m));
    }
    /* The ghost part's newest data is on another device: device 0 wrote the
     * whole array, then device 1 writes the subarray with a ghost part. */
    {
        init_ref(ref, VR * VC, 61.0f);
        hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
        CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(m), hpl_f32(1.0f))));
        ref_box_apply(ref, 0, VR, 0, VC, 1.0f, 1.0f);
        hpl_array g = sub_owned(ctx, m, HPL_RANGES({8, 15}, {2, 13}), ((const hpl_range[]){{9, 14}, {3, 12}}));
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(g), hpl_f32(200.0f))));
        ref_box_apply(ref, 9, 6, 3, 10, 200.0f, 1.0f);
        /* Device 0 reads the whole array: the owned box from device 1, the
         * ghost part and the rest its own. */
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(m), hpl_f32(2.0f))));
        ref_box_apply(ref, 0, VR, 0, VC, 2.0f, 1.0f);
        expect_all(ctx, m, ref, VR * VC, "ghost part from device 0, owned box from device 1, then device 0");
        /* Again, read by the host right after device 1: the ghost part comes
         * from device 0, the owned box from device 1. */
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(m), hpl_f32(1.0f))));
        ref_box_apply(ref, 0, VR, 0, VC, 1.0f, 1.0f);
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(g), hpl_f32(300.0f))));
        ref_box_apply(ref, 9, 6, 3, 10, 300.0f, 1.0f);
        check_view(ctx, g, ref, rd, U3(8, 2, 0), U3(8, 12, 1), "ghost part from device 0, owned box from device 1");
        expect_all(ctx, m, ref, VR * VC, "host read: ghost part from device 0, owned box from device 1");
        /* Host write of a subarray with a ghost part: HPL_WRITE brings the
         * ghost part to the host as context; only the owned box is written. */
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(m), hpl_f32(4.0f))));
        ref_box_apply(ref, 0, VR, 0, VC, 4.0f, 1.0f);
        hpl_array_info info;
        float *p = th_access(ctx, g, HPL_WRITE);
        if (p && CHECK_OK(hpl_array_get_info(ctx, g, &info))) {
            int bad = 0;
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 12; j++) {
                    bool own = i >= 1 && i <= 6 && j >= 1 && j <= 10;
                    float *e = &p[i * info.host_stride[0] + j * info.host_stride[1]];
                    if (!own)
                        bad += *e != ref[(8 + i) * VC + 2 + j];
                    else
                        ref[(8 + i) * VC + 2 + j] = *e = 0.5f * (float)(i * 12 + j);
                }
            CHECK(bad == 0, "HPL_WRITE of a subarray with a ghost part: %d ghost elements not brought to the host",
                  bad);
        }
        expect_all(ctx, m, ref, VR * VC, "host write of the owned box, the rest from device 1");
        CHECK_OK(hpl_array_destroy(ctx, m));
    }
    /* Owned boxes decide the overlap, not program order: two parts of the
     * rows with one ghost row each, written on devices 0 and 1. */
    {
        init_ref(ref, VR * VC, 71.0f);
        hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
        CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
        const int H = VR / 2;
        hpl_array p0 = sub_owned(ctx, m, HPL_RANGES({0, (uint64_t)H}, HPL_ALL),
                                 ((const hpl_range[]){{0, (uint64_t)H - 1}, HPL_ALL}));
        hpl_array p1 = sub_owned(ctx, m, HPL_RANGES({(uint64_t)H - 1, VR - 1}, HPL_ALL),
                                 ((const hpl_range[]){{(uint64_t)H, VR - 1}, HPL_ALL}));
        for (int round = 0; round < 3; round++) {
            /* Each part: x += s (reads its ghost row, which is current). */
            float s0 = 1.0f + (float)round, s1 = 10.0f + (float)round;
            CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(p0), hpl_f32(s0))));
            CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(p1), hpl_f32(s1))));
            ref_box_apply(ref, 0, (uint64_t)H, 0, VC, s0, 1.0f);
            ref_box_apply(ref, (uint64_t)H, (uint64_t)H, 0, VC, s1, 1.0f);
        }
        expect_all(ctx, m, ref, VR * VC, "two parts with ghost rows, 3 rounds on devices 0 and 1");
        /* Write-only, the later part overlapping the earlier one's owned row. */
        CHECK_OK(hpl_eval(ctx, set2, &l0, HPL_ARGS(hpl_arr(p0), hpl_arr(meta), hpl_f32(1000.0f))));
        CHECK_OK(hpl_eval(ctx, set2, &l1, HPL_ARGS(hpl_arr(p1), hpl_arr(meta), hpl_f32(2000.0f))));
        for (int i = 0; i < VR; i++)
            for (int j = 0; j < VC; j++)
                ref[i * VC + j] = i < H ? 1000.0f + (float)(i * 100 + j) : 2000.0f + (float)((i - (H - 1)) * 100 + j);
        expect_all(ctx, m, ref, VR * VC, "owned boxes decide the overlap of two write-only kernels");
        CHECK_OK(hpl_array_destroy(ctx, m));
    }
    /* Without owned boxes: overlapping writes in program order. */
    {
        init_ref(ref, VR * VC, 81.0f);
        hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
        CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
        hpl_array s1 = sub(ctx, m, HPL_RANGES({0, 9}, {0, 11}));
        hpl_array s2 = sub(ctx, m, HPL_RANGES({5, 14}, {4, 15}));
        CHECK_OK(hpl_eval(ctx, set2, &l0, HPL_ARGS(hpl_arr(s1), hpl_arr(meta), hpl_f32(1000.0f))));
        CHECK_OK(hpl_eval(ctx, set2, &l1, HPL_ARGS(hpl_arr(s2), hpl_arr(meta), hpl_f32(3000.0f))));
        for (int i = 0; i <= 9; i++)
            for (int j = 0; j <= 11; j++)
                ref[i * VC + j] = 1000.0f + (float)(i * 100 + j);
        for (int i = 5; i <= 14; i++)
            for (int j = 4; j <= 15; j++)
                ref[i * VC + j] = 3000.0f + (float)((i - 5) * 100 + j - 4);
        expect_all(ctx, m, ref, VR * VC, "overlapping write-only kernels (dev 0 then dev 1): the later wins");
        /* The other order of devices, read-modify-write kernels. */
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(s1), hpl_f32(1.0f))));
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(s2), hpl_f32(10.0f))));
        ref_box_apply(ref, 0, 10, 0, 12, 1.0f, 1.0f);
        ref_box_apply(ref, 5, 10, 4, 12, 10.0f, 1.0f);
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(s1), hpl_f32(100.0f))));
        ref_box_apply(ref, 0, 10, 0, 12, 100.0f, 1.0f);
        expect_all(ctx, m, ref, VR * VC, "overlapping read-write kernels alternating devices");
        check_view(ctx, s2, ref, rd, U3(5, 4, 0), U3(10, 12, 1), "second overlapping subarray");
        /* Host write of one, kernel of the other, host read. */
        float buf[10 * 12];
        for (int i = 0; i < 120; i++)
            buf[i] = (float)(i * 3);
        CHECK_OK(hpl_array_write(ctx, s2, buf, sizeof buf));
        for (int i = 0; i < 10; i++)
            for (int j = 0; j < 12; j++)
                ref[(5 + i) * VC + 4 + j] = buf[i * 12 + j];
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(s1), hpl_f32(0.5f))));
        ref_box_apply(ref, 0, 10, 0, 12, 0.5f, 1.0f);
        expect_all(ctx, m, ref, VR * VC, "host write of one overlapping subarray then a kernel on the other");
        CHECK_OK(hpl_array_destroy(ctx, m));
    }
    CHECK_OK(hpl_array_destroy(ctx, meta));
}

/* ---- 7. only a subarray's own elements move; user storage -------------- */

static void lazy_and_user_storage(hpl_context *ctx, hpl_kernel inc2)
{
    static float ref[VR * VC];
    const uint64_t rd[3] = {VR, VC, 1};
    hpl_launch l0 = th_on(0), l1 = th_on(1);
    init_ref(ref, VR * VC, 91.0f);
    hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
    CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
    hpl_array rows = sub(ctx, m, HPL_RANGES({4, 9}, HPL_ALL));
    hpl_array cols = sub(ctx, m, HPL_RANGES(HPL_ALL, {3, 7}));
    hpl_array inner = sub(ctx, m, HPL_RANGES({10, 13}, {2, 4}));
    hpl_stats st;
    /* The whole array written on device 1; the host reads a row block, a
     * column block and an inner block: only their elements come back. */
    CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(m), hpl_f32(1.0f))));
    ref_box_apply(ref, 0, VR, 0, VC, 1.0f, 1.0f);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_reset(ctx));
    check_view(ctx, rows, ref, rd, U3(4, 0, 0), U3(6, VC, 1), "row block read after device 1 wrote the array");
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(st.device[1].to_host_bytes == 6 * VC * sizeof(float) && st.total.to_device_bytes == 0,
              "reading a row block moved %llu bytes from device 1 (want %zu) and %llu to devices",
              (unsigned long long)st.device[1].to_host_bytes, 6 * VC * sizeof(float),
              (unsigned long long)st.total.to_device_bytes);
    CHECK_OK(hpl_stats_reset(ctx));
    check_view(ctx, cols, ref, rd, U3(0, 3, 0), U3(VR, 5, 1), "column block read after device 1 wrote the array");
    /* Rows 4..9 of the column block are on the host already. */
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(st.device[1].to_host_bytes == (VR - 6) * 5 * sizeof(float),
              "reading a column block moved %llu bytes from device 1, want %zu (its elements not on the host yet)",
              (unsigned long long)st.device[1].to_host_bytes, (VR - 6) * 5 * sizeof(float));
    CHECK_OK(hpl_stats_reset(ctx));
    check_view(ctx, inner, ref, rd, U3(10, 2, 0), U3(4, 3, 1), "inner block read after device 1 wrote the array");
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(st.device[1].to_host_bytes == 4 * 1 * sizeof(float),
              "reading an inner block moved %llu bytes from device 1, want %zu (only its column 2 is missing)",
              (unsigned long long)st.device[1].to_host_bytes, 4 * 1 * sizeof(float));
    /* The rest of the array still comes from device 1. */
    expect_all(ctx, m, ref, VR * VC, "whole array after reading its subarrays");
    CHECK_OK(hpl_array_wait(ctx, rows));
    CHECK_OK(hpl_array_destroy(ctx, m));

    /* User storage: a subarray's host pointer points into it, kernels on
     * subarrays on both devices land in it. */
    float *mem = malloc(sizeof(float) * VR * VC);
    init_ref(ref, VR * VC, 93.0f);
    memcpy(mem, ref, sizeof ref);
    hpl_array u;
    if (CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {VR, VC}, .host = mem}, &u))) {
        hpl_array ucols = sub(ctx, u, HPL_RANGES(HPL_ALL, {10, 12}));
        hpl_array urows = sub(ctx, u, HPL_RANGES({0, 2}, HPL_ALL));
        CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(ucols), hpl_f32(4.0f))));
        ref_box_apply(ref, 0, VR, 10, 3, 4.0f, 1.0f);
        CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(urows), hpl_f32(8.0f))));
        ref_box_apply(ref, 0, 3, 0, VC, 8.0f, 1.0f);
        const float *pc = th_access(ctx, ucols, HPL_READ);
        if (pc)
            CHECK(pc == mem + 10, "column block of user storage: pointer is mem + %td, want mem + 10", pc - mem);
        const float *pu = th_access(ctx, u, HPL_READ);
        if (pu) {
            CHECK(pu == mem, "user storage: READ access returned another pointer");
            compare(mem, ref, VR * VC, "user storage after kernels on its subarrays on devices 1 and 0");
        }
        CHECK_OK(hpl_array_destroy(ctx, u));
    }
    free(mem);
}

/* ---- 8. zero-copy devices --------------------------------------------- */

/* Two zero-copy replicas work on the one host copy: views behave the same,
 * nothing moves, and a kernel's writes outside its owned box land there, the
 * host's copy being the only one (chapter 4b). A device with memory of its
 * own (a discrete GPU) cannot be zero copy: ON leaves it with separate
 * copies, where those writes do not land and data moves. */
static void zero_copy_views(void)
{
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_ON});
    bool zc = true;
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info))) {
            zc = zc && th_shares_memory(&info);
            CHECK(info.zero_copy == th_shares_memory(&info), "device %d: HPL_ZERO_COPY_ON gave zero_copy %d on a "
                  "device that %s memory with the host", d, info.zero_copy,
                  th_shares_memory(&info) ? "shares" : "does not share");
        }
    }
    hpl_kernel inc2 = th_kernel(ctx, inc2_src());
    static float ref[VR * VC];
    const uint64_t rd[3] = {VR, VC, 1};
    init_ref(ref, VR * VC, 95.0f);
    hpl_array m = th_array(ctx, HPL_FLOAT32, VR, VC, 0);
    CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));
    CHECK_OK(hpl_stats_reset(ctx));
    hpl_array rows = sub(ctx, m, HPL_RANGES({4, 9}, HPL_ALL));
    hpl_array cols = sub(ctx, m, HPL_RANGES(HPL_ALL, {3, 7}));
    hpl_array g = sub_owned(ctx, m, HPL_RANGES({12, 19}, HPL_ALL), ((const hpl_range[]){{13, 18}, HPL_ALL}));
    hpl_launch l0 = th_on(0), l1 = th_on(1);
    CHECK_OK(hpl_eval(ctx, inc2, &l0, HPL_ARGS(hpl_arr(rows), hpl_f32(1.0f))));
    ref_box_apply(ref, 4, 6, 0, VC, 1.0f, 1.0f);
    CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(cols), hpl_f32(2.0f))));
    ref_box_apply(ref, 0, VR, 3, 5, 2.0f, 1.0f);
    expect_all(ctx, m, ref, VR * VC, "zero-copy: kernels on a row block (dev 0) and a column block (dev 1)");
    CHECK_OK(hpl_eval(ctx, inc2, &l1, HPL_ARGS(hpl_arr(g), hpl_f32(4.0f))));
    if (zc)
        ref_box_apply(ref, 12, 8, 0, VC, 4.0f, 1.0f); /* ghost rows 12 and 19 too */
    else
        ref_box_apply(ref, 13, 6, 0, VC, 4.0f, 1.0f); /* the owned rows only */
    expect_all(ctx, m, ref, VR * VC,
               zc ? "zero-copy: a kernel's writes outside its owned box land"
                  : "separate memory: a kernel's writes outside its owned box do not land");
    float v = -1.0f;
    CHECK_OK(hpl_array_fill(ctx, cols, &v, 0));
    ref_box_apply(ref, 0, VR, 3, 5, -1.0f, 0.0f);
    check_view(ctx, rows, ref, rd, U3(4, 0, 0), U3(6, VC, 1), "zero-copy: row block after a column fill");
    hpl_stats st;
    if (CHECK_OK(hpl_stats_get(ctx, &st)))
        CHECK(zc == (st.total.to_host_bytes == 0 && st.total.to_device_bytes == 0),
              "%s devices moved %llu bytes to the host and %llu to devices", zc ? "zero-copy" : "separate-memory",
              (unsigned long long)st.total.to_host_bytes, (unsigned long long)st.total.to_device_bytes);
    CHECK_OK(hpl_array_destroy(ctx, m));
    CHECK_OK(hpl_kernel_destroy(ctx, inc2));
    hpl_context_destroy(ctx);
}

/* ---- 9. errors --------------------------------------------------------- */

static void errors(hpl_context *ctx, hpl_kernel inc2)
{
    hpl_array m, t, s = {4242};
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {10, 8}, .name = "grid"}, &m)))
        return;
    if (!CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {5, 6, 7}, .name = "cube"},
                                   &t)))
        return;
    float ref[80];
    init_ref(ref, 80, 0.0f);
    CHECK_OK(hpl_array_write(ctx, m, ref, sizeof ref));

    /* nranges != ndims. */
    CHECK_FAILS(hpl_subarray(ctx, m, HPL_RANGES({0, 1}), &s), HPL_ERROR_DIMENSIONS, "hpl_subarray");
    CHECK_MSG("2 dimensions");
    CHECK_FAILS(hpl_subarray(ctx, m, HPL_RANGES({0, 1}, {0, 1}, {0, 0}), &s), HPL_ERROR_DIMENSIONS, "hpl_subarray");
    CHECK_FAILS(hpl_subarray(ctx, m, 0, (const hpl_range[]){{0, 1}}, &s), HPL_ERROR_DIMENSIONS, "hpl_subarray");
    CHECK_FAILS(hpl_subarray(ctx, t, HPL_RANGES({0, 1}, {0, 1}), &s), HPL_ERROR_DIMENSIONS, "hpl_subarray");
    CHECK_MSG("3 dimensions");
    CHECK(s.id == 4242, "a failed hpl_subarray changed its out-parameter");
    /* Ranges outside the parent, naming the dimension. */
    CHECK_FAILS(hpl_subarray(ctx, t, HPL_RANGES(HPL_ALL, {2, 8}, HPL_ALL), &s), HPL_ERROR_OUT_OF_RANGE,
                "hpl_subarray");
    CHECK(msg_names_dim(1), "out-of-range message \"%s\" does not name dimension 1", hpl_last_error());
    CHECK_FAILS(hpl_subarray(ctx, t, HPL_RANGES({0, 4}, {0, 5}, {7, 7}), &s), HPL_ERROR_OUT_OF_RANGE, "hpl_subarray");
    CHECK(msg_names_dim(2), "out-of-range message \"%s\" does not name dimension 2", hpl_last_error());
    CHECK_FAILS(hpl_subarray(ctx, m, HPL_RANGES({10, HPL_END}, HPL_ALL), &s), HPL_ERROR_OUT_OF_RANGE, "hpl_subarray");
    CHECK(msg_names_dim(0), "out-of-range message \"%s\" does not name dimension 0", hpl_last_error());
    CHECK_FAILS(hpl_subarray(ctx, m, HPL_RANGES({0, 10}, HPL_ALL), &s), HPL_ERROR_OUT_OF_RANGE, "hpl_subarray");
    /* first > last. */
    CHECK_FAILS(hpl_subarray(ctx, m, HPL_RANGES(HPL_ALL, {5, 4}), &s), HPL_ERROR_OUT_OF_RANGE, "hpl_subarray");
    CHECK(msg_names_dim(1), "first > last message \"%s\" does not name dimension 1", hpl_last_error());
    CHECK_FAILS(hpl_subarray(ctx, m, HPL_RANGES({HPL_END, HPL_END}, HPL_ALL), &s), HPL_ERROR_OUT_OF_RANGE,
                "hpl_subarray");
    /* Relative to the parent: a range inside the root but outside the parent. */
    hpl_array rows = sub(ctx, m, HPL_RANGES({2, 5}, HPL_ALL));
    CHECK_FAILS(hpl_subarray(ctx, rows, HPL_RANGES({2, 6}, HPL_ALL), &s), HPL_ERROR_OUT_OF_RANGE, "hpl_subarray");
    CHECK(msg_names_dim(0), "out-of-range message \"%s\" does not name dimension 0", hpl_last_error());
    /* Owned box outside the ranges. */
    CHECK_FAILS(hpl_subarray_owned(ctx, m, HPL_RANGES({2, 5}, HPL_ALL), ((const hpl_range[]){{1, 5}, HPL_ALL}), &s),
                HPL_ERROR_OUT_OF_RANGE, "hpl_subarray_owned");
    CHECK_FAILS(hpl_subarray_owned(ctx, m, HPL_RANGES({2, 5}, {0, 3}), ((const hpl_range[]){{2, 5}, {0, 4}}), &s),
                HPL_ERROR_OUT_OF_RANGE, "hpl_subarray_owned");
    CHECK(msg_names_dim(1), "owned box message \"%s\" does not name dimension 1", hpl_last_error());
    CHECK_FAILS(hpl_subarray_owned(ctx, m, HPL_RANGES({2, 5}, HPL_ALL), ((const hpl_range[]){{4, 3}, HPL_ALL}), &s),
                HPL_ERROR_OUT_OF_RANGE, "hpl_subarray_owned");
    CHECK(s.id == 4242, "a failed hpl_subarray_owned changed its out-parameter");
    /* NULL pointers. */
    CHECK_FAILS(hpl_subarray(NULL, m, HPL_RANGES({0, 1}, HPL_ALL), &s), HPL_ERROR_INVALID_ARGUMENT, "ctx");
    CHECK_FAILS(hpl_subarray(ctx, m, 2, NULL, &s), HPL_ERROR_INVALID_ARGUMENT, "ranges");
    CHECK_FAILS(hpl_subarray(ctx, m, HPL_RANGES({0, 1}, HPL_ALL), NULL), HPL_ERROR_INVALID_ARGUMENT, "out");
    CHECK_FAILS(hpl_subarray_owned(ctx, m, HPL_RANGES({0, 1}, HPL_ALL), NULL, &s), HPL_ERROR_INVALID_ARGUMENT,
                "owned");
    CHECK_FAILS(hpl_subarray_get(ctx, m, 0, NULL), HPL_ERROR_INVALID_ARGUMENT, "out");
    CHECK_FAILS(hpl_subarray_count(NULL, m), HPL_ERROR_INVALID_ARGUMENT, "ctx");
    /* hpl_subarray_get index out of range. */
    int n = hpl_subarray_count(ctx, m);
    CHECK(n == 1, "grid lists %d subarrays, want 1 (the failed calls made none)", n);
    static const int bad_index[] = {HPL_ERROR_OUT_OF_RANGE, HPL_ERROR_INVALID_ARGUMENT};
    CHECK_FAILS_ANY(hpl_subarray_get(ctx, m, 1, &s), bad_index, 2, "index 1");
    CHECK_FAILS_ANY(hpl_subarray_get(ctx, m, -1, &s), bad_index, 2, "index -1");
    CHECK_FAILS_ANY(hpl_subarray_get(ctx, t, 0, &s), bad_index, 2, "index 0");
    CHECK(s.id == 4242, "a failed hpl_subarray_get changed its out-parameter");
    /* Invalid parent handles. */
    hpl_array dead = th_array(ctx, HPL_FLOAT32, 4, 4, 0);
    CHECK_OK(hpl_array_destroy(ctx, dead));
    CHECK_FAILS(hpl_subarray(ctx, dead, HPL_RANGES({0, 1}, HPL_ALL), &s), HPL_ERROR_INVALID_HANDLE, "hpl_subarray");
    CHECK_FAILS(hpl_subarray_owned(ctx, dead, HPL_RANGES({0, 1}, HPL_ALL), ((const hpl_range[]){{0, 1}, HPL_ALL}),
                                   &s),
                HPL_ERROR_INVALID_HANDLE, "hpl_subarray_owned");
    CHECK_FAILS(hpl_subarray(ctx, (hpl_array){0}, HPL_RANGES({0, 1}, HPL_ALL), &s), HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_subarray(ctx, (hpl_array){0xfffffff0u}, HPL_RANGES({0, 1}, HPL_ALL), &s),
                HPL_ERROR_INVALID_HANDLE, "handle");
    CHECK_FAILS(hpl_subarray_count(ctx, dead), HPL_ERROR_INVALID_HANDLE, "hpl_subarray_count");
    CHECK_FAILS(hpl_subarray_get(ctx, dead, 0, &s), HPL_ERROR_INVALID_HANDLE, "hpl_subarray_get");
    CHECK(s.id == 4242, "a failed call changed its out-parameter");
    /* A subarray passed to a kernel of another dimensionality or type. */
    hpl_kernel line = th_kernel(ctx, line_src), grid = th_kernel(ctx, intgrid_src);
    CHECK_FAILS(hpl_eval(ctx, line, NULL, HPL_ARGS(hpl_arr(rows))), HPL_ERROR_ARGUMENT_MISMATCH, "line_arg");
    CHECK_FAILS(hpl_eval(ctx, grid, NULL, HPL_ARGS(hpl_arr(rows))), HPL_ERROR_ARGUMENT_MISMATCH, "int_grid");
    hpl_array tsub = sub(ctx, t, HPL_RANGES({1, 1}, {0, 0}, HPL_ALL));
    CHECK_FAILS(hpl_eval(ctx, line, NULL, HPL_ARGS(hpl_arr(tsub))), HPL_ERROR_ARGUMENT_MISMATCH, "line_arg");
    CHECK_FAILS(hpl_eval(ctx, inc2, NULL, HPL_ARGS(hpl_arr(tsub), hpl_f32(1.0f))), HPL_ERROR_ARGUMENT_MISMATCH,
                "argument 0");
    CHECK_MSG("3-D");
    /* hpl_array_read / write with the byte count of the parent, not the subarray's. */
    float buf[80];
    CHECK_FAILS(hpl_array_read(ctx, rows, buf, sizeof buf), HPL_ERROR_INVALID_ARGUMENT, "bytes");
    CHECK_FAILS(hpl_array_read(ctx, rows, buf, 4 * 8 * sizeof(float) - 4), HPL_ERROR_INVALID_ARGUMENT, "bytes");
    CHECK_FAILS(hpl_array_write(ctx, rows, buf, 4 * 8 * sizeof(float) + 4), HPL_ERROR_INVALID_ARGUMENT, "bytes");
    /* None of the failures changed anything. */
    expect_all(ctx, m, ref, 80, "grid after the failed calls");
    CHECK_OK(hpl_kernel_destroy(ctx, line));
    CHECK_OK(hpl_kernel_destroy(ctx, grid));
    CHECK_OK(hpl_array_destroy(ctx, m));
    CHECK_OK(hpl_array_destroy(ctx, t));
}

int main(void)
{
    /* Owned boxes behave as tested here on devices with their own copies
     * (replicas of one physical device are, by default; OFF says so whatever
     * HPLVK_ZERO_COPY says). zero_copy_views() tests zero-copy devices. */
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_OFF});
    CHECK(hpl_device_count(ctx) == 2, "cpu:2 opened %d devices", hpl_device_count(ctx));
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(!info.zero_copy, "device %d of cpu:2 is zero-copy", d);
    }
    hpl_kernel inc1 = th_kernel(ctx, inc1_src()), inc2 = th_kernel(ctx, inc2_src()), inc3 = th_kernel(ctx, inc3_src());
    hpl_kernel set1 = th_kernel(ctx, set1_src), set2 = th_kernel(ctx, set2_src), axpy2 = th_kernel(ctx, axpy2_src);
    views(ctx);
    not_a_copy(ctx, inc2);
    nesting(ctx, inc2, set2);
    caching(ctx, inc2);
    kernels(ctx, inc1, inc2, inc3, set1, set2, axpy2);
    owned(ctx, inc2, set2);
    lazy_and_user_storage(ctx, inc2);
    errors(ctx, inc2);
    zero_copy_views();
    CHECK_OK(hpl_finish(ctx));
    return th_finish(ctx);
}
