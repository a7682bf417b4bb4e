/* Load balancing searches for execution plans (issue 16): which share of the
 * work each device should get. Pure logic: no Vulkan, no library state, no
 * allocation; the caller runs the kernel and times it.
 *
 * A distribution is one share per device, in device order: doubles >= 0
 * that sum to 1. The caller maps shares onto rows (or whatever it splits),
 * runs, and reports each device's time. Every kind is the same state
 * machine:
 *
 *     hpl__balance b;
 *     hpl__balance_init(&b, HPL__BALANCE_ITERATIVE, devices, NULL);
 *     while (hpl__balance_next(&b, shares)) {
 *         ... quantise shares to rows, run, time each device ...
 *         hpl__balance_observe_run(&b, shares_run, seconds);
 *     }
 *     hpl__balance_best(&b, shares);
 *
 * Kinds (papers/000_hpl_multidevice.txt 3.3.2; papers/002_coretsar.txt 3-4):
 * - EXHAUSTIVE tries every point of a grid: the multiples of `step` (5%),
 *   zeros included (a device may get nothing), and keeps the fastest. A
 *   grid with more than HPL__BALANCE_MAX_POINTS points is coarsened (the
 *   largest step 1/K with at most that many points; stats.step says which):
 *   16 devices at 5% would be C(35, 15), about 3e9 timings. With
 *   `refine_step` (by default 1% for 3 or 4 devices, 0.1% for 5 or more) it
 *   then refines around that best point on the grid of `refine_step`:
 *   . where they fit HPL__BALANCE_MAX_POINTS, every fine point with each
 *     coordinate within one coarse step less one fine step of it (3 devices
 *     at 5% and 1%: 80 points; 4 devices: 728);
 *   . else a compass search on the fine grid (stats.compass). From the
 *     coarse best, a poll times moves of s fine steps from one device to
 *     another, the slowest device's work to the fastest first (by the
 *     centre's times); the first that beats the centre becomes the centre
 *     and the next poll starts there. A poll that finds none halves s, from
 *     half a coarse step down to one fine step. Beating means smaller
 *     sorted times, slowest first (leximax): the makespan decides, then the
 *     next slowest, so that devices tied slowest, which no single move
 *     relieves all at once, do not stop it. It ends at a point no move of
 *     one fine step improves: the optimum, to a fine step, for devices
 *     whose time grows with their share. Its cost is a timing per move
 *     taken plus d (d - 1) per halving, not the grid's (8 devices: a
 *     coarse grid of 1/7, 3432 points, then hundreds); at most
 *     HPL__BALANCE_MAX_POINTS distributions. A move is judged on the
 *     devices whose parts it changed; the others keep the centre's times.
 *     Noise hides moves whose effect is smaller than it: on the unbalanced
 *     benchmark, eight GPUs and the CPU end within 1.02 of the optimum over
 *     rows with exact times and within 1.17 with 2% noise (the coarse grid
 *     alone: 1.14 to 5.40; tests/unit_balance.c).
 * - SINGLE_STEP times the equal split once and returns the paper's fig. 7:
 *   shares proportional to each device's speed (work per second) measured
 *   in that run. The answer itself is not timed. Exact for devices whose
 *   time is proportional to their share.
 * - ITERATIVE times the equal split; then, while the slowest device took
 *   (1 + delta) times the fastest or more (a device left idle, its share
 *   quantised to nothing, counts as 0), solves a model and times the
 *   answer. Solve 1 is SINGLE_STEP's (fig. 8 from the equal split is fig. 7).
 *   From solve 2 on the model is built from every timing so far (the latest
 *   HPL__BALANCE_MAX_HISTORY), not the last one: fig. 8's model, each
 *   device's time proportional to its share at the speed just measured,
 *   swings between extremes when the cost of the work varies along the split
 *   dimension and the slow device holds the cheap part (it sees the slow
 *   device finish the cheap rows fast and gives it nearly everything, then
 *   the reverse). The model, a cost profile:
 *   . It assumes what the library's partitions do: the work is one
 *     dimension split into contiguous parts in device order, and a device's
 *     time is the cost of its part over its speed, t_i = (C(x_i+1) - C(x_i))
 *     / v_i, C the cumulative cost along the dimension (C(0) = 0, C(1) = 1).
 *   . Speeds: whatever the split, the parts make the whole, so each timing
 *     gives sum_i v_i t_i = 1; least squares over the timings. With fewer
 *     timings than devices, or noise along directions the timings barely
 *     tell apart, two terms decide: timings whose boundaries fall close
 *     together must agree on the cost before them, and a ridge toward the
 *     rates of the last timing.
 *   . Profile: C at every boundary timed (sum_{j<i} v_j t_j), made
 *     nondecreasing; between two of them a straight line, except where the
 *     densities on either side say the cost steps up (or down) inside: there
 *     the two neighbouring lines continued to where they meet. That finds a
 *     step in the cost between the boundaries on either side of it, where a
 *     straight line would smear it.
 *   . Answer: from the last timing, each device's time goes to the speed-
 *     weighted mean T of its times (the predicted makespan, stats.predicted):
 *     v_i (T - t_i) of work crosses its boundaries, placed with the profile.
 *   No relaxation: the profile interpolates between what was timed instead
 *   of extrapolating from one timing, and the paper's damping, tried, kept
 *   3-device searches from converging (their first solve with all speeds
 *   known is the third, the first one damped).
 *   It also stops when the model predicts less than delta / 2 to gain over
 *   the best makespan timed, which ends the searches that cannot balance (a
 *   device whose smallest useful part takes longer than the makespan), or
 *   after max_iterations solves; the answer is the fastest distribution
 *   timed, so never slower than SINGLE_STEP's when that was timed. What
 *   holds (tests/unit_balance.c, the paper's unbalanced benchmark, 2 and 3
 *   devices up to 180 times apart both ways round, x = 0 .. 100): exact
 *   times, within 1.03 of the 1% grid's best in at most 5 distributions;
 *   with 2% noise, 2 devices the same, 3 devices with the CPU first up to 6
 *   (noise in the first timings errs the speeds, and a CPU boundary on a
 *   cost step needs one timing more); over more noise seeds a few runs take
 *   up to 8 or end 1.03-1.05 off (balance judged on noisy times). Where it
 *   can miss: fixed per-device overheads (they bias the speeds), parts not
 *   contiguous in device order (the speeds still hold, the profile does not),
 *   a cost that changes more than once between two boundaries timed, noise
 *   near delta, and a device whose part of the cost stays within the noise
 *   (its speed is then a guess; the gain stop ends such searches).
 * - ADAPTIVE (CoreTSAR's adaptive schedule) never ends: each pass of the
 *   kernel is one timing (reps does not apply); the first pass is the
 *   equal split, each later one gets shares proportional to the speeds
 *   measured in the pass before (CoreTSAR's linear program has this
 *   solution: equal predicted times). CoreTSAR's split and quick variants
 *   are the caller's: time a sub-pass as a pass. Back-off: a device is not
 *   worth its place in a pass when its own time is (1 + delta) times or
 *   more the time the others would have needed for all the work at their
 *   measured speeds (dropping it would have made the pass faster, beyond
 *   noise); back_off such passes in a row and it gets share 0 from then
 *   on. It comes back only when the balancer is initialised again (the
 *   plan's reset): a device that is not worth it stays so while the
 *   workload does. One device at most is dropped per pass, never the last.
 *   The alone check: the per-device times leave out what a split costs
 *   around the kernels (launches, halos, messages between processes,
 *   waiting for the slowest), which back-off cannot see. So the caller
 *   also gives each pass's host time (observe_wall), and after pass
 *   ADAPTIVE_SPLIT_PASSES, if the split uses two devices or more, the
 *   device of its largest share runs alone for ADAPTIVE_ALONE_PASSES
 *   passes (the model waits). The least host time of the alone passes
 *   after the first (which moves the data) against the least of the split
 *   passes from ADAPTIVE_SPLIT_FROM on: if alone is faster, every other
 *   device is dropped (stats.dropped), as back-off would; else the split
 *   resumes where it was. Once, until initialised again; keep_split leaves
 *   it out.
 *
 * The threshold of fig. 7. The paper gives nothing a device whose
 * estimated runtime t_i * w_i / (100 / N) falls below a measured threshold,
 * "to avoid sending very small amounts of work to devices that do not
 * compensate the fixed overhead". Read literally that estimate is the same
 * for every device (w_i is proportional to 1 / t_i, so it is the balanced
 * makespan), which would drop all devices or none. We read it as intended:
 * a device is given nothing when what it saves, the balanced makespan
 * without it less the one with it, is below `threshold` seconds (the fixed
 * cost of using a device, measured by the caller, e.g. an empty dispatch).
 * The fastest device is always kept; all the others are tested against the
 * same solution, as in the figure, in every solve of SINGLE_STEP and
 * ITERATIVE (from ITERATIVE's solve 2 with the speeds of its model, the
 * balanced makespan being its T). A device dropped so is out for the rest of the search (no time
 * is measured for it any more). The threshold is 0 (nothing dropped) unless
 * the caller measured one: the paper gives no value.
 *
 * Times. Each distribution of a search is timed `reps` times and each
 * device's time is the minimum over them: noise from other work only adds
 * time, and the first run carries warm-up that a mean would keep. The
 * makespan of a timing is its slowest device. Times are untrusted (GPU
 * timestamps): a NaN, infinite or negative time for a device that had work
 * refuses the whole timing (stats.rejected; the same distribution is
 * proposed again; after HPL__BALANCE_MAX_REJECTS refusals in a row a
 * search ends with what it has, and ADAPTIVE keeps its shares). A time
 * below HPL__BALANCE_TIME_FLOOR (0 included) counts as that floor when
 * dividing by it. A device given share 0 did not run: whatever it reports
 * is ignored.
 *
 * Thread safety: none; one balancer per plan, used by one thread. */
