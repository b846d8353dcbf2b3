// sieve_verify's refused inputs (issue 27, item 4), on both backends: each
// gets its own status and a last error that names the problem, changes no
// slot (every slot's saved blob is the same after the call), and writes the
// call's status into out[s] with no tokens. Each test changes one thing in a
// call the control test shows is accepted.
#include "app_logits.hpp"
#include "test_support.hpp"

#include <sieve/sieve.h>
#include <sieve/sieve_vulkan.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

using Backend = OnBackend;

constexpr int32_t kRows = 8, kVocab = 32;

class VerifyBadInput : public testing::TestWithParam<Backend> {
protected:
    VerifyBadInput() : ctx_(backend_context(GetParam())) {
        build("penalties;top_k;temperature;dist");
        // The call: sequence 0 drafts {3, 5}, sequence 1 drafts {7}: 5 rows,
        // a uniform dense q per draft.
        logits_ = make_rows(Shape::Gaussian, 5, kVocab, 9);
        sieve_logits_init(&view_, logits_.data(), SIEVE_DTYPE_F32, 5, kVocab);
        q_.assign(3 * kVocab, 1.0f / kVocab);
        drafts_.resize(kRows + 1);
        for (auto& d : drafts_) sieve_draft_init(&d, nullptr, 0);
        sieve_draft_init(&drafts_[0], draft0_.data(), 2);
        sieve_draft_init(&drafts_[1], draft1_.data(), 1);
        use_probs(SIEVE_DRAFT_PROBS_DENSE);
        tokens_.resize(kRows + 1);
        out_.resize(kRows + 1);
        drafts_arg_ = drafts_.data();
        tokens_arg_ = tokens_.data();
        out_arg_ = out_.data();
    }

    // A chain of `samplers` whose slots each hold a history of their own.
    void build(const char* samplers) {
        chain_ = std::make_unique<sieve::Chain>(ctx_, chain_desc(samplers, kRows, kVocab, 0.9f, 5u));
        chain_arg_ = chain_->get();
        for (int32_t r = 0; r < kRows; ++r) chain_->accept(r, {r, r + 1, 2 * r});
    }

    void use_probs(sieve_draft_probs kind) {
        for (int32_t s = 0; s < 2; ++s) drafts_[s].probs_kind = kind;
        drafts_[0].probs = kind == SIEVE_DRAFT_PROBS_NONE ? nullptr : q_.data();
        drafts_[1].probs = kind == SIEVE_DRAFT_PROBS_NONE ? nullptr : q_.data() + 2 * kVocab;
        if (kind == SIEVE_DRAFT_PROBS_TOKEN) {
            drafts_[0].probs = token_q_.data();
            drafts_[1].probs = token_q_.data() + 2;
        }
    }
    void use_match() {
        mode_ = SIEVE_VERIFY_MATCH;
        use_probs(SIEVE_DRAFT_PROBS_NONE);
    }

    std::vector<std::vector<uint8_t>> slots() {
        std::vector<std::vector<uint8_t>> all;
        for (int32_t s = 0; s < kRows; ++s) all.push_back(chain_->save_slot(s));
        return all;
    }

    sieve_status call() {
        // An unknown mode is kept as an integer: an enum object holding 7 is
        // UB to load (UBSan's enum check); the call gets the converted value.
        return sieve_verify(chain_arg_, logits_arg_, drafts_arg_, n_seq_, static_cast<sieve_verify_mode>(mode_),
                            tokens_arg_, out_arg_);
    }

    // The call fails with `want` and a message naming every part; no slot
    // changed, out[s] (s < min(n_seq, max_rows)) carries the status.
    void refused(sieve_status want, std::initializer_list<std::string> parts) {
        const auto before = slots();
        std::fill(out_.begin(), out_.end(), sieve_verified{SIEVE_OK, 99, 98});
        const sieve_status got = call();
        EXPECT_TRUE(Fails(got, want, parts));
        if (out_arg_)
            for (int32_t s = 0; s < std::min(n_seq_, kRows); ++s) {
                EXPECT_EQ(out_[s].status, want) << "out[" << s << "]";
                EXPECT_EQ(out_[s].n_tokens, 0) << "out[" << s << "]";
                EXPECT_EQ(out_[s].n_accepted, 0) << "out[" << s << "]";
            }
        EXPECT_TRUE(slots() == before) << "a refused call changed a slot";
    }

