#!/usr/bin/env bash
# bench_bounds.sh — what bounds checks cost (hplvk.h chapter 6c): each
# sample run with HPLVK_BOUNDS_CHECK=0 and =1, alternately, `rounds` times
# each, on the same devices in the same run; prints each run's time_ms (from
# the sample's RESULT line, which also says verified=yes) and, per sample,
# the median of each mode and their ratio (checked / unchecked).
#
#   bench_bounds.sh [-r rounds] [-d devices] [samples_bindir]
#
#   rounds   runs per mode and sample (default 5)
#   devices  HPLVK_DEVICES for every run (default gpu0). On CPU and
#            zero-copy devices kernels are always checked: there both modes
#            are the same, and the ratio is 1 within noise.
# Exits non-zero when a run fails or does not verify.
set -euo pipefail
rounds=5
devices=gpu0
while getopts "r:d:" o; do
    case $o in
    r) rounds=$OPTARG ;;
    d) devices=$OPTARG ;;
    *) echo "usage: $0 [-r rounds] [-d devices] [samples_bindir]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
bin=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/samples}

# The stencils and the matrix product, at sizes that keep a GPU busy for
# tens of milliseconds (HPLVK_DEVICES=cpu: use small ones, -d cpu and edit).
runs=${BENCH_BOUNDS_RUNS:-"
game_of_life 4096 4096 200
jacobi 4096 4096 200
wave_sim 4096 400
matmul 4096 5
"}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "bench_bounds: devices=$devices rounds=$rounds date=$(date -u +%FT%TZ) commit=$(git -C "$bin/../.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
status=0
while read -r prog args; do
    [[ -n $prog ]] || continue
    declare -a t0=() t1=()
    for ((r = 0; r < rounds; r++)); do
        for mode in 0 1; do
            out=$(HPLVK_DEVICES=$devices HPLVK_BOUNDS_CHECK=$mode "$bin/$prog" $args 2>&1) || { echo "$out"; status=1; }
            line=$(grep '^RESULT ' <<<"$out" | tail -1)
            [[ $line == *verified=yes* ]] || { echo "not verified: $prog $args (check=$mode): $line"; status=1; continue; }
            ms=$(sed -n 's/.* time_ms=\([0-9.]*\).*/\1/p' <<<"$line")
            echo "run: $prog $args check=$mode time_ms=$ms"
            if ((mode)); then t1+=("$ms"); else t0+=("$ms"); fi
        done
    done
    ((${#t0[@]} && ${#t1[@]})) || continue
    m0=$(printf '%s\n' "${t0[@]}" | median)
    m1=$(printf '%s\n' "${t1[@]}" | median)
    awk -v p="$prog $args" -v a="$m0" -v b="$m1" \
        'BEGIN {printf "summary: %s  unchecked %.3f ms  checked %.3f ms  ratio %.3f\n", p, a, b, b / a}'
done <<<"$runs"
exit $status
