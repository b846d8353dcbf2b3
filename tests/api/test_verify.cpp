// sieve_verify (speculative decoding), on both backends: the match mode gives
// the tokens, and leaves the slots, exactly as calling sieve_sample position by
// position with the slot accepting each token does (llama.cpp's
// common_sampler_sample_and_accept_n).
#include "test_support.hpp"

#include <sieve/sieve.h>

#include <random>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

using Backend = OnBackend;

class Verify : public testing::TestWithParam<Backend> {
protected:
    sieve::Context ctx_ = backend_context(GetParam());
};

constexpr int32_t kVocab = 500;

// Positions whose sampled token is usually the row's argmax (a peaked row at
// a low temperature), so drafts of argmaxes are mostly accepted. repeat: the
// same argmax at every position, so the penalties and DRY see the drafts
// before a position (its frequency penalty grows with each).
std::vector<float> peaked_positions(int32_t positions, uint32_t seed, bool repeat, std::vector<int32_t>* argmax) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::vector<float> rows(static_cast<size_t>(positions) * kVocab);
    for (int32_t p = 0; p < positions; ++p) {
        float* row = rows.data() + static_cast<size_t>(p) * kVocab;
        for (int32_t v = 0; v < kVocab; ++v) row[v] = noise(gen);
        const int32_t top = repeat ? 42 : static_cast<int32_t>(gen() % kVocab);
        row[top] += 12.0f;
        argmax->push_back(top);
    }
    return rows;
}

struct Sequence {
    int32_t slot;
    std::vector<int32_t> draft;
    std::vector<float> logits;  // n_draft + 1 positions
};

