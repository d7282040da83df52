#!/usr/bin/env bash
# Installs what is missing, builds, and starts Florence Studio on the bundled model.
#   tools/run-app.sh [IMAGE]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

"$root/tools/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)" --target florence-studio florence-studio-cli florence_data
exec "$build/bin/florence-studio" "$@"
