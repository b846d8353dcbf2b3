// sieve_verify's rejection mode draws exactly by its documented rule (sieve.h,
// "speculative decoding"), on both backends. The test derives each
// sequence's tokens from public pieces alone: p_i from sieve_chain_distribution
// over a spare slot holding the sequence's history plus the tokens emitted
// so far, the Philox uniform of (seed, t + i, draw 1) for the acceptance
// u * q_i(x_i) < p_i(x_i), and the uniform of (seed, t + i, draw 0) for the
// canonical inverse CDF of the residual max(0, p_i - q_i) (p_i where it has
// no mass) or of the bonus p_n. Rows are well-conditioned (logits 0.05
// apart, q off p by noise) so no uniform lands within rounding of a boundary.
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
using sieve::ref::Weighted;

using Backend = OnBackend;

constexpr int32_t kVocab = 64;
constexpr uint32_t kSeed = 77;
const std::vector<int32_t> kLengths = {1, 4, 8, 16, 0, 3};
const int32_t kSeqs = static_cast<int32_t>(kLengths.size());
const int32_t kSpare = kSeqs;  // the slot the test derives the expected tokens on

struct Sequence {
    std::vector<float> logits;  // n + 1 positions
    std::vector<int32_t> draft;
    std::vector<float> q;       // DENSE: [n][vocab]; TOKEN: q(x_i)
    sieve_draft_probs kind;
    double q_of(size_t i, int32_t token) const {
        if (kind == SIEVE_DRAFT_PROBS_TOKEN) return token == draft[i] ? q[i] : 0.0;
        return q[i * kVocab + static_cast<size_t>(token)];
    }
};

// Logits 0.05 apart in a random order; q near their softmax at the row's
// temperature (noise 0.5 on each logit), x_i drawn from it. Even sequences
// give q dense, odd ones q(x_i) alone.
Sequence make_sequence(std::mt19937& gen, int32_t n, int32_t index, double temperature) {
    Sequence s;
    s.kind = index % 2 ? SIEVE_DRAFT_PROBS_TOKEN : SIEVE_DRAFT_PROBS_DENSE;
    std::normal_distribution<double> noise(0.0, 0.5);
    for (int32_t i = 0; i <= n; ++i) {
        std::vector<int32_t> order(kVocab);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), gen);
        std::vector<float> row(kVocab);
        for (int32_t r = 0; r < kVocab; ++r) row[static_cast<size_t>(order[static_cast<size_t>(r)])] = 2.0f - 0.05f * static_cast<float>(r);
        s.logits.insert(s.logits.end(), row.begin(), row.end());
        if (i == n) break;
        std::vector<double> q(kVocab);
        double total = 0.0;
        for (int32_t x = 0; x < kVocab; ++x) total += q[static_cast<size_t>(x)] = std::exp(row[static_cast<size_t>(x)] / temperature + noise(gen));
        for (double& v : q) v /= total;
        const int32_t x = std::discrete_distribution<int32_t>(q.begin(), q.end())(gen);
        s.draft.push_back(x);
        if (s.kind == SIEVE_DRAFT_PROBS_TOKEN) s.q.push_back(static_cast<float>(q[static_cast<size_t>(x)]));
        else s.q.insert(s.q.end(), q.begin(), q.end());
    }
    return s;
}

struct Emitted {
    int32_t token;
    float p;
};

// The rule, position by position, for sequence `seq` (row seq of the chain:
// its parameters) on the spare slot, a copy of the sequence's slot at step t.
// Rows before `seq` repeat the position's logits on their own slots.
std::vector<Emitted> by_the_rule(sieve::Chain& chain, int32_t seq, const Sequence& s, uint32_t t) {
    chain.copy_slot(seq, kSpare);
    std::vector<int32_t> slots(static_cast<size_t>(seq) + 1);
    std::iota(slots.begin(), slots.end(), 0);
    slots.back() = kSpare;
    chain.set_slots(slots);
    std::vector<Emitted> out;
    for (size_t i = 0; i <= s.draft.size(); ++i) {
        std::vector<float> rows;
        for (int32_t r = 0; r <= seq; ++r) rows.insert(rows.end(), s.logits.begin() + i * kVocab, s.logits.begin() + (i + 1) * kVocab);
        std::vector<Weighted> p;
        for (const auto& e : chain.distribution(rows.data(), seq + 1, kVocab, seq)) p.push_back({e.id, e.p});
        const auto p_of = [&](int32_t token) {
            for (const Weighted& w : p)
                if (w.id == token) return w.p;
            return 0.0;
        };
        const uint32_t step = t + static_cast<uint32_t>(i);
        const uint32_t u0 = sieve::ref::uniform_u32(kSeed, step, 0);
        int32_t token;
        bool accepted = false;
        if (i == s.draft.size()) {
            token = p[sieve::ref::draw_inverse_cdf(p, u0)].id;
        } else {
            const double u1 = sieve::ref::uniform_u32(kSeed, step, 1) / 4294967296.0;
            accepted = u1 * s.q_of(i, s.draft[i]) < p_of(s.draft[i]);
            std::vector<Weighted> residual;
            for (const Weighted& w : p)
                if (w.p - s.q_of(i, w.id) > 0.0) residual.push_back({w.id, w.p - s.q_of(i, w.id)});
            std::stable_sort(residual.begin(), residual.end(),
                             [](const Weighted& a, const Weighted& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); });
            const std::vector<Weighted>& from = residual.empty() ? p : residual;
            token = accepted ? s.draft[i] : from[sieve::ref::draw_inverse_cdf(from, u0)].id;
        }
        out.push_back({token, static_cast<float>(p_of(token))});
        chain.accept(seq, {token});
        if (!accepted) break;
    }
    return out;
}

