// Contexts come and go: a process may create and destroy Sieve's contexts any
// number of times. Every context Sieve creates itself shares the process's
// VkInstance (one with validation, one without: vk_instance.hpp), so the driver
// and the validation layer are loaded once. On NVIDIA, whose driver takes
// static TLS at every load, a VkInstance per context failed after about 25
// contexts in one process ("cannot allocate memory in static TLS block").
#include "test_support.hpp"

#include "vulkan/vk_instance.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace sieve_test;

sieve::ContextOptions options_with_validation(bool on) {
    sieve::ContextOptions o = gpu_options();
    o.validation(on ? 1 : 0);
    return o;
}

// The greedy token of a Zipf row on a fresh context equals the row's argmax.
void expect_samples(bool validation) {
    sieve::Context ctx(options_with_validation(validation));
    constexpr int32_t kVocab = 5000;
    const std::vector<float> row = make_rows(Shape::Zipf, 1, kVocab, 21);
    sieve::Chain chain(ctx, chain_desc("greedy", 1, kVocab, 1.0f, 3));
    const auto got = chain.sample(row.data(), 1, kVocab);
    ASSERT_EQ(got[0].status, SIEVE_OK);
    EXPECT_EQ(got[0].token, std::max_element(row.begin(), row.end()) - row.begin());
    EXPECT_EQ(ctx.validation_messages(), 0u);
}

TEST(Contexts, TwoHundredComeAndGoOnOneInstance) {
    // The first pair makes whichever of the two instances this process lacks.
    for (bool validation : {true, false}) sieve::Context first(options_with_validation(validation));
    const uint64_t made = sieve::instances_created();
    EXPECT_GE(made, 1u);
    EXPECT_LE(made, 2u) << "one instance with validation and one without, at most";
    for (int i = 0; i < 200; ++i) {
        sieve::Context ctx(options_with_validation(i % 4 != 3));  // three in four with validation
        ASSERT_EQ(ctx.device_info().type, sieve::devices()[ctx.device_info().index].type);
    }
    EXPECT_EQ(sieve::instances_created(), made) << "a context made its own VkInstance";
    expect_samples(true);
    expect_samples(false);
    EXPECT_EQ(sieve::instances_created(), made);
}

// Listing devices uses an instance the process already has.
TEST(Contexts, EnumerationMakesNoInstanceOfItsOwn) {
    sieve::Context ctx(options_with_validation(true));
    const uint64_t made = sieve::instances_created();
    for (int i = 0; i < 20; ++i) EXPECT_FALSE(sieve::devices().empty());
    EXPECT_EQ(sieve::instances_created(), made);
}

} // namespace
