/* GPU timestamps for the event log: per device, a pool of query pairs (the
 * begin and end of one command) written with vkCmdWriteTimestamp and reset
 * on the host (hostQueryReset), and the conversion of device ticks to the
 * host's CLOCK_MONOTONIC nanoseconds (hpl__now_ns).
 *
 * Conversion: calibration points pair a device tick with the host time of
 * the same moment; a tick between two points is interpolated, one outside
 * them extrapolated at the nominal period. The mapping is the same for every
 * event read after the last point, and increasing, so that the order of two
 * timestamps of one queue survives it (events convert when they are read,
 * never when they complete). */
#include "timestamps.h"

#include "submitter.h"
#include "vk.h"

#include <math.h>
#include <string.h>

#define PAIRS 4096u                     /* events with GPU times in flight per device */
#define RECALIBRATE_NS 1000000000ull    /* a new point once a second, where it costs no wait */
#define CALIBRATION_ROUNDS 3

static bool monotonic_domain(hpl_context *ctx, hpl__device *d)
{
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT get =
        (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)vkGetInstanceProcAddr(
            ctx->instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT");
    VkTimeDomainEXT domains[8];
    uint32_t n = HPL__ARRAY_LEN(domains);
    if (!get || (get(d->physical, &n, domains) != VK_SUCCESS && n == 0))
        return false;
    bool device = false, monotonic = false;
    for (uint32_t i = 0; i < n; i++) {
        device = device || domains[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        monotonic = monotonic || domains[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return device && monotonic;
}

void hpl__timestamps_open(hpl_context *ctx, hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    VkQueueFamilyProperties qf[HPL_MAX_QUEUE_FAMILIES];
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &n, NULL);
    n = HPL__MIN(n, HPL_MAX_QUEUE_FAMILIES);
    vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &n, qf);
    /* The family's timestampValidBits decides (timestampComputeAndGraphics
     * only promises timestamps on every graphics and compute family); 0:
     * no timestamps, the log keeps host times for this device. */
    uint32_t bits = d->queue_family < n ? qf[d->queue_family].timestampValidBits : 0;
    t->mask = bits >= 64 ? UINT64_MAX : bits ? (1ull << bits) - 1 : 0;
    t->period = d->props.limits.timestampPeriod;
    t->supported = bits > 0 && t->host_reset && t->period > 0;
    if (t->supported && t->calibrated_ext && monotonic_domain(ctx, d))
        t->get_calibrated = (PFN_vkGetCalibratedTimestampsEXT)vkGetDeviceProcAddr(d->device, "vkGetCalibratedTimestampsEXT");
}

void hpl__timestamps_close(hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    if (t->pool)
        vkDestroyQueryPool(d->device, t->pool, NULL);
    t->pool = VK_NULL_HANDLE;
    hpl__free(t->free_pairs);
    hpl__free(t->points);
    hpl__free(t->pending);
    t->free_pairs = NULL;
    t->points = NULL;
    t->pending = NULL;
    t->free_count = t->point_count = t->point_capacity = t->pending_count = t->pending_capacity = 0;
}

/* ---- calibration -------------------------------------------------------- */

/* raw (valid bits only) as an extended tick near `near` (extended): the one
 * within half the counter's range of it. */
static uint64_t extend(const hpl__timestamps *t, uint64_t raw, uint64_t near)
{
    if (t->mask == UINT64_MAX)
        return raw;
    uint64_t delta = (raw - near) & t->mask;
    return delta > t->mask / 2 ? near - ((t->mask - delta) + 1) : near + delta;
}

static void add_point(hpl__timestamps *t, uint64_t raw, uint64_t ns, uint64_t error_ns)
{
    uint64_t ticks = raw & t->mask;
    if (t->point_count) {
        const hpl__clock_point *last = &t->points[t->point_count - 1];
        ticks = extend(t, raw, last->ticks);
        if (ticks <= last->ticks || ns <= last->ns)
            return; /* not after the last one: keep the mapping increasing */
    }
    if (t->point_count == t->point_capacity) {
        uint32_t cap = t->point_capacity ? 2 * t->point_capacity : 16;
        hpl__clock_point *p = hpl__realloc(t->points, cap * sizeof *p);
        if (!p)
            return; /* the last point keeps serving */
        t->points = p;
        t->point_capacity = cap;
    }
    t->points[t->point_count++] = (hpl__clock_point){ticks, ns};
    t->error_ns = HPL__MAX(t->error_ns, error_ns);
}

/* VK_EXT_calibrated_timestamps: the driver reads both clocks together and
 * bounds its own error (maxDeviation). */
static bool calibrate_ext(hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    VkCalibratedTimestampInfoEXT info[2] = {
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, .timeDomain = VK_TIME_DOMAIN_DEVICE_EXT},
        {.sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, .timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT}};
    uint64_t ts[2], deviation = 0;
    if (t->get_calibrated(d->device, 2, info, ts, &deviation) != VK_SUCCESS)
        return false;
    add_point(t, ts[0], ts[1], deviation);
    return true;
}

/* One round: a submission writing one timestamp; *t0 before it, *t1 after
 * its fence signalled, *raw the tick. */
static int submission_round(hpl__device *d, VkCommandBuffer cb, VkFence fence, uint32_t query, uint64_t *t0,
                            uint64_t *t1, uint64_t *raw)
{
    hpl__timestamps *t = &d->timestamps;
    vkResetQueryPool(d->device, t->pool, query, 1);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vkBeginCommandBuffer(cb, &bi);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkBeginCommandBuffer");
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, t->pool, query);
    r = vkEndCommandBuffer(cb);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    *t0 = hpl__now_ns();
    if (r == VK_SUCCESS)
        r = hpl__queue_submit_on(d, d->queue, 1, &si, fence);
    if (r == VK_SUCCESS)
        r = vkWaitForFences(d->device, 1, &fence, VK_TRUE, UINT64_MAX);
    *t1 = hpl__now_ns();
    if (r == VK_SUCCESS)
        r = vkResetFences(d->device, 1, &fence);
    if (r == VK_SUCCESS)
        r = vkGetQueryPoolResults(d->device, t->pool, query, 1, sizeof *raw, raw, sizeof *raw,
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    return r == VK_SUCCESS ? HPL_OK : hpl__vk_error(r, "calibrating timestamps");
}

/* Without VK_EXT_calibrated_timestamps: the tick of a timestamp written by
 * a submission made after host time t0 and seen done at t1 was taken inside
 * [t0, t1]; taking the middle errs by at most (t1 - t0) / 2, plus the two
 * clocks' rate difference over that interval (parts per million of it).
 * The narrowest of a few rounds is kept. Waits for the device. Its command
 * buffer comes from a pool of its own: the ring's pool is in use by other
 * threads meanwhile (the progress thread ends and submits batches), and a
 * command pool must be used by one thread at a time. */
static int calibrate_by_submission(hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    uint32_t pair;
    if (!hpl__timestamps_take(d, &pair))
        return HPL_OK; /* every pair in flight: the earlier points serve */
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                  .queueFamilyIndex = d->queue_family};
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkResult r = vkCreateCommandPool(d->device, &pi, NULL, &ai.commandPool);
    if (r != VK_SUCCESS)
        ai.commandPool = VK_NULL_HANDLE;
    if (r == VK_SUCCESS)
        r = vkAllocateCommandBuffers(d->device, &ai, &cb);
    if (r == VK_SUCCESS)
        r = vkCreateFence(d->device, &fi, NULL, &fence);
    int rc = r == VK_SUCCESS ? HPL_OK : hpl__vk_error(r, "calibrating timestamps");
    uint64_t best = UINT64_MAX, best_raw = 0, best_mid = 0;
    for (int i = 0; rc == HPL_OK && i < CALIBRATION_ROUNDS; i++) {
        uint64_t t0 = 0, t1 = 0, raw = 0;
        rc = submission_round(d, cb, fence, 2 * pair, &t0, &t1, &raw);
        if (rc == HPL_OK && t1 - t0 < best) {
            best = t1 - t0;
            best_raw = raw;
            best_mid = t0 + best / 2;
        }
    }
    if (rc == HPL_OK)
        add_point(t, best_raw, best_mid, (best + 1) / 2);
    if (fence)
        vkDestroyFence(d->device, fence, NULL);
    if (ai.commandPool)
        vkDestroyCommandPool(d->device, ai.commandPool, NULL); /* its command buffer with it */
    hpl__timestamps_give(d, pair);
    return rc;
}

