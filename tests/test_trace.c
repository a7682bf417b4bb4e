/* Traces (hpl_trace_begin/end, HPLVK_TRACE): a halo stencil split over the
 * devices of "cpu:3" and a host round trip are traced to a file, which a
 * small JSON parser below loads. The trace is then checked for consistency
 * against the test's own model of the run: tracks named for every device
 * and queue, each kernel on its device's track with the domain box the
 * split gives it, copies whose bytes add up to hpl_stats_get's, no kernel
 * starting before a copy that brings it data has ended, staging copies in
 * order across devices (within the clocks' stated error), host waits ending
 * after the work they waited for, and one queue's events never overlapping.
 * Then the error paths and HPLVK_TRACE. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a small JSON parser --------------------------------------------------- */

typedef enum jtype { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } jtype;

typedef struct jnode {
    jtype type;
    double number;
    bool boolean;
    char *string;          /* J_STRING: UTF-8, NUL-terminated */
    struct jnode **items;  /* J_ARRAY, J_OBJECT (values) */
    char **keys;           /* J_OBJECT */
    int count;
} jnode;

typedef struct jparser {
    const char *p, *end;
    const char *error;
} jparser;

static void jfree(jnode *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->count; i++) {
        jfree(n->items[i]);
        if (n->keys)
            free(n->keys[i]);
    }
    free(n->items);
    free(n->keys);
    free(n->string);
    free(n);
}

static void skip_space(jparser *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

static jnode *jvalue(jparser *j, int depth);

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d = isdigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static void put_utf8(char *out, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xc0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xe0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*n)++] = (char)(0xf0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

/* A string after its opening quote: escapes decoded, raw control
 * characters refused. */
static char *jstring(jparser *j)
{
    char *out = malloc((size_t)(j->end - j->p) + 1);
    size_t n = 0;
    while (out && j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20) {
            j->error = "raw control character in a string";
            break;
        }
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        if (j->p >= j->end)
            break;
        char e = *j->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            out[n++] = map[simple - "\"\\/bfnrt"];
        } else if (e == 'u' && j->end - j->p >= 4 && hex4(j->p) >= 0) {
            unsigned cp = (unsigned)hex4(j->p);
            j->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' &&
                hex4(j->p + 2) >= 0xdc00 && hex4(j->p + 2) < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + ((unsigned)hex4(j->p + 2) - 0xdc00);
                j->p += 6;
            }
            put_utf8(out, &n, cp);
        } else {
            j->error = "bad escape in a string";
            break;
        }
    }
    if (!j->error && (j->p >= j->end || *j->p != '"'))
        j->error = "unterminated string";
    if (j->error || !out) {
        free(out);
        return NULL;
    }
    j->p++;
    out[n] = 0;
    return out;
}

static bool jappend(jnode *n, jnode *item, char *key)
{
    jnode **items = realloc(n->items, (size_t)(n->count + 1) * sizeof *items);
    if (!items)
        return false;
    n->items = items;
    if (n->type == J_OBJECT) {
        char **keys = realloc(n->keys, (size_t)(n->count + 1) * sizeof *keys);
        if (!keys)
            return false;
        n->keys = keys;
        n->keys[n->count] = key;
    }
    n->items[n->count++] = item;
    return true;
}

static jnode *jcontainer(jparser *j, jtype type, int depth)
{
    jnode *n = calloc(1, sizeof *n);
    n->type = type;
    char close = type == J_ARRAY ? ']' : '}';
    skip_space(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return n;
    }
    for (;;) {
        char *key = NULL;
        skip_space(j);
        if (type == J_OBJECT) {
            if (j->p >= j->end || *j->p != '"') {
                j->error = "expected a key";
                break;
            }
            j->p++;
            key = jstring(j);
            skip_space(j);
            if (!key || j->p >= j->end || *j->p != ':') {
                j->error = j->error ? j->error : "expected ':'";
                free(key);
                break;
            }
            j->p++;
        }
        jnode *item = jvalue(j, depth + 1);
        if (!item || !jappend(n, item, key)) {
            jfree(item);
            free(key);
            j->error = j->error ? j->error : "out of memory";
            break;
        }
        skip_space(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return n;
        }
        j->error = "expected ',' or a closing bracket";
        break;
    }
    jfree(n);
    return NULL;
}

static jnode *jvalue(jparser *j, int depth)
{
    skip_space(j);
    if (depth > 64 || j->p >= j->end) {
        j->error = depth > 64 ? "nested too deeply" : "unexpected end";
        return NULL;
    }
    char c = *j->p;
    if (c == '{' || c == '[') {
        j->p++;
        return jcontainer(j, c == '{' ? J_OBJECT : J_ARRAY, depth);
    }
    jnode *n = calloc(1, sizeof *n);
    if (c == '"') {
        j->p++;
        n->type = J_STRING;
        n->string = jstring(j);
        if (!n->string) {
            free(n);
            return NULL;
        }
        return n;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(words[i]);
        if ((size_t)(j->end - j->p) >= len && !strncmp(j->p, words[i], len)) {
            j->p += len;
            n->type = i == 2 ? J_NULL : J_BOOL;
            n->boolean = i == 0;
            return n;
        }
    }
    /* Numbers: JSON's grammar, checked before strtod reads them. */
    const char *s = j->p;
    if (s < j->end && *s == '-')
        s++;
    bool ok = s < j->end && isdigit((unsigned char)*s) && !(*s == '0' && s + 1 < j->end && isdigit((unsigned char)s[1]));
    while (s < j->end && isdigit((unsigned char)*s))
        s++;
    if (ok && s < j->end && *s == '.') {
        s++;
        ok = s < j->end && isdigit((unsigned char)*s);
        while (s < j->end && isdigit((unsigned char)*s))
            s++;
    }
    if (ok && s < j->end && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < j->end && (*s == '+' || *s == '-'))
            s++;
        ok = s < j->end && isdigit((unsigned char)*s);
        while (s < j->end && isdigit((unsigned char)*s))
            s++;
    }
    if (!ok) {
        j->error = "unexpected character";
        free(n);
        return NULL;
    }
    n->type = J_NUMBER;
    n->number = strtod(j->p, NULL);
    j->p = s;
    return n;
}

/* The whole text as one value, or NULL (the reason in *error). */
static jnode *jparse(const char *text, size_t size, const char **error, size_t *at)
{
    jparser j = {.p = text, .end = text + size};
    jnode *n = jvalue(&j, 0);
    skip_space(&j);
    if (n && j.p != j.end) {
        j.error = "text after the value";
        jfree(n);
        n = NULL;
    }
    *error = j.error ? j.error : "";
    *at = (size_t)(j.p - text);
    return n;
}

static const jnode *jget(const jnode *n, const char *key)
{
    for (int i = 0; n && n->type == J_OBJECT && i < n->count; i++)
        if (!strcmp(n->keys[i], key))
            return n->items[i];
    return NULL;
}

static const char *jstr(const jnode *n, const char *key)
{
    const jnode *v = jget(n, key);
    return v && v->type == J_STRING ? v->string : NULL;
}

