#!/usr/bin/env bash
# Installs a florence-studio .deb into a fresh, minimal root of the Debian release it was built
# for (…~deb12 → Debian 12 "bookworm", …~deb13 → Debian 13 "trixie") and smoke-tests it there,
# to prove that the package's dependencies alone are enough (nothing installed by hand, no build
# tree): apt install (Recommends included, as by default), the installed CLI captions a sample
# scene, the installed GUI captions it offscreen and saves a screenshot, the CLI lists the
# Florence-2-base and -large speed-demo models and generates exactly 8 tokens with base (all
# without Python's torch), then with python3-torch installed the CLI imports a model through the
# installed exporter, and the package is purged.
# Downloads a minimal Debian (debootstrap) and the dependencies from the Debian archive, about
# 1 GB unpacked; takes some minutes. Needs root.
#   tools/test-in-fresh-root.sh DEB [ROOT_DIR]
# ROOT_DIR defaults to a new folder under /var/tmp and is deleted afterwards unless KEEP_ROOT=1.
# RELEASE=bookworm|trixie overrides the release read from the .deb's version.
# MIRROR overrides the Debian mirror (default http://deb.debian.org/debian).
# CROSS_PACKAGE=DIR: a model package of the bundled model's weights exported by the other
# release's PyTorch; the installed CLI must generate the same tokens with it as with the bundled
# model (tools/compare-packages.sh).
# FLORENCE_ROOT_CACHE: when tools/build-in-root.sh has a cache for the release there (default
# /var/cache/florence-studio-roots), its downloaded .debs are reused (the root itself is new).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
deb="$(realpath "${1:?usage: $0 DEB [ROOT_DIR]}")"
rootfs="${2:-$(mktemp -d /var/tmp/florence-fresh-root.XXXXXX)}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (debootstrap, chroot)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
started=$SECONDS
step() { echo "== [$((SECONDS - started)) s] $*" >&2; }

version=$(dpkg-deb --field "$deb" Version)
if [ -z "${RELEASE:-}" ]; then
    case $version in
        *~deb12*) RELEASE=bookworm ;;
        *~deb13*) RELEASE=trixie ;;
        # Packages from before the release suffix were built on Debian 12 only.
        *) RELEASE=bookworm ;;
    esac
fi
case $RELEASE in
    bookworm) debian="Debian 12 (bookworm)" ;;
    trixie) debian="Debian 13 (trixie)" ;;
    *) echo "$0: RELEASE must be bookworm or trixie, not '$RELEASE'" >&2; exit 2 ;;
esac

if ! command -v debootstrap > /dev/null; then
    apt-get update -qq && apt-get install -y -qq debootstrap
fi

cache="${FLORENCE_ROOT_CACHE:-/var/cache/florence-studio-roots}/$RELEASE"
debootstrap_cache=()
[ -d "$cache/debs" ] && debootstrap_cache=(--cache-dir="$cache/debs")

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
    done
    if [ "${KEEP_ROOT:-0}" = 1 ]; then
        echo "root kept in $rootfs" >&2
    else
        rm -rf --one-file-system "$rootfs"
    fi
}
trap cleanup EXIT
mount_in_root() {   # mount_in_root TARGET mount-arguments...
    local target="$rootfs$1"
    shift
    mkdir -p "$target"
    mount "$@" "$target"
    mounted+=("$target")
}

# mktemp makes the folder private (0700); apt's download user (_apt) must reach the root's
# /var/lib/apt inside it, or apt downloads unsandboxed and warns.
chmod 755 "$rootfs"
step "debootstrap $RELEASE (minbase) into $rootfs"
debootstrap --variant=minbase "${debootstrap_cache[@]}" "$RELEASE" "$rootfs" "$mirror" \
    > "$rootfs.debootstrap.log" 2>&1 || { tail -20 "$rootfs.debootstrap.log" >&2; exit 1; }
rm -f "$rootfs.debootstrap.log"

