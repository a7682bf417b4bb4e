/* Do two threads' vkQueueSubmit calls overlap? On the first GPU: each thread submits ROUNDS small command
 * buffers (a barrier and a 4-byte fill, pre-recorded, SIMULTANEOUS_USE) to its own queue, each submission
 * signalling the queue's timeline semaphore, nothing waited for in between (a wait every 64 submissions
 * keeps the queue short). Mean host time per vkQueueSubmit call, for:
 *   one thread, one queue
 *   two threads, two queues of one VkDevice (hplvk's HPLVK_LOGICAL_DEVICES=queues)
 *   two threads, a VkDevice each (separate GPUs look like this)
 * If the driver serialises submissions per VkDevice, the second case costs about twice the first per
 * call; if not, about the same.
 * Measured for samples/bench/results/h200-pushes.txt. Built by target submit_probe (the Vulkan loader only,
 * no hplvk): cmake --build build --target submit_probe; run build/samples/bench/probes/submit_probe. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vulkan/vulkan.h>

#define CHECK(x) do { VkResult r_ = (x); if (r_ != VK_SUCCESS) { printf("%s: %d\n", #x, r_); exit(1); } } while (0)
#define ROUNDS 20000

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

typedef struct lane {
    VkDevice dev;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkSemaphore timeline;
    VkBuffer buf;
    VkDeviceMemory mem;
    uint64_t value;
    double submit_us; /* total host time in vkQueueSubmit */
} lane;

static VkPhysicalDevice pd;

static VkDevice make_device(uint32_t queues)
{
    float prio[2] = {1, 1};
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = 0, .queueCount = queues, .pQueuePriorities = prio};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .timelineSemaphore = VK_TRUE};
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &(VkDeviceCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f12, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi}, NULL, &dev));
    return dev;
}

static void lane_init(lane *l, VkDevice dev, uint32_t queue)
{
    l->dev = dev;
    l->value = 0;
    l->submit_us = 0;
    vkGetDeviceQueue(dev, 0, queue, &l->queue);
    CHECK(vkCreateBuffer(dev, &(VkBufferCreateInfo){.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 256, .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT}, NULL, &l->buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, l->buf, &req);
    uint32_t type = 0;
    while (!(req.memoryTypeBits & (1u << type)))
        type++;
    CHECK(vkAllocateMemory(dev, &(VkMemoryAllocateInfo){.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = type}, NULL, &l->mem));
    CHECK(vkBindBufferMemory(dev, l->buf, l->mem, 0));
    CHECK(vkCreateCommandPool(dev, &(VkCommandPoolCreateInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = 0}, NULL, &l->pool));
    CHECK(vkAllocateCommandBuffers(dev, &(VkCommandBufferAllocateInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = l->pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1}, &l->cb));
    CHECK(vkBeginCommandBuffer(l->cb, &(VkCommandBufferBeginInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT}));
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(l->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, NULL, 0, NULL);
    vkCmdFillBuffer(l->cb, l->buf, 0, 4, 7);
    CHECK(vkEndCommandBuffer(l->cb));
    VkSemaphoreTypeCreateInfo ti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    CHECK(vkCreateSemaphore(dev, &(VkSemaphoreCreateInfo){.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti}, NULL, &l->timeline));
}

static void lane_free(lane *l)
{
    vkDestroySemaphore(l->dev, l->timeline, NULL);
    vkDestroyCommandPool(l->dev, l->pool, NULL);
    vkDestroyBuffer(l->dev, l->buf, NULL);
    vkFreeMemory(l->dev, l->mem, NULL);
}

static void wait_value(lane *l, uint64_t v)
{
    CHECK(vkWaitSemaphores(l->dev, &(VkSemaphoreWaitInfo){.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, .semaphoreCount = 1, .pSemaphores = &l->timeline, .pValues = &v}, UINT64_MAX));
}

static void *run(void *arg)
{
    lane *l = arg;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t signal = ++l->value;
        VkTimelineSemaphoreSubmitInfo ti = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &signal};
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &ti, .commandBufferCount = 1, .pCommandBuffers = &l->cb, .signalSemaphoreCount = 1, .pSignalSemaphores = &l->timeline};
        double t0 = now_us();
        CHECK(vkQueueSubmit(l->queue, 1, &si, VK_NULL_HANDLE));
        l->submit_us += now_us() - t0;
        if (r % 64 == 63)
            wait_value(l, signal - 32);
    }
    wait_value(l, l->value);
    return NULL;
}

static void both(lane *a, lane *b, const char *what)
{
    pthread_t ta, tb;
    double t0 = now_us();
    pthread_create(&ta, NULL, run, a);
    pthread_create(&tb, NULL, run, b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    double wall = now_us() - t0;
    printf("%-44s per submit %.2f / %.2f us; wall per round %.2f us\n", what, a->submit_us / ROUNDS, b->submit_us / ROUNDS,
           wall / ROUNDS);
}

int main(void)
{
    VkInstance inst;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    CHECK(vkCreateInstance(&(VkInstanceCreateInfo){.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app}, NULL, &inst));
    uint32_t n = 8;
    VkPhysicalDevice pds[8];
    vkEnumeratePhysicalDevices(inst, &n, pds);
    VkPhysicalDeviceProperties props;
    pd = pds[0];
    for (uint32_t i = 0; i < n; i++) {
        vkGetPhysicalDeviceProperties(pds[i], &props);
        if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
            pd = pds[i];
            break;
        }
    }
    vkGetPhysicalDeviceProperties(pd, &props);
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, NULL);
    VkQueueFamilyProperties fam[16];
    families = families > 16 ? 16 : families;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, fam);
    printf("device: %s, family 0: %u queues\n", props.deviceName, fam[0].queueCount);
    for (int pass = 0; pass < 3; pass++) {
        VkDevice one = make_device(fam[0].queueCount >= 2 ? 2 : 1);
        lane a, b;
        lane_init(&a, one, 0);
        run(&a);
        printf("%-44s per submit %.2f us\n", "one thread, one queue", a.submit_us / ROUNDS);
        if (fam[0].queueCount >= 2) {
            lane_init(&b, one, 1);
            a.submit_us = 0;
            both(&a, &b, "two threads, two queues of one VkDevice");
            lane_free(&b);
        }
        lane_free(&a);
        VkDevice other = make_device(1);
        lane_init(&a, one, 0);
        lane_init(&b, other, 0);
        both(&a, &b, "two threads, a VkDevice each");
        lane_free(&a);
        lane_free(&b);
        vkDestroyDevice(other, NULL);
        vkDestroyDevice(one, NULL);
    }
    vkDestroyInstance(inst, NULL);
    return 0;
}