    sieve::Context ctx_;
    std::unique_ptr<sieve::Chain> chain_;
    std::vector<float> logits_, q_;
    std::vector<int32_t> draft0_ = {3, 5}, draft1_ = {7};
    std::vector<float> token_q_ = {0.5f, 0.25f, 1.0f};
    sieve_logits view_{};
    std::vector<sieve_draft> drafts_;
    std::vector<sieve_token> tokens_;
    std::vector<sieve_verified> out_;

    sieve_chain* chain_arg_ = nullptr;
    const sieve_logits* logits_arg_ = &view_;
    const sieve_draft* drafts_arg_ = nullptr;
    int32_t n_seq_ = 2;
    int32_t mode_ = SIEVE_VERIFY_REJECTION;
    sieve_token* tokens_arg_ = nullptr;
    sieve_verified* out_arg_ = nullptr;
};

// The control: the unchanged call is taken in both modes and every form of q,
// so each refusal below is the one change's doing.
TEST_P(VerifyBadInput, TheUnchangedCallIsTaken) {
    for (sieve_draft_probs kind : {SIEVE_DRAFT_PROBS_DENSE, SIEVE_DRAFT_PROBS_TOKEN, SIEVE_DRAFT_PROBS_NONE}) {
        SCOPED_TRACE(static_cast<int>(kind));
        if (kind == SIEVE_DRAFT_PROBS_NONE) use_match();
        else use_probs(kind);
        const auto before = slots();
        ASSERT_EQ(call(), SIEVE_OK) << sieve_last_error();
        for (int32_t s = 0; s < 2; ++s) {
            EXPECT_EQ(out_[s].status, SIEVE_OK);
            EXPECT_GE(out_[s].n_tokens, 1);
        }
        EXPECT_FALSE(slots() == before) << "the call advanced no slot";
        for (int32_t s = 0; s < 2; ++s) chain_->restore_slot(s, before[static_cast<size_t>(s)]);
    }
}

TEST_P(VerifyBadInput, NullChain) {
    chain_arg_ = nullptr;
    out_arg_ = nullptr;  // without a chain nothing bounds out: what it holds is not checked
    refused(SIEVE_ERROR_NULL_HANDLE, {"chain"});
}

TEST_P(VerifyBadInput, NullLogits) {
    logits_arg_ = nullptr;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"logits is NULL"});
}

TEST_P(VerifyBadInput, NullDrafts) {
    drafts_arg_ = nullptr;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"drafts is NULL"});
}

TEST_P(VerifyBadInput, NullTokens) {
    tokens_arg_ = nullptr;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"tokens is NULL"});
}

TEST_P(VerifyBadInput, NullOut) {
    out_arg_ = nullptr;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"out is NULL"});
}

TEST_P(VerifyBadInput, NoSequences) {
    n_seq_ = 0;
    refused(SIEVE_ERROR_CAPACITY, {"n_seq 0", "1..8"});
}

TEST_P(VerifyBadInput, MoreSequencesThanRows) {
    n_seq_ = kRows + 1;
    refused(SIEVE_ERROR_CAPACITY, {"n_seq 9", "max_rows"});
}

TEST_P(VerifyBadInput, DraftStructSizeZero) {
    drafts_[1].struct_size = 0;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"drafts[1].struct_size is 0"});
}

TEST_P(VerifyBadInput, NegativeDraftLength) {
    drafts_[0].n_draft = -1;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"drafts[0].n_draft -1", "0..16"});
}

