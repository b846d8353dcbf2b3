// The phase clock: where a truncating chain's collect tail spends its time
// inside its one dispatch, which a GPU's timestamps (between commands) cannot
// split. Only the diagnostic build has it (cmake -DSIEVE_PHASE_CLOCK=ON:
// every shader compiled with SIEVE_PHASE_CLOCK, the device created with
// VK_KHR_shader_clock); everywhere else these are empty macros, and the
// product's SPIR-V has no clock in it.
//
// The tail's workgroup marks each phase (PH_* in gpu_layout.h) in its row's
// result words: the subgroup clock's cycles and the device's realtime clock's
// ticks since the workgroup started, each the low 32 bits of a difference.
// Invocation 0 marks the phases it passes (after the barrier that ends each);
// the invocation that writes the row's result marks PH_END. The subgroup
// clock is defined only within a subgroup (NVIDIA's and lavapipe's count an
// SM's or the host's cycles: one clock for the workgroup); the realtime clock
// is the device's, in ticks of an unstated unit (nanoseconds on NVIDIA and
// lavapipe).
#ifndef SIEVE_PHASE_CLOCK_GLSL
#define SIEVE_PHASE_CLOCK_GLSL
#include "common.glsl"

#ifdef SIEVE_PHASE_CLOCK
#extension GL_ARB_shader_clock : require
#extension GL_EXT_shader_realtime_clock : require

uvec2 phase_t0_cycles = uvec2(0u);
uvec2 phase_t0_ticks = uvec2(0u);
bool phase_started = false;  // only the shaders that mark: phase_end in write_result does nothing elsewhere
// The workgroup's own chunk marks, PH_READ..PH_CHUNK: (cycles, ticks).
uvec2 phase_own[PH_CHUNK + 1u] = uvec2[](uvec2(PHASE_UNSET), uvec2(PHASE_UNSET), uvec2(PHASE_UNSET),
                                         uvec2(PHASE_UNSET), uvec2(PHASE_UNSET));

void phase_start() {
    phase_t0_cycles = clock2x32ARB();
    phase_t0_ticks = clockRealtime2x32EXT();
    phase_started = true;
}

// Both clocks since phase_start: (cycles, ticks).
uvec2 phase_now() {
    return uvec2(clock2x32ARB().x - phase_t0_cycles.x, clockRealtime2x32EXT().x - phase_t0_ticks.x);
}

void phase_write(uint row, uint mark, uvec2 at) {
    uint o = row * RESULT_STRIDE + RES_PHASES + 2u * mark;
    results[o] = at.x;
    results[o + 1u] = at.y;
}

void phase_put(uint row, uint mark) { phase_write(row, mark, phase_now()); }

// The chunk's phases are over before the workgroup knows whether it is the
// row's last: kept in registers, written by phase_arrived.
void phase_chunk_mark(uint mark) { phase_own[mark] = phase_now(); }

// The row's last workgroup: every mark unset but the chunk's and this one.
void phase_arrived(uint row) {
    if (!phase_started || gl_LocalInvocationID.x != 0u) return;
    for (uint m = 0u; m < PHASE_MARKS; ++m) phase_write(row, m, m <= PH_CHUNK ? phase_own[m] : uvec2(PHASE_UNSET));
    phase_put(row, PH_ARRIVED);
}

void phase_mark(uint row, uint mark) {
    if (phase_started && gl_LocalInvocationID.x == 0u) phase_put(row, mark);
}

// After the chain's sampler at `position` (< SHORT_CHAIN_OPS), if it has one.
void phase_op(uint row, uint position) {
    if (CHAIN_OP(position) != OP_END) phase_mark(row, PH_OP0 + position);
}

void phase_end(uint row) {
    if (phase_started) phase_put(row, PH_END);
}
#else
#define phase_start()
#define phase_chunk_mark(mark)
#define phase_arrived(row)
#define phase_mark(row, mark)
#define phase_op(row, position)
#define phase_end(row)
#endif

#endif
