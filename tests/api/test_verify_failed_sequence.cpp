// A sequence whose verification reads a non-finite logit fails alone (issue
// 27; sieve.h, sieve_verify): its status, token -1 in each of its rows, its
// slot unchanged, while the other sequences of the call are verified and
// committed. A position the verification never reaches (after the first
// mismatch or rejection) is not read: a NaN there fails nothing. A call
// that fails as a whole (a wait that ran out) changes no slot, even part way
// through a learner chain's waves (VerifyCallFails).
#include "test_support.hpp"
#include "vulkan/wait_fault.hpp"

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

// Every draft accepted into a full ring of 5 whose head is at 2 (7 tokens
// accepted): the 4 emitted tokens wrap it again (the commit appends after
// the head and count the call read at its start), in both modes.
TEST_P(VerifyFailedSequence, EmittedTokensWrapTheRing) {
    for (sieve_verify_mode mode : kModes) {
        SCOPED_TRACE(mode == SIEVE_VERIFY_MATCH ? "match" : "rejection");
        chain_ = sieve::Chain(ctx_, chain_desc("top_k;temperature;dist", kRows, kVocab, 0.8f, 21u).slots(8).history_capacity(5));
        chain_.set(SIEVE_PARAM_TOP_K, 1);
        chain_.set_slots(kSlots);
        for (int32_t s = 0; s < kSeqs; ++s) chain_.accept(s, {1, 2, 3, 4, 5, 6, 7 + s});
        const Result r = verify(mode);
        ASSERT_EQ(r.status, SIEVE_OK) << r.message;
        for (int32_t s = 0; s < kSeqs; ++s) {
            SCOPED_TRACE("sequence " + std::to_string(s));
            expect_verified(r, s, kDraft + 1);
            std::vector<int32_t> expected = {7 + s};
            for (int32_t i = 0; i <= kDraft; ++i) expected.push_back(argmax_[s * (kDraft + 1) + i]);
            EXPECT_EQ(chain_.slot_history(kSlots[static_cast<size_t>(s)]), expected);
            EXPECT_EQ(r.tokens[s * (kDraft + 1)].step, 0u);  // accept() leaves the step
        }
        const Result next = verify(mode);
        ASSERT_EQ(next.status, SIEVE_OK) << next.message;
        for (int32_t s = 0; s < kSeqs; ++s)
            EXPECT_EQ(next.tokens[s * (kDraft + 1)].step, static_cast<uint32_t>(kDraft + 1)) << "sequence " << s;
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

// A call-level failure (here a wait that ran out, through the test seam
// wait_fault.hpp): the call fails with the wait's status, every slot is as
// the call found it, and the chain stays usable: the same verification then
// gives what it gives on a chain that never failed. Only the GPU backend
// waits.
class VerifyCallFails : public VerifyFailedSequence {
protected:
    void TearDown() override { sieve::wait_fault::disarm(); }
    // The fixture's chain again, or a learner (mirostat v2 after top-k 1)
    // whose slots hold 3 tokens of a ring of 5.
    void fresh_chain(bool learner) {
        chain_ = learner ? sieve::Chain(ctx_, chain_desc("top_k;mirostat_v2", kRows, kVocab, 0.8f, 21u)
                                                  .slots(8)
                                                  .history_capacity(5))
                         : sieve::Chain(ctx_, chain_desc("top_k;temperature;dist", kRows, kVocab, 0.8f, 21u).slots(8));
        chain_.set(SIEVE_PARAM_TOP_K, 1);
        chain_.set_slots(kSlots);
        for (int32_t s = 0; s < kSeqs; ++s) chain_.accept(s, {1, 2, 3 + s});
    }

    // Verifies on a fresh chain (its waits counted), then, for each of those
    // waits, on a fresh chain whose wait runs out there, then again.
    void fail_each_wait(bool learner, sieve_verify_mode mode, uint64_t expected_waits) {
        fresh_chain(learner);
        const auto before = slots();
        const uint64_t submits = chain_.counters().submits;
        const Result clean = verify(mode);
        ASSERT_EQ(clean.status, SIEVE_OK) << clean.message;
        const auto verified = slots();
        const uint64_t waits = chain_.counters().submits - submits;
        ASSERT_EQ(waits, expected_waits);
        for (uint32_t failing = 0; failing < waits; ++failing) {
            SCOPED_TRACE("wait " + std::to_string(failing) + " runs out");
            fresh_chain(learner);
            ASSERT_TRUE(slots() == before);
            sieve::wait_fault::arm(failing, VK_TIMEOUT);
            const Result failed = verify(mode);
            sieve::wait_fault::disarm();
            EXPECT_EQ(failed.status, SIEVE_ERROR_TIMEOUT) << failed.message;
            for (int32_t s = 0; s < kSeqs; ++s) {
                EXPECT_EQ(failed.out[s].status, SIEVE_ERROR_TIMEOUT) << "sequence " << s;
                EXPECT_EQ(failed.out[s].n_tokens, 0) << "sequence " << s;
            }
            const auto after = slots();
            for (size_t s = 0; s < after.size(); ++s)
                EXPECT_TRUE(after[s] == before[s]) << "slot " << kSlots[s] << " changed";
            const Result again = verify(mode);
            ASSERT_EQ(again.status, SIEVE_OK) << again.message;
            for (int32_t r = 0; r < kRows; ++r) {
                EXPECT_EQ(again.tokens[r].token, clean.tokens[r].token) << "row " << r;
                EXPECT_EQ(again.tokens[r].p, clean.tokens[r].p) << "row " << r;
            }
            EXPECT_TRUE(slots() == verified);
        }
    }
};

// A learner chain verifies in waves, one a position (gpu_verify.cpp:
// verify_in_waves; every draft here is its position's argmax): when a wave's
// wait fails, the GPU has committed that wave and every one before it to the
// slots, the appends across the ring's wrap included; they are put back.
TEST_P(VerifyCallFails, ALearnerChainsWavesPutEverySlotBack) {
    fail_each_wait(true, SIEVE_VERIFY_MATCH, kDraft + 1);
}

// Every position in one submission, in either mode: the slots change only
// after its wait, when the host walks the positions.
TEST_P(VerifyCallFails, OneSubmissionsFailedWaitChangesNoSlot) {
    for (sieve_verify_mode mode : kModes) {
        SCOPED_TRACE(mode == SIEVE_VERIFY_MATCH ? "match" : "rejection");
        fail_each_wait(false, mode, 1);
    }
}

// The bonus wave's wait runs out, and so does the chain's next wait: the
// call puts the slots back without waiting (its submission still writes
// them), and they come back once a later wait finds the submission done.
// Here that wait is a read of a slot, which the app tries again after its
// timeout.
TEST_P(VerifyCallFails, ALearnerChainsSlotsComeBackOnceItsSubmissionHasFinished) {
    fresh_chain(true);
    const auto before = slots();
    sieve::wait_fault::arm(kDraft, VK_TIMEOUT, 2);
    const Result failed = verify(SIEVE_VERIFY_MATCH);
    EXPECT_EQ(failed.status, SIEVE_ERROR_TIMEOUT) << failed.message;
    size_t size = 0;
    ASSERT_EQ(sieve_chain_slot_state_size(chain_.get(), &size), SIEVE_OK);
    std::vector<uint8_t> blob(size);
    EXPECT_TRUE(Fails(sieve_chain_save_slot(chain_.get(), kSlots[0], blob.data(), blob.size()), SIEVE_ERROR_TIMEOUT,
                      {"still running"}));
    const auto after = slots();
    for (size_t s = 0; s < after.size(); ++s) EXPECT_TRUE(after[s] == before[s]) << "slot " << kSlots[s] << " changed";
}

INSTANTIATE_TEST_SUITE_P(Verify, VerifyCallFails, testing::Values(Backend::Gpu), backend_name);

} // namespace
