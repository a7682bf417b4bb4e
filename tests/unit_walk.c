/* The dispatch's walk (hplvk.glsl's hplvk_walk, launch.c walk_of): when the
 * library chooses the local size and the kernel cannot tell, the domain's
 * last extended dimension becomes the dispatch's x. Checked here:
 *   - reflection: a kernel that reads gl_LocalInvocationID,
 *     gl_LocalInvocationIndex, gl_WorkGroupID, gl_NumWorkGroups or
 *     gl_WorkGroupSize is not walkable, nor one without the prelude that
 *     has a constant of the walk's id; one that reads none is;
 *   - which pipeline an eval gets: walk 1 for a 2-D domain, 2 for a 3-D one,
 *     with the local size swapped to the dispatch's order; none for a 1-D
 *     domain, a short last dimension, a given or declared local size, or a
 *     kernel that is not walkable;
 *   - every eval's values, against the host: hpl_global_id still names the
 *     domain's position (x, y, z as written), whatever the dispatch's order,
 *     split over two devices too.
 * Big walked domains (several dispatches along the swapped dimension) are
 * in test_big_domain. */
#include "api.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each cell gets a code of its position and of what it saw; BUILTIN is the
 * extra term (0, or something that reads a workgroup builtin). */
#define POSITION_SRC(BUILTIN) POSITION_SRC_LAYOUT("", BUILTIN)
#define POSITION_SRC_LAYOUT(LAYOUT, BUILTIN)                                                                  \
    "#include <hplvk.glsl>\n" LAYOUT                                                                          \
    "hpl_args { hpl_out(uint, 3) o; };\n"                                                                     \
    "void main() {\n"                                                                                         \
    "    uvec3 p = hpl_global_id;\n"                                                                          \
    "    hpl_at3(o, p.x, p.y, p.z) = (p.x * 1000u + p.y) * 1000u + p.z + 1000000000u * (" BUILTIN ");\n" \
    "}\n"

static const struct {
    const char *what, *src;
    bool walkable;
} kernels[] = {
    {"no workgroup builtin", POSITION_SRC("0u"), true},
    {"gl_LocalInvocationID", POSITION_SRC("gl_LocalInvocationID.x > 4096u ? 1u : 0u"), false},
    {"gl_LocalInvocationIndex", POSITION_SRC("gl_LocalInvocationIndex > 4096u ? 1u : 0u"), false},
    {"gl_WorkGroupID", POSITION_SRC("gl_WorkGroupID.x > 1u << 30 ? 1u : 0u"), false},
    {"gl_NumWorkGroups", POSITION_SRC("gl_NumWorkGroups.x > 1u << 30 ? 1u : 0u"), false},
    {"gl_WorkGroupSize", POSITION_SRC("gl_WorkGroupSize.x > 4096u ? 1u : 0u"), false},
    {"a declared local size", POSITION_SRC_LAYOUT("layout(local_size_x = 4, local_size_y = 32) in;\n", "0u"), true},
    /* No prelude: its own constant 1000 is not the walk, which nothing would undo. */
    {"no prelude, a constant of id 1000",
     "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n"
     "layout(constant_id = 1000) const uint mine = 0u;\n"
     "shared uint s;\n"
     "void main() { s = mine; }\n",
     false},
};

static const hpl__variant *variant_of(hpl_context *ctx, hpl_kernel k)
{
    hpl__kernel *kk = NULL;
    return CHECK_OK(hpl__kernel_get(ctx, k, &kk)) ? &kk->variants[0] : NULL;
}

/* The pipeline of device 0 with this local size (dispatch order) and walk. */
static bool has_pipeline(const hpl__variant *v, const uint32_t local[3], int walk)
{
    for (uint32_t i = 0; v && i < v->pipeline_count; i++)
        if (v->pipelines[i].device == 0 && !memcmp(v->pipelines[i].local, local, sizeof v->pipelines[i].local) &&
            v->pipelines[i].walk == walk)
            return true;
    return false;
}

/* Runs k over dims (split over every device when split) and checks every
 * cell's code against the host. */
