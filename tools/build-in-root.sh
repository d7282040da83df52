#!/usr/bin/env bash
# Builds Florence Studio for one Debian release inside a minimal root of that release, so the
# packages link that release's Qt, LibTorch and OpenCV whatever the machine runs, and the bundled
# model is exported by that release's python3-torch. In the root it installs the build
# dependencies (tools/install-deps.sh, from the Debian archive), configures, builds, runs the
# test suites (CTest), then runs tools/test-package.sh there (the .deb and the tarball, contents,
# lintian, apt install, smoke test, purge), and copies both packages out. Needs root.
#   tools/build-in-root.sh bookworm|trixie [OUT_DIR]
# OUT_DIR (default ./build-RELEASE) receives florence-studio_<version>-1~debNN_amd64.deb,
# florence-studio-<version>-debNN-linux-x86_64.tar.gz, the bundled model as exported there
# (model-default/) and the logs.
# Environment:
#   FLORENCE_ROOT_CACHE  folder this script owns (default /var/cache/florence-studio-roots): per
#                        release the root with its build dependencies, debootstrap's and apt's
#                        downloads and a ccache, reused by the next run; delete it to start over.
#   TESTS=all|fast|none  which CTest suites run, as many at once as there are cores (default
#                        all; fast leaves out the two front-end suites, test_cli and
#                        test_main_window, whose programs the package's smoke test still runs,
#                        and test_emulated_cpus, 4-5 minutes under qemu-user).
#   MIRROR               Debian mirror (default http://deb.debian.org/debian).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
release="${1:?usage: $0 bookworm|trixie [OUT_DIR]}"
case $release in
    bookworm) debnn=deb12 ;;
    trixie) debnn=deb13 ;;
    *) echo "$0: release must be bookworm or trixie, not '$release'" >&2; exit 2 ;;
esac
out="$(mkdir -p "${2:-$repo/build-$release}" && cd "${2:-$repo/build-$release}" && pwd)"
cache="${FLORENCE_ROOT_CACHE:-/var/cache/florence-studio-roots}/$release"
mirror="${MIRROR:-http://deb.debian.org/debian}"
tests="${TESTS:-all}"
# The front ends' suites start the programs and the window dozens of times (minutes each); the
# engine's (the reference outputs, the bundled model's scores on the scenes) stay in the fast set,
# since they are what a new LibTorch can break. test_emulated_cpus runs the CLI under QEMU (4-5
# minutes; bookworm's CI runs it in the clean clone).
FAST_EXCLUDE='^(test_cli|test_main_window|test_emulated_cpus)$'
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
started=$SECONDS
step() { echo "== [$release, $((SECONDS - started)) s] $*" >&2; }

root="$cache/root"
mkdir -p "$cache/debs" "$cache/apt-archives/partial" "$cache/ccache"

mounted=()
unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
    done
    mounted=()
}
trap unmount_all EXIT
mount_in_root() {   # mount_in_root TARGET mount-arguments...
    local target="$root$1"
    shift
    mkdir -p "$target"
    # The root is kept between runs: a run that was killed, or a chroot into the root by hand,
    # may have left this mounted (mount would fail with "already mounted"). Take it down first.
    while mountpoint -q "$target"; do
        echo "unmounting $target, left mounted from before" >&2
        umount -R "$target" 2>/dev/null || umount -l "$target"
    done
    mount "$@" "$target"
    mounted+=("$target")
}

# --- The root: debootstrapped once, then reused --------------------------------------------------
if [ ! -e "$root/.florence-bootstrapped" ]; then
    command -v debootstrap > /dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
    step "debootstrap $release (minbase) into $root"
    # Into a new folder, renamed when complete: an interrupted run leaves no half root behind.
    rm -rf --one-file-system "$root.new"
    debootstrap --variant=minbase --cache-dir="$cache/debs" "$release" "$root.new" "$mirror" \
        > "$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
    cat > "$root.new/etc/apt/sources.list" <<EOF
deb $mirror $release main
deb $mirror $release-updates main
deb http://deb.debian.org/debian-security $release-security main
EOF
    # apt's downloads live in the cache folder (bind-mounted below) and stay there.
    echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' \
        > "$root.new/etc/apt/apt.conf.d/90florence-keep-debs"
    touch "$root.new/.florence-bootstrapped"
    rm -rf --one-file-system "$root"
    mv "$root.new" "$root"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"

