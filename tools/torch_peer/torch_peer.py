#!/usr/bin/env python3
"""The PyTorch peer of `sieve bench`: the bench's suite chains at vocabulary
151936 written the way a PyTorch serving stack samples (torch.topk, a full sort
for top-p, softmax, the exponential race argmax(p / Exp(1))), on logits already
in GPU memory, timed per call with the token copied back to the host and the
stream synchronized. Each case runs eager and as a CUDA-graph replay; the cases
and modes alternate in rounds after a warm-up that holds the GPU busy, so a
clock ramp favours none. One JSON object per line (docs/bench.md, "PyTorch").

  python3 tools/torch_peer/torch_peer.py [--tokens N] [--rounds R] [--rows 1,64] [--out FILE]

Without an importable torch, or without CUDA, it writes one line
{"peer": "torch", "status": "skipped", "reason": ...}, says why on stderr and
exits 0: a machine without PyTorch is not an error for the GPU check.
Exit 2: bad arguments (argparse).
"""
import argparse
import json
import math
import sys
import time

VOCAB = 151936
TEMP = 0.8
SEED = 1234
HISTORY = 4096          # penalties_dry_n4096: the window and the history
BREAKERS = (13, 25, 1, 9)  # four single-token DRY breakers (ids; Sieve has no vocabulary)
DRY_MAX_MATCH = 64      # the longest repeat DRY looks for here (unrolled, so a CUDA graph can hold it)