static void run_checked(hpl_context *ctx, hpl_kernel k, const char *what, const uint64_t dims[3], const uint32_t local[3],
                        bool split)
{
    hpl_array o = th_array(ctx, HPL_UINT32, dims[0], dims[1], dims[2]);
    uint64_t n = dims[0] * dims[1] * dims[2];
    uint32_t *got = calloc(n, sizeof *got);
    hpl_launch launch = {.local = {local[0], local[1], local[2]}};
    int devices = hpl_device_count(ctx);
    if (split) {
        launch.device_count = devices;
        for (int i = 0; i < devices; i++)
            launch.devices[i] = i;
    }
    if (got && CHECK_OK(hpl_eval(ctx, k, &launch, HPL_ARGS(split ? hpl_part1(o, 0) : hpl_arr(o)))) &&
        CHECK_OK(hpl_array_read(ctx, o, got, n * sizeof *got))) {
        uint64_t bad = 0, first = n;
        for (uint64_t x = 0; x < dims[0]; x++)
            for (uint64_t y = 0; y < dims[1]; y++)
                for (uint64_t z = 0; z < dims[2]; z++) {
                    uint64_t i = (x * dims[1] + y) * dims[2] + z;
                    if (got[i] != (uint32_t)((x * 1000 + y) * 1000 + z)) {
                        bad++;
                        first = first < i ? first : i;
                    }
                }
        CHECK(bad == 0, "%s over %llux%llux%llu%s: %llu of %llu cells wrong (first: element %llu holds %u)", what,
              (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)dims[2],
              split ? " split" : "", (unsigned long long)bad, (unsigned long long)n, (unsigned long long)first,
              first < n ? got[first] : 0);
    }
    free(got);
    CHECK_OK(hpl_array_destroy(ctx, o));
}

static void reflection(hpl_context *ctx)
{
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        hpl_kernel k = th_kernel(ctx, kernels[i].src);
        const hpl__variant *v = variant_of(ctx, k);
        CHECK(v && v->reflection.walkable == kernels[i].walkable, "kernel with %s: walkable %d, want %d",
              kernels[i].what, v ? v->reflection.walkable : -1, kernels[i].walkable);
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
}

/* The pipelines evals get, and their values. */
static void pipelines(hpl_context *ctx)
{
    hpl_device_info info;
    if (!CHECK_OK(hpl_device_get_info(ctx, 0, &info)) || info.max_workgroup_invocations < 256) {
        th_note("device allows a smaller local size than the cases assume: not checked here");
        return;
    }
    static const struct {
        int kernel;
        uint64_t dims[3];
        uint32_t given[3];
        uint32_t want_local[3]; /* in the dispatch's order */
        int want_walk;
    } cases[] = {
        {0, {64, 300, 1}, {0}, {128, 2, 1}, 1},   /* 2-D: x along the rows' elements */
        {0, {3, 5, 70}, {0}, {64, 2, 2}, 2},      /* 3-D: x along z */
        {0, {1, 5000, 1}, {0}, {256, 1, 1}, 1},   /* a row: swapped too */
        {0, {5000, 1, 1}, {0}, {256, 1, 1}, 0},   /* 1-D: nothing to swap */
        {0, {300, 8, 1}, {0}, {32, 8, 1}, 0},     /* rows shorter than a subgroup */
        {0, {64, 300, 1}, {2, 128, 1}, {2, 128, 1}, 0}, /* the launch gives the local size */
        {1, {64, 300, 1}, {0}, {2, 128, 1}, 0},   /* reads gl_LocalInvocationID */
        {5, {64, 300, 1}, {0}, {2, 128, 1}, 0},   /* reads gl_WorkGroupSize */
        {6, {64, 300, 1}, {0}, {4, 32, 1}, 0},    /* declares its local size */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hpl_kernel k = th_kernel(ctx, kernels[cases[c].kernel].src);
        char what[96];
        snprintf(what, sizeof what, "case %zu (kernel with %s)", c, kernels[cases[c].kernel].what);
        run_checked(ctx, k, what, cases[c].dims, cases[c].given, false);
        const hpl__variant *v = variant_of(ctx, k);
        const uint32_t *l = cases[c].want_local;
        CHECK(has_pipeline(v, l, cases[c].want_walk), "%s: no pipeline with local {%u,%u,%u} and walk %d (%u made)",
              what, l[0], l[1], l[2], cases[c].want_walk, v ? v->pipeline_count : 0);
        CHECK_OK(hpl_kernel_destroy(ctx, k));
    }
}

/* Walked parts of a split: each device's subkernel swaps its own dispatch. */
static void split(hpl_context *ctx)
{
    hpl_kernel k = th_kernel(ctx, kernels[0].src);
    static const uint64_t dims[][3] = {{97, 300, 1}, {41, 3, 70}, {1000, 40, 1}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        run_checked(ctx, k, "no workgroup builtin", dims[i], (uint32_t[3]){0}, true);
    CHECK_OK(hpl_kernel_destroy(ctx, k));
}

int main(void)
{
    hpl_context *ctx = th_context("cpu:2");
    reflection(ctx);
    pipelines(ctx);
    split(ctx);
    return th_finish(ctx);
}
