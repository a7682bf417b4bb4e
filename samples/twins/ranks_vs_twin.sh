#!/usr/bin/env bash
# ranks_vs_twin.sh — the time of jacobi over MPI ranks (hplvk) against its
# hand-written MPI + Vulkan twin on the same devices: runs
#   mpiexec -n R jacobi NX NY STEPS   and   mpiexec -n R twin_jacobi_mpi NX NY STEPS
# alternately, RUNS times each (default 3), and prints each run's time_ms
# (the timed steps 1 .. STEPS-1 of the RESULT line), both medians and the
# ratio hplvk / twin.
#
#   ranks_vs_twin.sh [-b build_dir] R NX NY STEPS [RUNS]
#
# build_dir: where the programs were built (default build/ at the top of the
# source tree). The devices are the environment's: HPLVK_DEVICES for jacobi
# on each rank, TWIN_DEVICE for the twin (e.g. HPLVK_DEVICES=cpu
# TWIN_DEVICE=cpu for Lavapipe on every rank); MPI settings (OMPI_*) too.
# Exits non-zero when a run fails or does not say verified=yes.
set -euo pipefail

build=$(dirname "${BASH_SOURCE[0]}")/../../build
if [[ $# -gt 0 && $1 == -b ]]; then
    build=$2
    shift 2
fi
if [[ $# -lt 4 || $# -gt 5 ]]; then
    echo "usage: $0 [-b build_dir] R NX NY STEPS [RUNS]" >&2
    exit 2
fi
ranks=$1 runs=${5:-3}
shift
size=("$1" "$2" "$3")

# One run's time_ms; fails unless its RESULT line says verified=yes.
time_of() {
    local out
    out=$(mpiexec -n "$ranks" "$@" "${size[@]}" 2>&1) || { echo "$out" >&2; echo "$0: $1 failed" >&2; return 1; }
    local line
    line=$(grep '^RESULT ' <<<"$out") || { echo "$out" >&2; return 1; }
    [[ $line == *" verified=yes"* ]] || { echo "$line" >&2; echo "$0: $1 not verified" >&2; return 1; }
    sed -E 's/.* time_ms=([0-9.]+) .*/\1/' <<<"$line"
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

hplvk=() twin=()
for ((i = 1; i <= runs; i++)); do
    hplvk+=("$(time_of "$build/samples/jacobi")")
    twin+=("$(time_of "$build/samples/twins/twin_jacobi_mpi")")
    echo "run $i: jacobi ${hplvk[-1]} ms, twin_jacobi_mpi ${twin[-1]} ms"
done
mh=$(printf '%s\n' "${hplvk[@]}" | median)
mt=$(printf '%s\n' "${twin[@]}" | median)
awk -v r="$ranks" -v s="${size[*]}" -v h="$mh" -v t="$mt" 'BEGIN {
    printf "ranks=%s size=%s: median time_ms jacobi %.3f, twin_jacobi_mpi %.3f, hplvk/twin %.3f\n", r, s, h, t, h / t }'
