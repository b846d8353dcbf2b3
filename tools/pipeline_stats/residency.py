#!/usr/bin/env python3
"""Workgroups resident an SM, from the pipelines' statistics.

    residency.py [--json] [--warps-per-sm N] FILE

FILE holds the lines a run with SIEVE_PIPELINE_STATS=FILE wrote
(engine/vulkan/pipeline_stats.hpp): one a pipeline built, with the driver's
statistics of its compiled code where the driver gives them. For NVIDIA's
("Register Count"), each distinct pipeline's residency on one SM is the
least of what limits it, by the rules of CUDA's occupancy calculator for
Ampere and Hopper (an H100/H200): the SM's warps (the line's warps_per_unit,
VK_NV_shader_sm_builtins, or --warps-per-sm), its 65536 registers (each
warp's allocated in units of 256), 32 workgroups, and its 228 KB of shared
memory (1 KB reserved a workgroup) where a statistic states the
pipeline's shared memory (else that limit is not known: the residency is
then an upper bound, marked <=). Beside
it, the residency the estimate assumes for the pipeline's stage
(docs/architecture/estimate.md): where they differ, the estimate's waves are
wrong for that stage. Lines without statistics are listed with why.

Exit status: 0; 2 usage or an unreadable FILE.
"""
import argparse
import json
import math
import sys

REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256  # a warp's registers are allocated in units of this many
MAX_WORKGROUPS_PER_SM = 32
SHARED_PER_SM = 228 * 1024
SHARED_RESERVED_PER_WORKGROUP = 1024
WARP = 32


def statistic(executables, want):
    """The first statistic whose lower-cased name `want` accepts, or None."""
    for x in executables or []:
        for name, value in (x.get("statistics") or {}).items():
            if want(name.lower()) and isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
    return None


def residency(line, warps_override):
    """One row of the table for a line."""
    row = {
        "stage": line.get("stage"),
        "shader": line.get("shader"),
        "workgroup": line.get("workgroup"),
        "assumed": line.get("assumed_resident_per_unit"),
    }
    if line.get("executables") is None:
        row["absent"] = line.get("absent") or "no statistics"
        return row
    registers = statistic(line["executables"], lambda n: n == "register count")
    shared = statistic(line["executables"], lambda n: "shared" in n)
    row["registers"] = registers
    row["shared_bytes"] = shared
    if registers is None:
        row["absent"] = "no register count among the statistics (not NVIDIA's?)"
        return row
    wg = line.get("workgroup") or 0
    warps = warps_override or line.get("warps_per_unit")
    warps_per_wg = math.ceil(wg / WARP)
    limits = {"workgroups": MAX_WORKGROUPS_PER_SM}
    if warps:
        limits["warps"] = warps // warps_per_wg
    per_warp = math.ceil(registers * WARP / REGISTER_UNIT) * REGISTER_UNIT
    limits["registers"] = (REGISTERS_PER_SM // per_warp) // warps_per_wg if per_warp else MAX_WORKGROUPS_PER_SM
    if shared is not None:
        limits["shared"] = SHARED_PER_SM // (shared + SHARED_RESERVED_PER_WORKGROUP)
    row["limits"] = limits
    row["resident"] = min(limits.values())
    row["limited_by"] = min(limits, key=limits.get)
    # A limit not known may only lower it: then `resident` is an upper bound.
    row["unknown"] = [k for k in ("warps", "shared") if k not in limits]
    row["upper_bound"] = bool(row["unknown"])
    assumed = row["assumed"]
    if assumed:
        if row["resident"] < assumed:
            row["verdict"] = "fewer than assumed"
        elif row["upper_bound"]:
            row["verdict"] = "the known limits allow what is assumed"
        else:
            row["verdict"] = "as assumed" if row["resident"] == assumed else "more than assumed"
    return row


def read_lines(path):
    seen, lines = set(), []
    with open(path) as f:
        for text in f:
            if not text.strip():
                continue
            line = json.loads(text)
            # A pipeline is built again by each context: one row each.
            key = json.dumps({k: line.get(k) for k in ("shader", "stage", "workgroup", "capacity", "specialization")},
                             sort_keys=True)
            if key not in seen:
                seen.add(key)
                lines.append(line)
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--json", action="store_true", help="the rows as one JSON array")
    ap.add_argument("--warps-per-sm", type=int, default=0, help="the SM's warps where the lines do not say")
    args = ap.parse_args(argv)
    try:
        lines = read_lines(args.file)
    except (OSError, ValueError) as e:
        print(f"residency: cannot read {args.file}: {e}", file=sys.stderr)
        return 2
    rows = [residency(line, args.warps_per_sm) for line in lines]
    if args.json:
        json.dump(rows, sys.stdout)
        print()
        return 0
    print(f"{'stage':<16} {'shader':<34} {'WG':>4} {'regs':>5} {'resident':>8} {'by':<10} {'assumed':>7}  verdict")
    for r in rows:
        head = f"{r['stage'] or '':<16} {r['shader'] or '':<34} {r['workgroup'] or 0:>4}"
        if "resident" not in r:
            print(f"{head} {'':>5} {'':>8} {'':<10} {'':>7}  {r['absent']}")
            continue
        assumed = "" if r["assumed"] is None else f"{r['assumed']:g}"
        unknown = f" (unknown: {', '.join(r['unknown'])})" if r["unknown"] else ""
        resident = f"{'<=' if r['upper_bound'] else ''}{r['resident']}"
        print(f"{head} {r['registers']:>5} {resident:>8} {r['limited_by']:<10} {assumed:>7}  "
              f"{r.get('verdict', '')}{unknown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
