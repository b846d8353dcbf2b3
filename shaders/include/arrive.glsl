// "Last workgroup" handoff: each chunk workgroup of a row (`arrivals` of them),
// after writing its part, counts itself in; the one that arrives last does the row's next step
// with everybody's results. Nobody waits for anybody, so it needs no forward-
// progress guarantee (unlike a decoupled look-back), the same pattern as
// AMD FidelityFX SPD's global atomic counter. The last one resets the counter
// for the next pass (read only by a later dispatch, after a pipeline barrier).
//
// What the others wrote and the last one reads lives in buffers declared
// coherent (common.glsl: chunk stats, row state, histograms, candidates, wide,
// adjust): their accesses bypass caches that are not coherent between compute
// units (Mali, Adreno, AMD's per-CU L1), so only the ordering is left to state.
#ifndef SIEVE_ARRIVE_GLSL
#define SIEVE_ARRIVE_GLSL

shared uint s_arrived;

#ifdef SIEVE_MEMORY_MODEL
// Vulkan memory model (the spec's "Memory Model" appendix): release on the
// arrival, acquire by the last workgroup, both at device scope.
bool last_to_arrive_of(uint row, uint arrivals) {
    // Every invocation's buffer writes happen-before invocation 0's atomic: a
    // workgroup control barrier whose memory semantics are a device-scope
    // release (and acquire) of buffer memory, with the writes made available.
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeDevice, gl_StorageSemanticsBuffer | gl_StorageSemanticsShared,
                   gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
    // The arrival: a device-scope read-modify-write that releases this
    // workgroup's writes and acquires those of every workgroup counted before
    // it (a release sequence on the counter: each arrival's RMW continues it).
    if (gl_LocalInvocationID.x == 0u)
        s_arrived = atomicAdd(row_state[row * ROW_STRIDE + R_ARRIVE], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                              gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
    // Invocation 0's acquire reaches the workgroup's other invocations through
    // a second barrier at device memory scope, with the others' writes made
    // visible to every invocation that reads them next.
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeDevice, gl_StorageSemanticsBuffer | gl_StorageSemanticsShared,
                   gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
    const bool last = s_arrived == arrivals - 1u;
    if (last && gl_LocalInvocationID.x == 0u) row_state[row * ROW_STRIDE + R_ARRIVE] = 0u;
    return last;  // uniform in the workgroup
}
#else
// The fallback, without the memory model (GLSL 4.60 section 4.10 "Memory
// Qualifiers" and 8.17 "Shader Memory Control Functions"; SPIR-V's GLSL450
// memory model): memoryBarrierBuffer() makes an invocation's earlier coherent
// buffer writes complete and visible to other invocations before its later
// accesses; barrier() puts every invocation's before invocation 0's atomic.
// The atomic itself is relaxed. In the last workgroup, after it has seen the
// final count (through barrier()), memoryBarrierBuffer() orders the coherent
// reads that follow after the count. This is the pattern of CUDA's
// threadFenceReduction (__threadfence, atomicInc, __syncthreads) and of SPD.
bool last_to_arrive_of(uint row, uint arrivals) {
    // Make this workgroup's writes visible before it is counted.
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationID.x == 0u) s_arrived = atomicAdd(row_state[row * ROW_STRIDE + R_ARRIVE], 1u);
    barrier();
    bool last = s_arrived == arrivals - 1u;
    if (last) {
        memoryBarrierBuffer();  // and see the others' before reading them
        if (gl_LocalInvocationID.x == 0u) row_state[row * ROW_STRIDE + R_ARRIVE] = 0u;
    }
    return last;  // uniform in the workgroup
}
#endif

// The row's chunk workgroups (pc.n_chunks) arrive.
bool last_to_arrive(uint row) { return last_to_arrive_of(row, pc.n_chunks); }

#endif
