// division.glsl's correct_quotient on the device against the host's IEEE
// division: from the device's own quotient and from starts up to three ulps
// off it (a CPU device divides exactly, so only a skewed start makes the
// correction step there).
#include "vulkan/gpu_selftest.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace {

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

TEST(DivisionGpu, EveryStartWithinThreeUlpsEndsAtTheIeeeQuotient) {
    std::mt19937 rng(77);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-90, 90);
    std::vector<sieve::DivisionCase> cases;
    auto add = [&](float x, float y) {
        for (int32_t skew = -3; skew <= 3; ++skew) cases.push_back({x, y, skew});
    };
    // Temperatures and repeat penalties over logits of every size, either sign;
    // tiny logits take the scaled path (|x| < 2^-79).
    const float divisors[] = {1.7f, 0.8f, 0.7f, 1.1f, 1.3f, 0.1f, 3.0f, 1.0f, 2.0f, 1e-3f};
    for (int i = 0; i < 3000; ++i) {
        float x = std::ldexp(mantissa(rng), exponent(rng)) * ((i & 1) ? -1.0f : 1.0f);
        float y = (i % 3 == 0) ? std::ldexp(mantissa(rng), exponent(rng) / 8) : divisors[i % 10];
        if (i % 7 == 0) y = -y;
        add(x, y);
    }
    // Two logits one ulp apart whose quotients by 1.7 are equal (the pair
    // GpuVsTwinTies.TiesTheTemperatureMakesTakeTheLowerIdFirst draws from), and
    // exact quotients.
    float low = 1.99f;
    while (!(low / 1.7f == std::nextafter(low, 3.0f) / 1.7f)) low = std::nextafter(low, 3.0f);
    add(low, 1.7f);
    add(std::nextafter(low, 3.0f), 1.7f);
    add(3.0f, 1.5f);
    add(-6.0f, 0.75f);
    // Quotients around a power of two: starts and steps that cross into the
    // next binade, whose spacing is twice this one's.
    for (float y : divisors) {
        for (int k : {-60, -1, 0, 1, 7, 40}) {
            float x = std::ldexp(1.0f, k) * y;  // the 129 floats around it
            for (int j = 0; j < 64; ++j) x = std::nextafter(x, 0.0f);
            for (int j = 0; j <= 128; ++j, x = std::nextafter(x, INFINITY)) add(x, y);
        }
    }
    // Quotients within 2^-14 of a float's spacing of a midpoint between two
    // floats (found in double, which holds a quotient of floats to 2^-53):
    // where the choice between the two floats around it is closest.
    int near_midpoints = 0;
    for (int i = 0; near_midpoints < 400 && i < 20000000; ++i) {
        const float x = std::ldexp(mantissa(rng), exponent(rng) / 4);
        const float y = divisors[i % 10];
        const double q = static_cast<double>(x) / static_cast<double>(y);
        const double nearest = static_cast<double>(static_cast<float>(q));
        const double spacing = std::ldexp(1.0, std::ilogb(static_cast<float>(q)) - 23);
        const double off = std::abs(q - nearest) / spacing;  // in [0, 0.5]
        if (0.5 - off > std::ldexp(1.0, -14)) continue;
        add(x, y);
        ++near_midpoints;
    }
    ASSERT_EQ(near_midpoints, 400);
    auto ctx = sieve_test::gpu_context();
    const std::vector<float> got = sieve::quotients_on_device(ctx.get(), cases);
    ASSERT_EQ(got.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const float want = cases[i].x / cases[i].y;
        ASSERT_TRUE(std::isnormal(want)) << cases[i].x << " / " << cases[i].y;
        ASSERT_EQ(bits(got[i]), bits(want)) << cases[i].x << " / " << cases[i].y << " from skew " << cases[i].skew
                                            << ": got " << got[i] << ", want " << want;
    }
}

// Zeros, infinities and NaNs keep the device's quotient, which IEEE fixes.
TEST(DivisionGpu, SpecialOperandsKeepTheDevicesQuotient) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<sieve::DivisionCase> cases = {
        {0.0f, 1.7f, 0}, {-0.0f, 1.7f, 0}, {inf, 1.7f, 0}, {-inf, 0.8f, 0}, {1.0f, inf, 0},
        {std::numeric_limits<float>::max(), 0.5f, 0}, {std::nanf(""), 1.7f, 0}};
    auto ctx = sieve_test::gpu_context();
    const std::vector<float> got = sieve::quotients_on_device(ctx.get(), cases);
    ASSERT_EQ(got.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const float want = cases[i].x / cases[i].y;
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got[i])) << "case " << i;
        } else {
            EXPECT_EQ(bits(got[i]), bits(want)) << "case " << i << ": " << cases[i].x << " / " << cases[i].y;
        }
    }
}

} // namespace
