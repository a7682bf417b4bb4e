/* What vkBeginCommandBuffer costs the host on the first device, by how command buffers are reset:
 *   reset-bit   one pool with RESET_COMMAND_BUFFER_BIT, begin resets implicitly (hplvk's rings)
 *   transient   the same pool flags plus TRANSIENT_BIT
 *   pool-reset  a pool per command buffer, vkResetCommandPool before begin
 * Each of 4 command buffers in turn: reset/begin (timed), three barriers and two 4-byte fills, end, submit with
 * a fence, spin on the fence; 20000 rounds per variant, three passes; mean host time of reset + begin.
 * Measured for samples/bench/results/h200-pushes.txt. Built by target begin_probe (the Vulkan loader only,
 * no hplvk): cmake --build build --target begin_probe; run build/samples/bench/probes/begin_probe. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vulkan/vulkan.h>

#define CHECK(x) do { VkResult r_ = (x); if (r_ != VK_SUCCESS) { printf("%s: %d\n", #x, r_); exit(1); } } while (0)
#define K 4

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void)
{
    VkInstance inst;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    CHECK(vkCreateInstance(&(VkInstanceCreateInfo){.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app}, NULL, &inst));
    uint32_t n = 8;
    VkPhysicalDevice pds[8], pd = VK_NULL_HANDLE;
    vkEnumeratePhysicalDevices(inst, &n, pds);
    VkPhysicalDeviceProperties props;
    for (uint32_t i = 0; i < n; i++) { /* the first GPU, else the first device */
        pd = pds[i];
        vkGetPhysicalDeviceProperties(pd, &props);
        if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)
            break;
        if (i + 1 == n) {
            pd = pds[0];
            vkGetPhysicalDeviceProperties(pd, &props);
        }
    }
    float prio = 1;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = 0, .queueCount = 1, .pQueuePriorities = &prio};
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &(VkDeviceCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi}, NULL, &dev));
    VkQueue q;
    vkGetDeviceQueue(dev, 0, 0, &q);
    VkBuffer buf;
    CHECK(vkCreateBuffer(dev, &(VkBufferCreateInfo){.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 256, .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT}, NULL, &buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buf, &req);
    uint32_t type = 0;
    while (!(req.memoryTypeBits & (1u << type)))
        type++;
    VkDeviceMemory mem;
    CHECK(vkAllocateMemory(dev, &(VkMemoryAllocateInfo){.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = type}, NULL, &mem));
    CHECK(vkBindBufferMemory(dev, buf, mem, 0));
    VkFence fence;
    CHECK(vkCreateFence(dev, &(VkFenceCreateInfo){.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO}, NULL, &fence));
    printf("device: %s\n", props.deviceName);
    const char *names[3] = {"reset-bit", "transient", "pool-reset"};
    for (int pass = 0; pass < 3; pass++)
        for (int v = 0; v < 3; v++) {
            VkCommandPool pools[K];
            VkCommandBuffer cbs[K];
            VkCommandPoolCreateFlags flags = v == 0 ? VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
                                             : v == 1 ? VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT
                                                      : VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
            int npools = v == 2 ? K : 1;
            for (int i = 0; i < npools; i++)
                CHECK(vkCreateCommandPool(dev, &(VkCommandPoolCreateInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .flags = flags, .queueFamilyIndex = 0}, NULL, &pools[i]));
            for (int i = 0; i < K; i++)
                CHECK(vkAllocateCommandBuffers(dev, &(VkCommandBufferAllocateInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pools[v == 2 ? i : 0], .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1}, &cbs[i]));
            double begin = 0;
            const int rounds = 20000;
            for (int r = 0; r < rounds; r++) {
                int i = r % K;
                double t0 = now_us();
                if (v == 2)
                    vkResetCommandPool(dev, pools[i], 0);
                CHECK(vkBeginCommandBuffer(cbs[i], &(VkCommandBufferBeginInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT}));
                begin += now_us() - t0;
                VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT};
                vkCmdPipelineBarrier(cbs[i], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, NULL, 0, NULL);
                vkCmdFillBuffer(cbs[i], buf, 0, 4, (uint32_t)r);
                vkCmdPipelineBarrier(cbs[i], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, NULL, 0, NULL);
                vkCmdFillBuffer(cbs[i], buf, 4, 4, (uint32_t)r);
                vkCmdPipelineBarrier(cbs[i], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, NULL, 0, NULL);
                CHECK(vkEndCommandBuffer(cbs[i]));
                CHECK(vkQueueSubmit(q, 1, &(VkSubmitInfo){.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cbs[i]}, fence));
                while (vkGetFenceStatus(dev, fence) != VK_SUCCESS)
                    ;
                vkResetFences(dev, 1, &fence);
            }
            printf("pass %d %-10s reset + begin %.3f us\n", pass, names[v], begin / rounds);
            for (int i = 0; i < npools; i++)
                vkDestroyCommandPool(dev, pools[i], NULL);
        }
    vkDestroyFence(dev, fence, NULL);
    vkDestroyBuffer(dev, buf, NULL);
    vkFreeMemory(dev, mem, NULL);
    vkDestroyDevice(dev, NULL);
    vkDestroyInstance(inst, NULL);
    return 0;
}
