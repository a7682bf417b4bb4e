/* Do kernels of two logical devices on queues of one VkDevice overlap?
 * Measured for samples/bench/results/h200-queues.txt. Built by target conc_probe (on libhplvk.so):
 * cmake --build build --target conc_probe; run with the devices to compare and the kernel's iterations
 * (default 2000000), e.g. HPLVK_LOGICAL_DEVICES=queues HPLVK_DEVICES=gpu0:2 build/samples/bench/probes/conc_probe. */
#define _POSIX_C_SOURCE 200809L
#include <hplvk.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now_ms(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static const char *src = "#include <hplvk.glsl>\n"
  "hpl_args { hpl_inout(float, 1) y; uint iters; };\n"
  "void main() { uint i = hpl_global_id.x; float v = hpl_at(y, i);\n"
  "  for (uint k = 0u; k < iters; k++) v = v * 0.999 + 0.5;\n"
  "  hpl_at(y, i) = v; }\n";
int main(int argc, char **argv){
    uint32_t iters = argc > 1 ? (uint32_t)atoi(argv[1]) : 2000000;
    hpl_context *ctx; if (hpl_context_create(&(hpl_context_desc){0}, &ctx)) { puts(hpl_last_error()); return 1; }
    int n = hpl_device_count(ctx);
    for (int d = 0; d < n; d++) { hpl_device_info i; hpl_device_get_info(ctx, d, &i);
      printf("device %d: %s replica %u shares %d transfer %d families:", d, i.name, i.replica, i.shares_vkdevice, i.dedicated_transfer_queue);
      for (uint32_t q = 0; q < i.queue_family_count; q++) printf(" [%u: flags %x count %u]", q, i.queue_families[q].flags, i.queue_families[q].count);
      printf("\n"); }
    hpl_kernel k; if (hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl=src}, &k)) { puts(hpl_last_error()); return 1; }
    hpl_array y[8];
    for (int d = 0; d < n; d++) hpl_array_create(ctx, &(hpl_array_desc){.type=HPL_FLOAT32,.dims={64}}, &y[d]);
    for (int d = 0; d < n; d++) hpl_eval(ctx, k, &(hpl_launch){.device=d,.local={64}}, HPL_ARGS(hpl_arr(y[d]), hpl_u32(1000)));
    hpl_finish(ctx);
    for (int rep = 0; rep < 3; rep++) {
      for (int m = 1; m <= n; m++) {
        double t0 = now_ms();
        for (int d = 0; d < m; d++) hpl_eval(ctx, k, &(hpl_launch){.device=d,.local={64}}, HPL_ARGS(hpl_arr(y[d]), hpl_u32(iters)));
        hpl_finish(ctx);
        printf("rep %d: one workgroup of spin on %d device(s) at once: %.1f ms\n", rep, m, now_ms() - t0);
      }
    }
    hpl_context_destroy(ctx); return 0;
}
