#!/usr/bin/env bash
# Installs what is missing, builds everything and runs all tests (CTest).
#   tools/run-tests.sh            build in ./build
#   BUILD_DIR=/tmp/b tools/run-tests.sh
# Each step's start is printed with the seconds since the start, so a slow machine shows where
# its time went.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
started=$SECONDS
step() { echo "== [run-tests, $((SECONDS - started)) s] $*" >&2; }

step "Debian packages (tools/install-deps.sh)"
"$root/tools/install-deps.sh"
# ccache (tools/install-deps.sh installs it): a second build of the same sources, in this folder
# or in another clone at the same path, takes its objects from the cache (a cold build takes
# 15-25 minutes on two cores). The paths under the clone are hashed relative to it.
launcher=()
if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
fi
step "configure and build ($build, $(nproc) jobs${launcher:+, ccache})"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}"
cmake --build "$build" -j "$(nproc)"
step "test suites (CTest, $(nproc) at once)"
cd "$build"
# As many suites at once as there are cores: much of a suite's time is spent starting processes,
# importing Python's torch and waiting on them, which another suite fills (the longest start
# first: see FLORENCE_TEST_COSTS in tests/CMakeLists.txt). No test measures time.
ctest --output-on-failure --timeout 1200 -j "$(nproc)"
step "done"