// Each chain: several sequences with different draft lengths (0, 1, 4, 8,
// 16), drafts of argmaxes with one deliberately wrong at some position.
TEST_P(Verify, MatchEqualsSamplingPositionByPosition) {
    int accepted = 0, rejected = 0;  // over every chain (adaptive-p, targeting p 0.3, rejects argmaxes)
    for (const char* samplers : {"temperature;dist", "penalties;dry;top_k;top_p;min_p;temperature;dist",
                                 "temperature;mirostat_v2", "top_k;temperature;adaptive_p", "greedy"}) {
        SCOPED_TRACE(samplers);
        const int32_t lengths[] = {0, 1, 4, 8, 16, 3};
        const int32_t n_seq = 6;
        std::vector<Sequence> seqs;
        int32_t total = 0;
        for (int32_t s = 0; s < n_seq; ++s) {
            Sequence q;
            q.slot = 2 * s + 1;  // not the row's own slot: the mapping is honoured
            std::vector<int32_t> argmax;
            q.logits = peaked_positions(lengths[s] + 1, 100u + static_cast<uint32_t>(s), s % 3 != 1, &argmax);
            q.draft.assign(argmax.begin(), argmax.begin() + lengths[s]);
            if (s % 2 == 1 && lengths[s] > 2) q.draft[static_cast<size_t>(lengths[s] / 2)] = (argmax[static_cast<size_t>(lengths[s] / 2)] + 1) % kVocab;
            total += lengths[s] + 1;
            seqs.push_back(q);
        }
        auto desc = chain_desc(samplers, total, kVocab, 0.7f, 99u);
        desc.slots(2 * n_seq + 2);
        sieve::Chain verifying(ctx_, desc), looping(ctx_, desc);
        for (sieve::Chain* c : {&verifying, &looping}) {
            c->set(SIEVE_PARAM_REPEAT_PENALTY, 1.3);
            c->set(SIEVE_PARAM_FREQUENCY_PENALTY, 0.4);
            c->set(SIEVE_PARAM_DRY_MULTIPLIER, 0.8);
            c->set(SIEVE_PARAM_ADAPTIVE_TARGET, 0.3);
            // A history per slot, so the penalties and DRY see one.
            for (int32_t s = 0; s < n_seq; ++s) {
                std::vector<int32_t> slots(1, seqs[static_cast<size_t>(s)].slot);
                c->set_slots(slots);
                c->accept(0, {3, 4, 5, 3, 4, seqs[static_cast<size_t>(s)].draft.empty() ? 7 : seqs[static_cast<size_t>(s)].draft[0]});
            }
        }
        // Verify all sequences in one call.
        std::vector<int32_t> slots;
        std::vector<float> logits;
        std::vector<sieve_draft> drafts(static_cast<size_t>(n_seq));
        for (int32_t s = 0; s < n_seq; ++s) {
            const Sequence& q = seqs[static_cast<size_t>(s)];
            slots.push_back(q.slot);
            logits.insert(logits.end(), q.logits.begin(), q.logits.end());
            sieve_draft_init(&drafts[static_cast<size_t>(s)], q.draft.data(), static_cast<int32_t>(q.draft.size()));
        }
        verifying.set_slots(slots);
        sieve_logits view;
        sieve_logits_init(&view, logits.data(), SIEVE_DTYPE_F32, total, kVocab);
        const sieve_counters before = verifying.counters();
        const auto got = verifying.verify(view, drafts, SIEVE_VERIFY_MATCH);
        // Every position of every sequence in one submission on the GPU, but
        // for the chains whose learnt state makes each position wait for the
        // one before: one submission per position then, every sequence's
        // position i in the same one (at most 17 for drafts of 16).
        const bool learns = std::string(samplers).find("mirostat") != std::string::npos ||
                            std::string(samplers).find("adaptive_p") != std::string::npos;
        if (GetParam() == Backend::Gpu) {
            const uint64_t submits = verifying.counters().submits - before.submits;
            if (learns) {
                EXPECT_GE(submits, 1u);
                EXPECT_LE(submits, 17u);
            } else {
                EXPECT_EQ(submits, 1u);
            }
        }
        ASSERT_EQ(got.size(), static_cast<size_t>(n_seq));
        for (int32_t s = 0; s < n_seq; ++s) {
            SCOPED_TRACE("sequence " + std::to_string(s));
            const Sequence& q = seqs[static_cast<size_t>(s)];
            looping.set_slots(std::vector<int32_t>(1, q.slot));
            std::vector<sieve_token> want;
            for (size_t i = 0; i <= q.draft.size(); ++i) {
                const sieve_token t = looping.sample(q.logits.data() + i * kVocab, 1, kVocab)[0];
                ASSERT_EQ(t.status, SIEVE_OK);
                want.push_back(t);
                if (i == q.draft.size() || t.token != q.draft[i]) break;
            }
            const auto& v = got[static_cast<size_t>(s)];
            ASSERT_EQ(v.status, SIEVE_OK);
            ASSERT_EQ(v.tokens.size(), want.size());
            EXPECT_EQ(v.n_accepted, static_cast<int32_t>(want.size()) - 1);
            accepted += v.n_accepted;
            rejected += v.n_accepted < static_cast<int32_t>(q.draft.size()) ? 1 : 0;
            for (size_t i = 0; i < want.size(); ++i) {
                EXPECT_EQ(v.tokens[i].token, want[i].token) << "position " << i;
                EXPECT_EQ(v.tokens[i].step, want[i].step) << "position " << i;
                EXPECT_NEAR(v.tokens[i].p, want[i].p, 1e-6f + 1e-5f * want[i].p) << "position " << i;
            }
            // The slot holds the same history, step and learnt state.
            EXPECT_EQ(verifying.save_slot(q.slot), looping.save_slot(q.slot));
        }
    }
    EXPECT_GT(accepted, 80) << "the drafts should mostly be accepted";
    EXPECT_GT(rejected, 5) << "sequences should stop at wrong drafts";
}

