#!/usr/bin/env bash
# The engine of another commit against this checkout's build, on this
# machine's default Vulkan device, through the public C API alone: what
# issue 34's lavapipe bar (item 6, "nothing slower") is checked with across
# many commits, where `sieve bench` itself changed between them.
#
#   scripts/engine_ab.sh REV [--rounds N] [--calls N] [--cases LIST] [--build-dir DIR] [--instructions]
#
# Builds REV's libsieve in a worktree under a temporary directory (removed
# after), compiles tools/engine_ab/engine_ab.c against each side's own
# sieve.h, warms both up, then runs them in --rounds rounds (default 8) whose
# order alternates (this machine favours the second of two back-to-back
# runs), --calls timed calls a case each (default 300), then as many with
# the chain's profiling on. Prints each case's median over the rounds, its
# range, and this build's median over REV's, then the same for each stage
# (GPU timestamps) both sides ran.
# --instructions: instead of times, the instructions each side executes per
# call (valgrind's cachegrind, no cache model), and the share of them in code
# without symbols (the driver's JIT-compiled shaders, on lavapipe): runs of
# 10 and 60 calls a case after one that compiles the pipelines under
# valgrind's CPU, their difference over the 100 calls (timed and profiled
# alike). Exact to a few thousandths where times on a shared CPU move by
# tens of percent, so it finds a few percent's change in one run; a change of
# memory traffic or threading it does not see. Minutes a case.
# Needs this checkout built (./build or --build-dir: libsieve). Exit status: 0;
# 2 usage, a side that does not build, or --instructions without valgrind.
set -euo pipefail
usage() { echo "engine_ab: $1 (see the header of $0)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
(($#)) || usage "REV is missing"
rev=$1; shift
rounds=8 calls=300 cases=greedy,dist,default,top_p,min_p,top_k1000 build=$root/build instructions=0
while (($#)); do
  case $1 in
    --rounds) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--rounds needs a number"; rounds=$2; shift ;;
    --calls) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--calls needs a number"; calls=$2; shift ;;
    --cases) [[ -n ${2:-} ]] || usage "--cases needs a list"; cases=$2; shift ;;
    --build-dir) [[ -n ${2:-} ]] || usage "--build-dir needs a directory"; build=$(realpath -m "$2"); shift ;;
    --instructions) instructions=1 ;;
    *) usage "unknown argument '$1'" ;;
  esac
  shift
done
git -C "$root" rev-parse --verify --quiet "$rev^{commit}" > /dev/null || usage "no commit '$rev'"
[[ -e $build/engine/libsieve.so ]] || usage "no libsieve in $build/engine: build first"
((!instructions)) || command -v valgrind > /dev/null || usage "--instructions needs valgrind (apt-get install valgrind)"

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
if ((instructions)); then
  # count SIDE CALLS CASE: "<all> <without symbols>" instructions of one run.
  count() {
    local out=$work/cg.$1.$2.out log=$work/cg.$1.$2.log
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out" "$work/$1" "$2" "$3" > /dev/null 2> "$log" ||
      { tail -5 "$log" >&2; usage "$1 failed under valgrind"; }
    local all jit
    all=$(sed -n 's/.*I *refs: *//p' "$log" | tr -d ,)
    jit=$(cg_annotate --auto=no "$out" 2> /dev/null | awk '$NF == "???:???" { gsub(",", "", $1); print $1; exit }')
    echo "$all ${jit:-0}"
  }
  printf '%-12s %14s %14s %7s   %s\n' case "${rev:0:12} M/call" "this M/call" ratio "(without symbols: REV, this)"
  for c in ${cases//,/ }; do
    declare -A per=()
    for s in old new; do
      count $s 1 "$c" > /dev/null  # the pipelines, compiled for valgrind's CPU, into the driver's cache
      count $s 10 "$c" > "$work/a.txt" &
      b=$(count $s 60 "$c")
      wait
      read -r a_all a_jit < "$work/a.txt"
      read -r b_all b_jit <<< "$b"
      per[$s]="$(((b_all - a_all) / 100)) $(((b_jit - a_jit) / 100))"
    done
    read -r o oj <<< "${per[old]}"
    read -r n nj <<< "${per[new]}"
    python3 -c "import sys; o, oj, n, nj = map(int, sys.argv[2:]); print(f'{sys.argv[1]:<12} {o/1e6:14.3f} {n/1e6:14.3f} {n/o:7.3f}   ({oj/1e6:.3f}, {nj/1e6:.3f})')" \
      "$c" "$o" "$oj" "$n" "$nj"
  done
  exit 0
fi
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
