// The verdict on one parity case, and the counts the suite prints.
//  exact          the same survivors, every probability within 1e-4 relative
//                 (or 1e-7 absolute) of llama.cpp's;
//  boundary-only  the difference is float rounding where llama.cpp computes in
//                 float and Sieve in double: the CPU twin, run with one
//                 threshold (top-p, typical, XTC, min-p, top-n-sigma's n,
//                 mirostat's mu) or the
//                 dynamic temperature moved by at most the rounding of the
//                 float sum llama.cpp compares (n * 2^-24 relative for n
//                 terms; 1e-6 at the least), reproduces llama.cpp's candidates
//                 and probabilities, and another such run (or the unmoved one)
//                 reproduces Sieve's: the tokens that differ are the ones at
//                 the cut, their cumulative mass within that rounding of the
//                 threshold (with ties at the cut ordered either way); or,
//                 for typical first in the chain, the tokens that differ
//                 hold scores |-log p - H| within float rounding of each
//                 other (llama.cpp ranks by float scores);
//  tie-order      the same number of survivors, the differing ones all of one
//                 logit: llama.cpp's sort leaves the order among equal logits
//                 unspecified, Sieve keeps the lower ids;
//  different      anything else (a failing case).
#pragma once

#include "parity_case.hpp"
#include "sieve_side.hpp"

#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace sieve_llama_test {

using sieve::ref::RowParams;
using sieve::ref::SamplerKind;

constexpr double kProbRel = 1e-4, kProbAbs = 1e-7;

inline RowParams twin_params(const Params& p) {
    RowParams r;
    r.temperature = p.temp;
    r.seed = p.seed;
    r.min_keep = p.min_keep;
    r.top_k = p.top_k;
    r.top_p = p.top_p;
    r.min_p = p.min_p;
    r.typical_p = p.typ_p;
    r.top_n_sigma = p.top_n_sigma;
    r.xtc_probability = p.xtc_probability;
    r.xtc_threshold = p.xtc_threshold;
    r.dynatemp_range = p.dynatemp_range;
    r.dynatemp_exponent = p.dynatemp_exponent;
    for (auto [id, b] : p.logit_bias) r.logit_bias.push_back({id, b});
    r.penalty_last_n = p.penalty_last_n;
    r.penalty_repeat = p.penalty_repeat;
    r.penalty_freq = p.penalty_freq;
    r.penalty_present = p.penalty_present;
    r.dry_multiplier = p.dry_multiplier;
    r.dry_base = p.dry_base;
    r.dry_allowed_length = p.dry_allowed_length;
    r.dry_penalty_last_n = p.dry_penalty_last_n;
    r.dry_sequence_breakers = p.dry_breakers;
    r.mirostat_tau = p.mirostat_tau;
    r.mirostat_eta = p.mirostat_eta;
    r.adaptive_target = p.adaptive_target;
    r.adaptive_decay = p.adaptive_decay;
    return r;
}

inline bool same_probs(const std::map<int32_t, double>& a, const std::map<int32_t, double>& b, std::string* why) {
    if (a.size() != b.size()) {
        if (why) *why = std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " survivors";
        return false;
    }
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
        if (i->first != j->first) {
            if (why) *why = "survivor " + std::to_string(i->first) + " vs " + std::to_string(j->first);
            return false;
        }
        if (std::fabs(i->second - j->second) > kProbAbs + kProbRel * std::max(i->second, j->second)) {
            if (why) {
                std::ostringstream s;
                s.precision(9);
                s << "p of " << i->first << ": " << i->second << " vs " << j->second;
                *why = s.str();
            }
            return false;
        }
    }
    return true;
}

// The twin's distribution of `c`'s row with changed parameters or slot.
inline bool twin_run(const Case& c, const std::vector<float>& row, const RowParams& p, const sieve::ref::SlotState& state,
                     std::map<int32_t, double>* out) {
    std::vector<SamplerKind> kinds;
    std::string message;
    std::vector<sieve::ref::Weighted> dist;
    sieve::ref::SlotState s = state;
    if (sieve::ref::parse_chain(c.samplers.c_str(), &kinds, &message) != SIEVE_OK ||
        sieve::ref::row_distribution(kinds, row.data(), c.vocab, p, &dist, &message, 0, 0, &s) != SIEVE_OK)
        return false;
    out->clear();
    for (const auto& w : dist) (*out)[w.id] = w.p;
    return true;
}

