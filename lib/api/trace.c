#define _POSIX_C_SOURCE 200809L /* strerror */
/* Traces (hpl_trace_begin, HPLVK_TRACE): the event log of a stretch of the
 * run written as a Chrome trace (JSON "traceEvents" of complete "X"
 * events), which chrome://tracing and ui.perfetto.dev open. Process 1 is the
 * host (a thread track per host thread), process 2 + d device d (a thread
 * track per queue). Times are microseconds of the host's CLOCK_MONOTONIC from
 * the trace's first moment. */
#include "api.h"

#include "events.h"
#include "submit.h"
#include "timestamps.h"

#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct hpl__trace {
    FILE *file;
    char *path;
    const char *started_by; /* "HPLVK_TRACE" or "hpl_trace_begin" */
    uint64_t first;         /* serial of its first event */
    uint64_t begin_ns;
} hpl__trace;

/* Process ids: each rank's own block (a context over ranks), so that the
 * ranks' files show as distinct processes side by side. */
#define RANK_PIDS 100
#define HOST_PID (1 + w->pid_base)
#define DEVICE_PID(d) (2 + w->pid_base + (d))
#define COMPUTE_TID 1
#define TRANSFER_TID 2
/* On the host process: a track per other rank and direction of messages. */
#define MESSAGE_TID(peer, send) (1000u + 2u * (uint32_t)(peer) + (uint32_t)(send))

/* ---- JSON ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s, 0 if there is none. */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xc2) || (n == 4 && s[0] > 0xf4))
        return 0; /* a continuation byte, an overlong pair or past U+10FFFF */
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0; /* overlong, a surrogate, or past U+10FFFF */
    return n;
}

/* A JSON string: names are user input, so quotes, backslashes and control
 * characters are escaped and bytes that are not UTF-8 become U+FFFD. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_length(p);
        if (n == 0) {
            fputs("\\ufffd", f);
            p++;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p++);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p++);
        } else {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        }
    }
    fputc('"', f);
}

/* Microseconds with three decimals: nanoseconds exactly. */
static void put_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void put_u64s(FILE *f, const uint64_t *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRIu64, i ? "," : "", v[i]);
    fputc(']', f);
}

static void put_memory(FILE *f, int device)
{
    if (device == HPL__NO_DEVICE)
        fputs("\"host\"", f);
    else
        fprintf(f, "\"device %d\"", device);
}

/* ---- the events -------------------------------------------------------------- */

typedef struct writer {
    hpl_context *ctx;
    FILE *f;
    uint64_t first, last; /* serials written: [first, last) */
    uint64_t origin;      /* host ns of ts 0 */
    uint64_t queue_end[2 * HPL__MAX_DEVICES]; /* end of the last host-timed event per device queue */
    bool any;
    int pid_base; /* RANK_PIDS times the rank */
} writer;

static const char *direction_name(hpl__copy_direction d)
{
    static const char *const names[] = {"host to device", "device to host", "within device", "host to host"};
    return names[d];
}

static void put_kernel_args(writer *w, const hpl__event *e)
{
    FILE *f = w->f;
    fputs(",\"offset\":", f);
    put_u64s(f, e->u.kernel.offset, 3);
    fputs(",\"size\":", f);
    put_u64s(f, e->u.kernel.size, 3);
    fputs(",\"global\":", f);
    put_u64s(f, e->u.kernel.global, 3);
    uint64_t local[3] = {e->u.kernel.local[0], e->u.kernel.local[1], e->u.kernel.local[2]};
    fputs(",\"local\":", f);
    put_u64s(f, local, 3);
    for (int pass = 0; pass < 2; pass++) {
        hpl_access want = pass ? HPL_WRITE : HPL_READ;
        fputs(pass ? ",\"writes\":[" : ",\"reads\":[", f);
        int n = 0;
        for (uint32_t i = 0; i < e->u.kernel.array_count; i++) {
            if (!(e->u.kernel.arrays[i].access & want))
                continue;
            if (n++)
                fputc(',', f);
            put_string(f, hpl__events_name(w->ctx, e->u.kernel.arrays[i].name));
        }
        fputc(']', f);
    }
}

