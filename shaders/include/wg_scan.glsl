// Workgroup-wide sums and prefix sums over shared memory, for the tail's
// chain (tail.glsl) and its draw (collect_tail.glsl): each invocation brings
// one partial (the sum of its own block of candidates), the first SCAN_GROUPS
// invocations add them in groups of SCAN_G, then every invocation adds the
// groups before its own and its group's partials before its own. Three
// barriers whatever the workgroup size (a tree would take two per level),
// and at most SCAN_GROUPS + SCAN_G - 2 additions per invocation. Portable: no
// subgroup operations, so correct whatever the subgroup size. Every call must
// be reached by the whole workgroup; each ends with a barrier, so that its
// shared arrays may be reused right after.
//
// The u64 forms are exact (40-bit fixed-point masses, u64.glsl): their result
// does not depend on the grouping, hence not on the workgroup size. The float
// form adds compensated (ksum.glsl) partials in one fixed order per
// workgroup size.
#ifndef SIEVE_WG_SCAN_GLSL
#define SIEVE_WG_SCAN_GLSL

#include "u64.glsl"
#include "ksum.glsl"

const uint SCAN_G = 16u;
const uint SCAN_GROUPS = (WG + SCAN_G - 1u) / SCAN_G;
shared uvec2 s_scan[WG];
shared uvec2 s_scan_grp[SCAN_GROUPS];
shared uint s_first;  // wg_first_*: the smallest index offered

// Invocation t's block of [0, n): contiguous, in invocation order (what a
// prefix sum over the invocations needs).
void wg_block(uint n, out uint first, out uint end) {
    uint per = (n + WG - 1u) / WG;
    first = min(gl_LocalInvocationID.x * per, n);
    end = min(first + per, n);
}

// The group sums, after the partials are in s_scan.
void wg_group_sums() {
    uint t = gl_LocalInvocationID.x;
    barrier();
    if (t < SCAN_GROUPS) {
        uvec2 g = uvec2(0u);
        for (uint b = t * SCAN_G; b < min(t * SCAN_G + SCAN_G, WG); ++b) g = u64_add(g, s_scan[b]);
        s_scan_grp[t] = g;
    }
    barrier();
}

// The sum of every invocation's `part` before this one (invocation order)
// and, in `total`, of all of them. Exact.
uvec2 wg_exclusive_u64(uvec2 part, out uvec2 total) {
    uint t = gl_LocalInvocationID.x;
    s_scan[t] = part;
    wg_group_sums();
    uint mine = t / SCAN_G;
    uvec2 excl = uvec2(0u), all = uvec2(0u);
    for (uint g = 0u; g < SCAN_GROUPS; ++g) {
        uvec2 x = s_scan_grp[g];
        if (g < mine) excl = u64_add(excl, x);
        all = u64_add(all, x);
    }
    for (uint b = mine * SCAN_G; b < t; ++b) excl = u64_add(excl, s_scan[b]);
    barrier();
    total = all;
    return excl;
}

// The workgroup's sum of `part`. Exact.
uvec2 wg_sum_u64(uvec2 part) {
    s_scan[gl_LocalInvocationID.x] = part;
    wg_group_sums();
    uvec2 all = uvec2(0u);
    for (uint g = 0u; g < SCAN_GROUPS; ++g) all = u64_add(all, s_scan_grp[g]);
    barrier();
    return all;
}

// The workgroup's sum of compensated partials (ksum_add pairs: sum,
// compensation), in invocation order.
void ksum_add_pair(inout vec2 acc, uvec2 bits) {
    ksum_add(acc, uintBitsToFloat(bits.x));
    ksum_add(acc, -uintBitsToFloat(bits.y));
}

float wg_sum_ksum(vec2 part) {
    uint t = gl_LocalInvocationID.x;
    s_scan[t] = floatBitsToUint(part);
    barrier();
    if (t < SCAN_GROUPS) {
        vec2 g = vec2(0.0);
        for (uint b = t * SCAN_G; b < min(t * SCAN_G + SCAN_G, WG); ++b) ksum_add_pair(g, s_scan[b]);
        s_scan_grp[t] = floatBitsToUint(g);
    }
    barrier();
    vec2 all = vec2(0.0);
    for (uint g = 0u; g < SCAN_GROUPS; ++g) ksum_add_pair(all, s_scan_grp[g]);
    barrier();
    return all.x - all.y;
}

// The smallest index any invocation offers (`none` when none does):
// wg_first_begin, then wg_first_offer by any invocation, then wg_first_end.
void wg_first_begin(uint none) {
    if (gl_LocalInvocationID.x == 0u) s_first = none;
    barrier();
}

void wg_first_offer(uint i) { atomicMin(s_first, i); }

uint wg_first_end() {
    barrier();
    uint f = s_first;
    barrier();
    return f;
}

#endif
