#ifndef SIEVE_KSUM_GLSL
#define SIEVE_KSUM_GLSL

// Compensated (Kahan) float sums: cumulative probabilities compared with a
// cut (top-p, typical) stay within a few ulps of the exact sum of their terms,
// so equal terms (tie groups, as f16 logits give) cut where the twin's double
// sum does.
// `precise`: the compiler must not simplify (t - s) - y to 0.
void ksum_add(inout vec2 acc, float x) {
    precise float y = x - acc.y;
    precise float t = acc.x + y;
    precise float c = (t - acc.x) - y;
    acc = vec2(t, c);
}

#endif