# The programs find their data through /proc/self/exe; LibTorch and OpenBLAS read the CPU's
# topology from /sys; Python's multiprocessing (used by torch) needs /dev/shm.
mount_in_root /proc -t proc proc
mount_in_root /sys -t sysfs sysfs
mount_in_root /dev/shm -t tmpfs tmpfs
mount_in_root /var/cache/apt/archives --bind "$cache/apt-archives"
mount_in_root /var/cache/florence-ccache --bind "$cache/ccache"

in_root() {
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive CCACHE_DIR=/var/cache/florence-ccache \
        CCACHE_BASEDIR=/florence CCACHE_NOHASHDIR=1 ${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE} \
        "$@"
}

step "build dependencies (tools/install-deps.sh in the root) and updates"
cp "$repo/tools/install-deps.sh" "$root/tmp/install-deps.sh"
{
    in_root apt-get update -qq
    in_root apt-get dist-upgrade -y -q
    in_root bash /tmp/install-deps.sh
} > "$out/deps.log" 2>&1 || { tail -30 "$out/deps.log" >&2; exit 1; }
grep -E '^(Installing:|Need to get|After this operation)' "$out/deps.log" | cut -c1-160 >&2 || true
in_root dpkg-query -W -f='${Package} ${Version}\n' libtorch-dev python3-torch qt6-base-dev libopencv-dev \
    libopenblas0-openmp g++ cmake | sed 's/^/   /' >&2

# --- Sources: the repository's files as they are in the working tree (tracked and new, not
# ignored), so a build tests uncommitted changes too; no build folders, no .git.
step "copying the sources into $root/florence/src"
rm -rf --one-file-system "$root/florence/src" "$root/florence/build"
mkdir -p "$root/florence/src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$root/florence/src"

# --- Build, tests, packages --------------------------------------------------------------------
step "configure and build (RelWithDebInfo, Ninja, ccache)"
in_root cmake -S /florence/src -B /florence/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache > "$out/configure.log"
in_root cmake --build /florence/build -j "$(nproc)" > "$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log" >&2; exit 1; }
# Zero warnings is the house rule, on every release.
if grep -n 'warning:' "$out/build.log" >&2; then
    echo "$0: the $release build has compiler warnings (above; full log: $out/build.log)" >&2
    exit 1
fi
in_root ccache -s | grep -Ei 'hits|misses' | sed 's/^/   ccache: /' >&2 || true

case $tests in
    all) ctest_filter="" ;;
    fast) ctest_filter="-E '$FAST_EXCLUDE'" ;;
    none) ;;
    *) echo "$0: TESTS must be all, fast or none" >&2; exit 2 ;;
esac
if [ "$tests" != none ]; then
    step "tests (CTest, TESTS=$tests)"
    status=0
    in_root bash -c "cd /florence/build && ctest --output-on-failure --timeout 1200 -j $(nproc) $ctest_filter" \
        > "$out/ctest.log" 2>&1 || status=$?
    grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|Total Test time' "$out/ctest.log" >&2 || true
    [ "$status" -eq 0 ] || { tail -60 "$out/ctest.log" >&2; echo "$0: tests failed on $release (log: $out/ctest.log)" >&2; exit 1; }
fi

step "packages: tools/test-package.sh in the root (contents, lintian, install, smoke test, purge)"
in_root bash /florence/src/tools/test-package.sh /florence/build > "$out/test-package.log" 2>&1 ||
    { tail -40 "$out/test-package.log" >&2; exit 1; }
rm -rf "$out"/florence-studio_*.deb "$out"/florence-studio-*.tar.gz "$out/model-default"
cp "$root"/florence/build/florence-studio_*_amd64.deb "$root"/florence/build/florence-studio-*-linux-x86_64.tar.gz "$out/"
# The bundled model as this release's PyTorch exported it, to run on the other release's engine
# (tools/compare-packages.sh; .ci/run).
cp -r "$root/florence/build/share/florence-studio/models/default" "$out/model-default"
unmount_all
step "done: $(cd "$out" && ls florence-studio_*.deb florence-studio-*.tar.gz | tr '\n' ' ')in $out"
