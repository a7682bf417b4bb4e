/* Staged host transfers (lib/engine/staging.c): with HPLVK_HOST_IMPORT=0 no device
 * imports host memory, so every transfer between the host and a device goes
 * through the device's staging slots, chunk by chunk. With
 * HPLVK_STAGING_CHUNK=1K (set here before each context) a transfer of a few
 * KiB takes several chunks and wraps around the three slots, both ways.
 * Checked against a host computation of the same steps:
 *   - a 2-D stencil split by rows over two devices with separate memories,
 *     from user storage that is not page aligned, many steps: halos between
 *     the devices go device -> host -> device, each leg staged; a host read
 *     of a column (one element per row: many runs per chunk) and of the whole;
 *   - every byte moved to or from a device is counted as staged;
 *   - bad HPLVK_HOST_IMPORT / HPLVK_STAGING_CHUNK values are refused by name;
 *   - with import allowed again, arrays over shared file mappings (never
 *     imported: NVIDIA's driver refuses them, and allocations after the
 *     refusal failed; lib/engine/storage.c) are staged, compute the same,
 *     and the files hold the result. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROWS 203
#define COLS 37
#define STEPS 9

/* dst = src + rows above and below (edges copied), uint arithmetic */
static const char *stencil_src = STENCIL_ROWS_SRC("3u");

static void host_step(const uint32_t *in, uint32_t *out)
{
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            uint32_t v = in[r * COLS + c];
            if (r > 0 && r + 1 < ROWS)
                v = in[(r - 1) * COLS + c] + 3u * v + in[(r + 1) * COLS + c];
            out[r * COLS + c] = v;
        }
}

static void fill(uint32_t *g)
{
    for (int i = 0; i < ROWS * COLS; i++)
        g[i] = (uint32_t)i * 2654435761u;
}

/* Runs STEPS stencil steps over g[0] <-> g[1] (user storage a and b) on two
 * devices and checks the newest grid, a column of it, and that it is in the
 * user's storage. */
static void run_stencil(hpl_context *ctx, uint32_t *a, uint32_t *b, const char *what)
{
    hpl_kernel k = th_kernel(ctx, stencil_src);
    hpl_array g[2];
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {ROWS, COLS}, .host = a}, &g[0]));
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {ROWS, COLS}, .host = b}, &g[1]));
    uint32_t *ref[2] = {malloc(ROWS * COLS * 4), malloc(ROWS * COLS * 4)};
    fill(ref[0]);
    for (int s = 0; s < STEPS; s++) {
        CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        host_step(ref[s % 2], ref[(s + 1) % 2]);
    }
    const uint32_t *want = ref[STEPS % 2];

    hpl_array column;
    uint32_t col[ROWS];
    CHECK_OK(hpl_subarray(ctx, g[STEPS % 2], HPL_RANGES(HPL_ALL, {5, 5}), &column));
    CHECK_OK(hpl_array_read(ctx, column, col, sizeof col));
    int bad = 0;
    for (int r = 0; r < ROWS; r++)
        bad += col[r] != want[r * COLS + 5];
    CHECK(bad == 0, "%s: column 5 read back with %d of %d elements wrong", what, bad, ROWS);

    const uint32_t *got;
    CHECK_OK(hpl_array_access(ctx, g[STEPS % 2], HPL_READ, (void **)&got));
    bad = 0;
    for (int i = 0; i < ROWS * COLS; i++)
        bad += got[i] != want[i];
    CHECK(bad == 0, "%s: %d of %d elements wrong after %d steps", what, bad, ROWS * COLS, STEPS);
    const uint32_t *user = STEPS % 2 ? b : a;
    CHECK(got == user && memcmp(user, want, ROWS * COLS * 4) == 0, "%s: the user's storage does not hold the result",
          what);
    CHECK_OK(hpl_array_destroy(ctx, g[0]));
    CHECK_OK(hpl_array_destroy(ctx, g[1]));
    free(ref[0]);
    free(ref[1]);
}

