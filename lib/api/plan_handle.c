/* Plan and runner handles (hplvk.h chapter 7c): the hpl_plan * and
 * hpl_runner * the user holds are checked tokens, never the objects'
 * addresses, looked up on every call, so a plan destroyed (by
 * hpl_plan_destroy or with its context) or a runner kept past its
 * partitioner call is an error naming why, never a use after free.
 *
 * Plan calls take no context, so the lookup is process-wide: one registry,
 * under one mutex, holds every live plan (a pool of lib/base/handle.h, its
 * serial field a tag that no context serial needs: the pool is the plans'
 * alone) and the runners whose partitioner call is in progress. It also
 * keeps each context's list of plans, so that hpl_context_destroy retires
 * them. Its lock is taken inside a context's lock (hpl_context_destroy),
 * never the other way round.
 *
 *   plan token     bits 63..40 PLAN_TAG, 39..20 generation, 19..0 slot (hpl__handle)
 *   runner token   bit 63 set, bits 62..0 the number of the partitioner call
 *
 * Both are non-canonical addresses on x86-64 (a dereference faults at
 * once). A plan's slot is never freed and a slot whose generation runs out
 * is retired, so a stale token never names a plan again; partitioner calls
 * are numbered from 1 and never twice. A plan in use by a call is pinned:
 * destroyed meanwhile (by its own partitioner, say), its token is stale at
 * once and the plan is freed when the call returns. */
#include "api.h"

#include "plan.h"

#include <pthread.h>
#include <string.h>

#define PLAN_TAG 0x504c41u /* "PLA" */
#define RUNNER_BIT (UINT64_C(1) << 63)

_Static_assert(sizeof(uintptr_t) >= sizeof(hpl__handle), "a token is a 64-bit value");