# What a fresh installation of the release has: the release, its updates and security updates.
cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $RELEASE main
deb $mirror $RELEASE-updates main
deb http://deb.debian.org/debian-security $RELEASE-security main
EOF
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
mount_in_root /proc -t proc proc   # the programs locate their data through /proc/self/exe
mount_in_root /sys -t sysfs sysfs  # LibTorch and OpenBLAS read the CPU's topology there
mount_in_root /dev/shm -t tmpfs tmpfs
if [ -d "$cache/apt-archives" ]; then
    # The packages the build root downloaded; apt fetches whatever else it needs.
    mount_in_root /var/cache/apt/archives --bind "$cache/apt-archives"
fi
cp "$deb" "$here/smoke-test-installed.sh" "$here/compare-packages.sh" "$rootfs/tmp/"
if [ -n "${CROSS_PACKAGE:-}" ]; then
    cp -r "$CROSS_PACKAGE" "$rootfs/tmp/cross-package"
fi
in_root() { chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }

step "apt-get install ./$(basename "$deb") (Recommends included, as by default)"
in_root apt-get update -qq
in_root apt-get install -y -q "/tmp/$(basename "$deb")" > "$rootfs/tmp/install.log" 2>&1 ||
    { tail -30 "$rootfs/tmp/install.log" >&2; exit 1; }
grep -E '^(Need to get|After this operation)' "$rootfs/tmp/install.log" >&2 || true
in_root dpkg-query -W florence-studio
# python3-torch is only suggested, so apt left it out: without it the smoke test runs the CLI
# and the GUI, which is what an installation from the package alone must manage.
step "smoke test inside the fresh root, without python3-torch"
in_root env SMOKE_IMPORT=0 /bin/sh /tmp/smoke-test-installed.sh /usr

# The speed demos are architecture packages whose weights the engine generates at load: they
# must work from the package alone, with no Python.
step "speed-demo models without python3-torch: listed, and 8 tokens of Florence-2-base"
in_root /usr/bin/florence-studio-cli models > "$rootfs/tmp/models.txt"
cat "$rootfs/tmp/models.txt" >&2
for size in base large; do
    grep -q "^/usr/share/florence-studio/models/speed-demo-$size	Florence-2-$size" \
        "$rootfs/tmp/models.txt" || { echo "FAILED: speed-demo-$size is not listed" >&2; exit 1; }
done
in_root /usr/bin/florence-studio-cli run --model /usr/share/florence-studio/models/speed-demo-base \
    --image /usr/share/florence-studio/samples/scenes/scene_00.png --beams 1 --ignore-eos \
    --max-new-tokens 8 --precision float32 --json --quiet > "$rootfs/tmp/speed-demo.json" ||
    { echo "FAILED: a run of speed-demo-base" >&2; exit 1; }
# The decoder start token and exactly 8 more, one per line of the indented JSON.
ids=$(awk '/"generated_ids"/ { on = 1; next } on && /]/ { exit } on { n++ } END { print n + 0 }' \
    "$rootfs/tmp/speed-demo.json")
[ "$ids" -eq 9 ] || { echo "FAILED: speed-demo-base generated $ids ids, not 1 + 8" >&2; exit 1; }

step "apt-get install python3-torch (suggested), then import through the installed exporter"
in_root apt-get install -y -q --no-install-recommends python3-torch > "$rootfs/tmp/torch.log" 2>&1 ||
    { tail -30 "$rootfs/tmp/torch.log" >&2; exit 1; }
in_root /usr/bin/python3 -c 'import torch; print("python3-torch", torch.__version__)'
in_root /bin/sh /tmp/smoke-test-installed.sh /usr

if [ -n "${CROSS_PACKAGE:-}" ]; then
    step "the bundled model exported by the other release's PyTorch ($CROSS_PACKAGE)"
    in_root /bin/sh /tmp/compare-packages.sh /usr/bin/florence-studio-cli \
        /usr/share/florence-studio/models/default /tmp/cross-package
fi

step "apt-get purge florence-studio"
in_root apt-get purge -y -q florence-studio > /dev/null
for f in /usr/share/florence-studio /usr/bin/florence-studio /usr/bin/florence-studio-cli; do
    if [ -e "$rootfs$f" ]; then echo "FAILED: $f left after purge" >&2; exit 1; fi
done
echo "fresh-root test passed: $(basename "$deb") on $debian in $((SECONDS - started)) s" >&2
