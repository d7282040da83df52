#!/usr/bin/env bash
# The code that reads untrusted bytes without LibTorch (images, safetensors, manifests, the code
# entries of TorchScript archives, tokenizer, answer parser) under AddressSanitizer and
# UndefinedBehaviorSanitizer: builds it with clang in its own build folder (FLORENCE_SANITIZE),
# runs its test suites, then each libFuzzer harness of tests/fuzz/ on a copy of its seed corpus:
# FUZZ_RUNS inputs (default 50000, seeded, so every machine tries the same ones) within at most
# FUZZ_SECONDS (default 60). Fails on any sanitizer report, crash, leak or timeout.
#
#   tools/run-sanitizers.sh                              # build-sanitize/, what CI runs
#   FUZZ_RUNS=0 FUZZ_SECONDS=600 tools/run-sanitizers.sh # ten minutes of fuzzing per harness
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SANITIZE_BUILD_DIR:-build-sanitize}
seconds=${FUZZ_SECONDS:-60}
runs=${FUZZ_RUNS:-50000} # inputs per harness, at most FUZZ_SECONDS; 0: as many as the time allows
started=$SECONDS
say() { echo "-- [$((SECONDS - started)) s] $*" >&2; }

for tool in clang++ cmake ninja; do
    command -v "$tool" >/dev/null || { echo "run-sanitizers: $tool is missing (tools/install-deps.sh installs it)" >&2; exit 1; }
done
launcher=()
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

say "configuring $build (clang, ASan+UBSan, torch-free parts)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DFLORENCE_SANITIZE=ON "${launcher[@]}" >/dev/null
say "building"
cmake --build "$build" -j"$(nproc)"

# halt_on_error/abort: the first report fails the run; leaks count as reports.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export QT_QPA_PLATFORM=offscreen

say "test suites under the sanitizers"
(cd "$build" && ctest -j1 --output-on-failure)

artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
for harness in "$build"/tests/fuzz/fuzz_*; do
    [ -f "$harness" ] && [ -x "$harness" ] || continue # not the *_autogen folders
    name=$(basename "$harness")
    name=${name#fuzz_}
    work=$(mktemp -d)
    cp tests/fuzz/corpus/"$name"/* "$work"/
    say "fuzzing $name ($runs inputs, at most $seconds s)"
    # New inputs go to the scratch copy; the committed seeds stay as they are.
    # -seed and -runs make the run the same on every machine (a CI gate must not depend on how
    # fast the machine happens to be); FUZZ_RUNS=0 fuzzes for the whole FUZZ_SECONDS instead.
    if ! "$harness" -seed=1 -runs="$([ "$runs" = 0 ] && echo -1 || echo "$runs")" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$work" \
        >"$artifacts/$name.log" 2>&1; then
        tail -n 60 "$artifacts/$name.log" >&2
        echo "run-sanitizers: fuzz_$name found a problem; the input is in $artifacts/" >&2
        rm -rf "$work"
        exit 1
    fi
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$artifacts/$name.log" | tr '\n' ' ' >&2
    echo >&2
    rm -rf "$work"
done
say "no sanitizer report"