/* A box as inclusive first and last indices (hpl_range's convention). */
static void put_box(FILE *f, const hpl__box *b)
{
    uint64_t first[3], last[3];
    for (int d = 0; d < 3; d++) {
        first[d] = b->lo[d];
        last[d] = b->hi[d] - 1;
    }
    fputs("{\"first\":", f);
    put_u64s(f, first, 3);
    fputs(",\"last\":", f);
    put_u64s(f, last, 3);
    fputc('}', f);
}

static void put_copy_args(writer *w, const hpl__event *e)
{
    FILE *f = w->f;
    fputs(",\"array\":", f);
    put_string(f, hpl__events_name(w->ctx, e->name));
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"boxes\":%u,\"kernel_boxes\":%u,\"direction\":\"%s\",\"src\":",
            e->u.copy.bytes, e->u.copy.boxes, e->u.copy.kernel_boxes, direction_name(e->u.copy.direction));
    put_memory(f, e->u.copy.src_device);
    fputs(",\"dst\":", f);
    put_memory(f, e->u.copy.dst_device);
    fputs(",\"bounds\":", f);
    put_box(f, &e->u.copy.bounds);
    fputs(",\"region\":[", f);
    for (uint32_t i = 0; e->u.copy.region && i < HPL__MIN(e->u.copy.boxes, HPL__EVENT_BOXES); i++) {
        fputs(i ? "," : "", f);
        put_box(f, &e->u.copy.region[i]);
    }
    fputc(']', f);
}

static void put_wait_args(writer *w, const hpl__event *e)
{
    FILE *f = w->f;
    fputs(",\"points\":[", f);
    for (int i = 0; i < e->u.wait.point_count; i++) {
        const hpl__point *p = &e->u.wait.points[i];
        fprintf(f, "%s{\"device\":%d,\"queue\":\"%s\",\"value\":%" PRIu64 "}", i ? "," : "",
                p->timeline % HPL__MAX_DEVICES, hpl__timeline_is_lane(p->timeline) ? "transfer" : "compute", p->value);
    }
    fputc(']', f);
}

static void put_name(writer *w, const hpl__event *e)
{
    FILE *f = w->f;
    if (e->kind == HPL__EVENT_KERNEL) {
        put_string(f, hpl__events_name(w->ctx, e->name));
        return;
    }
    if (e->kind == HPL__EVENT_WAIT || e->kind == HPL__EVENT_PLAN) {
        fputs(e->kind == HPL__EVENT_WAIT ? "\"wait\"" : "\"plan search\"", f);
        return;
    }
    char name[96];
    if (e->kind == HPL__EVENT_MESSAGE) {
        snprintf(name, sizeof name, "%s rank %d", e->u.message.send ? "send to" : "receive from", e->u.message.peer);
        put_string(f, name);
        return;
    }
    snprintf(name, sizeof name, "copy %s", direction_name(e->u.copy.direction));
    put_string(f, name);
}