// A parameter of the chain that llama.cpp compares or computes in float, with
// how far float rounding can move it (relative, or a setter over [-1, 1]).
struct Knob {
    const char* name;
    std::function<void(RowParams&, sieve::ref::SlotState&, double)> set;  // d in [-1, 1]: the move
};

// float rounding of what llama.cpp sums: n terms summed in float are within
// n * 2^-24 (relative) of the exact sum (1e-6 at the least).
inline double float_sum_rounding(int32_t n) { return std::max(1e-6, static_cast<double>(n) * std::ldexp(1.0, -24)); }

inline std::vector<Knob> knobs(const Case& c, const std::vector<float>& row, const sieve::ref::SlotState& state) {
    std::vector<SamplerKind> kinds;
    std::string message;
    if (sieve::ref::parse_chain(c.samplers.c_str(), &kinds, &message) != SIEVE_OK) return {};
    const auto has = [&](SamplerKind k) { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); };
    const double rel = float_sum_rounding(c.vocab);
    float max_abs = 1.0f;
    for (float x : row)
        if (std::isfinite(x)) max_abs = std::max(max_abs, std::fabs(x));
    const double t = c.params.temp > 0 ? std::min(1.0, static_cast<double>(c.params.temp)) : 1.0;
    const double min_p_scale = max_abs / t + std::fabs(std::log(std::max(c.params.min_p, 1e-30f)));
    const Params base = c.params;
    std::vector<Knob> out;
    // top-p and typical compare a float cumulative sum with p; XTC a float p
    // (over a float sum) with its threshold.
    if (has(SamplerKind::TopP))
        out.push_back({"top_p", [=](RowParams& p, auto&, double d) { p.top_p = static_cast<float>(base.top_p * (1 + d * rel)); }});
    if (has(SamplerKind::TypicalP))
        out.push_back({"typ_p", [=](RowParams& p, auto&, double d) { p.typical_p = static_cast<float>(base.typ_p * (1 + d * rel)); }});
    if (has(SamplerKind::Xtc))
        out.push_back({"xtc_threshold", [=](RowParams& p, auto&, double d) {
                           p.xtc_threshold = static_cast<float>(base.xtc_threshold * (1 + d * rel));
                       }});
    // min-p's threshold max + logf(p) is llama.cpp's own float arithmetic; the
    // logits it compares went through the same float steps: 1e-6 of the scale.
    if (has(SamplerKind::MinP))
        out.push_back({"min_p", [=](RowParams& p, auto&, double d) {
                           p.min_p = static_cast<float>(base.min_p * std::exp(d * 1e-6 * min_p_scale));
                       }});
    // top-n-sigma compares a logit with max - n sigma, sigma from float sums.
    if (has(SamplerKind::TopNSigma))
        out.push_back({"top_n_sigma", [=](RowParams& p, auto&, double d) {
                           p.top_n_sigma = static_cast<float>(base.top_n_sigma * (1 + d * rel));
                       }});
    // Dynamic temperature: llama.cpp's entropy is a float sum over the array.
    if (has(SamplerKind::Temperature) && base.dynatemp_range > 0)
        out.push_back({"temperature (dynamic)", [=](RowParams& p, auto&, double d) {
                           p.temperature = static_cast<float>(
                               base.temp + d * 2 * base.dynatemp_range * std::max(1.0f, base.dynatemp_exponent) * rel);
                       }});
    // Mirostat's mu (float updates; v2 compares -log2f(p) with it).
    if ((has(SamplerKind::Mirostat) || has(SamplerKind::MirostatV2)) && state.mu_set) {
        const float mu = state.mu;
        out.push_back({"mu", [=](RowParams&, sieve::ref::SlotState& s, double d) {
                           s.mu = static_cast<float>(mu + d * rel * std::max(1.0f, std::fabs(mu)));
                       }});
    }
    return out;
}