static bool jnum(const jnode *n, const char *key, double *out)
{
    const jnode *v = jget(n, key);
    if (!v || v->type != J_NUMBER)
        return false;
    *out = v->number;
    return true;
}

static bool ju64s(const jnode *n, const char *key, uint64_t *out, int count)
{
    const jnode *v = jget(n, key);
    if (!v || v->type != J_ARRAY || v->count != count)
        return false;
    for (int i = 0; i < count; i++) {
        if (v->items[i]->type != J_NUMBER || v->items[i]->number < 0)
            return false;
        out[i] = (uint64_t)v->items[i]->number;
    }
    return true;
}

/* ---- the trace, loaded ----------------------------------------------------------- */

#define MAX_BOXES 8

typedef struct box {
    uint64_t first[3], last[3]; /* inclusive */
} box;

typedef struct event {
    char cat;         /* 'k', 'c', 'w' */
    const char *name; /* into the tree */
    int pid, tid;
    int64_t begin, end; /* ns from the trace's origin */
    uint64_t seq, value;
    int device; /* -1: host */
    bool lane;  /* on the device's transfer lane (its own timeline): args.queue "transfer" */
    bool gpu;
    const jnode *args;
    /* copies */
    const char *array, *direction, *src, *dst;
    uint64_t bytes;
    int boxes, kernel_boxes, region_count;
    box region[MAX_BOXES], bounds;
} event;

typedef struct trace {
    jnode *root;
    event *ev;
    int count;
    int devices;
    int pid[16];
    bool gpu_timestamps[16];
    int64_t clock_error[16];
} trace;

static int64_t ns_of(double us)
{
    return llround(us * 1000.0);
}

static bool parse_box(const jnode *n, box *b)
{
    return ju64s(n, "first", b->first, 3) && ju64s(n, "last", b->last, 3);
}

static bool load_copy(event *e)
{
    e->array = jstr(e->args, "array");
    e->direction = jstr(e->args, "direction");
    e->src = jstr(e->args, "src");
    e->dst = jstr(e->args, "dst");
    double bytes = -1, boxes = -1, kernel_boxes = -1;
    const jnode *region = jget(e->args, "region");
    bool ok = e->array && e->direction && e->src && e->dst && jnum(e->args, "bytes", &bytes) && bytes >= 0 &&
              jnum(e->args, "boxes", &boxes) && boxes >= 1 && jnum(e->args, "kernel_boxes", &kernel_boxes) &&
              kernel_boxes >= 0 && kernel_boxes <= boxes && parse_box(jget(e->args, "bounds"), &e->bounds) &&
              region && region->type == J_ARRAY && region->count == (boxes < MAX_BOXES ? (int)boxes : MAX_BOXES);
    for (int i = 0; ok && i < region->count; i++)
        ok = parse_box(region->items[i], &e->region[i]);
    e->bytes = (uint64_t)bytes;
    e->boxes = (int)boxes;
    e->kernel_boxes = (int)kernel_boxes;
    e->region_count = ok ? region->count : 0;
    return ok;
}

/* One "X" event; false (and a failed check) when a field is missing. */
static bool load_event(const jnode *n, event *e)
{
    const char *cat = jstr(n, "cat");
    double pid = -1, tid = -1, ts = -1, dur = -1, seq = -1;
    e->name = jstr(n, "name");
    e->args = jget(n, "args");
    bool ok = cat && e->name && jnum(n, "pid", &pid) && jnum(n, "tid", &tid) && jnum(n, "ts", &ts) &&
              jnum(n, "dur", &dur) && e->args && jnum(e->args, "seq", &seq) && jstr(e->args, "clock");
    CHECK(ok, "an X event lacks cat, name, pid, tid, ts, dur, args.seq or args.clock");
    if (!ok)
        return false;
    CHECK(ts >= 0 && dur >= 0, "event %s (seq %.0f): ts %f dur %f", e->name, seq, ts, dur);
    e->cat = !strcmp(cat, "kernel") ? 'k' : !strcmp(cat, "copy") ? 'c' : !strcmp(cat, "wait") ? 'w' : '?';
    CHECK(e->cat != '?', "event %s has cat \"%s\"", e->name, cat);
    e->pid = (int)pid;
    e->tid = (int)tid;
    e->begin = ns_of(ts);
    e->end = e->begin + ns_of(dur);
    e->seq = (uint64_t)seq;
    e->gpu = !strcmp(jstr(e->args, "clock"), "gpu");
    e->device = -1;
    if (e->cat != 'w') {
        double device = -1, value = -1;
        const char *queue = jstr(e->args, "queue");
        ok = jnum(e->args, "device", &device) && jnum(e->args, "value", &value) && value >= 1 && queue &&
             (!strcmp(queue, "compute") || !strcmp(queue, "transfer"));
        CHECK(ok, "device event %s (seq %.0f) lacks args.device, args.value or args.queue", e->name, seq);
        e->device = (int)device;
        e->value = (uint64_t)value;
        e->lane = ok && !strcmp(queue, "transfer");
    }
    if (ok && e->cat == 'c') {
        ok = load_copy(e);
        CHECK(ok, "copy seq %.0f lacks array, bytes, boxes, kernel_boxes, direction, src, dst, bounds or region",
              seq);
        /* The lane's queue runs no kernels. */
        CHECK(!ok || !e->lane || e->kernel_boxes == 0, "copy seq %.0f on the transfer lane has %d kernel boxes", seq,
              e->kernel_boxes);
    }
    return ok;
}

static bool load_devices(trace *t)
{
    const jnode *devices = jget(jget(t->root, "otherData"), "devices");
    bool ok = devices && devices->type == J_ARRAY && devices->count <= 16;
    CHECK(ok, "otherData.devices is missing");
    for (int d = 0; ok && d < devices->count; d++) {
        const jnode *x = devices->items[d];
        double index = -1, pid = -1, error = -1;
        const jnode *gpu = jget(x, "gpu_timestamps");
        ok = jnum(x, "device", &index) && index == d && jnum(x, "pid", &pid) && jnum(x, "clock_error_ns", &error) &&
             error >= 0 && gpu && gpu->type == J_BOOL;
        CHECK(ok, "otherData.devices[%d] is incomplete", d);
        if (ok) {
            t->pid[d] = (int)pid;
            t->gpu_timestamps[d] = gpu->boolean;
            t->clock_error[d] = (int64_t)error;
        }
    }
    t->devices = ok ? devices->count : 0;
    return ok;
}

