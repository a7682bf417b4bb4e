#!/usr/bin/env bash
# run_results.sh — runs every sample at one profile's sizes, on the devices
# alone and with the CPU beside them under a plan, and writes a results
# file: date, machine, driver, commit, then for each run its command, exit
# status, wall time and RESULT line (each sample checks its own result and
# says verified=yes|no there), then a scaling summary.
#
#   run_results.sh [-n] [-l] [-s regex] [-p profile] [-o file] [samples_bindir]
#
#   -n       dry run: prints the header and each run's command line
#            ("run: HPLVK_DEVICES=... prog args  (timeout T s)") and the sum
#            of the timeouts, and runs nothing (no built samples needed).
#   -l       logical devices: a token's N GPUs become N logical devices of
#            GPU 0 (g2 -> gpu0:2, g4c -> gpu0:4,cpu; g1 stays gpu0): a
#            multi-GPU profile on the one GPU at hand, to show that every run
#            fits the memory and its timeout and verifies. N logical devices
#            share one GPU, so the timings are NOT speedups; the results
#            header says so ("devices: logical ...").
#   -s regex only the runs whose program name matches (bash's =~, an ERE,
#            unanchored: anchor it, e.g. -s '^(matmul|ep)$'), to split a
#            long profile over several calls of at most 600 s; the summary
#            counts the runs made.
#   profile  ci (default), h200, h200x2, h200x4, h200x8 (below).
#   file     where the results go (default: stdout only); also printed.
#            Each run's whole output (the balancers' tables, the exchange
#            and halo figures beside their baselines) goes to the same name
#            with .txt replaced by .full.txt (file.full.txt if it has no
#            .txt), after a "=== run: ..." line.
#   samples_bindir  the built samples (default: build/samples under the
#            repository); the benchmarks (bench_*) in its bench/ and the
#            twins (twin_*) in its twins/, where the build puts them.
#
# Run lines: "TOKEN TIMEOUT PROGRAM ARGS", TOKEN naming the devices
# (HPLVK_DEVICES):
#   gN   the first N GPUs: gpu0,gpu1,...,gpu(N-1) (g1 = gpu0)
#   gNc  the same and the CPU (Lavapipe): gpu0,...,gpu(N-1),cpu
#   c1   the CPU alone (cpu); cN, N > 1: N logical devices of it (cpu:N)
# With the CPU, the runs are of the samples that take a plan (ep with a
# balancer, game_of_life_plan, bench_plan, unbalanced): an even split would
# give Lavapipe as much as a GPU, and it would set the pace.
#
# Profiles. Times are estimates for the whole profile, from what was
# measured on one H200 and its 16-core host (results/h200.txt and
# RESULTS.md, here); host work (inputs, checks) is most of many runs.
# Written before the multi-GPU machines were lent: h200x2, h200x4 and
# h200x8 have not run yet, so their times are estimates, not measurements.
#   ci      Lavapipe, small sizes: c1 and c2. 12 s on 2 cores.
#   h200    one NVIDIA H200 and Lavapipe, sizes that keep the GPU busy
#           (matrices of 3 GiB; grids of up to 3.8 GiB, past Lavapipe's 2 GiB
#           allocations: an array must fit one allocation of the device,
#           which is 4 GiB on the H200 and for Lavapipe's imports of host
#           memory): g1 and g1c (the CPU zero-copy, on the host's data).
#           364 s measured (2026-11-25, before bench_walk joined it with
#           ~30 s): one call.
#   h200x2  two H200s (the device kind nvidia-h200-x2, issue 18): each
#           multi-device sample on one GPU and split over both at the same
#           size (the speedup is the ratio of the two RESULT times), Game of
#           Life from 1024^2 to 16384^2 (the finest grain at which two GPUs
#           still give 1.5x: time_ms / steps is the step time; the sample
#           runs halos first, and its g2 runs with "3e8 after" are the same
#           steps without: the hop not hidden; so is jacobi's at 16384^2),
#           the exchange benchmark, and the CPU beside both under plans: g1,
#           g2, g2c.
#           About 12 minutes; unbalanced on g2c is ~250 s of it (EXHAUSTIVE:
#           231 points, each run twice, the CPU's share of each setting its
#           time: the whole 2048x1024 matrix takes the CPU ~0.8 s at x =
#           100; the GPUs' warm-ups add some 25%: on gpu0,cpu 23-49%), and Game of Life at 1024^2 x 2000 and 4096^2 x 500 ~100 s
#           (each band the host checks is the whole grid for every step);
#           jacobi 16384^2 x 200 on g2 ~20 s a run (1-2 s on the GPUs, the
#           rest the host: the start, three bands, the rerun on device 0).
#           call 1: -s '^(unbalanced|bench_exchange|matmul|summa)$'   ~370 s
#           call 2: -s '^(game_of_life|game_of_life_plan|jacobi|wave_sim|ep)$'
#                                                                     ~340 s
#           The timeouts add up to 1520 s and 3180 s (-n prints them), but
#           those are bounds, several times each run's estimate.
#           call 3, the same steps with a submit thread per device
#           (HPLVK_SUBMIT_THREAD=1: less host time per eval; the results
#           header lists the HPLVK_ variables set):
#             HPLVK_SUBMIT_THREAD=1 ... -s '^(bench_exchange|game_of_life)$'
#                                                                     ~260 s
#   h200x4  four H200s (nvidia-h200-x4, issue 19): h200x8 without the runs
#           on g8 and g8c. About 12.5 minutes (logical, -l: ~13.5):
#           call 1: -s '^(matmul|jacobi|bench_plan)$'   ~280 s
#           call 2: -s '^(ep|unbalanced)$'              ~290 s (logical ~350)
#           call 3: -s '^game_of_life'                  ~180 s
#   h200x8  eight H200s (nvidia-h200-x8, issue 19): matmul, the stencils,
#           EP and unbalanced on 1, 2, 4, 8 GPUs (g1 .. g8), and the samples
#           with plans on the same GPUs and the CPU (g1c .. g8c). Targets
#           (issue 19): parallel efficiency at 8 GPUs >= 0.9 for matmul,
#           >= 0.95 for EP (class E; D's rows cost the host ~10 ms against
#           0.13 s on eight GPUs), >= 0.8 for the stencils (the summary's
#           eff). About 17.5 minutes (logical, -l: ~20), in four calls:
#           call 1: -s '^(matmul|jacobi)$'           ~280 s (logical ~310)
#           call 2: -s '^ep$'                        ~210 s (logical: 12 of
#                                                    16 runs in 420 s)
#           call 3: -s '^game_of_life'               ~270 s
#           call 4: -s '^(bench_plan|unbalanced)$'   ~300 s
#           Each call's timeouts add up to more than 600 s, but those are
#           bounds, two to four times each run's estimate.
# The sizes of h200x4 and h200x8, per run on one GPU (a GPU of eight: 1/8):
#   matmul 32000 3: the largest n whose matrices fit one 4094 MiB allocation
#     (3.81 GiB each; every device holds all of B): 1.9 s a product (34
#     TFLOP/s), 0.24 s on eight; ~45 s a run, mostly host (inputs, check).
#   jacobi 30000 30000 100, game_of_life 30000 30000 100: 3.35 GiB grids,
#     ~5 ms a step (~174,000 Mcell/s; not 32000 columns: a 4.5x slowdown
#     between 30000 and 32000 columns on the H200), 0.5 s on one GPU. Not
#     more steps: past the host budget each sample checks bands of rows
#     around every part boundary, each band (8 + 2 steps) rows simulated for
#     all the steps (~1.2 s for jacobi, ~3 s for Game of Life at 100 steps,
#     four times that at 200; nine bands on eight GPUs); jacobi also reruns
#     the steps on device 0 alone and keeps five host grids (17 GB).
#   game_of_life 16384 16384 100: the finer grain, 1.5 ms a step on one.
#   ep D, ep E: NPB classes D (2^36 pairs, ~1 s) and E (2^40, ~16 s a run,
#     three runs: ~50 s on one GPU); C's 62 ms is too short for 8 GPUs.
#   unbalanced 2048 1024 0,50,100 3 on the GPUs alone (g2 .. g8: one device
#     has nothing to balance): sub-ms evals; EXHAUSTIVE's grid is 5984 (+343)
#     points on four devices, 3432 (+ a refinement) on eight.
#   With the CPU (Lavapipe, some 400x slower than an H200 here, so every
#   balancer should end on the GPUs): ep D iterative and auto_tune (the
#   first ITERATIVE run times the equal split: half of D on the CPU for g1c,
#   ~20 s); game_of_life_plan 30000 30000 20 iterative and auto_tune (as in
#   h200); bench_plan 512 20 (EXHAUSTIVE times distributions of whole
#   128-row tiles, at most 495 cuts of n = 512's four: a CPU tile is ~40 ms
#   there (matmul 1024 alone took that CPU 1.2 s); g8c ~40-80 s);
#   unbalanced 256 128 0,50,100 3: EXHAUSTIVE times 5985 + 2401 points over
#   5 devices, 3003 over 9 (grids coarsened to at most 6000 points), each
#   twice, the CPU's share of each setting its time: the whole matrix takes
#   the CPU ~13 ms at x = 100, so g4c is ~70 s, g8c ~25 s.
# Logical runs (-l) of h200x4/h200x8 take every run at one GPU's speed: ep E
# ~50 s on every token, matmul ~50 s.
#
# Scaling summary: for every program and arguments that ran under more than
# one token, a table of its runs: time_ms (from the RESULT line), the speedup
# over the verified run with the fewest GPUs (its time over the run's; ties:
# the run without the CPU), and, where neither has the CPU, the parallel
# efficiency: speedup / (GPUs / the baseline's GPUs). A run that failed or
# was not verified shows "failed" and is no baseline. cN tokens count N
# devices and have the CPU (no efficiency).
#
# The commit is RESULTS_COMMIT when set (a copy of the tree without .git),
# else git's HEAD. Exits 1 when any run failed or was not verified, 2 when
# called wrongly.
set -uo pipefail

