#!/usr/bin/env bash
# Installs what Florence Studio needs to build, test and run, from Debian's archive only, on
# Debian 12 (bookworm: LibTorch 1.13, Qt 6.4, OpenCV 4.6) or Debian 13 (trixie: LibTorch 2.6,
# Qt 6.8, OpenCV 4.10); the release is read from /etc/os-release. Does nothing (and needs no
# root) when everything is already there.
#   tools/install-deps.sh
# tools/build-in-root.sh runs it inside a chroot of either release.
set -euo pipefail

release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
case $release in
    bookworm)
        # Qt 6.4 ships the SVG image and icon plugins inside libqt6svg6, and the OpenGL
        # module's CMake files (Qt6Charts needs them) in a package of their own.
        svg_plugins=libqt6svg6
        qt_opengl_dev=libqt6opengl6-dev
        clang_runtime=libclang-rt-14-dev
        ;;
    trixie)
        # Qt 6.8 moved the plugins into their own package (libqt6svg6 alone draws no icon)
        # and the OpenGL module's development files into qt6-base-dev.
        svg_plugins=qt6-svg-plugins
        qt_opengl_dev=qt6-base-dev
        clang_runtime=libclang-rt-dev
        ;;
    *)
        echo "$0: Debian 12 (bookworm) or 13 (trixie) expected, this is '${release:-unknown}'" \
             "($(. /etc/os-release && echo "${PRETTY_NAME:-?}")); trying the Debian 13 names" >&2
        svg_plugins=qt6-svg-plugins
        qt_opengl_dev=qt6-base-dev
        clang_runtime=libclang-rt-dev
        ;;
esac

packages=(
    cmake ninja-build g++ pkg-config
    qt6-base-dev qt6-charts-dev "$qt_opengl_dev" libgl-dev qt6-qpa-plugins
    # draws the SVG window icon (the .deb recommends it)
    "$svg_plugins"
    libtorch-dev python3-torch
    # the eager PyTorch baseline of `bench` reads its image with PIL (test_cli runs it)
    python3-pil
    libopencv-dev
    # the sanitizer build and the fuzz harnesses (tools/run-sanitizers.sh): clang with libFuzzer
    # and the sanitizer runtimes of the release's default clang (14 on Debian 12, 19 on 13)
    clang "$clang_runtime"
    # inflating the code entries of TorchScript archives (engine/package/CodeCheck.cpp)
    zlib1g-dev
    # JPEGs checked whole, warnings as errors, before OpenCV decodes them (image/JpegCheck.cpp)
    libjpeg-dev
    # PNGs decoded with the program's own libpng error and warning handlers (image/Png.cpp)
    libpng-dev
    # LibTorch runs on whatever libblas.so.3 points to; without OpenBLAS that is the reference
    # BLAS, about ten times slower.
    libopenblas0-openmp
    # screenshots of the real window (tools/screenshot.sh)
    xvfb xauth
    # packaging (packaging/, tools/test-package.sh): dependencies of the .deb from what the
    # binaries link (dpkg-shlibdeps), PNG icons rendered from the SVG, checks of the package and
    # of its desktop and AppStream files
    dpkg-dev librsvg2-bin lintian desktop-file-utils appstream
    # an AVX2 CPU without AVX-512 or AVX-VNNI emulated for the programs and kernel tests
    # (tests/app/check_emulated_cpu.py), whatever CPU runs them
    qemu-user
    # a compiler cache: the next build of the same sources (CI's clean clone, the sanitizer build,
    # a build in a root) takes its objects from the last one instead of compiling them again
    ccache
    # minimal Debian roots for the clean-root build and the fresh-install test
    # (tools/build-in-root.sh, tools/test-in-fresh-root.sh; .ci/run runs both)
    debootstrap
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
