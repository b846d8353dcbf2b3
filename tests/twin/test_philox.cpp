// Philox4x32-10 on the CPU (engine/reference/philox.cpp) against Random123's
// published known-answer vectors, and the properties of Sieve's uniform stream.
#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <set>

namespace {

using sieve::ref::philox4x32_10;
using sieve::ref::uniform_u32;

struct KnownAnswer {
    std::array<uint32_t, 4> counter;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> expected;
};

// Random123 (DE Shaw Research) examples/kat_vectors, the "philox4x32 10" lines
// (columns: counter[4], key[2], expected output[4]):
//   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
//   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
//   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
const KnownAnswer kRandom123Philox4x32_10[] = {
    {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
     {0x00000000u, 0x00000000u},
     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

TEST(PhiloxReference, Random123KnownAnswerVectors) {
    for (const KnownAnswer& kat : kRandom123Philox4x32_10) {
        const std::array<uint32_t, 4> got = philox4x32_10(kat.counter, kat.key);
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(got[i], kat.expected[i]) << "word " << i << " of counter " << std::hex << kat.counter[0];
        }
    }
}

TEST(PhiloxReference, KeyHiSpellsSeve) {
    // "SEVE" in ASCII, as shaders/include/philox.glsl's PHILOX_KEY_HI.
    EXPECT_EQ(sieve::ref::kPhiloxKeyHi, (uint32_t('S') << 24) | (uint32_t('E') << 16) | (uint32_t('V') << 8) | 'E');
}

TEST(PhiloxReference, UniformIsWordZeroOfPhiloxOnStepDraw) {
    const uint32_t seeds[] = {0u, 1u, 1234u, 0xFFFFFFFEu};
    for (uint32_t seed : seeds) {
        for (uint32_t step = 0; step < 5; ++step) {
            for (uint32_t draw = 0; draw < 3; ++draw) {
                const auto block = philox4x32_10({step, draw, 0u, 0u}, {seed, sieve::ref::kPhiloxKeyHi});
                EXPECT_EQ(uniform_u32(seed, step, draw), block[0]);
            }
        }
    }
}

TEST(PhiloxReference, SameInputsSameUniform) {
    for (uint32_t step = 0; step < 100; ++step) {
        EXPECT_EQ(uniform_u32(42u, step, 0u), uniform_u32(42u, step, 0u));
    }
}

TEST(PhiloxReference, DifferentStepsDrawsAndSeedsGiveDifferentUniforms) {
    // Philox is a bijection of the counter for a fixed key, so distinct (step,
    // draw) under one seed give distinct 128-bit blocks; the first words of 4096
    // of them colliding would be a ~0.2% event for a random function, and these
    // fixed inputs do not collide.
    std::set<uint32_t> by_step;
    for (uint32_t step = 0; step < 4096; ++step) by_step.insert(uniform_u32(7u, step, 0u));
    EXPECT_EQ(by_step.size(), 4096u);

    std::set<uint32_t> by_draw;
    for (uint32_t draw = 0; draw < 4096; ++draw) by_draw.insert(uniform_u32(7u, 3u, draw));
    EXPECT_EQ(by_draw.size(), 4096u);

    EXPECT_NE(uniform_u32(1u, 0u, 0u), uniform_u32(2u, 0u, 0u));
    EXPECT_NE(uniform_u32(1u, 0u, 1u), uniform_u32(1u, 1u, 0u)); // step and draw are not interchangeable
}

TEST(PhiloxReference, UniformsLookUniform) {
    // Mean of u = u32 / 2^32 over 100000 steps: expected 1/2, standard error
    // sqrt(1/12 / n) ~ 0.00091; allow 5 standard errors. And every bit is set
    // about half of the time (standard error 0.0016; allow 5).
    const int n = 100000;
    double sum = 0.0;
    int bits[32] = {};
    for (int step = 0; step < n; ++step) {
        const uint32_t u = uniform_u32(2024u, static_cast<uint32_t>(step), 0u);
        sum += u / 4294967296.0;
        for (int b = 0; b < 32; ++b) bits[b] += (u >> b) & 1u;
    }
    const double se = std::sqrt(1.0 / 12.0 / n);
    EXPECT_NEAR(sum / n, 0.5, 5 * se);
    for (int b = 0; b < 32; ++b) EXPECT_NEAR(bits[b] / double(n), 0.5, 5 * std::sqrt(0.25 / n)) << "bit " << b;
}

} // namespace
