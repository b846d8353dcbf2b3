// Writing a row's result and advancing its step.
#ifndef SIEVE_RESULT_GLSL
#define SIEVE_RESULT_GLSL
#include "phase_clock.glsl"

// A committed token joins its slot's history: the ring's oldest entry leaves
// a full ring (llama.cpp's accept).
void append_history(uint row, uint token) {
    uint slot = param_u(row, P_SLOT);
    uint head = slot_state[slot + S_HEAD];
    slot_state[slot + SLOT_HEADER + head] = token;
    slot_state[slot + S_HEAD] = head + 1u == pc.hist_cap ? 0u : head + 1u;
    slot_state[slot + S_COUNT] = min(slot_state[slot + S_COUNT] + 1u, pc.hist_cap);
}

void write_result(uint row, uint token, float p, float logprob, uint status, uint step, uint passes) {
    if ((pc.flags & FLAG_DISTRIBUTION) != 0u) return;
    if (status == STATUS_OK && (param_u(row, P_ROW_FLAGS) & ROW_COMMIT) != 0u) append_history(row, token);
    uint o = row * RESULT_STRIDE;
    results[o + RES_TOKEN] = token;
    results[o + RES_P] = floatBitsToUint(p);
    results[o + RES_LOGPROB] = floatBitsToUint(logprob);
    results[o + RES_STATUS] = status;
    results[o + RES_SEED] = params[row * PARAM_STRIDE + P_SEED];
    results[o + RES_STEP] = step;
    results[o + RES_PASSES] = passes;
    results[o + RES_FIRST_BAD] = row_state[row * ROW_STRIDE + R_FIRST_BAD];
    // The token's logit as the model gave it (the rows of a chain that asks
    // for logprobs are never patched in place: history.comp's ROW_PATCH).
    results[o + RES_RAW_TOKEN] = status == STATUS_OK ? floatBitsToUint(flush_subnormal(logits[row * pc.stride + token])) : 0u;
    phase_end(row);
}

// A sampled token advances the step of the row's slot (slot state lives across calls).
void advance_step(uint row, uint step) {
    if ((pc.flags & FLAG_DISTRIBUTION) != 0u || (param_u(row, P_ROW_FLAGS) & ROW_HOLD_STEP) != 0u) return;
    slot_state[param_u(row, P_SLOT) + S_STEP] = step + 1u;
}

// A row the CPU twin draws (its token -1, STATUS_FALLBACK): the host hands it
// the row. Its step advances as a sampled token's would.
void write_fallback(uint row, uint step, uint passes) {
    write_result(row, 0xFFFFFFFFu, 0.0, 0.0, STATUS_FALLBACK, step, passes);
    advance_step(row, step);
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