static void put_event(void *user, const hpl__event *e, uint64_t begin, uint64_t end)
{
    writer *w = user;
    if (e->serial >= w->last)
        return;
    FILE *f = w->f;
    bool host = e->device == HPL__NO_DEVICE;
    if (!host && !e->gpu_time) {
        /* Host times of device work overlap; one queue's track must not. */
        int q = 2 * e->device + e->queue;
        begin = HPL__MAX(begin, w->queue_end[q]);
        end = HPL__MAX(end, begin);
        w->queue_end[q] = end;
    }
    static const char *const cats[] = {"kernel", "copy", "wait", "plan", "message"};
    fputs(w->any ? ",\n{\"name\":" : "\n{\"name\":", f);
    w->any = true;
    put_name(w, e);
    fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRIu32 ",\"ts\":", cats[e->kind],
            host ? HOST_PID : DEVICE_PID(e->device),
            e->kind == HPL__EVENT_MESSAGE ? MESSAGE_TID(e->u.message.peer, e->u.message.send)
            : host                        ? e->thread
                                          : (uint32_t)(e->queue ? TRANSFER_TID : COMPUTE_TID));
    put_us(f, begin >= w->origin ? begin - w->origin : 0);
    fputs(",\"dur\":", f);
    put_us(f, end >= begin ? end - begin : 0);
    fprintf(f, ",\"args\":{\"seq\":%" PRIu64 ",\"clock\":\"%s\"", e->serial, e->gpu_time ? "gpu" : "host");
    if (!host)
        fprintf(f, ",\"device\":%d,\"queue\":\"%s\",\"value\":%" PRIu64, e->device,
                e->queue ? "transfer" : "compute", e->value);
    if (e->kind == HPL__EVENT_KERNEL)
        put_kernel_args(w, e);
    else if (e->kind == HPL__EVENT_COPY)
        put_copy_args(w, e);
    else if (e->kind == HPL__EVENT_WAIT)
        put_wait_args(w, e);
    else if (e->kind == HPL__EVENT_MESSAGE) {
        fputs(",\"array\":", f);
        put_string(f, hpl__events_name(w->ctx, e->name));
        fprintf(f, ",\"peer\":%d,\"bytes\":%" PRIu64 ",\"box\":", e->u.message.peer, e->u.message.bytes);
        put_box(f, &e->u.message.box);
    } else if (e->u.plan.text) {
        fputs(",\"description\":", f);
        put_string(f, e->u.plan.text);
    }
    fputs("}}", f);
}

/* ---- metadata ------------------------------------------------------------------ */

static void put_track_names(writer *w, const uint32_t *threads, int thread_count, uint64_t message_tracks)
{
    FILE *f = w->f;
    const hpl__span *sp = w->ctx->span;
    char host[32] = "host";
    if (sp)
        snprintf(host, sizeof host, "rank %d host", sp->rank);
    fprintf(f, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"%s\"}},", HOST_PID, host);
    fprintf(f, "\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":0}},", HOST_PID);
    for (int i = 0; i < thread_count; i++)
        fprintf(f, "\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%" PRIu32
                   ",\"args\":{\"name\":\"host thread %" PRIu32 "\"}},",
                HOST_PID, threads[i], threads[i]);
    for (int t = 0; t < 64; t++)
        if (message_tracks >> t & 1u)
            fprintf(f, "\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%" PRIu32
                       ",\"args\":{\"name\":\"%s rank %d\"}},",
                    HOST_PID, MESSAGE_TID(t / 2, t % 2), t % 2 ? "sends to" : "receives from", t / 2);
    for (int d = 0; d < w->ctx->device_count; d++) {
        char name[300];
        if (sp)
            snprintf(name, sizeof name, "rank %d device %d (%s)", sp->rank, sp->first + d, w->ctx->devices[d].info.name);
        else
            snprintf(name, sizeof name, "device %d (%s)", d, w->ctx->devices[d].info.name);
        fprintf(f, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", DEVICE_PID(d));
        put_string(f, name);
        fprintf(f, "}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}},",
                DEVICE_PID(d), 1 + d);
        fprintf(f, "\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"compute queue\"}}",
                DEVICE_PID(d), COMPUTE_TID);
        if (w->ctx->devices[d].xfer.on)
            fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":"
                       "\"transfer queue\"}}",
                    DEVICE_PID(d), TRANSFER_TID);
        fputc(d + 1 < w->ctx->device_count ? ',' : ' ', f);
    }
}

static void put_devices(writer *w)
{
    FILE *f = w->f;
    fputs("\"devices\":[", f);
    for (int d = 0; d < w->ctx->device_count; d++) {
        const hpl__device *dev = &w->ctx->devices[d];
        const hpl__timestamps *t = &dev->timestamps;
        fprintf(f, "%s\n  {\"device\":%d,\"pid\":%d,\"name\":", d ? "," : "", d, DEVICE_PID(d));
        put_string(f, dev->info.name);
        fprintf(f, ",\"gpu_timestamps\":%s,\"calibration\":\"%s\",\"clock_error_ns\":%" PRIu64 "}",
                t->supported ? "true" : "false",
                !t->supported ? "none" : t->get_calibrated ? "VK_EXT_calibrated_timestamps" : "submission",
                t->error_ns);
    }
    fputs("]", f);
}

