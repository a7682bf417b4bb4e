/*
 * sample_result.h — the RESULT line that the samples and their twins
 * print, and its hooks: a sample over MPI ranks (sample_ranks.h) combines
 * every rank's verdict (SAMPLE_RESULT_VERIFIED) and appends its ranks
 * field (SAMPLE_RESULT_TAIL); a twin over ranks defines its own; a
 * program in one process takes the defaults below. Define SAMPLE_NAME, and
 * those hooks if any, before including it. Pure C11, header-only; counted
 * for neither side by samples/twins/count_lines.sh.
 */
#ifndef HPLVK_SAMPLE_RESULT_H
#define HPLVK_SAMPLE_RESULT_H

#ifndef SAMPLE_NAME
#error "define SAMPLE_NAME before including sample_result.h"
#endif

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifndef SAMPLE_RESULT_VERIFIED
#define SAMPLE_RESULT_VERIFIED(ok) (ok)
#endif
#ifndef SAMPLE_RESULT_TAIL
#define SAMPLE_RESULT_TAIL() ""
#endif

/* The RESULT line of a grid stepped `steps` times. `devices`: the devices
 * that ran, one token each, comma separated; ms: the time of the timed
 * steps 1 .. steps-1 (step 0 warms up); rate: cell updates per second over
 * them. */
static inline void sample_print_grid_result(const char *devices, uint64_t rows, uint64_t cols, uint64_t steps,
                                            double ms, bool verified)
{
    double cells = (double)rows * (double)cols * (double)(steps - 1);
    double rate = ms > 0.0 ? cells / (ms * 1e-3) / 1e6 : 0.0;
    printf("RESULT name=" SAMPLE_NAME " devices=%s size=%" PRIu64 "x%" PRIu64 "x%" PRIu64
           " time_ms=%.3f rate=%.4gMcell/s verified=%s%s\n",
           devices, rows, cols, steps, ms, rate, SAMPLE_RESULT_VERIFIED(verified) ? "yes" : "no",
           SAMPLE_RESULT_TAIL());
}

#endif
