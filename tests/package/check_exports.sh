#!/usr/bin/env bash
# The ABI is exactly the C API (ctest label `package`): the dynamic symbols
# libsieve.so defines are the SIEVE_API functions the public headers declare,
# nothing more (no C++ symbols, no volk, no twin) and nothing less.
#
#   check_exports.sh NM LIBSIEVE_SO HEADER...
set -euo pipefail
nm=$1 lib=$2
shift 2

declared=$(grep -hv '^[[:space:]]*#' "$@" | tr '\n' ' ' | grep -o 'SIEVE_API[^(;]*(' | sed 's/($//; s/.*[ *]//' | sort -u)
exported=$("$nm" -D --defined-only "$lib" | awk '{print $NF}' | sort -u)
[[ -n $declared ]] || { echo "no SIEVE_API declaration found in $*" >&2; exit 1; }

extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
echo "libsieve exports $(echo "$exported" | wc -l) symbols; the headers declare $(echo "$declared" | wc -l) SIEVE_API functions"
status=0
if [[ -n $extra ]]; then
  echo "exported but not a SIEVE_API function of the public headers:" >&2
  echo "$extra" | head -40 >&2
  status=1
fi
if [[ -n $missing ]]; then
  echo "declared SIEVE_API but not exported:" >&2
  echo "$missing" >&2
  status=1
fi
# Every export is a function (T), none a data object or a weak C++ instantiation.
others=$("$nm" -D --defined-only "$lib" | awk '$2 != "T" {print}')
if [[ -n $others ]]; then
  echo "exports that are not plain functions:" >&2
  echo "$others" >&2
  status=1
fi
[[ $status == 0 ]] && echo "exports = SIEVE_API declarations: ok"
exit $status
