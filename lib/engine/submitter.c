/* The submit thread of a device: vkQueueSubmit off the thread that records.
 *
 * A two-device step records and submits a batch on each device; on the
 * H200 the two vkQueueSubmit calls are a quarter of the host's time in
 * hpl_eval (~4.5 us each, samples/bench/results/h200-pushes.txt), and two threads
 * submitting to two queues are not serialised by the driver. With a thread
 * per device the recording thread hands each submission over and goes on
 * to the next device's recording.
 *
 * Every submission of a device (compute batches, transfer lane, both
 * through hpl__submit) goes through its one FIFO, so queue order is
 * submission order as before, and timeline values are handed out in FIFO
 * order under the device's batch lock. A value may be waited for (by the
 * host, another device, the lane) before its submission reaches the queue:
 * timeline semaphores allow a wait before its signal.
 *
 * A submission that fails marks the device lost (hpl__device.error) and
 * must not leave waiters hanging on values that will never be signalled:
 * once the queue is done with what was submitted before, the thread
 * signals that submission's value from the host, and does so for every
 * later one instead of submitting it. Waits then see the error
 * (vk.c: hpl__semaphore_wait). A submission of another device that waits
 * for such a value would compute from what never ran: that device fails
 * too (hpl__device_fail_after; the progress thread does the same for the
 * gates it opens), so that no read returns its rows as computed.
 *
 * HPLVK_SUBMIT_THREAD: 1 submits from the thread, 0 (default) from the
 * recording thread itself. Measured on one H200 (samples/bench/RESULTS.md), the
 * thread takes 2-9 us a step off the host's time in hpl_eval, but the steps
 * of two logical devices there are set by the GPU and get no shorter (a
 * Game of Life of 4096^2 cells got 8% slower); two physical GPUs, where the
 * host sets the pace of small steps, are not measured yet. */
#include "submitter.h"

#include "config.h"
#include "vk.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

struct hpl__submitter {
    hpl__device *d;
    /* Held around every vkQueueSubmit on the device's queues, whoever makes
     * it: this thread, the progress thread's flush, timestamp calibration. */
    pthread_mutex_t queue_lock;
    bool threaded;
    pthread_t thread;
    pthread_mutex_t lock; /* the FIFO and the flags below */
    pthread_cond_t wake;
    pthread_cond_t drained; /* the FIFO became empty */
    hpl__submission *items;
    uint32_t capacity, head, count;
    bool sleeping; /* the thread waits on `wake` */
    bool stop;
    /* Last value submitted or signalled from the host: of the compute
     * timeline (atomic: other devices' threads read it), of the lane's. */
    uint64_t queued, lane_queued;
    /* The first compute value signalled from the host instead of by its
     * work (UINT64_MAX: none yet); set before `queued` reaches it. */
    uint64_t void_from;
    VkResult failure; /* the first failed vkQueueSubmit; VK_SUCCESS: none */
};

/* Spin this long for a next submission before sleeping: submissions of a
 * stencil loop come every few tens of microseconds, and a wake costs a
 * system call on both sides. */
#define SPIN_NS 50000u

VkResult hpl__queue_submit_on(hpl__device *d, VkQueue queue, uint32_t count, const VkSubmitInfo *submits,
                              VkFence fence)
{
    hpl__submitter *t = d->submitter;
    if (t)
        pthread_mutex_lock(&t->queue_lock);
    if (d->queue_lock)
        d->queue_lock(d->queue_lock_user, queue);
    VkResult r = vkQueueSubmit(queue, count, submits, fence);
    if (d->queue_unlock)
        d->queue_unlock(d->queue_lock_user, queue);
    if (t)
        pthread_mutex_unlock(&t->queue_lock);
    return r;
}

static VkResult submit_now(hpl__device *d, const hpl__submission *s)
{
    VkPipelineStageFlags stages[HPL__SUBMIT_MAX_WAITS];
    for (uint32_t i = 0; i < s->wait_count; i++)
        stages[i] = s->stage;
    VkTimelineSemaphoreSubmitInfo ti = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = s->wait_count,
                                        .pWaitSemaphoreValues = s->wait_values,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &s->value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ti,
                       .waitSemaphoreCount = s->wait_count,
                       .pWaitSemaphores = s->waits,
                       .pWaitDstStageMask = stages,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &s->cb,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &s->signal};
    return hpl__queue_submit_on(d, s->queue, 1, &si, VK_NULL_HANDLE);
}

/* Records that `value` of a timeline of d will be signalled by the queue
 * or has been by the host. */