// The same number of survivors, the ones only one side keeps all of one
// logit (after the bias), and the probabilities by rank within the tolerance:
// llama.cpp's std::sort / partial_sort leaves the order among equal logits
// unspecified, Sieve keeps the lower ids (docs/semantics.md, "Order and ties").
inline bool tie_equivalent(const Case& c, const std::vector<float>& row, const std::map<int32_t, double>& a,
                           const std::map<int32_t, double>& b) {
    if (a.size() != b.size()) return false;
    std::vector<int32_t> only;
    for (auto [id, p] : a)
        if (!b.count(id)) only.push_back(id);
    for (auto [id, p] : b)
        if (!a.count(id)) only.push_back(id);
    auto logit = [&](int32_t id) {
        float l = row[static_cast<size_t>(id)];
        for (auto [b_id, bias] : c.params.logit_bias)
            if (b_id == id) l += bias;
        return l;
    };
    if (only.empty() || !std::all_of(only.begin(), only.end(), [&](int32_t id) { return logit(id) == logit(only[0]); }))
        return false;
    std::vector<double> x, y;
    for (auto [id, p] : a) x.push_back(p);
    for (auto [id, p] : b) y.push_back(p);
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    for (size_t i = 0; i < x.size(); ++i)
        if (std::fabs(x[i] - y[i]) > kProbAbs + kProbRel * std::max(x[i], y[i])) return false;
    return true;
}

// Typical ranks the candidates by |-log p - H|, which llama.cpp computes in
// float: where the chain starts with typical, the candidates only one side
// keeps must hold scores within float rounding of each other's (the ranking
// is all that differs).
inline bool typical_ranking_rounding(const Case& c, const std::vector<float>& row, const std::map<int32_t, double>& a,
                                     const std::map<int32_t, double>& b) {
    if (split_chain(c.samplers).front() != "typ_p" || !c.params.logit_bias.empty() || a == b) return false;
    double max_l = -INFINITY, sum = 0, h = 0;
    for (float x : row) max_l = std::max(max_l, static_cast<double>(x));
    for (float x : row) sum += std::exp(x - max_l);
    std::vector<double> score(row.size());
    for (size_t i = 0; i < row.size(); ++i) {
        const double p = std::exp(row[i] - max_l) / sum;
        if (p > 0) h -= p * std::log(p);
    }
    for (size_t i = 0; i < row.size(); ++i) score[i] = std::fabs(-(row[i] - max_l - std::log(sum)) - h);
    const double tol = float_sum_rounding(c.vocab) * std::max(1.0, h) + 1e-6 * (std::fabs(max_l) + std::log(sum) + h);
    double lo = INFINITY, hi = -INFINITY;
    for (const auto* m : {&a, &b})
        for (auto [id, p] : *m)
            if (!(m == &a ? b : a).count(id)) {
                lo = std::min(lo, score[static_cast<size_t>(id)]);
                hi = std::max(hi, score[static_cast<size_t>(id)]);
            }
    return hi - lo <= tol;
}

