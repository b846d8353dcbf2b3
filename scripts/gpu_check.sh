#!/usr/bin/env bash
# The GPU check: what a person with a real GPU runs and sends back.
#
#   ./scripts/gpu_check.sh [--no-setup] [--build-dir DIR] [--out FILE] [--tokens N] [--filter GTEST_FILTER] [--bench-case TEXT]
#                          [--verify-case TEXT]
#
# Sets up and builds as the README's commands do (--no-setup: use the existing
# build, ./build or --build-dir, as it is, with no package manager and no
# network), lists the Vulkan devices, runs the GPU-facing tests (ctest label
# gpu) with validation layers on on the first device that is not a CPU
# implementation, runs `sieve bench` there (its default suite, then its verify
# suite: speculative decoding's sieve_verify against sieve_sample position by
# position), and writes one report, sieve-gpu-check.json by default: the
# devices (name, type, driver, Vulkan version, subgroup size, features), the
# device checked, every test with its result, and both benches' JSON. Attach it
# to an issue.
#
# Exit status: 0 every test passed; 1 a test failed (the report says which);
# 2 usage; 5 no GPU: the only Vulkan devices are CPU implementations
# (lavapipe), which the ordinary test command already covers.
# (SIEVE_GPU_CHECK_ALLOW_CPU=1 lets a CPU device stand in: for testing this
# script itself, tests/bench/test_gpu_check.cpp.)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

setup=1 build=$root/build out=$root/sieve-gpu-check.json tokens=200 filter='*' bench_case='' verify_case=''
while (($#)); do
  case $1 in
    --no-setup) setup=0 ;;
    --out) out=$(realpath -m "$2"); shift ;;
    --build-dir) build=$(realpath -m "$2"); shift ;;
    --tokens) tokens=$2; shift ;;
    --filter) filter=$2; shift ;;
    --bench-case) bench_case=$2; shift ;;
    --verify-case) verify_case=$2; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ((setup)); then
  ./scripts/setup.sh
fi
sieve=$build/cli/sieve
gpu_tests=$build/tests/sieve_gpu_tests
for f in "$sieve" "$gpu_tests"; do
  [[ -x $f ]] || { echo "gpu_check: $f is missing: build first (run without --no-setup)" >&2; exit 2; }
done

devices_json=$("$sieve" devices --json)
echo "== Vulkan devices"
"$sieve" devices

# The first device whose type is not cpu: `sieve devices` prints "[i] name"
# then "    type T, ...".
allow_cpu=${SIEVE_GPU_CHECK_ALLOW_CPU:-0}
index=$("$sieve" devices | awk -v allow_cpu="$allow_cpu" '/^\[[0-9]+\]/ {i = substr($1, 2, length($1) - 2)}
                                /^    type / && ($2 != "cpu," || allow_cpu == "1") && i != "" {print i; exit}')
if [[ -z $index ]]; then
  echo "gpu_check: no GPU: every Vulkan device here is a CPU implementation (lavapipe)." >&2
  echo "gpu_check: the test command (scripts/test.sh) already runs the suite on it; nothing to report." >&2
  exit 5
fi
export SIEVE_DEVICE=$index SIEVE_VALIDATION=1
unset SIEVE_PROFILE LP_NATIVE_VECTOR_WIDTH
echo "== checking device $index"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== GPU-facing tests (validation on)"
set +e
"$gpu_tests" --gtest_filter="$filter" --gtest_output=json:"$work/tests.json" 2>&1 | tee "$work/tests.log" | grep -E '^\[ *(OK|FAILED|PASSED|  FAILED) *\]|^\[==========\]'
tests_status=${PIPESTATUS[0]}
echo "== sieve bench"
"$sieve" bench --tokens "$tokens" ${bench_case:+--case "$bench_case"} --json-out "$work/bench.json"
bench_status=$?
echo "== sieve bench --suite verify"
"$sieve" bench --suite verify --tokens "$tokens" ${verify_case:+--case "$verify_case"} --json-out "$work/verify.json"
verify_status=$?
set -e
[[ -s $work/tests.json ]] || echo null > "$work/tests.json"
[[ -s $work/bench.json ]] || echo null > "$work/bench.json"
[[ -s $work/verify.json ]] || echo null > "$work/verify.json"

{
  echo '{"schema": "sieve-gpu-check/1",'
  echo " \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo " \"commit\": \"$(git rev-parse HEAD 2>/dev/null || echo unknown)\","
  echo " \"device_index\": $index,"
  echo " \"devices\": $devices_json,"
  echo " \"tests_exit_status\": $tests_status,"
  echo " \"tests\": $(cat "$work/tests.json"),"
  echo " \"bench_exit_status\": $bench_status,"
  echo " \"bench\": $(cat "$work/bench.json"),"
  echo " \"verify_bench_exit_status\": $verify_status,"
  echo " \"verify_bench\": $(cat "$work/verify.json")"
  echo '}'
} > "$out"

failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$work/tests.log" || true)
echo "== report: $out (tests exit status $tests_status, $failed failed; bench exit status $bench_status, verify bench $verify_status)"
if ((tests_status != 0 || bench_status != 0 || verify_status != 0)); then exit 1; fi
