#!/usr/bin/env bash
# ranks_scaling.sh — the samples over MPI ranks, as issue 40 measures them:
# weak scaling of jacobi and game_of_life over 1, 2 and 4 ranks of one
# Lavapipe device each (LP_NUM_THREADS threads), the rows growing with the
# ranks; then game_of_life_plan with the GPU in one rank and Lavapipe in
# another under a plan, beside the GPU's rank alone. Each configuration
# runs `reps` times, alternating; the medians of the RESULT lines' time_ms
# are printed with the ratios. (jacobi against its hand-written MPI +
# Vulkan twin: samples/twins/ranks_vs_twin.sh.)
#
#   ranks_scaling.sh [-b bindir] [-r reps] [-t threads] [-n "ranks..."] [-s "rows cols steps"] [-g]
#
#   bindir   the samples (default: build/samples of this tree)
#   reps     runs per configuration (default 3)
#   threads  LP_NUM_THREADS of each Lavapipe rank (default 4)
#   ranks    the rank counts of the weak-scaling runs (default "1 2 4")
#   rows cols steps   a rank's share of the grid (default 1024 1024 100):
#            k ranks run k*rows rows
#   -g       also the GPU runs (device gpu0 in rank 0: the plan runs)
# Needs mpirun on PATH (Open MPI: -x passes the environment); exits
# non-zero when a run fails, is not verified, or takes more than
# RUN_LIMIT seconds (environment; default 300).
set -euo pipefail
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/samples
reps=3
threads=4
rank_counts="1 2 4"
share="1024 1024 100"
gpu=0
usage() {
    echo "usage: $0 [-b bindir] [-r reps] [-t threads] [-n \"ranks...\"] [-s \"rows cols steps\"] [-g]" >&2
    exit 2
}
while getopts "b:r:t:n:s:g" o; do
    case $o in
    b) bin=$OPTARG ;;
    r) reps=$OPTARG ;;
    t) threads=$OPTARG ;;
    n) rank_counts=$OPTARG ;;
    s) share=$OPTARG ;;
    g) gpu=1 ;;
    *) usage ;;
    esac
done
[[ $reps =~ ^[1-9][0-9]*$ && $threads =~ ^[1-9][0-9]*$ ]] || usage
read -r rows cols steps <<<"$share"
[[ $rows =~ ^[0-9]+$ && $cols =~ ^[0-9]+$ && $steps =~ ^[0-9]+$ ]] || usage
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# run LABEL MPIRUN-ARGS...: one run; its time_ms appended to $out/LABEL.
run() {
    local label=$1
    shift
    local log="$out/log"
    if ! timeout "${RUN_LIMIT:-300}" mpirun "$@" >"$log" 2>&1; then
        echo "ranks_scaling: $label failed:" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    local line
    line=$(grep '^RESULT ' "$log" | tail -1)
    echo "$label: $line"
    if [[ $line != *verified=yes* ]]; then
        echo "ranks_scaling: $label not verified" >&2
        exit 1
    fi
    sed -n 's/.* time_ms=\([0-9.]*\).*/\1/p' <<<"$line" >>"$out/$label"
}

lvp=(-x LP_NUM_THREADS="$threads" -x HPLVK_DEVICES=cpu)
echo "ranks_scaling: reps=$reps threads=$threads ranks=[$rank_counts] share=${rows}x${cols}x$steps date=$(date -u +%FT%TZ)"
for ((i = 1; i <= reps; i++)); do
    for prog in jacobi game_of_life; do
        for k in $rank_counts; do
            run "$prog.$k" -n "$k" --bind-to none "${lvp[@]}" "$bin/$prog" $((k * rows)) "$cols" "$steps"
        done
    done
    if ((gpu)); then
        g=(-x HPLVK_DEVICES=gpu0)
        for bal in exhaustive adaptive; do
            run "plan.gpu.$bal" -n 1 --bind-to none "${g[@]}" "$bin/game_of_life_plan" $((2 * rows)) "$cols" "$steps" $bal
            run "plan.gpu+cpu.$bal" -n 1 --bind-to none "${g[@]}" "$bin/game_of_life_plan" $((2 * rows)) "$cols" "$steps" $bal \
                : -n 1 --bind-to none "${lvp[@]}" "$bin/game_of_life_plan" $((2 * rows)) "$cols" "$steps" $bal
        done
    fi
done

echo "== medians (time_ms) over $reps runs"
for prog in jacobi game_of_life; do
    t1=""
    for k in $rank_counts; do
        m=$(median <"$out/$prog.$k")
        [[ -n $t1 ]] || t1=$m
        awk -v p="$prog" -v k="$k" -v m="$m" -v t1="$t1" -v r="$rows" -v c="$cols" -v s="$steps" \
            'BEGIN {printf "%-13s ranks=%d  %dx%dx%d  time_ms=%.2f  weak-scaling efficiency=%.3f\n", p, k, k * r, c, s, m, t1 / m}'
    done
done
if ((gpu)); then
    for bal in exhaustive adaptive; do
        a=$(median <"$out/plan.gpu.$bal")
        b=$(median <"$out/plan.gpu+cpu.$bal")
        awk -v bal="$bal" -v a="$a" -v b="$b" \
            'BEGIN {printf "game_of_life_plan %-10s gpu rank alone %.2f ms, gpu rank + lavapipe rank %.2f ms: %.3fx the time alone\n", bal, a, b, b / a}'
    done
fi
