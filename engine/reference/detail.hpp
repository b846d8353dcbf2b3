// Internal helpers of the CPU twin shared between its source files (not part of the
// interface the engine uses).
#pragma once

#include "reference/reference.hpp"

#include <cstdint>
#include <cstring>
#include <string>

namespace sieve::ref::detail {

// Order-preserving 32-bit key of a float: a < b (as floats) <=> key(a) < key(b)
// for non-NaN values; -0 and +0 share the key of +0 (they compare equal as
// floats). The same mapping the GPU's radix selection uses (DESIGN.md).
inline uint32_t float_key(float f) {
    if (f == 0.0f) f = 0.0f; // -0 -> +0
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// apply_temperature that also reports overflow: after a t > 0 division a finite
// logit that became +/-inf fails the row with SIEVE_ERROR_NON_FINITE_LOGIT (Sieve's
// rule; llama.cpp would go on with an infinite logit and a NaN softmax). A NaN or
// infinite temperature is SIEVE_ERROR_INVALID_PARAMETER.
sieve_status apply_temperature_checked(CandidateArray& cur, float temperature, std::string* message);

std::string format_float(double value);

} // namespace sieve::ref::detail
