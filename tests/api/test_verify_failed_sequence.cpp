// A sequence whose verification reads a non-finite logit fails alone (issue
// 27; sieve.h, sieve_verify): its status, token -1 in each of its rows, its
// slot unchanged, while the other sequences of the call are verified and
// committed. A position the verification never reaches (after the first
// mismatch or rejection) is not read: a NaN there fails nothing.
#include "test_support.hpp"

#include <sieve/sieve.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

using Backend = OnBackend;

constexpr int32_t kVocab = 40, kDraft = 3, kSeqs = 3, kRows = kSeqs * (kDraft + 1);
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
const std::vector<int32_t> kSlots = {5, 2, 7};

// top_k 1 makes every position's distribution one-hot on its argmax: a
// draft of argmaxes is accepted whole in both modes, a draft token that is
// not the argmax is a mismatch (match) or a certain rejection (p = 0).
class VerifyFailedSequence : public testing::TestWithParam<Backend> {
protected:
    VerifyFailedSequence()
        : ctx_(backend_context(GetParam())),
          chain_(ctx_, chain_desc("top_k;temperature;dist", kRows, kVocab, 0.8f, 21u).slots(8)) {
        chain_.set(SIEVE_PARAM_TOP_K, 1);
        chain_.set_slots(kSlots);
        for (int32_t s = 0; s < kSeqs; ++s) chain_.accept(s, {1, 2, 3 + s});
        logits_ = make_rows(Shape::Gaussian, kRows, kVocab, 17);
        for (int32_t r = 0; r < kRows; ++r) {
            const float* row = logits_.data() + static_cast<size_t>(r) * kVocab;
            argmax_.push_back(static_cast<int32_t>(std::max_element(row, row + kVocab) - row));
        }
        for (int32_t s = 0; s < kSeqs; ++s)
            drafts_.push_back(std::vector<int32_t>(argmax_.begin() + s * (kDraft + 1),
                                                   argmax_.begin() + s * (kDraft + 1) + kDraft));
    }

    float* at(int32_t seq, int32_t position) {
        return logits_.data() + static_cast<size_t>(seq * (kDraft + 1) + position) * kVocab;
    }
    void mismatch(int32_t seq, int32_t position) {
        int32_t& d = drafts_[static_cast<size_t>(seq)][static_cast<size_t>(position)];
        d = (d + 1) % kVocab;
    }

    struct Result {
        sieve_status status;
        std::string message;
        std::vector<sieve_token> tokens;
        std::vector<sieve_verified> out;
    };
    Result verify(sieve_verify_mode mode) {
        const std::vector<float> token_q(kDraft, 1.0f);
        std::vector<sieve_draft> d(kSeqs);
        for (int32_t s = 0; s < kSeqs; ++s) {
            sieve_draft_init(&d[s], drafts_[static_cast<size_t>(s)].data(), kDraft);
            if (mode == SIEVE_VERIFY_REJECTION) {
                d[s].probs_kind = SIEVE_DRAFT_PROBS_TOKEN;
                d[s].probs = token_q.data();
            }
        }
        sieve_logits view;
        sieve_logits_init(&view, logits_.data(), SIEVE_DTYPE_F32, kRows, kVocab);
        Result r{SIEVE_OK, "", std::vector<sieve_token>(kRows), std::vector<sieve_verified>(kSeqs)};
        r.status = sieve_verify(chain_.get(), &view, d.data(), kSeqs, mode, r.tokens.data(), r.out.data());
        r.message = sieve_last_error();
        return r;
    }

    std::vector<std::vector<uint8_t>> slots() {
        std::vector<std::vector<uint8_t>> all;
        for (int32_t slot : kSlots) all.push_back(chain_.save_slot(slot));
        return all;
    }

    // Sequence s succeeded with exactly `n` tokens, the argmaxes of its first
    // n positions, and its slot's history ends with them; its rows after
    // them hold token -1 and SIEVE_OK.
    void expect_verified(const Result& r, int32_t s, int32_t n) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        ASSERT_EQ(r.out[s].status, SIEVE_OK);
        ASSERT_EQ(r.out[s].n_tokens, n);
        const std::vector<int32_t> history = chain_.slot_history(kSlots[static_cast<size_t>(s)]);
        ASSERT_GE(history.size(), static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i) {
            EXPECT_EQ(r.tokens[s * (kDraft + 1) + i].token, argmax_[s * (kDraft + 1) + i]) << "position " << i;
            EXPECT_EQ(history[history.size() - static_cast<size_t>(n - i)], argmax_[s * (kDraft + 1) + i]);
        }
        for (int32_t i = n; i <= kDraft; ++i) {
            EXPECT_EQ(r.tokens[s * (kDraft + 1) + i].token, -1) << "position " << i;
            EXPECT_EQ(r.tokens[s * (kDraft + 1) + i].status, SIEVE_OK) << "position " << i;
        }
    }

    sieve::Context ctx_;
    sieve::Chain chain_;
    std::vector<float> logits_;
    std::vector<int32_t> argmax_;
    std::vector<std::vector<int32_t>> drafts_;
};

