#!/usr/bin/env bash
# hot_path.sh — the host's cost per eval for one or more builds of the
# library, in one run: bench_eval (host time in one hpl_eval, 1000
# dependent evals, eval + wait, each against its hand-written Vulkan
# baseline) and step_probe (host time per two-device stencil step), the
# same programs run against each library in turn, alternating, `rounds`
# times. What README's host-path rows are measured with, before and after
# a change to the hot path.
#
#   hot_path.sh [-r rounds] [-e "bench_eval args"] [-s "step_probe args"] [-b bindir] LIBDIR...
#
#   LIBDIR   a directory holding libhplvk.so.0: a build tree, or that of
#            another commit (e.g. a worktree's build/)
#   rounds   alternating rounds (default 2; bench_eval makes 5 of its own)
#   bindir   the programs (default: build/samples/bench of this tree)
#   STEP_DEVICES (environment): step_probe's devices (default gpu0:2, as
#            queues of one VkDevice: HPLVK_LOGICAL_DEVICES=queues)
# Prints every run's figures, then per library the median over rounds of
# bench_eval's three medians and ratios, and step_probe's range per step.
# Exits non-zero when a program fails.
set -euo pipefail
rounds=2
eval_args=""
step_args="256 2000 after"
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/samples/bench
usage() {
    echo "usage: $0 [-r rounds] [-e \"bench_eval args\"] [-s \"step_probe args\"] [-b bindir] LIBDIR..." >&2
    exit 2
}
while getopts "r:e:s:b:" o; do
    case $o in
    r) rounds=$OPTARG ;;
    e) eval_args=$OPTARG ;;
    s) step_args=$OPTARG ;;
    b) bin=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
if [[ $# -lt 1 ]] || ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
    usage
fi
for lib in "$@"; do
    [[ -e $lib/libhplvk.so.0 ]] || { echo "hot_path.sh: $lib holds no libhplvk.so.0" >&2; exit 2; }
done
step_devices=${STEP_DEVICES:-gpu0:2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "hot_path: rounds=$rounds bench_eval=[$eval_args] step_probe=[$step_args] step_devices=$step_devices date=$(date -u +%FT%TZ)"
for ((r = 1; r <= rounds; r++)); do
    i=0
    for lib in "$@"; do
        i=$((i + 1))
        echo "== round $r, library $i ($lib): bench_eval $eval_args"
        # shellcheck disable=SC2086 # the arguments are words
        LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin/bench_eval" $eval_args | tee "$out/eval.$i.$r"
        echo "== round $r, library $i ($lib): step_probe $step_args on $step_devices"
        # shellcheck disable=SC2086
        HPLVK_DEVICES=$step_devices HPLVK_LOGICAL_DEVICES=queues LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            "$bin/probes/step_probe" $step_args | tee "$out/step.$i.$r"
    done
done

# bench_eval's targets lines: "(a) round trip: ... = 1.24 ...", "(b) ...",
# "(c) host time per hpl_eval = 4.30 us ...": the figure after '=' (its
# table's section titles, "(c) host time inside one call", have none).
figure() { grep -h "^ *($1).*=" "$out"/eval."$2".* | sed 's/^[^=]*= *\([0-9.]*\).*/\1/'; }
i=0
echo "summary (medians over $rounds rounds; step_probe: lowest - highest of every repetition)"
for lib in "$@"; do
    i=$((i + 1))
    host=$(figure c $i | median)
    trip=$(figure a $i | median)
    deps=$(figure b $i | median)
    steps=$(grep -h "host in hpl_eval" "$out"/step."$i".* | sed 's/.*host in hpl_eval \([0-9.]*\) us\/step, whole \([0-9.]*\).*/\1 \2/')
    in_range=$(awk '{print $1}' <<<"$steps" | sort -g | sed -n '1p;$p' | paste -sd- -)
    whole_range=$(awk '{print $2}' <<<"$steps" | sort -g | sed -n '1p;$p' | paste -sd- -)
    echo "library $i ($lib): host time per hpl_eval ${host} us; eval+wait / submit+spin ${trip}; dependent evals / one command buffer ${deps}; two-device step: host in hpl_eval ${in_range} us, whole ${whole_range} us"
done
