#!/usr/bin/env bash
# The GPU check: what a person with a real GPU runs and sends back.
#
#   ./scripts/gpu_check.sh [--no-setup] [--build-dir DIR] [--out FILE] [--tokens N] [--filter GTEST_FILTER]
#                          [--shards N] [--bench-case TEXT] [--verify-case TEXT] [--skip PARTS]
#                          [--baseline-build DIR]
#   ./scripts/gpu_check.sh --bundle DIR [--no-setup] [--build-dir DIR] [--phase-build DIR] [--baseline-build DIR]
#   DIR/gpu_check.sh [--out FILE] [--tokens N] [--filter GTEST_FILTER] [--shards N] [--bench-case TEXT]
#                    [--verify-case TEXT] [--skip PARTS]
#
# Sets up and builds as the README's commands do (--no-setup: use the existing
# build, ./build or --build-dir, as it is, with no package manager and no
# network), lists the Vulkan devices, runs the GPU-facing tests (ctest label
# gpu) with validation layers on on the first device that is not a CPU
# implementation (--shards N: in N processes at once, GTEST_TOTAL_SHARDS, their
# reports merged by python3; on an H200's 16 cores 16 shards took 105 s where
# one process took about 290), runs `sieve bench` there (its default suite, then its verify
# suite with the logits in device memory: speculative decoding's
# sieve_verify_vulkan against sieve_sample_vulkan position by position; then
# the default suite, 64 rows of the vocab-151936 cases, the default chain at
# 32000 x 256 rows and every chain on flat rows (N(0, 1), which need dist's and min-p's key
# levels) with the logits already in device memory, --input device, and its one-row cases
# again with the host's wait asleep and polling: SIEVE_WAIT_SPIN_US 0 and
# 1000), the compiled pipelines' statistics with each one's residency an SM
# beside the one the estimate assumes (SIEVE_PIPELINE_STATS,
# tools/pipeline_stats: the one-row and 64-row cases' pipelines, two tokens
# each, the logits from the host), the project's PyTorch
# peer where python3 imports a CUDA-enabled torch (tools/torch_peer), the
# truncating one-row cases under the phase-clock build where there is one
# (--phase-build DIR, or the bundle's phase/: cmake -DSIEVE_PHASE_CLOCK=ON,
# the collect tail's phases timed inside its dispatch, tools/phase_clock), an
# A/B of the engine against another commit's where there is one
# (--baseline-build DIR, a build of that commit, or the bundle's baseline/:
# its libsieve under this build's CLI, swapped by LD_LIBRARY_PATH, the one-row
# cases from device memory in three alternating rounds, each round's
# `sieve bench --compare`), and writes one report, sieve-gpu-check.json by
# default: the devices (name, type, driver, Vulkan version, subgroup size,
# features), the device checked, every test with its result, the benches'
# JSON, the peer's figures beside Sieve's (torch/dev), each part's wall
# time and, where nvidia-smi is there, the GPU's clocks through each part
# (clocks: null elsewhere). The tests run with validation layers on, the
# benches without (the layer would time itself). Attach it to an issue.
# --skip PARTS (comma-separated: tests, bench, verify_bench, device_bench,
# wait_bench, ab_bench, pipeline_stats, torch, phases) leaves those parts
# out, their report entries null: where a machine is lent for minutes (the
# whole check took longer than 6 on an H200), a run can hold what it came
# for.
#
# --bundle DIR builds (unless --no-setup), then writes into DIR (new or empty)
# what a run needs on a machine with no compiler: this script, the `sieve` CLI,
# the GPU test binary, libsieve, the PyTorch peer's scripts, the phase-clock
# build's CLI and libsieve (--phase-build DIR, built beforehand: cmake -S .
# -B DIR -DSIEVE_PHASE_CLOCK=ON -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_TOOLS=OFF;
# cmake --build DIR --target sieve_cli_main), the baseline build's libsieve
# and its commit (--baseline-build DIR: the same SONAME as this build's), the
# Vulkan loader and the validation layer of this machine (the loader is used
# only where none is installed; the layer, compressed, always: the same
# validation everywhere). Copy DIR to the GPU's machine and run
# DIR/gpu_check.sh there; it needs a Vulkan driver and nothing else
# (VK_DRIVER_FILES names a driver that is not installed system-wide).
#
# Exit status: 0 every test passed; 1 a test failed (the report says which);
# 2 usage (also a --bundle DIR that exists and is not empty, or cannot be
# written: nothing is written then); 5 no GPU: the only Vulkan devices are CPU
# implementations (lavapipe), which the ordinary test command already covers.
# (SIEVE_GPU_CHECK_ALLOW_CPU=1 lets a CPU device stand in: for testing this
# script itself, tests/bench/test_gpu_check.cpp.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# A bundle holds a BUNDLE file beside this script; a checkout holds it in scripts/.
bundled=0
[[ -f $here/BUNDLE ]] && bundled=1
if ((bundled)); then root=$here; else root=$(cd "$here/.." && pwd); fi

