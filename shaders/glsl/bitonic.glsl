// Bitonic sort of (key, id) pairs in shared memory into canonical order: keys
// descending, ties by lower id. n must be a power of two <= CAP and the same in
// the whole workgroup; every barrier is reached by every invocation.
#ifndef SIEVE_BITONIC_GLSL
#define SIEVE_BITONIC_GLSL

shared uint c_key[CAP];
shared uint c_id[CAP];

// true when (ka, ia) comes after (kb, ib) in canonical order
bool canonical_after(uint ka, uint ia, uint kb, uint ib) { return ka < kb || (ka == kb && ia > ib); }

void bitonic_sort_canonical(uint n) {
    uint t = gl_LocalInvocationID.x;
    for (uint size = 2u; size <= n; size <<= 1u) {
        for (uint stride = size >> 1u; stride > 0u; stride >>= 1u) {
            for (uint i = t; i < n / 2u; i += WG) {
                uint a = 2u * i - (i & (stride - 1u));  // low element of the pair
                uint b = a + stride;
                bool ascending_block = (a & size) == 0u;
                uint ka = c_key[a], ia = c_id[a], kb = c_key[b], ib = c_id[b];
                bool swap = ascending_block ? canonical_after(ka, ia, kb, ib) : canonical_after(kb, ib, ka, ia);
                if (swap) {
                    c_key[a] = kb;
                    c_id[a] = ib;
                    c_key[b] = ka;
                    c_id[b] = ia;
                }
            }
            barrier();
        }
    }
}

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
    bitonic_sort_canonical(m);
}

#endif
