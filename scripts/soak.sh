#!/usr/bin/env bash
# The soak: TOKENS (default 1000000) tokens through one slot with llama.cpp's
# default chain plus penalties and DRY at vocab 32000 on the Vulkan device, the
# CPU twin in lockstep for the first 2000; prints resident memory and the
# engine's counters every 100000 tokens, fails if they grow after warm-up
# (tools/soak/soak.cpp). Builds ./build if needed. Not part of CI.
#   scripts/soak.sh [TOKENS]
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-1000000}
[[ -f build/CMakeCache.txt ]] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSIEVE_LLAMA_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target sieve_soak
interval=$(( tokens >= 1000000 ? 100000 : (tokens >= 100000 ? tokens / 10 : 10000) ))
time ./build/tools/soak/sieve_soak "$tokens" 2000 "$interval"
