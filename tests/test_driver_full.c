/* The driver runs out of device memory before the library's limit does
 * (residency.c, allocate): the library evicts the least recently used
 * array it may (saving what only the device holds) and tries again; with
 * nothing left to evict it fails with HPL_ERROR_OUT_OF_DEVICE_MEMORY naming
 * the array, and recovers once memory is back. The driver's refusals are
 * made here: this program defines vkAllocateMemory, which the library's
 * calls reach before the loader's (the executable comes first in the
 * dynamic linker's search), and refuses arrays' allocations while
 * `refuse` says so. Every array is checked against the host afterwards. */
#define _GNU_SOURCE
#include "harness.h"

#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <stdio.h>
#include <stdlib.h>

enum { N = 1 << 20 }; /* 4 MiB arrays */

static int refuse;     /* array allocations still to refuse; < 0: all of them */
static int refused;    /* refusals made */

VKAPI_ATTR VkResult VKAPI_CALL vkAllocateMemory(VkDevice device, const VkMemoryAllocateInfo *info,
                                                const VkAllocationCallbacks *allocator, VkDeviceMemory *memory)
{
    static PFN_vkAllocateMemory real;
    if (!real)
        real = (PFN_vkAllocateMemory)dlsym(RTLD_NEXT, "vkAllocateMemory");
    /* An array's own memory: device addresses (memory.c), not host memory
     * imported for transfers, and an array's size. */
    bool addressed = false, imported = false;
    for (const VkBaseInStructure *p = info->pNext; p; p = p->pNext) {
        if (p->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO)
            addressed |= ((const VkMemoryAllocateFlagsInfo *)p)->flags & VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
        imported |= p->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    }
    if (refuse != 0 && addressed && !imported && info->allocationSize >= (VkDeviceSize)N * 4) {
        refuse -= refuse > 0;
        refused++;
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
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

int main(void)
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
    return th_finish(ctx);
}
