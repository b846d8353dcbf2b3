// Shared declarations of every Sieve compute shader: specialization constants,
// the one descriptor-set layout, push constants, buffer layouts and the helpers
// that must agree between passes (keys, masses).
#ifndef SIEVE_COMMON_GLSL
#define SIEVE_COMMON_GLSL

#extension GL_EXT_control_flow_attributes : require  // [[unroll]] of the per-invocation bins
#ifdef SIEVE_SUBGROUP
// The variant for devices with subgroup arithmetic (whatever their subgroup
// size); every shader also exists without it.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef SIEVE_MEMORY_MODEL
// The variant for devices with the Vulkan memory model (vulkanMemoryModel and
// vulkanMemoryModelDeviceScope), built for the shaders with a last-workgroup
// handoff (arrive.glsl), whose release/acquire it states exactly.
#extension GL_KHR_memory_scope_semantics : require
// Under the memory model, GLSL's barrier() orders shared memory only (its
// semantics name WorkgroupMemory), while these shaders also hand buffer
// values between the invocations of a workgroup across a barrier (what the
// GLSL450 model's barrier() gave in practice). This barrier orders both.
// The buffers declared coherent are shared between workgroups: device scope
// (the memory model's own name; its accesses make themselves available and
// visible at that scope).
#define coherent devicecoherent
#define barrier() controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, \
                                 gl_StorageSemanticsShared | gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease)
#endif


// Workgroup size and candidate capacity come from the device's limits (and the
// constrained profile), never from an assumed subgroup size.
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint CAP = 1024;   // power of two, CAP * 8 bytes of shared memory
layout(local_size_x_id = 0) in;
// What the passes read besides the logits (engine/pipelines.hpp, InputsMode):
// 0 nothing, 1 the token bitmask, logit bias and history table. Calls where no
// row has a bias or bitmask compile none of it: its lookups, inlined wherever
// a logit is read, slow a whole pass on a CPU device even for rows that never
// reach them.
layout(constant_id = 2) const uint INPUTS_MODE = 0u;
const bool ROW_INPUTS = INPUTS_MODE != 0u;
// The chain before its draw, 4 bits per sampler (OP_*), first in the low bits;
// the collect pipeline is specialized per chain (engine/pipelines.cpp).
layout(constant_id = 3) const uint CHAIN_OPS_LO = 0u;
layout(constant_id = 4) const uint CHAIN_OPS_HI = 0u;
// The chain's final sampler when it learns (SELECT_*, selectors.glsl): a
// constant, so that chains ending in dist compile none of it.
layout(constant_id = 5) const uint CHAIN_SELECTOR = 0u;
// 1 on a CPU device (EffectiveLimits::cpu_paths): a pass that adds each
// logit into one of a few per-invocation bins indexes the bin array instead
// of a select and an add per bin and sum. On lavapipe a select and an add cost
// the same as any other work per logit, so 16 bins and three sums were about
// a third of wide_histogram's time, while an indexed add does not grow with
// the bins. A GPU keeps the selects: an indexed array there would leave the
// registers.
layout(constant_id = 8) const uint INDEXED_BINS = 0u;
#define CHAIN_OP(o) ((((o) < 8u ? CHAIN_OPS_LO : CHAIN_OPS_HI) >> (4u * ((o) % 8u))) & 15u)
// Whether the chain holds min-p (OP_MIN_P = 4 in some nibble): only then does
// the collect pass track the running maximum for min-p's floor.
#define HAS_OP_NIBBLE(w, v) ((((w) ^ ((v) * 0x11111111u)) - 0x11111111u) & ~((w) ^ ((v) * 0x11111111u)) & 0x88888888u)
#define CHAIN_HAS_MIN_P (HAS_OP_NIBBLE(CHAIN_OPS_LO, 4u) != 0u || HAS_OP_NIBBLE(CHAIN_OPS_HI, 4u) != 0u)