static int make_pool(hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    t->free_pairs = hpl__malloc(PAIRS * sizeof *t->free_pairs);
    if (!t->free_pairs)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for timestamps");
    VkQueryPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = 2 * PAIRS};
    VkResult r = vkCreateQueryPool(d->device, &ci, NULL, &t->pool);
    if (r != VK_SUCCESS) {
        t->pool = VK_NULL_HANDLE;
        return hpl__vk_error(r, "vkCreateQueryPool");
    }
    for (uint32_t i = 0; i < PAIRS; i++)
        t->free_pairs[i] = PAIRS - 1 - i; /* pair 0 on top */
    t->free_count = PAIRS;
    return HPL_OK;
}

int hpl__timestamps_start(hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    if (!t->supported)
        return HPL_OK;
    int rc = t->pool ? HPL_OK : make_pool(d);
    if (rc != HPL_OK)
        return rc;
    if (t->get_calibrated && calibrate_ext(d))
        return HPL_OK;
    return calibrate_by_submission(d);
}

void hpl__timestamps_refresh(hpl__device *d)
{
    hpl__timestamps *t = &d->timestamps;
    if (t->get_calibrated && t->point_count && hpl__now_ns() - t->points[t->point_count - 1].ns >= RECALIBRATE_NS)
        calibrate_ext(d);
}

