#!/usr/bin/env bash
# test.sh - README command 2: build and run the whole Criterion suite with CTest.
#   scripts/test.sh              normal build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
#   scripts/test.sh --release    gcc Release build (-O3) in build-release/
#   scripts/test.sh --clang      clang Release build in build-clang/
# Every build treats warnings as errors (TPSIM_WERROR), so each must be warning-free. The doc
# figures of minutes (tests/docs/doc-figures.sh, "-- slow") are checked by the normal build's
# suite only.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--clang" ]; then scripts/install-deps.sh clang; else scripts/install-deps.sh; fi
dir=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTPSIM_WERROR=ON)
if [ "${1:-}" = "--release" ]; then
  dir=build-release
  flags=(-DCMAKE_BUILD_TYPE=Release -DTPSIM_WERROR=ON -DTPSIM_DOC_FIGURES=quick)
elif [ "${1:-}" = "--clang" ]; then
  dir=build-clang
  flags=(-DCMAKE_BUILD_TYPE=Release -DTPSIM_WERROR=ON -DCMAKE_C_COMPILER=clang
    -DTPSIM_DOC_FIGURES=quick)
elif [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=Debug -DTPSIM_SANITIZE=ON -DTPSIM_WERROR=ON)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cmake -S . -B "$dir" "${flags[@]}"
cmake --build "$dir" -j"$(nproc)"
# Folders include only the layers below them; only sim/ includes SimGrid (docs/architecture.md).
scripts/layers.sh
cd "$dir"
ctest --output-on-failure