static void note_signalled(hpl__submitter *t, const hpl__submission *s)
{
    if (s->signal == t->d->timeline)
        __atomic_store_n(&t->queued, s->value, __ATOMIC_RELEASE);
    else
        t->lane_queued = s->value;
}

/* Stands in for a submission that will not run: its value is signalled
 * from the host once the queue's earlier signals of that semaphore are
 * done (a host signal must not pass a pending one). */
static void release(hpl__submitter *t, const hpl__submission *s)
{
    hpl__device *d = t->d;
    bool compute = s->signal == d->timeline;
    hpl__semaphore_settle(d, s->signal, compute ? t->queued : t->lane_queued);
    if (compute && t->void_from == UINT64_MAX)
        __atomic_store_n(&t->void_from, s->value, __ATOMIC_RELEASE);
    hpl__semaphore_signal(d, s->signal, s->value);
    note_signalled(t, s);
}

/* Waits until another device's submit thread has submitted (or signalled
 * from the host) `value` of its compute timeline; returns whether it was
 * signalled from the host, its work void. A wait that reaches the driver
 * before its signal is legal, but NVIDIA's driver then defers the
 * submission to a thread of its own (~14 us a Game of Life step on the
 * H200 before this); without submit threads the recording thread submits
 * the signal first (submit.c: flush_for). */
static bool await_queued(hpl__device *producer, uint64_t value)
{
    hpl__submitter *p = producer->submitter;
    if (!p || !__atomic_load_n(&p->threaded, __ATOMIC_ACQUIRE))
        return false;
    while (__atomic_load_n(&p->queued, __ATOMIC_ACQUIRE) < value)
        sched_yield();
    return __atomic_load_n(&p->void_from, __ATOMIC_ACQUIRE) <= value;
}

static void perform(hpl__submitter *t, const hpl__submission *s)
{
    hpl__device *d = t->d;
    const hpl__device *voided_by = NULL;
    for (uint32_t i = 0; i < s->wait_count; i++)
        if (s->producers[i] && await_queued(s->producers[i], s->wait_values[i]))
            voided_by = s->producers[i];
    /* A failed device's work no longer runs: nor does work that would
     * compute from what did not run. */
    if (voided_by)
        hpl__device_fail_after(d, voided_by);
    if (!__atomic_load_n(&d->error, __ATOMIC_ACQUIRE)) {
        VkResult r = submit_now(d, s);
        if (r == VK_SUCCESS) {
            note_signalled(t, s);
            return;
        }
        __atomic_store_n(&t->failure, r, __ATOMIC_RELEASE);
        hpl__device_fail(d, HPL_ERROR_DEVICE_LOST);
    }
    release(t, s);
}

/* Nothing to submit (t->lock held, released meanwhile): spins a while,
 * then sleeps until hpl__submit wakes it. */
static void idle(hpl__submitter *t)
{
    uint64_t until = hpl__now_ns() + SPIN_NS;
    while (!t->count && !t->stop && hpl__now_ns() < until) {
        pthread_mutex_unlock(&t->lock);
        sched_yield();
        pthread_mutex_lock(&t->lock);
    }
    if (t->count || t->stop)
        return;
    t->sleeping = true;
    pthread_cond_wait(&t->wake, &t->lock);
    t->sleeping = false;
}

