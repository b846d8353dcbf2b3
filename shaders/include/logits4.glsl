// The logits four at a time, for the passes that stream rows of whole vec4s
// (rows whose stride is a multiple of 4, chunks starting at multiples of 4):
// through the storage buffer at binding 0, or, on a CPU device, through the
// uniform texel buffer of vec4s at binding 13 (TEXEL_READ, set by the host
// for the chain's own logits only; gpu_chain_buffers.cpp: create_texel_views says
// why). Where TEXEL_READ is 0 the binding holds a placeholder.
#ifndef SIEVE_LOGITS4_GLSL
#define SIEVE_LOGITS4_GLSL

layout(std430, set = 0, binding = BINDING_LOGITS) readonly buffer Logits4 { vec4 logits4[]; };
layout(constant_id = SPEC_TEXEL_READ) const uint TEXEL_READ = 0u;
layout(set = 0, binding = BINDING_LOGITS_TEXELS) uniform samplerBuffer logits_texels;

// vec4 q of the bound logits (q = element index / 4), subnormals read as zeros
// of their sign by their bits (common.glsl's flush_subnormal).
vec4 row_vec4(uint q) {
    vec4 v = TEXEL_READ != 0u ? texelFetch(logits_texels, int(q)) : logits4[q];
    uvec4 b = floatBitsToUint(v);
    return uintBitsToFloat(mix(b, b & 0x80000000u, equal(b & 0x7F800000u, uvec4(0u))));
}

// Quad j of the chunk [begin, end) of a row: logits begin + 4j .. + 3. One
// load where the chunk holds whole vec4s of a row read as it is (no bias,
// bitmask or history table: !ROW_INPUTS); else one by one (row_quad: those at
// or past `end` repeat the last one before it, for the caller to mask). On a
// CPU device the load is a texel fetch where the pipeline reads through the
// texel binding: lavapipe loads a storage buffer lane by lane and checks each
// scalar's bounds (dist's gather at 151936: 600 of its 700 us in the loads).
vec4 chunk_quad(uint row, uint begin, uint end, uint j) {
    if (!ROW_INPUTS && ((pc.stride | begin | end) & 3u) == 0u) return row_vec4(row * (pc.stride / 4u) + begin / 4u + j);
    return row_quad(row, begin + 4u * j, end);
}

// BODY(F4, I0) for every quad F4 of the chunk [BEGIN, END) of row ROW in this
// invocation's stretch (stretch.glsl; I0: the quad's first logit, those at or
// past END for BODY to mask), four loads a trip issued before any is used:
// on a GPU one memory wait a trip, where a loop of a logit a load leaves
// batching the loads to the compiler (which cannot move a load above an
// atomic that may alias it). (The caller includes stretch.glsl.)
#define FOR_CHUNK_QUADS4(ROW, BEGIN, END, BODY)                                                     \
    {                                                                                               \
        uint q_first_, q_stop_;                                                                     \
        stretch_share(0u, ((END) - (BEGIN) + 3u) / 4u, q_first_, q_stop_);                          \
        uint q_ = q_first_;                                                                         \
        for (; q_ + 3u * RUN_LANES < q_stop_; q_ += 4u * RUN_LANES) {                               \
            vec4 f4_[4];                                                                            \
            [[unroll]] for (uint h_ = 0u; h_ < 4u; ++h_)                                            \
                f4_[h_] = chunk_quad(ROW, BEGIN, END, q_ + h_ * RUN_LANES);                         \
            [[unroll]] for (uint h_ = 0u; h_ < 4u; ++h_) BODY(f4_[h_], (BEGIN) + 4u * (q_ + h_ * RUN_LANES)) \
        }                                                                                           \
        for (; q_ < q_stop_; q_ += RUN_LANES) {                                                     \
            vec4 g4_ = chunk_quad(ROW, BEGIN, END, q_);                                             \
            BODY(g4_, (BEGIN) + 4u * q_)                                                            \
        }                                                                                           \
    }

#endif
