// sieve_verify on the GPU backend gives the CPU twin's tokens (issue 27, item
// 3): the same chain, slots and logits, a batch of sequences with draft
// lengths 0 to 16, in both modes (rejection with dense and per-token q), over
// several seeds, in f32, f16 and bf16 (strided): token for token, the same steps and
// p, and the same slots afterwards. The rows are well-conditioned (logits
// 0.05 apart, q off p by noise) so no uniform falls within rounding of a
// boundary and exact equality is expected.
#include "half_bits.hpp"
#include "test_support.hpp"

#include <sieve/sieve.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

constexpr int32_t kVocab = 256;
const std::vector<int32_t> kLengths = {0, 1, 3, 8, 16, 5, 2};

// A permutation of logits 0.05 apart, one token lifted by `peak` (drafts of
// that token are mostly accepted when the peak is high).
std::vector<float> spaced_row(std::mt19937& gen, float peak, int32_t* top) {
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), gen);
    std::vector<float> row(kVocab);
    for (int32_t i = 0; i < kVocab; ++i) row[static_cast<size_t>(order[static_cast<size_t>(i)])] = 2.0f - 0.05f * static_cast<float>(i);
    row[static_cast<size_t>(order[0])] += peak;
    *top = order[0];
    return row;
}

struct Batch {
    std::vector<float> logits;                 // every sequence's positions back to back
    std::vector<std::vector<int32_t>> drafts;
    std::vector<std::vector<float>> q;         // rejection: dense rows, or q(x_i) per draft
    std::vector<sieve_draft_probs> kinds;
    int32_t rows = 0;
};

// Match: drafts of each position's lifted token, one in eight replaced.
// Rejection: q_i near p_i (the softmax of its logits at the chain's
// temperature, each perturbed by noise of 0.4), x_i drawn from it; odd
// sequences give q(x_i) alone (TOKEN), even ones the dense row.
Batch make_batch(sieve_verify_mode mode, uint32_t seed) {
    std::mt19937 gen(seed);
    Batch b;
    for (size_t s = 0; s < kLengths.size(); ++s) {
        const int32_t n = kLengths[s];
        b.drafts.emplace_back();
        b.q.emplace_back();
        b.kinds.push_back(mode == SIEVE_VERIFY_MATCH ? SIEVE_DRAFT_PROBS_NONE
                                                     : (s % 2 ? SIEVE_DRAFT_PROBS_TOKEN : SIEVE_DRAFT_PROBS_DENSE));
        for (int32_t i = 0; i <= n; ++i) {
            int32_t top = 0;
            const std::vector<float> row = spaced_row(gen, mode == SIEVE_VERIFY_MATCH ? 7.0f : 2.0f, &top);
            b.logits.insert(b.logits.end(), row.begin(), row.end());
            ++b.rows;
            if (i == n) break;
            if (mode == SIEVE_VERIFY_MATCH) {
                b.drafts.back().push_back(gen() % 8 == 0 ? (top + 1) % kVocab : top);
                continue;
            }
            std::normal_distribution<double> noise(0.0, 0.4);
            std::vector<double> q(kVocab);
            double total = 0.0;
            for (int32_t x = 0; x < kVocab; ++x)
                total += q[static_cast<size_t>(x)] = std::exp(row[static_cast<size_t>(x)] / 0.8 + noise(gen));
            for (double& v : q) v /= total;
            const int32_t x = std::discrete_distribution<int32_t>(q.begin(), q.end())(gen);
            b.drafts.back().push_back(x);
            if (b.kinds.back() == SIEVE_DRAFT_PROBS_TOKEN) b.q.back().push_back(static_cast<float>(q[static_cast<size_t>(x)]));
            else b.q.back().insert(b.q.back().end(), q.begin(), q.end());
        }
    }
    return b;
}

// A chain with penalties and DRY (they read the slot's history plus the
// drafts), every sequence on a slot of its own with a history of its own and
// parameters of its own.
sieve::Chain make_chain(const sieve::Context& ctx, uint32_t seed) {
    const int32_t n_seq = static_cast<int32_t>(kLengths.size());
    auto desc = chain_desc("penalties;dry;top_k;top_p;min_p;temperature;dist", 64, kVocab, 0.8f, seed);
    desc.slots(2 * n_seq + 1);
    sieve::Chain c(ctx, desc);
    c.set(SIEVE_PARAM_REPEAT_PENALTY, 1.3);
    c.set(SIEVE_PARAM_DRY_MULTIPLIER, 0.8);
    c.set(SIEVE_PARAM_TOP_P, 0.97);
    c.set(SIEVE_PARAM_MIN_P, 0.002);
    // Sequence s is row s: its own top_k, temperature and logit bias.
    for (int32_t s = 0; s < n_seq; ++s) {
        c.set(SIEVE_PARAM_TOP_K, 100 + 10 * s, s);
        c.set(SIEVE_PARAM_TEMPERATURE, 0.7 + 0.05 * s, s);
        c.set_logit_bias({3 * s, 3 * s + 1}, {-INFINITY, 1.0f}, s);
    }
    for (int32_t s = 0; s < n_seq; ++s) {
        c.set_slots({2 * s + 1});
        c.accept(0, {s, 9, s + 40, 9, s});
    }
    std::vector<int32_t> slots;
    for (int32_t s = 0; s < n_seq; ++s) slots.push_back(2 * s + 1);
    c.set_slots(slots);
    return c;
}

