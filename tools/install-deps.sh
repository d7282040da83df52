#!/usr/bin/env bash
# Installs what Florence Studio needs to build, test and run on Debian 12, from Debian's archive
# only. Does nothing (and needs no root) when everything is already there.
set -euo pipefail

packages=(
    cmake ninja-build g++ pkg-config
    qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev qt6-qpa-plugins
    # draws the SVG window icon (the .deb recommends it)
    libqt6svg6
    libtorch-dev python3-torch
    libopencv-dev
    # the sanitizer build and the fuzz harnesses (tools/run-sanitizers.sh): clang with libFuzzer
    clang libclang-rt-14-dev
    # inflating the code entries of TorchScript archives (engine/model/CodeCheck.cpp)
    zlib1g-dev
    # LibTorch runs on whatever libblas.so.3 points to; without OpenBLAS that is the reference
    # BLAS, about ten times slower.
    libopenblas0-openmp
    # screenshots of the real window (tools/screenshot.sh)
    xvfb xauth
    # packaging (packaging/, tools/test-package.sh): dependencies of the .deb from what the
    # binaries link (dpkg-shlibdeps), PNG icons rendered from the SVG, checks of the package and
    # of its desktop and AppStream files
    dpkg-dev librsvg2-bin lintian desktop-file-utils appstream
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "Installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