usage() { echo "gpu_check: $1 (see --help)" >&2; exit 2; }
# The first of the given programs that is not built, or nothing.
missing_program() {
  local f
  for f in "$@"; do [[ -x $f ]] || { echo "$f"; return; }; done
}
# cli_soname CLI: the libsieve SONAME the CLI asks the dynamic linker for.
cli_soname() { objdump -p "$1" | awk '$1 == "NEEDED" && $2 ~ /^libsieve/ {print $2}'; }
# missing_baseline CLI DIR: DIR's libsieve under the SONAME the CLI asks for
# when DIR (a build of another commit) lacks it, or nothing.
missing_baseline() {
  local so
  so=$(cli_soname "$1")
  [[ -n $so && -f $2/engine/$so ]] || echo "$2/engine/${so:-libsieve.so}"
}
# baseline_commit DIR: the commit of the checkout DIR was configured from.
baseline_commit() {
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null)
  [[ -n $src ]] && git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown
}

# Paths given are relative to where the script is called from.
setup=1 build=$root/build out=$root/sieve-gpu-check.json tokens=200 filter='*' shards=1 bench_case='' verify_case='' bundle=''
phase_build='' baseline_build='' skip=''
parts_known=tests,bench,verify_bench,device_bench,wait_bench,ab_bench,pipeline_stats,torch,phases  # what --skip may name
while (($#)); do
  case $1 in
    --no-setup) setup=0 ;;
    --out) (($# > 1)) || usage "--out needs a file"; out=$(realpath -m "$2"); shift ;;
    --build-dir) (($# > 1)) || usage "--build-dir needs a directory"; build=$(realpath -m "$2"); shift ;;
    --bundle) (($# > 1)) && [[ -n $2 ]] || usage "--bundle needs a directory"; bundle=$(realpath -m "$2"); shift ;;
    --tokens) (($# > 1)) || usage "--tokens needs a number"; tokens=$2; shift ;;
    --filter) (($# > 1)) || usage "--filter needs a gtest filter"; filter=$2; shift ;;
    --shards) (($# > 1)) && [[ $2 =~ ^[1-9][0-9]?$ ]] || usage "--shards needs a number of processes, 1 to 99"; shards=$2; shift ;;
    --bench-case) (($# > 1)) || usage "--bench-case needs a text"; bench_case=$2; shift ;;
    --verify-case) (($# > 1)) || usage "--verify-case needs a text"; verify_case=$2; shift ;;
    --phase-build) (($# > 1)) || usage "--phase-build needs a directory"; phase_build=$(realpath -m "$2"); shift ;;
    --baseline-build) (($# > 1)) || usage "--baseline-build needs a directory"; baseline_build=$(realpath -m "$2"); shift ;;
    --skip) (($# > 1)) || usage "--skip needs parts"
      for p in ${2//,/ }; do
        [[ ,$parts_known, == *",$p,"* ]] || usage "--skip: unknown part '$p' (${parts_known//,/, })"
      done
      skip=",$2,"; shift ;;
    -h|--help) sed -n '2,67p' "$0"; exit 0 ;;
    *) usage "unknown argument '$1'" ;;
  esac
  shift
done
((shards == 1)) || command -v python3 >/dev/null 2>&1 || usage "--shards $shards needs python3 (to merge the shards' reports)"
cd "$root"

# ---- --bundle DIR: write what a run needs, then stop -------------------------
if [[ -n $bundle ]]; then
  ((bundled == 0)) || usage "--bundle: this script already runs from a bundle"
  # Refused before anything is built or written.
  if [[ -e $bundle && ! -d $bundle ]]; then usage "--bundle $bundle exists and is not a directory"; fi
  if [[ -d $bundle && -n $(ls -A "$bundle") ]]; then
    usage "--bundle $bundle exists and is not empty: give a new or empty directory (nothing was written)"
  fi
  made_dir=0
  [[ -d $bundle ]] || { mkdir -p "$bundle" 2>/dev/null && made_dir=1; } ||
    usage "--bundle $bundle cannot be created"
  if ! touch "$bundle/.write-test" 2>/dev/null; then
    ((made_dir)) && rmdir "$bundle" 2>/dev/null
    usage "--bundle $bundle cannot be written"
  fi
  rm -f "$bundle/.write-test"
  if ((setup)); then ./scripts/setup.sh; fi
  missing=$(missing_program "$build/cli/sieve" "$build/tests/sieve_gpu_tests" ${phase_build:+"$phase_build/cli/sieve"})
  [[ -n $missing || -z $baseline_build ]] || missing=$(missing_baseline "$build/cli/sieve" "$baseline_build")
  if [[ -n $missing ]]; then
    ((made_dir)) && rmdir "$bundle" 2>/dev/null
    echo "gpu_check: $missing is missing: build first (run without --no-setup)" >&2
    exit 2
  fi
  mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/loader" "$bundle/layers"
  cp "$build/cli/sieve" "$build/tests/sieve_gpu_tests" "$bundle/bin/"
  # libsieve under its SONAME, the name the CLI asks the dynamic linker for.
  soname=$(cli_soname "$build/cli/sieve")
  [[ -n $soname ]] && cp -L "$build/engine/$soname" "$bundle/lib/$soname"
  command -v strip >/dev/null && strip --strip-unneeded "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null || true
  # The loader this build ran with (volk opens libvulkan.so.1). The readers
  # of a pipe read it to the end: a reader that quits early can kill the
  # writer with SIGPIPE, which pipefail makes the script's exit (141).
  loader=$(ldconfig -p 2>/dev/null | awk '$1 == "libvulkan.so.1" && !found {print $NF; found = 1}')
  [[ -n $loader ]] && cp -L "$loader" "$bundle/loader/libvulkan.so.1"
  # The validation layer: its manifest, pointed at the library beside it.
  manifest=''
  for d in /usr/share/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d; do
    [[ -f $d/VkLayer_khronos_validation.json ]] && { manifest=$d/VkLayer_khronos_validation.json; break; }
  done
  if [[ -n $manifest ]]; then
    lib=$(grep -o '"library_path"[^,]*' "$manifest" | sed 's/.*: *"\(.*\)"/\1/')
    [[ $lib == /* ]] || lib=$(ldconfig -p | awk -v l="$(basename "$lib")" '$1 == l && !found {print $NF; found = 1}')
    if [[ -n $lib && -f $lib ]]; then
      gzip -c "$lib" > "$bundle/layers/libVkLayer_khronos_validation.so.gz"
      sed 's|"library_path": *"[^"]*"|"library_path": "./libVkLayer_khronos_validation.so"|' "$manifest" \
        > "$bundle/layers/VkLayer_khronos_validation.json"
    fi
  fi
  [[ -f $bundle/layers/VkLayer_khronos_validation.json ]] ||
    echo "gpu_check: no validation layer on this machine: the bundle needs one installed where it runs" >&2
  mkdir -p "$bundle/tools/torch_peer" "$bundle/tools/phase_clock" "$bundle/tools/pipeline_stats"
  cp tools/torch_peer/torch_peer.py tools/torch_peer/torch_table.py "$bundle/tools/torch_peer/"
  cp tools/phase_clock/phase_summary.py "$bundle/tools/phase_clock/"
  cp tools/pipeline_stats/residency.py "$bundle/tools/pipeline_stats/"
  if [[ -n $phase_build ]]; then
    mkdir -p "$bundle/phase/bin" "$bundle/phase/lib"
    cp "$phase_build/cli/sieve" "$bundle/phase/bin/"
    cp -L "$phase_build/engine/$soname" "$bundle/phase/lib/$soname"
    strip --strip-unneeded "$bundle"/phase/bin/* "$bundle"/phase/lib/* 2>/dev/null || true
  fi
  if [[ -n $baseline_build ]]; then  # compressed, as the layer: a bundle travels within a size limit
    mkdir -p "$bundle/baseline"
    cp -L "$baseline_build/engine/$soname" "$bundle/baseline/$soname"
    strip --strip-unneeded "$bundle/baseline/$soname" 2>/dev/null || true
    gzip "$bundle/baseline/$soname"
    echo "commit=$(baseline_commit "$baseline_build")" > "$bundle/baseline/BASELINE"
  fi
  cp "$here/$(basename "$0")" "$bundle/gpu_check.sh"
  chmod +x "$bundle/gpu_check.sh"
  {
    echo "commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "build_host=$(uname -srm)"
  } > "$bundle/BUNDLE"
  size=$(du -sk "$bundle" | awk '{print $1}')
  echo "gpu_check: bundle in $bundle ($((size / 1024)) MiB): copy it to the GPU's machine and run $bundle/gpu_check.sh"
  exit 0
fi

# ---- the check ----------------------------------------------------------------
work=$(mktemp -d)
clock_pid=''
trap '[[ -n $clock_pid ]] && kill "$clock_pid" 2>/dev/null; rm -rf "$work"' EXIT
if ((bundled)); then
  sieve=$root/bin/sieve
  gpu_tests=$root/bin/sieve_gpu_tests
  phase_sieve=$root/phase/bin/sieve phase_lib=$root/phase/lib
  baseline_lib='' baseline_rev=''
  if [[ -f $root/baseline/BASELINE ]]; then
    mkdir -p "$work/baseline"
    for z in "$root"/baseline/*.gz; do gzip -dc "$z" > "$work/baseline/$(basename "$z" .gz)"; done
    baseline_lib=$work/baseline baseline_rev=$(sed -n 's/^commit=//p' "$root/baseline/BASELINE")
  fi
  commit=$(sed -n 's/^commit=//p' "$root/BUNDLE")
  export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ! ldconfig -p 2>/dev/null | grep 'libvulkan\.so\.1 ' >/dev/null && [[ -f $root/loader/libvulkan.so.1 ]]; then
    echo "== no Vulkan loader installed: the bundle's ($root/loader)"
    export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/loader
  fi
  if [[ -f $root/layers/libVkLayer_khronos_validation.so.gz ]]; then
    mkdir -p "$work/layers"
    gzip -dc "$root/layers/libVkLayer_khronos_validation.so.gz" > "$work/layers/libVkLayer_khronos_validation.so"
    cp "$root/layers/VkLayer_khronos_validation.json" "$work/layers/"
    export VK_LAYER_PATH=$work/layers
  fi
else
  if ((setup)); then
    ./scripts/setup.sh
  fi
  sieve=$build/cli/sieve
  gpu_tests=$build/tests/sieve_gpu_tests
  phase_sieve=${phase_build:+$phase_build/cli/sieve} phase_lib=${phase_build:+$phase_build/engine}
  baseline_lib=${baseline_build:+$baseline_build/engine}
  baseline_rev=${baseline_build:+$(baseline_commit "$baseline_build")}
  commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
fi
missing=$(missing_program "$sieve" "$gpu_tests" ${phase_build:+"$phase_sieve"})
[[ -n $missing || -z $baseline_build ]] || missing=$(missing_baseline "$sieve" "$baseline_build")
[[ -z $missing ]] || { echo "gpu_check: $missing is missing: build first (run without --no-setup)" >&2; exit 2; }

# part NAME: the wall time since the part began, printed and kept for the report.
parts=''
part_start=$SECONDS
# skipping PART: whether --skip names it (then the part says so).
skipping() {
  [[ $skip == *",$1,"* ]] || return 1
  echo "== $1: skipped (--skip)"
}
part_done() {
  local seconds=$((SECONDS - part_start))
  echo "== $1: $seconds s"
  parts+="${parts:+, }\"$1\": $seconds"
  part_start=$SECONDS
  echo "$(date '+%Y/%m/%d %H:%M:%S.%N') $1" >> "$work/part_marks.txt"
}
# The GPU's clocks through the check, where nvidia-smi is there: a sample
# every 200 ms (its own timestamps), summed up per part for the report. A
# GPU's SM clock falls to idle between bursts of work (an H200 at 345 MHz
# against 1980): a bench part that ran at the idle clock says so here.
echo "$(date '+%Y/%m/%d %H:%M:%S.%N') start" > "$work/part_marks.txt"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,pstate --format=csv,noheader,nounits -lms 200 \
    > "$work/clocks.csv" 2>/dev/null &
  clock_pid=$!
fi

devices_json=$("$sieve" devices --json)
echo "== Vulkan devices"
"$sieve" devices

# The first device whose type is not cpu: `sieve devices` prints "[i] name"
# then "    type T, ...".
allow_cpu=${SIEVE_GPU_CHECK_ALLOW_CPU:-0}
index=$("$sieve" devices | awk -v allow_cpu="$allow_cpu" '/^\[[0-9]+\]/ {i = substr($1, 2, length($1) - 2)}
                                /^    type / && ($2 != "cpu," || allow_cpu == "1") && i != "" && !found {print i; found = 1}')
if [[ -z $index ]]; then
  echo "gpu_check: no GPU: every Vulkan device here is a CPU implementation (lavapipe)." >&2
  echo "gpu_check: the test command (scripts/test.sh) already runs the suite on it; nothing to report." >&2
  exit 5
fi
# Validation layers on for the tests only: on the benches they would time the
# layer (an H200 run with them on paid 30-60 us more per call, in the
# submission and the wait).
export SIEVE_DEVICE=$index SIEVE_VALIDATION=0
# A sharding of the caller's (GoogleTest's variables, from a test run that
# calls this script) would run only its share of the tests: --shards sets them.
unset SIEVE_PROFILE LP_NATIVE_VECTOR_WIDTH GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
echo "== checking device $index"
part_done devices

echo "== GPU-facing tests (validation on)"
set +e
tests_status=0
if skipping tests; then
  : > "$work/tests.log"
elif ((shards == 1)); then
  SIEVE_VALIDATION=1 "$gpu_tests" --gtest_filter="$filter" --gtest_output=json:"$work/tests.json" 2>&1 | tee "$work/tests.log" | grep -E '^\[ *(OK|FAILED|PASSED|  FAILED) *\]|^\[==========\]'
  tests_status=${PIPESTATUS[0]}
else
  # Each shard its own process, log and report; the reports merged into one
  # (the suites of all shards, the counts summed).
  pids=()
  for ((i = 0; i < shards; ++i)); do
    SIEVE_VALIDATION=1 GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$gpu_tests" --gtest_filter="$filter" \
      --gtest_output=json:"$work/tests_$i.json" > "$work/tests_$i.log" 2>&1 &
    pids+=($!)
  done
  tests_status=0
  for p in "${pids[@]}"; do wait "$p" || tests_status=1; done
  for ((i = 0; i < shards; ++i)); do cat "$work/tests_$i.log"; done > "$work/tests.log"
  grep -E '^\[ *(FAILED|PASSED|  FAILED) *\]' "$work/tests.log"
  python3 - "$work" "$shards" > "$work/tests.json" <<'PY' || tests_status=1
import json, sys
work, shards = sys.argv[1], int(sys.argv[2])
merged = {"tests": 0, "failures": 0, "disabled": 0, "errors": 0, "shards": shards, "testsuites": []}
for i in range(shards):
    with open(f"{work}/tests_{i}.json") as f:
        shard = json.load(f)
    for key in ("tests", "failures", "disabled", "errors"):
        merged[key] += shard.get(key, 0)
    merged["testsuites"] += shard.get("testsuites", [])
json.dump(merged, sys.stdout)
PY
fi
part_done tests
echo "== sieve bench"
bench_status=0 verify_status=0 device_status=0 device_b64_status=0 device_b256_status=0 device_flat_status=0 wait_status=0
if ! skipping bench; then
  "$sieve" bench --tokens "$tokens" ${bench_case:+--case "$bench_case"} --json-out "$work/bench.json"
  bench_status=$?
fi
part_done bench
# As an engine verifies: every sequence's positions already in a device-local
# buffer (sieve_verify_vulkan), against sieve_sample_vulkan per position.
echo "== sieve bench --suite verify --input device"
if ! skipping verify_bench; then
  "$sieve" bench --suite verify --input device --tokens "$tokens" ${verify_case:+--case "$verify_case"} --json-out "$work/verify.json"
  verify_status=$?
fi
part_done verify_bench
# As an inference engine calls it: the logits already in a device-local
# buffer (sieve_sample_vulkan), one row, 64 rows and 256.
echo "== sieve bench --input device"
if ! skipping device_bench; then
  "$sieve" bench --input device --tokens "$tokens" ${bench_case:+--case "$bench_case"} --json-out "$work/bench_device.json"
  device_status=$?
  # (--rows renames the cases: .../b64; a --bench-case names its shape.)
  b64_case=${bench_case:-zipf/v151936}
  "$sieve" bench --input device --rows 64 --case "${b64_case%/b*}" --tokens "$tokens" \
    --json-out "$work/bench_device_b64.json"
  device_b64_status=$?
  # Issue 34's batch target: the default chain at 32000 x 256 rows.
  "$sieve" bench --input device --suite full --case default/zipf/v32000/b256 --tokens "$tokens" \
    --json-out "$work/bench_device_b256.json"
  device_b256_status=$?
  # Rows whose dist and min-p need the key levels (the built-in flat shape,
  # N(0, 1): a GPU's plan draws them in submissions after the first), every
  # chain at one row; with a --bench-case, its flat counterpart (its zipf/
  # read as flat/).
  flat_case=${bench_case:-zipf/v151936/b1}
  "$sieve" bench --input device --suite full --case "${flat_case/zipf\//flat/}" --tokens "$tokens" \
    --json-out "$work/bench_device_flat.json"
  device_flat_status=$?
fi
part_done device_bench
# The fixed cost by how the host waits (issue 34, item 3): the one-row cases
# again, waiting asleep on the fence (SIEVE_WAIT_SPIN_US=0, the calibration's
# empty submit too) and polling it from the submit (a window of 1000 us, longer
# than these calls), beside bench_device's default (asleep until about the
# usual finish less 20 us, then polling).
echo "== sieve bench --input device: the host's wait asleep, then polling from the submit"
wait_case=${bench_case:-zipf/v151936/b1}
if ! skipping wait_bench; then
  SIEVE_WAIT_SPIN_US=0 "$sieve" bench --input device --case "$wait_case" --tokens "$tokens" \
    --json-out "$work/bench_wait_sleep.json" > /dev/null
  wait_status=$?
  SIEVE_WAIT_SPIN_US=1000 "$sieve" bench --input device --case "$wait_case" --tokens "$tokens" \
    --json-out "$work/bench_wait_poll.json" > /dev/null
  ((wait_status |= $?))
fi
part_done wait_bench
# The engine against another commit's (--baseline-build, the bundle's
# baseline/): this build's CLI with each libsieve in turn (the bench itself
# the same on both sides), the one-row cases from device memory, three rounds
# alternating so that neither side gets the warmer GPU; each round's
# `sieve bench --compare baseline current` (B/A below 1: this build is faster).
echo "== A/B against the baseline build's engine (skipped without one)"
ab_status=0 ab_rounds=''
ab_case=${bench_case:-zipf/v151936/b1}
if skipping ab_bench; then
  :
elif [[ -n $baseline_lib ]]; then
  ab_args=(bench --input device --case "$ab_case" --tokens "$tokens" --profile-tokens 0 --twin-budget 0.1)
  for round in 1 2 3; do
    "$sieve" "${ab_args[@]}" --json-out "$work/ab_current_$round.json" > /dev/null || ab_status=1
    LD_LIBRARY_PATH="$baseline_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$sieve" "${ab_args[@]}" \
      --json-out "$work/ab_baseline_$round.json" > /dev/null || ab_status=1
    echo "round $round: baseline ${baseline_rev:-unknown} (A) against $commit (B)"
    # The table printed, the comparison's document written (--json-out).
    "$sieve" bench --compare "$work/ab_baseline_$round.json" "$work/ab_current_$round.json" \
      --json-out "$work/ab_compare_$round.json" || ab_status=1
    [[ -s $work/ab_compare_$round.json ]] || echo null > "$work/ab_compare_$round.json"
    ab_rounds+="${ab_rounds:+, }$(cat "$work/ab_compare_$round.json")"
  done
  echo "{\"baseline_commit\": \"${baseline_rev:-unknown}\", \"rounds\": [$ab_rounds]}" > "$work/ab_bench.json"
else
  echo "no baseline build: skipped"
fi
part_done ab_bench
# Each pipeline's registers and so its residency an SM against the
# estimate's (docs/architecture/estimate.md): a device Sieve creates (the
# host's logits), which enables the statistics; the 64-row cases' plans
# split rows differently from the one-row ones'.
echo "== the pipelines' statistics: residency an SM (SIEVE_PIPELINE_STATS)"
stats_status=0
stats_case=${bench_case:-zipf/v151936/b1}
if ! skipping pipeline_stats; then
  : > "$work/pipelines.jsonl"
  SIEVE_PIPELINE_STATS="$work/pipelines.jsonl" "$sieve" bench --case "$stats_case" --tokens 2 --profile-tokens 0 \
    --twin-budget 0.1 > /dev/null || stats_status=1
  SIEVE_PIPELINE_STATS="$work/pipelines.jsonl" "$sieve" bench --rows 64 --case "${stats_case%/b*}" --tokens 2 \
    --profile-tokens 0 --twin-budget 0.1 > /dev/null || stats_status=1
  if command -v python3 >/dev/null 2>&1; then
    python3 "$root/tools/pipeline_stats/residency.py" "$work/pipelines.jsonl" || stats_status=1
    python3 "$root/tools/pipeline_stats/residency.py" --json "$work/pipelines.jsonl" > "$work/pipeline_stats.json" ||
      stats_status=1
  else
    echo "no python3: the lines are in the report as they are"
  fi
fi
part_done pipeline_stats
# The PyTorch peer on the same GPU (tools/torch_peer): skipped, exit 0, where
# python3 has no CUDA-enabled torch.
echo "== the PyTorch peer (skipped where python3 has no CUDA torch)"
torch_status=0
if skipping torch; then
  echo '{"peer": "torch", "status": "skipped", "reason": "--skip torch"}' > "$work/torch.jsonl"
elif command -v python3 >/dev/null 2>&1; then
  python3 "$root/tools/torch_peer/torch_peer.py" --tokens "$tokens" --out "$work/torch.jsonl"
  torch_status=$?
  if [[ -s $work/bench_device.json ]]; then  # the table beside Sieve's device-input figures
    python3 "$root/tools/torch_peer/torch_table.py" --torch "$work/torch.jsonl" "$work/bench_device.json" \
      "$work/bench_device_b64.json"
    python3 "$root/tools/torch_peer/torch_table.py" --json --torch "$work/torch.jsonl" "$work/bench_device.json" \
      "$work/bench_device_b64.json" > "$work/torch_table.json"
  fi
else
  echo '{"peer": "torch", "status": "skipped", "reason": "no python3 on this machine"}' > "$work/torch.jsonl"
fi
part_done torch
# Where the truncating chains' one dispatch spends its time (issue 34): the
# phase-clock build's marks inside the collect tail's workgroup, one bench run
# a case so that each log holds one case (tools/phase_clock/phase_summary.py).
# The logits from the host: that build refuses a device the app created, as
# --input device's is; the marks fall inside the dispatch, after the upload.
echo "== the collect tail's phases (the phase-clock build; skipped without one)"
phase_status=0
if skipping phases; then
  :
elif [[ -n $phase_sieve && -x $phase_sieve ]]; then
  phase_args=()
  for c in default min_p top_p top_k1000 penalties_dry_n4096; do
    SIEVE_PHASE_LOG="$work/phase_$c.jsonl" LD_LIBRARY_PATH="$phase_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$phase_sieve" bench --case "$c/zipf/v151936/b1" --tokens "$tokens" --profile-tokens 0 > /dev/null ||
      phase_status=1
    phase_args+=("$c=$work/phase_$c.jsonl")
  done
  python3 "$root/tools/phase_clock/phase_summary.py" "${phase_args[@]}" || phase_status=1
  python3 "$root/tools/phase_clock/phase_summary.py" --json "${phase_args[@]}" > "$work/phases.json" || phase_status=1
else
  echo "no phase-clock build: skipped"
fi
part_done phases
# The clocks per part: each part's samples (between its start and its end
# mark), per GPU the SM clock's least, median and most, the memory clock's
# median and the performance states seen.
if [[ -n $clock_pid ]]; then
  kill "$clock_pid" 2>/dev/null
  wait "$clock_pid" 2>/dev/null
  clock_pid=''
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$work" > "$work/clocks.json" <<'PY' || echo null > "$work/clocks.json"
import datetime, json, statistics, sys
work = sys.argv[1]
def when(text):  # "YYYY/MM/DD HH:MM:SS.fraction", the fraction cut to microseconds
    day, time = text.strip().split(" ")
    whole, _, fraction = time.partition(".")
    return datetime.datetime.strptime(f"{day} {whole}.{(fraction + '000000')[:6]}", "%Y/%m/%d %H:%M:%S.%f")
marks = []
for line in open(f"{work}/part_marks.txt"):
    day, time, name = line.split(" ", 2)
    marks.append((when(f"{day} {time}"), name.strip()))
samples = []
for line in open(f"{work}/clocks.csv"):
    fields = [f.strip() for f in line.split(",")]
    try:
        samples.append((when(fields[0]), int(fields[1]), float(fields[2]), float(fields[3]), fields[4]))
    except (ValueError, IndexError):
        continue  # a line cut short by the kill, or "[N/A]"
parts = {}
for (begin, _), (end, name) in zip(marks, marks[1:]):
    per_gpu = {}
    for t, gpu, sm, mem, pstate in samples:
        if begin <= t < end:
            per_gpu.setdefault(gpu, []).append((sm, mem, pstate))
    parts[name] = [{"gpu": gpu, "samples": len(s),
                    "sm_mhz": {"min": min(x[0] for x in s), "median": statistics.median(x[0] for x in s),
                               "max": max(x[0] for x in s)},
                    "mem_mhz_median": statistics.median(x[1] for x in s),
                    "pstates": sorted({x[2] for x in s})} for gpu, s in sorted(per_gpu.items())]
json.dump({"source": "nvidia-smi", "interval_ms": 200, "parts": parts}, sys.stdout)
PY
    python3 - "$work/clocks.json" <<'PY' || true
import json, sys
doc = json.load(open(sys.argv[1]))
for name, gpus in (doc or {}).get("parts", {}).items():
    for g in gpus:
        s = g["sm_mhz"]
        print(f"== clocks: {name}: GPU {g['gpu']} SM {s['median']:.0f} MHz median ({s['min']:.0f}-{s['max']:.0f}),"
              f" {g['samples']} samples, {' '.join(g['pstates'])}")
PY
  fi
fi
set -e
for f in clocks tests bench verify bench_device bench_device_b64 bench_device_b256 bench_device_flat bench_wait_sleep bench_wait_poll ab_bench pipeline_stats torch_table phases; do
  [[ -s $work/$f.json ]] || echo null > "$work/$f.json"
done
torch_lines=$(grep -v '^[[:space:]]*$' "$work/torch.jsonl" 2>/dev/null | paste -sd, -)

{
  echo '{"schema": "sieve-gpu-check/1",'
  echo " \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo " \"commit\": \"$commit\","
  echo " \"bundled\": $( ((bundled)) && echo true || echo false),"
  echo " \"device_index\": $index,"
  echo " \"devices\": $devices_json,"
  echo " \"seconds\": {$parts},"
  echo " \"clocks\": $(cat "$work/clocks.json"),"
  echo " \"tests_exit_status\": $tests_status,"
  echo " \"tests\": $(cat "$work/tests.json"),"
  echo " \"bench_exit_status\": $bench_status,"
  echo " \"bench\": $(cat "$work/bench.json"),"
  echo " \"bench_device_exit_status\": $device_status,"
  echo " \"bench_device\": $(cat "$work/bench_device.json"),"
  echo " \"bench_device_b64_exit_status\": $device_b64_status,"
  echo " \"bench_device_b64\": $(cat "$work/bench_device_b64.json"),"
  echo " \"bench_device_b256_exit_status\": $device_b256_status,"
  echo " \"bench_device_b256\": $(cat "$work/bench_device_b256.json"),"
  echo " \"bench_device_flat_exit_status\": $device_flat_status,"
  echo " \"bench_device_flat\": $(cat "$work/bench_device_flat.json"),"
  echo " \"bench_wait_exit_status\": $wait_status,"
  echo " \"bench_wait_sleep\": $(cat "$work/bench_wait_sleep.json"),"
  echo " \"bench_wait_poll\": $(cat "$work/bench_wait_poll.json"),"
  echo " \"ab_bench_exit_status\": $ab_status,"
  echo " \"ab_bench\": $(cat "$work/ab_bench.json"),"
  echo " \"pipeline_stats_exit_status\": $stats_status,"
  echo " \"pipeline_stats\": $(cat "$work/pipeline_stats.json"),"
  echo " \"torch_exit_status\": $torch_status,"
  echo " \"torch\": {\"lines\": [${torch_lines}], \"table\": $(cat "$work/torch_table.json")},"
  echo " \"phases_exit_status\": $phase_status,"
  echo " \"phases\": $(cat "$work/phases.json"),"
  echo " \"verify_bench_exit_status\": $verify_status,"
  echo " \"verify_bench\": $(cat "$work/verify.json")"
  echo '}'
} > "$out"

failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$work/tests.log" || true)
echo "== report: $out (tests exit status $tests_status, $failed failed; bench exit status $bench_status, verify bench" \
  "$verify_status, device-input bench $device_status, $device_b64_status, $device_b256_status and $device_flat_status, waits $wait_status, A/B $ab_status, pipeline statistics" \
  "$stats_status, torch peer $torch_status, phases $phase_status)"
if ((tests_status != 0 || bench_status != 0 || verify_status != 0 || device_status != 0 || device_b64_status != 0 ||
     device_b256_status != 0 || device_flat_status != 0 || wait_status != 0 || ab_status != 0 || stats_status != 0 ||
     phase_status != 0)); then
  exit 1
fi
