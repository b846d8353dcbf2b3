// sieve.h's thread-safety promise: chains that share a context may be used from
// different threads at the same time (the context serializes its queue), and
// each gives what it gives alone.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace {

using sieve_test::Shape;

TEST(GpuThreads, ChainsOnOneContextFromSeveralThreads) {
    auto gpu = sieve_test::gpu_context();
    const int32_t vocab = 20000, steps = 25;
    const int threads = 4;
    auto logits = sieve_test::make_rows(Shape::Zipf, threads, vocab, 12);

    auto run = [&](int which, std::vector<int32_t>* out) {
        sieve::Chain chain(gpu, sieve_test::chain_desc(which % 2 ? "greedy" : "temperature;dist", 1, vocab, 0.9f,
                                                       100u + which));
        for (int s = 0; s < steps; ++s)
            out->push_back(chain.sample(logits.data() + static_cast<size_t>(which) * vocab, 1, vocab)[0].token);
    };
    std::vector<std::vector<int32_t>> alone(threads), together(threads);
    for (int i = 0; i < threads; ++i) run(i, &alone[static_cast<size_t>(i)]);
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back(run, i, &together[static_cast<size_t>(i)]);
    for (auto& t : pool) t.join();
    for (int i = 0; i < threads; ++i) EXPECT_EQ(together[static_cast<size_t>(i)], alone[static_cast<size_t>(i)]) << "chain " << i;
}

} // namespace
