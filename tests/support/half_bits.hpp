// f16 and bf16 encodings for the tests, independent of the engine's widening
// (logits_view.cpp): f16 by the compiler's own _Float16 (or __fp16), bf16 by round to
// nearest even of the f32 bits (what ggml and PyTorch do for finite values).
#pragma once

#include <sieve/sieve.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace sieve_test {

// GCC before 13 has no _Float16 in C++ on ARM (scripts/cross_arm64.sh); its
// __fp16 is the same IEEE binary16 with the same round-to-nearest-even conversions.
#if defined(__aarch64__) && !defined(__clang__) && __GNUC__ < 13
using Half = __fp16;
#else
using Half = _Float16;
#endif

inline uint16_t to_f16(float f) {
    const Half h = static_cast<Half>(f);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}

inline float from_f16(uint16_t bits) {
    Half h;
    std::memcpy(&h, &bits, 2);
    return static_cast<float>(h);
}

inline uint16_t to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

inline float from_bf16(uint16_t bits) {
    const uint32_t x = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// f's encoding in a 16-bit dtype (SIEVE_DTYPE_F16 or SIEVE_DTYPE_BF16).
inline uint16_t to_half_bits(float f, sieve_dtype dtype) { return dtype == SIEVE_DTYPE_F16 ? to_f16(f) : to_bf16(f); }

} // namespace sieve_test