// Fixed for a recording (push constants are baked into the command buffer).
layout(push_constant) uniform Push {
    uint vocab;       // logits per row in use
    uint stride;      // floats between rows
    uint chunk_size;  // logits per workgroup chunk (fixed by vocab, never by rows)
    uint n_chunks;    // chunks per row
    uint level;       // selection level of this dispatch (histogram)
    uint flags;       // FLAG_*
    uint row_base;    // first row of this dispatch's row group (workgroup y = row - row_base)
    uint args_base;   // this row group's indirect dispatch arguments (words)
    uint wide_cap;    // entries of a row's wide list (wide.glsl); 0: the chain has no wide path
    uint hist_cap;    // tokens of a slot's history ring (the chain's history capacity)
    uint hash_bits;   // log2 of a row's history hash entries (history.glsl)
    uint bitmap_words;  // words of a row's history bitmap: ceil(max_vocab / 32)
} pc;

const uint FLAG_GREEDY = 1u;   // the chain ends in greedy
const uint FLAG_SMALL = 2u;    // the whole row fits the candidate buffer: finalize reads it directly
const uint FLAG_DISTRIBUTION = 4u;  // sieve_chain_distribution: no result, no step advance
// CHAIN_SELECTOR's values (engine/gpu_params.hpp, chain_selector).
const uint SELECT_DIST = 0u;   // dist or greedy: nothing learns
const uint SELECT_MIROSTAT = 1u;
const uint SELECT_MIROSTAT_V2 = 2u;
const uint SELECT_ADAPTIVE = 3u;

// Selection levels: level 0 bins the row by value below the maximum (where the
// softmax mass lives); levels 1..8 split a key interval into 16 equal parts, so
// 8 of them reach a single 32-bit key.
const uint BINS = 16u;
const uint KEY_LEVELS = 8u;

// sieve_status values the shaders report
const uint STATUS_OK = 0u;
const uint STATUS_NON_FINITE = 9u;
const uint STATUS_ALL_MASKED = 10u;
// Not a sieve_status: the row's survivors reach past the candidate buffer; the
// host samples it with the CPU twin (counted in cpu_fallback_rows).
const uint STATUS_FALLBACK = 0x46414C4Cu;

// Per-row parameters, written by the host into a persistently mapped block
// (mirrored in engine/gpu_params.hpp).
const uint PARAM_STRIDE = 48u;
const uint P_SCALE = 0u;       // float: the chain's temperature product, 1 without temperature; <= 0 = greedy
const uint P_SEED = 1u;
const uint P_SLOT = 2u;        // word offset of the row's slot record in slot_state
const uint P_DRAW = 3u;
const uint P_ROW_FLAGS = 4u;   // ROW_*
const uint P_TEMPERATURE = 5u; // float, the sampler parameters (llama.cpp's meanings)
const uint P_TOP_K = 6u;       // int
const uint P_TOP_P = 7u;
const uint P_MIN_P = 8u;
const uint P_TYPICAL = 9u;
const uint P_N_SIGMA = 10u;
const uint P_XTC_PROB = 11u;
const uint P_XTC_THRESHOLD = 12u;
const uint P_DYN_RANGE = 13u;
const uint P_DYN_EXPONENT = 14u;
const uint P_MIN_KEEP = 15u;   // uint, >= 0
const uint P_AGG_T = 16u;      // float: the temperature product the full-row mass is summed at
const uint P_NEED = 17u;       // candidates the collect pass keeps (1..CAP/2)
const uint P_LOGPROBS = 18u;   // top raw log-probabilities wanted (0..20; raw_stats.comp)
const uint P_INPUTS = 20u;     // word offset of the row's bias/bitmask block in row_inputs
const uint P_FLOOR = 21u;      // float, ROW_FLOOR: the min-p floor below the running maximum (raw logits)
// The history samplers (history.glsl); a window of 0 = the sampler is off.
const uint P_PEN_LAST_N = 19u;
const uint P_REPEAT = 22u;     // float
const uint P_FREQ = 23u;       // float
const uint P_PRESENT = 24u;    // float
const uint P_DRY_LAST_N = 25u;
const uint P_DRY_MULT = 26u;   // float
const uint P_DRY_BASE = 27u;   // float
const uint P_DRY_ALLOWED = 28u;
const uint P_DRY_MAX_EXP = 29u;  // llama.cpp's exponent cap (0 = none), computed by the host as llama.cpp does
const uint P_BREAKERS = 30u;   // word offset of the row's DRY breakers in row_inputs (NO_INPUTS: none)
// The learning final samplers (selectors.glsl).
const uint P_MIRO_TAU = 31u;   // float
const uint P_MIRO_ETA = 32u;   // float
const uint P_ADAPT_TARGET = 33u;  // float; < 0: a plain draw
const uint P_ADAPT_DECAY = 34u;   // float