def emit(out, obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def skip(out, reason):
    emit(out, {"peer": "torch", "status": "skipped", "reason": reason})
    sys.stderr.write("torch_peer: skipped: " + reason + "\n")
    return 0


def chains(torch):
    """The suite's chains (cli/bench_suite.cpp) in llama.cpp's order and semantics."""

    def race(logits):  # dist: softmax, then argmax(p / Exp(1)) as vLLM draws
        p = torch.softmax(logits, dim=-1)
        return p.div(torch.empty_like(p).exponential_()).argmax(dim=-1)

    def top_p_mask(sorted_desc, p):  # keep the smallest prefix whose mass reaches p (min_keep 1)
        probs = torch.softmax(sorted_desc, dim=-1)
        before = probs.cumsum(dim=-1) - probs
        return before < p

    def greedy(x, h):
        return x.argmax(dim=-1)

    def dist(x, h):
        return race(x / TEMP)

    def default_on(x):  # top_k 40; top_p 0.95; min_p 0.05 (all at T = 1); temperature 0.8; dist
        v, i = x.topk(40, dim=-1)
        keep = top_p_mask(v, 0.95)
        p = torch.softmax(v, dim=-1)
        keep &= p >= 0.05 * p[:, :1]
        v = v.masked_fill(~keep, -math.inf)
        return i.gather(-1, race(v / TEMP).unsqueeze(-1)).squeeze(-1)

    def default(x, h):
        return default_on(x)

    def default_topk0(x, h):  # top_p 0.95 over the whole row (a full sort); min_p 0.05; temperature 0.8; dist
        s, i = x.sort(dim=-1, descending=True)
        keep = top_p_mask(s, 0.95) & (s >= s[:, :1] + math.log(0.05))
        s = s.masked_fill(~keep, -math.inf)
        return i.gather(-1, race(s / TEMP).unsqueeze(-1)).squeeze(-1)

    def top_p(x, h):  # top_p 0.9 over the whole row: a full sort
        s, i = x.sort(dim=-1, descending=True)
        s = s.masked_fill(~top_p_mask(s, 0.9), -math.inf)
        return i.gather(-1, race(s / TEMP).unsqueeze(-1)).squeeze(-1)

    def min_p(x, h):
        m = x.max(dim=-1, keepdim=True).values
        keep = x >= m + math.log(0.05)
        return race(x.masked_fill(~keep, -math.inf) / TEMP)

    def top_k1000(x, h):
        v, i = x.topk(1000, dim=-1)
        return i.gather(-1, race(v / TEMP).unsqueeze(-1)).squeeze(-1)

    def penalties_dry(x, h):
        # llama.cpp's penalties over the window: repeat 1.1 (divide positive
        # logits, multiply negative ones), frequency and presence 0.1.
        rows, vocab = x.shape
        counts = torch.zeros(rows, vocab, device=x.device, dtype=x.dtype)
        counts.scatter_add_(1, h, torch.ones_like(h, dtype=x.dtype))
        seen = counts > 0
        x = torch.where(seen & (x > 0), x / 1.1, torch.where(seen, x * 1.1, x))
        x = x - counts * 0.1 - seen.to(x.dtype) * 0.1
        # DRY (multiplier 0.8, base 1.75, allowed length 2): the token after
        # each earlier occurrence of the history's suffix is penalized by the
        # length of that repeat; a breaker ends a repeat.
        n = h.shape[1]
        breaker = torch.zeros_like(h, dtype=torch.bool)
        for b in BREAKERS:
            breaker |= h == b
        match = torch.zeros(rows, n - 1, device=x.device, dtype=torch.long)
        alive = torch.ones(rows, n - 1, device=x.device, dtype=torch.bool)
        for k in range(DRY_MAX_MATCH):  # position j ends a repeat of length > k
            if k >= n - 1:
                break
            j_tok = torch.nn.functional.pad(h[:, : n - 1 - k], (k, 0), value=-1)  # h[j - k]
            s_tok = h[:, n - 1 - k : n - k]                                         # h[n - 1 - k]
            s_brk = breaker[:, n - 1 - k : n - k]
            alive &= (j_tok == s_tok) & ~s_brk
            match += alive.long()
        length = match.to(x.dtype)
        pen = torch.where(length >= 2, 0.8 * torch.pow(torch.full_like(length, 1.75), length - 2), torch.zeros_like(length))
        dry = torch.zeros(rows, vocab, device=x.device, dtype=x.dtype)
        dry.scatter_reduce_(1, h[:, 1:], pen, reduce="amax", include_self=True)
        return default_on(x - dry)

    return {
        "greedy": (greedy, False),
        "dist": (dist, False),
        "default": (default, False),
        "default_topk0": (default_topk0, False),
        "top_p": (top_p, False),
        "min_p": (min_p, False),
        "top_k1000": (top_k1000, False),
        "penalties_dry_n4096": (penalties_dry, True),
    }


def zipf_rows(torch, rows, vocab, gen):
    """The bench's zipf shape: 12 - 1.1 ln(rank + 1) + N(0, 0.1) over a random permutation."""
    base = 12.0 - 1.1 * torch.log(torch.arange(vocab, dtype=torch.float64) + 1.0)
    out = torch.empty(rows, vocab)
    for r in range(rows):
        perm = torch.randperm(vocab, generator=gen)
        out[r, perm] = (base + 0.1 * torch.randn(vocab, generator=gen, dtype=torch.float64)).float()
    return out


def histories(torch, logits, n, gen):
    """Generated-looking histories: the row's likely tokens by rank, breakers, and a
    verbatim repeat of an earlier span at the end (DRY matches from the first token)."""
    rows, vocab = logits.shape
    order = logits.argsort(dim=-1, descending=True)
    ranks = torch.clamp((torch.distributions.Pareto(1.0, 1.1).sample((rows, n)) - 1.0) * 8, max=vocab - 1).long()
    h = order.gather(1, ranks)
    brk = torch.rand(rows, n, generator=gen) < 0.05
    h = torch.where(brk, torch.tensor(BREAKERS[0]), h)
    span = 48
    h[:, n - span:] = h[:, n // 2 : n // 2 + span]
    return h


def stats(us):
    s = sorted(us)
    q = lambda f: round(s[min(len(s) - 1, int(f * len(s)))], 1)  # noqa: E731
    return {"median_us": q(0.5), "p10_us": q(0.1), "p90_us": q(0.9), "min_us": round(s[0], 1), "tokens": len(s)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--rows", default="1,64", help="row counts, comma-separated (default 1,64)")
    ap.add_argument("--tokens", type=int, default=200, help="measured calls per case and mode (default 200)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds the calls are spread over (default 5)")
    ap.add_argument("--warmup-s", type=float, default=0.5, help="seconds of back-to-back calls before measuring")
    ap.add_argument("--chains", default="", help="only these chains, comma-separated (default: all)")
    ap.add_argument("--out", default="-", help="JSON lines to this file (default stdout)")
    a = ap.parse_args(argv)
    if a.tokens < 1 or a.rounds < 1 or a.vocab < 1000:
        ap.error("--tokens and --rounds must be >= 1, --vocab >= 1000")
    out = sys.stdout if a.out == "-" else open(a.out, "w")

    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        return skip(out, "torch is not importable by " + sys.executable + ": " + str(e))
    if not torch.cuda.is_available():
        return skip(out, "torch " + torch.__version__ + " has no CUDA device (torch.version.cuda = " +
                    str(torch.version.cuda) + ")")

    dev = torch.device("cuda")
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    row_counts = [int(r) for r in a.rows.split(",") if r]
    all_chains = chains(torch)
    wanted = [c for c in a.chains.split(",") if c] or list(all_chains)
    for c in wanted:
        if c not in all_chains:
            ap.error("unknown chain '" + c + "' (chains: " + ", ".join(all_chains) + ")")
    emit(out, {"peer": "torch", "status": "ok", "torch": torch.__version__, "cuda": torch.version.cuda,
               "device": torch.cuda.get_device_name(), "vocab": a.vocab, "rows": row_counts, "tokens": a.tokens,
               "rounds": a.rounds, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})

    host = zipf_rows(torch, max(row_counts), a.vocab, gen)
    hist_host = histories(torch, host, HISTORY, gen)
    cases = []  # (name, chain, rows, mode, call)
    for chain in wanted:
        fn, uses_history = all_chains[chain]
        for rows in row_counts:
            x = host[:rows].contiguous().to(dev)
            h = hist_host[:rows].contiguous().to(dev)
            name = chain + "/zipf/v" + str(a.vocab) + "/b" + str(rows)

            def eager(fn=fn, x=x, h=h):
                return fn(x, h).cpu()  # the copy to the host synchronizes

            cases.append([name, chain, rows, "eager", eager])
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        fn(x, h)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    tok = fn(x, h)
                pinned = torch.empty(tok.shape, dtype=tok.dtype, pin_memory=True)

                def replay(graph=graph, tok=tok, pinned=pinned):
                    graph.replay()
                    pinned.copy_(tok, non_blocking=True)
                    torch.cuda.current_stream().synchronize()
                    return pinned

                cases.append([name, chain, rows, "cuda_graph", replay])
            except Exception as e:  # noqa: BLE001 - a chain the graph cannot capture: said, not fatal
                emit(out, {"case": name, "chain": chain, "rows": rows, "mode": "cuda_graph", "status": "failed",
                           "message": str(e)[:300]})

    # Warm-up: every case once, then back-to-back calls until the clocks settle.
    t0 = time.perf_counter()
    while True:
        for c in cases:
            c[4]()
        if time.perf_counter() - t0 >= a.warmup_s:
            break
    # Rounds: each case's share of its tokens in turn.
    us = {id(c): [] for c in cases}
    round_medians = {id(c): [] for c in cases}
    per_round = [a.tokens // a.rounds + (1 if r < a.tokens % a.rounds else 0) for r in range(a.rounds)]
    for n in per_round:
        for c in cases:
            block = []
            for _ in range(n):
                t = time.perf_counter()
                c[4]()
                block.append((time.perf_counter() - t) * 1e6)
            us[id(c)] += block
            if block:
                round_medians[id(c)].append(round(sorted(block)[len(block) // 2], 1))
    for c in cases:
        emit(out, {"case": c[0], "chain": c[1], "rows": c[2], "mode": c[3], "input": "device", "status": "ok",
                   **stats(us[id(c)]), "round_medians_us": round_medians[id(c)]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
