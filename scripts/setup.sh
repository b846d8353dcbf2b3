#!/usr/bin/env bash
# Installs whatever Sieve needs that is missing (Debian 12's packages),
# then configures and builds it in ./build. Idempotent: a machine that has
# everything installs nothing. Runs apt as root, or through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
)
# `setup.sh test` (scripts/test.sh) also installs what only the tests need:
# clang and its runtimes for scripts/fuzz.sh (libFuzzer), llvm-symbolizer for
# the sanitizers' reports, npm and git for scripts/fetch_llama.sh (the real
# llama.cpp the parity tests and the bench's peer run against).
if [[ ${1:-} == test ]]; then
  packages+=(clang libclang-rt-14-dev llvm)
  # A command that is already there counts, whoever installed it: machines
  # with Node.js from elsewhere have an npm that Debian's package would
  # conflict with.
  for tool in npm git; do command -v "$tool" >/dev/null || packages+=("$tool"); done
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "sieve: installing ${missing[*]}"
  as_root=()
  [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_type=${SIEVE_BUILD_TYPE:-Release}
# The parity tests against the real llama.cpp (tests/llama) fetch it at
# configure time (scripts/fetch_llama.sh, npm): only `setup.sh test` builds
# them, so a plain set-up touches no network; a failed fetch stops it.
llama_tests=OFF
[[ ${1:-} == test ]] && llama_tests=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" -DSIEVE_LLAMA_TESTS=$llama_tests >/dev/null
cmake --build build -j"$(nproc)"
