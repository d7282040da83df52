#!/bin/sh
# ONNX Runtime as a second baseline for `florence-studio-cli bench` (tools/onnx-baseline/README.md).
#
#   tools/onnx-baseline/run.sh [--size base|large] [--rounds N] [--tokens N] [--threads 2,1]
#                              [--no-spin] [--bench CLI [--repeat N]] [--hold avx2|avx2-novnni]
#
# Exports the speed demo's model to ONNX once (cached in
# ${XDG_CACHE_HOME:-~/.cache}/florence-studio/onnx-baseline/SIZE, made again when the exporter's
# code changes), installs onnxruntime-node from package-lock.json when node_modules is missing
# (needs network once), runs runner.js and prints its table. With --bench CLI it alternates
# runner.js with `CLI bench --size SIZE --no-uncached --no-batch --no-python --lengths TOKENS`,
# --repeat times (default 2), and prints both and their ratios (report.js); before that it checks
# the export against the engine: `CLI run` on the speed demo with the export's pixels, 32 tokens,
# and check_cli.js decoding the same on ONNX Runtime (fp32 must choose the same tokens).
# --no-spin: ONNX Runtime's idle threads sleep instead of spinning (its default).
# --hold avx2: on an AVX-512 machine, both sides run as a CPU with AVX2 and AVX-VNNI but no
# AVX-512 would (Intel's consumer CPUs since Alder Lake): ONNX Runtime from a patched copy
# (hold_isa.py), the engine with FLORENCE_KERNELS=avx2 ATEN_CPU_CAPABILITY=avx2
# DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell (OpenBLAS otherwise picks its AVX-512 kernels
# for the float32 products LibTorch sends it). A CPU with AVX-VNNI keeps it on both sides.
# --hold avx2-novnni: as avx2, and AVX-VNNI's int8 kernels skipped on both sides (ONNX Runtime's
# copy made with hold_isa.py --no-avx-vnni, the engine with FLORENCE_AVX_VNNI=0): AMD Zen 2 and 3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
size=base rounds=5 tokens=64 threads=2,1 cli= repeat=2 spin= hold=
while [ $# -gt 0 ]; do
    case $1 in
        --size) size=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --tokens) tokens=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --bench) cli=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --no-spin) spin=--no-spin; shift ;;
        --hold) hold=$2; shift 2 ;;
        -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
cache=${XDG_CACHE_HOME:-$HOME/.cache}/florence-studio/onnx-baseline
dir=$cache/$size
python=${FLORENCE_PYTHON:-/usr/bin/python3}

if ! "$python" -c 'import torch, onnx, PIL' 2>/dev/null; then
    echo "run.sh: $python needs torch, onnx and PIL (apt install python3-torch python3-onnx python3-pil)" >&2
    exit 1
fi
if [ ! -d "$here/node_modules/onnxruntime-node" ]; then
    # --ignore-scripts: the CPU binary ships inside the package; its install script would only
    # download GPU providers.
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund)
fi
held=
case $hold in
    '') ;;
    avx2|avx2-novnni)
        held=$cache/held-$hold
        novnni=
        if [ "$hold" = avx2-novnni ]; then
            novnni=--no-avx-vnni
            export FLORENCE_AVX_VNNI=0
        fi
        "$python" "$here/hold_isa.py" $novnni "$held" > /dev/null
        export FLORENCE_KERNELS=avx2 ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 \
            OPENBLAS_CORETYPE=Haswell
        ;;
    *) echo "run.sh: --hold takes avx2 or avx2-novnni" >&2; exit 2 ;;
esac
# node with ONNX Runtime: the held copy is loaded first, and the binding takes it by its soname.
ort_node() {
    if [ -n "$held" ]; then LD_PRELOAD="$held/libonnxruntime.so.1" node "$@"; else node "$@"; fi
}

# The speed demo installed with the CLI: its manifest's recipe and seed are checked against ours.
package=
if [ -n "$cli" ]; then
    share=$(cd "$(dirname "$cli")/.." && pwd)/share/florence-studio/models/speed-demo-$size
    [ -f "$share/manifest.json" ] && package=$share
fi
mkdir -p "$cache"
"$python" "$here/export_onnx.py" --size "$size" --out "$dir" ${package:+--package "$package"} \
    2> "$cache/export-$size.log" || { tail -20 "$cache/export-$size.log" >&2; exit 1; }
grep '^export_onnx:' "$cache/export-$size.log" >&2 || true

if [ -z "$cli" ]; then
    ort_node "$here/runner.js" --dir "$dir" --rounds "$rounds" --tokens "$tokens" \
        --threads "$threads" $spin
    exit
fi
runs=$(mktemp -d "${TMPDIR:-/tmp}/onnx-baseline.XXXXXX")
trap 'rm -rf "$runs"' EXIT
if [ -n "$package" ]; then
    echo "checking the export against the engine (32 tokens of <CAPTION>, greedy)" >&2
    "$cli" run --model "$package" --pixel-values "$dir/pixels.safetensors" --task '<CAPTION>' \
        --beams 1 --ignore-eos --max-new-tokens 32 --precision float32 --json --quiet \
        > "$runs/cli-run.json"
    ort_node "$here/check_cli.js" --dir "$dir" --cli-json "$runs/cli-run.json" ||
        echo "run.sh: WARNING: ONNX Runtime's fp32 tokens differ from the engine's" >&2
    ort_node "$here/check_cli.js" --dir "$dir" --cli-json "$runs/cli-run.json" --variant int8 || true
fi
ort= engine=
i=1
while [ "$i" -le "$repeat" ]; do
    echo "run $i/$repeat: ONNX Runtime" >&2
    ort_node "$here/runner.js" --dir "$dir" --rounds "$rounds" --tokens "$tokens" \
        --threads "$threads" $spin --json > "$runs/ort-$i.json"
    echo "run $i/$repeat: florence-studio-cli bench" >&2
    "$cli" bench --size "$size" --no-uncached --no-batch --no-python --lengths "$tokens" --json \
        > "$runs/engine-$i.json"
    ort="$ort --ort $runs/ort-$i.json" engine="$engine --engine $runs/engine-$i.json"
    i=$((i + 1))
done
# shellcheck disable=SC2086 # the lists are built above from our own file names
node "$here/report.js" --tokens "$tokens" $ort $engine
if [ -n "${KEEP_RUNS:-}" ]; then
    mkdir -p "$KEEP_RUNS" && cp "$runs"/*.json "$KEEP_RUNS"/
fi