#ifndef HPL_BALANCE_H
#define HPL_BALANCE_H

#include "coherence.h" /* HPL__MAX_DEVICES */
#include "common.h"    /* HPL_OK, HPL_ERROR_* */

#include <stdbool.h>
#include <stddef.h>

#define HPL__BALANCE_MAX_POINTS 6000  /* grid points one EXHAUSTIVE stage may time */
#define HPL__BALANCE_TIME_FLOOR 1e-9  /* seconds: the finest time a divisor may be */
#define HPL__BALANCE_MAX_REJECTS 8    /* refused timings in a row that end a search */
#define HPL__BALANCE_MAX_HISTORY 16   /* ITERATIVE: the latest timings its model keeps */

typedef enum hpl__balance_kind {
    HPL__BALANCE_EXHAUSTIVE,
    HPL__BALANCE_SINGLE_STEP,
    HPL__BALANCE_ITERATIVE,
    HPL__BALANCE_ADAPTIVE,
} hpl__balance_kind;

/* Zero means default. */
typedef struct hpl__balance_params {
    double step;        /* EXHAUSTIVE grid, a fraction of the work: 0.05. The grid is the multiples of
                           1/K, K = round(1 / step) */
    double refine_step; /* EXHAUSTIVE second stage: 0.01 for 3 or 4 devices, 0.001 for more, none for 2;
                           < 0: none */
    int reps;           /* timings per distribution of a search: 2 (ADAPTIVE: each pass counts once) */
    double delta;       /* times within a factor (1 + delta) count as equal: ITERATIVE's stop (and a
                           predicted gain under delta / 2 as none), ADAPTIVE's back-off margin: 0.05 */
    double threshold;   /* seconds, SINGLE_STEP and ITERATIVE (see above): 0, no device is dropped */
    int back_off;       /* ADAPTIVE: passes not worth it before a device is dropped: 2 */
    bool keep_split;    /* ADAPTIVE: no alone check (below) */
    int max_iterations; /* ITERATIVE: model solves at most: 10 */
} hpl__balance_params;

