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

#ifdef SIEVE_SUBGROUP
// Subgroup arithmetic inside each subgroup, then one invocation combines the
// subgroups in subgroup order (integers: exact, so the result is the same
// whatever the subgroup size). The engine uses this variant only where the
// subgroup size is at least 4, so WG / 4 entries hold every subgroup.
shared uint red_sub[7][WG / 4u];

RowStats wg_reduce_row_stats(RowStats s) {
    uint mk = subgroupMax(s.max_key);
    uint am = subgroupMin(s.max_key == mk ? s.argmax : 0xFFFFFFFFu);
    uint mn = subgroupMin(s.min_finite_key);
    uint bad = subgroupAdd(s.bad);
    uint fb = subgroupMin(s.first_bad);
    uint fin = subgroupAdd(s.finite);
    uint of = subgroupAdd(s.overflow);
    if (subgroupElect()) {
        uint g = gl_SubgroupID;
        red_sub[0][g] = mk;
        red_sub[1][g] = am;
        red_sub[2][g] = mn;
        red_sub[3][g] = bad;
        red_sub[4][g] = fb;
        red_sub[5][g] = fin;
        red_sub[6][g] = of;
    }
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        RowStats r = row_stats_empty();
        for (uint g = 0u; g < gl_NumSubgroups; ++g)
            r = row_stats_combine(r, RowStats(red_sub[0][g], red_sub[1][g], red_sub[2][g], red_sub[3][g],
                                              red_sub[4][g], red_sub[5][g], red_sub[6][g]));
        red_sub[0][0] = r.max_key;
        red_sub[1][0] = r.argmax;
        red_sub[2][0] = r.min_finite_key;
        red_sub[3][0] = r.bad;
        red_sub[4][0] = r.first_bad;
        red_sub[5][0] = r.finite;
        red_sub[6][0] = r.overflow;
    }
    barrier();
    RowStats r = RowStats(red_sub[0][0], red_sub[1][0], red_sub[2][0], red_sub[3][0], red_sub[4][0], red_sub[5][0],
                          red_sub[6][0]);
    barrier();  // red_sub may be reused right after
    return r;
}

#else
shared uint red_stats[7][WG / 2u];

RowStats wg_reduce_row_stats(RowStats s) {
    uint t = gl_LocalInvocationID.x;
    for (uint half_size = WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (t >= half_size && t < 2u * half_size) {
            uint j = t - half_size;
            red_stats[0][j] = s.max_key;
            red_stats[1][j] = s.argmax;
            red_stats[2][j] = s.min_finite_key;
            red_stats[3][j] = s.bad;
            red_stats[4][j] = s.first_bad;
            red_stats[5][j] = s.finite;
            red_stats[6][j] = s.overflow;
        }
        barrier();
        if (t < half_size) {
            RowStats o = RowStats(red_stats[0][t], red_stats[1][t], red_stats[2][t], red_stats[3][t],
                                  red_stats[4][t], red_stats[5][t], red_stats[6][t]);
            s = row_stats_combine(s, o);
        }
        barrier();
    }
    // Invocation 0 holds the result; hand it to everyone.
    if (t == 0u) {
        red_stats[0][0] = s.max_key;
        red_stats[1][0] = s.argmax;
        red_stats[2][0] = s.min_finite_key;
        red_stats[3][0] = s.bad;
        red_stats[4][0] = s.first_bad;
        red_stats[5][0] = s.finite;
        red_stats[6][0] = s.overflow;
    }
    barrier();
    RowStats r = RowStats(red_stats[0][0], red_stats[1][0], red_stats[2][0], red_stats[3][0], red_stats[4][0],
                          red_stats[5][0], red_stats[6][0]);
    barrier();  // red_stats may be reused right after
    return r;
}

#endif  // SIEVE_SUBGROUP

#endif
