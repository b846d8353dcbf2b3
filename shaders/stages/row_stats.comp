#version 450
#extension GL_GOOGLE_include_directive : require
// Pass 1 over the row (one workgroup per row chunk): the chunk's maximal key and
// its first id, the smallest finite key, finite count, NaN/+Inf detection and
// logits the temperature division overflows. Keys are of the scaled logits.
// The last chunk workgroup of a row to finish merges the chunks and decides the
// row: a failed row or a greedy one is answered here and now (one dispatch
// for a greedy token); a row to draw goes on to the selection levels.
#include "common.glsl"
#include "row.glsl"
#include "arrive.glsl"
#include "result.glsl"
#include "stretch.glsl"

// The logits again, four at a time (rows whose stride is a multiple of 4).
#include "logits4.glsl"

void add_logit(inout RowStats s, float f, float scale, uint i) { row_stats_add(s, f, scaled_logit(f, scale), i); }

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    bind_row(row);
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);
    float scale = row_scale(row);

    RowStats s = row_stats_empty();
    if (!ROW_INPUTS && (pc.stride & 3u) == 0u) {
        // Rows of whole vec4s: the chunk's vec4-aligned middle four logits a
        // load, two loads an iteration (lavapipe loads a vector lane by lane,
        // each lane waiting on the previous one; two independent loads
        // overlap), the unaligned ends one by one. Ids still grow within an
        // invocation: head, middle, tail.
        uint a4 = min((begin + 3u) & ~3u, end), e4 = max(end & ~3u, a4);
        for (uint i = begin + t; i < a4; i += WG) add_logit(s, row_logit(row, i), scale, i);
        uint row4 = row * pc.stride / 4u;
        uint q, q_stop;  // contiguous stretches (stretch.glsl)
        stretch_share(a4 / 4u, e4 / 4u, q, q_stop);
        for (; q + RUN_LANES < q_stop; q += 2u * RUN_LANES) {
            vec4 fa = row_vec4(row4 + q);
            vec4 fb = row_vec4(row4 + q + RUN_LANES);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) add_logit(s, fa[c], scale, 4u * q + c);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) add_logit(s, fb[c], scale, 4u * (q + RUN_LANES) + c);
        }
        for (; q < q_stop; q += RUN_LANES) {
            vec4 fa = row_vec4(row4 + q);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) add_logit(s, fa[c], scale, 4u * q + c);
        }
        for (uint i = e4 + t; i < end; i += WG) add_logit(s, row_logit(row, i), scale, i);
    } else {
        for (uint i = begin + t; i < end; i += WG) {
            add_logit(s, row_logit(row, i), scale, i);
        }
    }
    s = wg_reduce_row_stats(s);
    if (t == 0u) store_chunk_stats(row, chunk, s);
    if (!last_to_arrive(row)) return;

    RowStats m = merge_chunk_stats(row, pc.n_chunks);
    if (t != 0u) return;
    uint status = row_status(m);
    bool done = status != STATUS_OK || row_greedy(row);
    uint o = row * ROW_STRIDE;
    row_state[o + R_STATUS] = status;
    row_state[o + R_MAX_KEY] = m.max_key;
    row_state[o + R_ARGMAX] = m.argmax;
    row_state[o + R_MIN_KEY] = m.min_finite_key;
    row_state[o + R_FIRST_BAD] = m.first_bad;
    row_state[o + R_PASSES] = 1u;
    row_state[o + R_CAND_COUNT] = 0u;
    row_state[o + R_PHASE] = done ? PHASE_DONE : PHASE_ACTIVE;
    if (done) write_failed_or_greedy(row, status, m.argmax, 1u);
}
