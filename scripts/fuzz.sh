#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang, ./build-fuzz) if needed and
# runs each for SECONDS (default 25) from a copy of its seed corpus
# (fuzz/corpus/<harness>/; the checked-in corpus never grows). Prints each
# harness's executions; exits nonzero on any crash, sanitizer report, leak,
# timeout or out-of-memory, keeping the input under build-fuzz/findings/.
#   scripts/fuzz.sh          CI (about 2 minutes plus the build)
#   scripts/fuzz.sh 600      a longer run
# SIEVE_FUZZERS="fuzz_npy fuzz_sample" picks harnesses.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-25}
build=build-fuzz
harnesses=(${SIEVE_FUZZERS:-fuzz_npy fuzz_slot_restore fuzz_chain fuzz_sample fuzz_diff})

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DSIEVE_BUILD_FUZZERS=ON -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_TOOLS=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target fuzzers

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings=$build/findings
# Leaks are checked (the engine's own allocations), except in the differential
# harness, whose Vulkan driver (lavapipe) keeps allocations past exit.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for h in "${harnesses[@]}"; do
  mkdir -p "$work/$h" "$findings/$h"
  cp fuzz/corpus/"$h"/* "$work/$h"/
  leaks=1 timeout=60
  # The differential harness creates Vulkan chains (pipelines compiled by
  # lavapipe under ASan: tens of seconds on a loaded 2-core machine) on its
  # first inputs.
  [[ $h == fuzz_diff ]] && leaks=0 timeout=300
  status=0
  ASAN_OPTIONS=detect_leaks=$leaks:abort_on_error=1:symbolize=1 \
    "$build/fuzz/$h" -max_total_time="$seconds" -print_final_stats=1 -max_len=4096 -timeout="$timeout" \
    -rss_limit_mb=4096 -print_funcs=0 -detect_leaks=$leaks -artifact_prefix="$findings/$h/" "$work/$h" >"$work/$h.log" 2>&1 ||
    status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$h.log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$work/$h.log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$work/$h.log" | tail -n 1 || true)
  if ((status != 0)); then
    echo "== $h: FAILED (exit $status) after ${execs:-?} executions; input kept in $findings/$h/"
    grep -v -E '^(#[0-9]|INFO:|\s+NEW_FUNC)' "$work/$h.log" | tail -n 40
    failed+=("$h")
  else
    echo "== $h: ${execs} executions in ${seconds} s (${rate}/s), ${cov:-cov: ?}, no findings"
  fi
done
if ((${#failed[@]})); then
  echo "sieve fuzz: findings in ${failed[*]}"
  exit 1
fi
echo "sieve fuzz: ${#harnesses[@]} harnesses, no findings"
