#!/usr/bin/env bash
# Quick start 2: set up, build, and run the whole test suite (validation layers
# on; any validation message fails its test).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cd build
SIEVE_VALIDATION=1 ctest --output-on-failure -j"$(nproc)" "$@"