/* Why the last plan of a slot is gone. */
enum { GONE_DESTROYED = 1, GONE_WITH_CONTEXT = 2 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static hpl__pool plans = {.serial = PLAN_TAG};
static uint8_t *gone;         /* per slot of plans */
static uint32_t gone_count;   /* slots it covers */
static hpl__runner *open_runners;
static uint64_t runner_calls; /* partitioner calls numbered so far */

static hpl__handle handle_of(const hpl_plan *token)
{
    return (hpl__handle)(uintptr_t)token;
}

/* ---- plans ----------------------------------------------------------------- */

int hpl__plan_register(hpl__plan *plan)
{
    pthread_mutex_lock(&lock);
    int rc = HPL_OK;
    if (gone_count < plans.count + 1) { /* room for the slot add may open */
        uint32_t n = 2 * plans.count + 16;
        uint8_t *g = hpl__realloc(gone, n);
        if (g) {
            memset(g + gone_count, 0, n - gone_count);
            gone = g;
            gone_count = n;
        } else {
            rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        }
    }
    hpl__handle h = rc == HPL_OK ? hpl__pool_add(&plans, plan) : 0;
    if (rc == HPL_OK && !h)
        rc = plans.count == HPL__HANDLE_INDEX_MAX
                 ? hpl__fail(HPL_ERROR_UNSUPPORTED, "this process has used all %u plan slots", HPL__HANDLE_INDEX_MAX)
                 : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (rc == HPL_OK) {
        plan->token = (hpl_plan *)(uintptr_t)h;
        plan->next = plan->ctx->plans;
        plan->ctx->plans = plan;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Records why token names no live plan. Lock held. */
static int plan_fail(const hpl_plan *token)
{
    hpl__handle h = handle_of(token);
    if (!token)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "plan is NULL");
    if (h & RUNNER_BIT)
        return hpl__fail(HPL_ERROR_INVALID_HANDLE, "plan %p is a runner, not a plan", (const void *)token);
    hpl__handle_state state = hpl__pool_check(&plans, h);
    if (state == HPL__HANDLE_STALE) {
        uint32_t i = hpl__handle_index(h);
        bool last = plans.slots[i].generation == hpl__handle_generation(h); /* the slot's newest plan */
        return hpl__fail(HPL_ERROR_INVALID_HANDLE, "plan %p was destroyed%s", (const void *)token,
                         !last                          ? " (by hpl_plan_destroy or with its context)"
                         : gone[i] == GONE_WITH_CONTEXT ? " with its context (hpl_context_destroy)"
                                                        : " (hpl_plan_destroy)");
    }
    return hpl__fail(HPL_ERROR_INVALID_HANDLE,
                     "plan %p was never made (no hpl_plan_create or hpl_plan_copy returned it)", (const void *)token);
}

int hpl__plan_pin(hpl_plan *token, bool exclusive, hpl__plan **out)
{
    pthread_mutex_lock(&lock);
    hpl__plan *plan = token ? hpl__pool_get(&plans, handle_of(token)) : NULL;
    int rc = !plan                          ? plan_fail(token)
             : exclusive && plan->evaluating ? hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                                                         "plan %p is in an eval already (a call from its partitioner, "
                                                         "or from another thread): one eval or reset at a time",
                                                         (void *)token)
                                             : HPL_OK;
    if (rc == HPL_OK) {
        plan->pins++;
        plan->evaluating = plan->evaluating || exclusive;
        *out = plan;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static void plan_free(hpl__plan *plan)
{
    hpl__free(plan->subkernels);
    hpl__free(plan);
}

void hpl__plan_unpin(hpl__plan *plan, bool exclusive)
{
    pthread_mutex_lock(&lock);
    plan->evaluating = plan->evaluating && !exclusive;
    bool free_now = --plan->pins == 0 && plan->destroyed;
    pthread_mutex_unlock(&lock);
    if (free_now)
        plan_free(plan);
}

/* Takes the plan off the registry and its context's list; returns whether
 * nothing pins it (the caller frees it then). Lock held. */
static bool retire(hpl__plan *plan, int why)
{
    hpl__handle h = handle_of(plan->token);
    hpl__pool_remove(&plans, h);
    gone[hpl__handle_index(h)] = (uint8_t)why;
    for (hpl__plan **p = &plan->ctx->plans; *p; p = &(*p)->next)
        if (*p == plan) {
            *p = plan->next;
            break;
        }
    plan->destroyed = true;
    return plan->pins == 0;
}

int hpl__plan_retire(hpl_plan *token)
{
    pthread_mutex_lock(&lock);
    hpl__plan *plan = token ? hpl__pool_get(&plans, handle_of(token)) : NULL;
    int rc = plan ? HPL_OK : plan_fail(token);
    bool free_now = plan && retire(plan, GONE_DESTROYED);
    pthread_mutex_unlock(&lock);
    if (free_now)
        plan_free(plan);
    return rc;
}

void hpl__plans_destroy_all(hpl_context *ctx)
{
    pthread_mutex_lock(&lock);
    hpl__plan *unpinned = NULL;
    while (ctx->plans) {
        hpl__plan *plan = ctx->plans;
        if (retire(plan, GONE_WITH_CONTEXT)) { /* else a call of another thread still runs it: its unpin frees */
            plan->next = unpinned;
            unpinned = plan;
        }
    }
    pthread_mutex_unlock(&lock);
    while (unpinned) {
        hpl__plan *next = unpinned->next;
        plan_free(unpinned);
        unpinned = next;
    }
}

/* ---- runners ---------------------------------------------------------------- */

void hpl__runner_open(hpl__runner *r)
{
    pthread_mutex_lock(&lock);
    r->token = (hpl_runner *)(uintptr_t)(RUNNER_BIT | ++runner_calls);
    r->next_open = open_runners;
    open_runners = r;
    pthread_mutex_unlock(&lock);
}

void hpl__runner_close(hpl__runner *r)
{
    pthread_mutex_lock(&lock);
    for (hpl__runner **p = &open_runners; *p; p = &(*p)->next_open)
        if (*p == r) {
            *p = r->next_open;
            break;
        }
    pthread_mutex_unlock(&lock);
}

int hpl__runner_find(const hpl_runner *token, hpl__runner **out)
{
    if (!token)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "runner is NULL");
    uint64_t v = (uint64_t)(uintptr_t)token;
    pthread_mutex_lock(&lock);
    hpl__runner *r = open_runners;
    while (r && r->token != token)
        r = r->next_open;
    uint64_t calls = runner_calls;
    pthread_mutex_unlock(&lock);
    if (r) {
        *out = r;
        return HPL_OK;
    }
    if ((v & RUNNER_BIT) && (v & ~RUNNER_BIT) && (v & ~RUNNER_BIT) <= calls)
        return hpl__fail(HPL_ERROR_INVALID_HANDLE,
                         "runner %p is stale: its partitioner call has returned (a runner is valid only during the "
                         "partitioner call it was given to)",
                         (const void *)token);
    return hpl__fail(HPL_ERROR_INVALID_HANDLE, "runner %p was never given to a partitioner", (const void *)token);
}