const uint ROW_HAS_INPUTS = 1u;  // a logit bias or a token bitmask applies
const uint ROW_NEED_SIGMA = 2u;  // the collect pass sums mean/variance of the row
const uint ROW_NEED_MASS = 4u;   // the collect pass sums the row's softmax mass at P_AGG_T
const uint ROW_FLOOR = 8u;       // min-p is the chain's first cut: collect only logits above its floor
const uint ROW_DEFER_TOP_P = 16u;  // top-p is the only cut: the wide passes sum the mass (wide.glsl)
const uint ROW_ADJUST = 32u;   // penalties or DRY act: logits of history tokens change (history.glsl)
const uint ROW_DRY_FIRST = 64u;  // DRY comes before the penalties in the chain
const uint ROW_COMMIT = 128u;  // the drawn token joins the slot's history (sieve_sample, not draws)
// The history pass writes the adjusted logits into the row itself (rows
// without bias or bitmask: the passes then read plain logits, at no cost).
// The host uploads the row before every submission, so the next one starts
// from the model's logits again.
const uint ROW_PATCH = 256u;

const uint OP_END = 0u;
const uint OP_TEMPERATURE = 1u;
const uint OP_TOP_K = 2u;
const uint OP_TOP_P = 3u;
const uint OP_MIN_P = 4u;
const uint OP_TYPICAL = 5u;
const uint OP_TOP_N_SIGMA = 6u;
const uint OP_XTC = 7u;

// A sequence slot's record (engine/slot_layout.hpp): header words, then the
// history ring of pc.hist_cap tokens. The host reads and writes it between
// calls (mapped memory); the draw advances the step and appends the token.
const uint S_STEP = 0u;
const uint S_COUNT = 1u;       // tokens in the ring
const uint S_HEAD = 2u;        // where the next token goes
const uint S_FLAGS = 3u;       // SLOT_*
const uint S_MU = 4u;          // float: mirostat's mu
const uint S_ADAPT_SUM = 5u;   // float: adaptive-p's weighted sum
const uint S_ADAPT_WEIGHT = 6u;  // float: adaptive-p's total weight
const uint SLOT_MU_SET = 1u;
const uint SLOT_ADAPTIVE_SET = 2u;
const uint SLOT_HEADER = 16u;

// Per-chunk statistics (row_stats.comp).
const uint CHUNK_STRIDE = 16u;
const uint C_MAX_KEY = 0u;
const uint C_ARGMAX = 1u;
const uint C_MIN_FINITE_KEY = 2u;
const uint C_BAD = 3u;
const uint C_FIRST_BAD = 4u;
const uint C_FINITE = 5u;
const uint C_OVERFLOW = 6u;
const uint C_KEPT = 7u;        // collect: candidates the chunk kept
const uint C_AGG = 8u;         // collect: Agg (count, mean, m2, mass max, mass sum) as float bits
// The tie draw (gather.comp, PHASE_TIE; collect chains never take it): the
// chunk's exact masses above the tie key and in all (uvec2 each), and its
// members of the tie group.
const uint C_TIE = 8u;

