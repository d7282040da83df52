#!/bin/sh
# Smoke test of an installed Florence Studio: runs the programs under PREFIX the way a user
# would, with no FLORENCE_* variables set, so they must find the bundled model, samples and
# exporter on their own.
#   tools/smoke-test-installed.sh [PREFIX]      PREFIX: /usr (default) or an unpacked tarball
# SMOKE_IMPORT=0 skips the import check (it also skips itself when /usr/bin/python3 has no torch).
# Used by tools/test-package.sh and tools/test-in-fresh-root.sh; needs no source tree.
set -eu
prefix=${1:-/usr}
bin=$prefix/bin
data=$prefix/share/florence-studio
sample=$data/samples/scenes/scene_00.png
# A scene of the kind the bundled demo model was trained on. A short limit keeps every run a few
# seconds long whatever the model says.
tokens=${SMOKE_MAX_NEW_TOKENS:-24}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/home"
# A clean environment: a fresh HOME and settings, no FLORENCE_* overrides.
run() {
    env -i PATH=/usr/bin:/bin HOME="$tmp/home" LANG=C.UTF-8 XDG_RUNTIME_DIR="$tmp" "$@"
}
step() { echo "== $*" >&2; }
fail() { echo "SMOKE TEST FAILED: $*" >&2; exit 1; }

step "files under $prefix"
for f in "$bin/florence-studio-cli" "$data/models/default/manifest.json" "$sample" \
         "$data/tools/florence2_export.py"; do
    [ -e "$f" ] || fail "missing $f"
done

step "florence-studio-cli --version"
run "$bin/florence-studio-cli" --version | tee "$tmp/version"
grep -Eq '^florence-studio-cli [0-9]+\.[0-9]+\.[0-9]+' "$tmp/version" || fail "no version"

step "florence-studio-cli run (bundled model, <CAPTION>)"
run "$bin/florence-studio-cli" run --image "$sample" --task "<CAPTION>" --quiet \
    --max-new-tokens "$tokens" --json > "$tmp/run.json" || fail "CLI run exited with $?"
grep -q '"<CAPTION>"' "$tmp/run.json" || fail "CLI run printed no caption: $(head -c 300 "$tmp/run.json")"
head -c 200 "$tmp/run.json" >&2; echo >&2

if [ "${SMOKE_IMPORT:-1}" != 0 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    step "florence-studio-cli import (installed exporter, random tiny model)"
    pkg=$tmp/home/.local/share/florence-studio/models/smoke
    run "$bin/florence-studio-cli" import --random-init tiny --seed 7 --out "$pkg" > "$tmp/import.log" 2>&1 ||
        { cat "$tmp/import.log" >&2; fail "import exited with an error"; }
    [ -f "$pkg/manifest.json" ] || fail "import wrote no manifest.json"
    run "$bin/florence-studio-cli" run --model "$pkg" --image "$sample" --task "<OD>" --quiet \
        --max-new-tokens "$tokens" > /dev/null || fail "run on the imported model failed"
else
    step "import: skipped (no python3-torch or SMOKE_IMPORT=0)"
fi

if [ -x "$bin/florence-studio" ]; then
    if run QT_QPA_PLATFORM=offscreen "$bin/florence-studio" --help 2>&1 | grep -q -- --screenshot; then
        step "florence-studio offscreen: run <CAPTION> and save a screenshot"
        run QT_QPA_PLATFORM=offscreen timeout 600 "$bin/florence-studio" --image "$sample" \
            --task "<CAPTION>" --max-new-tokens "$tokens" --size 1280x800 \
            --screenshot "$tmp/gui.png" || fail "GUI screenshot run exited with $?"
        # A PNG starts with \211PNG.
        [ "$(head -c 4 "$tmp/gui.png" | tail -c 3)" = PNG ] || fail "GUI wrote no PNG"
        echo "screenshot: $(wc -c < "$tmp/gui.png") bytes" >&2
    else
        step "florence-studio offscreen: start and stay up 10 s"
        run QT_QPA_PLATFORM=offscreen "$bin/florence-studio" "$sample" > "$tmp/gui.log" 2>&1 &
        pid=$!
        sleep 10
        kill -0 "$pid" 2>/dev/null || { cat "$tmp/gui.log" >&2; fail "GUI exited early"; }
        kill "$pid"
        wait "$pid" 2>/dev/null || true
    fi
else
    step "florence-studio: not installed (built without the GUI)"
fi

if command -v desktop-file-validate > /dev/null; then
    step "desktop-file-validate"
    for f in $(grep -l '^Exec=florence-studio' "$prefix"/share/applications/*.desktop); do
        desktop-file-validate "$f"
    done
fi
if command -v appstreamcli > /dev/null; then
    step "appstreamcli validate"
    for f in $(grep -l '<binary>florence-studio</binary>' "$prefix"/share/metainfo/*.xml); do
        appstreamcli validate --no-net "$f"
    done
fi
echo "smoke test passed: $prefix" >&2