static bool trace_load(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    size_t size = 0;
    char *text = th_read_file(path, &size);
    if (!CHECK(text != NULL, "cannot read the trace %s", path))
        return false;
    const char *error;
    size_t at;
    t->root = jparse(text, size, &error, &at);
    CHECK(t->root != NULL, "%s does not parse: %s at byte %zu of %zu", path, error, at, size);
    free(text);
    const jnode *events = jget(t->root, "traceEvents");
    if (!t->root || !CHECK(events && events->type == J_ARRAY, "%s has no traceEvents array", path) ||
        !load_devices(t))
        return false;
    t->ev = calloc((size_t)events->count + 1, sizeof *t->ev);
    for (int i = 0; i < events->count; i++) {
        const char *ph = jstr(events->items[i], "ph");
        CHECK(ph && (!strcmp(ph, "X") || !strcmp(ph, "M")), "traceEvents[%d] has ph \"%s\"", i, ph ? ph : "(none)");
        if (ph && !strcmp(ph, "X") && load_event(events->items[i], &t->ev[t->count]))
            t->count++;
    }
    return true;
}

static void trace_free(trace *t)
{
    jfree(t->root);
    free(t->ev);
}

/* The name a metadata event gives a process (tid < 0) or thread. */
static const char *track_name(const trace *t, int pid, int tid)
{
    const jnode *events = jget(t->root, "traceEvents");
    for (int i = 0; i < events->count; i++) {
        const jnode *n = events->items[i];
        const char *ph = jstr(n, "ph"), *name = jstr(n, "name");
        double p = -1, q = -1;
        if (!ph || strcmp(ph, "M") || !name || !jnum(n, "pid", &p) || p != pid)
            continue;
        if ((tid < 0 && !strcmp(name, "process_name")) ||
            (tid >= 0 && !strcmp(name, "thread_name") && jnum(n, "tid", &q) && q == tid))
            return jstr(jget(n, "args"), "name");
    }
    return NULL;
}

static int count_cat(const trace *t, char cat)
{
    int n = 0;
    for (int i = 0; i < t->count; i++)
        n += t->ev[i].cat == cat;
    return n;
}

static bool list_has(const jnode *list, const char *name)
{
    for (int i = 0; list && list->type == J_ARRAY && i < list->count; i++)
        if (list->items[i]->type == J_STRING && !strcmp(list->items[i]->string, name))
            return true;
    return false;
}

/* ---- checks of a trace ------------------------------------------------------------ */

/* Tracks: a process per device named for it, its compute queue, the host. */
static void check_tracks(const trace *t, const hpl_device_info *info, int devices)
{
    CHECK(t->devices == devices, "otherData lists %d devices, the context has %d", t->devices, devices);
    const char *host = track_name(t, 1, -1);
    CHECK(host && !strcmp(host, "host"), "process 1 is named \"%s\", want \"host\"", host ? host : "(none)");
    for (int d = 0; d < t->devices && d < devices; d++) {
        char want[320];
        snprintf(want, sizeof want, "device %d (%s)", d, info[d].name);
        const char *name = track_name(t, t->pid[d], -1), *queue = track_name(t, t->pid[d], 1);
        CHECK(name && !strcmp(name, want), "device %d's process is named \"%s\", want \"%s\"", d, name ? name : "(none)",
              want);
        CHECK(queue && !strcmp(queue, "compute queue"), "device %d's thread 1 is named \"%s\"", d,
              queue ? queue : "(none)");
        for (int e = 0; e < d; e++)
            CHECK(t->pid[e] != t->pid[d] && t->pid[d] != 1, "devices %d and %d (or the host) share pid %d", e, d,
                  t->pid[d]);
    }
    for (int i = 0; i < t->count; i++) {
        const event *e = &t->ev[i];
        CHECK(track_name(t, e->pid, -1) && track_name(t, e->pid, e->tid), "event seq %llu on unnamed track %d/%d",
              (unsigned long long)e->seq, e->pid, e->tid);
        if (e->cat == 'w') {
            CHECK(e->pid == 1, "wait seq %llu is on process %d, not the host's", (unsigned long long)e->seq, e->pid);
        } else {
            bool known = e->device >= 0 && e->device < t->devices;
            /* Track 1: the compute queue; 2: the transfer lane, which takes
             * copies between the host and the device (lib/engine/lane.c). */
            bool host_copy = e->cat == 'c' && e->direction &&
                             (!strcmp(e->direction, "host to device") || !strcmp(e->direction, "device to host"));
            CHECK(known && e->pid == t->pid[e->device] && e->tid == (e->lane ? 2 : 1) && (!e->lane || host_copy),
                  "%s seq %llu of device %d (%s) is on track %d/%d", e->name, (unsigned long long)e->seq, e->device,
                  e->lane ? "transfer" : "compute", e->pid, e->tid);
            CHECK(!known || !t->gpu_timestamps[e->device] || e->gpu,
                  "%s seq %llu has host times on device %d, which has timestamps", e->name, (unsigned long long)e->seq,
                  e->device);
        }
        CHECK(i == 0 || e->seq > t->ev[i - 1].seq, "seq %llu follows %llu", (unsigned long long)e->seq,
              (unsigned long long)(i ? t->ev[i - 1].seq : 0));
    }
}

/* One queue's events: values never decrease and intervals never overlap,
 * in submission (record) order. A device has a compute queue (track 1)
 * and may have a transfer lane (track 2). */
static void check_queues(const trace *t)
{
    for (int q = 0; q < 2 * t->devices; q++) {
        int d = q / 2, tid = 1 + q % 2;
        const event *prev = NULL;
        for (int i = 0; i < t->count; i++) {
            const event *e = &t->ev[i];
            if (e->device != d || e->tid != tid)
                continue;
            if (prev) {
                CHECK(e->value >= prev->value, "device %d: seq %llu has value %llu after value %llu", d,
                      (unsigned long long)e->seq, (unsigned long long)e->value, (unsigned long long)prev->value);
                CHECK(e->begin >= prev->end, "device %d: seq %llu begins at %lld ns, before seq %llu ends (%lld)", d,
                      (unsigned long long)e->seq, (long long)e->begin, (unsigned long long)prev->seq,
                      (long long)prev->end);
            }
            prev = e;
        }
    }
}

static bool boxes_meet(const box *a, const box *b)
{
    for (int d = 0; d < 3; d++)
        if (a->last[d] < b->first[d] || b->last[d] < a->first[d])
            return false;
    return true;
}

static bool regions_meet(const event *a, const event *b)
{
    const box *ra = a->boxes <= MAX_BOXES ? a->region : &a->bounds;
    const box *rb = b->boxes <= MAX_BOXES ? b->region : &b->bounds;
    int na = a->boxes <= MAX_BOXES ? a->region_count : 1, nb = b->boxes <= MAX_BOXES ? b->region_count : 1;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (boxes_meet(&ra[i], &rb[j]))
                return true;
    return false;
}

static uint64_t box_volume(const box *b)
{
    uint64_t v = 1;
    for (int d = 0; d < 3; d++)
        v *= b->last[d] - b->first[d] + 1;
    return v;
}

/* Copies: ends named as the direction says, on the right track, bytes of
 * their region; kernels never start before a copy into their device of an
 * array they read has ended; a copy from the host storage never starts
 * before a copy into it of the same elements has ended (another device's:
 * within the two clocks' errors). Orders are checked between device-timed
 * events (check_tracks requires them on devices with timestamps). Returns
 * the kernel/copy pairs checked. */
