// The verdict on one parity case, and the counts the suite prints.
//  exact          the same survivors, every probability within 1e-4 relative
//                 (or 1e-7 absolute) of llama.cpp's;
//  boundary-only  the survivors differ, and the difference is a keep/drop
//                 decision within float rounding of a threshold: the CPU twin
//                 run with the cut's threshold moved by at most float's
//                 rounding of the sum llama.cpp compares (n * 2^-24 relative
//                 for a float sum of n terms; 1e-6 at the least) reproduces
//                 llama.cpp's candidates and probabilities, and another such
//                 run (or the unmoved one) reproduces Sieve's: the differing
//                 tokens are the ones at the cut, and their cumulative mass
//                 sits within that rounding of the threshold;
//  different      anything else (a failing case).
#pragma once

#include "parity_case.hpp"
#include "sieve_side.hpp"

#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

// The twin's distributions with every threshold of the chain moved within
// float rounding (each down, unmoved or up; the unmoved run first).
inline std::vector<std::map<int32_t, double>> twin_runs_near_thresholds(const Case& c, const std::vector<float>& row,
                                                                        const sieve::ref::SlotState& state) {
    std::vector<SamplerKind> kinds;
    std::string message;
    if (sieve::ref::parse_chain(c.samplers.c_str(), &kinds, &message) != SIEVE_OK) return {};
    const auto has = [&](SamplerKind k) { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); };
    const double rel = std::max(1e-6, static_cast<double>(c.vocab) * std::ldexp(1.0, -24));
    float max_abs = 1.0f;
    for (float x : row)
        if (std::isfinite(x)) max_abs = std::max(max_abs, std::fabs(x));
    const double t = c.params.temp > 0 ? std::min(1.0, static_cast<double>(c.params.temp)) : 1.0;
    const double min_p_scale = max_abs / t + std::fabs(std::log(std::max(c.params.min_p, 1e-30f)));

    using Move = std::function<void(RowParams&, sieve::ref::SlotState&, int)>;
    std::vector<Move> moves;
    if (has(SamplerKind::TopP)) moves.push_back([=](RowParams& p, auto&, int d) { p.top_p *= 1.0f + d * rel; });
    if (has(SamplerKind::TypicalP)) moves.push_back([=](RowParams& p, auto&, int d) { p.typical_p *= 1.0f + d * rel; });
    if (has(SamplerKind::Xtc))
        moves.push_back([=](RowParams& p, auto&, int d) { p.xtc_threshold *= 1.0f + d * rel; });
    if (has(SamplerKind::MinP))
        moves.push_back([=](RowParams& p, auto&, int d) {
            p.min_p = static_cast<float>(p.min_p * std::exp(d * 1e-6 * min_p_scale));
        });
    if ((has(SamplerKind::Mirostat) || has(SamplerKind::MirostatV2)) && state.mu_set)
        moves.push_back([=](RowParams&, sieve::ref::SlotState& s, int d) {
            s.mu += static_cast<float>(d * rel * std::max(1.0f, std::fabs(s.mu)));
        });

    std::vector<std::map<int32_t, double>> out;
    int combos = 1;
    for (size_t i = 0; i < moves.size(); ++i) combos *= 3;
    for (int code0 = 0; code0 < combos; ++code0) {
        RowParams p = twin_params(c.params);
        sieve::ref::SlotState s = state;
        for (size_t i = 0, code = static_cast<size_t>(code0); i < moves.size(); ++i, code /= 3)
            if (code % 3 != 0) moves[i](p, s, code % 3 == 1 ? -1 : +1);
        std::vector<sieve::ref::Weighted> dist;
        if (sieve::ref::row_distribution(kinds, row.data(), c.vocab, p, &dist, &message, 0, 0, &s) != SIEVE_OK)
            continue;
        std::map<int32_t, double> m;
        for (const auto& w : dist) m[w.id] = w.p;
        out.push_back(std::move(m));
    }
    return out;
}

enum class Verdict { Exact, Boundary, Different };

// Sieve's distribution (one backend) against llama.cpp's for one row.
inline Verdict judge(const Case& c, const std::vector<float>& row, const std::map<int32_t, double>& llama,
                     const SieveDistribution& got, const sieve::ref::SlotState& state, std::string* why) {
    if (got.status != SIEVE_OK) {
        *why = std::string("Sieve failed: ") + sieve_status_name(got.status) + " " + got.message;
        return Verdict::Different;
    }
    std::string diff;
    if (same_probs(llama, got.p, &diff)) return Verdict::Exact;
    const auto runs = twin_runs_near_thresholds(c, row, state);
    const auto reproduces = [&](const std::map<int32_t, double>& want) {
        return std::any_of(runs.begin(), runs.end(), [&](const auto& r) { return same_probs(r, want, nullptr); });
    };
    if (llama.size() != got.p.size() || !std::equal(llama.begin(), llama.end(), got.p.begin(),
                                                    [](auto& a, auto& b) { return a.first == b.first; })) {
        if (reproduces(llama) && reproduces(got.p)) return Verdict::Boundary;
    }
    *why = diff + (runs.empty() ? " (the twin failed)" : "");
    return Verdict::Different;
}

// Counts by sampler and backend, printed as a table at the end of a test.
class Tally {
public:
    void add(const std::string& sampler, const std::string& backend, Verdict v, const std::string& what) {
        auto& row = counts_[{sampler, backend}];
        ++row[static_cast<int>(v)];
        if (v == Verdict::Different) ADD_FAILURE() << backend << ": llama.cpp and Sieve differ on " << what;
    }
    void print(const char* title) const {
        std::printf("\n%s: parity with llama.cpp v0.4.0 (cases: exact / boundary-only / different)\n", title);
        std::printf("  %-28s %-8s %7s %9s %9s\n", "sampler", "backend", "exact", "boundary", "different");
        for (const auto& [key, n] : counts_)
            std::printf("  %-28s %-8s %7d %9d %9d\n", key.first.c_str(), key.second.c_str(), n[0], n[1], n[2]);
        std::fflush(stdout);
    }
    int total() const {
        int t = 0;
        for (const auto& [key, n] : counts_) t += n[0] + n[1] + n[2];
        return t;
    }

private:
    std::map<std::pair<std::string, std::string>, std::array<int, 3>> counts_;
};

} // namespace sieve_llama_test