usage() {
    echo "usage: $0 [-n] [-l] [-s regex] [-p ci|h200|h200x2|h200x4|h200x8] [-o file] [samples_bindir]" >&2
    exit 2
}

profile=ci out='' dry='' logical='' select=''
while getopts nls:p:o: opt; do
    case $opt in
    n) dry=1 ;;
    l) logical=1 ;;
    s) select=$OPTARG ;;
    p) profile=$OPTARG ;;
    o) out=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -le 1 ]] || usage
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${1:-$root/build/samples}
[[ -n $dry || -x $bin/matmul ]] || { echo "$0: no built samples in $bin" >&2; usage; }
# program PROG: where the build puts PROG: bench_* in bench/, twin_* in
# twins/, a sample in the samples' directory itself.
program() {
    case $1 in
    bench_*) echo "$bin/bench/$1" ;;
    twin_*) echo "$bin/twins/$1" ;;
    *) echo "$bin/$1" ;;
    esac
}

# One run per line: device token, timeout in seconds, program and arguments.
case $profile in
ci)
    runs="
c1 120 vector_add
c1 120 multi_device
c1 120 matmul 512 3
c1 120 twin_matmul 512 3
c2 120 matmul 301 129 127
c1 120 summa 256 32
c2 120 summa 256 32
c1 120 game_of_life 512 512 100
c1 120 twin_game_of_life 512 512 100
c2 120 game_of_life 383 257 60
c1 120 jacobi 512 512 100
c2 120 jacobi 299 301 60
c1 120 wave_sim 256 200
c2 120 wave_sim 301 120
c1 120 bench_walk 256 256 4 1
c1 60 bench_ramp compute 4096 64 40
c1 120 ep W
c2 120 ep S iterative
c2 120 ep T auto_tune
c2 120 game_of_life_plan 383 257 40 iterative
c2 120 game_of_life_plan 383 257 40 auto_tune
c2 300 unbalanced 256 128 0,50 2
"
    ;;
