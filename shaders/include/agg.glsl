// Full-row aggregates the truncating samplers need while the candidate buffer
// holds only the top of the row: mean and variance of the finite logits
// (top-n-sigma) and the softmax mass at one temperature (top-p, XTC and the
// draw before any truncation). Accumulated per invocation, combined in a fixed
// order (deterministic), only for rows whose chain needs them.
#ifndef SIEVE_AGG_GLSL
#define SIEVE_AGG_GLSL

struct Agg {
    float count;  // finite logits
    float mean;
    float m2;     // sum of squared deviations from the mean
    float mmax;   // running maximum of the scaled logits (mass reference)
    float msum;   // sum of exp(x - mmax)
};

Agg agg_empty() { return Agg(0.0, 0.0, 0.0, NEG_INF, 0.0); }

// Which aggregates a row's chunks sum (none: sums false), and the
// temperature its mass is summed at.
struct AggWant {
    bool sums;
    bool sigma;
    bool mass;
    float t;
};

// Welford's update for mean/variance; the online softmax sum.
void agg_add(inout Agg a, float l, float x, bool sigma, bool mass) {
    if (sigma) {
        a.count += 1.0;
        float d = l - a.mean;
        a.mean += d / a.count;
        a.m2 += d * (l - a.mean);
    }
    if (mass) {
        if (x > a.mmax) {
            a.msum = a.msum * exp(a.mmax - x) + 1.0;
            a.mmax = x;
        } else {
            a.msum += exp(x - a.mmax);
        }
    }
}

// Four logits at once (the register picks' vec4s, collect_chunk.glsl), the
// finite ones only: the quad's own count, mean and spread joined to the
// running ones by Chan et al.'s rule, and the online softmax sum rescaled at
// most once for the quad. Two divisions and five exponentials a quad for
// what agg_add takes a division and (a CPU device running both sides of its
// branch) two exponentials a logit for (the division by the temperature is
// per logit in both).
void agg_add4(inout Agg a, vec4 l, float agg_t, bool sigma, bool mass) {
    bvec4 finite = not(bvec4(uvec4(isinf(l)) | uvec4(isnan(l))));
    vec4 w = vec4(finite);
    if (sigma) {
        float n = w.x + w.y + w.z + w.w;
        vec4 lf = mix(vec4(0.0), l, finite);
        float mean = n > 0.0 ? (lf.x + lf.y + lf.z + lf.w) / n : 0.0;
        vec4 dq = (lf - mean) * w;
        float count = a.count + n;
        float d = mean - a.mean;
        float share = count > 0.0 ? n / count : 0.0;
        a.m2 += dot(dq, dq) + d * d * a.count * share;
        a.mean += d * share;
        a.count = count;
    }
    if (mass) {
        vec4 x = mix(vec4(NEG_INF), l / agg_t, finite);
        float top = max(a.mmax, max(max(x.x, x.y), max(x.z, x.w)));
        vec4 e = exp(x - top);
        float sum = a.msum * exp(a.mmax - top) + ((e.x + e.y) + (e.z + e.w));
        bool any = !isinf(top);  // some finite logit so far (else top - top is NaN)
        a.msum = any ? sum : a.msum;
        a.mmax = any ? top : a.mmax;
    }
}

// Chan et al.'s pairwise combination.
Agg agg_combine(Agg a, Agg b) {
    Agg r;
    r.count = a.count + b.count;
    if (r.count > 0.0) {
        float d = b.mean - a.mean;
        r.mean = a.mean + d * (b.count / r.count);
        r.m2 = a.m2 + b.m2 + d * d * (a.count * b.count / r.count);
    } else {
        r.mean = 0.0;
        r.m2 = 0.0;
    }
    r.mmax = max(a.mmax, b.mmax);
    r.msum = (a.msum > 0.0 ? a.msum * exp(a.mmax - r.mmax) : 0.0) + (b.msum > 0.0 ? b.msum * exp(b.mmax - r.mmax) : 0.0);
    return r;
}

shared float red_agg[5][WG / 2u];

// A shared-memory tree in a fixed order; every invocation gets the result.
Agg wg_reduce_agg(Agg a) {
    uint t = gl_LocalInvocationID.x;
    for (uint half_size = WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) {
            uint s = t - half_size;
            red_agg[0][s] = a.count;
            red_agg[1][s] = a.mean;
            red_agg[2][s] = a.m2;
            red_agg[3][s] = a.mmax;
            red_agg[4][s] = a.msum;
        }
        barrier();
        if (t < half_size) a = agg_combine(a, Agg(red_agg[0][t], red_agg[1][t], red_agg[2][t], red_agg[3][t], red_agg[4][t]));
        barrier();
    }
    if (t == 0u) {
        red_agg[0][0] = a.count;
        red_agg[1][0] = a.mean;
        red_agg[2][0] = a.m2;
        red_agg[3][0] = a.mmax;
        red_agg[4][0] = a.msum;
    }
    barrier();
    Agg r = Agg(red_agg[0][0], red_agg[1][0], red_agg[2][0], red_agg[3][0], red_agg[4][0]);
    barrier();
    return r;
}

#endif