static int check_copies(const trace *t, size_t esize)
{
    int pairs = 0;
    for (int i = 0; i < t->count; i++) {
        const event *c = &t->ev[i];
        if (c->cat != 'c')
            continue;
        char self[32];
        snprintf(self, sizeof self, "device %d", c->device);
        bool host_host = !strcmp(c->direction, "host to host"); /* zero-copy devices */
        const char *want_src = host_host || !strcmp(c->direction, "host to device") ? "host" : self;
        const char *want_dst = host_host || !strcmp(c->direction, "device to host") ? "host" : self;
        CHECK(!strcmp(c->src, want_src) && !strcmp(c->dst, want_dst),
              "copy seq %llu (%s) on device %d goes from %s to %s", (unsigned long long)c->seq, c->direction, c->device,
              c->src, c->dst);
        uint64_t volume = 0;
        for (int b = 0; b < c->region_count; b++)
            volume += box_volume(&c->region[b]);
        CHECK(c->boxes > MAX_BOXES || c->bytes == volume * esize, "copy seq %llu: %llu bytes for %llu elements",
              (unsigned long long)c->seq, (unsigned long long)c->bytes, (unsigned long long)volume);
    }
    for (int i = 0; i < t->count; i++) {
        const event *k = &t->ev[i];
        for (int j = 0; j < i; j++) {
            const event *c = &t->ev[j];
            if (c->cat != 'c' || !c->gpu || !k->gpu)
                continue; /* host times (no timestamps) say nothing of the order */
            char into[32];
            snprintf(into, sizeof into, "device %d", k->device);
            if (k->cat == 'k' && !strcmp(c->dst, into) && list_has(jget(k->args, "reads"), c->array)) {
                pairs++;
                CHECK(c->end <= k->begin, "kernel %s seq %llu on device %d begins at %lld ns, before copy seq %llu of "
                      "'%s' into it ends (%lld)", k->name, (unsigned long long)k->seq, k->device, (long long)k->begin,
                      (unsigned long long)c->seq, c->array, (long long)c->end);
            }
            if (k->cat == 'c' && !strcmp(k->src, "host") && !strcmp(c->dst, "host") && !strcmp(k->array, c->array) &&
                regions_meet(c, k)) {
                int64_t tolerance = t->clock_error[c->device] + t->clock_error[k->device] + 1;
                pairs++;
                CHECK(c->end <= k->begin + tolerance, "copy seq %llu of '%s' from the host (device %d) begins at %lld "
                      "ns, before copy seq %llu into the host (device %d) ends (%lld)", (unsigned long long)k->seq,
                      k->array, k->device, (long long)k->begin, (unsigned long long)c->seq, c->device,
                      (long long)c->end);
            }
        }
    }
    return pairs;
}

/* A wait ends after every event of the points it waited for. */
static void check_waits(const trace *t)
{
    for (int i = 0; i < t->count; i++) {
        const event *w = &t->ev[i];
        if (w->cat != 'w')
            continue;
        const jnode *points = jget(w->args, "points");
        if (!CHECK(points && points->type == J_ARRAY, "wait seq %llu has no points", (unsigned long long)w->seq))
            continue;
        for (int p = 0; p < points->count; p++) {
            double device = -1, value = -1;
            const char *queue = jstr(points->items[p], "queue");
            if (!CHECK(jnum(points->items[p], "device", &device) && jnum(points->items[p], "value", &value) &&
                           device >= 0 && device < t->devices && queue &&
                           (!strcmp(queue, "compute") || !strcmp(queue, "transfer")),
                       "wait seq %llu: point %d is malformed", (unsigned long long)w->seq, p))
                continue;
            bool lane = !strcmp(queue, "transfer"); /* a timeline of its own */
            for (int j = 0; j < t->count; j++) {
                const event *e = &t->ev[j];
                if (e->gpu && e->device == (int)device && e->lane == lane && e->value <= (uint64_t)value &&
                    e->seq < w->seq)
                    CHECK(e->end <= w->end + t->clock_error[e->device] + 1,
                          "wait seq %llu for device %d value %.0f ends at %lld ns, before seq %llu (value %llu) ends "
                          "(%lld)", (unsigned long long)w->seq, (int)device, value, (long long)w->end,
                          (unsigned long long)e->seq, (unsigned long long)e->value, (long long)e->end);
            }
        }
    }
}

/* Copy bytes and counts per device and direction, and boxes moved by the
 * copy kernel, equal hpl_stats_get's. */
static void check_stats(const trace *t, const hpl_stats *st)
{
    for (int d = 0; d < t->devices; d++) {
        uint64_t kernel_boxes = 0;
        for (int i = 0; i < t->count; i++)
            if (t->ev[i].cat == 'c' && t->ev[i].device == d)
                kernel_boxes += (uint64_t)t->ev[i].kernel_boxes;
        CHECK(kernel_boxes == st->device[d].copy_kernels, "device %d: the trace has %llu copy-kernel boxes, hpl_stats_get %llu",
              d, (unsigned long long)kernel_boxes, (unsigned long long)st->device[d].copy_kernels);
        uint64_t bytes[3] = {0, 0, 0}, count[3] = {0, 0, 0};
        static const char *const dirs[3] = {"host to device", "device to host", "within device"};
        for (int i = 0; i < t->count; i++)
            for (int k = 0; k < 3; k++)
                if (t->ev[i].cat == 'c' && t->ev[i].device == d && !strcmp(t->ev[i].direction, dirs[k])) {
                    bytes[k] += t->ev[i].bytes;
                    count[k]++;
                }
        const hpl_device_stats *s = &st->device[d];
        uint64_t want_bytes[3] = {s->to_device_bytes, s->to_host_bytes, s->local_bytes};
        uint64_t want_count[3] = {s->to_device_count, s->to_host_count, s->local_count};
        for (int k = 0; k < 3; k++)
            CHECK(bytes[k] == want_bytes[k] && count[k] == want_count[k],
                  "device %d, %s: the trace has %llu bytes in %llu copies, hpl_stats_get %llu in %llu", d, dirs[k],
                  (unsigned long long)bytes[k], (unsigned long long)count[k], (unsigned long long)want_bytes[k],
                  (unsigned long long)want_count[k]);
    }
}

/* ---- the traced run ------------------------------------------------------------------ */

#define ROWS 37
#define COLS 29
#define STEPS 4
#define N 1000

/* Names with a quote, a backslash, a tab and a non-ASCII letter: the trace
 * must escape them and give them back unchanged. */
static const char *const stencil_name = "stencil 5-point \xce\xbb"; /* λ */
static const char *const in_name = "grid \"in\" \xce\xbb"; /* λ */
static const char *const out_name = "grid\tout";

