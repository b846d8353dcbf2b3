#!/usr/bin/env bash
# Quick start 2: set up, build, and run the whole test suite with validation
# layers on (any validation message fails its test), then the matrix:
#   the whole suite        the device as it is (with the parity tests against
#                          the real llama.cpp, label llama, and the packaging
#                          tests, label package)
#   the GPU-facing tests   (ctest label gpu) under SIEVE_PROFILE=gpu at
#                          subgroup sizes 4 and 16 and gpu,constrained, each
#                          test under one of them (SIEVE_TEST_MATRIX=full:
#                          under each)
#   sanitizers, fuzzing    scripts/sanitize.sh, scripts/fuzz.sh (25 s a harness)
# On lavapipe LP_NATIVE_VECTOR_WIDTH=128/512 presents subgroup size 4/16; the
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

run "whole suite" -- "$@"
# The profiles change what the GPU-facing tests (label gpu) exercise. The core
# tests (label core) are mostly the twin's and the CLI's, which no profile
# changes; the C API's device calls among them take the paths the GPU-facing
# tests cover under the same profile. The parity tests against llama.cpp
# (label llama) compare with the device as it is, and the packaging tests
# (label package) do not depend on it. The whole-suite run above has them all.
# There is no run under SIEVE_PROFILE=constrained alone: on lavapipe it is a
# CPU device's plan with a phone's limits and no optional features, which no
# device a user has records (a phone GPU records a GPU's plan: the
# gpu,constrained run below). The whole suite's constrained contexts
# (sieve_test::Profile::Constrained, the same limits and features: the
# chains, the GPU-vs-twin shapes, history, bad input, the statistics) run the
# CPU plan's portable shaders.
# The chi-square tests draw 100 000 tokens each: a GPU-shaped plan (256-wide
# workgroups, 64 chunks) runs them 5-15 times slower on lavapipe than its
# own, and the two top-p ones take 10-20 minutes each there. Their subject,
# that the draws follow the final distribution, runs in the whole-suite run;
# the first GPU-shaped configuration runs them all (not dealt) but the top-p
# pair (a GPU plan draws with the whole workgroup, a CPU device's with one
# invocation); under the others the GPU-vs-twin tests pin every final
# distribution and the draw is the first's code, so they leave them out.
# Contexts.* (200 contexts coming and going on one VkInstance, about a
# minute on lavapipe) tests the instance, which no profile changes: the
# whole-suite run has it. GpuHistoryLockstep.TenThousandTokens (the history
# ring's wrap, nothing allocated or recorded per token; 5000 tokens under a
# GPU plan on a CPU device) runs under the first GPU-shaped configuration
# only, with the chi-square tests: the subgroup size and the features do not
# change what it tests, and the shorter history tests run the same shaders
# everywhere (SlotOps wraps a ring of 8).
# The configurations: on lavapipe, the GPU plan's subgroup variants at
# subgroup sizes 4 and 16, the extremes it presents (LP_NATIVE_VECTOR_WIDTH=
# 128/512; 8, between them, is the whole suite's; a GPU's 32 or 64 lies
# beyond both, and a size assumption breaks at one extreme or the other), and
# gpu,constrained, which turns every optional feature off, subgroup
# arithmetic included (the portable variants), so its subgroup size changes
# nothing. On a device that is not a CPU implementation: gpu and
# gpu,constrained at the device's own subgroup size.
# Dealt, on a CPU device: each GPU-facing test runs under one configuration
# (ctest -I k,,N deals them by test number, every family spread over all of
# them), so all of them cost about one run of the label. On lavapipe most of
# a GPU-facing test's time is compiling its pipelines (LLVM splits the shader
# at every barrier), once per configuration, and the whole matrix ran past
# the CI's limit on a slow machine. Every stage's shaders still run under
# each configuration, through a third of the tests. SIEVE_TEST_MATRIX=full
# runs every test under each configuration (about three times as long); a
# real GPU's run is full by default.
never='Contexts\.|GpuStatistics\.ChiSquareTopP'
first_only='GpuStatistics\.ChiSquare|GpuHistoryLockstep\.'
configs=()
matrix=full
if ./cli/sieve devices --json | tr -d ' \n' | grep -q '"default":true,"type":"cpu"'; then
  matrix=dealt
  # The sizes are lavapipe's to present; each is checked (16 needs AVX-512).
  for pair in 4:128 16:512; do
    size=${pair%:*} width=${pair#*:}
    got=$(subgroup_size LP_NATIVE_VECTOR_WIDTH="$width")
    if [[ $got != "$size" ]]; then
      echo "sieve test matrix: LP_NATIVE_VECTOR_WIDTH=$width gives subgroup size ${got:-?}, not $size" >&2
      exit 1
    fi
    configs+=("gpu, subgroup $size|SIEVE_PROFILE=gpu LP_NATIVE_VECTOR_WIDTH=$width")
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
n=${#configs[@]}
echo "== GPU-shaped configurations, $matrix: never $never; $first_only under the first only"
for i in "${!configs[@]}"; do
  name=${configs[i]%%|*}
  read -r -a vars <<<"${configs[i]#*|}"
  if ((i == 0)); then
    run "gpu-facing, $name: chi-square and lockstep" "${vars[@]}" -- -L gpu -R "$first_only" -E "$never" "$@"
  fi
  deal=() part=""
  if [[ $matrix == dealt ]]; then
    deal=(-I "$((i + 1)),,$n")
    part=", dealt $((i + 1)) of $n"
  fi
  run "gpu-facing, $name$part" "${vars[@]}" -- -L gpu -E "$never|$first_only" "${deal[@]}" "$@"
done

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