TEST(VerifyBackends, GpuEqualsTheTwinTokenForToken) {
    sieve::Context gpu = gpu_context(), cpu = cpu_context();
    for (sieve_verify_mode mode : {SIEVE_VERIFY_MATCH, SIEVE_VERIFY_REJECTION}) {
        int emitted = 0, accepted = 0, stopped = 0;
        for (uint32_t seed : {3u, 1234u, 987654u}) {
            // f32 rows back to back; f16 and bf16 rows inside a wider tensor.
            const sieve_dtype dtype = seed == 3u ? SIEVE_DTYPE_F32 : seed == 1234u ? SIEVE_DTYPE_F16 : SIEVE_DTYPE_BF16;
            const int64_t stride = dtype == SIEVE_DTYPE_F32 ? kVocab : kVocab + 7;
            SCOPED_TRACE(std::string(mode == SIEVE_VERIFY_MATCH ? "match" : "rejection") + ", seed " +
                         std::to_string(seed) + ", dtype " + std::to_string(dtype));
            const Batch b = make_batch(mode, seed);
            std::vector<uint16_t> bits(static_cast<size_t>(b.rows * stride), 0xFFFF);  // NaN between the rows
            for (int32_t r = 0; r < b.rows; ++r)
                for (int32_t x = 0; x < kVocab; ++x)
                    bits[static_cast<size_t>(r * stride + x)] = to_half_bits(b.logits[static_cast<size_t>(r * kVocab + x)], dtype);
            std::vector<sieve_draft> drafts(kLengths.size());
            for (size_t s = 0; s < kLengths.size(); ++s) {
                sieve_draft_init(&drafts[s], b.drafts[s].data(), kLengths[s]);
                drafts[s].probs_kind = b.kinds[s];
                drafts[s].probs = b.kinds[s] == SIEVE_DRAFT_PROBS_NONE ? nullptr : b.q[s].data();
            }
            sieve_logits view;
            if (dtype == SIEVE_DTYPE_F32) {
                sieve_logits_init(&view, b.logits.data(), dtype, b.rows, kVocab);
            } else {
                sieve_logits_init(&view, bits.data(), dtype, b.rows, kVocab);
                view.row_stride = stride;
            }
            sieve::Chain on_gpu = make_chain(gpu, seed), on_cpu = make_chain(cpu, seed);
            // Two rounds: the second starts from the slots the first left.
            for (int round = 0; round < 2; ++round) {
                SCOPED_TRACE("round " + std::to_string(round));
                const auto g = on_gpu.verify(view, drafts, mode);
                const auto c = on_cpu.verify(view, drafts, mode);
                ASSERT_EQ(g.size(), c.size());
                for (size_t s = 0; s < g.size(); ++s) {
                    SCOPED_TRACE("sequence " + std::to_string(s));
                    ASSERT_EQ(c[s].status, SIEVE_OK);
                    ASSERT_EQ(g[s].status, SIEVE_OK);
                    EXPECT_EQ(g[s].n_accepted, c[s].n_accepted);
                    ASSERT_EQ(g[s].tokens.size(), c[s].tokens.size());
                    for (size_t i = 0; i < g[s].tokens.size(); ++i) {
                        EXPECT_EQ(g[s].tokens[i].token, c[s].tokens[i].token) << "position " << i;
                        EXPECT_EQ(g[s].tokens[i].step, c[s].tokens[i].step) << "position " << i;
                        EXPECT_EQ(g[s].tokens[i].seed, c[s].tokens[i].seed) << "position " << i;
                        EXPECT_NEAR(g[s].tokens[i].p, c[s].tokens[i].p, 1e-6f + 1e-4f * c[s].tokens[i].p)
                            << "position " << i;
                    }
                    EXPECT_EQ(on_gpu.save_slot(2 * static_cast<int32_t>(s) + 1),
                              on_cpu.save_slot(2 * static_cast<int32_t>(s) + 1));
                    emitted += static_cast<int>(c[s].tokens.size());
                    accepted += c[s].n_accepted;
                    stopped += c[s].n_accepted < kLengths[s] ? 1 : 0;
                }
            }
        }
        std::printf("%s: %d tokens emitted, %d drafts accepted, %d of 42 sequences stopped before their bonus\n",
                    mode == SIEVE_VERIFY_MATCH ? "match" : "rejection", emitted, accepted, stopped);
        // Both outcomes occur often enough for the comparison to mean something.
        EXPECT_GT(accepted, 40);
        EXPECT_GT(stopped, 10);
    }
}

} // namespace