h200)
    runs="
g1 60 vector_add 268435456
g1 60 multi_device 268435456
g1 120 matmul 4096 5
g1 120 matmul 8192 3
g1 200 matmul 16384 2
g1 120 twin_matmul 4096 5
g1 120 twin_matmul 8192 3
g1 200 summa 8192 512
g1 120 game_of_life 2048 2048 200
g1 120 twin_game_of_life 2048 2048 200
g1 200 game_of_life 16384 16384 200
g1 200 twin_game_of_life 16384 16384 200
g1 120 jacobi 2048 2048 200
g1 300 jacobi 32000 32000 20
g1 120 wave_sim 4096 400
g1 200 wave_sim 16384 100
g1 120 bench_walk
g1 120 bench_ramp compute
g1 120 bench_ramp memory
g1 60 ep S
g1 60 ep W
g1 60 ep A
g1 60 ep B
g1 100 ep C
g1c 200 ep C iterative
g1c 200 ep C auto_tune
g1c 200 game_of_life_plan 2048 2048 200 iterative
g1c 300 game_of_life_plan 30000 30000 20 iterative
g1c 300 game_of_life_plan 30000 30000 20 auto_tune
g1c 300 bench_plan 4096 20
g1c 420 unbalanced 2048 1024 0,50,100 3
"
    ;;
