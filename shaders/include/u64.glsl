// 64-bit unsigned arithmetic on uvec2 (x = low word, y = high word): Vulkan's
// shaderInt64 is optional (absent on many phones), so masses are kept exactly in
// two 32-bit words. All operations are exact and therefore order-independent,
// which keeps sums deterministic whatever order workgroups add in.
#ifndef SIEVE_U64_GLSL
#define SIEVE_U64_GLSL

uvec2 u64_add(uvec2 a, uvec2 b) {
    uint carry;
    uint lo = uaddCarry(a.x, b.x, carry);
    return uvec2(lo, a.y + b.y + carry);
}

uvec2 u64_sub(uvec2 a, uvec2 b) {
    uint borrow;
    uint lo = usubBorrow(a.x, b.x, borrow);
    return uvec2(lo, a.y - b.y - borrow);
}

bool u64_less(uvec2 a, uvec2 b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }

float u64_to_float(uvec2 a) { return float(a.y) * 4294967296.0 + float(a.x); }

// A sum of 40-bit fixed-point masses (common.glsl: fixed40) as a float (/ 2^40).
float fixed40_value(uvec2 m) { return u64_to_float(m) * 9.094947017729282e-13; }

// floor(u * a / 2^32) for a 32-bit u and a < 2^63: the draw target.
uvec2 u64_mul_u32_shr32(uvec2 a, uint u) {
    uint a_hi, a_lo, b_hi, b_lo;
    umulExtended(u, a.x, a_hi, a_lo);
    umulExtended(u, a.y, b_hi, b_lo);
    uint carry;
    uint mid = uaddCarry(b_lo, a_hi, carry);
    return uvec2(mid, b_hi + carry);
}

// a * u for a * u < 2^64 (the low 64 bits of the product).
uvec2 u64_mul_u32(uvec2 a, uint u) {
    uint hi, lo;
    umulExtended(u, a.x, hi, lo);
    return uvec2(lo, a.y * u + hi);
}

// floor(a / b) for b != 0, by shift-subtract (64 bounded iterations).
uvec2 u64_div(uvec2 a, uvec2 b) {
    uvec2 q = uvec2(0u), r = uvec2(0u);
    for (int i = 63; i >= 0; --i) {
        r = uvec2(r.x << 1, (r.y << 1) | (r.x >> 31));
        uint bit = i >= 32 ? (a.y >> uint(i - 32)) & 1u : (a.x >> uint(i)) & 1u;
        r.x |= bit;
        if (!u64_less(r, b)) {
            r = u64_sub(r, b);
            if (i >= 32) q.y |= 1u << uint(i - 32); else q.x |= 1u << uint(i);
        }
    }
    return q;
}

#ifdef SIEVE_SUBGROUP
// The subgroup's exact sum of 64-bit values whose sum stays below 2^64: the
// low word in 16-bit halves, whose subgroup sums cannot wrap (a subgroup has
// at most 128 invocations), the high words as they are. (The shader has
// enabled subgroup arithmetic: common.glsl.)
uvec2 subgroup_add_u64(uvec2 m) {
    uint low = subgroupAdd(m.x & 0xFFFFu), mid = subgroupAdd(m.x >> 16), high = subgroupAdd(m.y);
    return u64_add(uvec2(low, high), uvec2(mid << 16, mid >> 16));
}
#endif

// Shared-memory accumulation of a 64-bit value with 32-bit atomics: the low word
// wraps exactly once per carry, so the sum is exact.
#define U64_ATOMIC_ADD(LO, HI, V)                                   \
    {                                                              \
        uint _old = atomicAdd(LO, (V).x);                          \
        uint _carry = (_old + (V).x < _old) ? 1u : 0u;             \
        if ((V).y + _carry != 0u) atomicAdd(HI, (V).y + _carry);   \
    }

#endif
