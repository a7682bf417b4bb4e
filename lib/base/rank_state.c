/* Validity across the ranks of a context that spans processes: which rank
 * holds which region of an array, and the moves between ranks that make
 * each hold what it needs, derived alike on every rank. Each change is
 * computed into scratch regions and swapped in only when all of it
 * succeeded, so that an out-of-memory failure leaves the state as it was.
 * See rank_state.h. */
#include "rank_state.h"

#include "common.h"

#include <string.h>

/* The bounding box of r; an empty box (lo = hi = 0) when r is empty. */
static hpl__box region_bound(const hpl__region *r)
{
    hpl__box b = {{0}, {0}};
    for (uint32_t k = 0; k < r->count; k++)
        for (int d = 0; d < HPL__REGION_DIMS; d++) {
            const hpl__box *x = &r->boxes[k];
            b.lo[d] = k == 0 ? x->lo[d] : HPL__MIN(b.lo[d], x->lo[d]);
            b.hi[d] = k == 0 ? x->hi[d] : HPL__MAX(b.hi[d], x->hi[d]);
        }
    return b;
}

static bool boxes_meet(const hpl__box *a, const hpl__box *b)
{
    hpl__box i;
    return hpl__box_intersect(a, b, &i);
}

bool hpl__rank_state_init(hpl__rank_state *s, int ranks, const hpl__box *whole, bool valid_everywhere)
{
    memset(s, 0, sizeof *s);
    if (ranks < 1 || ranks > HPL__RANK_STATE_MAX_RANKS)
        return false;
    size_t n = (size_t)ranks;
    s->valid = hpl__calloc(n, sizeof *s->valid);
    s->next = hpl__calloc(n, sizeof *s->next);
    s->bound = hpl__calloc(n, sizeof *s->bound);
    s->slot = hpl__calloc(n, sizeof *s->slot);
    s->changed = hpl__calloc(n, sizeof *s->changed);
    if (!s->valid || !s->next || !s->bound || !s->slot || !s->changed) {
        hpl__free(s->valid);
        hpl__free(s->next);
        hpl__free(s->bound);
        hpl__free(s->slot);
        hpl__free(s->changed);
        memset(s, 0, sizeof *s);
        return false;
    }
    s->ranks = ranks;
    s->whole = *whole;
    for (int r = 0; r < ranks; r++) {
        hpl__region_init(&s->valid[r]);
        hpl__region_init(&s->next[r]);
        s->slot[r] = -1;
        if (valid_everywhere)
            hpl__region_set_box(&s->valid[r], whole); /* inline storage: cannot fail */
        s->bound[r] = region_bound(&s->valid[r]);
    }
    return true;
}

void hpl__rank_state_free(hpl__rank_state *s)
{
    for (int r = 0; r < s->ranks; r++) {
        hpl__region_free(&s->valid[r]);
        hpl__region_free(&s->next[r]);
    }
    hpl__free(s->valid);
    hpl__free(s->next);
    hpl__free(s->bound);
    hpl__free(s->slot);
    hpl__free(s->changed);
    memset(s, 0, sizeof *s);
}

void hpl__rank_moves_free(hpl__rank_moves *m)
{
    hpl__free(m->moves);
    memset(m, 0, sizeof *m);
}

/* ---- Changes made whole or not at all ------------------------------------- */

/* A change builds the new regions of the ranks it touches aside from the
 * state, in s->next (reused storage), and swaps them in only when all of
 * them were built: O(ranks touched), nothing per rank untouched. */

/* Rank r's region as the change sees it: the new one once taken. */
static const hpl__region *pending_view(const hpl__rank_state *s, int r)
{
    return s->slot[r] >= 0 ? &s->next[s->slot[r]] : &s->valid[r];
}

/* Starts rank r's new region from its current one (once); returns it, NULL
 * on out-of-memory. */
static hpl__region *pending_take(hpl__rank_state *s, int r)
{
    if (s->slot[r] >= 0)
        return &s->next[s->slot[r]];
    int k = s->pending;
    if (!hpl__region_copy(&s->next[k], &s->valid[r]))
        return NULL;
    s->slot[r] = k;
    s->changed[k] = r;
    s->pending++;
    return &s->next[k];
}

/* Swaps the new regions in (allocates nothing); the old ones' storage stays
 * in next for the next change. */
static void pending_commit(hpl__rank_state *s)
{
    for (int k = 0; k < s->pending; k++) {
        int r = s->changed[k];
        hpl__region t = s->valid[r];
        s->valid[r] = s->next[k];
        s->next[k] = t;
        hpl__region_relocated(&s->valid[r]);
        hpl__region_relocated(&s->next[k]);
        hpl__region_clear(&s->next[k]);
        s->bound[r] = region_bound(&s->valid[r]);
        s->slot[r] = -1;
    }
    s->pending = 0;
}

