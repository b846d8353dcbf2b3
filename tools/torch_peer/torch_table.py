#!/usr/bin/env python3
"""Sieve against the PyTorch peer, case by case: `sieve bench --input device
--json-out` files and torch_peer.py's JSON lines, matched by case name
(<chain>/zipf/v<vocab>/b<rows>). torch/dev = the peer's median / Sieve's median
(above 1: Sieve is faster); beside Sieve's median, its GPU time and, from its
profiled calls' call_timing, the submit's way to the GPU, the way back to
the woken host and the library's own host time outside the two. Prints a
Markdown table, or JSON with --json.

  python3 tools/torch_peer/torch_table.py --torch torch.jsonl BENCH.json [BENCH.json ...]

Exit 0; 3 when a file cannot be read or is not what it should be."""
import argparse
import json
import sys


def load_bench(path):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise ValueError(path + " is not a `sieve bench --json` document")
    return doc


def load_torch(path):
    lines = []
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if text.strip():
                try:
                    lines.append(json.loads(text))
                except json.JSONDecodeError as e:
                    raise ValueError(path + ":" + str(n) + ": not JSON: " + str(e))
    return lines


def rows(benches, torch_lines):
    sieve = {}
    for doc in benches:
        for c in doc["cases"]:
            if c.get("status") == "ok" and c.get("input", "host") == "device":
                sieve[c["name"]] = c
    peer = {}
    for t in torch_lines:
        if t.get("status") == "ok" and "case" in t:
            peer.setdefault(t["case"], {})[t["mode"]] = t
    out = []
    for name in sorted(set(sieve) & set(peer), key=lambda n: (n.split("/")[0], int(n.rsplit("/b", 1)[1]))):
        s, p = sieve[name], peer[name]
        timing = s.get("call_timing") or {}
        row = {"case": name, "sieve_median_us": s["median_us"], "sieve_gpu_us": s.get("gpu_us"),
               "to_gpu_us": timing.get("submit_to_gpu_us"), "to_host_us": timing.get("gpu_to_host_us"),
               "library_host_us": timing.get("host_us"),
               "submit_us": s.get("submit_us")}
        for mode in ("eager", "cuda_graph"):
            m = p.get(mode, {}).get("median_us")
            row["torch_" + mode + "_us"] = m
            row["torch_" + mode + "_per_dev"] = round(m / s["median_us"], 3) if m and s["median_us"] > 0 else None
        out.append(row)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch", required=True, help="torch_peer.py's JSON lines")
    ap.add_argument("--json", action="store_true", help="a JSON document instead of the table")
    ap.add_argument("bench", nargs="+", help="`sieve bench --input device --json-out` files")
    a = ap.parse_args(argv)
    try:
        benches = [load_bench(b) for b in a.bench]
        torch_lines = load_torch(a.torch)
    except (OSError, ValueError) as e:
        sys.stderr.write("torch_table: " + str(e) + "\n")
        return 3
    header = torch_lines[0] if torch_lines else {}
    table = rows(benches, torch_lines)
    if a.json:
        print(json.dumps({"torch": header, "cases": table}))
        return 0
    if header.get("status") == "skipped":
        print("PyTorch peer skipped: " + header.get("reason", ""))
        return 0
    fmt = lambda v: "-" if v is None else ("%.1f" % v if isinstance(v, float) else str(v))  # noqa: E731
    print("| case | Sieve (device input) | Sieve GPU | submit to GPU | GPU to host | in the library | submit floor"
          " | torch eager | torch CUDA graph | torch graph/dev |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in table:
        print("| " + " | ".join([r["case"], fmt(r["sieve_median_us"]), fmt(r["sieve_gpu_us"]), fmt(r["to_gpu_us"]),
                                  fmt(r["to_host_us"]), fmt(r["library_host_us"]), fmt(r["submit_us"]),
                                  fmt(r["torch_eager_us"]), fmt(r["torch_cuda_graph_us"]),
                                  fmt(r["torch_cuda_graph_per_dev"])]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
