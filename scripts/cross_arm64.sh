#!/usr/bin/env bash
# ARM64 (aarch64 Linux) cross build with Debian's cross toolchain, then the
# tests that need no Vulkan device under qemu-user:
#   1. installs what is missing: crossbuild-essential-arm64, qemu-user-static,
#      the :arm64 Vulkan, GoogleTest and Google Benchmark development packages
#      (multiarch; `dpkg --add-architecture arm64` first), and the host's shader
#      tools (glslangValidator, spirv-val: SPIR-V is the same on every CPU);
#   2. configures ./build-arm64 with cmake/toolchains/aarch64-linux-gnu.cmake
#      and builds libsieve, the `sieve` CLI, the C samples and sieve_tests;
#   3. runs tests/device_free_tests.txt's selection of sieve_tests under
#      qemu-aarch64 (the tests start the CLI and samples through qemu too), with
#      the Vulkan loader pointed at no driver so that a test needing a device
#      fails instead of passing unseen.
#   scripts/cross_arm64.sh [extra gtest args]
# Lavapipe itself (mesa-vulkan-drivers:arm64) is not run: see the README.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-arm64
start=$SECONDS

as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  "${as_root[@]}" dpkg --add-architecture arm64
  "${as_root[@]}" apt-get update -qq
fi
packages=(crossbuild-essential-arm64 qemu-user-static cmake file glslang-tools spirv-tools libvulkan-volk-dev
          libcli11-dev nlohmann-json3-dev libvulkan-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
          libbenchmark-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "sieve arm64: installing ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
    -DCMAKE_BUILD_TYPE=Release -DSIEVE_BUILD_TOOLS=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target sieve sieve_cli_main sieve_tests
echo "== built for aarch64 in $((SECONDS - start)) s:"
for f in "$build"/engine/libsieve.so "$build"/cli/sieve "$build"/tests/sieve_tests; do
  info=$(file -bL "$f")
  echo "  $f: ${info%%, BuildID*}"
  grep -q 'ARM aarch64' <<<"$info" || { echo "sieve arm64: $f is not an aarch64 binary" >&2; exit 1; }
done

qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64)
# No Vulkan driver: the loader finds no ICD (a selected test that needs one fails).
export VK_DRIVER_FILES=/nonexistent/sieve-no-driver.json VK_ICD_FILENAMES=/nonexistent/sieve-no-driver.json
got=$("$qemu" "$build/cli/sieve" --version)
echo "== under qemu: $got"
run_start=$SECONDS
filter=$(grep -v '^#' tests/device_free_tests.txt | tr -d ' \n')
echo "== under qemu: sieve_tests, the device-free selection (tests/device_free_tests.txt)"
"$qemu" "$build/tests/sieve_tests" --gtest_filter="$filter" --gtest_brief=1 "$@"
echo "== aarch64 tests under qemu: $((SECONDS - run_start)) s; whole script: $((SECONDS - start)) s"