// Per-row selection state within one call.
const uint ROW_STRIDE = 40u;
const uint R_STATUS = 0u;
const uint R_PHASE = 1u;
const uint R_MAX_KEY = 2u;
const uint R_ARGMAX = 3u;
const uint R_KEY_LO = 4u;      // the chosen bin's members: keys in [KEY_LO, KEY_HI]
const uint R_KEY_HI = 5u;
const uint R_TARGET = 6u;      // float: the draw target's remaining mass inside that bin
const uint R_TOTAL = 7u;       // float: the row's total mass, sum of exp(x - max)
const uint R_CAND_COUNT = 8u;
const uint R_PASSES = 9u;
const uint R_BUCKET_COUNT = 10u;
const uint R_FIRST_BAD = 11u;
const uint R_BIN = 12u;        // the chosen bin at the last level (tie path: per-chunk counts)
const uint R_MIN_KEY = 13u;    // the smallest finite key
const uint R_ARRIVE = 14u;     // workgroups of the current pass done with the row (last_to_arrive)
// Words 16..31: a top-p cut past the candidate buffer (wide.glsl).

const uint PHASE_ACTIVE = 1u;  // levels still narrowing
const uint PHASE_GATHER = 2u;  // the bin fits the candidate buffer
const uint PHASE_TIE = 3u;     // > CAP members with one identical key
const uint PHASE_DONE = 4u;    // greedy or failed: nothing left to select

// Indirect dispatch arguments the scans write for the levels after them, so a
// level no row needs launches no workgroup: [level * 8 + 0..2] (levels 1..8).
const uint DISPATCH_ARGS_WORDS = 72u;

// Per-chunk bins of one level.
const uint HIST_STRIDE = 4u;
const uint H_MASS = 0u;      // float bits
const uint H_COUNT = 1u;
const uint H_KEY_MIN = 2u;   // the members' key range
const uint H_KEY_MAX = 3u;

// Per-row result, read by the host: token, p, logprob, status, seed, step,
// passes, first bad logit; then the raw log-probability words (raw_stats.comp).
const uint RESULT_STRIDE = 64u;
const uint RES_RAW_TOKEN = 8u;    // float: the drawn token's logit as the model gave it
const uint RES_RAW_MAX = 9u;      // float: the row's maximal finite logit
const uint RES_RAW_SUM = 10u;     // float: sum of exp(logit - max) over the finite logits
const uint RES_RAW_COUNT = 11u;   // top entries found (<= P_LOGPROBS)
const uint RES_RAW_IDS = 12u;     // 20 ids, canonical order
const uint RES_RAW_LOGITS = 32u;  // their logits (float bits)

layout(std430, set = 0, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, set = 0, binding = 1) readonly buffer Params { uint params[]; };
// coherent: the last workgroup of a pass reads what the others wrote (see
// last_to_arrive in arrive.glsl).
layout(std430, set = 0, binding = 2) coherent buffer ChunkStats { uint chunk_stats[]; };
layout(std430, set = 0, binding = 3) coherent buffer RowState { uint row_state[]; };
layout(std430, set = 0, binding = 4) buffer SlotState { uint slot_state[]; };
layout(std430, set = 0, binding = 5) coherent buffer Histograms { uint histograms[]; };  // [row][chunk][bin][HIST_STRIDE]
layout(std430, set = 0, binding = 6) coherent buffer Candidates { uint candidates[]; };  // [row][CAP][key, id]
layout(std430, set = 0, binding = 7) buffer Results { uint results[]; };
layout(std430, set = 0, binding = 9) buffer DispatchArgs { uint dispatch_args[]; };
// Per-row logit bias and token bitmask (host-written): [n_bias, words W,
// W x (allowed bits, biased bits), n_bias x (token, bias bits) sorted by token].
layout(std430, set = 0, binding = 10) readonly buffer RowInputs { uint row_inputs[]; };
// Per row, a top-p cut past the candidate buffer (wide.glsl): merged bins, the
// buffer's entries and the gathered list.
layout(std430, set = 0, binding = 11) coherent buffer Wide { uint wide[]; };
// Per row, written each call by history.comp from the slot's history: a bitmap
// of the tokens whose logit changes, their hash entries, DRY's scratch.
layout(std430, set = 0, binding = 12) coherent buffer Adjust { uint adjust[]; };

