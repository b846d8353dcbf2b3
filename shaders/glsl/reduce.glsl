// Workgroup reductions in shared memory. Portable: no subgroup operations, so
// they are correct whatever the subgroup size (8 on lavapipe, 16 on Mali, 64 on
// Adreno/AMD...). Every call must be reached by the whole workgroup.
#ifndef SIEVE_REDUCE_GLSL
#define SIEVE_REDUCE_GLSL

shared uint red_a[WG];
shared uint red_b[WG];

// The maximal key with the lowest id among equals (canonical order's first).
uvec2 wg_reduce_argmax(uint key, uint id) {
    uint t = gl_LocalInvocationID.x;
    red_a[t] = key;
    red_b[t] = id;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            uint k2 = red_a[t + s], i2 = red_b[t + s];
            if (k2 > red_a[t] || (k2 == red_a[t] && i2 < red_b[t])) {
                red_a[t] = k2;
                red_b[t] = i2;
            }
        }
        barrier();
    }
    uvec2 r = uvec2(red_a[0], red_b[0]);
    barrier();  // red_* may be reused right after
    return r;
}

// (min of a, sum of b)
uvec2 wg_reduce_min_sum(uint a, uint b) {
    uint t = gl_LocalInvocationID.x;
    red_a[t] = a;
    red_b[t] = b;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            red_a[t] = min(red_a[t], red_a[t + s]);
            red_b[t] += red_b[t + s];
        }
        barrier();
    }
    uvec2 r = uvec2(red_a[0], red_b[0]);
    barrier();
    return r;
}

#endif
