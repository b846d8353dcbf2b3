// One parity case as both sides read it: a chain (Sieve's sampler names; the
// final draw implied unless the chain ends with a selector), llama.cpp-style
// parameters, and the rows' shape. llama_peer.hpp builds the llama.cpp chain
// from it, sieve_side.hpp the Sieve chain.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace sieve_llama_test {

// llama.cpp's sampler parameters (common_params_sampling's names and defaults,
// except the windows: llama.cpp's -1 is the context, which Sieve has not).
struct Params {
    float temp = 0.8f, dynatemp_range = 0.0f, dynatemp_exponent = 1.0f;
    int32_t top_k = 40;
    float top_p = 0.95f, min_p = 0.05f, typ_p = 1.0f, top_n_sigma = -1.0f;
    float xtc_probability = 0.0f, xtc_threshold = 0.1f;
    int32_t min_keep = 0;
    int32_t penalty_last_n = 64;
    float penalty_repeat = 1.0f, penalty_freq = 0.0f, penalty_present = 0.0f;
    float dry_multiplier = 0.0f, dry_base = 1.75f;
    int32_t dry_allowed_length = 2, dry_penalty_last_n = 1024;
    std::vector<std::vector<int32_t>> dry_breakers;
    float mirostat_tau = 5.0f, mirostat_eta = 0.1f;
    float adaptive_target = -1.0f, adaptive_decay = 0.9f;
    std::vector<std::pair<int32_t, float>> logit_bias;
    uint32_t seed = 1234;
};

// Row shapes: LM-like Zipf, flat (nearly equal), one peak, many ties, mostly
// masked (-inf), huge magnitudes (near float's range).
enum class Shape { Zipf, Flat, Peaked, Ties, Masked, Huge };

inline const char* shape_name(Shape s) {
    switch (s) {
    case Shape::Zipf: return "zipf";
    case Shape::Flat: return "flat";
    case Shape::Peaked: return "peaked";
    case Shape::Ties: return "ties";
    case Shape::Masked: return "masked";
    case Shape::Huge: return "huge";
    }
    return "?";
}

inline std::vector<float> make_row(Shape shape, int32_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(vocab));
    switch (shape) {
    case Shape::Zipf: {
        std::vector<int32_t> rank(row.size());
        for (size_t i = 0; i < rank.size(); ++i) rank[i] = static_cast<int32_t>(i);
        std::shuffle(rank.begin(), rank.end(), rng);
        for (size_t i = 0; i < row.size(); ++i)
            row[i] = 12.0f - 1.1f * std::log(static_cast<float>(rank[i] + 1)) + 0.3f * normal(rng);
        break;
    }
    case Shape::Flat:
        for (auto& x : row) x = 0.01f * normal(rng);
        break;
    case Shape::Peaked:
        for (auto& x : row) x = normal(rng);
        row[rng() % row.size()] = 12.0f;
        break;
    case Shape::Ties:
        for (auto& x : row) x = static_cast<float>(static_cast<int>(rng() % 5)) * 0.75f;
        break;
    case Shape::Masked:
        for (auto& x : row) x = (rng() % 4 == 0) ? 2.0f * normal(rng) : -std::numeric_limits<float>::infinity();
        row[rng() % row.size()] = 3.0f;
        break;
    case Shape::Huge:
        // Spread over a range of about 1e37 (within float after a temperature >= 0.5).
        for (auto& x : row) x = 1e36f * normal(rng);
        break;
    }
    return row;
}

// Chains name llama.cpp's samplers as Sieve does; the final sampler is dist
// unless the last name is greedy, mirostat, mirostat_v2 or adaptive_p.
struct Case {
    std::string samplers;
    Params params;
    Shape shape = Shape::Zipf;
    int32_t vocab = 1000;
    uint32_t row_seed = 1;
    std::vector<int32_t> history;  // tokens accepted before the row

    std::string describe() const {
        std::ostringstream s;
        s << "'" << samplers << "' " << shape_name(shape) << " vocab " << vocab << " row_seed " << row_seed
          << " (temp " << params.temp << " dyn " << params.dynatemp_range << "/" << params.dynatemp_exponent
          << " k " << params.top_k << " p " << params.top_p << " min_p " << params.min_p << " typ " << params.typ_p
          << " sigma " << params.top_n_sigma << " xtc " << params.xtc_probability << "/" << params.xtc_threshold
          << " min_keep " << params.min_keep << " pen " << params.penalty_last_n << "/" << params.penalty_repeat << "/"
          << params.penalty_freq << "/" << params.penalty_present << " dry " << params.dry_multiplier << "/"
          << params.dry_base << "/" << params.dry_allowed_length << "/" << params.dry_penalty_last_n << " ("
          << params.dry_breakers.size() << " breakers) mirostat " << params.mirostat_tau << "/"
          << params.mirostat_eta << " adaptive " << params.adaptive_target << "/" << params.adaptive_decay
          << " bias " << params.logit_bias.size() << " history " << history.size() << ")";
        return s.str();
    }
};

inline std::vector<std::string> split_chain(const std::string& samplers) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : samplers + ";") {
        if (c == ';') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    return out;
}

inline bool is_selector(const std::string& name) {
    return name == "greedy" || name == "dist" || name == "mirostat" || name == "mirostat_v2" || name == "adaptive_p";
}

// The chain's final sampler (dist when none is named).
inline std::string final_sampler(const std::string& samplers) {
    auto names = split_chain(samplers);
    return !names.empty() && is_selector(names.back()) ? names.back() : "dist";
}

} // namespace sieve_llama_test