class VerifyRejectionRule : public testing::TestWithParam<Backend> {};

TEST_P(VerifyRejectionRule, TokensAreTheDocumentedRulesDraws) {
    sieve::Context ctx = backend_context(GetParam());
    auto desc = chain_desc("penalties;top_k;temperature;dist", 40, kVocab, 0.9f, kSeed);
    desc.slots(kSeqs + 1);
    sieve::Chain chain(ctx, desc);
    // Each sequence its own parameters and logit bias (sequence s is row s).
    chain.set(SIEVE_PARAM_REPEAT_PENALTY, 1.5);
    for (int32_t s = 0; s < kSeqs; ++s) {
        chain.set(SIEVE_PARAM_TOP_K, 24 + 4 * s, s);
        chain.set(SIEVE_PARAM_TEMPERATURE, 0.7 + 0.1 * s, s);
        chain.set_logit_bias({s, 2 * s + 1}, {-INFINITY, 1.5f}, s);
    }
    std::vector<int32_t> slots(static_cast<size_t>(kSeqs));
    std::iota(slots.begin(), slots.end(), 0);
    for (int32_t s = 0; s < kSeqs; ++s) chain.accept(s, {s, 10 + s, 20});
    std::mt19937 gen(5);
    std::vector<uint32_t> steps(static_cast<size_t>(kSeqs), 0u);  // each slot's step t before the call
    int accepted = 0, rejected = 0, bonuses = 0;
    for (int round = 0; round < 4; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        std::vector<Sequence> seqs;
        std::vector<float> logits;
        for (int32_t s = 0; s < kSeqs; ++s) {
            seqs.push_back(make_sequence(gen, kLengths[static_cast<size_t>(s)], s, 0.7 + 0.1 * s));
            logits.insert(logits.end(), seqs.back().logits.begin(), seqs.back().logits.end());
        }
        std::vector<std::vector<Emitted>> want;
        std::vector<std::vector<int32_t>> want_history;
        for (int32_t s = 0; s < kSeqs; ++s) {
            want.push_back(by_the_rule(chain, s, seqs[static_cast<size_t>(s)], steps[s]));
            want_history.push_back(chain.slot_history(kSpare));
        }
        chain.set_slots(slots);
        std::vector<sieve_draft> drafts(static_cast<size_t>(kSeqs));
        for (int32_t s = 0; s < kSeqs; ++s) {
            const Sequence& q = seqs[static_cast<size_t>(s)];
            sieve_draft_init(&drafts[s], q.draft.data(), static_cast<int32_t>(q.draft.size()));
            drafts[s].probs_kind = q.kind;
            drafts[s].probs = q.q.data();
        }
        sieve_logits view;
        sieve_logits_init(&view, logits.data(), SIEVE_DTYPE_F32, static_cast<int32_t>(logits.size() / kVocab), kVocab);
        const auto got = chain.verify(view, drafts, SIEVE_VERIFY_REJECTION);
        for (int32_t s = 0; s < kSeqs; ++s) {
            SCOPED_TRACE("sequence " + std::to_string(s));
            const auto& v = got[static_cast<size_t>(s)];
            const auto& w = want[static_cast<size_t>(s)];
            ASSERT_EQ(v.status, SIEVE_OK);
            ASSERT_EQ(v.tokens.size(), w.size());
            for (size_t i = 0; i < w.size(); ++i) {
                EXPECT_EQ(v.tokens[i].token, w[i].token) << "position " << i;
                EXPECT_EQ(v.tokens[i].step, steps[s] + i) << "position " << i;
                EXPECT_EQ(v.tokens[i].seed, kSeed);
                EXPECT_NEAR(v.tokens[i].p, w[i].p, 1e-6f + 1e-5f * w[i].p) << "position " << i;
                EXPECT_NEAR(v.tokens[i].logprob, std::log(w[i].p), 1e-5f) << "position " << i;
            }
            EXPECT_EQ(chain.slot_history(s), want_history[static_cast<size_t>(s)]) << "the slot holds the emitted tokens";
            steps[s] += static_cast<uint32_t>(v.tokens.size());
            accepted += v.n_accepted;
            rejected += v.n_accepted < kLengths[static_cast<size_t>(s)] ? 1 : 0;
            bonuses += v.n_accepted == kLengths[static_cast<size_t>(s)] ? 1 : 0;
        }
    }
    std::printf("%d drafts accepted, %d sequences stopped at a rejection, %d reached the bonus\n", accepted, rejected,
                bonuses);
    EXPECT_GT(accepted, 30);
    EXPECT_GT(rejected, 8);
    EXPECT_GT(bonuses, 4);
}

INSTANTIATE_TEST_SUITE_P(Verify, VerifyRejectionRule, testing::Values(Backend::Gpu, Backend::Cpu),
                         backend_name);

} // namespace
