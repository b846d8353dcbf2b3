// "Last workgroup" handoff: each chunk workgroup of a row, after writing its
// part, counts itself in; the one that arrives last does the row's next step
// with everybody's results. Nobody waits for anybody, so it needs no forward-
// progress guarantee (unlike a decoupled look-back), the same pattern as
// AMD FidelityFX SPD's global atomic counter. The last one resets the counter
// for the next pass.
#ifndef SIEVE_ARRIVE_GLSL
#define SIEVE_ARRIVE_GLSL

shared uint s_arrived;

bool last_to_arrive(uint row) {
    // Make this workgroup's writes visible before it is counted.
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationID.x == 0u) s_arrived = atomicAdd(row_state[row * ROW_STRIDE + R_ARRIVE], 1u);
    barrier();
    bool last = s_arrived == pc.n_chunks - 1u;
    if (last) {
        memoryBarrierBuffer();  // and see the others' before reading them
        if (gl_LocalInvocationID.x == 0u) row_state[row * ROW_STRIDE + R_ARRIVE] = 0u;
    }
    return last;  // uniform in the workgroup
}

#endif
