// Batches (issue 5): one submission samples B rows, each with its own
// parameters and slot, and a row's result is bit-identical whatever B and the
// other rows: the same token, p, log-probability and step as the row sampled
// alone. Capacities beyond one binding's maxStorageBufferRange are split into
// row windows, with the same guarantee at the windows' edges.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

void expect_identical(const sieve_token& got, const sieve_token& alone, int32_t row) {
    SCOPED_TRACE("row " + std::to_string(row));
    ASSERT_EQ(got.status, SIEVE_OK) << sieve_last_error();
    ASSERT_EQ(alone.status, SIEVE_OK);
    EXPECT_EQ(got.token, alone.token);
    EXPECT_EQ(std::memcmp(&got.p, &alone.p, 4), 0) << got.p << " vs " << alone.p;
    EXPECT_EQ(std::memcmp(&got.logprob, &alone.logprob, 4), 0);
    EXPECT_EQ(got.step, alone.step);
    EXPECT_EQ(got.seed, alone.seed);
}

// Row r's own parameters: every sampler of the chain on or off per row, its
// own temperature, seed, penalties.
void set_row(sieve::Chain& chain, int32_t row, int32_t r) {
    chain.set(SIEVE_PARAM_SEED, 500 + r, row);
    chain.set(SIEVE_PARAM_TEMPERATURE, r % 5 == 4 ? 0.0 : 0.4 + 0.1 * r, row);
    chain.set(SIEVE_PARAM_TOP_K, r % 3 == 0 ? 0 : 5 + 7 * r, row);
    chain.set(SIEVE_PARAM_TOP_P, r % 2 == 0 ? 1.0 : 0.9, row);
    chain.set(SIEVE_PARAM_MIN_P, r % 4 == 1 ? 0.0 : 0.05, row);
    chain.set(SIEVE_PARAM_REPEAT_PENALTY, r % 2 == 0 ? 1.25 : 1.0, row);
    chain.set(SIEVE_PARAM_PRESENCE_PENALTY, r % 3 == 2 ? 0.5 : 0.0, row);
}

// B = 8 rows with their own parameters over permuted slots, against each row
// in a one-row chain, over several tokens (the histories the GPU appends
// feed the penalties of the next ones).
TEST(Batches, EveryRowEqualsTheRowAlone) {
    constexpr int32_t kRows = 8, kVocab = 32000, kSteps = 6;
    const std::string samplers = "penalties;top_k;top_p;min_p;temperature;dist";
    sieve::Context ctx = gpu_context();
    sieve::ChainDesc desc = chain_desc(samplers, kRows, kVocab, 0.8f, 1);
    desc.raw.max_slots = 16;
    desc.raw.history_capacity = 64;
    sieve::Chain batch(ctx, desc);
    std::vector<int32_t> slots(kRows);
    for (int32_t r = 0; r < kRows; ++r) {
        slots[static_cast<size_t>(r)] = 15 - 2 * r;
        set_row(batch, r, r);
    }
    batch.set_slots(slots);
    std::vector<std::unique_ptr<sieve::Chain>> alone;
    for (int32_t r = 0; r < kRows; ++r) {
        sieve::ChainDesc one = chain_desc(samplers, 1, kVocab, 0.8f, 1);
        one.raw.history_capacity = 64;
        alone.push_back(std::make_unique<sieve::Chain>(ctx, one));
        set_row(*alone.back(), 0, r);
    }
    for (int32_t step = 0; step < kSteps; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const auto logits = make_rows(step % 2 ? Shape::Peaked : Shape::Zipf, kRows, kVocab, 40 + step);
        if (step == 3) {
            // Parameters change between tokens: nothing is re-recorded.
            const uint64_t recordings = batch.counters().recordings;
            batch.set(SIEVE_PARAM_TOP_K, 3.0, 2);
            alone[2]->set(SIEVE_PARAM_TOP_K, 3.0, 0);
            const auto got = batch.sample(logits.data(), kRows, kVocab);
            EXPECT_EQ(batch.counters().recordings, recordings);
            for (int32_t r = 0; r < kRows; ++r)
                expect_identical(got[static_cast<size_t>(r)],
                                 alone[static_cast<size_t>(r)]->sample(logits.data() + static_cast<size_t>(r) * kVocab,
                                                                       1, kVocab)[0],
                                 r);
            continue;
        }
        const auto got = batch.sample(logits.data(), kRows, kVocab);
        for (int32_t r = 0; r < kRows; ++r)
            expect_identical(got[static_cast<size_t>(r)],
                             alone[static_cast<size_t>(r)]->sample(logits.data() + static_cast<size_t>(r) * kVocab, 1,
                                                                   kVocab)[0],
                             r);
    }
}

