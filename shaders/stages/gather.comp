#version 450
#extension GL_GOOGLE_include_directive : require
// Copies the members of the chosen bin (at most CAP) into the row's candidate
// buffer (one workgroup per row chunk); their order there does not matter. The
// last workgroup of the row to finish draws the token (finalize.glsl).
#include "common.glsl"
#include "row.glsl"
#include "arrive.glsl"
#include "finalize.glsl"
#include "stretch.glsl"
#include "logits4.glsl"
#include "raw_range.glsl"

// Members an invocation holds before writing them (main): CPU devices only,
// where a local array indexed per lane is cheap (common.glsl: INDEXED_BINS).
// A bin of hundreds of members gives most invocations a few; 8 measured as
// fast as 32, and rows with more take the second read, which the suite then
// runs.
const uint LOCAL_TAKES = INDEXED_BINS != 0u ? 8u : 0u;

// The levels' raw floor (row.glsl: level_floor), read once by main.
float g_floor;

// A logit f of the row is in the chosen bin (finite, key in [lo, hi], at or
// above the levels' floor); its key.
bool member(float f, float scale, uint lo, uint hi, out uint key) {
    float x = scaled_logit(f, scale);
    key = sieve_key(x);
    return !isinf(x) && key >= lo && key <= hi && f >= g_floor;
}

bool bin_member(uint row, uint i, float scale, uint lo, uint hi, out uint key) {
    return member(row_logit(row, i), scale, lo, hi, key);
}

// Candidate `slot` of the row, when the buffer has it.
void put_candidate(uint row, uint slot, uint key, uint i) {
    if (slot < CAP) {
        candidates[(row * CAP + slot) * 2u + 0u] = key;
        candidates[(row * CAP + slot) * 2u + 1u] = i;
    }
}

// A GPU's members by their raw keys (raw_range.glsl), read once by main:
// whether they are known, and their range.
bool g_raw;
uint g_raw_lo, g_raw_hi;

// member(), tested first by the logit's own key where the raw range is
// known: only the range's logits are divided.
bool raw_member(float f, float scale, uint lo, uint hi, out uint key) {
    key = 0u;
    if (g_raw) {
        uint k = sieve_key(f);
        if (k < g_raw_lo || k > g_raw_hi) return false;
    }
    return member(f, scale, lo, hi, key);
}

// The members among logits i0 .. i0 + 3 (values f4; those at or past end are
// not), each to its candidate slot (an atomic a member: a GPU's).
void put_members(uint row, vec4 f4, uint i0, uint end, float scale, uint lo, uint hi) {
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        uint k;
        if (i0 + c < end && raw_member(f4[c], scale, lo, hi, k))
            put_candidate(row, atomicAdd(row_state[row * ROW_STRIDE + R_CAND_COUNT], 1u), k, i0 + c);
    }
}

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    bind_row(row);
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint phase = row_state[o + R_PHASE];
    if (phase != PHASE_GATHER && phase != PHASE_TIE) return;  // answered already (failed, greedy)
    g_floor = level_floor(row);

    if (phase == PHASE_GATHER) {
        uint lo = row_state[o + R_KEY_LO];
        uint hi = row_state[o + R_KEY_HI];
        float scale = row_scale(row);
        uint begin = chunk * pc.chunk_size;
        uint end = min(begin + pc.chunk_size, pc.vocab);
        if (INDEXED_BINS == 0u) {
            // A GPU: an atomic per member, after the trip's four quads are
            // loaded (logits4.glsl); in long chunks members known by their
            // raw keys where the quotients are corrected (raw_range_pays).
            g_raw = raw_range_pays(pc.chunk_size) && raw_key_range(scale, lo, hi, g_raw_lo, g_raw_hi);
#define GATHER_QUAD(F4, I0) put_members(row, F4, I0, end, scale, lo, hi);
            FOR_CHUNK_QUADS4(row, begin, end, GATHER_QUAD)
        } else {
            // A CPU device runs the atomic under a lane mask for every logit,
            // a loop over the lanes each time. Instead each invocation reads a
            // contiguous stretch of quads (stretch.glsl, logits4.glsl), writes
            // every logit's id into its local array by index (slot `takes`,
            // kept only when taken), counts, and reserves its slots with one
            // atomic; members past the array come from a second read.
            uint j_first, j_stop;
            stretch_share(0u, (end - begin + 3u) / 4u, j_first, j_stop);
            uint takes = 0u;
            uint local_id[LOCAL_TAKES + 1u];
            for (uint j = j_first; j < j_stop; j += RUN_LANES) {
                vec4 f4 = chunk_quad(row, begin, end, j);
                [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                    uint i = begin + 4u * j + c, k;
                    local_id[min(takes, LOCAL_TAKES)] = i;
                    takes += i < end && member(f4[c], scale, lo, hi, k) ? 1u : 0u;
                }
            }
            uint slot = takes > 0u ? atomicAdd(row_state[o + R_CAND_COUNT], takes) : 0u;
            uint held = min(takes, LOCAL_TAKES);
            for (uint e = 0u; e < held; ++e, ++slot) {
                uint i = local_id[e], k;
                bin_member(row, i, scale, lo, hi, k);  // its key again
                put_candidate(row, slot, k, i);
            }
            uint skip = held;
            takes -= held;
            for (uint j = j_first; takes > 0u && j < j_stop; j += RUN_LANES) {
                vec4 f4 = chunk_quad(row, begin, end, j);
                for (uint c = 0u; c < 4u && takes > 0u; ++c) {
                    uint i = begin + 4u * j + c, k;
                    if (i >= end || !member(f4[c], scale, lo, hi, k)) continue;
                    if (skip > 0u) {
                        --skip;
                        continue;
                    }
                    put_candidate(row, slot, k, i);
                    ++slot;
                    --takes;
                }
            }
        }
    } else {
        tie_members(row, chunk);
    }
    if (!last_to_arrive(row)) return;

    // Drawn below: a later gather of the same call (the key levels' part of a
    // GPU's plan, gpu_plan.hpp: deep_levels_plan) leaves the row alone.
    if (t == 0u) row_state[o + R_PHASE] = PHASE_DONE;
    uint passes = row_state[o + R_PASSES] + 1u;  // + this pass
    if (phase == PHASE_TIE) {
        draw_tie(row, passes);
        return;
    }
    uint gathered = row_state[o + R_CAND_COUNT];
    // The members gathered are the ones the level counted in the bin (scan.glsl:
    // R_BUCKET_COUNT): other counts are a damaged state only, and the twin
    // draws the row rather than a walk over the wrong members.
    if (gathered != row_state[o + R_BUCKET_COUNT]) {  // uniform
        if (t == 0u) write_fallback(row, row_step(row), passes);
        return;
    }
    uint n = min(gathered, CAP);
    for (uint i = t; i < n; i += WG) {
        c_key[i] = candidates[(row * CAP + i) * 2u + 0u];
        c_id[i] = candidates[(row * CAP + i) * 2u + 1u];
    }
    barrier();
    draw_candidates(row, n, false, row_state[o + R_KEY_LO], row_state[o + R_KEY_HI], passes);
}
