/* A sampling profiler of the main thread for machines without perf, loaded with LD_PRELOAD; used for
 * samples/bench/results/h200-pushes.txt. Built by target prof_shim (cmake --build build --target prof_shim):
 * LD_PRELOAD=build/samples/bench/probes/prof_shim.so PROF_OUT=file PROF_US=50 ./program
 * Every PROF_US microseconds of wall time (CLOCK_MONOTONIC, delivered to the main thread only, so blocked
 * time counts too) the handler stores the call stack (backtrace(3), 32 frames). At exit it writes
 * /proc/self/maps and one line of hex addresses per sample; symbolise them with prof_report.py. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FRAMES 32
#define MAX_SAMPLES 400000

static void *(*samples)[FRAMES];
static unsigned char *depth;
static volatile int count;
static timer_t timer;

static void on_tick(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    if (count < MAX_SAMPLES) {
        int n = backtrace(samples[count], FRAMES);
        depth[count] = (unsigned char)n;
        count++;
    }
}

__attribute__((constructor)) static void prof_start(void)
{
    const char *out = getenv("PROF_OUT");
    if (!out)
        return;
    samples = calloc(MAX_SAMPLES, sizeof *samples);
    depth = calloc(MAX_SAMPLES, 1);
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder outside the handler */
    struct sigaction sa = {0};
    sa.sa_sigaction = on_tick;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_create(CLOCK_MONOTONIC, &ev, &timer);
    long us = getenv("PROF_US") ? atol(getenv("PROF_US")) : 50;
    struct itimerspec it = {{0, us * 1000}, {0, us * 1000}};
    timer_settime(timer, 0, &it, NULL);
}

__attribute__((destructor)) static void prof_stop(void)
{
    const char *out = getenv("PROF_OUT");
    if (!out || !samples)
        return;
    timer_delete(timer);
    FILE *f = fopen(out, "w");
    if (!f)
        return;
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof line, maps))
        fprintf(f, "M %s", line);
    if (maps)
        fclose(maps);
    for (int i = 0; i < count; i++) {
        fputc('S', f);
        for (int k = 0; k < depth[i]; k++)
            fprintf(f, " %lx", (unsigned long)samples[i][k]);
        fputc('\n', f);
    }
    fclose(f);
}