static const char *stencil_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 2) src; hpl_out(uint, 2) dst; };\n"
    "void main() {\n"
    "    uint r = hpl_global_id.x, c = hpl_global_id.y;\n"
    "    if (r == 0u || c == 0u || r == src.dims.x - 1u || c == src.dims.y - 1u) { hpl_at2(dst, r, c) = hpl_at2(src, r, c); return; }\n"
    "    hpl_at2(dst, r, c) = hpl_at2(src, r - 1u, c) + hpl_at2(src, r + 1u, c) + 3u * hpl_at2(src, r, c - 1u)\n"
    "                       + 5u * hpl_at2(src, r, c + 1u) + 7u * hpl_at2(src, r, c);\n"
    "}\n";

/* y = x * k + 1, then `spin` steps of an LCG: long enough on a CPU device
 * that the host read after it usually finds it running, and waits. */
static const char *scale_src =
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_in(uint, 1) x; hpl_out(uint, 1) y; uint k; uint spin; };\n"
    "void main() {\n"
    "    uint i = hpl_global_id.x, v = hpl_at(x, i) * k + 1u;\n"
    "    for (uint j = 0u; j < spin; j++) v = v * 1664525u + 1013904223u;\n"
    "    hpl_at(y, i) = v;\n"
    "}\n";

#define SPIN 20000u

static uint32_t scale_model(uint32_t x, uint32_t k)
{
    uint32_t v = x * k + 1u;
    for (uint32_t j = 0; j < SPIN; j++)
        v = v * 1664525u + 1013904223u;
    return v;
}

static void host_step(const uint32_t *in, uint32_t *out)
{
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            const uint32_t *s = &in[r * COLS + c];
            bool border = r == 0 || c == 0 || r == ROWS - 1 || c == COLS - 1;
            out[r * COLS + c] = border ? *s : s[-COLS] + s[COLS] + 3u * s[-1] + 5u * s[1] + 7u * *s;
        }
}

static hpl_kernel named_kernel(hpl_context *ctx, const char *src, const char *name)
{
    hpl_kernel k = {0};
    CHECK_OK(hpl_kernel_create(ctx, &(hpl_kernel_desc){.source = {.glsl = src, .name = name}}, &k));
    return k;
}

static hpl_array named_array(hpl_context *ctx, const char *name, uint64_t d0, uint64_t d1)
{
    hpl_array a = {0};
    CHECK_OK(hpl_array_create(ctx, &(hpl_array_desc){.type = HPL_UINT32, .dims = {d0, d1}, .name = name}, &a));
    return a;
}

typedef struct second_thread {
    hpl_context *ctx;
    hpl_kernel scale;
    hpl_array y, z;
    int device;
    uint32_t want0;
} second_thread;

/* z = scale(y) and z read, on a thread of its own. */
static void *run_second(void *arg)
{
    second_thread *s = arg;
    hpl_launch one = {.device = s->device};
    CHECK_OK(hpl_eval(s->ctx, s->scale, &one, HPL_ARGS(hpl_arr(s->y), hpl_arr(s->z), hpl_u32(5), hpl_u32(SPIN))));
    const uint32_t *p = th_access(s->ctx, s->z, HPL_READ);
    CHECK(p && p[0] == s->want0, "the second thread read %u, want %u", p ? p[0] : 0, s->want0);
    return NULL;
}

/* The stencil on every device, its result read, then x -> y on one device
 * and y read back, and z = scale(y) made and read by a second thread. */
/* Columns 3-4 of g[0] assigned to columns 10-11 of g[1] on one device: a
 * box of ROWS short runs, which HPLVK_STRIDED_COPY=kernel moves by the copy
 * kernel (args.kernel_boxes; check_stats compares them with hpl_stats). */
static void column_assign(hpl_context *ctx, const hpl_array g[2], int device)
{
    const uint32_t *a = th_access(ctx, g[0], HPL_READ);
    uint32_t want[ROWS][2];
    for (int i = 0; a && i < ROWS; i++)
        for (int j = 0; j < 2; j++)
            want[i][j] = a[i * COLS + 3 + j];
    hpl_array from, to;
    CHECK_OK(hpl_subarray(ctx, g[0], HPL_RANGES(HPL_ALL, {3, 4}), &from));
    CHECK_OK(hpl_subarray(ctx, g[1], HPL_RANGES(HPL_ALL, {10, 11}), &to));
    CHECK_OK(hpl_array_assign(ctx, to, from, device));
    const uint32_t *b = th_access(ctx, g[1], HPL_READ);
    int bad = 0;
    for (int i = 0; a && b && i < ROWS; i++)
        for (int j = 0; j < 2; j++)
            bad += b[i * COLS + 10 + j] != want[i][j];
    CHECK(a && b && bad == 0, "columns 10-11 of g[1] differ from columns 3-4 of g[0] in %d elements", bad);
}

static void run_traced(hpl_context *ctx, int devices, int single)
{
    hpl_kernel stencil = named_kernel(ctx, stencil_src, stencil_name);
    hpl_kernel scale = named_kernel(ctx, scale_src, "scale");
    hpl_array g[2] = {named_array(ctx, in_name, ROWS, COLS), named_array(ctx, out_name, ROWS, COLS)};
    uint32_t *model = malloc(sizeof(uint32_t) * ROWS * COLS), *next = malloc(sizeof(uint32_t) * ROWS * COLS);
    uint32_t *p = th_access(ctx, g[0], HPL_WRITE);
    for (int i = 0; p && i < ROWS * COLS; i++)
        p[i] = model[i] = (uint32_t)(i * 2654435761u);
    hpl_launch split = {.device_count = devices};
    for (int d = 0; d < devices; d++)
        split.devices[d] = d;
    for (int s = 0; s < STEPS; s++) {
        CHECK_OK(hpl_eval(ctx, stencil, &split, HPL_ARGS(hpl_part1(g[s % 2], 1), hpl_part1(g[(s + 1) % 2], 1))));
        host_step(model, next);
        memcpy(model, next, sizeof(uint32_t) * ROWS * COLS);
    }
    const uint32_t *q = th_access(ctx, g[STEPS % 2], HPL_READ);
    int bad = 0;
    for (int i = 0; q && i < ROWS * COLS; i++)
        bad += q[i] != model[i];
    CHECK(q && bad == 0, "the stencil's result differs from the host's in %d cells", bad);

    hpl_array x = named_array(ctx, "x", N, 0), y = named_array(ctx, "y", N, 0), z = named_array(ctx, "z", N, 0);
    p = th_access(ctx, x, HPL_WRITE);
    for (int i = 0; p && i < N; i++)
        p[i] = (uint32_t)i;
    hpl_launch one = {.device = single};
    CHECK_OK(hpl_eval(ctx, scale, &one, HPL_ARGS(hpl_arr(x), hpl_arr(y), hpl_u32(3), hpl_u32(SPIN))));
    q = th_access(ctx, y, HPL_READ);
    bad = 0;
    for (int i = 0; q && i < N; i++)
        bad += q[i] != scale_model((uint32_t)i, 3);
    CHECK(q && bad == 0, "y differs from the model in %d elements", bad);
    uint32_t y0 = q ? q[0] : 0;
    /* An assignment on the device: one copy within it, named for w. */
    hpl_array w = named_array(ctx, "w", N, 0);
    CHECK_OK(hpl_array_assign(ctx, w, y, single));
    q = th_access(ctx, w, HPL_READ);
    CHECK(q && q[0] == y0 && q[N - 1] == scale_model(N - 1, 3), "w = y gave w[0] = %u, want %u", q ? q[0] : 0, y0);
    column_assign(ctx, g, single);
    second_thread second = {ctx, scale, y, z, single, scale_model(y0, 5)};
    pthread_t thread;
    if (CHECK(pthread_create(&thread, NULL, run_second, &second) == 0, "pthread_create"))
        pthread_join(thread, NULL);
    free(model);
    free(next);
}

