// The draw over the wide passes' copy of the buffer (wide.glsl:
// wide_buffer_at, key at the draw's temperatures and id a pair) by exact
// 40-bit masses, by the whole workgroup: each invocation sums its block of
// the entries (wg_block), a prefix sum over the blocks (wg_scan.glsl) places
// the target, and only the block holding it is walked. The same entry as a
// walk over the whole buffer on one invocation (the sums are exact): the
// first, in canonical order, whose cumulative mass exceeds the target; a
// zero mass is never drawn. wide_histogram (a deferred row's cut inside the
// buffer) and wide_gather (the draw's first stretch) take it; wide_histogram
// sums a deferred top-p's keys (its search for the cut) the same way.
#ifndef SIEVE_WIDE_DRAW_GLSL
#define SIEVE_WIDE_DRAW_GLSL

#include "u64.glsl"
#include "wg_scan.glsl"
#include "wide.glsl"

shared uint s_pick_hit, s_pick_token;
shared uvec2 s_pick_q;

// Entry i's exact mass against the maximum `ref`, its key `stride` words
// after entry i - 1's from `at`: the buffer's (key, id) pairs (2, keys at
// the draw's temperatures: wide_buffer_at) or a deferred top-p's keys (1, at
// the cut's: wide_cut_keys_at).
uvec2 wide_entry_mass(uint at, uint stride, uint i, float ref) {
    return sieve_mass(sieve_key_value(wide[at + stride * i]), ref);
}

// The masses of entries [0, n): this invocation's block's (part), the blocks'
// before it (before) and all of them (returned, in every invocation).
uvec2 wide_block_sums(uint at, uint stride, uint n, float ref, out uvec2 before, out uvec2 part) {
    uint first, end;
    wg_block(n, first, end);
    part = uvec2(0u);
    for (uint i = first; i < end; ++i) part = u64_add(part, wide_entry_mass(at, stride, i, ref));
    uvec2 total;
    before = wg_exclusive_u64(part, total);
    return total;
}

// The buffer's entry where tg falls (before, part: wide_block_sums' over the
// buffer's pairs), in every invocation's s_pick_hit (0: tg is past the
// entries), s_pick_token and s_pick_q (its mass).
void buffer_draw_pick(uint buf, uint n, float ref, uvec2 tg, uvec2 before, uvec2 part) {
    if (gl_LocalInvocationID.x == 0u) s_pick_hit = 0u;
    barrier();
    if (!u64_less(tg, before) && u64_less(tg, u64_add(before, part))) {  // one invocation's block
        uint first, end;
        wg_block(n, first, end);
        uvec2 r = u64_sub(tg, before);
        for (uint i = first; i < end; ++i) {
            uvec2 q = wide_entry_mass(buf, 2u, i, ref);
            if (u64_less(r, q)) {
                s_pick_token = wide[buf + 2u * i + 1u];
                s_pick_q = q;
                s_pick_hit = 1u;
                break;
            }
            r = u64_sub(r, q);
        }
    }
    barrier();
}

#endif