/* Submits the FIFO in order until stopped and empty. */
static void *run(void *arg)
{
    hpl__submitter *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        if (!t->count) {
            if (t->stop)
                break;
            idle(t);
            continue;
        }
        hpl__submission s = t->items[t->head];
        pthread_mutex_unlock(&t->lock);
        perform(t, &s);
        pthread_mutex_lock(&t->lock);
        t->head = (t->head + 1) % t->capacity;
        if (--t->count == 0)
            pthread_cond_broadcast(&t->drained);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Room for one more in the FIFO (t->lock held); false when out of memory. */
static bool make_room(hpl__submitter *t)
{
    void *items = t->items;
    bool ok = hpl__fifo_room(&items, sizeof *t->items, &t->head, t->count, &t->capacity, 1);
    t->items = items;
    return ok;
}

/* Hands s to the thread. Out of host memory for the FIFO, waits until the
 * thread has emptied it and does what the thread would have done. */
static void enqueue(hpl__submitter *t, const hpl__submission *s)
{
    pthread_mutex_lock(&t->lock);
    bool room = make_room(t);
    if (room) {
        t->items[(t->head + t->count) % t->capacity] = *s;
        t->count++;
        if (t->sleeping)
            pthread_cond_signal(&t->wake);
    }
    while (!room && t->count)
        pthread_cond_wait(&t->drained, &t->lock);
    pthread_mutex_unlock(&t->lock);
    if (!room)
        perform(t, s);
}

/* A refused submission without a submit thread: from now on one stands in
 * for the device's submissions as with HPLVK_SUBMIT_THREAD=1, signalling
 * this value and every later one from the host once the queue is done with
 * what it holds. Work already submitted may wait for this value (a lane
 * copy for the batch being recorded, submit.c: hpl__batch_flush_locked).
 * Not on this thread: it holds the batch lock, which the progress thread
 * may need before it opens a gate that earlier work waits for. */
static void stand_in(hpl__submitter *t, const hpl__submission *s, VkResult r)
{
    hpl__device *d = t->d;
    __atomic_store_n(&t->failure, r, __ATOMIC_RELEASE);
    hpl__device_fail(d, HPL_ERROR_DEVICE_LOST);
    /* The caller holds the batch lock: these are the last values submitted. */
    __atomic_store_n(&t->queued, d->submitted, __ATOMIC_RELEASE);
    t->lane_queued = d->xfer.submitted;
    if (pthread_create(&t->thread, NULL, run, t) != 0) {
        release(t, s); /* no thread to be had: here, at a risk of waiting long */
        return;
    }
    __atomic_store_n(&t->threaded, true, __ATOMIC_RELEASE);
    enqueue(t, s);
}

VkResult hpl__submit(hpl__device *d, const hpl__submission *s)
{
    hpl__submitter *t = d->submitter;
    if (t && __atomic_load_n(&t->threaded, __ATOMIC_ACQUIRE)) {
        enqueue(t, s);
        return VK_SUCCESS;
    }
    VkResult r = submit_now(d, s);
    if (r != VK_SUCCESS && t)
        stand_in(t, s, r);
    return r;
}

void hpl__submit_drain(hpl__device *d)
{
    hpl__submitter *t = d->submitter;
    if (!t || !__atomic_load_n(&t->threaded, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&t->lock);
    while (t->count)
        pthread_cond_wait(&t->drained, &t->lock);
    pthread_mutex_unlock(&t->lock);
}

void hpl__submit_trim(hpl__device *d, uint32_t keep)
{
    hpl__submitter *t = d->submitter;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    if (t->count == 0 && t->capacity > keep) {
        hpl__free(t->items);
        t->items = NULL;
        t->capacity = t->head = 0;
    }
    pthread_mutex_unlock(&t->lock);
}

VkResult hpl__submit_failure(const hpl__device *d)
{
    /* Written by the thread before it marks d->error, which the caller saw. */
    return d->submitter ? __atomic_load_n(&d->submitter->failure, __ATOMIC_ACQUIRE) : VK_SUCCESS;
}

static void submitter_destroy(hpl__submitter *t)
{
    pthread_mutex_destroy(&t->queue_lock);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    pthread_cond_destroy(&t->drained);
    hpl__free(t->items);
    hpl__free(t);
}

static int submitter_start(hpl__device *d, bool threaded)
{
    hpl__submitter *t = hpl__calloc(1, sizeof *t);
    if (!t)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a submit thread");
    t->d = d;
    t->void_from = UINT64_MAX;
    pthread_mutex_init(&t->queue_lock, NULL);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    pthread_cond_init(&t->drained, NULL);
    if (threaded && pthread_create(&t->thread, NULL, run, t) != 0) {
        submitter_destroy(t);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "could not start the submit thread of device %s",
                         d->info.name);
    }
    t->threaded = threaded;
    d->submitter = t;
    return HPL_OK;
}

int hpl__submitters_start(hpl_context *ctx)
{
    bool threaded = false;
    int rc = hpl__parse_switch("HPLVK_SUBMIT_THREAD", getenv("HPLVK_SUBMIT_THREAD"), false,
                               "the thread that records a device's work submits it",
                               "a thread per device submits its work", &threaded);
    for (int i = 0; rc == HPL_OK && i < ctx->device_count; i++)
        rc = submitter_start(&ctx->devices[i], threaded);
    return rc;
}

void hpl__submitters_stop(hpl_context *ctx)
{
    for (int i = 0; i < ctx->device_count; i++) {
        hpl__submitter *t = ctx->devices[i].submitter;
        if (!t)
            continue;
        if (t->threaded) {
            pthread_mutex_lock(&t->lock);
            t->stop = true;
            pthread_cond_signal(&t->wake);
            pthread_mutex_unlock(&t->lock);
            pthread_join(t->thread, NULL); /* after the FIFO's last */
        }
        ctx->devices[i].submitter = NULL;
        submitter_destroy(t);
    }
}
