// IEEE round-to-nearest-even division on any device. Vulkan lets a float
// OpFDiv be 2.5 ULP off (NVIDIA's is one), but llama.cpp divides logits by the
// temperature and the repeat penalty in IEEE arithmetic, and the keys, ties and
// masses must be the twin's. Self-contained: the division self-test
// (division_kat.comp) includes it alone.
#ifndef SIEVE_DIVISION_GLSL
#define SIEVE_DIVISION_GLSL

// x - a * b with its sign always, and exactly where it is a float. Vulkan's
// float add, subtract and multiply round correctly, and `precise` keeps the
// compiler from fusing them, so Dekker's product (Veltkamp's split into 12-bit
// halves) is exact: a * b = p + e. x - p is exact (Sterbenz) where a * b is
// within a factor two of x. A fused multiply-add would do it in one step, but
// Vulkan does not promise that fma() is fused (lavapipe's is not).
float division_residual(float x, float a, float b) {
    precise float ta = 4097.0 * a;
    precise float ah = ta - (ta - a);
    precise float al = a - ah;
    precise float tb = 4097.0 * b;
    precise float bh = tb - (tb - b);
    precise float bl = b - bh;
    precise float p = a * b;
    precise float e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    precise float d = x - p;
    precise float r = d - e;
    return r;
}

// q moved to the correctly rounded x / y, from within a few ulps of it. The
// residual x - q * y has the sign of the true quotient's side of q, and is
// exact where q is a faithful rounding (so the two floats around the true
// quotient compare exactly). Operands whose residual's low bits could leave
// the normal range (flushed on some devices) are scaled by 2^64 first; zeros,
// infinities, NaNs and quotients outside the range keep q.
float correct_quotient(float x, float y, float q) {
    const float SCALE_UP = 18446744073709551616.0;      // 2^64
    const float SCALE_DOWN = 5.421010862427522e-20;     // 2^-64
    const float RESIDUAL_MIN = 1.3234889800848443e-23;  // 2^-76: the product's low bits stay normal
    const float QUOTIENT_MIN = 1.1754943508222875e-38;  // float's smallest normal, 2^-126
    const float SPLIT_MAX = 4.1538374868278621e34;      // 2^115: Veltkamp's split does not overflow
    float ax = abs(x), ay = abs(y), aq = abs(q);
    if (!(aq >= QUOTIENT_MIN && aq <= SPLIT_MAX && ay >= QUOTIENT_MIN && ay <= SPLIT_MAX)) return q;
    float scale = 1.0;
    if (ax < RESIDUAL_MIN) {  // exact: a power of two on a float
        ax *= SCALE_UP;
        aq *= SCALE_UP;
        scale = SCALE_DOWN;
        if (!(ax >= RESIDUAL_MIN && aq <= SPLIT_MAX)) return q;
    }
    float r = division_residual(ax, aq, ay);  // > 0: the true quotient is above aq
    for (int i = 0; i < 8 && r != 0.0; ++i) {
        bool up = r > 0.0;
        float an = uintBitsToFloat(floatBitsToUint(aq) + (up ? 1u : 0xFFFFFFFFu));
        float rn = division_residual(ax, an, ay);
        if (rn != 0.0 && (rn > 0.0) == up) {  // still on the same side: go on
            aq = an;
            r = rn;
            continue;
        }
        // The true quotient lies in (aq, an]: the nearer wins. Never a tie: a
        // quotient of two floats is never halfway between two floats.
        if (abs(rn) < abs(r)) aq = an;
        break;
    }
    float result = aq * scale;  // exact: the quotient was normal before the scaling
    return (floatBitsToUint(x) ^ floatBitsToUint(y)) >= 0x80000000u ? -result : result;
}

#endif
