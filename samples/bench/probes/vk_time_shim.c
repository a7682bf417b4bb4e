/* LD_PRELOAD: time Vulkan calls made on the main thread (and on others); used for
 * samples/bench/results/h200-queues.txt. Built by target vk_time_shim (cmake --build build --target vk_time_shim):
 * LD_PRELOAD=build/samples/bench/probes/vk_time_shim.so ./program prints each call's count and host time to
 * stderr at exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <vulkan/vulkan.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
enum { SUBMIT, SIGNAL, VALUE, BEGIN, END, WAIT, N };
static const char *names[N] = {"vkQueueSubmit", "vkSignalSemaphore", "vkGetSemaphoreCounterValue", "vkBeginCommandBuffer", "vkEndCommandBuffer", "vkWaitSemaphores"};
static double us[2][N]; static unsigned long cnt[2][N];
static int mainthr(void){ return syscall(SYS_gettid) == getpid() ? 0 : 1; }
#define WRAP(i, ret, name, params, args) \
  ret name params { static ret (*real_) params; if (!real_) real_ = (ret (*) params)dlsym(RTLD_NEXT, #name); \
    int m = mainthr(); double t0_ = now(); ret r = real_ args; __atomic_fetch_add(&cnt[m][i], 1, 0); us[m][i] += now() - t0_; return r; }
WRAP(SUBMIT, VkResult, vkQueueSubmit, (VkQueue q, uint32_t n, const VkSubmitInfo *s, VkFence f), (q, n, s, f))
WRAP(SIGNAL, VkResult, vkSignalSemaphore, (VkDevice d, const VkSemaphoreSignalInfo *s), (d, s))
WRAP(VALUE, VkResult, vkGetSemaphoreCounterValue, (VkDevice d, VkSemaphore s, uint64_t *v), (d, s, v))
WRAP(BEGIN, VkResult, vkBeginCommandBuffer, (VkCommandBuffer c, const VkCommandBufferBeginInfo *b), (c, b))
WRAP(END, VkResult, vkEndCommandBuffer, (VkCommandBuffer c), (c))
WRAP(WAIT, VkResult, vkWaitSemaphores, (VkDevice d, const VkSemaphoreWaitInfo *w, uint64_t t), (d, w, t))
__attribute__((destructor)) static void report(void) {
  for (int m = 0; m < 2; m++) for (int i = 0; i < N; i++) if (cnt[m][i])
    fprintf(stderr, "shim %s thread: %-28s %8lu calls %10.0f us total %7.2f us each\n", m ? "other" : "main", names[i], cnt[m][i], us[m][i], us[m][i] / cnt[m][i]);
}
