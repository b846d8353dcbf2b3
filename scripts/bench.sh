#!/usr/bin/env bash
# Quick start 1: set up, build, and run the main job: `sieve bench` on the
# default Vulkan device with built-in logits. Extra arguments go to sieve bench.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./build/cli/sieve bench "$@"
