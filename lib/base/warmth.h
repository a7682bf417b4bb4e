/* Whether a device's clocks are likely up, from its recent load: the
 * searches of execution plans time GPUs warm (plan.c). Pure logic.
 *
 * GPUs idle at low clocks and raise them only under load. An H200
 * (samples/bench/bench_ramp, samples/bench/RESULTS.md) ran 190 ms of back-to-back kernels at
 * its idle clock (5.3x slow) before raising it; once up, the clocks stayed
 * through 1 s without work and were gone after 3 s; busy 20% of the time
 * they stayed, 10% or less they fell within a second; and from idle, a
 * load of 50% raised them only part of the way, 20% not at all. A search
 * whose runs wait for a slow device (a CPU) keeps a GPU busy a few percent
 * of the time, and times it at its idle clock: 5-6x slow.
 *
 * The estimate: a device is cold until it was warmed up (or ran
 * HPL__WARM_RAMP_S without pause within one run); a search starts it warm
 * at the device's last kernel and idle since (cold if it ran none). While
 * warm, its duty
 * (busy time over wall time) is averaged with exponential weights of time
 * constant HPL__WARM_TAU_S; below HPL__WARM_DUTY it is cold again, and
 * stays so until warmed (partial load does not bring the clocks back).
 * Fully idle, a warm device turns cold after tau ln(1 / duty) = 0.95 s. */
#ifndef HPL_WARMTH_H
#define HPL_WARMTH_H

#include <stdbool.h>

#define HPL__WARM_RAMP_S 0.25 /* continuous load that raises the clocks (H200: 0.19 s) */
#define HPL__WARM_TAU_S 0.5   /* the duty's memory */
#define HPL__WARM_DUTY 0.15   /* held at 0.2, fell at 0.1 */

typedef struct hpl__warmth {
    double duty; /* warm while >= HPL__WARM_DUTY; not followed while cold */
} hpl__warmth;

/* Zero-initialised: cold. */
void hpl__warmth_warmed(hpl__warmth *w);
/* The device was busy busy_s of the last wall_s seconds (one run, or the
 * time between runs with busy_s 0). Values that are not finite, negative
 * or busy_s > wall_s are clamped or ignored. */
void hpl__warmth_ran(hpl__warmth *w, double busy_s, double wall_s);
bool hpl__warmth_cold(const hpl__warmth *w);

#endif