TEST_P(VerifyBadInput, DraftLengthPastTheLimit) {
    std::vector<int32_t> long_draft(SIEVE_MAX_DRAFT + 1, 3);
    std::vector<float> long_q((SIEVE_MAX_DRAFT + 1) * kVocab, 1.0f / kVocab);
    drafts_[0].n_draft = SIEVE_MAX_DRAFT + 1;
    drafts_[0].tokens = long_draft.data();
    drafts_[0].probs = long_q.data();
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"drafts[0].n_draft 17", "0..16"});
}

TEST_P(VerifyBadInput, NullDraftTokens) {
    drafts_[1].tokens = nullptr;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"drafts[1].tokens is NULL"});
}

TEST_P(VerifyBadInput, NegativeDraftId) {
    draft0_[1] = -1;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "draft token 1 is -1", "[0, 32)"});
}

TEST_P(VerifyBadInput, DraftIdPastTheVocab) {
    draft1_[0] = kVocab;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 1", "draft token 0 is 32", "[0, 32)"});
}

TEST_P(VerifyBadInput, DraftIdPastTheCallsVocab) {
    // The call's vocab, not the chain's capacity, bounds the ids.
    sieve_logits_init(&view_, logits_.data(), SIEVE_DTYPE_F32, 5, kVocab / 2);
    view_.row_stride = kVocab;
    draft0_[0] = kVocab / 2;
    use_probs(SIEVE_DRAFT_PROBS_TOKEN);
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "draft token 0 is 16", "[0, 16)"});
}

TEST_P(VerifyBadInput, UnknownMode) {
    mode_ = 7;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"unknown verify mode 7"});
}

TEST_P(VerifyBadInput, UnknownProbsKind) {
    drafts_[1].probs_kind = static_cast<sieve_draft_probs>(5);
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"drafts[1].probs_kind 5", "unknown"});
}

TEST_P(VerifyBadInput, MatchModeWithProbs) {
    mode_ = SIEVE_VERIFY_MATCH;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "match mode takes no draft probabilities"});
}

TEST_P(VerifyBadInput, RejectionModeWithoutProbs) {
    use_probs(SIEVE_DRAFT_PROBS_NONE);
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "rejection mode needs the draft's probabilities"});
}

TEST_P(VerifyBadInput, RejectionModeWithNullProbs) {
    drafts_[1].probs = nullptr;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 1", "draft probs is NULL"});
}

TEST_P(VerifyBadInput, DenseRowWithNaN) {
    q_[kVocab + 4] = std::numeric_limits<float>::quiet_NaN();
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "row 1", "nan", "at token 4", "finite and >= 0"});
}

TEST_P(VerifyBadInput, DenseRowWithNegativeValue) {
    q_[2 * kVocab + 6] = -0.01f;
    q_[2 * kVocab + 7] += 0.01f;  // still summing to 1
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 1", "row 0", "-0.01", "at token 6", "finite and >= 0"});
}

TEST_P(VerifyBadInput, DenseRowWithInfinity) {
    q_[9] = std::numeric_limits<float>::infinity();
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "row 0", "inf", "at token 9", "finite and >= 0"});
}

TEST_P(VerifyBadInput, DenseRowSummingToPointNine) {
    for (int32_t x = 0; x < kVocab; ++x) q_[kVocab + x] = 0.9f / kVocab;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "row 1", "sums to 0.9", "not 1 within 1e-3"});
}

TEST_P(VerifyBadInput, TokenProbabilityZero) {
    use_probs(SIEVE_DRAFT_PROBS_TOKEN);
    token_q_[1] = 0.0f;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0", "draft probability 1 is 0", "outside (0, 1]"});
}

TEST_P(VerifyBadInput, TokenProbabilityAboveOne) {
    use_probs(SIEVE_DRAFT_PROBS_TOKEN);
    token_q_[2] = 1.5f;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 1", "draft probability 0 is 1.5", "outside (0, 1]"});
}

TEST_P(VerifyBadInput, FewerLogitsRowsThanPositions) {
    view_.rows = 4;
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"need 5 rows", "the logits have 4"});
}