/* The model's part of `rows` for device d of n: parts differ by at most one,
 * the larger first. */
static void part_of(uint64_t rows, int n, int d, uint64_t *first, uint64_t *count)
{
    uint64_t base = rows / (uint64_t)n, extra = rows % (uint64_t)n;
    *count = base + ((uint64_t)d < extra);
    *first = (uint64_t)d * base + ((uint64_t)d < extra ? (uint64_t)d : extra);
}

static void check_kernels(const trace *t, int devices, int single)
{
    int stencils[16] = {0}, scales = 0;
    for (int i = 0; i < t->count; i++) {
        const event *k = &t->ev[i];
        if (k->cat != 'k')
            continue;
        uint64_t offset[3] = {0}, size[3] = {0}, global[3] = {0};
        bool ok = ju64s(k->args, "offset", offset, 3) && ju64s(k->args, "size", size, 3) &&
                  ju64s(k->args, "global", global, 3) && jget(k->args, "reads") && jget(k->args, "writes");
        if (!CHECK(ok, "kernel seq %llu lacks offset, size, global, reads or writes", (unsigned long long)k->seq))
            continue;
        if (!strcmp(k->name, stencil_name)) {
            uint64_t first, count;
            part_of(ROWS, devices, k->device, &first, &count);
            stencils[k->device]++;
            CHECK(offset[0] == first && offset[1] == 0 && size[0] == count && size[1] == COLS && size[2] == 1 &&
                      global[0] == ROWS && global[1] == COLS && global[2] == 1,
                  "stencil on device %d: offset {%llu,%llu} size {%llu,%llu,%llu} global {%llu,%llu}, want rows %llu+%llu",
                  k->device, (unsigned long long)offset[0], (unsigned long long)offset[1], (unsigned long long)size[0],
                  (unsigned long long)size[1], (unsigned long long)size[2], (unsigned long long)global[0],
                  (unsigned long long)global[1], (unsigned long long)first, (unsigned long long)count);
            bool in_first = (stencils[k->device] - 1) % 2 == 0;
            const char *src = in_first ? in_name : out_name, *dst = in_first ? out_name : in_name;
            CHECK(list_has(jget(k->args, "reads"), src) && list_has(jget(k->args, "writes"), dst),
                  "stencil seq %llu does not read \"%s\" and write \"%s\"", (unsigned long long)k->seq, src, dst);
        } else if (!strcmp(k->name, "scale")) {
            scales++;
            CHECK(k->device == single && offset[0] == 0 && size[0] == N && global[0] == N,
                  "scale on device %d over %llu+%llu of %llu", k->device, (unsigned long long)offset[0],
                  (unsigned long long)size[0], (unsigned long long)global[0]);
        } else {
            CHECK(false, "a kernel named \"%s\" that the run did not eval", k->name);
        }
    }
    for (int d = 0; d < devices; d++)
        CHECK(stencils[d] == STEPS, "device %d ran %d stencil steps, want %d", d, stencils[d], STEPS);
    CHECK(scales == 2, "%d scale kernels, want 2", scales);
}

/* The round trip in the model: x goes to the device whole before the first
 * scale, y comes back whole after it; a wait for it, if the host found it
 * running (returned), ends after it. */
static bool check_round_trip(const trace *t, int single, bool zero_copy)
{
    const event *k = NULL, *in = NULL, *out = NULL, *wait = NULL;
    for (int i = 0; i < t->count && !k; i++)
        if (t->ev[i].cat == 'k' && !strcmp(t->ev[i].name, "scale"))
            k = &t->ev[i];
    if (!CHECK(k != NULL, "no scale kernel") || zero_copy)
        return false;
    for (int i = 0; i < t->count; i++) {
        const event *e = &t->ev[i];
        if (e->cat == 'c' && e->device == single && !strcmp(e->array, "x") && !strcmp(e->direction, "host to device") &&
            e->seq < k->seq)
            in = e;
        if (e->cat == 'c' && e->device == single && !strcmp(e->array, "y") && !strcmp(e->direction, "device to host") &&
            e->seq > k->seq && !out)
            out = e;
    }
    CHECK(in && in->bytes == N * sizeof(uint32_t), "x was not copied whole to device %d before the kernel", single);
    const event *assign = NULL;
    for (int i = 0; i < t->count && !assign; i++)
        if (t->ev[i].cat == 'c' && !strcmp(t->ev[i].array, "w"))
            assign = &t->ev[i];
    CHECK(assign && assign->device == single && !strcmp(assign->direction, "within device") &&
              assign->bytes == N * sizeof(uint32_t) && assign->bounds.first[0] == 0 && assign->bounds.last[0] == N - 1,
          "the assignment w = y on device %d is not one copy of w within it", single);
    CHECK(out && out->bytes == N * sizeof(uint32_t), "y was not copied whole to the host after the kernel");
    for (int i = 0; out && i < t->count && !wait; i++) {
        const event *w = &t->ev[i];
        const jnode *points = w->cat == 'w' ? jget(w->args, "points") : NULL;
        for (int p = 0; points && p < points->count; p++) {
            double device = -1, value = 0;
            const char *queue = jstr(points->items[p], "queue");
            if (w->seq > out->seq && jnum(points->items[p], "device", &device) && device == single &&
                queue && !strcmp(queue, out->lane ? "transfer" : "compute") &&
                jnum(points->items[p], "value", &value) && value >= (double)out->value)
                wait = w;
        }
    }
    CHECK(!wait || !out->gpu || wait->end >= out->end - t->clock_error[single],
          "the wait for y ends before y's copy does");
    return wait != NULL;
}

/* Waits are on the track of the thread that waited: the main thread's
 * until the second thread fetched z, the second thread's after (when its
 * read found z's copy not done yet). Returns the waits of the second. */
static int check_wait_threads(const trace *t, bool zero_copy)
{
    const event *zc = NULL;
    int main_tid = -1, second = 0;
    for (int i = 0; i < t->count; i++) {
        const event *e = &t->ev[i];
        if (e->cat == 'c' && !strcmp(e->array, "z") && !strcmp(e->direction, "device to host"))
            zc = e;
        if (e->cat == 'w' && main_tid < 0)
            main_tid = e->tid;
    }
    if (main_tid < 0 || !CHECK(zc || zero_copy, "z was not copied to the host") || !zc)
        return 0; /* the host never found work it needed running */
    for (int i = 0; i < t->count; i++) {
        const event *w = &t->ev[i];
        if (w->cat != 'w')
            continue;
        second += w->seq > zc->seq;
        CHECK(w->seq > zc->seq ? w->tid != main_tid : w->tid == main_tid,
              "wait seq %llu is on thread %d (the main thread's is %d; z's copy is seq %llu)",
              (unsigned long long)w->seq, w->tid, main_tid, (unsigned long long)zc->seq);
    }
    return second;
}

