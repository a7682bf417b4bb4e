/* Validity across the ranks of a context that spans processes: which rank
 * holds which region of an array, and the moves between ranks that make
 * each hold what it needs, derived alike on every rank. Each change is
 * computed into scratch regions and swapped in only when all of it
 * succeeded, so that an out-of-memory failure leaves the state as it was.
 * See rank_state.h. */
#include "rank_state.h"

#include "common.h"

#include <string.h>

bool hpl__rank_state_init(hpl__rank_state *s, int ranks, const hpl__box *whole, bool valid_everywhere)
{
    memset(s, 0, sizeof *s);
    if (ranks < 1 || ranks > HPL__MAX_RANKS)
        return false;
    s->ranks = ranks;
    s->whole = *whole;
    for (int r = 0; r < HPL__MAX_RANKS; r++) {
        hpl__region_init(&s->valid[r]);
        if (valid_everywhere && r < ranks)
            hpl__region_set_box(&s->valid[r], whole); /* inline storage: cannot fail */
    }
    return true;
}

void hpl__rank_state_free(hpl__rank_state *s)
{
    for (int r = 0; r < HPL__MAX_RANKS; r++)
        hpl__region_free(&s->valid[r]);
    s->ranks = 0;
}

void hpl__rank_moves_free(hpl__rank_moves *m)
{
    hpl__free(m->moves);
    memset(m, 0, sizeof *m);
}

/* ---- Changes made whole or not at all ------------------------------------- */

/* The new valid regions of the ranks in `changed` (bit r: rank r), built
 * aside from the state. */
typedef struct pending {
    unsigned changed;
    hpl__region next[HPL__MAX_RANKS];
} pending;

static void pending_init(pending *p)
{
    p->changed = 0;
    for (int r = 0; r < HPL__MAX_RANKS; r++)
        hpl__region_init(&p->next[r]);
}

static void pending_free(pending *p)
{
    for (int r = 0; r < HPL__MAX_RANKS; r++)
        hpl__region_free(&p->next[r]);
    p->changed = 0;
}

/* Starts rank r's new region from its current one (once). */
static bool pending_take(pending *p, const hpl__rank_state *s, int r)
{
    if (p->changed >> r & 1u)
        return true;
    if (!hpl__region_copy(&p->next[r], &s->valid[r]))
        return false;
    p->changed |= 1u << r;
    return true;
}

/* Swaps the new regions in (allocates nothing) and frees the old ones. */
static void pending_commit(pending *p, hpl__rank_state *s)
{
    for (int r = 0; r < s->ranks; r++) {
        if (!(p->changed >> r & 1u))
            continue;
        hpl__region_free(&s->valid[r]);
        s->valid[r] = p->next[r];
        hpl__region_relocated(&s->valid[r]);
        hpl__region_init(&p->next[r]); /* owned by the state now */
    }
    p->changed = 0;
}

/* Whether a and b share an element (allocates nothing). */
static bool regions_meet(const hpl__region *a, const hpl__region *b)
{
    for (uint32_t k = 0; k < b->count; k++)
        if (hpl__region_intersects_box(a, &b->boxes[k]))
            return true;
    return false;
}

/* valid[r] |= region for the ranks in `ranks` (bits), valid[r] -= region
 * for the others when `others_lose`. */
static bool change(hpl__rank_state *s, unsigned ranks, bool others_lose, const hpl__region *region)
{
    pending p;
    pending_init(&p);
    bool ok = true;
    for (int r = 0; r < s->ranks && ok; r++) {
        if (ranks >> r & 1u) {
            if (!hpl__region_contains(&s->valid[r], region))
                ok = pending_take(&p, s, r) && hpl__region_add(&p.next[r], region);
        } else if (others_lose && regions_meet(&s->valid[r], region)) {
            ok = pending_take(&p, s, r) && hpl__region_subtract(&p.next[r], region);
        }
    }
    if (ok)
        pending_commit(&p, s);
    pending_free(&p);
    return ok;
}

