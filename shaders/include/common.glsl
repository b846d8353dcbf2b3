// Shared declarations of every Sieve compute shader: specialization constants,
// the one descriptor-set layout, push constants, buffer layouts and the helpers
// that must agree between passes (keys, masses).
#ifndef SIEVE_COMMON_GLSL
#define SIEVE_COMMON_GLSL

#include "gpu_ids.h"

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

#include "keys.glsl"

// Workgroup size and candidate capacity come from the device's limits (and the
// constrained profile), never from an assumed subgroup size.
layout(constant_id = SPEC_WG) const uint WG = 256;
layout(constant_id = SPEC_CAP) const uint CAP = 1024;   // power of two, CAP * 8 bytes of shared memory
layout(local_size_x_id = SPEC_WG) in;
// The collect pass's chunks' workgroup size: WG, but in a CPU device's
// narrower collect tail (pipelines.cpp), which reads what the chunks kept.
layout(constant_id = SPEC_CHUNK_WG) const uint CHUNK_WG = 256;
// What the passes read besides the logits (engine/vulkan/pipelines.hpp, InputsMode):
// 0 nothing, 1 the token bitmask, logit bias and history table. Calls where no
// row has a bias or bitmask compile none of it: its lookups, inlined wherever
// a logit is read, slow a whole pass on a CPU device even for rows that never
// reach them.
layout(constant_id = SPEC_INPUTS_MODE) const uint INPUTS_MODE = 0u;
const bool ROW_INPUTS = INPUTS_MODE != 0u;
// The chain before its draw, 4 bits per sampler (OP_*), first in the low bits;
// the collect pipeline is specialized per chain (engine/vulkan/pipelines.cpp).
layout(constant_id = SPEC_CHAIN_OPS_LO) const uint CHAIN_OPS_LO = 0u;
layout(constant_id = SPEC_CHAIN_OPS_HI) const uint CHAIN_OPS_HI = 0u;
// The chain's final sampler when it learns (SELECT_*, selectors.glsl): a
// constant, so that chains ending in dist compile none of it.
layout(constant_id = SPEC_CHAIN_SELECTOR) const uint CHAIN_SELECTOR = 0u;
// 1 on a CPU device (EffectiveLimits::cpu_paths): a pass that adds each
// logit into one of a few per-invocation bins indexes the bin array instead
// of a select and an add per bin and sum. On lavapipe a select and an add cost
// the same as any other work per logit, so 16 bins and three sums were about
// a third of wide_histogram's time, while an indexed add does not grow with
// the bins. A GPU keeps the selects: an indexed array there would leave the
// registers.
layout(constant_id = SPEC_INDEXED_BINS) const uint INDEXED_BINS = 0u;
#define CHAIN_OP(o) ((((o) < 8u ? CHAIN_OPS_LO : CHAIN_OPS_HI) >> (4u * ((o) % 8u))) & 15u)
// Whether a row of the chain may take a floor (ROW_FLOOR): the chain holds
// min-p (OP_MIN_P = 4 in some nibble) or ends in mirostat v2
// (SELECT_MIROSTAT_V2 = 2): only then does the collect pass track the
// running maximum for the floor. (One `||` only: glslang 11 turns a second
// into a branch whose phi the spec-constant expression cannot use.)
#define HAS_OP_NIBBLE(w, v) ((((w) ^ ((v) * 0x11111111u)) - 0x11111111u) & ~((w) ^ ((v) * 0x11111111u)) & 0x88888888u)
#define CHAIN_HAS_FLOOR ((HAS_OP_NIBBLE(CHAIN_OPS_LO, 4u) | HAS_OP_NIBBLE(CHAIN_OPS_HI, 4u)) != 0u || CHAIN_SELECTOR == 2u)

#include "gpu_layout.h"

layout(std430, set = 0, binding = BINDING_LOGITS) readonly buffer Logits { float logits[]; };
layout(std430, set = 0, binding = BINDING_PARAMS) readonly buffer Params { uint params[]; };
// coherent: the last workgroup of a pass reads what the others wrote (see
// last_to_arrive in arrive.glsl).
layout(std430, set = 0, binding = BINDING_CHUNK_STATS) coherent buffer ChunkStats { uint chunk_stats[]; };
layout(std430, set = 0, binding = BINDING_ROW_STATE) coherent buffer RowState { uint row_state[]; };
layout(std430, set = 0, binding = BINDING_SLOT_STATE) buffer SlotState { uint slot_state[]; };
layout(std430, set = 0, binding = BINDING_HISTOGRAMS) coherent buffer Histograms { uint histograms[]; };  // [row][chunk][bin][HIST_STRIDE]
layout(std430, set = 0, binding = BINDING_CANDIDATES) coherent buffer Candidates { uint candidates[]; };  // [row][CAP][key, id]
layout(std430, set = 0, binding = BINDING_RESULTS) buffer Results { uint results[]; };
layout(std430, set = 0, binding = BINDING_DISPATCH_ARGS) buffer DispatchArgs { uint dispatch_args[]; };
// Per-row logit bias and token bitmask (host-written): [n_bias, words W,
// W x (allowed bits, biased bits), n_bias x (token, bias bits) sorted by token].
layout(std430, set = 0, binding = BINDING_ROW_INPUTS) readonly buffer RowInputs { uint row_inputs[]; };
// Per row, a top-p cut past the candidate buffer (wide.glsl): merged bins, the
// buffer's entries and the gathered list.
layout(std430, set = 0, binding = BINDING_WIDE) coherent buffer Wide { uint wide[]; };
// Per row, written each call by history.comp from the slot's history: a bitmap
// of the tokens whose logit changes, their hash entries, DRY's scratch.
layout(std430, set = 0, binding = BINDING_ADJUST) coherent buffer Adjust { uint adjust[]; };

float row_scale(uint row) { return uintBitsToFloat(params[row * PARAM_STRIDE + P_SCALE]); }

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
#define FLT_MIN_NORMAL uintBitsToFloat(0x00800000u)  // float's smallest normal, 1.17549435e-38

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
uint g_inputs = NO_INPUTS;
uint g_adjust = NO_INPUTS;  // the row's Adjust block when penalties or DRY act
uint g_flags = 0u;

// A row's Adjust block (gpu_layout.h: ADJ_*).
uint adjust_row_words() { return SIEVE_ADJUST_ROW_WORDS(pc.bitmap_words, pc.hash_bits, pc.hist_cap); }
uint adjust_hash(uint token) { return (token * 2654435761u) >> (32u - pc.hash_bits); }
uint adjust_repeats_at(uint base) { return base + pc.bitmap_words + (ADJ_ENTRY << pc.hash_bits); }
uint adjust_prefix_at(uint base) { return adjust_repeats_at(base) + pc.hist_cap; }
uint adjust_values_at(uint base) { return adjust_prefix_at(base) + pc.bitmap_words; }
uint adjust_used_at(uint base) { return adjust_values_at(base) + pc.hist_cap; }  // count, then entry indices
uint adjust_marked_at(uint base) { return adjust_used_at(base) + 1u + pc.hist_cap; }  // count, then tokens

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
