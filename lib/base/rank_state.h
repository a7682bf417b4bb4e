/* Where an array is valid across the ranks of a context that spans
 * processes, and what must move between ranks so that each holds what it
 * is about to use. Every rank keeps the same state, changed by the same
 * collective calls in the same order, so every rank derives the same moves
 * with no message asking for them. A rank counts as holding a region when
 * any of its memories (its host storage, its devices) holds it valid; which
 * one is the rank's own coherence state's business (coherence.h).
 * Pure logic: no Vulkan, no MPI.
 *
 * Scale. The state holds every rank's region (replicated: each rank knows
 * all of them), allocated for the rank count at init, up to
 * HPL__RANK_STATE_MAX_RANKS; a context over ranks is limited further by
 * HPL__MAX_RANKS (lib/api/span.c's arrays). A change costs O(ranks it
 * touches) plus an O(1) test per rank it does not (bounding boxes), with
 * no O(ranks) set-up; a plan for one rank (hpl__rank_state_plan_for) skips
 * the ranks that cannot meet it by their bounding boxes. What stays
 * O(ranks) per eval is that every rank applies every rank's writes:
 * samples/bench/probes/bench_rank_scale.c measures it. */
#ifndef HPL_RANK_STATE_H
#define HPL_RANK_STATE_H

#include "region.h"

#define HPL__MAX_RANKS 16 /* ranks of a context (lib/api/span.c) */
#define HPL__RANK_STATE_MAX_RANKS (1 << 16) /* ranks of a state */

typedef struct hpl__rank_state {
    int ranks;
    hpl__box whole;
    hpl__region *valid; /* [ranks]: what each rank holds */
    hpl__box *bound;    /* [ranks]: valid[r]'s bounding box (empty box: empty) */
    /* Scratch of the changes (rank_state.c), kept between calls so that a
     * change sets up nothing per rank: the ranks taken so far (changed[k],
     * its new region next[k]), slot[r] = k or -1. */
    int *slot, *changed;
    hpl__region *next;
    int pending;
} hpl__rank_state;

/* A box that moves from rank src to rank dst. */
typedef struct hpl__rank_move {
    int src, dst;
    hpl__box box;
} hpl__rank_move;

typedef struct hpl__rank_moves {
    int count, capacity;
    hpl__rank_move *moves; /* in the order every rank posts them */
    uint64_t elements;     /* sum of the moves' volumes */
} hpl__rank_moves;

/* `ranks` (1 .. HPL__RANK_STATE_MAX_RANKS) ranks; every rank holds `whole`
 * valid when valid_everywhere (an array made from the same data on each),
 * else none does. False when `ranks` is out of that range or on
 * out-of-memory (nothing to free then; s is zeroed). Regions given to the
 * functions below lie inside `whole`. */
bool hpl__rank_state_init(hpl__rank_state *s, int ranks, const hpl__box *whole, bool valid_everywhere);
void hpl__rank_state_free(hpl__rank_state *s);

/* The moves that make each rank r hold need[r] (need has `ranks` regions,
 * each inside whole; NULL entries need nothing): for each rank r in order
 * 0, 1, ..., what it misses (need[r] minus valid[r]) comes piece by piece
 * from the first rank after it (cyclically: r + 1, r + 2, ... mod ranks)
 * that holds it, one move per box of the piece, in the piece's box order.
 * So the moves are in order of dst, then of the source's distance after
 * dst; no element moves twice to one rank, nor to a rank that holds it.
 * Pieces held nowhere are left out (no data exists for them). moves must
 * be zero-initialised or freed; it is cleared first (its array is kept
 * for reuse). The state is not changed (hpl__rank_state_moved). False on
 * out-of-memory (moves empty then). */
bool hpl__rank_state_plan(const hpl__rank_state *s, const hpl__region *const *need, hpl__rank_moves *moves);
/* The moves of hpl__rank_state_plan(s, need, moves) with src == self or
 * dst == self, in the same order, the same boxes: what rank self sends and
 * receives. Only self's own need is planned whole; another rank's need is
 * planned only when its bounding box meets self's valid region's, and then
 * only as far as self in the cyclic order. Same contract otherwise. */
bool hpl__rank_state_plan_for(const hpl__rank_state *s, int self, const hpl__region *const *need,
                              hpl__rank_moves *moves);
/* The changes below return false only on out-of-memory, and then change
 * nothing. Their region may be one of the state's own (valid[q]). */
/* Records that the moves ran: each dst holds its boxes. */
bool hpl__rank_state_moved(hpl__rank_state *s, const hpl__rank_moves *moves);
/* Records that hpl__rank_state_plan(s, need)'s moves ran, without them:
 * each rank r with need[r] holds need[r] & (what any rank holds). The same
 * point sets as hpl__rank_state_moved of that plan; for a rank that plans
 * only its own moves (hpl__rank_state_plan_for). */
bool hpl__rank_state_fulfilled(hpl__rank_state *s, const hpl__region *const *need);
/* Rank r wrote `region`: r holds it, every other rank does not. */
bool hpl__rank_state_wrote(hpl__rank_state *s, int r, const hpl__region *region);
/* hpl__rank_state_wrote(s, r, written[r]) for r = 0 .. ranks - 1 in order
 * (NULL or empty entries skipped), all or nothing: when the written
 * regions are disjoint, in one pass (each rank's region less their union,
 * plus what it wrote); else one after the other. The written regions are
 * not the state's own. */
bool hpl__rank_state_wrote_all(hpl__rank_state *s, const hpl__region *const *written);
/* Every rank wrote the same values into `region` (a host write made by
 * every rank alike): every rank holds it. */
bool hpl__rank_state_wrote_everywhere(hpl__rank_state *s, const hpl__region *region);
/* `region` holds nothing anywhere any more (hpl_array_discard). */
bool hpl__rank_state_discard(hpl__rank_state *s, const hpl__region *region);
/* out = the part of `within` that rank r holds and no rank before it does:
 * the ranks' shares of a reduction, each element counted once. out must be
 * initialised (or zero-initialised) and may be `within`; false on
 * out-of-memory, out unchanged then. */
bool hpl__rank_state_first_holder(const hpl__rank_state *s, int r, const hpl__region *within, hpl__region *out);

void hpl__rank_moves_free(hpl__rank_moves *m);

#endif
