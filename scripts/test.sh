#!/usr/bin/env bash
# Quick start 2: set up, build, and run the whole test suite (validation layers
# on; any validation message fails its test), then the suite again under the
# constrained profile (a small phone GPU: no optional features, 16 KiB shared
# memory, 128-invocation workgroups), whatever the device offers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cd build
SIEVE_VALIDATION=1 ctest --output-on-failure -j"$(nproc)" "$@"
SIEVE_VALIDATION=1 SIEVE_PROFILE=constrained ctest --output-on-failure -j"$(nproc)" "$@"