/* The host threads that waited, the message tracks (bit 2 peer + send),
 * and the earliest begin, in one pass. */
typedef struct survey {
    writer *w;
    uint32_t threads[64];
    int thread_count;
    uint64_t message_tracks;
} survey;

static void survey_event(void *user, const hpl__event *e, uint64_t begin, uint64_t end)
{
    (void)end;
    survey *s = user;
    if (e->serial >= s->w->last)
        return;
    s->w->origin = HPL__MIN(s->w->origin, begin);
    if (e->device != HPL__NO_DEVICE)
        return;
    if (e->kind == HPL__EVENT_MESSAGE) {
        if (e->u.message.peer >= 0 && e->u.message.peer < 32)
            s->message_tracks |= 1ull << (2 * e->u.message.peer + e->u.message.send);
        return;
    }
    for (int i = 0; i < s->thread_count; i++)
        if (s->threads[i] == e->thread)
            return;
    if (s->thread_count < (int)HPL__ARRAY_LEN(s->threads))
        s->threads[s->thread_count++] = e->thread;
}

static void write_json(writer *w)
{
    survey s = {.w = w};
    hpl__events_each(w->ctx, w->first, survey_event, &s);
    FILE *f = w->f;
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"hplvk_version\":\"%d.%d.%d\",\"clock\":\"CLOCK_MONOTONIC\","
               "\"origin_ns\":%" PRIu64 ",\"lost_events\":%" PRIu64 ",\"host_timed_events\":%" PRIu64 ",",
            HPLVK_VERSION_MAJOR, HPLVK_VERSION_MINOR, HPLVK_VERSION_PATCH, w->origin, hpl__events_lost(w->ctx),
            hpl__events_host_timed(w->ctx));
    put_devices(w);
    fputs("},\n\"traceEvents\":[", f);
    put_track_names(w, s.threads, s.thread_count, s.message_tracks);
    w->any = true;
    hpl__events_each(w->ctx, w->first, put_event, w);
    fputs("\n]}\n", f);
}

/* ---- begin and end --------------------------------------------------------------- */

static char *tagged(const char *path, const char *tag, unsigned n);

static int trace_open(hpl_context *ctx, const char *path, const char *started_by)
{
    if (ctx->trace)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "a trace into '%s' is already being recorded (started by %s)",
                         ctx->trace->path, ctx->trace->started_by);
    hpl__trace *tr = hpl__calloc(1, sizeof *tr);
    if (tr)
        tr->path = hpl__strdup(path);
    if (!tr || !tr->path) {
        hpl__free(tr);
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    tr->file = fopen(path, "w");
    int rc = tr->file ? hpl__events_enable(ctx, true)
                      : hpl__fail(HPL_ERROR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    if (rc != HPL_OK) {
        if (tr->file)
            fclose(tr->file);
        hpl__free(tr->path);
        hpl__free(tr);
        return rc;
    }
    tr->started_by = started_by;
    tr->first = hpl__events_next_serial(ctx);
    tr->begin_ns = hpl__now_ns();
    hpl__events_keep(ctx, tr->first);
    ctx->trace = tr;
    return HPL_OK;
}

/* Over several ranks, each rank writes its own file: path with
 * ".rank<r>" before its extension. */
static int trace_start(hpl_context *ctx, const char *path, const char *started_by)
{
    if (!ctx->span || ctx->span->ranks < 2)
        return trace_open(ctx, path, started_by);
    char *own = tagged(path, "rank", (unsigned)ctx->span->rank);
    int rc = own ? trace_open(ctx, own, started_by) : hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    hpl__free(own);
    return rc;
}

/* Stops recording, waits for the traced work, writes the file. */
static int trace_finish(hpl_context *ctx)
{
    hpl__trace *tr = ctx->trace;
    ctx->trace = NULL;
    writer w = {.ctx = ctx, .pid_base = ctx->span ? RANK_PIDS * ctx->span->rank : 0, .f = tr->file,
                .first = tr->first, .last = hpl__events_next_serial(ctx),
                .origin = ctx->span ? HPL__MIN(ctx->span->origin_ns, tr->begin_ns) : tr->begin_ns};
    hpl__events_enable(ctx, false);
    int rc = hpl__wait_idle(ctx); /* releases the lock meanwhile */
    /* A last calibration point: every event converts between two. */
    for (int d = 0; rc == HPL_OK && d < ctx->device_count; d++)
        rc = hpl__timestamps_start(&ctx->devices[d]);
    write_json(&w);
    bool bad = ferror(tr->file) != 0;
    int saved = errno;
    if (fclose(tr->file) != 0 && !bad) {
        bad = true;
        saved = errno;
    }
    if (bad && rc == HPL_OK)
        rc = hpl__fail(HPL_ERROR_IO, "writing '%s' failed: %s", tr->path, strerror(saved));
    hpl__events_keep(ctx, ctx->trace ? ctx->trace->first : UINT64_MAX);
    if (hpl__events_users(ctx) == 0)
        hpl__events_forget(ctx, w.last);
    hpl__free(tr->path);
    hpl__free(tr);
    return rc;
}

int hpl_trace_begin(hpl_context *ctx, const char *path)
{
    if (!ctx || !path)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_trace_begin: %s is NULL", !ctx ? "ctx" : "path");
    if (!*path)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_trace_begin: path is empty");
    HPL__LOCK(ctx);
    int rc = trace_start(ctx, path, "hpl_trace_begin");
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_trace_begin");
    HPL__UNLOCK(ctx);
    return rc;
}

int hpl_trace_end(hpl_context *ctx)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_trace_end: ctx is NULL");
    HPL__LOCK(ctx);
    int rc = ctx->trace ? trace_finish(ctx)
                        : hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                                    "no trace is being recorded (start one with hpl_trace_begin or HPLVK_TRACE)");
    if (rc != HPL_OK)
        hpl__error_prefix("hpl_trace_end");
    HPL__UNLOCK(ctx);
    return rc;
}

