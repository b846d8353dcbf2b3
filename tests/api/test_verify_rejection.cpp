// sieve_verify's rejection mode keeps the chain's distribution (issue 27,
// item 3), on both backends: with the draft token x_0 drawn from q, the first
// emitted token follows p_0 (the chain's final distribution at position 0,
// from sieve_chain_distribution) whatever q is, and x_0 is accepted with
// probability sum_x min(p_0(x), q(x)). Each sequence of a call is one
// independent trial: its own slot, and a seed of its own per call (setting
// the seed resets the slot's step).
#include "chi_square.hpp"
#include "test_support.hpp"

#include <sieve/sieve.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

using Backend = OnBackend;

constexpr int32_t kVocab = 12;
constexpr int32_t kTopK = 8;     // tokens outside p_0's top 8 have p_0 = 0
constexpr int32_t kSeqs = 64;    // trials per call
// lavapipe is slower: fewer trials there (still >= 20 expected per cell).
int32_t trials_for(Backend b) { return b == Backend::Cpu ? 100000 : 16384; }

// Distinct, well-separated logits: p_0 over its 8 survivors is 0.30 .. 0.04.
const std::vector<float> kRow0 = {1.0f, -0.9f, 2.0f, 0.3f, -1.2f, 1.6f, 0.0f, -0.5f, 1.3f, 0.8f, -0.2f, 0.5f};
const std::vector<float> kRow1 = {0.1f, 0.7f, -0.3f, 1.1f, 0.4f, -1.0f, 1.9f, 0.2f, -0.6f, 0.9f, 1.4f, -0.1f};

enum class Form { Dense, Token };

struct DraftModel {
    std::string name;
    std::vector<double> q;  // over the vocabulary
    Form form;
};

struct Outcome {
    std::map<int32_t, double> first;  // first emitted token -> count
    std::map<int32_t, double> bonus;  // the bonus (position 1) after an accepted x_0 -> count
    int64_t accepted = 0;
    int64_t trials = 0;
};

class VerifyRejection : public testing::TestWithParam<Backend> {
protected:
    VerifyRejection()
        : ctx_(backend_context(GetParam())),
          chain_(ctx_, chain_desc("top_k;temperature;dist", 2 * kSeqs, kVocab, 1.0f, 1u)) {
        chain_.set(SIEVE_PARAM_TOP_K, kTopK);
    }

    // p_i over the whole vocabulary (0 where the chain keeps nothing).
    std::map<int32_t, double> target(const std::vector<float>& row) {
        std::map<int32_t, double> p;
        for (int32_t x = 0; x < kVocab; ++x) p[x] = 0.0;
        for (const auto& e : chain_.distribution(row.data(), 1, kVocab, 0)) p[e.id] = e.p;
        return p;
    }

    // `trials` verifications of one draft token x_0 ~ q (n_draft 1).
    Outcome run(const DraftModel& m, int32_t trials, uint32_t seed) {
        std::mt19937 gen(seed);
        std::discrete_distribution<int32_t> draw_q(m.q.begin(), m.q.end());
        std::vector<float> dense(m.q.begin(), m.q.end());
        std::vector<float> logits;
        for (int32_t s = 0; s < kSeqs; ++s) {
            logits.insert(logits.end(), kRow0.begin(), kRow0.end());
            logits.insert(logits.end(), kRow1.begin(), kRow1.end());
        }
        sieve_logits view;
        sieve_logits_init(&view, logits.data(), SIEVE_DTYPE_F32, 2 * kSeqs, kVocab);
        std::vector<int32_t> x(kSeqs);
        std::vector<float> q_of_x(kSeqs);
        std::vector<sieve_draft> drafts(kSeqs);
        Outcome o;
        for (int32_t done = 0; done < trials; done += kSeqs) {
            for (int32_t s = 0; s < kSeqs; ++s) {
                x[s] = draw_q(gen);
                q_of_x[s] = static_cast<float>(m.q[static_cast<size_t>(x[s])]);
                sieve_draft_init(&drafts[s], &x[s], 1);
                drafts[s].probs_kind = m.form == Form::Dense ? SIEVE_DRAFT_PROBS_DENSE : SIEVE_DRAFT_PROBS_TOKEN;
                drafts[s].probs = m.form == Form::Dense ? dense.data() : &q_of_x[s];
                chain_.set(SIEVE_PARAM_SEED, static_cast<double>(seed * 7919u + static_cast<uint32_t>(done + s)), s);
            }
            const auto got = chain_.verify(view, drafts, SIEVE_VERIFY_REJECTION);
            for (int32_t s = 0; s < kSeqs; ++s) {
                const auto& v = got[static_cast<size_t>(s)];
                EXPECT_EQ(v.status, SIEVE_OK);
                if (v.status != SIEVE_OK || v.tokens.empty()) continue;
                EXPECT_EQ(v.tokens.size(), static_cast<size_t>(v.n_accepted) + 1);
                EXPECT_EQ(v.tokens[0].step, 0u) << "the seed resets the step";
                if (v.n_accepted == 1) {
                    EXPECT_EQ(v.tokens[0].token, x[s]);
                }
                o.first[v.tokens[0].token] += 1;
                if (v.n_accepted == 1) o.bonus[v.tokens[1].token] += 1;
                o.accepted += v.n_accepted;
                ++o.trials;
            }
        }
        return o;
    }

