#!/usr/bin/env bash
# run_results.sh — runs every sample at one profile's sizes, on the devices
# alone and with the CPU beside them under a plan, and writes a results
# file: date, machine, driver, commit, then for each run its command, exit
# status, wall time and RESULT line (each sample checks its own result and
# says verified=yes|no there).
#
#   run_results.sh [-p profile] [-o file] [samples_bindir]
#
#   profile  ci (default): Lavapipe, small sizes, a few minutes on 2 cores;
#            alone = HPLVK_DEVICES=cpu, beside = cpu:2 (two logical devices).
#            h200: one NVIDIA H200 and Lavapipe, sizes that keep the GPU busy
#            (matrices of 3 GiB; grids of up to 3.8 GiB, past Lavapipe's 2 GiB
#            allocations: an array must fit one allocation of the device, which
#            is 4 GiB on the H200 and for Lavapipe's imports of host memory);
#            alone = gpu0, beside = gpu0,cpu (the CPU zero-copy, on the
#            host's data).
#            h200x2: two H200s (the device kind nvidia-h200-x2, issue 18):
#            each multi-device sample on one GPU and split over both at the
#            same size (the speedup is the ratio of the two RESULT times),
#            Game of Life from 1024^2 to 16384^2 (the finest grain at which
#            two GPUs still give 1.5x: time_ms / steps is the step time),
#            the exchange benchmark, and the CPU beside both under plans;
#            alone = gpu0, beside = gpu0,gpu1, C = gpu0,gpu1,cpu. Written
#            before such a machine was lent: not run yet.
#   file     where the results go (default: stdout only); also printed.
#   samples_bindir  the built samples (default: build/samples under the
#            repository).
#
# The commit is RESULTS_COMMIT when set (a copy of the tree without .git),
# else git's HEAD. Exits 1 when any run failed or was not verified, 2 when
# called wrongly.
set -uo pipefail

usage() {
    echo "usage: $0 [-p ci|h200|h200x2] [-o file] [samples_bindir]" >&2
    exit 2
}

profile=ci out=
while getopts p:o: opt; do
    case $opt in
    p) profile=$OPTARG ;;
    o) out=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -le 1 ]] || usage
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$root/build/samples}
[[ -x $bin/matmul ]] || { echo "$0: no built samples in $bin" >&2; usage; }

# One run per line: HPLVK_DEVICES, timeout in seconds, program and arguments.
# "A" and "B" stand for the profile's alone and beside device lists, "C"
# for a third where the profile has one.
case $profile in
ci)
    A=cpu B=cpu:2
    runs="
A 120 vector_add
A 120 multi_device
A 120 matmul 512 3
A 120 twin_matmul 512 3
B 120 matmul 301 129 127
A 120 summa 256 32
B 120 summa 256 32
A 120 game_of_life 512 512 100
A 120 twin_game_of_life 512 512 100
B 120 game_of_life 383 257 60
A 120 jacobi 512 512 100
B 120 jacobi 299 301 60
A 120 wave_sim 256 200
B 120 wave_sim 301 120
A 120 ep W
B 120 ep S iterative
B 120 ep T auto_tune
B 120 game_of_life_plan 383 257 40 iterative
B 120 game_of_life_plan 383 257 40 auto_tune
B 300 unbalanced 256 128 0,50 2
"
    ;;
h200)
    A=gpu0 B=gpu0,cpu
    runs="
A 60 vector_add 268435456
A 60 multi_device 268435456
A 120 matmul 4096 5
A 120 matmul 8192 3
A 200 matmul 16384 2
A 120 twin_matmul 4096 5
A 120 twin_matmul 8192 3
A 200 summa 8192 512
A 120 game_of_life 2048 2048 200
A 120 twin_game_of_life 2048 2048 200
A 200 game_of_life 16384 16384 200
A 200 twin_game_of_life 16384 16384 200
A 120 jacobi 2048 2048 200
A 300 jacobi 32000 32000 20
A 120 wave_sim 4096 400
A 200 wave_sim 16384 100
A 60 ep S
A 60 ep W
A 60 ep A
A 60 ep B
A 100 ep C
B 200 ep C iterative
B 200 ep C auto_tune
B 200 game_of_life_plan 2048 2048 200 iterative
B 300 game_of_life_plan 30000 30000 20 iterative
B 300 game_of_life_plan 30000 30000 20 auto_tune
B 300 bench_plan 4096 20
B 420 unbalanced 2048 1024 0,50,100 3
"
    ;;
h200x2)
    A=gpu0 B=gpu0,gpu1 C=gpu0,gpu1,cpu
    runs="
B 300 bench_exchange 1024
A 200 matmul 16384 3
B 200 matmul 16384 3
A 200 game_of_life 16384 16384 200
B 200 game_of_life 16384 16384 200
A 120 game_of_life 2048 2048 200
B 120 game_of_life 2048 2048 200
A 200 jacobi 16384 16384 200
B 200 jacobi 16384 16384 200
A 200 wave_sim 16384 100
B 200 wave_sim 16384 100
A 100 ep C
B 100 ep C
A 200 summa 16384 512
B 200 summa 16384 512
A 60 game_of_life 1024 1024 2000
B 60 game_of_life 1024 1024 2000
A 60 game_of_life 4096 4096 500
B 60 game_of_life 4096 4096 500
A 60 game_of_life 8192 8192 200
B 60 game_of_life 8192 8192 200
C 200 ep C iterative
C 300 game_of_life_plan 16384 16384 100 iterative
C 300 game_of_life_plan 16384 16384 100 auto_tune
C 420 unbalanced 2048 1024 0,50,100 3
"
    ;;
*) usage ;;
esac

commit=${RESULTS_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
gpus=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c |
    awk '{ $1 = $1 "x"; print }' | paste -sd ';' -)
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
mesa=$(dpkg-query -W -f '${Version}' mesa-vulkan-drivers 2>/dev/null || true)

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
report() {
    echo "$@"
    [[ -z $out ]] || echo "$@" >>"$out"
}
[[ -z $out ]] || : >"$out"

report "# hplvk samples, profile $profile"
report "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
report "commit: $commit"
report "machine: $(hostname 2>/dev/null || echo unknown), $(nproc) cores, ${cpu:-cpu unknown}"
report "gpus (count x name, driver): ${gpus:-none}"
report "mesa-vulkan-drivers: ${mesa:-unknown: see the LLVM version in llvmpipe device names}"
report ""

failed=0 total=0
while read -r which limit prog args; do
    [[ -n ${which:-} ]] || continue
    case $which in
    A) devices=$A ;;
    B) devices=$B ;;
    *) devices=${C:?}
    esac
    total=$((total + 1))
    t0=$(date +%s.%N)
    HPLVK_DEVICES=$devices timeout "$limit" "$bin/$prog" $args >"$tmp" 2>&1
    rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    result=$(grep '^RESULT ' "$tmp" | tail -1)
    report "run: HPLVK_DEVICES=$devices $prog $args  (exit $rc, ${wall} s)"
    if [[ $rc -ne 0 || $result != *"verified=yes"* ]]; then
        failed=$((failed + 1))
        tail -n 5 "$tmp" | sed 's/^/  | /' | while IFS= read -r l; do report "$l"; done
    fi
    report "${result:-RESULT missing}"
done <<<"$runs"

report ""
report "summary: $((total - failed)) of $total runs exited 0 and verified"
[[ $failed -eq 0 ]]