bool hpl__rank_state_wrote(hpl__rank_state *s, int r, const hpl__region *region)
{
    return change(s, 1u << r, true, region);
}

bool hpl__rank_state_wrote_everywhere(hpl__rank_state *s, const hpl__region *region)
{
    return change(s, (1u << s->ranks) - 1u, false, region);
}

bool hpl__rank_state_discard(hpl__rank_state *s, const hpl__region *region)
{
    return change(s, 0, true, region);
}

bool hpl__rank_state_moved(hpl__rank_state *s, const hpl__rank_moves *moves)
{
    pending p;
    pending_init(&p);
    bool ok = true;
    for (int i = 0; i < moves->count && ok; i++) {
        const hpl__rank_move *m = &moves->moves[i];
        ok = pending_take(&p, s, m->dst) && hpl__region_add_box(&p.next[m->dst], &m->box);
    }
    if (ok)
        pending_commit(&p, s);
    pending_free(&p);
    return ok;
}

/* ---- Plans ---------------------------------------------------------------- */

static bool moves_push(hpl__rank_moves *m, int src, int dst, const hpl__box *box)
{
    if (m->count == m->capacity) {
        if (m->capacity > INT32_MAX / 2)
            return false;
        int cap = m->capacity ? 2 * m->capacity : 8;
        hpl__rank_move *moves = hpl__realloc(m->moves, (size_t)cap * sizeof *moves);
        if (!moves)
            return false;
        m->moves = moves;
        m->capacity = cap;
    }
    m->moves[m->count++] = (hpl__rank_move){.src = src, .dst = dst, .box = *box};
    m->elements += hpl__box_volume(box);
    return true;
}

/* Appends the moves to rank r (see hpl__rank_state_plan) with missing and
 * piece as scratch. */
static bool plan_rank(const hpl__rank_state *s, int r, const hpl__region *need, hpl__region *missing,
                      hpl__region *piece, hpl__rank_moves *moves)
{
    if (!hpl__region_copy(missing, need) || !hpl__region_subtract(missing, &s->valid[r]))
        return false;
    for (int k = 1; k < s->ranks && !hpl__region_empty(missing); k++) {
        int src = (r + k) % s->ranks;
        if (!hpl__region_copy(piece, missing) || !hpl__region_intersect(piece, &s->valid[src]))
            return false;
        if (hpl__region_empty(piece))
            continue;
        for (uint32_t b = 0; b < piece->count; b++)
            if (!moves_push(moves, src, r, &piece->boxes[b]))
                return false;
        if (!hpl__region_subtract(missing, piece))
            return false;
    }
    return true;
}

bool hpl__rank_state_plan(const hpl__rank_state *s, const hpl__region *const *need, hpl__rank_moves *moves)
{
    moves->count = 0;
    moves->elements = 0;
    hpl__region missing, piece;
    hpl__region_init(&missing);
    hpl__region_init(&piece);
    bool ok = true;
    for (int r = 0; r < s->ranks && ok; r++)
        if (need[r])
            ok = plan_rank(s, r, need[r], &missing, &piece, moves);
    hpl__region_free(&missing);
    hpl__region_free(&piece);
    if (!ok) {
        moves->count = 0;
        moves->elements = 0;
    }
    return ok;
}

bool hpl__rank_state_first_holder(const hpl__rank_state *s, int r, const hpl__region *within, hpl__region *out)
{
    hpl__region mine;
    hpl__region_init(&mine);
    bool ok = hpl__region_copy(&mine, within) && hpl__region_intersect(&mine, &s->valid[r]);
    for (int q = 0; q < r && ok && !hpl__region_empty(&mine); q++)
        ok = hpl__region_subtract(&mine, &s->valid[q]);
    if (ok) { /* out may be within: swap the result in only now */
        hpl__region_free(out);
        *out = mine;
        hpl__region_relocated(out);
    } else {
        hpl__region_free(&mine);
    }
    return ok;
}