h200x2)
    runs="
g2 300 bench_exchange 1024
g1 200 matmul 16384 3
g2 200 matmul 16384 3
g1 200 game_of_life 16384 16384 200
g2 200 game_of_life 16384 16384 200
g1 120 game_of_life 2048 2048 200
g2 120 game_of_life 2048 2048 200
g1 200 jacobi 16384 16384 200
g2 200 jacobi 16384 16384 200
g2 200 jacobi 16384 16384 200 3e8 after
g1 200 wave_sim 16384 100
g2 200 wave_sim 16384 100
g1 100 ep C
g2 100 ep C
g1 200 summa 16384 512
g2 200 summa 16384 512
g1 60 game_of_life 1024 1024 2000
g2 60 game_of_life 1024 1024 2000
g1 60 game_of_life 4096 4096 500
g2 60 game_of_life 4096 4096 500
g1 60 game_of_life 8192 8192 200
g2 60 game_of_life 8192 8192 200
g2 60 game_of_life 1024 1024 2000 3e8 after
g2 60 game_of_life 4096 4096 500 3e8 after
g2 60 game_of_life 8192 8192 200 3e8 after
g2c 200 ep C iterative
g2c 300 game_of_life_plan 16384 16384 100 iterative
g2c 300 game_of_life_plan 16384 16384 100 auto_tune
g2c 420 unbalanced 2048 1024 0,50,100 3
"
    ;;
h200x4 | h200x8)
    # h200x8's runs; h200x4 drops those on g8 and g8c.
    runs="
g1 240 matmul 32000 3
g2 240 matmul 32000 3
g4 240 matmul 32000 3
g8 240 matmul 32000 3
g1 180 jacobi 30000 30000 100
g2 180 jacobi 30000 30000 100
g4 180 jacobi 30000 30000 100
g8 180 jacobi 30000 30000 100
g1 60 ep D
g2 60 ep D
g4 60 ep D
g8 60 ep D
g1 200 ep E
g2 200 ep E
g4 200 ep E
g8 200 ep E
g1c 240 ep D iterative
g2c 240 ep D iterative
g4c 240 ep D iterative
g8c 240 ep D iterative
g1c 100 ep D auto_tune
g2c 100 ep D auto_tune
g4c 100 ep D auto_tune
g8c 100 ep D auto_tune
g1 150 game_of_life 30000 30000 100
g2 150 game_of_life 30000 30000 100
g4 150 game_of_life 30000 30000 100
g8 150 game_of_life 30000 30000 100
g1 100 game_of_life 16384 16384 100
g2 100 game_of_life 16384 16384 100
g4 100 game_of_life 16384 16384 100
g8 100 game_of_life 16384 16384 100
g1c 150 game_of_life_plan 30000 30000 20 iterative
g2c 150 game_of_life_plan 30000 30000 20 iterative
g4c 150 game_of_life_plan 30000 30000 20 iterative
g8c 150 game_of_life_plan 30000 30000 20 iterative
g1c 150 game_of_life_plan 30000 30000 20 auto_tune
g2c 150 game_of_life_plan 30000 30000 20 auto_tune
g4c 150 game_of_life_plan 30000 30000 20 auto_tune
g8c 150 game_of_life_plan 30000 30000 20 auto_tune
g1c 200 bench_plan 512 20
g2c 200 bench_plan 512 20
g4c 300 bench_plan 512 20
g8c 400 bench_plan 512 20
g2 150 unbalanced 2048 1024 0,50,100 3
g4 150 unbalanced 2048 1024 0,50,100 3
g8 150 unbalanced 2048 1024 0,50,100 3
g1c 120 unbalanced 256 128 0,50,100 3
g2c 120 unbalanced 256 128 0,50,100 3
g4c 400 unbalanced 256 128 0,50,100 3
g8c 300 unbalanced 256 128 0,50,100 3
"
    [[ $profile == h200x8 ]] || runs=$(grep -Ev '^g8c? ' <<<"$runs")
    ;;
