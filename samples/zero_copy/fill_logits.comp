#version 450
// The app's "decode": writes LM-like logits for `rows` rows, `stride` floats
// apart, into its own output buffer (deterministic in the row and token id).
layout(local_size_x = 64) in;
layout(push_constant) uniform Push {
    uint vocab;
    uint stride;
} pc;
layout(std430, set = 0, binding = 0) writeonly buffer Out { float logits[]; };

uint hash(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

void main() {
    const uint i = gl_GlobalInvocationID.x;
    const uint row = gl_WorkGroupID.y;
    if (i >= pc.vocab) return;
    // A Zipf-like rank per token: logit = 12 - 1.1 log(rank + 1) plus noise.
    const uint rank = hash(i * 2654435761u + row * 97u) % pc.vocab;
    const float noise = float(hash(i ^ (row << 20)) & 0xFFFFu) / 65535.0 - 0.5;
    logits[row * pc.stride + i] = 12.0 - 1.1 * log(float(rank + 1u)) + 0.6 * noise;
}