/* The context's devices' info; returns their number. */
static int device_infos(hpl_context *ctx, hpl_device_info info[16], bool *zero_copy)
{
    int devices = hpl_device_count(ctx);
    *zero_copy = false;
    for (int d = 0; d < devices && d < 16; d++) {
        memset(&info[d], 0, sizeof info[d]);
        if (CHECK_OK(hpl_device_get_info(ctx, d, &info[d])))
            *zero_copy = *zero_copy || info[d].zero_copy;
    }
    return devices;
}

static void traced_run(const char *dir)
{
    hpl_context *ctx = th_context("cpu:3");
    hpl_device_info info[16];
    bool zero_copy;
    int devices = device_infos(ctx, info, &zero_copy), single = devices > 1 ? 1 : 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/run.json", dir);
    CHECK_OK(hpl_stats_reset(ctx));
    CHECK_OK(hpl_trace_begin(ctx, path));
    run_traced(ctx, devices, single);
    hpl_stats st;
    CHECK_OK(hpl_stats_get(ctx, &st));
    CHECK_OK(hpl_trace_end(ctx));

    trace t;
    if (trace_load(path, &t)) {
        check_tracks(&t, info, devices);
        check_queues(&t);
        check_kernels(&t, devices, single);
        int pairs = check_copies(&t, sizeof(uint32_t));
        bool timed = true; /* every device has timestamps (else host times: no order to check) */
        for (int d = 0; d < t.devices; d++)
            timed = timed && t.gpu_timestamps[d];
        CHECK(zero_copy || !timed || pairs >= devices * STEPS + 2, "only %d copy/kernel orderings to check", pairs);
        check_waits(&t);
        check_stats(&t, &st);
        /* column_assign's upload has ROWS runs of 2 elements. Staged
         * (HPLVK_HOST_IMPORT=0), the host packs them into a staging slot and
         * the device side is one run: no copy kernel. */
        const char *mode = getenv("HPLVK_STRIDED_COPY"), *import = getenv("HPLVK_HOST_IMPORT");
        bool staged = import && !strcmp(import, "0");
        CHECK(!mode || strcmp(mode, "kernel") || staged || !info[single].int64 || st.device[single].copy_kernels > 0,
              "HPLVK_STRIDED_COPY=kernel, yet device %d moved no box by the copy kernel", single);
        bool waited = check_round_trip(&t, single, zero_copy);
        int second = check_wait_threads(&t, zero_copy);
        CHECK(count_cat(&t, 'c') > 0 || zero_copy, "no copies traced");
        th_note("%d events: %d kernels, %d copies (%llu boxes by the copy kernel), %d waits (%d on the second thread, "
                "%s for y); %d orderings checked",
                t.count, count_cat(&t, 'k'), count_cat(&t, 'c'), (unsigned long long)st.total.copy_kernels,
                count_cat(&t, 'w'), second, waited ? "one" : "none", pairs);
    }
    trace_free(&t);
    hpl_context_destroy(ctx);
}

/* ---- error paths, traces one after another, HPLVK_TRACE ----------------------------- */

static const char *gen_src = /* a[i] = i * 7 + seed */
    "#include <hplvk.glsl>\n"
    "hpl_args { hpl_out(uint, 1) a; uint seed; };\n"
    "void main() { uint i = hpl_global_id.x; hpl_at(a, i) = i * 7u + seed; }\n";

/* `evals` evals of "gen" on device, then a host read checking the last. */
static void gen_on(hpl_context *ctx, hpl_kernel gen, hpl_array a, int device, int evals)
{
    hpl_launch on = {.device = device};
    for (int i = 0; i < evals; i++)
        CHECK_OK(hpl_eval(ctx, gen, &on, HPL_ARGS(hpl_arr(a), hpl_u32((uint32_t)i))));
    const uint32_t *p = th_access(ctx, a, HPL_READ);
    CHECK(p && p[N - 1] == (N - 1) * 7u + (uint32_t)(evals - 1), "gen on device %d: a[%d] = %u", device, N - 1,
          p ? p[N - 1] : 0);
}

/* A trace holding `kernels` kernels named "gen", all on `device`, and
 * tracks consistent with info. */
static void expect_gen_trace(const char *path, const hpl_device_info *info, int devices, int kernels, int device)
{
    trace t;
    if (trace_load(path, &t)) {
        check_tracks(&t, info, devices);
        check_queues(&t);
        check_waits(&t);
        int n = 0;
        for (int i = 0; i < t.count; i++)
            if (t.ev[i].cat == 'k') {
                n++;
                CHECK(!strcmp(t.ev[i].name, "gen") && t.ev[i].device == device, "%s: kernel \"%s\" on device %d", path,
                      t.ev[i].name, t.ev[i].device);
            }
        CHECK(n == kernels, "%s: %d kernels, want %d", path, n, kernels);
    }
    trace_free(&t);
}

static void error_paths(const char *dir)
{
    hpl_context *ctx = th_context("cpu:2");
    hpl_device_info info[16];
    bool zero_copy;
    int devices = device_infos(ctx, info, &zero_copy), other_device = devices > 1 ? 1 : 0;
    char path[4096], missing[4096], refused[4096];
    snprintf(path, sizeof path, "%s/empty.json", dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir/trace.json", dir);
    snprintf(refused, sizeof refused, "%s/refused.json", dir);

    CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_INVALID_ARGUMENT, "no trace is being recorded");
    CHECK_FAILS(hpl_trace_end(NULL), HPL_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    CHECK_FAILS(hpl_trace_begin(NULL, path), HPL_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    CHECK_FAILS(hpl_trace_begin(ctx, NULL), HPL_ERROR_INVALID_ARGUMENT, "path is NULL");
    CHECK_FAILS(hpl_trace_begin(ctx, ""), HPL_ERROR_INVALID_ARGUMENT, "empty");
    CHECK_FAILS(hpl_trace_begin(ctx, missing), HPL_ERROR_IO, missing);
    CHECK_MSG("No such file");
    CHECK_FAILS(hpl_trace_begin(ctx, dir), HPL_ERROR_IO, "for writing"); /* a directory */
    CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_INVALID_ARGUMENT, "no trace"); /* the failed ones started nothing */
    if (access("/dev/full", W_OK) == 0) { /* opens, but every write fails */
        CHECK_OK(hpl_trace_begin(ctx, "/dev/full"));
        CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_IO, "writing '/dev/full' failed");
        CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_INVALID_ARGUMENT, "no trace"); /* over all the same */
    }

    /* Twice: the second is refused, names the first and creates nothing. */
    CHECK_OK(hpl_trace_begin(ctx, path));
    CHECK_FAILS(hpl_trace_begin(ctx, refused), HPL_ERROR_INVALID_ARGUMENT, "already being recorded");
    CHECK_MSG(path);
    CHECK(access(refused, F_OK) != 0, "the refused trace created %s", refused);
    CHECK_OK(hpl_trace_end(ctx));
    CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_INVALID_ARGUMENT, "no trace");
    expect_gen_trace(path, info, devices, 0, 0); /* nothing ran: tracks only */

    /* Two traces one after the other each hold their own work only; a
     * third, still running, is written by hpl_context_destroy. */
    hpl_kernel gen = named_kernel(ctx, gen_src, "gen");
    hpl_array a = named_array(ctx, "a", N, 0);
    char first[4096], second[4096], third[4096];
    snprintf(first, sizeof first, "%s/first.json", dir);
    snprintf(second, sizeof second, "%s/second.json", dir);
    snprintf(third, sizeof third, "%s/third.json", dir);
    CHECK_OK(hpl_trace_begin(ctx, first));
    gen_on(ctx, gen, a, 0, 1);
    CHECK_OK(hpl_trace_end(ctx));
    gen_on(ctx, gen, a, other_device, 1); /* untraced */
    CHECK_OK(hpl_trace_begin(ctx, second));
    gen_on(ctx, gen, a, other_device, 2);
    CHECK_OK(hpl_trace_end(ctx));
    CHECK_OK(hpl_trace_begin(ctx, third));
    gen_on(ctx, gen, a, 0, 3);
    hpl_context_destroy(ctx);
    expect_gen_trace(first, info, devices, 1, 0);
    expect_gen_trace(second, info, devices, 2, other_device);
    expect_gen_trace(third, info, devices, 3, 0);
}

