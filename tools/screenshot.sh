#!/bin/sh
# Takes a screenshot of Florence Studio after a run, under a virtual X server (Xvfb), for the
# docs. Usage:
#   tools/screenshot.sh [BUILD_DIR] [OUT.png] [IMAGE] [TASK] [extra florence-studio options…]
# Defaults: build, docs/screenshot.png, the pier sample, "<OD>". Example:
#   tools/screenshot.sh build docs/screenshot.png "" "<CAPTION>" --compare
#   QT_SCALE_FACTOR=2 tools/screenshot.sh build docs/screenshot-2x.png "" "<OD>" --dark
#   SCREEN=1280x720 tools/screenshot.sh build docs/screenshot-720p.png "" "<CAPTION>"
# SCREEN sets the virtual screen in logical pixels (default 1600x1000); the window takes
# 1440x900 of it, or the whole screen when that is smaller (as on a 1280x720 laptop).
# The README's comparison at Florence-2-base size (the speed-demo model, greedy, exactly 256
# tokens; the uncached passes take minutes, so run it on a quiet machine):
#   tools/screenshot.sh compare-base [BUILD_DIR] [OUT.png]     # default docs/compare-base.png
# The app runs the task, waits until the run ends, grabs its window with QWidget::grab() and
# exits; settings and the run history go to a throwaway folder so the shot never depends on
# (or changes) yours.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = compare-base ]; then
    build=${2:-$here/build}
    case $build in /*) ;; *) build=$here/$build ;; esac
    out=${3:-$here/docs/compare-base.png}
    exec "$0" "$build" "$out" "" "<CAPTION>" --compare --beams 1 --max-new-tokens 256 \
        --model "$build/share/florence-studio/models/speed-demo-base"
fi
build=${1:-$here/build}
out=${2:-$here/docs/screenshot.png}
image=${3:-}
task=${4:-<OD>}
[ $# -gt 4 ] && shift 4 || set --
case $build in /*) ;; *) build=$here/$build ;; esac
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
[ -n "$image" ] || image=$build/share/florence-studio/samples/pier.png
settings=$(mktemp -d)
trap 'rm -rf "$settings"' EXIT
mkdir -p "$(dirname "$out")"
# QT_SCALE_FACTOR=2 makes a 2x (high-DPI) shot: the virtual screen grows with it, so the window
# has the same logical size and every pixel is doubled.
scale=${QT_SCALE_FACTOR:-1}
logical=${SCREEN:-1600x1000}
sw=${logical%x*}
sh=${logical#*x}
screen=$(awk -v s="$scale" -v w="$sw" -v h="$sh" 'BEGIN { printf "%dx%d", w * s, h * s }')
size=$(awk -v w="$sw" -v h="$sh" 'BEGIN { printf "%dx%d", (w < 1440 ? w : 1440), (h < 900 ? h - 40 : 900) }')
XDG_CONFIG_HOME=$settings XDG_DATA_HOME=$settings QT_QPA_PLATFORM=xcb QT_SCALE_FACTOR=$scale \
    xvfb-run -a -s "-screen 0 ${screen}x24 -dpi 96" \
    "$build/bin/florence-studio" --size "$size" --image "$image" --task "$task" \
    --screenshot "$out" "$@"
echo "screenshot: $out"