/* ---- the context's side ---------------------------------------------------------- */

/* The n-th (from 0) context of the process traced by HPLVK_TRACE=path
 * writes path itself, the next ones path with ".n" before its extension:
 * contexts alive together must not write one file. A path that is there
 * and is no regular file (/dev/null, a FIFO) is the first one's only: a
 * numbered name beside it would be a new file in /dev, say. */
static char *tagged(const char *path, const char *tag, unsigned n)
{
    size_t len = strlen(path);
    char *out = hpl__malloc(len + strlen(tag) + 16);
    if (!out)
        return NULL;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - path) : len;
    snprintf(out, len + strlen(tag) + 16, "%.*s.%s%u%s", (int)stem, path, tag, n, path + stem);
    return out;
}

static char *numbered(const char *path, unsigned n)
{
    if (n)
        return tagged(path, "", n);
    char *out = hpl__malloc(strlen(path) + 1);
    return out ? strcpy(out, path) : NULL;
}

void hpl__trace_from_env(hpl_context *ctx)
{
    static atomic_uint contexts;
    const char *value = getenv("HPLVK_TRACE");
    if (!value || !*value)
        return;
    unsigned n = atomic_fetch_add(&contexts, 1);
    struct stat st;
    char *path = NULL;
    int rc;
    if (n && stat(value, &st) == 0 && !S_ISREG(st.st_mode))
        rc = hpl__fail(HPL_ERROR_INVALID_ARGUMENT,
                       "'%s' is not a regular file: only the process's first traced context writes it (no numbered "
                       "file is made beside it)",
                       value);
    else if (!(path = numbered(value, n)))
        rc = hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    else
        rc = trace_start(ctx, path, "HPLVK_TRACE");
    if (rc != HPL_OK)
        hpl__log(&ctx->logger, HPL_LOG_WARNING, "HPLVK_TRACE: %s; no trace is recorded", hpl_last_error());
    hpl__free(path);
}

void hpl__trace_at_destroy(hpl_context *ctx)
{
    if (ctx->trace && trace_finish(ctx) != HPL_OK)
        hpl__log(&ctx->logger, HPL_LOG_WARNING, "hpl_context_destroy: the trace was not written completely: %s",
                 hpl_last_error());
    hpl__events_destroy(ctx);
}
