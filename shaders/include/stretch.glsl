// How a workgroup shares out a chunk's elements [first, end) for one read:
// each run of RUN_LANES invocations takes a contiguous stretch, its lanes side
// by side (lane l reads first + l, then + RUN_LANES, ...). Every load is then
// RUN_LANES adjacent elements (coalesced on a GPU), and each stretch is one
// sequential stream, which a CPU device's prefetchers follow when the row
// comes from DRAM: there a workgroup's SIMD batches run one after the other,
// each through its whole share, so interleaved shares (every WG-th element)
// made each batch stride through the chunk. On lavapipe this took a batch of
// 64 rows of 151936 from about 430 to 190 us per row (sieve_batch_bench,
// BM_DeviceLogits/64); a row already in the cache reads as fast either way.
// Within an invocation the elements still come in increasing order.
#ifndef SIEVE_STRETCH_GLSL
#define SIEVE_STRETCH_GLSL

// A divisor of WG (a power of two >= 32): a layout choice, not a subgroup size.
const uint RUN_LANES = 8u;

// This invocation's share: first, first + RUN_LANES, ... below stop.
void stretch_share(uint first, uint end, out uint mine, out uint stop) {
    uint t = gl_LocalInvocationID.x;
    uint runs = WG / RUN_LANES;
    uint n = end - first;
    uint stretch = ((n + runs - 1u) / runs + RUN_LANES - 1u) / RUN_LANES * RUN_LANES;
    uint run = t / RUN_LANES;
    mine = first + run * stretch + t % RUN_LANES;
    stop = min(first + (run + 1u) * stretch, end);
}

#endif