/* ---- queries ---------------------------------------------------------- */

bool hpl__timestamps_take(hpl__device *d, uint32_t *pair)
{
    hpl__timestamps *t = &d->timestamps;
    if (!t->pool || !t->free_count)
        return false;
    *pair = t->free_pairs[--t->free_count];
    /* Free pairs were read (or never submitted): no command still uses them. */
    vkResetQueryPool(d->device, t->pool, 2 * *pair, 2);
    return true;
}

void hpl__timestamps_give(hpl__device *d, uint32_t pair)
{
    hpl__timestamps *t = &d->timestamps;
    t->free_pairs[t->free_count++] = pair;
}

void hpl__timestamps_write(hpl__device *d, VkCommandBuffer cb, uint32_t pair, bool end)
{
    /* BOTTOM_OF_PIPE: written once every earlier command on the queue has
     * completed, so a begin stamp is the moment the command may start. */
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->timestamps.pool, 2 * pair + (end ? 1 : 0));
}

/* The calibration point closest in host time to ns. */
static const hpl__clock_point *nearest(const hpl__timestamps *t, uint64_t ns)
{
    uint32_t lo = 0, hi = t->point_count - 1;
    while (lo < hi) { /* first point with points[i].ns >= ns, or the last */
        uint32_t mid = (lo + hi) / 2;
        if (t->points[mid].ns < ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && ns - t->points[lo - 1].ns < t->points[lo].ns - ns)
        lo--;
    return &t->points[lo];
}

bool hpl__timestamps_read(hpl__device *d, uint32_t pair, uint64_t near_ns, uint64_t *begin, uint64_t *end)
{
    hpl__timestamps *t = &d->timestamps;
    uint64_t v[4]; /* begin, its availability, end, its availability */
    VkResult r = vkGetQueryPoolResults(d->device, t->pool, 2 * pair, 2, sizeof v, v, 2 * sizeof(uint64_t),
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (r != VK_SUCCESS || !v[1] || !v[3] || !t->point_count)
        return false;
    uint64_t near = nearest(t, near_ns)->ticks;
    *begin = extend(t, v[0] & t->mask, near);
    *end = extend(t, v[2] & t->mask, near);
    return true;
}

/* ns + delta, clamped at 0. */
static uint64_t add_signed(uint64_t ns, double delta)
{
    long long r = llround(delta);
    if (r >= 0)
        return ns + (uint64_t)r;
    uint64_t back = (uint64_t)(-(r + 1)) + 1;
    return back > ns ? 0 : ns - back;
}

uint64_t hpl__timestamps_to_ns(const hpl__device *d, uint64_t ticks)
{
    const hpl__timestamps *t = &d->timestamps;
    if (!t->point_count)
        return 0;
    uint32_t lo = 0, hi = t->point_count; /* first point with ticks > the tick */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (t->points[mid].ticks <= ticks)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return add_signed(t->points[0].ns, -(double)(t->points[0].ticks - ticks) * t->period);
    const hpl__clock_point *p = &t->points[lo - 1];
    if (lo == t->point_count)
        return add_signed(p->ns, (double)(ticks - p->ticks) * t->period);
    const hpl__clock_point *q = &t->points[lo];
    unsigned __int128 span = (unsigned __int128)(ticks - p->ticks) * (q->ns - p->ns);
    return p->ns + (uint64_t)(span / (q->ticks - p->ticks));
}
