/*
 * sample_warm.h — warming a GPU up before timing it. No hplvk here: the
 * twins (hand-written Vulkan) warm up the same way as the samples.
 *
 * GPUs idle at low clocks and raise them only after being busy a while. On
 * the H200, `wave_sim 16384 100` ran its first ~150 ms of steps at 4.6 ms
 * each and the rest at 1.08 ms, so a run that started cold measured 226-287
 * ms and one that started warm 107 (samples/bench/RESULTS.md). Before
 * timing, a sample on a GPU repeats a step that leaves its data as it found
 * it (a stencil's first: it reads the start and overwrites the other grid) in
 * batches, each twice the last until one takes SAMPLE_WARM_BATCH_MS, for
 * SAMPLE_WARM_MS in all; matmul repeats its untimed product. CPUs need none, but run one step of it, so that
 * the samples' checks on Lavapipe show that the step changes nothing.
 */
#ifndef SAMPLE_WARM_H
#define SAMPLE_WARM_H

#define SAMPLE_WARM_MS 500.0
#define SAMPLE_WARM_BATCH_MS 20.0

/* The next batch's steps after one of `batch` steps took `ms`. */
static inline unsigned sample_warm_next(unsigned batch, double ms)
{
    return ms < SAMPLE_WARM_BATCH_MS && batch < 65536u ? batch * 2u : batch;
}

#endif