    // The draft models: q = p_0, uniform, far from p_0 (most of its mass where
    // p_0 has none), sharper than p_0, one-hot (a greedy drafter) as TOKEN and
    // as a dense row, and one-hot on a token p_0 excludes.
    std::vector<DraftModel> models(const std::map<int32_t, double>& p) {
        std::vector<double> pv(kVocab), uniform(kVocab, 1.0 / kVocab), far(kVocab, 0.0), sharp(kVocab), one_hot(kVocab, 0.0),
            excluded(kVocab, 0.0);
        int32_t top = 0, least = -1, outside = -1, middle = -1;
        for (const auto& [id, v] : p) pv[static_cast<size_t>(id)] = v;
        for (int32_t x = 0; x < kVocab; ++x) {
            if (pv[x] > pv[top]) top = x;
            if (pv[x] > 0.0 && (least < 0 || pv[x] < pv[least])) least = x;
            if (pv[x] == 0.0) outside = x;
            if (pv[x] > 0.08 && pv[x] < 0.12) middle = x;
        }
        EXPECT_TRUE(least >= 0 && outside >= 0 && middle >= 0) << "p_0 should have 8 survivors, one near 0.1";
        double sharp_total = 0.0;
        for (int32_t x = 0; x < kVocab; ++x) {
            if (pv[x] == 0.0) far[x] = 0.8 / (kVocab - kTopK);
            sharp[x] = std::pow(pv[x], 3.0);
            sharp_total += sharp[x];
        }
        far[static_cast<size_t>(least)] = 0.15;
        far[static_cast<size_t>(top)] = 0.05;
        for (double& v : sharp) v /= sharp_total;
        one_hot[static_cast<size_t>(middle)] = 1.0;
        excluded[static_cast<size_t>(outside)] = 1.0;
        return {{"q = p", pv, Form::Dense},
                {"q uniform", uniform, Form::Dense},
                {"q far from p", far, Form::Dense},
                {"q sharper than p", sharp, Form::Dense},
                {"q one-hot (TOKEN, q(x) = 1)", one_hot, Form::Token},
                {"q one-hot (dense row)", one_hot, Form::Dense},
                {"q one-hot on a token p excludes (TOKEN)", excluded, Form::Token}};
    }

    sieve::Context ctx_;
    sieve::Chain chain_;
};

// And the bonus after an accepted x_0 follows p_1 (where enough were accepted).
TEST_P(VerifyRejection, FirstTokenFollowsTheTarget) {
    const auto p = target(kRow0), p1 = target(kRow1);
    uint32_t seed = 1000;
    for (const DraftModel& m : models(p)) {
        SCOPED_TRACE(m.name);
        const Outcome o = run(m, trials_for(GetParam()), ++seed);
        const ChiSquareFit fit = chi_square_fit(p, o.first, static_cast<double>(o.trials));
        std::printf("%-42s chi-square %7.3f (df %d, critical %.3f at 0.001, %lld trials)\n", m.name.c_str(),
                    fit.statistic, fit.df, fit.critical, static_cast<long long>(o.trials));
        EXPECT_EQ(fit.df, kTopK - 1);
        EXPECT_LT(fit.statistic, fit.critical);
        EXPECT_EQ(fit.outside, 0.0) << "emitted a token p_0 gives no mass";
        double bonuses = 0.0;
        for (const auto& [id, count] : o.bonus) bonuses += count;
        if (bonuses < 1000.0) continue;
        const ChiSquareFit bonus = chi_square_fit(p1, o.bonus, bonuses);
        std::printf("%-42s bonus chi-square %7.3f (df %d, critical %.3f, %.0f bonuses)\n", "", bonus.statistic,
                    bonus.df, bonus.critical, bonuses);
        EXPECT_EQ(bonus.df, kTopK - 1);
        EXPECT_LT(bonus.statistic, bonus.critical);
        EXPECT_EQ(bonus.outside, 0.0) << "a bonus p_1 gives no mass";
    }
}

TEST_P(VerifyRejection, AcceptanceRateIsTheOverlapOfPAndQ) {
    const auto p = target(kRow0);
    uint32_t seed = 2000;
    for (const DraftModel& m : models(p)) {
        SCOPED_TRACE(m.name);
        double overlap = 0.0;
        for (const auto& [id, v] : p) overlap += std::min(v, m.q[static_cast<size_t>(id)]);
        overlap = std::min(overlap, 1.0);  // p's float probabilities may sum past 1
        const Outcome o = run(m, trials_for(GetParam()), ++seed);
        const double n = static_cast<double>(o.trials);
        const double rate = static_cast<double>(o.accepted) / n;
        // 4.5 standard deviations of a binomial proportion, and the float
        // rounding of p and q where the rate is 0 or 1.
        const double tolerance = 4.5 * std::sqrt(overlap * (1.0 - overlap) / n) + 1e-4;
        std::printf("%-42s acceptance %.4f, sum min(p, q) %.4f (tolerance %.4f, %.0f trials)\n", m.name.c_str(), rate,
                    overlap, tolerance, n);
        EXPECT_NEAR(rate, overlap, tolerance);
    }
}

INSTANTIATE_TEST_SUITE_P(Verify, VerifyRejection, testing::Values(Backend::Gpu, Backend::Cpu),
                         backend_name);

} // namespace
