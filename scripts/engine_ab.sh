#!/usr/bin/env bash
# The engine of another commit against this checkout's build, on this
# machine's default Vulkan device, through the public C API alone: what
# issue 34's lavapipe bar (item 6, "nothing slower") is checked with across
# many commits, where `sieve bench` itself changed between them.
#
#   scripts/engine_ab.sh REV [--rounds N] [--calls N] [--cases LIST] [--build-dir DIR]
#
# Builds REV's libsieve in a worktree under a temporary directory (removed
# after), compiles tools/engine_ab/engine_ab.c against each side's own
# sieve.h, warms both up, then runs them in --rounds rounds (default 8) whose
# order alternates (this machine favours the second of two back-to-back
# runs), --calls timed calls a case each (default 300), then as many with
# the chain's profiling on. Prints each case's median over the rounds, its
# range, and this build's median over REV's, then the same for each stage
# (GPU timestamps) both sides ran.
# Needs this checkout built (./build or --build-dir: libsieve). Exit status: 0;
# 2 usage or a side that does not build.
set -euo pipefail
usage() { echo "engine_ab: $1 (see the header of $0)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
(($#)) || usage "REV is missing"
rev=$1; shift
rounds=8 calls=300 cases=greedy,dist,default,top_p,min_p,top_k1000 build=$root/build
while (($#)); do
  case $1 in
    --rounds) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--rounds needs a number"; rounds=$2; shift ;;
    --calls) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--calls needs a number"; calls=$2; shift ;;
    --cases) [[ -n ${2:-} ]] || usage "--cases needs a list"; cases=$2; shift ;;
    --build-dir) [[ -n ${2:-} ]] || usage "--build-dir needs a directory"; build=$(realpath -m "$2"); shift ;;
    *) usage "unknown argument '$1'" ;;
  esac
  shift
done
git -C "$root" rev-parse --verify --quiet "$rev^{commit}" > /dev/null || usage "no commit '$rev'"
[[ -e $build/engine/libsieve.so ]] || usage "no libsieve in $build/engine: build first"

work=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$work/rev" > /dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
git -C "$root" worktree add --detach --quiet "$work/rev" "$rev"
echo "== building $rev's libsieve"
cmake -S "$work/rev" -B "$work/rev/build" -DCMAKE_BUILD_TYPE=Release -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_TOOLS=OFF \
  -DSIEVE_LLAMA_TESTS=OFF > "$work/build.log" 2>&1 && cmake --build "$work/rev/build" --target sieve -j"$(nproc)" \
  >> "$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; usage "$rev does not build"; }
# Each side: the harness compiled against its own header and library.
side() {  # side NAME SOURCE_ROOT BUILD_DIR
  cc -O2 -o "$work/$1" "$root/tools/engine_ab/engine_ab.c" -I"$2/include" -I"$3/include" -L"$3/engine" -lsieve -lm \
    -Wl,-rpath,"$3/engine" || usage "the harness does not build against $1"
}
side old "$work/rev" "$work/rev/build"
side new "$root" "$build"
echo "== warm-up (pipelines compiled or loaded from the driver's cache)"
"$work/old" 5 "$cases" > /dev/null
"$work/new" 5 "$cases" > /dev/null
echo "== $rounds rounds of $calls calls a case, alternating"
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then order="old new"; else order="new old"; fi
  for s in $order; do "$work/$s" "$calls" "$cases" | sed "s/^/$s /" >> "$work/times.txt"; done
done
python3 - "$work/times.txt" "$rev" <<'PY'
import statistics, sys
runs, stages = {}, {}
for line in open(sys.argv[1]):
    side, case, us, *parts = line.split()
    runs.setdefault(case, {}).setdefault(side, []).append(float(us))
    seen = {}
    for part in parts:  # "<stage>=<us>", in the call's order; a name may recur (levels)
        name, value = part.split("=")
        seen[name] = seen.get(name, 0) + 1
        stages.setdefault(case, {}).setdefault((name, seen[name]), {}).setdefault(side, []).append(float(value))
print(f"{'case':<16} {sys.argv[2][:12]:>22} {'this build':>22} {'ratio':>6}")
def row(label, old, new):
    mo, mn = statistics.median(old), statistics.median(new)
    print(f"{label:<16} {mo:9.1f} [{min(old):5.0f}-{max(old):5.0f}] {mn:9.1f} [{min(new):5.0f}-{max(new):5.0f}] {mn / mo:6.3f}")
for case, by in runs.items():
    row(case, by["old"], by["new"])
    # The stages both sides ran (GPU timestamps, medians), matched by name
    # and occurrence; a stage one side alone ran is named so.
    for (name, nth), st in stages.get(case, {}).items():
        label = "  " + name + (f" #{nth}" if nth > 1 else "")
        if "old" in st and "new" in st:
            row(label, st["old"], st["new"])
        else:
            side = "old" if "old" in st else "new"
            print(f"{label:<16} only {'REV' if side == 'old' else 'this build'}: {statistics.median(st[side]):.1f}")
PY