static void env_trace(const char *dir)
{
    char path[4096], missing[4096], later[4096], refused[4096];
    snprintf(path, sizeof path, "%s/env.json", dir);
    snprintf(missing, sizeof missing, "%s/missing/env.json", dir);
    snprintf(later, sizeof later, "%s/later.json", dir);
    snprintf(refused, sizeof refused, "%s/env-refused.json", dir);

    /* The whole life of the context, written at its destruction. */
    setenv("HPLVK_TRACE", path, 1);
    hpl_context *ctx = th_context("cpu:2");
    unsetenv("HPLVK_TRACE");
    hpl_device_info info[16];
    bool zero_copy;
    int devices = device_infos(ctx, info, &zero_copy), device = devices - 1;
    CHECK_FAILS(hpl_trace_begin(ctx, refused), HPL_ERROR_INVALID_ARGUMENT, "HPLVK_TRACE");
    hpl_kernel gen = named_kernel(ctx, gen_src, "gen");
    hpl_array a = named_array(ctx, "a", N, 0);
    gen_on(ctx, gen, a, device, 2);
    hpl_context_destroy(ctx);
    CHECK(th_take_warnings() == 0, "warnings with a writable HPLVK_TRACE");
    expect_gen_trace(path, info, devices, 2, device);

    /* A path that cannot be opened: a warning naming it, no trace. This is
     * the process's second traced context: env.1.json. */
    setenv("HPLVK_TRACE", missing, 1);
    ctx = th_context("cpu:2");
    unsetenv("HPLVK_TRACE");
    char warning[1024], numbered_missing[4096];
    snprintf(numbered_missing, sizeof numbered_missing, "%s/missing/env.1.json", dir);
    th_last_warning(warning, sizeof warning);
    CHECK(th_take_warnings() == 1, "an unwritable HPLVK_TRACE gave no warning");
    CHECK(th_contains(warning, "HPLVK_TRACE") && th_contains(warning, numbered_missing), "the warning reads \"%s\"",
          warning);
    CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_INVALID_ARGUMENT, "no trace");
    CHECK_OK(hpl_trace_begin(ctx, later)); /* the API still traces */
    CHECK_OK(hpl_trace_end(ctx));
    hpl_context_destroy(ctx);
    expect_gen_trace(later, info, devices, 0, 0);

    /* Empty: no trace, no warning (and no number taken). */
    setenv("HPLVK_TRACE", "", 1);
    ctx = th_context("cpu:2");
    unsetenv("HPLVK_TRACE");
    CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_INVALID_ARGUMENT, "no trace");
    CHECK(th_take_warnings() == 0, "HPLVK_TRACE=\"\" gave a warning");
    hpl_context_destroy(ctx);

    /* Two contexts alive together: the third and fourth traced of the
     * process, each into a file of its own. */
    char both[4096], files[2][4096];
    snprintf(both, sizeof both, "%s/both.json", dir);
    setenv("HPLVK_TRACE", both, 1);
    hpl_context *two[2] = {th_context("cpu:2"), th_context("cpu:2")};
    unsetenv("HPLVK_TRACE");
    for (int i = 0; i < 2; i++) {
        snprintf(files[i], sizeof files[i], "%s/both.%d.json", dir, i + 2);
        hpl_kernel k = named_kernel(two[i], gen_src, "gen");
        hpl_array x = named_array(two[i], "a", N, 0);
        gen_on(two[i], k, x, i == 0 ? 0 : device, i + 1);
    }
    hpl_context_destroy(two[1]);
    hpl_context_destroy(two[0]);
    CHECK(access(both, F_OK) != 0, "%s was written although it was not the first traced context", both);
    for (int i = 0; i < 2; i++)
        expect_gen_trace(files[i], info, devices, i + 1, i == 0 ? 0 : device);

    /* A path that is no regular file (a link to /dev/null, standing for
     * /dev/full and the like): a later context gets a warning and makes no
     * numbered file beside it (no new file in /dev). */
    char sink[4096], numbered_sink[4096];
    snprintf(sink, sizeof sink, "%s/sink", dir);
    snprintf(numbered_sink, sizeof numbered_sink, "%s/sink.4", dir);
    if (CHECK(symlink("/dev/null", sink) == 0, "symlink %s", sink)) {
        setenv("HPLVK_TRACE", sink, 1);
        ctx = th_context("cpu:2");
        unsetenv("HPLVK_TRACE");
        th_last_warning(warning, sizeof warning);
        CHECK(th_take_warnings() == 1 && th_contains(warning, "not a regular file") && th_contains(warning, sink),
              "HPLVK_TRACE=%s for the process's fifth traced context: the warning reads \"%s\"", sink, warning);
        CHECK_FAILS(hpl_trace_end(ctx), HPL_ERROR_INVALID_ARGUMENT, "no trace");
        hpl_context_destroy(ctx);
        CHECK(access(numbered_sink, F_OK) != 0, "%s was made beside a path that is no regular file", numbered_sink);
    }
}

int main(void)
{
    unsetenv("HPLVK_TRACE"); /* the test sets it itself */
    char *dir = th_tmpdir("trace");
    if (!CHECK(dir != NULL, "no temporary directory"))
        return th_finish(NULL);
    traced_run(dir);
    error_paths(dir);
    env_trace(dir);
    th_rmtree(dir);
    free(dir);
    return th_finish(NULL);
}