/* What a search did, for a plan to describe itself. */
typedef struct hpl__balance_stats {
    int distributions; /* distinct distributions timed (ADAPTIVE: passes) */
    int timings;       /* timings accepted */
    int rejected;      /* timings refused: bad times, or nothing proposed */
    int solves;        /* model solves (fig. 7 / fig. 8; ADAPTIVE: one per pass) */
    int dropped;       /* devices given nothing for good (threshold, back-off) */
    bool converged;    /* ITERATIVE: ended balanced within delta (false: the cap, nothing left to gain,
                          or refusals) */
    double step;       /* EXHAUSTIVE: the coarse grid step used */
    bool compass;      /* EXHAUSTIVE: refined by the compass search */
    double predicted;  /* models: makespan the last solve predicts for its answer (fig. 7: linear
                          devices; ITERATIVE from solve 2: its cost profile) */
    double last_makespan; /* slowest device of the last accepted timing (ADAPTIVE: the last pass) */
} hpl__balance_stats;

/* The caller reads stats, out and the choice_ fields, and writes nothing. */
typedef struct hpl__balance {
    hpl__balance_kind kind;
    int devices;
    hpl__balance_params p; /* defaults filled in */
    bool finished;
    bool pending;          /* cur was proposed and not observed yet */
    int reps_done;         /* accepted timings of cur */
    int rejects_in_row;
    double cur[HPL__MAX_DEVICES]; /* the distribution being timed */
    double ran[HPL__MAX_DEVICES]; /* the shares it ran with (observe_run) */
    double t[HPL__MAX_DEVICES];   /* per device: minimum time over the timings of cur */
    /* EXHAUSTIVE: the point being timed, in units of 1/grid */
    int stage;             /* 0: coarse grid, 1: refinement's whole neighbourhood, 2: compass search */
    int grid, fine;        /* coarse and fine grids: multiples of 1/grid, 1/fine */
    int radius;            /* refinement: fine steps either side of centre */
    int cell[HPL__MAX_DEVICES];
    int centre[HPL__MAX_DEVICES]; /* refinement: the coarse best in fine units; compass: its centre */
    /* EXHAUSTIVE's compass search (stage 2), in fine units */
    int step_units;                    /* the size of a move */
    int order[HPL__MAX_DEVICES];       /* devices by the centre's times, slowest first */
    int move_from, move_to;            /* the move being timed: order[move_from] -> order[move_to] */
    int stage_points;                  /* distributions proposed in this stage */
    bool centre_timed;                 /* centre_t holds the centre's times */
    bool has_previous;                 /* previous: the centre before, not proposed again */
    int previous[HPL__MAX_DEVICES];
    double centre_t[HPL__MAX_DEVICES]; /* per device, 0 when it did not run */
    /* models */
    double rate[HPL__MAX_DEVICES]; /* work per second measured (0: not yet) */
    bool out[HPL__MAX_DEVICES];    /* given nothing for good */
    int strikes[HPL__MAX_DEVICES]; /* ADAPTIVE: consecutive passes not worth it */
    /* ITERATIVE's history, oldest first: the shares each timing ran and its times (0: did not run) */
    int history;
    double history_ran[HPL__BALANCE_MAX_HISTORY][HPL__MAX_DEVICES];
    double history_t[HPL__BALANCE_MAX_HISTORY][HPL__MAX_DEVICES];
    /* the answer: the best timed distribution, or the model's for SINGLE_STEP and ADAPTIVE */
    double choice[HPL__MAX_DEVICES];
    bool choice_timed;                       /* choice was timed: the two below are its times */
    double choice_seconds[HPL__MAX_DEVICES]; /* its per-device times; 0 when not timed */
    double choice_makespan;                  /* its makespan; 0 when not timed */
    /* ADAPTIVE's alone check, on the passes' host times (observe_wall) */
    int walls;                     /* host times observed */
    int alone_state;               /* 0: timing the split, 1: the device alone, 2: decided */
    int alone_device;              /* the device that runs alone: the split's largest share */
    bool alone_checked, alone_won; /* the check ran; the device alone was faster */
    double split_wall, alone_wall; /* the least host time of each side's passes (seconds) */
    double held[HPL__MAX_DEVICES]; /* the split's shares while the device runs alone */
    hpl__balance_stats stats;
} hpl__balance;

