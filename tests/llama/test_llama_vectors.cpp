// llama.cpp's own sampler test vectors (tests/test-sampling.cpp of v0.4.0,
// transcribed as data in test_sampling_vectors.json with the rules for reading
// them) through Sieve on the GPU and on the twin, and through the fetched
// libllama itself (which proves the transcription).
#include "llama_peer.hpp"
#include "sieve_side.hpp"

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>

namespace {

using namespace sieve_llama_test;
using nlohmann::json;

json load_vectors() {
    const std::string path = std::string(SIEVE_SOURCE_DIR) + "/tests/llama/test_sampling_vectors.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return json::parse(in);
}

Case vector_case(const json& v) {
    Case c;
    c.samplers = v.at("samplers").get<std::string>();
    c.vocab = static_cast<int32_t>(v.at("probs").size());
    c.params.seed = 0;  // the test's seeds (dist(0), xtc(..., 0))
    c.params.top_k = 0, c.params.top_p = 1.0f, c.params.min_p = 0.0f, c.params.temp = 1.0f;
    Params& p = c.params;
    const std::pair<const char*, float*> floats[] = {
        {"temp", &p.temp}, {"dynatemp_range", &p.dynatemp_range}, {"dynatemp_exponent", &p.dynatemp_exponent},
        {"top_p", &p.top_p}, {"min_p", &p.min_p}, {"typ_p", &p.typ_p}, {"top_n_sigma", &p.top_n_sigma},
        {"xtc_probability", &p.xtc_probability}, {"xtc_threshold", &p.xtc_threshold},
        {"penalty_repeat", &p.penalty_repeat}, {"penalty_freq", &p.penalty_freq},
        {"penalty_present", &p.penalty_present}, {"dry_multiplier", &p.dry_multiplier}, {"dry_base", &p.dry_base}};
    for (auto [key, field] : floats)
        if (v.contains(key)) *field = v[key].get<float>();
    if (v.contains("top_k")) p.top_k = v["top_k"].get<int32_t>();
    if (v.contains("dry_allowed_length")) p.dry_allowed_length = v["dry_allowed_length"].get<int32_t>();
    if (v.contains("dry_penalty_last_n")) p.dry_penalty_last_n = v["dry_penalty_last_n"].get<int32_t>();
    if (v.contains("dry_breakers")) p.dry_breakers = v["dry_breakers"].get<std::vector<std::vector<int32_t>>>();
    if (v.contains("history")) {
        c.history = v["history"].get<std::vector<int32_t>>();
        p.penalty_last_n = static_cast<int32_t>(c.history.size());  // test_penalties: last_tokens.size()
    }
    return c;
}

// The rules of test_sampling_vectors.json: both lists by descending p, the
// shorter padded with zeros, each pair within the test's 1e-5.
testing::AssertionResult matches(std::vector<double> expected, bool renormalize, std::vector<double> got) {
    if (renormalize) {
        double sum = 0;
        for (double e : expected) sum += e;
        for (double& e : expected) e /= sum;
    }
    std::sort(expected.rbegin(), expected.rend());
    std::sort(got.rbegin(), got.rend());
    const size_t n = std::max(expected.size(), got.size());
    expected.resize(n, 0.0);
    got.resize(n, 0.0);
    for (size_t i = 0; i < n; ++i)
        if (std::fabs(expected[i] - got[i]) >= 1e-5)
            return testing::AssertionFailure() << "position " << i << ": expected " << expected[i] << ", got " << got[i];
    return testing::AssertionSuccess();
}

TEST(LlamaVectors, TestSamplingVectorsThroughSieveAndLibllama) {
    const json doc = load_vectors();
    ASSERT_GE(doc.at("vectors").size(), 40u);
    sieve::Context gpu = sieve_test::gpu_context();
    sieve::Context cpu = sieve_test::cpu_context();
    SieveSide sides[] = {SieveSide(gpu), SieveSide(cpu)};
    const char* names[] = {"gpu", "twin"};
    int passed = 0;
    for (const json& v : doc["vectors"]) {
        const Case c = vector_case(v);
        const auto expected = v.at("expected").get<std::vector<double>>();
        const bool renormalize = v.value("renormalize", false);
        std::vector<float> row;
        for (double q : v.at("probs")) row.push_back(std::log(static_cast<float>(q)));
        const std::string what = v.dump();
        if (c.samplers == "xtc") {
            // The vector assumes the coin fires (probability 0.99): Sieve's coin at seed 0, step 0 must.
            ASSERT_LE(sieve::ref::xtc_coin_u32(c.params.seed, 0, 0) / 4294967296.0, c.params.xtc_probability) << what;
        }

        LlamaChain llama(c);
        std::vector<double> want;
        for (auto [id, p] : llama_run(llama, "dist", row).p) want.push_back(p);
        EXPECT_TRUE(matches(expected, renormalize, want)) << "libllama itself, " << what;

        for (int b = 0; b < 2; ++b) {
            const auto got = sieve_distribution(sides[b].prepare(c), row);
            ASSERT_EQ(got.status, SIEVE_OK) << names[b] << " " << got.message << " " << what;
            std::vector<double> probs(got.probs.begin(), got.probs.end());
            const auto ok = matches(expected, renormalize, probs);
            EXPECT_TRUE(ok) << names[b] << ", " << what;
            passed += ok ? 1 : 0;
        }
    }
    std::printf("\nllama.cpp's test-sampling vectors: %d of %zu pass on the GPU and the twin\n", passed,
                2 * doc["vectors"].size());
}

} // namespace