TEST_P(VerifyBadInput, MoreLogitsRowsThanPositions) {
    std::vector<float> rows(6 * kVocab, 0.5f);
    sieve_logits_init(&view_, rows.data(), SIEVE_DTYPE_F32, 6, kVocab);
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"need 5 rows", "the logits have 6"});
}

TEST_P(VerifyBadInput, TwoSequencesOnOneSlot) {
    chain_->set_slots({3, 3});
    refused(SIEVE_ERROR_INVALID_ARGUMENT, {"sequences 0 and 1 both map to slot 3", "sequence s takes row s's slot"});
}

// Rejection sampling changes how a token was drawn, which the learners'
// updates depend on: refused, while the match mode takes the same chain.
TEST_P(VerifyBadInput, RejectionModeOnALearningChain) {
    for (const char* samplers : {"mirostat", "temperature;mirostat_v2", "top_k;adaptive_p"}) {
        SCOPED_TRACE(samplers);
        build(samplers);
        mode_ = SIEVE_VERIFY_REJECTION;
        use_probs(SIEVE_DRAFT_PROBS_DENSE);
        refused(SIEVE_ERROR_INVALID_CHAIN, {"rejection mode", "mirostat, mirostat_v2 or adaptive_p"});
        use_match();
        EXPECT_EQ(call(), SIEVE_OK) << sieve_last_error();
    }
}

// A busy chain (an async sampling call in flight, on an app's device: GPU
// only) refuses the verification and changes nothing: after sieve_chain_wait
// its slots are those of a chain that only sampled.
TEST(VerifyBusyChain, IsRefusedWhileACallIsInFlight) {
    AppDevice app;
    auto ctx = app_context(app);
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Gaussian, 2, kVocab, kVocab, 0, 4);
    const auto desc = chain_desc("penalties;temperature;dist", kRows, kVocab, 0.9f, 5u);
    sieve::Chain busy(*ctx, desc), sampled_only(*ctx, desc);
    const std::vector<float> logits = make_rows(Shape::Gaussian, 2, kVocab, 9);
    sieve_logits view;
    sieve_logits_init(&view, logits.data(), SIEVE_DTYPE_F32, 2, kVocab);
    const int32_t draft = 3;
    sieve_draft d;
    sieve_draft_init(&d, &draft, 1);
    std::vector<sieve_token> tokens(2);
    sieve_verified out{SIEVE_OK, 99, 98};

    app.copy_on_queue(a.staging, a.tensor);
    ASSERT_EQ(sieve_sample_vulkan_async(busy.get(), &a.desc, nullptr), SIEVE_OK) << sieve_last_error();
    EXPECT_TRUE(Fails(sieve_verify(busy.get(), &view, &d, 1, SIEVE_VERIFY_MATCH, tokens.data(), &out),
                      SIEVE_ERROR_PENDING, {"in flight", "sieve_chain_wait"}));
    EXPECT_EQ(out.status, SIEVE_ERROR_PENDING);
    EXPECT_EQ(out.n_tokens, 0);
    std::vector<sieve_token> got(2), want(2);
    ASSERT_EQ(sieve_chain_wait(busy.get(), 120ull * 1000 * 1000 * 1000, got.data()), SIEVE_OK) << sieve_last_error();
    ASSERT_EQ(sieve_sample_logits(sampled_only.get(), &a.host, want.data()), SIEVE_OK) << sieve_last_error();
    for (int32_t s = 0; s < 2; ++s) {
        EXPECT_EQ(got[s].token, want[s].token);
        EXPECT_EQ(busy.save_slot(s), sampled_only.save_slot(s)) << "slot " << s;
    }
    EXPECT_EQ(sieve_verify(busy.get(), &view, &d, 1, SIEVE_VERIFY_MATCH, tokens.data(), &out), SIEVE_OK)
        << sieve_last_error();
}

const auto kBackends = testing::Values(Backend::Gpu, Backend::Cpu);
INSTANTIATE_TEST_SUITE_P(Verify, VerifyBadInput, kBackends, backend_name);

} // namespace