/* Sets b up for `devices` (1 .. HPL__MAX_DEVICES) devices; p may be NULL
 * (all defaults). Fails with HPL_ERROR_INVALID_ARGUMENT naming the field
 * (a step outside (0, 1], negative reps, ...); b then proposes nothing
 * (next() returns false) and its answer has no shares. With one device
 * there is nothing to search: next() returns false (ADAPTIVE: true, share
 * 1) and the answer is share 1. */
int hpl__balance_init(hpl__balance *b, hpl__balance_kind kind, int devices, const hpl__balance_params *p);

/* The next distribution to time, into shares[0 .. devices - 1]. False when
 * the search is over (shares untouched): ask hpl__balance_best. ADAPTIVE
 * always returns true. Asking again before observing proposes the same. */
bool hpl__balance_next(hpl__balance *b, double *shares);

/* The time in seconds of each device for the distribution last proposed.
 * A device given share 0 did not run; its entry is ignored. */
void hpl__balance_observe(hpl__balance *b, const double *seconds);

/* The same, with the shares the caller actually ran after quantising the
 * proposal onto rows (rows of device i / all rows); NULL: as proposed. The
 * models use these for each device's speed, so rounding does not bias
 * them; a device quantised to nothing did not run. Shares that are not
 * finite, negative or all zero refuse the timing. */
void hpl__balance_observe_run(hpl__balance *b, const double *shares_run, const double *seconds);

/* ADAPTIVE: does it want the host time of the pass just observed? True
 * from the first pass until its alone check has decided (never with
 * keep_split or one device). */
bool hpl__balance_wants_wall(const hpl__balance *b);

/* ADAPTIVE: the host time in seconds of the pass last observed (after its
 * hpl__balance_observe_run), from its launch to its end as the host saw
 * it. Ignored when not wanted; one that is not finite or is negative
 * counts as infinitely slow (stats.rejected). */
void hpl__balance_observe_wall(hpl__balance *b, double seconds);

/* ADAPTIVE: devices it may still give work to (not dropped). */
int hpl__balance_in_play(const hpl__balance *b);

/* The answer so far (final once next() returned false): the fastest
 * distribution timed (EXHAUSTIVE, ITERATIVE), the model's (SINGLE_STEP), the
 * shares of the next pass (ADAPTIVE); the equal split before any timing. */
void hpl__balance_best(const hpl__balance *b, double *shares);

/* "EXHAUSTIVE", "SINGLE_STEP", ... ("?" for anything else). */
const char *hpl__balance_kind_name(hpl__balance_kind kind);

/* One line for a plan's description or a trace: kind, answer, makespan,
 * what the search cost. Returns what snprintf returns (the length it
 * needs); buf may be NULL when size is 0. */
int hpl__balance_describe(const hpl__balance *b, char *buf, size_t size);

#endif
