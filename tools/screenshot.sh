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
# Extra options: --view history|process-folder opens that view after the run and grabs it;
# --also-dark grabs the same state again in the dark theme (OUT-dark.png); --also-720p grabs the
# window again resized for a 1280x720 screen (OUT-720p.png, OUT-720p-dark.png).
#
# The History panel and Process Folder, each at 1x, 2x and 1280x720, light and dark, on the
# bundled model (six runs of a few seconds each; OUT_DIR defaults to docs):
#   tools/screenshot.sh views [BUILD_DIR] [OUT_DIR]
# The README's comparison at Florence-2-base size (the speed-demo model, greedy, exactly 256
# tokens; the uncached passes take minutes, so run it on a quiet machine):
#   tools/screenshot.sh compare-base [BUILD_DIR] [OUT.png]     # default docs/compare-base.png
# Both run in float32 (FLORENCE_PRECISION, when not set otherwise), the figures docs/app.md
# quotes; Automatic would first measure the three precisions, minutes at base size.
# The same in all six variants from two comparisons: one at 1x that grabs light, dark and the
# 1280x720 window size after its verdict, one at 2x that grabs light and dark. MODEL_DIR
# (default the speed demo) lets the bundled model (BUILD_DIR/share/florence-studio/models/
# default) check the script in a minute:
#   tools/screenshot.sh compare-base-all [BUILD_DIR] [OUT_DIR] [MODEL_DIR]
# The app runs the task, waits until the run ends, grabs its window with QWidget::grab() and
# exits; settings and the run history go to a throwaway folder so the shot never depends on
# (or changes) yours.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
absolute() { case $1 in /*) echo "$1" ;; *) echo "$here/$1" ;; esac; }
if [ "${1:-}" = views ]; then
    build=$(absolute "${2:-build}")
    outdir=$(absolute "${3:-docs}")
    scene=$here/resources/samples/scenes/scene_00.png
    for view in history process-folder; do
        "$0" "$build" "$outdir/$view.png" "$scene" "<CAPTION>" --view "$view" --also-dark
        QT_SCALE_FACTOR=2 "$0" "$build" "$outdir/$view-2x.png" "$scene" "<CAPTION>" \
            --view "$view" --also-dark
        SCREEN=1280x720 "$0" "$build" "$outdir/$view-720p.png" "$scene" "<CAPTION>" \
            --view "$view" --also-dark
    done
    exit 0
fi
case ${1:-} in compare-base*) export FLORENCE_PRECISION=${FLORENCE_PRECISION:-float32} ;; esac
if [ "${1:-}" = compare-base-all ]; then
    build=$(absolute "${2:-build}")
    outdir=$(absolute "${3:-docs}")
    model=$(absolute "${4:-$build/share/florence-studio/models/speed-demo-base}")
    "$0" "$build" "$outdir/compare-base.png" "" "<CAPTION>" --compare --beams 1 \
        --max-new-tokens 256 --model "$model" --also-dark --also-720p
    QT_SCALE_FACTOR=2 "$0" "$build" "$outdir/compare-base-2x.png" "" "<CAPTION>" --compare \
        --beams 1 --max-new-tokens 256 --model "$model" --also-dark
    exit 0
fi
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
