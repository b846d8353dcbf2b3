// Device self-tests the test suite runs through the engine's own plumbing.
#pragma once

#include <sieve/sieve.h>

#include <array>
#include <cstdint>
#include <vector>

namespace sieve {

struct PhiloxCase {
    std::array<uint32_t, 4> counter;
    std::array<uint32_t, 2> key;
};

// Philox4x32-10 of each case computed by shaders/include/philox.glsl on the
// context's device (throws Failure for a CPU context).
std::vector<std::array<uint32_t, 4>> philox_on_device(sieve_context* context, const std::vector<PhiloxCase>& cases);

} // namespace sieve
