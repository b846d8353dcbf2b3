// A key range of the scaled logits as a range of the raw logits' own keys:
// the members of gather.comp's bin and of a key level's range on a GPU,
// tested by a logit's key alone, where each test divided the logit by the
// row's scale (the exact division, division.glsl: dozens of operations a
// logit on a GPU). Needs WG and keys.glsl; raw_range_kat.comp checks it
// against the host's IEEE division.
#ifndef SIEVE_RAW_RANGE_GLSL
#define SIEVE_RAW_RANGE_GLSL

#include "keys.glsl"

// Each written by one invocation: the edges, and what the window's ends saw.
shared uint s_raw_lo, s_raw_hi;
shared uint s_raw_first_out, s_raw_last_in, s_raw_first_stays, s_raw_last_leaves;  // 0 or 1

// |v| for which the exact division is IEEE's wherever the search needs it:
// quotients near an edge of at least 2^-100 in size are in division.glsl's
// corrected range (2^-126 to 2^115), and with a scale in [2^-20, 2^20] a
// zero or subnormal logit (one key for all) divides to less than 2^-106, so
// it lies on one side of both edges whatever the device does with it.
bool raw_range_value(float v) { return abs(v) >= 7.8886091e-31 && abs(v) <= 1.2676506e30; }  // 2^-100, 2^100
bool raw_range_scale(float s) { return s >= 9.5367432e-7 && s <= 1048576.0; }                // 2^-20, 2^20

// Where the quotients are corrected (EXACT_DIVISION: a GPU's) and a pass's
// chunks give each invocation at least this many logits to test (the H200's
// plan: about 74 at 64 rows, 9 at one row): there the corrections saved
// outweigh the window's four and its barrier, which at one row would sit on
// the row's critical path while the quotients it saves overlap. Stated, not
// measured on a GPU. A CPU device's division is IEEE's in a few vector
// operations: its shaders compile none of it (on lavapipe the barrier's mere
// presence in the pass cost 6% of dist's instructions: docs/perf-log.md).
const uint RAW_RANGE_LOGITS_PER_LANE = 32u;
bool raw_range_pays(uint chunk_logits) {
    return EXACT_DIVISION != 0u && chunk_logits >= RAW_RANGE_LOGITS_PER_LANE * WG;
}

// Whether raw key k's logit, scaled, reaches lo (true from some key on) and
// stays at or below hi (true up to some key).
bool raw_reaches(uint k, float scale, uint lo) { return sieve_key(scaled_logit(sieve_key_value(k), scale)) >= lo; }
bool raw_stays(uint k, float scale, uint hi) { return sieve_key(scaled_logit(sieve_key_value(k), scale)) <= hi; }

// The raw keys [klo, khi] of the finite logits f whose scaled logit
// x = scaled_logit(f, scale) is finite with a key in [lo, hi]: x's key never
// falls as f's rises (the IEEE division by scale > 0 is monotone; keys follow
// float order), so those f are the keys from the first whose x reaches lo to
// the last whose x stays at or below hi. Each edge lies within a few ulps
// of v * scale (v the edge's value): invocation t tests the keys t - WG / 2
// and one less from there, and the one invocation whose key reaches and
// whose key less does not holds klo (khi likewise): one store each, no
// atomics, one barrier. False, with [klo, khi] meaningless, where that does
// not hold or the window misses an edge: then every logit is divided. The
// whole workgroup, uniform arguments.
bool raw_key_range(float scale, uint lo, uint hi, out uint klo, out uint khi) {
    klo = lo;
    khi = hi;
    // Infinite edges would take x's infinities in; a NaN is never in [lo, hi].
    if (lo <= KEY_NEG_INF || hi >= KEY_POS_INF || lo > hi) return false;
    if (!(scale > 0.0 && scale != 1.0)) return true;  // x = f: its own key
    float vlo = sieve_key_value(lo), vhi = sieve_key_value(hi);
    if (!raw_range_value(vlo) || !raw_range_value(vhi) || !raw_range_scale(scale)) return false;
    uint t = gl_LocalInvocationID.x;
    // |v s| in [2^-120, 2^120]: normal, and so are the keys WG / 2 away.
    uint ka = sieve_key(vlo * scale) - WG / 2u + t, kb = sieve_key(vhi * scale) - WG / 2u + t;
    bool reaches = raw_reaches(ka, scale, lo), reached = raw_reaches(ka - 1u, scale, lo);
    bool stays = raw_stays(kb, scale, hi), stays_next = raw_stays(kb + 1u, scale, hi);
    if (reaches && !reached) s_raw_lo = ka;
    if (stays && !stays_next) s_raw_hi = kb;
    // The window holds each edge: below its first key x does not reach lo,
    // and its last does; its first stays at or below hi, past its last not.
    if (t == 0u) {
        s_raw_first_out = reached ? 0u : 1u;
        s_raw_first_stays = stays ? 1u : 0u;
    }
    if (t == WG - 1u) {
        s_raw_last_in = reaches ? 1u : 0u;
        s_raw_last_leaves = stays_next ? 0u : 1u;
    }
    barrier();
    klo = s_raw_lo;
    khi = s_raw_hi;
    return (s_raw_first_out & s_raw_last_in & s_raw_first_stays & s_raw_last_leaves) != 0u;
}

#endif
