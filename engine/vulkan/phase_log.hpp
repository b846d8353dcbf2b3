#pragma once
// The phase-clock build (cmake -DSIEVE_PHASE_CLOCK=ON) only: the collect
// tail's phase marks (shaders/include/phase_clock.glsl), written out per call.
#ifdef SIEVE_PHASE_CLOCK
#include <cstdint>

namespace sieve {

// Appends one JSON line a row to the file SIEVE_PHASE_LOG names, for the
// call's first and last rows where their tail marked anything: {"rows", "row",
// "cycles": [PHASE_MARKS], "ticks": [PHASE_MARKS]}, null where the row did not
// pass a mark (gpu_layout.h: PH_*). Then unsets the marks, so that a call
// without a collect tail logs nothing. `results`: the mapped results buffer.
// The file stays open while the variable names the same path.
void log_phases(uint32_t* results, uint32_t rows);

} // namespace sieve
#endif
