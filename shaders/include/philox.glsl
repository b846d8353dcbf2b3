// Philox4x32-10 (Salmon et al., Random123), identical to engine/reference/philox.cpp.
// Counter-based: the uniform of (seed, step, draw) needs no state but the step.
#ifndef SIEVE_PHILOX_GLSL
#define SIEVE_PHILOX_GLSL

const uint PHILOX_M0 = 0xD2511F53u;
const uint PHILOX_M1 = 0xCD9E8D57u;
const uint PHILOX_W0 = 0x9E3779B9u;
const uint PHILOX_W1 = 0xBB67AE85u;
const uint PHILOX_KEY_HI = 0x53455645u; // kPhiloxKeyHi in reference.hpp

uvec4 philox4x32_10(uvec4 ctr, uvec2 key) {
    for (int round = 0; round < 10; ++round) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(PHILOX_M0, ctr.x, hi0, lo0);
        umulExtended(PHILOX_M1, ctr.z, hi1, lo1);
        ctr = uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
        key += uvec2(PHILOX_W0, PHILOX_W1);
    }
    return ctr;
}

// The row's 32-bit uniform for (seed, step, draw); u = value / 2^32.
uint sieve_uniform_u32(uint seed, uint step, uint draw) {
    return philox4x32_10(uvec4(step, draw, 0u, 0u), uvec2(seed, PHILOX_KEY_HI)).x;
}

// XTC's coin: word 1 of the same block (the twin's xtc_coin_u32).
uint sieve_xtc_coin_u32(uint seed, uint step, uint draw) {
    return philox4x32_10(uvec4(step, draw, 0u, 0u), uvec2(seed, PHILOX_KEY_HI)).y;
}

#endif
