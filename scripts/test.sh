#!/usr/bin/env bash
# Quick start 2: set up, build, and run the whole test suite with validation
# layers on (any validation message fails its test), then the matrix:
#   the core tests         the device as it is (with the parity tests against
#                          the real llama.cpp, label llama, and the packaging
#                          tests, label package)
#   the GPU-facing tests   (ctest label gpu) on the device as it is, under
#                          SIEVE_PROFILE=gpu at subgroup sizes 4, 16 and 64
#                          (the last with a discrete card's staged memory) and
#                          under gpu,constrained: on lavapipe each test under
#                          one of them (SIEVE_TEST_MATRIX=full: under each)
#   sanitizers, fuzzing    scripts/sanitize.sh, scripts/fuzz.sh (25 s a harness)
# On lavapipe LP_NATIVE_VECTOR_WIDTH=128/512/2048 presents subgroup size 4/16/64; the
# size each run gets is checked, never assumed. Extra arguments go to ctest
# (the ctest runs only).
set -euo pipefail
cd "$(dirname "$0")/.."
# The set-up's configure fetches the real llama.cpp (scripts/fetch_llama.sh)
# that the parity tests, the drop-in and the bench's peer run against; a failed
# fetch fails it, naming what is missing.
step_start=$SECONDS
./scripts/setup.sh test
echo "== set-up and build: $((SECONDS - step_start)) s"
cd build
export SIEVE_VALIDATION=1
jobs=$(nproc)

# The subgroup size the default device presents under the given environment.
subgroup_size() {
  env "$@" ./cli/sieve devices --json | tr -d ' \n' | grep -o '"default":true[^}]*"subgroup_size":[0-9]*' |
    grep -o '[0-9]*$'
}

# run NAME [VAR=VALUE...] -- CTEST_ARGS...
run() {
  local name=$1 vars=()
  shift
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  local start=$SECONDS
  echo "== sieve test matrix: $name (${vars[*]:-device as it is}, subgroup size $(subgroup_size "${vars[@]}"))"
  env "${vars[@]}" ctest --output-on-failure -j"$jobs" "$@"
  echo "== $name: $((SECONDS - start)) s"
}

