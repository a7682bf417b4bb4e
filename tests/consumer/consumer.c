/* Uses an installed hplvk: opens the default devices, writes an array from the
 * host, fills another on device 0, reads both back and checks them. With an
 * argument, the path of a SPIR-V kernel compiled offline against the
 * installed <hplvk.glsl> (README.md's saxpy.comp: hpl_in x, hpl_inout y,
 * float a), also runs y = a x + y with it and checks y. Exits non-zero on any
 * failure. Also checks that <hplvk_vulkan.h> is installed beside <hplvk.h>
 * and its functions exported. */
#include <hplvk.h>
#include <hplvk_vulkan.h>

#include <stdio.h>

#define N 16

static int check(int rc, const char *what)
{
    if (rc != HPL_OK)
        fprintf(stderr, "consumer: %s: %s (%s)\n", what, hpl_error_name(rc), hpl_last_error());
    return rc != HPL_OK;
}

/* y = a x + y with the kernel in the SPIR-V file `path`. */
static int saxpy_spv(hpl_context *ctx, const char *path)
{
    hpl_kernel_desc kdesc = {0};
    kdesc.source.path = path;
    hpl_kernel k;
    if (check(hpl_kernel_create(ctx, &kdesc, &k), path))
        return 1;
    hpl_array_desc adesc = {0};
    adesc.type = HPL_FLOAT32;
    adesc.dims[0] = N;
    hpl_array x, y;
    int failed = check(hpl_array_create(ctx, &adesc, &x), "hpl_array_create(x)");
    failed |= check(hpl_array_create(ctx, &adesc, &y), "hpl_array_create(y)");
    float hx[N], hy[N];
    for (int i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = 1.0f - (float)i;
    }
    if (!failed) {
        failed |= check(hpl_array_write(ctx, x, hx, sizeof hx), "hpl_array_write(x)");
        failed |= check(hpl_array_write(ctx, y, hy, sizeof hy), "hpl_array_write(y)");
        hpl_arg args[] = {hpl_arr(x), hpl_arr(y), hpl_f32(3.0f)};
        failed |= check(hpl_eval(ctx, k, NULL, args, 3), "hpl_eval(saxpy.spv)");
        failed |= check(hpl_array_read(ctx, y, hy, sizeof hy), "hpl_array_read(y)");
        for (int i = 0; i < N && !failed; i++) {
            float want = 3.0f * (float)i + 1.0f - (float)i;
            if (hy[i] != want) {
                fprintf(stderr, "consumer: %s: y[%d] = %g, expected %g\n", path, i, (double)hy[i], (double)want);
                failed = 1;
            }
        }
        if (!failed)
            printf("consumer: %s: y = 3x + y ok\n", path);
    }
    failed |= check(hpl_array_destroy(ctx, x), "hpl_array_destroy(x)");
    failed |= check(hpl_array_destroy(ctx, y), "hpl_array_destroy(y)");
    failed |= check(hpl_kernel_destroy(ctx, k), "hpl_kernel_destroy");
    return failed;
}

int main(int argc, char **argv)
{
    printf("hplvk header %d.%d.%d, library 0x%06x\n", HPLVK_VERSION_MAJOR, HPLVK_VERSION_MINOR, HPLVK_VERSION_PATCH,
           (unsigned)hpl_version());
    if (hpl_version() != HPLVK_VERSION) {
        fprintf(stderr, "consumer: library version 0x%06x != header version 0x%06x\n", (unsigned)hpl_version(),
                (unsigned)HPLVK_VERSION);
        return 1;
    }

    int (*acquire)(hpl_context *, hpl_array, int, hpl_access, hpl_vulkan_buffer *) = hpl_array_vulkan_acquire;
    int (*release)(hpl_context *, hpl_array, int, VkSemaphore, uint64_t) = hpl_array_vulkan_release;
    if (!acquire || !release)
        return 1;

    hpl_context_desc desc = {0};
    hpl_context *ctx = NULL;
    if (check(hpl_context_create(&desc, &ctx), "hpl_context_create"))
        return 1;
    int devices = hpl_device_count(ctx);
    printf("devices: %d\n", devices);
    int failed = devices < 1;

    hpl_array_desc adesc = {0};
    adesc.type = HPL_FLOAT32;
    adesc.dims[0] = N;
    hpl_array a, b;
    failed |= check(hpl_array_create(ctx, &adesc, &a), "hpl_array_create(a)");
    failed |= check(hpl_array_create(ctx, &adesc, &b), "hpl_array_create(b)");
    if (!failed) {
        float in[N], out[N];
        for (int i = 0; i < N; i++)
            in[i] = 0.5f * (float)i - 3.0f;
        failed |= check(hpl_array_write(ctx, a, in, sizeof in), "hpl_array_write");
        failed |= check(hpl_array_read(ctx, a, out, sizeof out), "hpl_array_read(a)");
        for (int i = 0; i < N && !failed; i++) {
            if (out[i] != in[i]) {
                fprintf(stderr, "consumer: a[%d] = %g, expected %g\n", i, (double)out[i], (double)in[i]);
                failed = 1;
            }
        }

        const float value = 2.5f;
        failed |= check(hpl_array_fill(ctx, b, &value, 0), "hpl_array_fill");
        failed |= check(hpl_array_read(ctx, b, out, sizeof out), "hpl_array_read(b)");
        for (int i = 0; i < N && !failed; i++) {
            if (out[i] != value) {
                fprintf(stderr, "consumer: b[%d] = %g, expected %g\n", i, (double)out[i], (double)value);
                failed = 1;
            }
        }
        failed |= check(hpl_array_destroy(ctx, a), "hpl_array_destroy(a)");
        failed |= check(hpl_array_destroy(ctx, b), "hpl_array_destroy(b)");
    }
    if (argc > 1)
        failed |= saxpy_spv(ctx, argv[1]);
    failed |= check(hpl_finish(ctx), "hpl_finish");
    hpl_context_destroy(ctx);

    printf("consumer: %s\n", failed ? "FAILED" : "ok");
    return failed;
}