// A capacity past the binding range: at vocab 262144 a row's distribution
// space is 2 MiB, so the context's 16 MiB cap (kWindowTestRange, the same on
// every device) holds a few rows (the chain says how many): a dozen rows make
// two windows or more. Rows on both sides of the edge equal the rows alone, for calls
// at the full vocab and at a smaller one (rows then sit vocab apart inside a
// window, windows stay max_vocab rows apart), for samples and distributions.
TEST(Batches, CapacityBeyondOneBindingIsSplit) {
    // Every device splits under this cap, whatever its own maxStorageBufferRange.
    sieve::Context ctx(gpu_options().max_storage_buffer_range(kWindowTestRange));
    constexpr int32_t kVocab = 262144;
    const uint64_t range = ctx.device_info().max_storage_buffer_range;
    ASSERT_EQ(range, kWindowTestRange) << "the context plans with the cap it was given";
    constexpr int32_t rows = 12;
    sieve::Chain batch(ctx, chain_desc("", rows, kVocab, 0.8f, 1));
    const Windows windows = row_windows(batch);
    ASSERT_GE(windows.count, 2u) << "the capacity is not split into row windows";
    const int32_t per_window = static_cast<int32_t>(windows.rows);
    ASSERT_GT(per_window, 1);
    ASSERT_LT(per_window + 1, rows);
    for (int32_t r = 0; r < rows; ++r) batch.set(SIEVE_PARAM_SEED, 900 + r, r);
    const int32_t edge[] = {0, per_window - 1, per_window, per_window + 1};
    std::vector<std::unique_ptr<sieve::Chain>> alone;
    for (int32_t r : edge) {
        alone.push_back(std::make_unique<sieve::Chain>(ctx, chain_desc("", 1, kVocab, 0.8f, 900 + r)));
    }
    for (int32_t vocab : {kVocab, 200000}) {
        SCOPED_TRACE("vocab " + std::to_string(vocab));
        // Fresh slots: a history token of the full vocab is refused by a
        // call over a smaller one.
        batch.reset(-1);
        for (auto& a : alone) a->reset(-1);
        const auto logits = make_rows(Shape::Zipf, rows, vocab, static_cast<uint32_t>(vocab));
        const auto got = batch.sample(logits.data(), rows, vocab);
        for (size_t e = 0; e < std::size(edge); ++e) {
            const int32_t r = edge[e];
            const float* row = logits.data() + static_cast<size_t>(r) * vocab;
            expect_identical(got[static_cast<size_t>(r)], alone[e]->sample(row, 1, vocab)[0], r);
            const auto dist = batch.distribution(logits.data(), rows, vocab, r);
            const auto want = alone[e]->distribution(row, 1, vocab, 0);
            ASSERT_EQ(dist.size(), want.size()) << "row " << r;
            for (size_t i = 0; i < dist.size(); ++i) {
                EXPECT_EQ(dist[i].id, want[i].id);
                EXPECT_EQ(dist[i].p, want[i].p);
            }
        }
    }
}

} // namespace
