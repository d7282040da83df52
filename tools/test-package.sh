#!/usr/bin/env bash
# Builds the .deb and the tarball from a build folder, checks the .deb's contents and lintian,
# installs it with apt (which pulls its dependencies), smoke-tests the installed programs, purges
# it and checks nothing is left; then smoke-tests the tarball unpacked in a temporary folder.
# Needs root (or sudo) for apt. Run after a build (CI runs it after the tests):
#   tools/test-package.sh [BUILD_DIR]       default: $BUILD_DIR, else ./build
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-${BUILD_DIR:-$root/build}}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
step() { echo "== $*" >&2; }
fail() { echo "PACKAGE TEST FAILED: $*" >&2; exit 1; }

if dpkg-query -W -f='${Status}' florence-studio 2>/dev/null | grep -q "ok installed"; then
    fail "florence-studio is already installed; remove it first (apt-get purge florence-studio)"
fi

step "building packages in $build"
rm -f "$build"/florence-studio_*.deb "$build"/florence-studio-*.tar.gz
cmake --build "$build" --target package
deb=$(ls "$build"/florence-studio_*_amd64.deb)
tarball=$(ls "$build"/florence-studio-*-linux-x86_64.tar.gz)

step "contents of $(basename "$deb")"
dpkg-deb --field "$deb" Package Version Section Depends Recommends Suggests
dpkg-deb --contents "$deb" | awk '{print "./" substr($6, 3)}' > "$build/deb-contents.txt"
for f in usr/bin/florence-studio usr/bin/florence-studio-cli \
         usr/share/florence-studio/models/default/manifest.json \
         usr/share/florence-studio/samples/pier.png \
         usr/share/florence-studio/samples/scenes/scene_00.png \
         usr/share/florence-studio/tools/florence2_export.py \
         usr/share/doc/florence-studio/copyright usr/share/doc/florence-studio/changelog.Debian.gz \
         usr/share/man/man1/florence-studio.1.gz usr/share/man/man1/florence-studio-cli.1.gz \
         usr/share/icons/hicolor/scalable/apps/florence-studio.svg \
         usr/share/icons/hicolor/{16x16,22x22,24x24,32x32,48x48,64x64,128x128,256x256}/apps/florence-studio.png; do
    grep -qx "./$f" "$build/deb-contents.txt" || fail "the .deb lacks /$f"
done
# The operator library the programs link and the exporter loads, in a private folder.
grep -Eq '^./usr/lib/([^/]+/)?florence-studio/ops/libflorence_ops\.so$' "$build/deb-contents.txt" ||
    fail "the .deb lacks libflorence_ops.so under /usr/lib/.../florence-studio/ops/"
grep -q '^./usr/share/applications/.*\.desktop$' "$build/deb-contents.txt" || fail "no .desktop file"
grep -q '^./usr/share/metainfo/.*\.metainfo\.xml$' "$build/deb-contents.txt" || fail "no metainfo"
if grep -q '__pycache__' "$build/deb-contents.txt"; then fail "the .deb contains __pycache__"; fi

step "lintian"
# Info tags are shown (-I) but only errors fail; accepted warnings are listed in
# packaging/INSTALL-SECTION.md.
lintian -I --fail-on error "$deb"

purge() {
    if dpkg-query -W -f='${Status}' florence-studio 2>/dev/null | grep -q "ok installed"; then
        $sudo apt-get purge -y florence-studio > /dev/null
    fi
}
trap purge EXIT

step "apt-get install $deb"
$sudo apt-get install -y "$(realpath "$deb")"
[ "$(command -v florence-studio-cli)" = /usr/bin/florence-studio-cli ] || fail "florence-studio-cli not on PATH"

"$root/tools/smoke-test-installed.sh" /usr

step "apt-get purge florence-studio"
$sudo apt-get purge -y florence-studio
trap - EXIT
! dpkg-query -W -f='${Status}' florence-studio 2>/dev/null | grep -q "ok installed" || fail "still installed"
for f in /usr/share/florence-studio /usr/bin/florence-studio /usr/bin/florence-studio-cli \
         /usr/share/doc/florence-studio /usr/lib/florence-studio; do
    [ ! -e "$f" ] || fail "$f is left after purge: $(find "$f" | head -5)"
done

step "tarball $(basename "$tarball"), unpacked in a temporary folder"
unpack=$(mktemp -d)
trap 'rm -rf "$unpack"' EXIT
tar -xzf "$tarball" -C "$unpack"
top="$unpack/$(basename "$tarball" .tar.gz)"
[ -f "$top/README.txt" ] || fail "the tarball has no README.txt"
# The import check ran on the .deb already; the same exporter is in the tarball.
SMOKE_IMPORT=0 "$root/tools/smoke-test-installed.sh" "$top"

echo "package test passed: $(basename "$deb"), $(basename "$tarball")" >&2