static void pending_abort(hpl__rank_state *s)
{
    for (int k = 0; k < s->pending; k++) {
        hpl__region_clear(&s->next[k]);
        s->slot[s->changed[k]] = -1;
    }
    s->pending = 0;
}

static bool pending_finish(hpl__rank_state *s, bool ok)
{
    if (ok)
        pending_commit(s);
    else
        pending_abort(s);
    return ok;
}

/* Whether a and b share an element (allocates nothing). */
static bool regions_meet(const hpl__region *a, const hpl__region *b)
{
    for (uint32_t k = 0; k < b->count; k++)
        if (hpl__region_intersects_box(a, &b->boxes[k]))
            return true;
    return false;
}

/* Whether rank r's current region (pending or not) meets `region`, whose
 * bounding box is rb: the bounding boxes first. */
static bool rank_meets(const hpl__rank_state *s, int r, const hpl__region *region, const hpl__box *rb)
{
    if (s->slot[r] < 0 && !boxes_meet(&s->bound[r], rb))
        return false;
    return regions_meet(pending_view(s, r), region);
}

/* Who gains the region in change(). */
enum { GAIN_NONE, GAIN_ONE, GAIN_ALL };

/* valid[r] |= region for the ranks that gain (none, `one`, all),
 * valid[r] -= region for the others when `others_lose`; on top of what is
 * pending (the caller commits). */
static bool change_pending(hpl__rank_state *s, int gain, int one, bool others_lose, const hpl__region *region)
{
    if (hpl__region_empty(region))
        return true;
    hpl__box rb = region_bound(region);
    bool ok = true;
    if (gain == GAIN_ALL || gain == GAIN_ONE) {
        int first = gain == GAIN_ONE ? one : 0, last = gain == GAIN_ONE ? one : s->ranks - 1;
        for (int r = first; r <= last && ok; r++) {
            if (!hpl__region_contains(pending_view(s, r), region)) {
                hpl__region *n = pending_take(s, r);
                ok = n && hpl__region_add(n, region);
            }
        }
    }
    if (!others_lose || gain == GAIN_ALL)
        return ok;
    for (int r = 0; r < s->ranks && ok; r++) {
        if (gain == GAIN_ONE && r == one)
            continue;
        if (rank_meets(s, r, region, &rb)) {
            hpl__region *n = pending_take(s, r);
            ok = n && hpl__region_subtract(n, region);
        }
    }
    return ok;
}

static bool change(hpl__rank_state *s, int gain, int one, bool others_lose, const hpl__region *region)
{
    return pending_finish(s, change_pending(s, gain, one, others_lose, region));
}

bool hpl__rank_state_wrote(hpl__rank_state *s, int r, const hpl__region *region)
{
    return change(s, GAIN_ONE, r, true, region);
}

bool hpl__rank_state_wrote_everywhere(hpl__rank_state *s, const hpl__region *region)
{
    return change(s, GAIN_ALL, 0, false, region);
}

bool hpl__rank_state_discard(hpl__rank_state *s, const hpl__region *region)
{
    return change(s, GAIN_NONE, 0, true, region);
}

bool hpl__rank_state_moved(hpl__rank_state *s, const hpl__rank_moves *moves)
{
    bool ok = true;
    for (int i = 0; i < moves->count && ok; i++) {
        const hpl__rank_move *m = &moves->moves[i];
        hpl__region *n = pending_take(s, m->dst);
        ok = n && hpl__region_add_box(n, &m->box);
    }
    return pending_finish(s, ok);
}

/* held = the union of every rank's region, stopping once it is the whole. */
static bool union_of_valid(const hpl__rank_state *s, hpl__region *held)
{
    hpl__region_clear(held);
    for (int q = 0; q < s->ranks; q++) {
        if (hpl__region_empty(&s->valid[q]))
            continue;
        if (!hpl__region_add(held, &s->valid[q]))
            return false;
        if (held->count == 1 && hpl__box_equal(&held->boxes[0], &s->whole))
            break;
    }
    return true;
}

bool hpl__rank_state_fulfilled(hpl__rank_state *s, const hpl__region *const *need)
{
    hpl__region held, got;
    hpl__region_init(&held);
    hpl__region_init(&got);
    bool ok = true, have_held = false;
    for (int r = 0; r < s->ranks && ok; r++) {
        if (!need[r] || hpl__region_contains(&s->valid[r], need[r]))
            continue;
        if (!have_held) { /* only when some rank lacks part of its need */
            ok = union_of_valid(s, &held);
            have_held = true;
        }
        ok = ok && hpl__region_copy(&got, need[r]) && hpl__region_intersect(&got, &held);
        if (ok && !hpl__region_empty(&got) && !hpl__region_contains(&s->valid[r], &got)) {
            hpl__region *n = pending_take(s, r);
            ok = n && hpl__region_add(n, &got);
        }
    }
    hpl__region_free(&held);
    hpl__region_free(&got);
    return pending_finish(s, ok);
}

