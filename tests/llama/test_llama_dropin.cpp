// The drop-in llama_sampler (include/sieve/sieve_llama.h): its refusals, and
// how accept, reset, clone and free map to the slot, against the fetched
// libllama. (Its draws against llama.cpp's: samples/llama_dropin.c, ctest
// llama_dropin.)
#include <llama.h>

#include <sieve/sieve_llama.h>

#include "test_support.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

struct Refusal {
    const char* what;
    void (*change)(sieve_llama_settings&);
    const char* message;  // a part of the logged reason
};

std::vector<int32_t> history(struct llama_sampler* smpl) {
    std::vector<int32_t> h(64);
    int32_t n = 0;
    EXPECT_EQ(sieve_chain_slot_history(sieve_llama_sampler_chain(smpl), sieve_llama_sampler_slot(smpl), h.data(), 64, &n),
              SIEVE_OK);
    h.resize(static_cast<size_t>(n));
    return h;
}

std::vector<llama_token_data> candidates(const std::vector<float>& row) {
    std::vector<llama_token_data> d(row.size());
    for (size_t i = 0; i < row.size(); ++i) d[i] = {static_cast<llama_token>(i), row[i], 0.0f};
    return d;
}

int32_t apply_row(struct llama_sampler* smpl, const std::vector<float>& row) {
    auto data = candidates(row);
    llama_token_data_array cur{data.data(), data.size(), -1, false};
    llama_sampler_apply(smpl, &cur);
    return cur.selected < 0 ? -1 : cur.data[cur.selected].id;
}

TEST(LlamaDropin, RefusesSettingsSieveCannotHonour) {
    sieve::Context cpu = sieve_test::cpu_context();
    static const int32_t bad_breaker_tokens[] = {5000};
    static const int32_t bad_breaker_lengths[] = {1};
    static const llama_logit_bias bad_bias[] = {{100000, 1.0f}};
    const Refusal refusals[] = {
        {"n_vocab 0", [](sieve_llama_settings& s) { s.n_vocab = 0; }, "n_vocab"},
        {"mirostat 3", [](sieve_llama_settings& s) { s.mirostat = 3; }, "mirostat"},
        {"max_sequences 0", [](sieve_llama_settings& s) { s.max_sequences = 0; }, "max_sequences"},
        {"penalty window -1 without n_ctx",
         [](sieve_llama_settings& s) { s.penalty_last_n = -1, s.penalty_repeat = 1.1f; }, "n_ctx"},
        {"DRY window -1 without n_ctx", [](sieve_llama_settings& s) { s.dry_multiplier = 0.8f; }, "n_ctx"},
        {"DRY window past 65536",
         [](sieve_llama_settings& s) { s.dry_multiplier = 0.8f, s.dry_penalty_last_n = 70000; }, "65536"},
        {"a window below -1", [](sieve_llama_settings& s) { s.penalty_last_n = -2; }, "penalty_last_n"},
        {"an unknown sampler", [](sieve_llama_settings& s) { s.samplers = "top_k;foo"; }, "foo"},
        {"infill (not implemented)", [](sieve_llama_settings& s) { s.samplers = "infill"; }, "infill"},
        {"a sampler after the final one", [](sieve_llama_settings& s) { s.samplers = "greedy;top_k"; }, "invalid_chain"},
        {"repeat penalty 0", [](sieve_llama_settings& s) { s.penalty_repeat = 0.0f; }, "penalty_repeat"},
        {"a NaN temperature", [](sieve_llama_settings& s) { s.temp = NAN; }, "invalid"},
        {"a breaker token outside the vocabulary",
         [](sieve_llama_settings& s) {
             s.dry_breaker_tokens = bad_breaker_tokens, s.dry_breaker_lengths = bad_breaker_lengths;
             s.n_dry_breakers = 1;
         },
         "breaker"},
        {"a logit bias outside the vocabulary",
         [](sieve_llama_settings& s) { s.logit_bias = bad_bias, s.n_logit_bias = 1; }, "logit bias"},
    };
    for (const Refusal& r : refusals) {
        sieve_llama_settings s;
        sieve_llama_settings_init(&s, 1000);
        r.change(s);
        struct llama_sampler* smpl = sieve_llama_sampler_init(cpu.get(), &s);
        EXPECT_EQ(smpl, nullptr) << r.what;
        if (smpl) llama_sampler_free(smpl);
        EXPECT_NE(sieve_test::lower(sieve_llama_last_error()).find(sieve_test::lower(r.message)), std::string::npos)
            << r.what << ": " << sieve_llama_last_error();
    }
    sieve_llama_settings s;
    sieve_llama_settings_init(&s, 1000);
    EXPECT_EQ(sieve_llama_sampler_init(nullptr, &s), nullptr);
    EXPECT_EQ(sieve_llama_sampler_init(cpu.get(), nullptr), nullptr);
    // llama.cpp's defaults, a -1 window with n_ctx, mirostat 1 and 2: accepted.
    for (int mode = 0; mode <= 2; ++mode) {
        sieve_llama_settings_init(&s, 1000);
        s.mirostat = mode;
        s.n_ctx = 4096, s.dry_multiplier = 0.8f;
        struct llama_sampler* smpl = sieve_llama_sampler_init(cpu.get(), &s);
        ASSERT_NE(smpl, nullptr) << sieve_llama_last_error();
        EXPECT_STREQ(llama_sampler_name(smpl), "sieve");
        llama_sampler_free(smpl);
    }
    // set_logits on a sampler that is not Sieve's, or past the chain's vocabulary.
    struct llama_sampler* greedy = llama_sampler_init_greedy();
    const float row[2] = {0, 1};
    EXPECT_EQ(sieve_llama_sampler_set_logits(greedy, row, 2), 0);
    llama_sampler_free(greedy);
    sieve_llama_settings_init(&s, 2);
    struct llama_sampler* smpl = sieve_llama_sampler_init(cpu.get(), &s);
    ASSERT_NE(smpl, nullptr);
    EXPECT_EQ(sieve_llama_sampler_set_logits(smpl, row, 3), 0);
    EXPECT_EQ(sieve_llama_sampler_set_logits(smpl, nullptr, 2), 0);
    EXPECT_EQ(sieve_llama_sampler_set_logits(smpl, row, 2), 1);
    llama_sampler_free(smpl);
}

