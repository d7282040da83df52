#!/usr/bin/env bash
# Installs a florence-studio .deb into a fresh, minimal Debian 12 root and smoke-tests it there,
# to prove that the package's dependencies alone are enough (nothing installed by hand, no
# build tree). Downloads a minimal Debian (debootstrap) and the dependencies from the Debian
# archive, about 1 GB unpacked; takes some minutes. Needs root.
#   tools/test-in-fresh-root.sh DEB [ROOT_DIR]
# ROOT_DIR defaults to a new folder under /var/tmp and is deleted afterwards unless KEEP_ROOT=1.
# MIRROR overrides the Debian mirror (default http://deb.debian.org/debian).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
deb="$(realpath "${1:?usage: $0 DEB [ROOT_DIR]}")"
rootfs="${2:-$(mktemp -d /var/tmp/florence-fresh-root.XXXXXX)}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (debootstrap, chroot)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
step() { echo "== $*" >&2; }

if ! command -v debootstrap > /dev/null; then
    apt-get update -qq && apt-get install -y -qq debootstrap
fi

cleanup() {
    umount "$rootfs/proc" 2>/dev/null || true
    if [ "${KEEP_ROOT:-0}" = 1 ]; then
        echo "root kept in $rootfs" >&2
    else
        rm -rf --one-file-system "$rootfs"
    fi
}
trap cleanup EXIT

step "debootstrap bookworm (minbase) into $rootfs"
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$rootfs.debootstrap.log" 2>&1 ||
    { tail -20 "$rootfs.debootstrap.log" >&2; exit 1; }
rm -f "$rootfs.debootstrap.log"

# What a fresh Debian 12 installation has: the release, its updates and security updates.
cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
mount -t proc proc "$rootfs/proc"   # the programs locate their data through /proc/self/exe
cp "$deb" "$here/smoke-test-installed.sh" "$rootfs/tmp/"
in_root() { chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }

step "apt-get install ./$(basename "$deb") (Recommends included, as by default)"
in_root apt-get update -qq
in_root apt-get install -y -q "/tmp/$(basename "$deb")"
in_root dpkg-query -W florence-studio

step "smoke test inside the fresh root"
in_root /bin/sh /tmp/smoke-test-installed.sh /usr

step "apt-get purge florence-studio"
in_root apt-get purge -y -q florence-studio
for f in /usr/share/florence-studio /usr/bin/florence-studio /usr/bin/florence-studio-cli; do
    if [ -e "$rootfs$f" ]; then echo "FAILED: $f left after purge" >&2; exit 1; fi
done
echo "fresh-root test passed: $(basename "$deb") on Debian 12 (bookworm)" >&2