# The profiles change what the GPU-facing tests (label gpu) exercise. The core
# tests (label core) are mostly the twin's and the CLI's, which no profile
# changes; the C API's device calls among them take the paths the GPU-facing
# tests cover under the same profile. The parity tests against llama.cpp
# (label llama) compare with the device as it is, and the packaging tests
# (label package) do not depend on it: they run once, on the device as it is.
# There is no configuration SIEVE_PROFILE=constrained alone: on lavapipe it
# is a CPU device's plan with a phone's limits and no optional features,
# which no device a user has records (a phone GPU records a GPU's plan:
# gpu,constrained). The core tests' constrained contexts
# (sieve_test::Profile::Constrained: bad input, edge cases, the statistics)
# run that plan's portable shaders.
#
# The configurations of the GPU-facing tests: the device as it is, and the
# GPU-shaped ones. On lavapipe: the GPU plan's subgroup variants at subgroup
# sizes 4, 16 and 64 (LP_NATIVE_VECTOR_WIDTH=128/512/2048: lavapipe presents
# width / 32, from 4 to 128, whatever the host's vectors): many subgroups of
# a workgroup, Intel's and Mali's 16, and few, as AMD's wave64 runs them; a
# size assumption breaks at one end or the other. The subgroup-64 run also
# takes a discrete card's memory path (SIEVE_TEST_STAGED_MEMORY=1,
# tests/support/environment.cpp):
# lavapipe's memory is unified, so it would never record the staging copies
# and their barriers, where an H200 run found a hazard the other runs could
# not. 8 (Intel's narrowest) is the device's own size and NVIDIA's 32 lies
# between; 128, Vulkan's largest (Adreno), is a run
# by hand (SIEVE_PROFILE=gpu LP_NATIVE_VECTOR_WIDTH=4096 ctest -L gpu). A
# cold first call at these widths waits for lavapipe's compile inside the
# submission, which a CPU device's wait timeout allows for (600 s). And
# gpu,constrained, which turns every optional feature off, subgroup
# arithmetic included (the portable variants), so its subgroup size changes
# nothing. On a device that is not a CPU implementation: gpu and
# gpu,constrained at the device's own size.
#
# Dealt (the default on a CPU device): each GPU-facing test runs under one
# configuration, ctest -I k,,5 by test number, the deal turned by the commit
# (the parameterized families, the chains, the GPU-vs-twin shapes, the
# history chains, spread over all five; over successive commits every test
# meets every configuration). On lavapipe most of a GPU-facing test's time
# is compiling its pipelines cold (LLVM splits a shader at every barrier:
# collect_fused for a typ_p chain takes 28 s without the shader cache, 3.7
# with it), once per configuration: the whole suite and the three GPU-shaped
# runs took a slow CI machine past its limit. SIEVE_TEST_MATRIX=full runs
# every GPU-facing test under each configuration (about three times as
# long; the default on a real GPU); SIEVE_TEST_DEAL=N turns the deal by N to
# repeat a CI run's.
# Whole, on the device as it is: the chi-square tests (100 000 draws each;
# a GPU-shaped plan runs them 5-15 times slower on lavapipe, the top-p pair
# 10-20 minutes), Contexts.* (200 contexts coming and going on one VkInstance,
# which no profile changes) and the lockstep test (10 000 tokens: the history
# ring's wrap, nothing allocated or recorded per token; the same host logic
# under every plan). Under the GPU-shaped plans the GPU-vs-twin tests check
# each draw against the twin's for the same uniform, which pins the GPU
# plan's draw more tightly than a chi-square.
whole_on_device='GpuStatistics\.ChiSquare|GpuHistoryLockstep\.|Contexts\.'
configs=()
matrix=full
if ./cli/sieve devices --json | tr -d ' \n' | grep -q '"default":true,"type":"cpu"'; then
  matrix=dealt
  configs+=("device as it is|")
  # The sizes are lavapipe's to present (width / 32, 4 to 128); each is checked.
  for pair in 4:128 16:512 64:2048; do
    size=${pair%:*} width=${pair#*:}
    got=$(subgroup_size LP_NATIVE_VECTOR_WIDTH="$width")
    if [[ $got != "$size" ]]; then
      echo "sieve test matrix: LP_NATIVE_VECTOR_WIDTH=$width gives subgroup size ${got:-?}, not $size" >&2
      exit 1
    fi
    # At 64, a discrete card's memory path besides (AMD's desktop cards run
    # wave64): the staging copies and their barriers (SIEVE_TEST_STAGED_MEMORY).
    staged=''
    ((size == 64)) && staged=' SIEVE_TEST_STAGED_MEMORY=1'
    configs+=("gpu, subgroup $size${staged:+, staged memory}|SIEVE_PROFILE=gpu LP_NATIVE_VECTOR_WIDTH=$width$staged")
  done
else
  configs+=("gpu|SIEVE_PROFILE=gpu")
fi
configs+=("gpu,constrained|SIEVE_PROFILE=gpu,constrained")
matrix=${SIEVE_TEST_MATRIX:-$matrix}
if [[ $matrix != dealt && $matrix != full ]]; then
  echo "sieve test matrix: SIEVE_TEST_MATRIX=$matrix: dealt or full" >&2
  exit 2
fi
if [[ $matrix == dealt && ${configs[0]} != "device as it is|" ]]; then
  echo "sieve test matrix: SIEVE_TEST_MATRIX=dealt deals over a CPU device's configurations; this device runs full" >&2
  exit 2
fi
n=${#configs[@]}

if [[ $matrix == dealt ]]; then
  if [[ -n ${SIEVE_TEST_DEAL:-} ]]; then
    if [[ ! $SIEVE_TEST_DEAL =~ ^[0-9]+$ ]]; then
      echo "sieve test matrix: SIEVE_TEST_DEAL=$SIEVE_TEST_DEAL: a whole number" >&2
      exit 2
    fi
    turn=$((SIEVE_TEST_DEAL % n))
  else
    head=$(git -C .. rev-parse --short=7 HEAD 2>/dev/null || echo 0)
    turn=$((16#$head % n))
  fi
  echo "== GPU-facing tests dealt over $n configurations, turned by $turn (SIEVE_TEST_DEAL=$turn repeats it)"
  run "whole suite but the GPU-facing tests" -- -LE gpu "$@"
  run "gpu-facing, device as it is: chi-square, lockstep, contexts" -- -L gpu -R "$whole_on_device" "$@"
  for i in "${!configs[@]}"; do
    name=${configs[i]%%|*}
    read -r -a vars <<<"${configs[i]#*|}"
    k=$(((i + turn) % n + 1))
    run "gpu-facing, $name, dealt $k of $n" "${vars[@]}" -- -L gpu -E "$whole_on_device" -I "$k,,$n" "$@"
  done
else
  run "whole suite" -- "$@"
  # Under the first GPU-shaped configuration also the chi-square tests but
  # the top-p pair, and the lockstep test (5000 tokens under a GPU plan on a
  # CPU device, 900 past the ring's first wrap).
  never='Contexts\.|GpuStatistics\.ChiSquareTopP'
  first=1
  for i in "${!configs[@]}"; do
    name=${configs[i]%%|*}
    [[ $name == "device as it is" ]] && continue
    read -r -a vars <<<"${configs[i]#*|}"
    left_out="$whole_on_device"
    ((first)) && left_out=$never
    first=0
    run "gpu-facing, $name" "${vars[@]}" -- -L gpu -E "$left_out" "$@"
  done
fi

# Sanitizers and fuzzing (issue 23): an ASan+UBSan build's core tests that need
# no Vulkan driver, then each libFuzzer harness for 25 s (scripts/fuzz.sh 600
# runs them longer).
cd ..
step_start=$SECONDS
echo "== sanitizers (ASan + UBSan, build-asan)"
./scripts/sanitize.sh
echo "== sanitizers: $((SECONDS - step_start)) s"
step_start=$SECONDS
# Every harness, fuzz_diff (the CPU backend against the Vulkan backend) too:
# each run starts from a fresh random seed, so a new finding fails the run
# with its input kept in build-fuzz/findings/ (fuzz/open/README.md says what
# to do with it).
echo "== fuzzing (libFuzzer, build-fuzz)"
./scripts/fuzz.sh
echo "== fuzzing: $((SECONDS - step_start)) s"
