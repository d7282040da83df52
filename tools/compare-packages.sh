#!/bin/sh
# Runs two model packages of the same weights with one florence-studio-cli on the same sample
# scenes and tasks, and fails unless both generate the same tokens. Used to prove that a package
# exported by one release's PyTorch (Debian 12: 1.13, Debian 13: 2.6) runs unchanged on the
# other release's LibTorch: compare the bundled model exported on each release.
#   tools/compare-packages.sh CLI PACKAGE_A PACKAGE_B [SCENE.png ...]
# The scene defaults to samples/scenes/scene_00.png next to the CLI
# (<bin>/../share/florence-studio). Needs no source tree (tools/test-in-fresh-root.sh copies it
# into the root).
set -eu
cli=${1:?usage: $0 CLI PACKAGE_A PACKAGE_B [SCENE.png ...]}
a=${2:?usage: $0 CLI PACKAGE_A PACKAGE_B [SCENE.png ...]}
b=${3:?usage: $0 CLI PACKAGE_A PACKAGE_B [SCENE.png ...]}
shift 3
if [ $# -eq 0 ]; then
    scenes=$(dirname "$cli")/../share/florence-studio/samples/scenes
    set -- "$scenes/scene_00.png"
fi
torch_of() { sed -n 's/.*"torch_version": *"\([^"]*\)".*/\1/p' "$1/manifest.json"; }
echo "== $cli: $a (PyTorch $(torch_of "$a")) against $b (PyTorch $(torch_of "$b"))" >&2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The generated token ids from the --json output (one line, "generated_ids":[...]).
# The precision is always named: left automatic, each package measures its own and the two can
# pick different ones (int8 and bfloat16 both within a few percent of each other on AVX-512).
ids() {
    "$cli" run --model "$1" --image "$2" --task "$3" $4 --max-new-tokens 40 --quiet --json \
        > "$tmp/out.json" || { echo "COMPARE FAILED: $1 does not run" >&2; exit 1; }
    tr -d ' \n' < "$tmp/out.json" | sed -n 's/.*"generated_ids":\(\[[^]]*\]\).*/\1/p'
}
runs=0
for scene in "$@"; do
    # The cached step and the uncached full recompute run different methods of decoder.pt; the
    # reduced precisions quantize the same weights at load time and must agree as well.
    for run in "<CAPTION> --precision float32" "<OD> --precision float32" \
        "<OCR> --precision float32" "<CAPTION> --precision float32 --no-cache" \
        "<CAPTION> --precision bfloat16" "<CAPTION> --precision int8"; do
        task=${run%% *}
        mode=${run#"$task"}
        ia=$(ids "$a" "$scene" "$task" "$mode")
        ib=$(ids "$b" "$scene" "$task" "$mode")
        [ -n "$ia" ] || { echo "COMPARE FAILED: no generated_ids in the output" >&2; exit 1; }
        if [ "$ia" != "$ib" ]; then
            echo "COMPARE FAILED: $(basename "$scene") $task$mode: $ia against $ib" >&2
            exit 1
        fi
        runs=$((runs + 1))
    done
done
echo "same tokens in all $runs runs" >&2
