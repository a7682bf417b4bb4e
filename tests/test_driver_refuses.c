/* The driver refuses memory, and the library copes (or says why not).
 * The refusals are made here: this program defines vkAllocateMemory, which
 * the library's calls reach before the loader's (the executable comes
 * first in the dynamic linker's search).
 * - Device memory runs out before the library's limit (residency.c,
 *   allocate): the library evicts the least recently used array it may
 *   (saving what only the device holds) and tries again; with nothing left
 *   to evict it fails with HPL_ERROR_OUT_OF_DEVICE_MEMORY naming the array,
 *   and recovers once memory is back.
 * - The driver will not import an array's host memory (storage.c,
 *   hpl__host_storage_import): with a device address (the copy kernel
 *   wants one), the library imports it without; not at all, its copies go
 *   through staging slots; on a zero-copy device, whose kernels run on that
 *   memory, the eval fails with an error that says so.
 * Every array is checked against the host afterwards. */
#define _GNU_SOURCE
#include "harness.h"

#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <stdio.h>
#include <stdlib.h>

enum { N = 1 << 20 }; /* 4 MiB arrays */

static int refuse;           /* arrays' allocations still to refuse; < 0: all of them */
static int refused;          /* refusals made */
static bool refuse_imports;  /* every import of host memory */
static bool refuse_addressed; /* imports of host memory with a device address */

VKAPI_ATTR VkResult VKAPI_CALL vkAllocateMemory(VkDevice device, const VkMemoryAllocateInfo *info,
                                                const VkAllocationCallbacks *allocator, VkDeviceMemory *memory)
{
    static PFN_vkAllocateMemory real;
    if (!real)
        real = (PFN_vkAllocateMemory)dlsym(RTLD_NEXT, "vkAllocateMemory");
    /* An array's own memory has a device address (memory.c) and an array's
     * size; imported host memory says so. */
    bool addressed = false, imported = false;
    for (const VkBaseInStructure *p = info->pNext; p; p = p->pNext) {
        if (p->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO)
            addressed |= ((const VkMemoryAllocateFlagsInfo *)p)->flags & VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
        imported |= p->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    }
    bool array = addressed && !imported && info->allocationSize >= (VkDeviceSize)N * 4;
    if ((array && refuse != 0) || (imported && (refuse_imports || (refuse_addressed && addressed)))) {
        refuse -= array && refuse > 0;
        refused++;
        return array ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_ERROR_INVALID_EXTERNAL_HANDLE;
    }
    return real(device, info, allocator, memory);
}

static const char *fill_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) x; uint seed; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) = i * 2654435761u + seed; }\n";

static void fill(hpl_context *ctx, hpl_kernel k, hpl_array x, uint32_t seed)
{
    CHECK_OK(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_u32(seed))));
}

static void expect_filled(hpl_context *ctx, hpl_array x, uint32_t seed, const char *what)
{
    const uint32_t *got = th_access(ctx, x, HPL_READ);
    int bad = 0;
    for (uint32_t i = 0; got && i < N; i++)
        bad += got[i] != i * 2654435761u + seed;
    CHECK(got && bad == 0, "%s: %d of %d elements wrong", what, bad, N);
}

static void device_full(void)
{
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .zero_copy = HPL_ZERO_COPY_OFF});
    hpl_kernel k = th_kernel(ctx, fill_src);
    hpl_array a = th_array(ctx, HPL_UINT32, N, 0, 0), b = th_array(ctx, HPL_UINT32, N, 0, 0),
              c = th_array(ctx, HPL_UINT32, N, 0, 0);
    fill(ctx, k, a, 1); /* a lives on the device only */
    CHECK_OK(hpl_finish(ctx));

    /* One refusal: a makes room for b. */
    hpl_stats before, after;
    CHECK_OK(hpl_stats_get(ctx, &before));
    refuse = 1;
    fill(ctx, k, b, 2);
    CHECK_OK(hpl_finish(ctx));
    CHECK_OK(hpl_stats_get(ctx, &after));
    CHECK(refused == 1, "%d allocations refused, want 1 (the test's premise)", refused);
    CHECK(after.total.evictions == before.total.evictions + 1, "%llu evictions, want 1",
          (unsigned long long)(after.total.evictions - before.total.evictions));
    expect_filled(ctx, b, 2, "b, allocated after an eviction");
    expect_filled(ctx, a, 1, "a, saved to the host before its eviction");

    /* Every allocation refused: each array gives way, then c has no room. */
    refuse = -1;
    refused = 0;
    CHECK_FAILS(hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(c), hpl_u32(3))), HPL_ERROR_OUT_OF_DEVICE_MEMORY, "'");
    CHECK(refused >= 1, "no allocation refused");
    char msg[512];
    snprintf(msg, sizeof msg, "%s", hpl_last_error());
    CHECK(th_contains(msg, "needs 4.00 MiB"), "the error names what c needs: %s", msg);

    /* Memory back: everything works and nothing was lost. */
    refuse = 0;
    fill(ctx, k, c, 3);
    CHECK_OK(hpl_finish(ctx));
    expect_filled(ctx, c, 3, "c, after the driver had room again");
    expect_filled(ctx, a, 1, "a");
    expect_filled(ctx, b, 2, "b");
    hpl_array all[] = {a, b, c};
    for (int i = 0; i < 3; i++)
        CHECK_OK(hpl_array_destroy(ctx, all[i]));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    hpl_context_destroy(ctx);
}

