// sieve_verify_vulkan: drafts verified from the app's VkBuffer give the
// tokens, and leave the slots, exactly as sieve_verify over the same values in
// host memory, in one submission; what it refuses.
#include "app_logits.hpp"

#include <sieve/sieve_vulkan.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

constexpr int32_t kVocab = 3000;

struct Verified {
    std::vector<sieve_token> tokens;
    std::vector<sieve_verified> out;
    sieve_status status;
};

template <typename Call>
Verified run(Call call, int32_t rows, size_t n_seq) {
    Verified v;
    v.tokens.resize(static_cast<size_t>(rows));
    v.out.resize(n_seq);
    v.status = call(v.tokens.data(), v.out.data());
    return v;
}

TEST(VerifyDevice, EqualsHostLogitsInOneSubmission) {
    AppDevice app;
    auto ctx = app_context(app);
    const std::vector<int32_t> lengths = {2, 0, 4};
    const int32_t rows = 2 + 1 + 0 + 1 + 4 + 1;
    int accepted = 0;
    for (sieve_dtype dtype : {SIEVE_DTYPE_F32, SIEVE_DTYPE_F16}) {
        SCOPED_TRACE("dtype " + std::to_string(dtype));
        AppLogits a = make_app_logits(app, dtype, Shape::Zipf, rows, kVocab, kVocab + 5, 0, 77);
        app.copy_on_queue(a.staging, a.tensor);
        sieve::Chain device(*ctx, chain_desc("penalties;top_k;temperature;dist", rows, kVocab, 0.1f, 9));
        sieve::Chain host(*ctx, chain_desc("penalties;top_k;temperature;dist", rows, kVocab, 0.1f, 9));
        // Drafts of each position's argmax, mostly accepted at temperature 0.1;
        // the repeat penalty sees the drafts before a position.
        const std::vector<float> values = make_rows(Shape::Zipf, rows, kVocab, 77);
        std::vector<std::vector<int32_t>> tokens;
        std::vector<sieve_draft> drafts(lengths.size());
        int32_t row = 0;
        for (size_t s = 0; s < lengths.size(); ++s, ++row) {
            tokens.emplace_back();
            for (int32_t i = 0; i < lengths[s]; ++i, ++row) {
                const float* r = values.data() + static_cast<size_t>(row) * kVocab;
                tokens.back().push_back(static_cast<int32_t>(std::max_element(r, r + kVocab) - r));
            }
        }
        for (size_t s = 0; s < lengths.size(); ++s)
            sieve_draft_init(&drafts[s], tokens[s].data(), lengths[s]);
        for (sieve::Chain* c : {&device, &host}) {
            c->set(SIEVE_PARAM_REPEAT_PENALTY, 1.1);
            c->accept(0, {0, 1, 2});
        }
        for (int step = 0; step < 3; ++step) {
            SCOPED_TRACE("step " + std::to_string(step));
            const sieve_counters before = device.counters();
            const Verified got = run(
                [&](sieve_token* t, sieve_verified* o) {
                    return sieve_verify_vulkan(device.get(), &a.desc, drafts.data(), 3, SIEVE_VERIFY_MATCH, t, o);
                },
                rows, drafts.size());
            EXPECT_EQ(device.counters().submits - before.submits, 1u);
            const Verified want = run(
                [&](sieve_token* t, sieve_verified* o) {
                    return sieve_verify(host.get(), &a.host, drafts.data(), 3, SIEVE_VERIFY_MATCH, t, o);
                },
                rows, drafts.size());
            ASSERT_EQ(got.status, SIEVE_OK) << sieve_last_error();
            ASSERT_EQ(want.status, SIEVE_OK);
            for (size_t s = 0; s < drafts.size(); ++s) {
                EXPECT_EQ(got.out[s].n_tokens, want.out[s].n_tokens) << "sequence " << s;
                EXPECT_GE(got.out[s].n_tokens, 1);
                accepted += got.out[s].n_accepted;
            }
            for (int32_t r = 0; r < rows; ++r) {
                EXPECT_EQ(got.tokens[static_cast<size_t>(r)].token, want.tokens[static_cast<size_t>(r)].token) << r;
                EXPECT_EQ(got.tokens[static_cast<size_t>(r)].step, want.tokens[static_cast<size_t>(r)].step) << r;
                EXPECT_EQ(got.tokens[static_cast<size_t>(r)].p, want.tokens[static_cast<size_t>(r)].p) << r;
            }
            for (int32_t slot = 0; slot < 3; ++slot) EXPECT_EQ(device.save_slot(slot), host.save_slot(slot));
        }
    }
    EXPECT_GE(accepted, 4) << "drafts past position 0 should be reached";
}

TEST(VerifyDevice, RefusesWhatItCannotVerify) {
    AppDevice app;
    auto ctx = app_context(app);
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, 2, 100, 100, 0, 3);
    app.copy_on_queue(a.staging, a.tensor);
    const int32_t draft = 0;
    const float q = 1.0f;
    sieve_draft d;
    sieve_draft_init(&d, &draft, 1);
    sieve_token tokens[2];
    sieve_verified out{};
    {
        sieve::Chain c(*ctx, chain_desc("temperature;dist", 2, 100, 0.8f, 1));
        const auto before = c.save_slot(0);
        d.probs_kind = SIEVE_DRAFT_PROBS_TOKEN;
        d.probs = &q;
        EXPECT_EQ(sieve_verify_vulkan(c.get(), &a.desc, &d, 1, SIEVE_VERIFY_REJECTION, tokens, &out),
                  SIEVE_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(sieve_last_error()).find("host memory"), std::string::npos) << sieve_last_error();
        EXPECT_EQ(out.status, SIEVE_ERROR_INVALID_ARGUMENT);
        EXPECT_EQ(c.save_slot(0), before);
    }
    {
        sieve::Chain c(*ctx, chain_desc("temperature;mirostat_v2", 2, 100, 0.8f, 1));
        sieve_draft_init(&d, &draft, 1);
        EXPECT_EQ(sieve_verify_vulkan(c.get(), &a.desc, &d, 1, SIEVE_VERIFY_MATCH, tokens, &out),
                  SIEVE_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(sieve_last_error()).find("mirostat"), std::string::npos) << sieve_last_error();
    }
    {
        sieve::Chain c(*ctx, chain_desc("temperature;dist", 2, 100, 0.8f, 1));
        sieve_vulkan_logits small = a.desc;
        small.size = 100;  // the two rows need 800 bytes
        EXPECT_EQ(sieve_verify_vulkan(c.get(), &small, &d, 1, SIEVE_VERIFY_MATCH, tokens, &out),
                  SIEVE_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(sieve_last_error()).find("too small"), std::string::npos) << sieve_last_error();
        EXPECT_EQ(sieve_verify_vulkan(c.get(), nullptr, &d, 1, SIEVE_VERIFY_MATCH, tokens, &out),
                  SIEVE_ERROR_INVALID_ARGUMENT);
    }
}

} // namespace
