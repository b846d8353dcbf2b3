// A test seam for what a chain's fence wait can report but a healthy device
// never does within a test: a wait that ran out (VK_TIMEOUT, after 120 s) or
// a lost device. Armed by a test, the chosen wait (Submitter::await) waits as
// usual, then reports the armed result instead; its submission stays
// pending, as after the real failure. The paths that undo a call failing
// part way (gpu_verify.cpp: verify_in_waves) are tested through it.
// Process-wide; never armed outside tests: one relaxed atomic load a wait.
#pragma once

#include <volk.h>

#include <cstdint>

namespace sieve::wait_fault {

// The wait `after` waits from now (0: the next one) reports `result`, and
// so do the `times - 1` waits after it.
void arm(uint32_t after, VkResult result, uint32_t times = 1);
void disarm();
// What a wait reports, given the fence wait's own result.
VkResult filter(VkResult waited);

} // namespace sieve::wait_fault