static const char *inc_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_inout(uint, 1) x; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(x, i) += 1u; }\n";

/* A round trip of an array through the device: filled there and read
 * back, then written on the host, incremented there (an upload) and read
 * back. */
static void round_trip(hpl_context *ctx, hpl_kernel fill_k, const char *what)
{
    hpl_kernel inc = th_kernel(ctx, inc_src);
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    fill(ctx, fill_k, x, 5);
    expect_filled(ctx, x, 5, what);
    uint32_t *w = th_access(ctx, x, HPL_WRITE);
    for (uint32_t i = 0; w && i < N; i++)
        w[i] = i * 2654435761u + 6;
    CHECK_OK(hpl_eval(ctx, inc, NULL, HPL_ARGS(hpl_arr(x))));
    expect_filled(ctx, x, 7, what);
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, inc));
}

static void imports_refused(void)
{
    /* Addressed imports refused (the copy kernel, forced on, asks for
     * them): imported without an address (strided copies then go by copy
     * regions), nothing staged. */
    setenv("HPLVK_STRIDED_COPY", "kernel", 1);
    hpl_context *ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .zero_copy = HPL_ZERO_COPY_OFF});
    hpl_kernel k = th_kernel(ctx, fill_src);
    refused = 0;
    refuse_addressed = true;
    round_trip(ctx, k, "addressed imports refused");
    refuse_addressed = false;
    hpl_stats st;
    CHECK_OK(hpl_stats_get(ctx, &st));
    CHECK(refused >= 1, "no addressed import was refused (the case's premise)");
    CHECK(st.total.staged_bytes == 0, "%llu bytes staged: the import without an address should have served",
          (unsigned long long)st.total.staged_bytes);
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    hpl_context_destroy(ctx);
    unsetenv("HPLVK_STRIDED_COPY");

    /* Every import refused: staged. */
    ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .zero_copy = HPL_ZERO_COPY_OFF});
    k = th_kernel(ctx, fill_src);
    refused = 0;
    refuse_imports = true;
    round_trip(ctx, k, "imports refused");
    CHECK_OK(hpl_stats_get(ctx, &st));
    CHECK(refused >= 1, "no import was refused (the case's premise)");
    CHECK(st.total.staged_bytes >= (uint64_t)N * 4, "%llu bytes staged, want the round trip's",
          (unsigned long long)st.total.staged_bytes);
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    hpl_context_destroy(ctx);

    /* A zero-copy device cannot do without: the eval fails and says why.
     * (A device that does not share the host's memory is not zero-copy:
     * it stages, as above.) */
    ctx = th_context_desc(&(hpl_context_desc){.devices = "cpu", .zero_copy = HPL_ZERO_COPY_ON});
    k = th_kernel(ctx, fill_src);
    hpl_device_info info;
    bool zero_copy = hpl_device_get_info(ctx, 0, &info) == HPL_OK && info.zero_copy;
    hpl_array x = th_array(ctx, HPL_UINT32, N, 0, 0);
    int rc = hpl_eval(ctx, k, NULL, HPL_ARGS(hpl_arr(x), hpl_u32(8)));
    if (rc == HPL_OK)
        rc = hpl_finish(ctx);
    if (zero_copy)
        CHECK(rc != HPL_OK && th_contains(hpl_last_error(), "host import") &&
                  th_contains(hpl_last_error(), "VK_ERROR_INVALID_EXTERNAL_HANDLE"),
              "zero-copy eval with imports refused: %s (%s)", hpl_error_string(rc), rc ? hpl_last_error() : "");
    else
        CHECK_OK(rc);
    refuse_imports = false;
    fill(ctx, k, x, 9); /* imports back: it works */
    expect_filled(ctx, x, 9, "zero copy, imports back");
    CHECK_OK(hpl_array_destroy(ctx, x));
    CHECK_OK(hpl_kernel_destroy(ctx, k));
    hpl_context_destroy(ctx);
}

int main(void)
{
    device_full();
    imports_refused();
    return th_finish(NULL);
}
