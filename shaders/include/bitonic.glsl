// Bitonic sort of (key, id) pairs in shared memory into canonical order: keys
// descending, ties by lower id. Sizes are the same in the whole workgroup
// (every barrier is reached by every invocation): a power of two <= CAP for
// bitonic_sort_canonical, any n <= CAP for sort_prefix.
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
