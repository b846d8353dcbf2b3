#version 450
#extension GL_GOOGLE_include_directive : require
// A row that fits the candidate buffer (vocab <= CAP), in one dispatch: one
// workgroup per row reads it, finds its status and maximum, answers failed and
// greedy rows, and otherwise draws from all of it (finalize.glsl).
#include "common.glsl"
#include "row.glsl"
#include "finalize.glsl"

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    bind_row(row);
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    float scale = row_scale(row);

    RowStats s = row_stats_empty();
    for (uint i = t; i < pc.vocab; i += WG) {
        float f = row_logit(row, i);
        float x = scaled_logit(f, scale);
        row_stats_add(s, f, x, i);
        c_key[i] = (isnan(f) || (isinf(f) && f > 0.0)) ? 0u : sieve_key(x);
        c_id[i] = i;
    }
    s = wg_reduce_row_stats(s);
    uint status = row_status(s);
    if (t == 0u) {
        row_state[o + R_STATUS] = status;
        row_state[o + R_MAX_KEY] = s.max_key;
        row_state[o + R_FIRST_BAD] = s.first_bad;
    }
    if (status != STATUS_OK || row_greedy(row)) {
        if (t == 0u) write_failed_or_greedy(row, status, s.argmax, 1u);
        return;
    }
    barrier();  // row_state written above is read by draw_candidates
    draw_candidates(row, pc.vocab, true, s.min_finite_key, s.max_key, 1u);
}
