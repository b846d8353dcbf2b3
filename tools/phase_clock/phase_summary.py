#!/usr/bin/env python3
"""The phase-clock build's log (SIEVE_PHASE_LOG, engine/vulkan/phase_log.cpp)
summarised: per log file (one bench case each), the median time of each phase
of the collect tail's workgroup, from one mark to the next it passed.

  phase_summary.py [--json] CASE=LOG ...

Marks (shaders/include/gpu_layout.h, PH_*), counted from the workgroup's start:
read (its own chunk read into the register picks), select (the picks' radix
select), counted (the chunk's logits at or above the threshold counted, the
refining pass included), written (those logits in shared memory), chunk (its
chunk listed: their rank sort, and the list written), arrived (counted in
last), stats (the chunks' statistics and aggregates merged), located (the
chunks' lists located), lists (the lists merged into the array), op0..op7 (after each sampler the
call's tail runs: those acting on some row, so llama.cpp's default chain at
its defaults has op0..op3 for top-k, top-p, min-p, temperature), selector,
total, end (the result written). Times are the device's
realtime clock (ticks: nanoseconds on NVIDIA and lavapipe) and the subgroup
clock's cycles; both are medians over the logged rows of each phase's own
duration, so they need not add up to the median of the whole."""
import json
import statistics
import sys

NAMES = ["read", "select", "counted", "written", "chunk", "arrived", "stats", "located", "lists"] + \
    [f"op{i}" for i in range(8)] + ["selector", "total", "end"]


def phases(lines):
    """Per phase name, the per-call durations (ticks, cycles) from the previous passed mark."""
    out = {}
    for rec in lines:
        prev_t, prev_c = 0, 0
        for i, name in enumerate(NAMES):
            t, c = rec["ticks"][i], rec["cycles"][i]
            if t is None or c is None:
                continue
            out.setdefault(name, []).append(((t - prev_t) % 2**32, (c - prev_c) % 2**32))
            prev_t, prev_c = t, c
        if rec["ticks"][NAMES.index("end")] is not None:
            out.setdefault("whole", []).append((rec["ticks"][NAMES.index("end")], rec["cycles"][NAMES.index("end")]))
    return out


def summarise(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    rows0 = [l for l in lines if l["row"] == 0]
    result = {"calls": len(rows0), "phases": []}
    for name, values in phases(rows0).items():
        result["phases"].append({"phase": name, "count": len(values),
                                 "ticks": statistics.median(v[0] for v in values),
                                 "cycles": statistics.median(v[1] for v in values)})
    return result


def main(argv):
    as_json = argv[:1] == ["--json"]
    args = argv[1:] if as_json else argv
    if not args or any("=" not in a for a in args):
        sys.exit(__doc__)
    report = {}
    for a in args:
        case, path = a.split("=", 1)
        report[case] = summarise(path)
    if as_json:
        json.dump(report, sys.stdout)
        print()
        return
    for case, r in report.items():
        print(f"{case}: {r['calls']} calls, row 0; median of each phase: us (realtime ticks / 1000), cycles")
        print("  " + "  ".join(f"{p['phase']} {p['ticks'] / 1000:.2f} ({p['cycles']:.0f})" for p in r["phases"]))


if __name__ == "__main__":
    main(sys.argv[1:])