// Order-preserving key: uint order == float order; -0 and +0 share a key.
// NaN never gets here (rows holding one fail in row_stats first).
// Subnormals share it too, by their bits (a device may flush them in any float
// op; docs/semantics.md, "Subnormal logits").
uint sieve_key(float f) {
    uint b = floatBitsToUint(f);
    if ((b & 0x7F800000u) == 0u) b = 0u;
    // Negative: every bit flipped; else the sign bit set (two operations: the
    // hot loops compute this for every logit).
    return b ^ (uint(int(b) >> 31) | 0x80000000u);
}

float sieve_key_value(uint k) {
    return uintBitsToFloat((k & 0x80000000u) != 0u ? (k & 0x7FFFFFFFu) : ~k);
}

const uint KEY_NEG_INF = 0x007FFFFFu;  // sieve_key(-inf)
const uint KEY_POS_INF = 0xFF800000u;  // sieve_key(+inf); NaNs fall outside [KEY_NEG_INF, KEY_POS_INF]

float row_scale(uint row) { return uintBitsToFloat(params[row * PARAM_STRIDE + P_SCALE]); }

// The logit the draw sees: divided by the temperature exactly as llama.cpp's
// temperature sampler does (one float division), so that keys, ties and masses
// are those of the twin's candidate array. scale <= 0 is greedy masking, which
// keeps the raw order.
float scaled_logit(float f, float scale) { return scale > 0.0 ? f / scale : f; }

// The mass of a scaled logit x in 40-bit fixed point relative to the row's
// maximal scaled logit M: trunc(exp(x - M) * 2^40) as (lo, hi). Exact integer
// masses make every sum order-independent (deterministic) and let the draw
// compare integers.
// A non-negative mass below 2^24 in 40-bit fixed point, truncated.
uvec2 fixed40(float w) {
    float s = w * 256.0;             // = mass / 2^32
    uint hi = uint(s);
    float frac = s - float(hi);      // exact
    return uvec2(uint(frac * 4294967296.0), hi);
}

uvec2 sieve_mass(float scaled, float max_scaled) { return fixed40(clamp(exp(scaled - max_scaled), 0.0, 1.0)); }

#define NEG_INF uintBitsToFloat(0xFF800000u)

// A logit as read on ingest: a subnormal is the zero of its sign, by its bits
// (exact on every device; the twin's flush_subnormal).
float flush_subnormal(float f) {
    uint b = floatBitsToUint(f);
    return (b & 0x7F800000u) == 0u ? uintBitsToFloat(b & 0x80000000u) : f;
}
#define QNAN uintBitsToFloat(0x7FC00000u)

uint param_u(uint row, uint p) { return params[row * PARAM_STRIDE + p]; }
float param_f(uint row, uint p) { return uintBitsToFloat(params[row * PARAM_STRIDE + p]); }

// The bias entries of token i, added in list order (the twin's rule); a finite
// logit a finite bias drives to +-inf becomes NaN, which fails the row
// (SIEVE_ERROR_NON_FINITE_LOGIT, as the twin says).
float apply_bias(uint base, uint i, float f) {
    uint n = row_inputs[base];
    uint entries = base + 2u + 2u * row_inputs[base + 1u];
    uint lo = 0u, hi = n;  // first entry with token >= i
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        if (row_inputs[entries + 2u * mid] < i) lo = mid + 1u; else hi = mid;
    }
    for (uint e = lo; e < n && row_inputs[entries + 2u * e] == i; ++e) {
        float b = uintBitsToFloat(row_inputs[entries + 2u * e + 1u]);
        float before = f;
        f = f + b;
        if (isinf(f) && !isinf(before) && !isinf(b)) return QNAN;
    }
    return f;
}

// The RowInputs offset of the row this workgroup works on, or NO_INPUTS: read
// once per workgroup (bind_row), not once per logit.
const uint NO_INPUTS = 0xFFFFFFFFu;
uint g_inputs = NO_INPUTS;
uint g_adjust = NO_INPUTS;  // the row's Adjust block when penalties or DRY act
uint g_flags = 0u;

