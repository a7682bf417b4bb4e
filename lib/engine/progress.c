/* The progress thread: links timelines of devices that share no semaphores.
 * Work on device B that needs work on device A is submitted at once, waiting
 * on B's gate semaphore; this thread waits for A's timeline and then signals
 * B's gate, so the user's thread never waits inside eval. It also submits a
 * device's open batch once the work before it is done (submit.c), so that
 * batched work never waits for the user's next call. Requests are served in
 * order, which keeps each gate's values increasing. */
#include "internal.h"

#include <string.h>

typedef struct request {
    hpl__progress_kind kind;
    int device;          /* whose gate to signal or batch to flush */
    uint64_t gate_value;
    int count;
    hpl__point points[HPL__MAX_DEVICES];
} request;

struct hpl__progress {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    request *queue; /* ring */
    uint32_t capacity, head, count;
    bool stop;
    hpl_context *ctx;
};

static void serve(hpl__progress *p, const request *r)
{
    hpl_context *ctx = p->ctx;
    for (int i = 0; i < r->count; i++) {
        hpl__device *src = &ctx->devices[r->points[i].device];
        VkResult res = hpl__timeline_wait(src, r->points[i].value);
        if (res != VK_SUCCESS) {
            /* Keep the error; still open the gate so the waiting device does
             * not hang: its results are void and the error says so. */
            src->error = res == VK_ERROR_DEVICE_LOST ? HPL_ERROR_DEVICE_LOST : HPL_ERROR_VULKAN;
            pthread_mutex_lock(&ctx->lock);
            hpl__context_record_error(ctx, src->error);
            pthread_mutex_unlock(&ctx->lock);
        }
    }
    if (r->kind == HPL__PROGRESS_GATE)
        hpl__gate_signal(&ctx->devices[r->device], r->gate_value);
    else
        hpl__batch_watched(&ctx->devices[r->device]);
}

static void *run(void *arg)
{
    hpl__progress *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->count == 0 && !p->stop)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->count == 0 && p->stop)
            break;
        request r = p->queue[p->head];
        pthread_mutex_unlock(&p->lock);
        serve(p, &r);
        pthread_mutex_lock(&p->lock);
        p->head = (p->head + 1) % p->capacity;
        p->count--;
        pthread_cond_broadcast(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int hpl__progress_start(hpl_context *ctx)
{
    hpl__progress *p = hpl__calloc(1, sizeof *p);
    if (!p)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the progress thread");
    p->ctx = ctx;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->wake);
        hpl__free(p);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "could not start the progress thread");
    }
    ctx->progress = p;
    return HPL_OK;
}

/* Serves every queued request, then ends the thread. */
void hpl__progress_stop(hpl_context *ctx)
{
    hpl__progress *p = ctx->progress;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    /* serve() may take the context lock to record an error. */
    HPL__UNLOCK(ctx);
    pthread_join(p->thread, NULL);
    HPL__LOCK(ctx);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    hpl__free(p->queue);
    hpl__free(p);
    ctx->progress = NULL;
}

int hpl__progress_enqueue(hpl_context *ctx, hpl__progress_kind kind, int device, uint64_t gate_value,
                          const hpl__point *points, int count)
{
    hpl__progress *p = ctx->progress;
    pthread_mutex_lock(&p->lock);
    if (p->count == p->capacity) {
        uint32_t cap = p->capacity ? p->capacity * 2 : 64;
        request *q = hpl__malloc(cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&p->lock);
            return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for a cross-device wait");
        }
        for (uint32_t i = 0; i < p->count; i++)
            q[i] = p->queue[(p->head + i) % p->capacity];
        hpl__free(p->queue);
        p->queue = q;
        p->capacity = cap;
        p->head = 0;
    }
    request *r = &p->queue[(p->head + p->count) % p->capacity];
    r->kind = kind;
    r->device = device;
    r->gate_value = gate_value;
    r->count = count;
    memcpy(r->points, points, (size_t)count * sizeof *points);
    p->count++;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    return HPL_OK;
}
