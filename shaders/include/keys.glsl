// Keys and the scaled logit: what every pass agrees on with the twin, and
// the self-tests include alone (raw_range_kat.comp), without common.glsl's
// bindings.
#ifndef SIEVE_KEYS_GLSL
#define SIEVE_KEYS_GLSL

#include "division.glsl"
#include "gpu_ids.h"

// 1 where the device's float division may be inexact (every device but a CPU
// implementation, whose vector division is IEEE's, whatever the profile):
// sieve_div corrects each quotient llama.cpp computes by a division
// (division.glsl; tests/gpu/test_gpu_division.cpp checks the correction).
layout(constant_id = SPEC_EXACT_DIVISION) const uint EXACT_DIVISION = 1u;

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

// The key of -inf or of a finite value: not NaN or +Inf, on which a row fails
// (one unsigned compare: keys below KEY_NEG_INF wrap past the range).
bool key_valid(uint k) { return k - KEY_NEG_INF < KEY_POS_INF - KEY_NEG_INF; }

// x / y rounded as IEEE rounds it, as the twin and llama.cpp divide.
float sieve_div(float x, float y) {
    float q = x / y;
    return EXACT_DIVISION != 0u ? correct_quotient(x, y, q) : q;
}

// The logit the draw sees: divided by the temperature exactly as llama.cpp's
// temperature sampler does (one float division), so that keys, ties and masses
// are those of the twin's candidate array. scale <= 0 is greedy masking, which
// keeps the raw order. Scale 1 (no temperature in the chain, as greedy's, or
// temperatures of 1) divides nothing: x / 1 is x in IEEE arithmetic, and the
// correction would cost each logit a division and dozens of operations. (Where
// a device would flush a subnormal quotient, sieve_key flushes x by its bits.)
float scaled_logit(float f, float scale) { return scale > 0.0 && scale != 1.0 ? sieve_div(f, scale) : f; }

#endif
