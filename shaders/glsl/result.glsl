// Writing a row's result and advancing its step.
#ifndef SIEVE_RESULT_GLSL
#define SIEVE_RESULT_GLSL

void write_result(uint row, uint token, float p, float logprob, uint status, uint step, uint passes) {
    if ((pc.flags & FLAG_DISTRIBUTION) != 0u) return;
    uint o = row * RESULT_STRIDE;
    results[o + 0u] = token;
    results[o + 1u] = floatBitsToUint(p);
    results[o + 2u] = floatBitsToUint(logprob);
    results[o + 3u] = status;
    results[o + 4u] = params[row * PARAM_STRIDE + P_SEED];
    results[o + 5u] = step;
    results[o + 6u] = passes;
    results[o + 7u] = row_state[row * ROW_STRIDE + R_FIRST_BAD];
}

// A sampled token advances the row's step (slot state lives across calls).
void advance_step(uint row, uint step) {
    if ((pc.flags & FLAG_DISTRIBUTION) != 0u) return;
    slot_state[row * SLOT_STRIDE + S_STEP] = step + 1u;
    slot_state[row * SLOT_STRIDE + S_GENERATION] = params[row * PARAM_STRIDE + P_GENERATION];
}

// A failed row, or the argmax for greedy rows: the whole answer once the row
// statistics are known.
void write_failed_or_greedy(uint row, uint status, uint argmax, uint passes) {
    uint step = row_step(row);
    if (status != STATUS_OK) {
        write_result(row, 0xFFFFFFFFu, 0.0, 0.0, status, step, passes);
    } else {
        write_result(row, argmax, 1.0, 0.0, STATUS_OK, step, passes);
        advance_step(row, step);
    }
}

#endif
