#!/usr/bin/env bash
# Runs the hostile-file and fault cases of docs/files-and-faults.md against a build, each under
# `timeout` and /usr/bin/time, and prints one Markdown table row per case: exit code, wall time,
# peak memory, what the files look like afterwards and the last line on stderr.
#   tools/probe-faults.sh [BUILD_DIR]          (default ./build; needs florence-studio-cli,
#                                               florence-studio and the bundled model built)
# The full-disk cases mount a tmpfs in a mount namespace of their own and need root; without
# it they are reported as skipped. Everything is made in a temporary folder and removed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
cli="$build/bin/florence-studio-cli"
app="$build/bin/florence-studio"
export FLORENCE_STUDIO_DATA="${FLORENCE_STUDIO_DATA:-$build/share/florence-studio}"
export OMP_WAIT_POLICY=PASSIVE QT_QPA_PLATFORM=offscreen
scenes="$root/resources/samples/scenes"
tiny="$root/tests/data/florence2-tiny-random"
limit="${PROBE_TIMEOUT:-180}"
work="$(mktemp -d /tmp/probe-faults.XXXXXX)"
trap 'rm -rf "$work"' EXIT
fast=(--beams 1 --max-new-tokens 24 --quiet)
is_root=0
[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null && is_root=1

echo "| case | exit | time | peak | afterwards | last line on stderr |"
echo "|---|---|---|---|---|---|"

# probe NAME CHECK -- COMMAND…: runs COMMAND; CHECK (a shell snippet) describes what is left.
probe() {
    local name="$1" check="$2"
    shift 3
    local err="$work/stderr" tm="$work/time"
    timeout -k 5 "$limit" /usr/bin/time -o "$tm" -f '%e %M' "$@" >"$work/stdout" 2>"$err"
    local code=$?
    [ "$code" = 124 ] && code="124 (timed out)"
    local secs mb
    read -r secs kb < <(tail -n 1 "$tm" 2>/dev/null) || { secs="?"; kb=0; }
    mb=$(( ${kb:-0} / 1024 ))
    local after=""
    [ -n "$check" ] && after="$(eval "$check" 2>&1 | tr '\n' ' ')"
    local last
    last="$(grep -v '^\s*$' "$err" | tail -n 1 | sed "s#$work#…#g" | cut -c1-160)"
    printf '| %s | %s | %s s | %s MB | %s | %s |\n' "$name" "$code" "$secs" "$mb" "$after" \
        "${last//|/\\|}"
}

zero_files() { find "$1" -type f -size 0 | wc -l | tr -d ' '; }
json_whole() { # how many of the JSON files under $1 are whole JSON
    local n=0 ok=0 f
    while IFS= read -r f; do
        n=$((n + 1))
        /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null &&
            ok=$((ok + 1))
    done < <(find "$1" -name '*.json' -type f)
    echo "$ok of $n JSON whole"
}

# ---------------------------------------------------------------------------------------------
# A full disk
imgs="$work/imgs"; mkdir -p "$imgs"; cp "$scenes"/scene_0[0-5].png "$imgs/"
many="$work/many"; mkdir -p "$many" # 30 images, as in the report that found the fault
for i in $(seq 0 29); do cp "$scenes/scene_0$((i % 6)).png" "$many/img_$i.png"; done
tmpfs_batch() { # DIR SIZE FILLER_KB ARGS…: batch DIR into a tmpfs of SIZE, FILLER_KB used
    local from="$1" size="$2" fill="$3"; shift 3
    local kept="$work/kept.$RANDOM"; mkdir -p "$kept"
    probe "batch of $(ls "$from" | wc -l) images on a $size tmpfs, ${fill} KB used $*" \
        "echo \$(zero_files $kept) empty files, \$(json_whole $kept)" -- \
        unshare -m sh -c 'mount -t tmpfs -o size="$1" tmpfs "$2" || exit 97
            [ "$3" -gt 0 ] && head -c "$(( $3 * 1024 ))" /dev/zero >"$2/filler"
            out="$2"; kept="$4"; shift 4
            "$@"; code=$?; rm -f "$out/filler"; cp -a "$out/." "$kept/"; exit $code' \
        sh "$size" "$work/mnt" "$fill" "$kept" "$cli" batch --dir "$from" --task "<OD>" \
        --out "$work/mnt" "$@" "${fast[@]}"
}
mkdir -p "$work/mnt"
if [ "$is_root" = 1 ]; then
    tmpfs_batch "$many" 120k 0
    tmpfs_batch "$imgs" 64k 40 --format txt,json,coco
else
    echo "| full disk on a tmpfs | skipped (needs root and unshare -m) | | | | |"
fi
# The limit is the command's only: its stderr goes through a pipe, which the limit does not cut.
good="$work/good"; mkdir -p "$good"; cp "$scenes"/scene_0[0-2].png "$good/"
"$cli" batch --dir "$good" --task "<OD>" --format json,coco "${fast[@]}" >/dev/null 2>&1
sum_before="$(cd "$good" && sha256sum ./* | sha256sum)"
probe "batch --overwrite, no room for any result (a file size limit of 1 KB)" \
    "[ \"\$(cd $good && sha256sum ./* | sha256sum)\" = \"$sum_before\" ] && echo every earlier result kept || echo results changed" -- \
    bash -c '( ulimit -f 1; trap "" XFSZ; exec "$@" ) 2> >(cat >&2); c=$?; wait $!; exit $c' \
    sh "$cli" batch \
    --dir "$good" --task "<OD>" \
    --format json,coco --overwrite "${fast[@]}"
cut="$work/cut"; mkdir -p "$cut"; cp "$scenes"/scene_0[0-2].png "$cut/"
"$cli" batch --dir "$cut" --task "<OD>" --format json "${fast[@]}" >/dev/null 2>&1
: >"$cut/scene_00.florence.json"
head -c 100 "$good/scene_01.florence.json" >"$cut/scene_01.florence.json"
probe "batch --resume over an empty and a cut sidecar" "json_whole $cut" -- \
    "$cli" batch --dir "$cut" --task "<OD>" --format json --resume "${fast[@]}"
probe "run --coco /dev/full" "" -- \
    "$cli" run --image "$scenes/scene_00.png" --task "<OD>" --coco /dev/full "${fast[@]}"
probe "run --json > /dev/full" "" -- \
    sh -c '"$@" >/dev/full' sh "$cli" run --image "$scenes/scene_00.png" --json "${fast[@]}"

# ---------------------------------------------------------------------------------------------
# Devices, FIFOs and huge files where files should be
side="$work/side"; mkdir -p "$side"; cp "$scenes"/scene_0[0-1].png "$side/"
ln -s /dev/zero "$side/scene_00.florence.json"; mkfifo "$side/scene_01.florence.json"
for mode in "" --resume --overwrite; do
    probe "batch, sidecars a link to /dev/zero and a FIFO ${mode}" \
        "test -L $side/scene_00.florence.json && test -p $side/scene_01.florence.json && echo both left as they were" -- \
        "$cli" batch --dir "$side" --task "<OD>" --format json $mode "${fast[@]}"
done
hf_case() { # NAME FILE KIND: an imported folder whose FILE is KIND (zero, fifo, loop, dir, deep)
    local dir="$work/hf.$RANDOM"; mkdir -p "$dir"
    cp "$tiny"/*.json "$dir/"; rm -f "$dir/reference.json"; cp "$tiny/pytorch_model.bin" "$dir/"
    rm -f "$dir/$2"
    case "$3" in
    zero) ln -s /dev/zero "$dir/$2" ;;
    fifo) mkfifo "$dir/$2" ;;
    loop) ln -s "$2" "$dir/$2" ;;
    dir) mkdir "$dir/$2" ;;
    deep) /usr/bin/python3 -c 'print("[" * 100000 + "]" * 100000)' >"$dir/$2" ;;
    sparse) # the checkpoint's own tensors, then 20 GB of zeros the header does not name
        rm -f "$dir/$2"
        /usr/bin/python3 "$root/tests/engine/make_safetensors_checkpoint.py" "$tiny" "$dir.st" &&
            mv "$dir.st/$2" "$dir/$2" && rm -rf "$dir.st" "$dir/pytorch_model.bin" &&
            truncate -s 20G "$dir/$2" ;;
    esac
    probe "import --hf: $1" "" -- "$cli" import --hf "$dir" --out "$work/pkg.$RANDOM"
    rm -rf "$dir"
}
hf_case "config.json a link to /dev/zero" config.json zero
hf_case "preprocessor_config.json a link to /dev/zero" preprocessor_config.json zero
hf_case "config.json a FIFO" config.json fifo
hf_case "model.safetensors a FIFO" model.safetensors fifo
hf_case "sparse 20 GB model.safetensors" model.safetensors sparse
hf_case "config.json nested 100,000 deep" config.json deep
hf_case "config.json a link loop" config.json loop
hf_case "config.json a folder" config.json dir

# The app: history.json a link to /dev/zero, a FIFO, 181 MB.
app_case() { # NAME KIND
    local home="$work/home.$RANDOM"; local hist="$home/.local/share/FlorenceStudio/florence-studio"
    mkdir -p "$hist"
    case "$2" in
    zero) ln -s /dev/zero "$hist/history.json" ;;
    fifo) mkfifo "$hist/history.json" ;;
    big) /usr/bin/python3 -c 'import sys; sys.stdout.write("[" + ",".join(["{\"x\": \"" + "y" * 1000 + "\"}"] * 185000) + "]")' >"$hist/history.json" ;;
    esac
    probe "app, history.json $1" \
        "ls $hist | tr '\n' ' '" -- \
        env HOME="$home" XDG_DATA_HOME="$home/.local/share" XDG_CONFIG_HOME="$home/.config" \
        "$app" --image "$scenes/scene_00.png" --task "<CAPTION>" --beams 1 --max-new-tokens 16 \
        --screenshot "$work/shot.png"
}
app_case "a link to /dev/zero" zero
app_case "a FIFO" fifo
app_case "of 181 MB" big

# Two windows finishing runs at the same moment, three times: every run kept.
home="$work/home.two"; mkdir -p "$home"
two_windows() {
    for i in 1 2; do
        env HOME="$home" XDG_DATA_HOME="$home/.local/share" XDG_CONFIG_HOME="$home/.config" \
            "$app" --image "$scenes/scene_0$i.png" --task "<CAPTION>" --beams 1 \
            --max-new-tokens 16 --screenshot "$work/two$i.png" >/dev/null 2>&1 &
    done
    wait
}
entries() {
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["entries"] if isinstance(d, dict) else d))' \
        "$home/.local/share/FlorenceStudio/florence-studio/history.json" 2>/dev/null || echo 0
}
counts="$(entries)"
for round in 1 2 3; do two_windows; counts="$counts→$(entries)"; done
echo "| two app windows finishing runs together, three times | | | | history entries $counts | |"

probe "run --threads 1000" "" -- \
    "$cli" run --image "$scenes/scene_00.png" --threads 1000 "${fast[@]}"
probe "run --threads -1" "" -- "$cli" run --image "$scenes/scene_00.png" --threads -1 "${fast[@]}"

# ---------------------------------------------------------------------------------------------
# Damaged images
bad="$work/bad"; mkdir -p "$bad"
jpg="$root/resources/samples/rocket.jpg"
head -c "$(( $(stat -c %s "$jpg") / 2 ))" "$jpg" >"$bad/cut.jpg"
/usr/bin/python3 - "$jpg" "$bad/big.jpg" <<'EOF'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
i = 2
while True:  # the frame header: declare 10000 x 10000
    if 0xC0 <= d[i + 1] <= 0xCF and d[i + 1] not in (0xC4, 0xC8, 0xCC):
        d[i + 5:i + 9] = (10000).to_bytes(2, "big") * 2
        break
    i += 2 + int.from_bytes(d[i + 2:i + 4], "big")
open(sys.argv[2], "wb").write(d)
EOF
for f in cut.jpg big.jpg; do
    probe "run on $f" "" -- "$cli" run --image "$bad/$f" "${fast[@]}"
done
probe "batch over the damaged JPEGs" "" -- "$cli" batch --dir "$bad" --format json "${fast[@]}"
mkdir -p "$work/names"; cp "$scenes/scene_00.png" "$work/names/bad$(printf '\xff\xfe')name.png"
probe "run on a name that is not UTF-8" "" -- \
    "$cli" run --image "$work/names/bad$(printf '\xff\xfe')name.png" "${fast[@]}"
probe "batch over a name that is not UTF-8" "" -- \
    "$cli" batch --dir "$work/names" "${fast[@]}"
mkdir -p "$work/rel/b2"; cp "$scenes/scene_00.png" "$work/rel/b2/"
probe "batch --dir b2 (relative): COCO file_name" \
    "grep -o '\"file_name\": *\"[^\"]*\"' $work/rel/b2/OD.coco.json" -- \
    sh -c 'cd "$1" && shift && exec "$@"' sh "$work/rel" "$cli" batch --dir b2 --task "<OD>" \
    "${fast[@]}"
/usr/bin/python3 - "$jpg" "$work/phone.jpg" <<'EOF'
import sys
d = open(sys.argv[1], "rb").read()
tiff = b"MM\x00\x2a\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00\x00\x00\x00\x00"
app1 = b"\xff\xe1" + (2 + 6 + len(tiff)).to_bytes(2, "big") + b"Exif\x00\x00" + tiff
open(sys.argv[2], "wb").write(d[:2] + app1 + d[2:])
EOF
for opt in "" --no-exif-rotate; do
    probe "run --json on a photo with EXIF orientation 6 $opt" \
        "grep -o '\"orientation_applied\": *[a-z]*' $work/stdout; grep -o '\"width\": *[0-9]*' $work/stdout | head -1" -- \
        "$cli" run --image "$work/phone.jpg" --json $opt "${fast[@]}"
done
printf 'RIFF\x24\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x02\x00\x00\x00\x0f\x00\x00\x0f\x00\x00ANIM\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$bad/animated.webp"
{ printf '\x89PNG\r\n\x1a\n'; tail -c +9 "$jpg"; } >"$bad/jpeg-signed.png"
for f in animated.webp jpeg-signed.png; do
    probe "run on $f" "" -- "$cli" run --image "$bad/$f" "${fast[@]}"
done