// A row's Adjust block (engine/gpu_chain.cpp's AdjustLayout): the bitmap of
// adjusted tokens, 2^hash_bits entries of ADJ_ENTRY words, DRY's repeat counts
// (hist_cap words), the bitmap's prefix counts (one per word) and the adjusted
// tokens' final logits by rank (hist_cap words): a logit is looked up without
// a loop.
const uint ADJ_ENTRY = 4u;
const uint ADJ_KEY = 0u;       // token + 1 (0 = empty)
const uint ADJ_COUNT = 1u;     // occurrences in the penalties' window
const uint ADJ_DRY = 2u;       // float: DRY's penalty (0 when none)
const uint ADJ_DRY_LEN = 3u;   // DRY's longest repeat the token extends, + 1 (0 = none)
uint adjust_row_words() { return 2u * pc.bitmap_words + (ADJ_ENTRY << pc.hash_bits) + 2u * pc.hist_cap; }
uint adjust_hash(uint token) { return (token * 2654435761u) >> (32u - pc.hash_bits); }
uint adjust_repeats_at(uint base) { return base + pc.bitmap_words + (ADJ_ENTRY << pc.hash_bits); }
uint adjust_prefix_at(uint base) { return adjust_repeats_at(base) + pc.hist_cap; }
uint adjust_values_at(uint base) { return adjust_prefix_at(base) + pc.bitmap_words; }

// The final logit of an adjusted token i: `word` is its bitmap word, bit its bit.
float adjusted_logit(uint i, uint word, uint bit) {
    uint rank = adjust[adjust_prefix_at(g_adjust) + (i >> 5u)] + bitCount(word & (bit - 1u));
    return uintBitsToFloat(adjust[adjust_values_at(g_adjust) + rank]);
}

void bind_row(uint row) {
    g_flags = param_u(row, P_ROW_FLAGS);
    g_inputs = (g_flags & ROW_HAS_INPUTS) != 0u ? param_u(row, P_INPUTS) : NO_INPUTS;
    g_adjust = (g_flags & (ROW_ADJUST | ROW_PATCH)) == ROW_ADJUST ? row * adjust_row_words() : NO_INPUTS;
}

// Logit i of the bound row as the chain sees it: the token bitmask
// (disallowed = -inf), then the logit bias and the history samplers (which the
// GPU runs only at the chain's start), as the twin applies them. A token the
// history samplers adjust has its final logit, bias included, in the row's
// table. NaN and +Inf stay as they are: the row fails on them whatever the
// mask says (the twin checks the raw logits first).
float row_logit(uint row, uint i) {
    float f = flush_subnormal(logits[row * pc.stride + i]);
    if (!ROW_INPUTS || (g_inputs == NO_INPUTS && g_adjust == NO_INPUTS)) return f;
    if (isnan(f) || (isinf(f) && f > 0.0)) return f;
    uint bit = 1u << (i & 31u);
    uint w = g_inputs + 2u + 2u * (i >> 5u);
    if (g_inputs != NO_INPUTS && (row_inputs[w] & bit) == 0u) return NEG_INF;
    if (g_adjust != NO_INPUTS) {
        uint word = adjust[g_adjust + (i >> 5u)];
        if ((word & bit) != 0u) return adjusted_logit(i, word, bit);
    }
    if (g_inputs != NO_INPUTS && (row_inputs[w + 1u] & bit) != 0u) return apply_bias(g_inputs, i, f);
    return f;
}

// Logits i..i+3 of a row read one at a time, those at or past `end` repeating
// the last one before it (a caller masks them).
vec4 row_quad(uint row, uint i, uint end) {
    return vec4(row_logit(row, i), row_logit(row, min(i + 1u, end - 1u)), row_logit(row, min(i + 2u, end - 1u)),
                row_logit(row, min(i + 3u, end - 1u)));
}

uint load_key(uint row, uint i, float scale) { return sieve_key(scaled_logit(row_logit(row, i), scale)); }

#endif
