#!/usr/bin/env bash
# A fixed-seed token corpus: `sieve sample --json` over every chain and sampler
# with fixed seeds and several logits shapes, one JSON document per run, to a
# file (or stdout). A refactor that changes no behaviour leaves it
# byte-identical:
#   scripts/token_corpus.sh build/cli/sieve > before.txt
#   (change, rebuild)
#   scripts/token_corpus.sh build/cli/sieve > after.txt && cmp before.txt after.txt
# SIEVE_DEVICE or --device picks the device as for sieve itself (the default
# device unless set). The logits are generated here (python3), deterministically.
set -euo pipefail
sieve=${1:?usage: token_corpus.sh path/to/sieve}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# name rows vocab kind: raw float32 files. kinds: lm (a Zipf-like head over
# noise), tied (a few values shared by many tokens), flat (all equal).
python3 - "$dir" <<'EOF'
import math, random, struct, sys
out = sys.argv[1]
def write(name, rows, vocab, kind, seed):
    rnd = random.Random(seed)
    vals = []
    for r in range(rows):
        for i in range(vocab):
            if kind == "lm":
                v = 12.0 - 2.2 * math.log(1 + ((i * 7919 + r * 104729) % vocab)) + rnd.gauss(0, 0.7)
            elif kind == "tied":
                v = float((i * 31 + r) % 5)
            else:
                v = 0.5
            vals.append(v)
    with open(f"{out}/{name}.f32", "wb") as f:
        f.write(struct.pack(f"<{len(vals)}f", *vals))
write("small", 2, 1000, "lm", 1)
write("odd", 3, 1003, "lm", 2)
write("mid", 4, 32000, "lm", 3)
write("big", 2, 151936, "lm", 4)
write("tied", 2, 4096, "tied", 5)
write("flat", 1, 2048, "flat", 6)
EOF

declare -A vocab=([small]=1000 [odd]=1003 [mid]=32000 [big]=151936 [tied]=4096 [flat]=2048)
declare -A rows=([small]=2 [odd]=3 [mid]=4 [big]=2 [tied]=2 [flat]=1)

# Each case: the sampler options; every case runs over every shape.
cases=(
  ""                                                       # llama.cpp's default chain
  "--samplers greedy"
  "--samplers dist --temp 1"
  "--samplers top_k;dist --top-k 5 --temp 1"
  "--samplers top_p;temperature;dist --top-p 0.9 --temp 1"
  "--samplers top_p;dist --top-p 0.5 --min-keep 3"
  "--samplers min_p;temperature;dist --min-p 0.1"
  "--samplers typ_p;dist --typical 0.8"
  "--samplers top_n_sigma;dist --top-n-sigma 1.5"
  "--samplers xtc;dist --xtc-probability 0.7 --xtc-threshold 0.05"
  "--samplers temperature;dist --temp 1.3 --dynatemp-range 0.5 --dynatemp-exp 1.2"
  "--samplers temperature;top_k;top_p;min_p;dist --temp 0 --top-k 20"
  "--mirostat 1 --mirostat-ent 4 --mirostat-lr 0.2"
  "--mirostat 2"
  "--samplers top_k;adaptive_p --top-k 30 --adaptive-target 0.3 --adaptive-decay 0.9"
  "--samplers penalties;top_k;dist --top-k 10 --repeat-penalty 1.3 --frequency-penalty 0.2 --presence-penalty 0.1 --history 1,2,3,2,7,1"
  "--samplers dry;top_k;dist --top-k 10 --dry-multiplier 0.8 --dry-allowed-length 1 --history 4,5,6,4,5,6,4,5"
  "--logit-bias 3+5 --logit-bias 7-inf --samplers top_k;dist --top-k 8"
  "--logprobs 5 --samplers top_p;dist --top-p 0.8"
  "--draws 16 --samplers top_k;dist --top-k 4"
  "--dump-dist --samplers top_k;temperature;dist --top-k 6 --temp 0.7"
)

seed=11
for shape in small odd mid big tied flat; do
  for c in "${cases[@]}"; do
    seed=$((seed + 1))
    # shellcheck disable=SC2206
    opts=($c)
    echo "== $shape seed $seed: ${c:-default chain}"
    "$sieve" sample --json --logits "$dir/$shape.f32" --vocab "${vocab[$shape]}" --rows "${rows[$shape]}" \
      --seed "$seed" "${opts[@]}" 2>&1 || echo "exit status $?"
  done
done