*) usage ;;
esac

# devices_of TOKEN: the HPLVK_DEVICES of a token (see the header); fails on
# a token it does not know.
devices_of() {
    local token=$1 n cpu list i
    if [[ $token =~ ^c([1-9][0-9]*)$ ]]; then
        n=${BASH_REMATCH[1]}
        if [[ $n == 1 ]]; then echo cpu; else echo "cpu:$n"; fi
        return 0
    fi
    [[ $token =~ ^g([1-9][0-9]*)(c?)$ ]] || return 1
    n=${BASH_REMATCH[1]} cpu=${BASH_REMATCH[2]}
    if [[ -n $logical && $n -gt 1 ]]; then
        list=gpu0:$n
    else
        list=gpu0
        for ((i = 1; i < n; i++)); do list+=,gpu$i; done
    fi
    [[ -z $cpu ]] || list+=,cpu
    echo "$list"
}

# Every line checked before anything runs: a typo must not cost a device
# call. The selected runs go to `plan`: token, devices, timeout, program,
# arguments.
plan=() limits=0
while read -r token limit prog args; do
    [[ -n ${token:-} ]] || continue
    devices=$(devices_of "$token") || { echo "$0: profile $profile: unknown device token '$token'" >&2; exit 2; }
    [[ $limit =~ ^[1-9][0-9]*$ && -n ${prog:-} ]] || { echo "$0: profile $profile: bad line '$token $limit $prog'" >&2; exit 2; }
    [[ -n $dry || -x $(program "$prog") ]] || { echo "$0: no program $(program "$prog")" >&2; exit 2; }
    [[ -z $select || $prog =~ $select ]] || continue
    plan+=("$token|$devices|$limit|$prog|${args:-}")
    limits=$((limits + limit))
