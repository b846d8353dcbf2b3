// The row statistics every path needs, accumulated per invocation and reduced
// over the workgroup in one shared-memory tree (portable: no subgroup
// operations, so correct whatever the subgroup size). Every call of
// wg_reduce_row_stats must be reached by the whole workgroup.
#ifndef SIEVE_REDUCE_GLSL
#define SIEVE_REDUCE_GLSL

struct RowStats {
    uint max_key;         // the largest key of a scaled logit...
    uint argmax;          // ...and the lowest id holding it (canonical first)
    uint min_finite_key;
    uint bad;             // NaN or +Inf logits
    uint first_bad;
    uint finite;          // finite scaled logits
    uint overflow;        // finite logits the temperature division made infinite
};

RowStats row_stats_empty() {
    return RowStats(0u, 0xFFFFFFFFu, 0xFFFFFFFFu, 0u, 0xFFFFFFFFu, 0u, 0u);
}

// One logit f (id i, scaled x). Ids must grow within an invocation.
void row_stats_add(inout RowStats s, float f, float x, uint i) {
    if (isnan(f) || (isinf(f) && f > 0.0)) {
        s.bad += 1u;
        s.first_bad = min(s.first_bad, i);
        return;
    }
    if (!isinf(f) && isinf(x)) s.overflow += 1u;
    uint k = sieve_key(x);
    if (k > s.max_key) {  // strictly greater: the first maximal id stays
        s.max_key = k;
        s.argmax = i;
    }
    if (!isinf(x)) {
        s.min_finite_key = min(s.min_finite_key, k);
        s.finite += 1u;
    }
}

RowStats row_stats_combine(RowStats a, RowStats b) {
    RowStats r;
    bool take_b = b.max_key > a.max_key || (b.max_key == a.max_key && b.argmax < a.argmax);
    r.max_key = take_b ? b.max_key : a.max_key;
    r.argmax = take_b ? b.argmax : a.argmax;
    r.min_finite_key = min(a.min_finite_key, b.min_finite_key);
    r.bad = a.bad + b.bad;
    r.first_bad = min(a.first_bad, b.first_bad);
    r.finite = a.finite + b.finite;
    r.overflow = a.overflow + b.overflow;
    return r;
}

// Partial results in shared memory: one slot per subgroup (subgroup variant)
// or per invocation of the lower half (portable tree).
#ifdef SIEVE_SUBGROUP
const uint RED_SLOTS = WG / 4u;  // the engine uses this variant only with subgroups of >= 4
#else
const uint RED_SLOTS = WG / 2u;
#endif
shared uint red_stats[7][RED_SLOTS];

void red_store(uint slot, RowStats s) {
    red_stats[0][slot] = s.max_key;
    red_stats[1][slot] = s.argmax;
    red_stats[2][slot] = s.min_finite_key;
    red_stats[3][slot] = s.bad;
    red_stats[4][slot] = s.first_bad;
    red_stats[5][slot] = s.finite;
    red_stats[6][slot] = s.overflow;
}

RowStats red_load(uint slot) {
    return RowStats(red_stats[0][slot], red_stats[1][slot], red_stats[2][slot], red_stats[3][slot],
                    red_stats[4][slot], red_stats[5][slot], red_stats[6][slot]);
}

// Every invocation gets the workgroup's result (slot 0 after the reduction).
RowStats red_broadcast(RowStats s) {
    if (gl_LocalInvocationID.x == 0u) red_store(0u, s);
    barrier();
    RowStats r = red_load(0u);
    barrier();  // red_stats may be reused right after
    return r;
}

#ifdef SIEVE_SUBGROUP
// Subgroup arithmetic inside each subgroup, then one invocation combines the
// subgroups in subgroup order (integers: exact, so the result is the same
// whatever the subgroup size).
RowStats wg_reduce_row_stats(RowStats s) {
    uint mk = subgroupMax(s.max_key);
    RowStats sub = RowStats(mk, subgroupMin(s.max_key == mk ? s.argmax : 0xFFFFFFFFu),
                            subgroupMin(s.min_finite_key), subgroupAdd(s.bad), subgroupMin(s.first_bad),
                            subgroupAdd(s.finite), subgroupAdd(s.overflow));
    if (subgroupElect()) red_store(gl_SubgroupID, sub);
    barrier();
    RowStats r = row_stats_empty();
    if (gl_LocalInvocationID.x == 0u)
        for (uint g = 0u; g < gl_NumSubgroups; ++g) r = row_stats_combine(r, red_load(g));
    barrier();
    return red_broadcast(r);
}

#else
// A tree: each step the upper half hands its partial to the lower half.
RowStats wg_reduce_row_stats(RowStats s) {
    uint t = gl_LocalInvocationID.x;
    for (uint half_size = WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) red_store(t - half_size, s);
        barrier();
        if (t < half_size) s = row_stats_combine(s, red_load(t));
        barrier();
    }
    return red_broadcast(s);
}
#endif  // SIEVE_SUBGROUP

#endif
