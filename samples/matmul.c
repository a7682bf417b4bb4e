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
 * the device count the last devices get no part and run nothing.
 *
 * Everything but the library calls is matmul_host.h's, shared with the
 * hand-written Vulkan twin (twins/twin_matmul.c): the tiled kernel and its tile
 * sets (MATMUL_TILES), the arguments, the fixed-seed inputs, the check of C
 * against a double-precision host product, and the RESULT line. One eval
 * warms up (compile, uploads), again and again for 500 ms on a GPU
 * (sample_warm.h); then `reps` evals (default 3) are each timed
 * with the wait for C, and the best is reported as GFLOP/s. C is read back
 * whole: the library gathers the parts.
 */
#define _POSIX_C_SOURCE 199309L
#define SAMPLE_NAME "matmul"
#include "sample_util.h"

#include "matmul_host.h"

/* C = A x B over every device: a warm-up, then the timed evals; C is read
 * into p->c. */
static int multiply(hpl_context *ctx, mm_tiles t, mm_problem *p)
{
    const mm_size sz = p->size;
    char source[MM_KERNEL_SOURCE_CAP];
    const char *glsl = mm_kernel_source(source, sizeof source, MM_HPLVK_ARGS, t, false);
    hpl_kernel k;
    hpl_array a, b, c;
    SAMPLE_TRY(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = glsl, .name = "mxproduct"}}, &k));
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.m, sz.k}, .name = "A"}, &a));
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.k, sz.n}, .name = "B"}, &b));
    SAMPLE_TRY(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_FLOAT32, .dims = {sz.m, sz.n}, .name = "C"}, &c));
    SAMPLE_TRY(hpl_array_write(ctx, a, p->a, mm_bytes(sz.m, sz.k)));
    SAMPLE_TRY(hpl_array_write(ctx, b, p->b, mm_bytes(sz.k, sz.n)));
    /* The kernel's domain: C's rows (split over the devices: a part may
     * start inside a tile), and LY invocations per BN columns. */
    hpl_launch launch = sample_launch(ctx);
    launch.global[0] = sz.m;
    launch.global[1] = ((uint64_t)sz.n + t.bn - 1) / t.bn * (mm_tiles_threads(t) / t.bm);
    bool gpu = sample_has_gpu(ctx);
    double warm0 = mm_now_ms();
    for (int run = -1; run < p->reps; run = mm_next_run(run, gpu, warm0)) {
        double t0 = mm_now_ms();
        SAMPLE_TRY(hpl_eval(ctx, k, &launch, HPL_ARGS(hpl_part1(c, 0), hpl_part1(a, 0), hpl_arr(b))));
        SAMPLE_TRY(hpl_array_wait(ctx, c));
        mm_keep_best(p, run, mm_now_ms() - t0);
    }
    SAMPLE_TRY(hpl_array_read(ctx, c, p->c, mm_bytes(sz.m, sz.n)));
    return HPL_OK;
}

/* Everything but the check: the context, the devices (the RESULT line
 * names them), the tiles, the product. The tiles are the largest that
 * every device can run: one eval's work-groups are the same size on all of
 * them, so the device allowing the fewest invocations decides. */
static int run(hpl_context **ctx, mm_problem *p)
{
    int devices[HPL_MAX_DEVICES];
    uint32_t max_invocations = UINT32_MAX;
    mm_tiles t;
    SAMPLE_TRY(sample_context_create(&(hpl_context_desc){.log = sample_log}, ctx));
    int ndev = sample_devices(*ctx, devices);
    SAMPLE_TRY(sample_device_list(*ctx, devices, ndev, p->devices, sizeof p->devices));
    for (int i = 0; i < ndev; i++) {
        hpl_device_info info;
        SAMPLE_TRY(hpl_device_get_info(*ctx, devices[i], &info));
        max_invocations = sample_min(max_invocations, info.max_workgroup_invocations);
    }
    if (!mm_choose_tiles(max_invocations, &t))
        return HPL_ERROR_INVALID_ARGUMENT;
    return multiply(*ctx, t, p);
}

int main(int argc, char **argv)
{
    /* Line-buffered, so that stdout and stderr interleave in order in logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    mm_problem p = {0};
    if (!mm_parse_args(argc, argv, &p))
        return 2;
    hpl_context *ctx = NULL;
    bool ok = mm_alloc_inputs(&p) && run(&ctx, &p) == HPL_OK && mm_check_product(&p);
    /* An error that surfaced asynchronously fails the run too. */
    ok = ctx && hpl_finish(ctx) == HPL_OK && ok;
    hpl_context_destroy(ctx);
    ok = sample_log_clean() && ok;
    sample_checksum_print("C", p.c, p.c ? mm_bytes(p.size.m, p.size.n) : 0);
    mm_print_result(&p, ok);
    mm_free_inputs(&p);
    return ok ? 0 : 1;
}
