#version 450
// Calibration for `sieve bench`: the least work a pass over the logits can do.
// Each workgroup reads one chunk of one row as vec4s and writes the chunk's
// maximum; no merge, no keys, no statistics. Its time is the "pass" of the
// benchmark's floor (docs/bench.md). Grid: x = chunks, y = rows.
// Self-contained on purpose (no common.glsl): its own bindings and push block.

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint row_vec4;    // vec4s per row (the row stride)
    uint chunk_vec4;  // vec4s per chunk
    uint n_chunks;    // chunks per row
} pc;
layout(std430, set = 0, binding = 0) readonly buffer Logits { vec4 logits[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Maxima { float maxima[]; };

shared float s_max[WG];

void main() {
    const uint chunk = gl_WorkGroupID.x;
    const uint row = gl_WorkGroupID.y;
    const uint lid = gl_LocalInvocationID.x;
    const uint begin = row * pc.row_vec4 + chunk * pc.chunk_vec4;
    const uint end = row * pc.row_vec4 + min((chunk + 1u) * pc.chunk_vec4, pc.row_vec4);
    vec4 m = vec4(-1.0 / 0.0);
    for (uint i = begin + lid; i < end; i += WG) m = max(m, logits[i]);
    s_max[lid] = max(max(m.x, m.y), max(m.z, m.w));
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) s_max[lid] = max(s_max[lid], s_max[lid + s]);
        barrier();
    }
    if (lid == 0u) maxima[row * pc.n_chunks + chunk] = s_max[0];
}