TEST(LlamaDropin, AcceptResetCloneFreeMapToTheSlot) {
    sieve::Context cpu = sieve_test::cpu_context();
    sieve_llama_settings s;
    sieve_llama_settings_init(&s, 50);
    s.max_sequences = 2;
    s.seed = 7;
    struct llama_sampler* smpl = sieve_llama_sampler_init(cpu.get(), &s);
    ASSERT_NE(smpl, nullptr) << sieve_llama_last_error();
    std::vector<float> row(50);
    for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i % 7);

    llama_sampler_accept(smpl, 5);  // a prompt token
    EXPECT_EQ(history(smpl), std::vector<int32_t>({5}));
    const int32_t drawn = apply_row(smpl, row);
    ASSERT_GE(drawn, 0) << sieve_llama_last_error();
    EXPECT_EQ(history(smpl), std::vector<int32_t>({5, drawn}));  // the draw commits
    llama_sampler_accept(smpl, drawn);                            // as llama_sampler_sample does
    EXPECT_EQ(history(smpl), std::vector<int32_t>({5, drawn}));
    const int32_t second = apply_row(smpl, row);
    const int32_t other = (second + 1) % 50;
    llama_sampler_accept(smpl, other);  // another token than the drawn one replaces it
    EXPECT_EQ(history(smpl), std::vector<int32_t>({5, drawn, other}));

    struct llama_sampler* copy = llama_sampler_clone(smpl);
    ASSERT_NE(copy, nullptr) << sieve_llama_last_error();
    EXPECT_NE(sieve_llama_sampler_slot(copy), sieve_llama_sampler_slot(smpl));
    EXPECT_EQ(history(copy), history(smpl));
    EXPECT_EQ(llama_sampler_clone(smpl), nullptr);  // both slots taken
    EXPECT_NE(std::string(sieve_llama_last_error()).find("slots"), std::string::npos);
    // The copy draws what the original would: same slot state, same step.
    EXPECT_EQ(apply_row(copy, row), apply_row(smpl, row));
    llama_sampler_reset(copy);
    EXPECT_TRUE(history(copy).empty());
    EXPECT_FALSE(history(smpl).empty());
    const int32_t freed_slot = sieve_llama_sampler_slot(copy);
    llama_sampler_free(copy);
    struct llama_sampler* again = llama_sampler_clone(smpl);  // the freed slot is free again
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(sieve_llama_sampler_slot(again), freed_slot);
    llama_sampler_free(smpl);  // the chain lives on with `again`
    EXPECT_GE(apply_row(again, row), 0);
    llama_sampler_free(again);
}

// Greedy through the drop-in picks llama.cpp's greedy token, in a llama.cpp
// chain (after llama.cpp's own top-k) and with the row passed directly.
TEST(LlamaDropin, InsideALlamaChainGreedyAgrees) {
    sieve::Context gpu = sieve_test::gpu_context();
    sieve_llama_settings s;
    sieve_llama_settings_init(&s, 3000);
    s.samplers = "temperature;greedy";
    struct llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(100));
    struct llama_sampler* dropin = sieve_llama_sampler_init(gpu.get(), &s);
    ASSERT_NE(dropin, nullptr) << sieve_llama_last_error();
    llama_sampler_chain_add(chain, dropin);
    struct llama_sampler* reference = llama_sampler_init_greedy();
    for (uint32_t seed = 0; seed < 20; ++seed) {
        const auto row = sieve_test::make_row(seed % 2 ? sieve_test::Shape::Zipf : sieve_test::Shape::Ties, 3000, seed);
        const int32_t want = apply_row(reference, row);
        EXPECT_EQ(apply_row(chain, row), want) << "seed " << seed;
        ASSERT_EQ(sieve_llama_sampler_set_logits(dropin, row.data(), 3000), 1);
        EXPECT_EQ(apply_row(dropin, row), want) << "seed " << seed << ", the row directly";
    }
    llama_sampler_free(reference);
    llama_sampler_free(chain);
}

// A row Sieve refuses (every logit masked): nothing selected, the reason logged.
TEST(LlamaDropin, ARowSieveRefusesSelectsNothing) {
    sieve::Context cpu = sieve_test::cpu_context();
    sieve_llama_settings s;
    sieve_llama_settings_init(&s, 10);
    struct llama_sampler* smpl = sieve_llama_sampler_init(cpu.get(), &s);
    ASSERT_NE(smpl, nullptr);
    EXPECT_EQ(apply_row(smpl, std::vector<float>(10, -INFINITY)), -1);
    EXPECT_NE(std::string(sieve_llama_last_error()).find("all_masked"), std::string::npos) << sieve_llama_last_error();
    std::vector<float> row(10, -INFINITY);
    row[3] = 1.0f;
    EXPECT_EQ(apply_row(smpl, row), 3);  // the sampler stays usable
    llama_sampler_free(smpl);
}

} // namespace
