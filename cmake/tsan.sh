#!/usr/bin/env bash
# The threaded tests under ThreadSanitizer (README, Build and test):
#
#   cmake/tsan.sh
#
# Builds build-tsan/ (HPLVK_TSAN=ON: library, tests and samples with
# -fsanitize=thread) and runs with ctest the tests where several threads
# use hplvk at once: the application's threads on one context, the
# progress thread (every test has one), the submit threads
# (HPLVK_SUBMIT_THREAD=1 variants), the event log and its timestamps.
# A race report fails its test (tests/tsan.supp names the only reports
# left out: the Vulkan driver's own). Needs what `cmake/setup.sh test` installs;
# exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

tests=(test_threads test_threads_submit_thread unit_batching unit_batching_submit_thread
       test_multidevice test_multidevice_submit_thread test_halos_first_submit_thread
       test_push_submit_thread test_trace unit_event_log unit_region_waits unit_compile unit_args_stamp
       test_ranks_threads
       unit_inflight)

generator=()
[[ ! -f build-tsan/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S . -B build-tsan "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O1 -DHPLVK_TSAN=ON \
      -DHPLVK_WERROR=ON
targets=()
for t in "${tests[@]}"; do
    targets+=("${t%_submit_thread}")
done
cmake --build build-tsan --parallel "$(nproc 2>/dev/null || echo 2)" --target $(printf '%s\n' "${targets[@]}" | sort -u)
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
ctest --test-dir build-tsan --output-on-failure -j2 -R "$regex"
