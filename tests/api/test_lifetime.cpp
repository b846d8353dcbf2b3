// Handles' lifetimes: a chain keeps what it needs of its context, so a chain
// used and destroyed after sieve_context_destroy works (no validation message,
// no use after free under the sanitizers).
#include "test_support.hpp"

#include <sieve/sieve.h>

#include <vector>

namespace {

using namespace sieve_test;

void sample_after_the_context_is_gone(sieve_backend backend) {
    sieve_context_options o;
    sieve_context_options_init(&o);
    o.backend = backend;
    o.validation = 1;
    sieve_context* ctx = nullptr;
    ASSERT_EQ(sieve_context_create(&o, &ctx), SIEVE_OK) << sieve_last_error();
    sieve::ChainDesc desc = chain_desc("top_k;temperature;dist", 2, 300, 0.8f, 7);
    sieve_chain* chains[2] = {};
    for (sieve_chain*& c : chains) ASSERT_EQ(sieve_chain_create(ctx, &desc.raw, &c), SIEVE_OK) << sieve_last_error();
    sieve_context_destroy(ctx);
    const std::vector<float> logits = make_rows(Shape::Zipf, 2, 300, 3);
    sieve_token out[2];
    EXPECT_EQ(sieve_sample(chains[0], logits.data(), 2, 300, out), SIEVE_OK) << sieve_last_error();
    sieve_chain_destroy(chains[0]);
    // The other chain still has the context.
    EXPECT_EQ(sieve_sample(chains[1], logits.data(), 2, 300, out), SIEVE_OK) << sieve_last_error();
    EXPECT_GE(out[0].token, 0);
    sieve_chain_destroy(chains[1]);
}

TEST(Lifetime, ChainsOutliveTheirContextOnTheGpu) { sample_after_the_context_is_gone(SIEVE_BACKEND_VULKAN); }

TEST(Lifetime, ChainsOutliveTheirContextOnTheCpu) { sample_after_the_context_is_gone(SIEVE_BACKEND_CPU); }

// The C++ wrapper's easy mistake: a chain built from a temporary Context.
TEST(Lifetime, ChainFromATemporaryContext) {
    sieve::Chain chain(gpu_context(), chain_desc("temperature;dist", 1, 100, 0.8f, 1));
    const std::vector<float> logits = make_rows(Shape::Gaussian, 1, 100, 5);
    EXPECT_EQ(chain.sample(logits.data(), 1, 100)[0].status, SIEVE_OK);
}

} // namespace