namespace {

// test_sampler_queue's cases (the "queue" list and its rules): after each
// sampler of the queue, Sieve's survivors on a chain of the samplers so far
// have the size and end ids the source asserts (masked token 0 left out).
// Every step on the twin; on the GPU the last step of the three-sampler
// queues (each new chain compiles its pipelines: seconds on lavapipe).
TEST(LlamaVectors, TestSamplerQueueThroughSieve) {
    const json doc = load_vectors();
    ASSERT_EQ(doc.at("queue").size(), 24u);
    sieve::Context gpu = sieve_test::gpu_context();
    sieve::Context cpu = sieve_test::cpu_context();
    SieveSide sides[] = {SieveSide(gpu), SieveSide(cpu)};
    const char* names[] = {"gpu", "twin"};
    int passed = 0, checked = 0;
    for (const json& q : doc["queue"]) {
        const std::string letters = q.at("samplers").get<std::string>();
        const int32_t n_vocab = q.at("n_vocab").get<int32_t>();
        std::vector<float> row(static_cast<size_t>(n_vocab));
        for (int32_t i = 0; i < n_vocab; ++i) row[static_cast<size_t>(i)] = std::log(static_cast<float>(i));
        Case c;
        c.vocab = n_vocab;
        c.params.top_k = q.at("top_k").get<int32_t>();
        c.params.top_p = q.at("top_p").get<float>();
        c.params.min_p = q.at("min_p").get<float>();
        c.params.min_keep = 1;
        for (size_t j = 0; j < letters.size(); ++j) {
            c.samplers += std::string(j ? ";" : "") +
                          (letters[j] == 'k' ? "top_k" : letters[j] == 'p' ? "top_p" : "min_p");
            const int32_t size = q["expected_size"][j].get<int32_t>();
            const int32_t first = q["first_id"][j].get<int32_t>(), last = q["last_id"][j].get<int32_t>();
            for (int b = 0; b < 2; ++b) {
                if (b == 0 && !(letters.size() == 3 && j == 2)) continue;
                const auto got = sieve_distribution(sides[b].prepare(c), row);
                ASSERT_EQ(got.status, SIEVE_OK) << got.message;
                const std::string what = std::string(names[b]) + " '" + c.samplers + "' of " + q.dump();
                const bool ok = static_cast<int32_t>(got.ids.size()) == size - (last == 0 ? 1 : 0) &&
                                got.ids.front() == first && got.ids.back() == (last == 0 ? 1 : last);
                EXPECT_TRUE(ok) << what << ": " << got.ids.size() << " survivors, " << got.ids.front() << " .. "
                                << got.ids.back();
                passed += ok ? 1 : 0;
                ++checked;
            }
        }
    }
    std::printf("\nllama.cpp's test_sampler_queue cases: %d of %d checks agree (every step on the twin, the "
                "three-sampler queues' last step on the GPU)\n",
                passed, checked);
}

} // namespace
