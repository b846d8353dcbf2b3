#!/usr/bin/env bash
# ASan + UBSan (gcc: the tests use _Float16, which clang 14 refuses on x86;
# -fno-sanitize-recover=all) build of the library, the CLI
# and the tests in ./build-asan, then the core tests that need no Vulkan driver:
# the twin, Philox, chain parsing, .npy, bad input / slots / bias on the CPU
# backend, the CLI with --device cpu (gtest filter below). They run with the
# Vulkan loader pointed at no driver, so a selected test that created a Vulkan
# context would fail rather than run lavapipe under ASan. Any sanitizer report
# aborts its test; the script exits nonzero on any failure.
#   scripts/sanitize.sh [extra gtest args]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-asan
# -O1 -g1 (what the sanitizers' own docs suggest): line tables for the
# reports' stacks, assertions on, and about 1.5x quicker to build than -O2 -g
# (the build is most of this script's time); the tests run about as fast. The
# CLI and the tests themselves compile at -O0 (cmake/SieveSanitizers.cmake:
# their templates were most of the build; docs/perf-log.md, 2026-11-29, has
# the figures).
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DSIEVE_SANITIZE=address,undefined -DSIEVE_BUILD_TOOLS=OFF -DSIEVE_LLAMA_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target sieve_tests

# The CPU-only selection: tests/device_free_tests.txt.
filter=$(grep -v '^#' tests/device_free_tests.txt | tr -d ' \n')
filter=${SIEVE_SANITIZE_FILTER:-$filter}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# No Vulkan driver: the loader finds no ICD (a test that needs one fails).
export VK_DRIVER_FILES=/nonexistent/sieve-no-driver.json VK_ICD_FILENAMES=/nonexistent/sieve-no-driver.json
"$build/tests/sieve_tests" --gtest_filter="$filter" --gtest_brief=1 "$@"
