// Sorts of (key, id) pairs in shared memory into canonical order: keys
// descending, ties by lower id: bitonic, and by merge paths for a CPU
// device's radix chunks. Sizes are the same in the whole workgroup
// (every barrier is reached by every invocation): a power of two <= CAP for
// bitonic_sort_canonical, any n <= CAP for sort_prefix and merge_sort_prefix.
#ifndef SIEVE_BITONIC_GLSL
#define SIEVE_BITONIC_GLSL

shared uint c_key[CAP];
shared uint c_id[CAP];

// true when (ka, ia) comes after (kb, ib) in canonical order
bool canonical_after(uint ka, uint ia, uint kb, uint ib) { return ka < kb || (ka == kb && ia > ib); }

// Places the earlier of c[a], c[b] (a < b) in canonical order at a.
void order_pair(uint a, uint b) {
    uint ka = c_key[a], ia = c_id[a], kb = c_key[b], ib = c_id[b];
    if (canonical_after(ka, ia, kb, ib)) {
        c_key[a] = kb;
        c_id[a] = ib;
        c_key[b] = ka;
        c_id[b] = ia;
    }
}

// Sorts c[0, m) (m a power of two) whose entries from n on sort last: every
// comparator puts the earlier entry at the lower index (each merge starts by
// comparing a block's halves mirrored, then halves them), so an entry at n
// or beyond never moves and its comparators are skipped: a sort of n
// entries padded to m does about n / m of the full sort's shared accesses
// (on a CPU device each one a scalar load per lane). The barriers are the
// full sort's.
void bitonic_sort_prefix(uint n, uint m) {
    uint t = gl_LocalInvocationID.x;
    for (uint size = 2u; size <= m; size <<= 1u) {
        uint half_size = size >> 1u;
        for (uint i = t; i < m / 2u; i += WG) {
            uint j = i & (half_size - 1u);
            uint a = 2u * (i - j) + j;      // in the block of `size` holding pair i
            uint b = a + size - 1u - 2u * j;  // its mirror in the block
            if (b < n) order_pair(a, b);
        }
        barrier();
        for (uint stride = half_size >> 1u; stride > 0u; stride >>= 1u) {
            for (uint i = t; i < m / 2u; i += WG) {
                uint a = 2u * i - (i & (stride - 1u));  // low element of the pair
                uint b = a + stride;
                if (b < n) order_pair(a, b);
            }
            barrier();
        }
    }
}

// A CPU device sorts a radix chunk's entries (collect_chunk.glsl: top-k in
// the hundreds to thousands) by merge paths. lavapipe runs a workgroup's SIMD
// batches in turn up to each barrier and every shared access of every lane
// as a scalar one: the bitonic sort of 2048 entries is 66 barriers and
// 66 x 8 compare-exchanges an invocation, about half the chunk's time at
// top-k 1000. Here each invocation sorts its own segment of ceil(n / WG)
// entries by insertion, then log2 rounds merge pairs of runs: in each, an
// invocation finds where its segment of the output starts in the two runs
// (the co-rank, a binary search) and merges its segment into registers,
// which it writes back after a barrier: 2 barriers a round, a few segment
// lengths of shared accesses an invocation. The order is total, so the
// result is the bitonic sort's. Only there: behind every sort_prefix (sorts
// of 512 or fewer kept bitonic), its code slowed lavapipe's default chain
// from 476 to 549 us, three alternating runs.
const uint SORT_SEG = (CAP + WG - 1u) / WG;

// (key, id) of c[i], and whether x comes before y.
uvec2 c_entry(uint i) { return uvec2(c_key[i], c_id[i]); }
bool entry_before(uvec2 x, uvec2 y) { return canonical_after(y.x, y.y, x.x, x.y); }

// A merge round's outputs of this invocation, held until every invocation
// has read the runs (the round writes over them).
uvec2 merge_held[SORT_SEG];

// Outputs [d, d + count) of the merge of the sorted runs c[a0, a0 + la) and
// c[b0, b0 + lb), into merge_held from h on: the co-rank (how many of the
// first d outputs come from A: the smallest i whose entry comes after B's
// entry d - i - 1) by a binary search, then `count` steps of the merge.
void merge_segment(uint a0, uint la, uint b0, uint lb, uint d, uint count, uint h) {
    uint lo = d > lb ? d - lb : 0u, hi = min(d, la);
    while (lo < hi) {
        uint mid = (lo + hi) >> 1u;
        if (entry_before(c_entry(a0 + mid), c_entry(b0 + d - mid - 1u))) lo = mid + 1u;
        else hi = mid;
    }
    uint i = lo, j = d - lo;
    uvec2 x = i < la ? c_entry(a0 + i) : uvec2(0u), y = j < lb ? c_entry(b0 + j) : uvec2(0u);
    for (uint q = 0u; q < count; ++q) {
        bool from_a = j >= lb || (i < la && entry_before(x, y));
        merge_held[h + q] = from_a ? x : y;
        if (from_a) {
            ++i;
            if (i < la) x = c_entry(a0 + i);
        } else {
            ++j;
            if (j < lb) y = c_entry(b0 + j);
        }
    }
}

// This invocation's held outputs to c[first, first + count).
// end_merge_round: once every invocation has read the runs (a barrier),
// store_merge_held; ends with a barrier. The whole workgroup.
void store_merge_held(uint first, uint count) {
    for (uint q = 0u; q < count; ++q) {
        c_key[first + q] = merge_held[q].x;
        c_id[first + q] = merge_held[q].y;
    }
}

void end_merge_round(uint first, uint count) {
    barrier();
    store_merge_held(first, count);
    barrier();
}

void merge_sort_prefix(uint n) {
    uint t = gl_LocalInvocationID.x;
    uint seg = (n + WG - 1u) / WG;  // <= SORT_SEG
    uint first = min(t * seg, n), stop = min(first + seg, n);
    for (uint i = first + 1u; i < stop; ++i) {
        uvec2 x = c_entry(i);
        uint j = i;
        for (; j > first && entry_before(x, c_entry(j - 1u)); --j) {
            c_key[j] = c_key[j - 1u];
            c_id[j] = c_id[j - 1u];
        }
        c_key[j] = x.x;
        c_id[j] = x.y;
    }
    barrier();
    // Runs of w entries, merged in pairs: an invocation's outputs
    // [first, stop) lie in one pair (2w is a multiple of seg, and first of
    // seg).
    for (uint w = max(seg, 1u); w < n; w <<= 1u) {  // uniform
        uint a0 = first / (2u * w) * (2u * w);
        uint la = min(w, n - min(a0, n)), b0 = a0 + la, lb = min(w, n - b0);
        merge_segment(a0, la, b0, lb, first - a0, stop - first, 0u);
        end_merge_round(first, stop - first);
    }
}

void bitonic_sort_canonical(uint n) { bitonic_sort_prefix(n, n); }

uint next_pow2(uint n) { return n <= 1u ? 1u : 1u << uint(findMSB(n - 1u) + 1); }

// Sorts c[0, n) canonically, padded to a power of two (padding sorts last: key
// 0 is below -inf's). The whole workgroup calls it; it ends with a barrier.
void sort_prefix(uint n) {
    uint m = next_pow2(max(n, 1u));
    for (uint i = n + gl_LocalInvocationID.x; i < m; i += WG) {
        c_key[i] = 0u;
        c_id[i] = 0xFFFFFFFFu;
    }
    barrier();
    bitonic_sort_prefix(n, m);
}

#endif