const sieve_verify_mode kModes[] = {SIEVE_VERIFY_MATCH, SIEVE_VERIFY_REJECTION};

// Sequence 1 reads a NaN at position 2 (its drafts 0 and 1 are accepted),
// sequence 2 a +inf at its bonus position (every draft accepted); sequence 0
// is clean.
TEST_P(VerifyFailedSequence, NanAtAReachedPositionFailsOnlyThatSequence) {
    at(1, 2)[7] = kNaN;
    at(2, kDraft)[3] = kInf;
    for (sieve_verify_mode mode : kModes) {
        SCOPED_TRACE(mode == SIEVE_VERIFY_MATCH ? "match" : "rejection");
        const auto before = slots();
        const Result r = verify(mode);
        EXPECT_EQ(r.status, SIEVE_ERROR_NON_FINITE_LOGIT) << r.message;
        EXPECT_NE(r.message.find("sequence 1"), std::string::npos) << r.message;
        EXPECT_NE(r.message.find("position 2"), std::string::npos) << r.message;
        expect_verified(r, 0, kDraft + 1);
        const auto after = slots();
        for (int32_t s : {1, 2}) {
            SCOPED_TRACE("sequence " + std::to_string(s));
            EXPECT_EQ(r.out[s].status, SIEVE_ERROR_NON_FINITE_LOGIT);
            EXPECT_EQ(r.out[s].n_tokens, 0);
            EXPECT_EQ(r.out[s].n_accepted, 0);
            for (int32_t i = 0; i <= kDraft; ++i) {
                EXPECT_EQ(r.tokens[s * (kDraft + 1) + i].token, -1) << "position " << i;
                EXPECT_EQ(r.tokens[s * (kDraft + 1) + i].status, SIEVE_ERROR_NON_FINITE_LOGIT) << "position " << i;
            }
            EXPECT_TRUE(after[static_cast<size_t>(s)] == before[static_cast<size_t>(s)]) << "the failed sequence's slot changed";
        }
        EXPECT_FALSE(after[0] == before[0]);
    }
}

// Sequence 1's draft 0 is wrong and its position 2 holds a NaN; sequence 2's
// draft 1 is wrong and its bonus row a NaN. Neither position is reached.
TEST_P(VerifyFailedSequence, NanPastTheFirstMismatchIsNotRead) {
    mismatch(1, 0);
    at(1, 2)[7] = kNaN;
    mismatch(2, 1);
    at(2, kDraft)[0] = kNaN;
    for (sieve_verify_mode mode : kModes) {
        SCOPED_TRACE(mode == SIEVE_VERIFY_MATCH ? "match" : "rejection");
        const Result r = verify(mode);
        EXPECT_EQ(r.status, SIEVE_OK) << r.message;
        expect_verified(r, 0, kDraft + 1);
        expect_verified(r, 1, 1);
        expect_verified(r, 2, 2);
    }
}

// A learner chain (mirostat v2 after top-k 1: each position's token is its
// argmax) verifies position by position, committing as it goes
// (gpu_verify.cpp: verify_in_waves); a sequence that fails part way gets its
// slot back word for word, here across the ring's wrap: capacity 5, three
// tokens held, three appended before the NaN at its bonus position.
TEST_P(VerifyFailedSequence, ALearnerChainsFailedSequenceGetsItsSlotBack) {
    chain_ = sieve::Chain(ctx_, chain_desc("top_k;mirostat_v2", kRows, kVocab, 0.8f, 21u).slots(8).history_capacity(5));
    chain_.set(SIEVE_PARAM_TOP_K, 1);
    chain_.set_slots(kSlots);
    for (int32_t s = 0; s < kSeqs; ++s) chain_.accept(s, {1, 2, 3 + s});
    at(1, kDraft)[7] = kNaN;
    const auto before = slots();
    const Result r = verify(SIEVE_VERIFY_MATCH);
    EXPECT_EQ(r.status, SIEVE_ERROR_NON_FINITE_LOGIT) << r.message;
    EXPECT_EQ(r.out[1].status, SIEVE_ERROR_NON_FINITE_LOGIT);
    EXPECT_EQ(r.out[1].n_tokens, 0);
    expect_verified(r, 0, kDraft + 1);
    expect_verified(r, 2, kDraft + 1);
    const auto after = slots();
    EXPECT_TRUE(after[1] == before[1]) << "the failed sequence's slot changed";
    EXPECT_FALSE(after[0] == before[0]);
}

INSTANTIATE_TEST_SUITE_P(Verify, VerifyFailedSequence, testing::Values(Backend::Gpu, Backend::Cpu),
                         backend_name);

} // namespace