// A sequence with no draft needs no draft probabilities in the rejection mode
// either: its one token is the bonus, the chain's ordinary draw at its step.
TEST_P(Verify, RejectionTakesASequenceWithNoDraftAndNoProbs) {
    constexpr int32_t kV = 50;
    const auto desc = chain_desc("top_k;temperature;dist", 3, kV, 0.9f, 5);
    sieve::Chain verifying(ctx_, desc), sampling(ctx_, desc);
    std::vector<int32_t> argmax;
    const std::vector<float> rows = peaked_positions(3, 8u, false, &argmax);
    std::vector<float> logits;
    for (int r = 0; r < 3; ++r) logits.insert(logits.end(), rows.begin() + r * kVocab, rows.begin() + r * kVocab + kV);
    const int32_t draft = 3;
    const float q = 1.0f;
    std::vector<sieve_draft> drafts(2);
    sieve_draft_init(&drafts[0], &draft, 1);
    drafts[0].probs_kind = SIEVE_DRAFT_PROBS_TOKEN;
    drafts[0].probs = &q;
    sieve_draft_init(&drafts[1], nullptr, 0);
    sieve_logits view;
    sieve_logits_init(&view, logits.data(), SIEVE_DTYPE_F32, 3, kV);
    const auto got = verifying.verify(view, drafts, SIEVE_VERIFY_REJECTION);
    ASSERT_EQ(got[1].status, SIEVE_OK);
    ASSERT_EQ(got[1].tokens.size(), 1u);
    // Row 1 of a plain call on the same rows: the bonus's logits are the third row.
    std::vector<float> both(logits.begin(), logits.begin() + 2 * kV);
    both.insert(both.end(), logits.begin() + 2 * kV, logits.end());
    const auto want = sampling.sample(both.data() + kV, 2, kV);
    EXPECT_EQ(got[1].tokens[0].token, want[1].token);
    EXPECT_EQ(got[1].tokens[0].step, want[1].step);
}

// The positions take the chain's rows for the call: afterwards every row has
// its own parameters and slot again, the rows past the sequences' included
// (here the 8 positions of 2 sequences use all 8 rows).
TEST_P(Verify, LeavesEveryRowsParametersAndSlotAsTheyWere) {
    constexpr int32_t kRows = 8;
    sieve::Chain chain(ctx_, chain_desc("penalties;top_k;temperature;dist", kRows, kVocab, 0.5f, 3));
    const std::vector<int32_t> slots = {7, 6, 5, 4, 3, 2, 1, 0};
    chain.set_slots(slots);
    for (int32_t r = 0; r < kRows; ++r) {
        chain.set(SIEVE_PARAM_TEMPERATURE, 0.5 + 0.1 * r, r);
        chain.set(SIEVE_PARAM_TOP_K, 10 + r, r);
        chain.set(SIEVE_PARAM_REPEAT_PENALTY, 1.0 + 0.01 * r, r);
    }
    std::vector<int32_t> argmax;
    const std::vector<float> logits = peaked_positions(kRows, 21u, false, &argmax);
    const std::vector<int32_t> first = {argmax[0], argmax[1], argmax[2]}, second = {argmax[4], argmax[5], argmax[6]};
    std::vector<sieve_draft> drafts(2);
    sieve_draft_init(&drafts[0], first.data(), 3);
    sieve_draft_init(&drafts[1], second.data(), 3);
    sieve_logits view;
    sieve_logits_init(&view, logits.data(), SIEVE_DTYPE_F32, kRows, kVocab);
    for (int step = 0; step < 2; ++step) {
        const auto got = chain.verify(view, drafts, SIEVE_VERIFY_MATCH);
        ASSERT_EQ(got[0].status, SIEVE_OK);
        ASSERT_EQ(got[1].status, SIEVE_OK);
    }
    for (int32_t r = 0; r < kRows; ++r) {
        SCOPED_TRACE("row " + std::to_string(r));
        EXPECT_FLOAT_EQ(static_cast<float>(chain.get_param(SIEVE_PARAM_TEMPERATURE, r)), 0.5f + 0.1f * r);
        EXPECT_EQ(chain.get_param(SIEVE_PARAM_TOP_K, r), 10 + r);
        EXPECT_FLOAT_EQ(static_cast<float>(chain.get_param(SIEVE_PARAM_REPEAT_PENALTY, r)), 1.0f + 0.01f * r);
        // The row still appends to its own slot.
        const int32_t token = 100 + r;
        chain.accept(r, {token});
        const std::vector<int32_t> history = chain.slot_history(slots[static_cast<size_t>(r)]);
        ASSERT_FALSE(history.empty());
        EXPECT_EQ(history.back(), token);
    }
}

INSTANTIATE_TEST_SUITE_P(Verify, Verify, testing::Values(Backend::Gpu, Backend::Cpu),
                         backend_name);

} // namespace