// Whether some setting of one knob within its rounding makes the twin give
// `want` (same survivors, probabilities within the tolerance): the ends and
// the middle, then a bisection on the survivor count between the ends (the
// count is monotone in a threshold), then, for a count that matches from the
// start (a continuous knob), a golden-section search on the largest
// probability difference.
inline bool reproducible(const Case& c, const std::vector<float>& row, const sieve::ref::SlotState& state,
                         const std::map<int32_t, double>& want, std::string* how) {
    const RowParams base = twin_params(c.params);
    for (const Knob& k : knobs(c, row, state)) {
        std::map<int32_t, double> got;
        auto run = [&](double d) {
            RowParams p = base;
            sieve::ref::SlotState s = state;
            k.set(p, s, d);
            return twin_run(c, row, p, s, &got);
        };
        auto matches = [&](double d) {
            return run(d) && (same_probs(got, want, nullptr) || tie_equivalent(c, row, got, want));
        };
        for (double d : {0.0, -1.0, 1.0})
            if (matches(d)) {
                *how = std::string(k.name) + (d == 0 ? "" : d < 0 ? " moved down" : " moved up");
                return true;
            }
        if (!run(-1.0)) continue;
        const size_t n_lo = got.size();
        if (!run(1.0)) continue;
        const size_t n_hi = got.size(), n_want = want.size();
        double lo = -1.0, hi = 1.0;
        if (n_lo != n_hi && std::min(n_lo, n_hi) <= n_want && n_want <= std::max(n_lo, n_hi)) {
            const bool rising = n_hi > n_lo;
            for (int i = 0; i < 30; ++i) {
                const double mid = (lo + hi) / 2;
                if (!run(mid)) break;
                if (same_probs(got, want, nullptr) || tie_equivalent(c, row, got, want)) {
                    *how = std::string(k.name) + " moved within float rounding";
                    return true;
                }
                ((got.size() < n_want) == rising ? lo : hi) = mid;
            }
        }
        // Continuous: the same survivors, probabilities off.
        if (run(0.0) && got.size() == n_want) {
            auto error = [&](double d) {
                if (!run(d) || got.size() != want.size()) return 1.0;
                double e = 0;
                auto j = want.begin();
                for (auto i = got.begin(); i != got.end(); ++i, ++j)
                    e = std::max(e, std::fabs(i->second - j->second) / std::max(1e-30, j->second));
                return e;
            };
            double a = -1.0, b = 1.0;
            const double g = (std::sqrt(5.0) - 1) / 2;
            for (int i = 0; i < 16; ++i) {
                const double x1 = b - g * (b - a), x2 = a + g * (b - a);
                if (error(x1) < error(x2)) b = x2;
                else a = x1;
            }
            if (matches((a + b) / 2)) {
                *how = std::string(k.name) + " moved within float rounding";
                return true;
            }
        }
    }
    return false;
}

enum class Verdict { Exact, Boundary, Tie, Different };

// Sieve's distribution (one backend) against llama.cpp's for one row.
// llama_reproducible caches, per case, whether the twin reproduces
// llama.cpp's side (the same for both backends): -1 unknown, 0 no, 1 yes.
inline Verdict judge(const Case& c, const std::vector<float>& row, const std::map<int32_t, double>& llama,
                     const SieveDistribution& got, const sieve::ref::SlotState& state, std::string* why,
                     int* llama_reproducible) {
    if (got.status != SIEVE_OK) {
        *why = std::string("Sieve failed: ") + sieve_status_name(got.status) + " " + got.message;
        return Verdict::Different;
    }
    std::string diff;
    if (same_probs(llama, got.p, &diff)) return Verdict::Exact;
    if (tie_equivalent(c, row, llama, got.p)) return Verdict::Tie;
    if (typical_ranking_rounding(c, row, llama, got.p)) return Verdict::Boundary;
    std::string how_llama, how_sieve;
    if (*llama_reproducible < 0) *llama_reproducible = reproducible(c, row, state, llama, &how_llama) ? 1 : 0;
    if (*llama_reproducible == 1 && reproducible(c, row, state, got.p, &how_sieve)) return Verdict::Boundary;
    *why = diff;
    return Verdict::Different;
}

// Counts by sampler and backend, printed as a table at the end of a test.
class Tally {
public:
    void add(const std::string& sampler, const std::string& backend, Verdict v, const std::string& what) {
        ++counts_[{sampler, backend}][static_cast<int>(v)];
        if (v == Verdict::Different) ADD_FAILURE() << backend << ": llama.cpp and Sieve differ on " << what;
    }
    void print(const char* title) const {
        std::printf("\n%s: parity with llama.cpp v0.4.0 (cases: exact / boundary-only / tie-order / different)\n",
                    title);
        std::printf("  %-30s %-6s %7s %9s %9s %9s\n", "sampler", "backend", "exact", "boundary", "tie", "different");
        for (const auto& [key, n] : counts_)
            std::printf("  %-30s %-6s %7d %9d %9d %9d\n", key.first.c_str(), key.second.c_str(), n[0], n[1], n[2], n[3]);
        std::fflush(stdout);
    }
    int total() const {
        int t = 0;
        for (const auto& [key, n] : counts_) t += n[0] + n[1] + n[2] + n[3];
        return t;
    }

private:
    std::map<std::pair<std::string, std::string>, std::array<int, 4>> counts_;
};

} // namespace sieve_llama_test
