#version 450
#extension GL_GOOGLE_include_directive : require
// One radix level's decision (one workgroup per row): sums the chunk histograms
// in chunk order (exact integers, so the result is the same on every run) and
// finds the digit where the cumulative mass, taken in canonical order (keys
// descending), crosses the draw target. Level 0 also sets the row's status, its
// total mass and the target floor(u32 * total / 2^32).
#include "common.glsl"
#include "u64.glsl"
#include "row.glsl"

shared uint s_count[DIGITS];
shared uvec2 s_mass[DIGITS];

void main() {
    uint row = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;

    uint prefix, lo, hi;
    if (pc.level == 0u) {
        RowStats s = merge_chunk_stats(row);
        uint status = row_status(s);
        bool greedy = row_greedy(row);
        if (t == 0u) {
            row_state[o + R_STATUS] = status;
            row_state[o + R_MAX_KEY] = s.max_key;
            row_state[o + R_ARGMAX] = s.argmax;
            row_state[o + R_FIRST_BAD] = s.first_bad;
            row_state[o + R_PASSES] = 1u;
            row_state[o + R_CAND_COUNT] = 0u;
            if (status != STATUS_OK || greedy) row_state[o + R_PHASE] = PHASE_DONE;
        }
        if (status != STATUS_OK || greedy) return;
        prefix = s.max_key;
        lo = first_level_lo(s);
        hi = lo + 8u;
    } else {
        if (row_state[o + R_PHASE] != PHASE_ACTIVE) return;
        prefix = row_state[o + R_PREFIX];
        lo = row_state[o + R_LO];
        hi = row_state[o + R_HI];
    }

    for (uint d = t; d < DIGITS; d += WG) {
        uint count = 0u;
        uvec2 mass = uvec2(0u);
        for (uint c = 0u; c < pc.n_chunks; ++c) {
            uint h = ((row * pc.n_chunks + c) * DIGITS + d) * 3u;
            count += histograms[h + 0u];
            mass = u64_add(mass, uvec2(histograms[h + 1u], histograms[h + 2u]));
        }
        s_count[d] = count;
        s_mass[d] = mass;
    }
    barrier();

    if (t == 0u) {
        uvec2 target;
        if (pc.level == 0u) {
            uvec2 total = uvec2(0u);
            for (uint d = 0u; d < DIGITS; ++d) total = u64_add(total, s_mass[d]);
            row_state[o + R_TOTAL_LO] = total.x;
            row_state[o + R_TOTAL_HI] = total.y;
            target = u64_mul_u32_shr32(total, row_uniform(row));
        } else {
            target = uvec2(row_state[o + R_TARGET_LO], row_state[o + R_TARGET_HI]);
        }
        // Walk the digits from the largest keys down; target < total, so a
        // digit with positive mass always takes it.
        uint chosen = 0u;
        for (int d = int(DIGITS) - 1; d >= 0; --d) {
            uvec2 m = s_mass[d];
            if (u64_less(target, m)) {
                chosen = uint(d);
                break;
            }
            target = u64_sub(target, m);
        }
        uint count = s_count[chosen];
        prefix = (hi >= 32u ? 0u : (prefix >> hi) << hi) | (chosen << lo);
        row_state[o + R_PREFIX] = prefix;
        row_state[o + R_TARGET_LO] = target.x;
        row_state[o + R_TARGET_HI] = target.y;
        row_state[o + R_BUCKET_COUNT] = count;
        row_state[o + R_PASSES] += 1u;
        row_state[o + R_LO] = lo;
        row_state[o + R_HI] = hi;
        if (count <= CAP) {
            row_state[o + R_PHASE] = PHASE_GATHER;
        } else if (lo == 0u) {
            row_state[o + R_PHASE] = PHASE_TIE;  // > CAP members share one exact key
        } else {
            row_state[o + R_PHASE] = PHASE_ACTIVE;
            row_state[o + R_HI] = lo;
            row_state[o + R_LO] = lo >= 8u ? lo - 8u : 0u;
        }
    }
}
