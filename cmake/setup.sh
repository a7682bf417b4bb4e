#!/usr/bin/env bash
# The one script behind README's two commands:
#
#   sudo cmake/setup.sh sample   build hplvk and run samples/vector_add
#   sudo cmake/setup.sh test     build and run the whole test suite, then again
#                                with AddressSanitizer + UBSan (build-asan/)
#
# On Debian/Ubuntu it first installs the packages that are missing (as root,
# without recommends: libc6-dev, only recommended by gcc, is listed itself;
# without root it names them and stops). Runs from any directory; exits
# non-zero on any failure.
set -euo pipefail

usage() {
    echo "usage: $0 sample|test" >&2
    exit 2
}
[[ $# -eq 1 ]] || usage
mode=$1
case "$mode" in sample | test) ;; *) usage ;; esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

say() { printf '\n==> %s\n' "$*"; }
t0=$SECONDS

# --- packages -----------------------------------------------------------------
packages=(libvulkan-dev mesa-vulkan-drivers glslc libshaderc-dev glslang-dev spirv-tools
          vulkan-validationlayers libspirv-cross-c-shared-dev vulkan-tools
          cmake gcc g++ make pkg-config libc6-dev python3
          libopenmpi-dev openmpi-bin)
if command -v dpkg-query >/dev/null 2>&1; then
    missing=()
    for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
            missing+=("$p")
        fi
    done
    if ((${#missing[@]})); then
        if [[ $(id -u) -ne 0 ]]; then
            echo "setup.sh: missing packages: ${missing[*]}" >&2
            echo "setup.sh: run as root (sudo $0 $mode), or: sudo apt-get install ${missing[*]}" >&2
            exit 1
        fi
        say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    else
        say "packages: all present"
    fi
else
    echo "setup.sh: not a Debian system: make sure these (or their equivalents) are installed: ${packages[*]}" >&2
fi

# Run as `sudo cmake/setup.sh ...`: give the build trees back to the user.
give_back() {
    if [[ $(id -u) -eq 0 && -n ${SUDO_UID:-} && ${SUDO_UID} != 0 ]]; then
        for d in build build-asan; do
            [[ -d $d ]] && chown -R "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$d" || true
        done
    fi
}
trap give_back EXIT

jobs=$(nproc 2>/dev/null || echo 2)
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

# build <dir> <cmake args...>: configure (once) and build.
build() {
    local dir=$1
    shift
    say "configure $dir"
    if [[ -f $dir/CMakeCache.txt ]]; then
        cmake -S . -B "$dir" "$@"
    else
        cmake -S . -B "$dir" "${generator[@]}" "$@"
    fi
    say "build $dir"
    cmake --build "$dir" --parallel "$jobs"
}

# --- the main build: Release with debug info, warnings are errors ------------
build build -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-g -DHPLVK_SANITIZE=OFF -DHPLVK_WERROR=ON

if [[ $mode == sample ]]; then
    say "run samples/vector_add"
    build/samples/vector_add
    say "done in $((SECONDS - t0)) s"
    exit 0
fi

status=0
say "test: build/"
ctest --test-dir build --output-on-failure -j2 || status=1

# --- the same suite under AddressSanitizer + UndefinedBehaviorSanitizer -------
build build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O1 -DHPLVK_SANITIZE=ON
say "test: build-asan/ (ASan + UBSan)"
# Every lane but long (cmake/lanes.cmake): the longest bounded runs ran in
# build/ above, and build-asan/ runs each of their programs in its other
# tests (quick, variant, bench); install_consumer needs an unsanitized build.
# Of the MPI tests it leaves out the variants over other devices or chunk
# sizes (*_zc_ranks<k>, *_chunk_ranks<k>) and the samples' comparisons with
# one process (sample_*_ranks<k>): their programs run under ASan in the
# other MPI tests, and the samples' alone; and test_ranks_memory, which
# measures resident memory, of which ASan's shadow and allocator add
# hundreds of MiB.
ctest --test-dir build-asan --output-on-failure -j2 -LE '^(install|long)$' \
    -E '_(zc|chunk)_ranks[0-9]+$|^sample_.+_ranks[0-9]+$|^test_ranks_memory_ranks[0-9]+$' || status=1

say "done in $((SECONDS - t0)) s: $([[ $status -eq 0 ]] && echo 'all passed' || echo 'FAILURES above')"
exit $status