done <<<"$runs"
[[ ${#plan[@]} -gt 0 ]] || { echo "$0: profile $profile: no program matches '$select'" >&2; exit 2; }

commit=${RESULTS_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
gpus=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c |
    awk '{ $1 = $1 "x"; print }' | paste -sd ';' -)
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
mesa=$(dpkg-query -W -f '${Version}' mesa-vulkan-drivers 2>/dev/null || true)

tmp=$(mktemp) ran=$(mktemp)
trap 'rm -f "$tmp" "$ran"' EXIT
report() {
    echo "$@"
    [[ -z $out ]] || echo "$@" >>"$out"
}
[[ -z $out ]] || : >"$out" || { echo "$0: cannot write $out" >&2; exit 2; }
full=
[[ -z $out || -n $dry ]] || full=${out%.txt}.full.txt
[[ -z $full ]] || : >"$full" || { echo "$0: cannot write $full" >&2; exit 2; }

report "# hplvk samples, profile $profile${dry:+ (dry run: nothing was run)}"
report "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
report "commit: $commit"
report "machine: $(hostname 2>/dev/null || echo unknown), $(nproc) cores, ${cpu:-cpu unknown}"
report "gpus (count x name, driver): ${gpus:-none}"
report "mesa-vulkan-drivers: ${mesa:-unknown: see the LLVM version in llvmpipe device names}"
[[ -z $logical ]] || report "devices: logical (gpuN -> gpu0:N), timings are not speedups"
[[ -z $select ]] || report "selection: programs matching '$select' (${#plan[@]} runs)"
settings=$(env | grep -E '^HPLVK_' | grep -v '^HPLVK_DEVICES=' | sort | paste -sd ' ' -)
[[ -z $settings ]] || report "environment: $settings"
report ""

failed=0 total=0
for entry in "${plan[@]}"; do
    IFS='|' read -r token devices limit prog args <<<"$entry"
    if [[ -n $dry ]]; then
        report "run: HPLVK_DEVICES=$devices $prog $args  (timeout $limit s)"
        continue
    fi
    total=$((total + 1))
    t0=$(date +%s.%N)
    # $args unquoted: the arguments are words. No stdin: a sample must not
    # read the run list. -k: a run that ignores the TERM is killed.
    # shellcheck disable=SC2086
    HPLVK_DEVICES=$devices timeout -k 10 "$limit" "$(program "$prog")" $args >"$tmp" 2>&1 </dev/null
    rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    result=$(grep '^RESULT ' "$tmp" | tail -1)
    report "run: HPLVK_DEVICES=$devices $prog $args  (exit $rc, ${wall} s)"
    [[ -z $full ]] || { echo "=== run: HPLVK_DEVICES=$devices $prog $args  (exit $rc, ${wall} s)"; cat "$tmp"; echo; } >>"$full"
    ok=1
    if [[ $rc -ne 0 || $result != *"verified=yes"* ]]; then
        failed=$((failed + 1)) ok=0
        [[ $rc -ne 124 && $rc -ne 137 ]] || report "  | timed out: its limit is $limit s"
        tail -n 5 "$tmp" | sed 's/^/  | /' | while IFS= read -r l; do report "$l"; done
    fi
    report "${result:-RESULT missing}"
    ms=-
    [[ $result =~ time_ms=([0-9.eE+-]+) ]] && ms=${BASH_REMATCH[1]}
    printf '%s\t%s\t%s\t%s\n' "$token" "$prog${args:+ $args}" "$ok" "$ms" >>"$ran"
done

if [[ -n $dry ]]; then
    report ""
    report "dry run: ${#plan[@]} runs; their timeouts add up to $limits s"
    exit 0
fi

# The scaling summary (see the header), from the runs made: token, program
# and arguments, verified (1/0), time_ms.
summary=$(awk -F'\t' '
function gpus(t) { sub(/^[gc]/, "", t); sub(/c$/, "", t); return t + 0 }
function has_cpu(t) { return t ~ /^c/ || t ~ /c$/ }
{
    if (!($2 in runs)) order[++keys] = $2
    i = ++runs[$2]
    tok[$2, i] = $1; ok[$2, i] = $3 && $4 != "-" && $4 + 0 > 0; ms[$2, i] = $4
    if (!(($2, $1) in seen)) { seen[$2, $1] = 1; tokens[$2]++ }
}
END {
    for (k = 1; k <= keys; k++) {
        key = order[k]
        if (tokens[key] < 2) continue
        b = 0
        for (i = 1; i <= runs[key]; i++) {
            if (!ok[key, i]) continue
            if (!b || gpus(tok[key, i]) < gpus(tok[key, b]) ||
                (gpus(tok[key, i]) == gpus(tok[key, b]) && has_cpu(tok[key, b]) && !has_cpu(tok[key, i])))
                b = i
        }
        print "scaling: " key
        for (i = 1; i <= runs[key]; i++) {
            t = tok[key, i]
            if (!ok[key, i]) { printf "  %-5s %12s\n", t, "failed"; continue }
            line = sprintf("  %-5s %12.1f ms", t, ms[key, i])
            if (b) {
                s = ms[key, b] / ms[key, i]
                line = line sprintf(" %7.2fx", s)
                if (!has_cpu(t) && !has_cpu(tok[key, b]))
                    line = line sprintf("  eff %.2f", s * gpus(tok[key, b]) / gpus(t))
            }
            print line
        }
    }
}' "$ran")

report ""
if [[ -n $summary ]]; then
    while IFS= read -r l; do report "$l"; done <<<"$summary"
    report ""
fi
report "summary: $((total - failed)) of $total runs exited 0 and verified"
[[ $failed -eq 0 ]]
