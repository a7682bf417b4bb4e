/* Package schedulers for one eval split over several devices (issue 16,
 * paper 001 §3.2-3.4): the work is `total` units (work-groups along the
 * split dimension), handed out as packages, contiguous ranges
 * [first, first + count) in increasing order, to whichever device is free.
 * Pure logic: no Vulkan, no library state, no allocation after init.
 *
 *   DYNAMIC    fixed packages of params.package units (the last one is the
 *              remainder). The default is ceil(total / (8 N)): 8 packages
 *              per device keep the synchronisation points few, and a device
 *              left idle at the end waits for at most one 1/(8 N) of the work.
 *   HGUIDED    package for device i = max(min_i, floor(G_r P_i / (k N ΣP)))
 *              capped at G_r, where G_r is the work remaining, N the devices
 *              taking part, P the nominal powers, k = params.k (default 2).
 *              Sizes shrink with G_r and are weighted by the device's share.
 *   AUTO_TUNE  HGUIDED with the nominal powers until every device taking
 *              part has finished a package with a usable time, then with the
 *              measured speeds: units / seconds accumulated over this eval's
 *              timed packages. Minimum packages per device from
 *              hpl__schedule_min_package.
 *
 * N and ΣP count only the devices taking part: those with power > 0. A
 * device with power 0 gets no package (the caller's way to leave out a
 * device with no usable speed).
 *
 * Beyond the papers (all off by default, so the schemes above stay exactly
 * the papers'; plans turn them on):
 *   speeds      a device's speed may be known before the eval (units per
 *               second measured by an earlier eval of the same work); it
 *               counts as measured until this eval times the device.
 *               AUTO_TUNE with every speed known sizes by them from the
 *               first package.
 *   probe       AUTO_TUNE without nominal powers (the caller has none):
 *               until sized by measured speeds, every package is the
 *               device's minimum, so a device far slower than the others
 *               costs one small package to learn, not a nominal share.
 *   tail_guard  a device whose speed is known does not take a package it
 *               would still be running when the other devices would have
 *               finished everything left without it (at their known
 *               speeds; one not timed yet adds no speed, so in doubt the
 *               device takes the package). The package shrinks to what
 *               fits, down to its minimum (DYNAMIC's keep their size),
 *               else the device is done for the eval (declined). A device
 *               180x slower than a GPU then never holds up the end of an
 *               eval by more than what it had already taken. And when a
 *               single device is left to work, it takes all that remains
 *               in one package (DYNAMIC: still its fixed packages).
 *
 * Not thread-safe: one thread (the one that launches packages and collects
 * their completions) owns a schedule. */
#ifndef HPL_SCHEDULE_H
#define HPL_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#define HPL__SCHEDULE_MAX_DEVICES 16

typedef enum hpl__schedule_kind {
    HPL__SCHEDULE_DYNAMIC,
    HPL__SCHEDULE_HGUIDED,
    HPL__SCHEDULE_AUTO_TUNE,
} hpl__schedule_kind;

typedef struct hpl__schedule_device {
    double power;         /* nominal relative speed: > 0, or 0 to leave the device out */
    uint64_t min_package; /* HGUIDED, AUTO_TUNE: smallest package but the last (0 = 1) */
    double speed;         /* units per second known before the eval; 0 (or not finite) = unknown */
} hpl__schedule_device;

typedef struct hpl__schedule_params {
    uint64_t package; /* DYNAMIC: units per package; 0 = ceil(total / (8 N)) */
    unsigned k;       /* HGUIDED, AUTO_TUNE: the paper's k; 0 = 2 */
    bool probe;       /* AUTO_TUNE: minimum packages until measured (no nominal powers) */
    bool tail_guard;  /* devices decline packages that would end after the others' work */
} hpl__schedule_params;

typedef struct hpl__schedule_slot {
    bool part;        /* takes part: nominal power > 0 */
    double power;     /* nominal, scaled by the power of two that brings the largest below 1 */
    uint64_t min;     /* >= 1 */
    uint64_t pending; /* units taken and not yet done */
    uint64_t timed;   /* units done with a usable time */
    double seconds;   /* their time, each clamped (hpl__schedule_done) */
    double prior;     /* speed known before the eval (> 0), else 0 */
    bool declined;    /* tail_guard: takes nothing more this eval */
} hpl__schedule_slot;

typedef struct hpl__schedule {
    hpl__schedule_kind kind;
    int devices, taking_part; /* as passed; those with power > 0 (N) */
    int known_devices;        /* of those, how many have a speed (timed, or a prior) */
    unsigned k;
    bool probe, tail_guard;
    uint64_t total, next; /* [0, next) handed out */
    uint64_t package;     /* DYNAMIC */
    double nominal_sum;
    hpl__schedule_slot dev[HPL__SCHEDULE_MAX_DEVICES];
} hpl__schedule;

/* The AUTO_TUNE minimum package (paper 001 §3.4), at least 1: on a CPU one
 * work-group per core (`cores`), so no core idles and the usually slowest
 * device gets small packages; on a GPU the larger of `fill_groups` (enough
 * groups to fill it) and 5% of `total` rounded up, so that a throughput
 * device never runs packages too small to be efficient and there are at most
 * about 20 of them. */
uint64_t hpl__schedule_min_package(bool is_cpu, uint32_t cores, uint64_t fill_groups, uint64_t total);

/* Prepares s to hand out [0, total) over devices d[0 .. devices - 1]; p may
 * be NULL (defaults). Returns false, leaving s a schedule that hands out
 * nothing, when devices is outside 1 .. HPL__SCHEDULE_MAX_DEVICES, d is
 * NULL, kind is unknown, a power is negative or not finite, or no device
 * has power > 0. */
bool hpl__schedule_init(hpl__schedule *s, hpl__schedule_kind kind, uint64_t total, int devices,
                        const hpl__schedule_device *d, const hpl__schedule_params *p);

/* The next package for `device`, which is free (a device may also take its
 * next package before the previous one is done, to keep its queue full).
 * Returns false, with *count = 0, when nothing is left or the device takes
 * no part. */
bool hpl__schedule_take(hpl__schedule *s, int device, uint64_t *first, uint64_t *count);

/* `count` units of `device`'s packages finished in `seconds` (measured,
 * untrusted). A time that is not finite or not > 0 is ignored: the units are
 * done but not timed. A usable time is clamped to [1e-9, 1e9] s, so that a
 * broken timestamp can neither make a speed infinite nor the accumulated
 * time overflow. count beyond what the device has pending is cut to it; an
 * unknown device is ignored. */
void hpl__schedule_done(hpl__schedule *s, int device, uint64_t count, double seconds);

/* Units not yet handed out. */
uint64_t hpl__schedule_remaining(const hpl__schedule *s);

/* Whether packages are now sized by measured speeds (AUTO_TUNE only). */
bool hpl__schedule_measured(const hpl__schedule *s);

/* The device's speed as best known: this eval's measured units per second,
 * else the prior, else 0. What a caller keeps for the next eval. */
double hpl__schedule_speed(const hpl__schedule *s, int device);

/* tail_guard, before any package: declines every device that would decline
 * even its minimum package at the start, slowest first. Returns the one
 * device left when only one is (it is to run all the work, as one piece, so
 * the caller may skip packages altogether), else -1. */
int hpl__schedule_settle(hpl__schedule *s);

/* The power that sizes `device`'s next package: nominal (scaled by a power
 * of two, so only ratios mean something), or its measured units per second
 * once measured; 0 for a device left out. For traces (the paper's figure 2). */
double hpl__schedule_power(const hpl__schedule *s, int device);

#endif
