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

struct DivisionCase {
    float x = 0, y = 1;
    int32_t skew = 0;  // ulps the start quotient is moved from the device's x / y
};

// division.glsl's correct_quotient(x, y, start) for each case on the context's
// device, the start `skew` ulps from the device's own quotient (throws Failure
// for a CPU context).
std::vector<float> quotients_on_device(sieve_context* context, const std::vector<DivisionCase>& cases);

struct RawRangeCase {
    float scale = 1;          // the row's scale (scaled_logit)
    uint32_t lo = 0, hi = 0;  // a key range of the scaled logits
};

struct RawRange {
    bool found = false;       // false: the pass divides every logit instead
    uint32_t lo = 0, hi = 0;  // the raw logits' keys whose scaled keys lie in the range
};

// raw_range.glsl's raw_key_range(scale, lo, hi) for each case on the
// context's device, a workgroup of 64 a case (throws Failure for a CPU context).
std::vector<RawRange> raw_ranges_on_device(sieve_context* context, const std::vector<RawRangeCase>& cases);

} // namespace sieve
