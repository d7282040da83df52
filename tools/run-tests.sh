#!/usr/bin/env bash
# Installs what is missing, builds everything and runs all tests (CTest).
#   tools/run-tests.sh            build in ./build
#   BUILD_DIR=/tmp/b tools/run-tests.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

"$root/tools/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure --timeout 1200 -j 1
