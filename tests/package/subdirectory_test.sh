#!/usr/bin/env bash
# add_subdirectory(sieve) in an app's project (ctest label `package`): the app
# gets libsieve and Sieve::sieve, and none of Sieve's tests, samples, tools or
# install rules unless it asks for them. Configures tests/package/parent and
# reads the targets it would build (building the engine again is the static
# package test's work).
#   subdirectory_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
source=$1 work=$2
cmake=${CMAKE:-cmake}
fail() { echo "subdirectory test: $*" >&2; exit 1; }
rm -rf "$work"
trap 'rm -rf "$work"' EXIT
"$cmake" -S "$source/tests/package/parent" -B "$work" -DSIEVE_SOURCE_DIR="$source" >"$work.log" 2>&1 ||
  { cat "$work.log"; rm -f "$work.log"; fail "the parent project did not configure"; }
rm -f "$work.log"
targets=$("$cmake" --build "$work" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
for t in sieve minimal; do
  grep -qx "$t" <<<"$targets" || fail "target $t is missing"
done
for t in sieve_tests sieve_gpu_tests sieve_cli_main sieve_minimal sieve_soak install; do
  if grep -qx "$t" <<<"$targets"; then fail "target $t is built by default under add_subdirectory"; fi
done
grep -q 'minimal.dir/link.txt' <(find "$work" -name link.txt) || fail "no link step for the parent's minimal"
grep -q 'libsieve' "$work/CMakeFiles/minimal.dir/link.txt" || fail "minimal does not link libsieve"
echo "add_subdirectory: $(wc -l <<<"$targets") targets, libsieve and the app's own; no tests, samples, tools or install"
