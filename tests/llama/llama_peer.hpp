// The real llama.cpp's side of a parity case: its sampler chain built from a
// Case (as common_sampler_init builds it: the logit bias first, then the
// named samplers; the final dist left out so that the candidates it would
// draw from can be read), and the final distribution that chain leaves.
#pragma once

#include <llama.h>

#include "parity_case.hpp"

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

// llama.cpp's token-level DRY constructor (src/llama-sampler.h), exported by
// libllama and used by its own tests: breakers as token sequences, head first.
struct llama_sampler* llama_sampler_init_dry_testing(float dry_multiplier, float dry_base, int32_t dry_allowed_length,
                                                     int32_t dry_penalty_last_n,
                                                     const std::vector<std::vector<llama_token>>& seq_breakers);

namespace sieve_llama_test {

// A llama.cpp sampler chain, owned.
class LlamaChain {
public:
    explicit LlamaChain(const Case& c) : chain_(llama_sampler_chain_init(llama_sampler_chain_default_params())) {
        const Params& p = c.params;
        if (!p.logit_bias.empty()) {
            std::vector<llama_logit_bias> bias;
            for (auto [token, b] : p.logit_bias) bias.push_back({token, b});
            add(llama_sampler_init_logit_bias(c.vocab, static_cast<int32_t>(bias.size()), bias.data()));
        }
        const size_t min_keep = static_cast<size_t>(p.min_keep);
        for (const std::string& name : split_chain(c.samplers)) {
            if (name == "penalties")
                add(llama_sampler_init_penalties(c.vocab, p.penalty_last_n, p.penalty_repeat, p.penalty_freq,
                                                 p.penalty_present));
            else if (name == "dry") {
                // llama_sampler_init_dry_testing treats the no-op sampler that a
                // disabled DRY gets as a DRY sampler (it clears its breakers:
                // heap corruption), so only an enabled DRY with breakers goes
                // through it; the rest through the public constructor.
                const bool enabled = p.dry_multiplier != 0.0f && p.dry_base >= 1.0f && p.dry_penalty_last_n != 0;
                if (enabled && !p.dry_breakers.empty())
                    add(llama_sampler_init_dry_testing(p.dry_multiplier, p.dry_base, p.dry_allowed_length,
                                                       p.dry_penalty_last_n, p.dry_breakers));
                else
                    add(llama_sampler_init_dry(nullptr, p.dry_multiplier, p.dry_base, p.dry_allowed_length,
                                               p.dry_penalty_last_n, nullptr, 0));
            }
            else if (name == "top_n_sigma") add(llama_sampler_init_top_n_sigma(p.top_n_sigma));
            else if (name == "top_k") add(llama_sampler_init_top_k(p.top_k));
            else if (name == "typ_p") add(llama_sampler_init_typical(p.typ_p, min_keep));
            else if (name == "top_p") add(llama_sampler_init_top_p(p.top_p, min_keep));
            else if (name == "min_p") add(llama_sampler_init_min_p(p.min_p, min_keep));
            else if (name == "xtc") add(llama_sampler_init_xtc(p.xtc_probability, p.xtc_threshold, min_keep, p.seed));
            else if (name == "temperature")
                add(llama_sampler_init_temp_ext(p.temp, p.dynatemp_range, p.dynatemp_exponent));
            else if (name == "greedy") add(llama_sampler_init_greedy());
            else if (name == "dist") {
                // left out: the distribution it would draw from is read instead
            } else if (name == "mirostat")
                add(llama_sampler_init_mirostat(c.vocab, p.seed, p.mirostat_tau, p.mirostat_eta, 100));
            else if (name == "mirostat_v2")
                add(llama_sampler_init_mirostat_v2(p.seed, p.mirostat_tau, p.mirostat_eta));
            else if (name == "adaptive_p") add(llama_sampler_init_adaptive_p(p.adaptive_target, p.adaptive_decay, p.seed));
            else throw std::invalid_argument("no llama.cpp sampler for '" + name + "'");
        }
        for (int32_t t : c.history) llama_sampler_accept(chain_, t);
    }
    ~LlamaChain() { llama_sampler_free(chain_); }
    LlamaChain(const LlamaChain&) = delete;
    LlamaChain& operator=(const LlamaChain&) = delete;

    llama_sampler* get() const { return chain_; }
    void accept(int32_t token) { llama_sampler_accept(chain_, token); }

private:
    void add(llama_sampler* s) {
        if (s == nullptr) throw std::runtime_error("llama.cpp refused a sampler");
        llama_sampler_chain_add(chain_, s);
    }
    llama_sampler* chain_;
};

// What llama.cpp's chain leaves: the unmasked candidates with their
// probabilities, and the selected token where the chain picks one itself.
struct LlamaResult {
    std::map<int32_t, double> p;  // by id
    int32_t selected = -1;        // greedy, mirostat, adaptive-p: the token picked
};

// Runs the chain over a row in id order (as llama_sampler_sample fills it).
// Chains ending in dist (left out of the chain): the softmax of what is left,
// as llama_sampler_dist_apply computes it (expf(l - max) in float, summed in
// double). Greedy: its pick, p = 1. Mirostat and adaptive-p: the candidates
// their apply leaves and the p they drew with.
inline LlamaResult llama_run(LlamaChain& chain, const std::string& final_name, const std::vector<float>& row) {
    std::vector<llama_token_data> data(row.size());
    for (size_t i = 0; i < row.size(); ++i) data[i] = {static_cast<llama_token>(i), row[i], 0.0f};
    llama_token_data_array cur{data.data(), data.size(), -1, false};
    llama_sampler_apply(chain.get(), &cur);
    LlamaResult out;
    if (final_name == "greedy") {
        out.selected = cur.data[cur.selected].id;
        out.p[out.selected] = 1.0;
        return out;
    }
    if (final_name == "mirostat" || final_name == "mirostat_v2" || final_name == "adaptive_p") {
        out.selected = cur.data[cur.selected].id;
        for (size_t i = 0; i < cur.size; ++i)
            if (cur.data[i].logit != -INFINITY) out.p[cur.data[i].id] = cur.data[i].p;
        return out;
    }
    float max_l = -INFINITY;
    for (size_t i = 0; i < cur.size; ++i) max_l = std::max(max_l, cur.data[i].logit);
    double sum = 0;
    std::vector<float> w(cur.size);
    for (size_t i = 0; i < cur.size; ++i) {
        w[i] = std::exp(cur.data[i].logit - max_l);
        sum += w[i];
    }
    for (size_t i = 0; i < cur.size; ++i)
        if (cur.data[i].logit != -INFINITY) out.p[cur.data[i].id] = w[i] / sum;
    return out;
}

} // namespace sieve_llama_test