static void staged_stencil(void)
{
    setenv("HPLVK_HOST_IMPORT", "0", 1);
    setenv("HPLVK_STAGING_CHUNK", "1K", 1);
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_OFF});
    for (int d = 0; d < hpl_device_count(ctx); d++) {
        hpl_device_info info;
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info)))
            CHECK(!info.host_import && !info.zero_copy, "device %d: HPLVK_HOST_IMPORT=0 left host_import %d zero_copy %d",
                  d, info.host_import, info.zero_copy);
    }
    /* Storage off the page and the 16-byte grid: staging copies any bytes. */
    uint8_t *block = malloc(2 * ROWS * COLS * 4 + 64);
    uint32_t *a = (uint32_t *)(block + 4), *b = (uint32_t *)(block + 4 + ROWS * COLS * 4 + 8);
    fill(a);
    memset(b, 0, ROWS * COLS * 4);
    run_stencil(ctx, a, b, "staged, 1 KiB chunks");
    hpl_stats st;
    CHECK_OK(hpl_stats_get(ctx, &st));
    const hpl_device_stats *t = &st.total;
    CHECK(t->staged_bytes > 0 && t->staged_bytes == t->to_device_bytes + t->to_host_bytes,
          "staged %" PRIu64 " bytes of %" PRIu64 " to devices and %" PRIu64 " to the host: want all of them",
          t->staged_bytes, t->to_device_bytes, t->to_host_bytes);
    CHECK(t->to_device_bytes >= (uint64_t)ROWS * COLS * 4,
          "only %" PRIu64 " bytes went to the devices: the first step reads all of the grid", t->to_device_bytes);
    hpl_context_destroy(ctx);
    free(block);
    unsetenv("HPLVK_STAGING_CHUNK");
    unsetenv("HPLVK_HOST_IMPORT");
}

static void bad_settings(void)
{
    static const struct {
        const char *name, *value, *says;
    } cases[] = {
        {"HPLVK_HOST_IMPORT", "2", "HPLVK_HOST_IMPORT='2'"},
        {"HPLVK_HOST_IMPORT", "yes", "HPLVK_HOST_IMPORT='yes'"},
        {"HPLVK_STAGING_CHUNK", "8", "HPLVK_STAGING_CHUNK='8'"},
        {"HPLVK_STAGING_CHUNK", "2G", "HPLVK_STAGING_CHUNK='2G'"},
        {"HPLVK_STAGING_CHUNK", "lots", "HPLVK_STAGING_CHUNK"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv(cases[i].name, cases[i].value, 1);
        hpl_context_desc desc = {.devices = th_devices("cpu")};
        th_prepare_desc(&desc);
        hpl_context *ctx = NULL;
        CHECK_FAILS(hpl_context_create(&desc, &ctx), HPL_ERROR_INVALID_ARGUMENT, cases[i].says);
        hpl_context_destroy(ctx);
        unsetenv(cases[i].name);
    }
}

/* A shared mapping of a file of `bytes`, zero-filled; NULL on failure. */
static uint32_t *map_file(size_t bytes)
{
    char path[] = "/tmp/hplvk_staging_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path);
    void *p = ftruncate(fd, (off_t)bytes) == 0 ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                               : MAP_FAILED;
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static void file_mapping(void)
{
    size_t bytes = ROWS * COLS * 4;
    uint32_t *a = map_file(bytes), *b = map_file(bytes);
    if (!CHECK(a && b, "cannot map a temporary file"))
        return;
    fill(a);
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu:2", .zero_copy = HPL_ZERO_COPY_OFF});
    run_stencil(ctx, a, b, "file mapping");
    hpl_stats st;
    CHECK_OK(hpl_stats_get(ctx, &st));
    uint64_t moved = st.total.to_device_bytes + st.total.to_host_bytes;
    CHECK(moved > 0 && st.total.staged_bytes == moved,
          "file mapping: %" PRIu64 " of %" PRIu64 " bytes staged: want all (file mappings are never imported)",
          st.total.staged_bytes, moved);
    hpl_context_destroy(ctx);
    munmap(a, bytes);
    munmap(b, bytes);
}

int main(void)
{
    staged_stencil();
    bad_settings();
    file_mapping();
    return th_finish(NULL);
}