bool hpl__rank_state_wrote_all(hpl__rank_state *s, const hpl__region *const *written)
{
    /* all = the union of what was written; disjoint when its volume is
     * their volumes' sum (none saturating). */
    hpl__region all;
    hpl__region_init(&all);
    bool ok = true, disjoint = true;
    uint64_t sum = 0;
    for (int r = 0; r < s->ranks && ok; r++) {
        const hpl__region *w = written[r];
        if (!w || hpl__region_empty(w))
            continue;
        uint64_t v = hpl__region_volume(w);
        disjoint = disjoint && v != UINT64_MAX && sum <= UINT64_MAX - v;
        sum += disjoint ? v : 0;
        ok = hpl__region_add(&all, w);
    }
    if (ok && disjoint) {
        uint64_t v = hpl__region_volume(&all);
        disjoint = v != UINT64_MAX && v == sum;
    }
    if (ok && hpl__region_empty(&all)) {
        hpl__region_free(&all);
        return true;
    }
    if (ok && disjoint) {
        /* Each rank: its region less all, plus what it wrote. */
        hpl__box ab = region_bound(&all);
        for (int q = 0; q < s->ranks && ok; q++) {
            const hpl__region *w = written[q] && !hpl__region_empty(written[q]) ? written[q] : NULL;
            if (!w && !rank_meets(s, q, &all, &ab))
                continue;
            hpl__region *n = pending_take(s, q);
            ok = n && hpl__region_subtract(n, &all) && (!w || hpl__region_add(n, w));
        }
    } else {
        /* Overlapping writes: one after the other, the later writer's
         * elements winning, all pending until the end. */
        for (int r = 0; r < s->ranks && ok; r++)
            if (written[r])
                ok = change_pending(s, GAIN_ONE, r, true, written[r]);
    }
    hpl__region_free(&all);
    return pending_finish(s, ok);
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

/* Rank dst's missing part (need less what dst holds) taken, in the plan's
 * order, from the sources at distances 1 .. last after dst; the pieces
 * from `self` appended as moves (self < 0: from every source). A source
 * whose bounding box misses missing's gives no piece in the full plan
 * either: it is skipped before any region operation. */
static bool plan_part(const hpl__rank_state *s, int dst, int self, int last, const hpl__region *need,
                      hpl__region *missing, hpl__region *piece, hpl__rank_moves *moves)
{
    if (!hpl__region_copy(missing, need) || !hpl__region_subtract(missing, &s->valid[dst]))
        return false;
    hpl__box mb = region_bound(missing);
    for (int k = 1; k <= last && !hpl__region_empty(missing); k++) {
        int src = dst + k < s->ranks ? dst + k : dst + k - s->ranks;
        if (!boxes_meet(&s->bound[src], &mb))
            continue;
        if (!hpl__region_copy(piece, missing) || !hpl__region_intersect(piece, &s->valid[src]))
            return false;
        if (hpl__region_empty(piece))
            continue;
        if (self < 0 || src == self || dst == self)
            for (uint32_t b = 0; b < piece->count; b++)
                if (!moves_push(moves, src, dst, &piece->boxes[b]))
                    return false;
        if (k == last || !hpl__region_subtract(missing, piece))
            return k == last;
        mb = region_bound(missing);
    }
    return true;
}

/* The full plan (self < 0), or only the moves from or to self. */
static bool plan_moves(const hpl__rank_state *s, int self, const hpl__region *const *need, hpl__rank_moves *moves)
{
    moves->count = 0;
    moves->elements = 0;
    hpl__region missing, piece;
    hpl__region_init(&missing);
    hpl__region_init(&piece);
    bool ok = true, holds = self >= 0 && !hpl__region_empty(&s->valid[self]);
    for (int r = 0; r < s->ranks && ok; r++) {
        if (!need[r])
            continue;
        if (self < 0 || r == self) { /* every move to r (to self: what it receives) */
            ok = plan_part(s, r, self, s->ranks - 1, need[r], &missing, &piece, moves);
            continue;
        }
        /* What self sends r: only if r's need meets what self holds, from
         * the part of it no rank between r and self gives first. */
        if (!holds)
            continue;
        hpl__box nb = region_bound(need[r]);
        if (!boxes_meet(&nb, &s->bound[self]) || !regions_meet(&s->valid[self], need[r]))
            continue;
        int dist = self > r ? self - r : self - r + s->ranks;
        ok = plan_part(s, r, self, dist, need[r], &missing, &piece, moves);
    }
    hpl__region_free(&missing);
    hpl__region_free(&piece);
    if (!ok) {
        moves->count = 0;
        moves->elements = 0;
    }
    return ok;
}

bool hpl__rank_state_plan(const hpl__rank_state *s, const hpl__region *const *need, hpl__rank_moves *moves)
{
    return plan_moves(s, -1, need, moves);
}

bool hpl__rank_state_plan_for(const hpl__rank_state *s, int self, const hpl__region *const *need,
                              hpl__rank_moves *moves)
{
    return plan_moves(s, self, need, moves);
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
