#!/bin/sh
# Part of ctest install_consumer (cmake/test_install.cmake): builds and runs
# README.md's example exactly as printed there, against hplvk installed under
# $HOME/hplvk (a fake HOME in the test's work directory).
#
#   test_readme.sh README.md WORKDIR
#   environment: HOME (hplvk installed in $HOME/hplvk), CC, PKG_CONFIG, GLSLC,
#                PCDIR (the directory holding the installed hplvk.pc)
#
# From the "## Example" section it takes the ```c block (app.c), the
# ```glsl block (saxpy.comp), the ```sh blocks (1: build and run; 2: the
# rpath build for a non-system prefix; 3: the offline glslc line), the
# LD_LIBRARY_PATH command and the output after "It prints". `cc`,
# `pkg-config` and `glslc` in those lines run $CC, $PKG_CONFIG and $GLSLC.
# Leaves WORKDIR/saxpy.spv (README's kernel compiled offline) for the
# consumers.
set -eu
readme=$1
dir=$2
fail() {
    echo "test_readme: $*" >&2
    exit 1
}
mkdir -p "$dir"
cd "$dir"

# The Example section only (up to the next "## " heading).
awk '/^## Example/ { on = 1; next } on && /^## / { exit } on { print }' "$readme" > example.md
# block LANG N: the N-th fenced block of language LANG.
block() {
    awk -v lang="$1" -v n="$2" '
        !inside && $0 == "```" lang { k++; if (k == n) { inside = 1; next } }
        inside && $0 == "```" { exit }
        inside { print }' example.md
}
block c 1 > app.c
block glsl 1 > saxpy.comp
block sh 1 > build1.sh
block sh 2 > build2.sh
block sh 3 > glslc.sh
for f in app.c saxpy.comp build1.sh build2.sh glslc.sh; do
    [ -s "$f" ] || fail "README.md's Example section has no block for $f"
done
expected=$(sed -n 's/.*It prints `\([^`]*\)`.*/\1/p' example.md | head -n 1)
[ -n "$expected" ] || fail "README.md's Example section does not say what the program prints (It prints \`...\`)"
ldrun=$(grep -o '`LD_LIBRARY_PATH=[^`]*`' example.md | head -n 1 | tr -d '`')
[ -n "$ldrun" ] || fail "README.md's Example section gives no LD_LIBRARY_PATH command"

# The tools, as the README names them.
cc() { "$CC" "$@"; }
pkg_config() { "$PKG_CONFIG" "$@"; }
glslc() { "$GLSLC" "$@"; }
# run_lines FILE: each line of FILE in this shell, except lines running
# ./app (the caller runs it, with or without LD_LIBRARY_PATH).
run_lines() {
    while IFS= read -r line; do
        case $line in
        ./app*) ;;
        *)
            line=$(printf '%s\n' "$line" | sed 's/pkg-config/pkg_config/g')
            echo "+ $line"
            eval "$line" || fail "README.md's command failed: $line"
            ;;
        esac
    done < "$1"
}
# check_run COMMAND: runs it (the output must be README's).
check_run() {
    echo "+ $1"
    out=$(eval "$1") || fail "README.md's program failed: $1"
    echo "$out"
    [ "$out" = "$expected" ] || fail "$1 printed '$out', README.md says '$expected'"
}

unset LD_LIBRARY_PATH
# 1. The plain build: pkg-config finds hplvk.pc (PKG_CONFIG_PATH, as a
# system install would not need); the program runs with README's
# LD_LIBRARY_PATH command.
PKG_CONFIG_PATH=$PCDIR
export PKG_CONFIG_PATH
grep -q '^\./app$' build1.sh || fail "README.md's first build block does not run ./app"
rm -f app
run_lines build1.sh
[ -x app ] || fail "README.md's first build block made no ./app"
ldrun=$(printf '%s\n' "$ldrun" | sed 's/pkg-config/pkg_config/g')
check_run "$ldrun"

# 2. The non-system prefix: README's PKG_CONFIG_PATH line and rpath build;
# the program runs without LD_LIBRARY_PATH.
unset PKG_CONFIG_PATH
rm -f app
run_lines build2.sh
[ -f "${PKG_CONFIG_PATH:-}/hplvk.pc" ] || fail "README.md's PKG_CONFIG_PATH (${PKG_CONFIG_PATH:-unset}) does not hold hplvk.pc (installed in $PCDIR)"
[ -x app ] || fail "README.md's rpath build made no ./app"
check_run ./app

# 3. The offline kernel compile, with the installed <hplvk.glsl>.
rm -f saxpy.spv
run_lines glslc.sh
[ -s saxpy.spv ] || fail "README.md's glslc line made no saxpy.spv"
echo "test_readme: README.md's example built and ran as printed: $expected"
