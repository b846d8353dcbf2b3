// Philox4x32-10 on the GPU (shaders/include/philox.glsl) against Random123's
// known-answer vectors and against the CPU twin on many random inputs.
#include "vulkan/gpu_selftest.hpp"
#include "reference/reference.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <random>

namespace {

TEST(PhiloxGpu, Random123KnownAnswerVectors) {
    // Random123 examples/kat_vectors, "philox4x32 10" lines.
    const std::vector<sieve::PhiloxCase> cases = {
        {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u}, {0x00000000u, 0x00000000u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}},
    };
    const std::array<uint32_t, 4> expected[] = {
        {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u},
    };
    for (auto profile : {sieve_test::Profile::Full, sieve_test::Profile::Constrained}) {
        auto ctx = sieve_test::gpu_context(profile);
        auto got = sieve::philox_on_device(ctx.get(), cases);
        ASSERT_EQ(got.size(), cases.size());
        for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "vector " << i;
    }
}

TEST(PhiloxGpu, MatchesTheTwinOnRandomInputs) {
    std::mt19937 rng(2024);
    auto next = [&rng] { return static_cast<uint32_t>(rng()); };
    std::vector<sieve::PhiloxCase> cases(4096);
    for (auto& c : cases) c = {{next(), next(), next(), next()}, {next(), next()}};
    auto ctx = sieve_test::gpu_context();
    auto got = sieve::philox_on_device(ctx.get(), cases);
    ASSERT_EQ(got.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i)
        ASSERT_EQ(got[i], sieve::ref::philox4x32_10(cases[i].counter, cases[i].key)) << "case " << i;
}

} // namespace
