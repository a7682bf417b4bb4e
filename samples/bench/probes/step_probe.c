/* Host time per stencil step over N logical devices: hpl_eval calls alone, and the whole.
 * Measured for samples/bench/results/h200-queues.txt. Built by target step_probe (on libhplvk.so):
 * cmake --build build --target step_probe; run on the devices to compare, with rows (default 256), steps
 * (default 2000) and "first" for halos first, e.g. HPLVK_DEVICES=gpu0:2 build/samples/bench/probes/step_probe 256 2000. */
#define _POSIX_C_SOURCE 200809L
#include <hplvk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now_us(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static const char *src = "#include <hplvk.glsl>\n"
  "hpl_args { hpl_in(uint, 2) a; hpl_out(uint, 2) b; };\n"
  "void main() { uint i = hpl_global_id.x, j = hpl_global_id.y; uint n = a.dims.x;\n"
  "  uint up = i > 0u ? hpl_at2(a, i - 1u, j) : 0u, dn = i + 1u < n ? hpl_at2(a, i + 1u, j) : 0u;\n"
  "  hpl_at2(b, i, j) = up + dn + hpl_at2(a, i, j); }\n";
int main(int argc, char **argv){
    int rows = argc > 1 ? atoi(argv[1]) : 256, steps = argc > 2 ? atoi(argv[2]) : 2000;
    bool first = argc > 3 && !strcmp(argv[3], "first");
    hpl_context *ctx; if (hpl_context_create(&(hpl_context_desc){0}, &ctx)) { puts(hpl_last_error()); return 1; }
    int n = hpl_device_count(ctx);
    hpl_kernel k; if (hpl_kernel_create(ctx, &(hpl_kernel_desc){.source.glsl=src}, &k)) { puts(hpl_last_error()); return 1; }
    hpl_array g[2];
    for (int i = 0; i < 2; i++) hpl_array_create(ctx, &(hpl_array_desc){.type=HPL_UINT32,.dims={rows, 256}}, &g[i]);
    hpl_launch l = {.device_count = n, .halos_first = first};
    for (int d = 0; d < n; d++) l.devices[d] = d;
    for (int s = 0; s < 50; s++) if (hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(g[s%2], 1), hpl_part1(g[1-s%2], 1)))) { puts(hpl_last_error()); return 1; }
    hpl_finish(ctx);
    for (int rep = 0; rep < 3; rep++) {
      hpl_stats_reset(ctx);
      double in = 0, t0 = now_us();
      for (int s = 0; s < steps; s++) { double c = now_us(); hpl_eval(ctx, k, &l, HPL_ARGS(hpl_part1(g[s%2], 1), hpl_part1(g[1-s%2], 1))); in += now_us() - c; }
      double t1 = now_us(); hpl_finish(ctx); double t2 = now_us();
      printf("%d devices, %dx256, %s: host in hpl_eval %.2f us/step, whole %.2f us/step (finish %.0f us)\n", n, rows, first ? "first" : "after", in / steps, (t2 - t0) / steps, t2 - t1);
      hpl_stats st; hpl_stats_get(ctx, &st);
      for (int d = 0; d < n; d++) printf("  device %d per step: ops %.2f submissions %.2f transfer subs %.2f to_host %.2f to_dev %.2f\n", d, (double)st.device[d].operations / steps, (double)st.device[d].submissions / steps, (double)st.device[d].transfer_submissions / steps, (double)st.device[d].to_host_count / steps, (double)st.device[d].to_device_count / steps);
    }
    hpl_context_destroy(ctx); return 0;
}
