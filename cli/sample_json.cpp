#include "sample_json.hpp"

#include "chain_names.hpp"

#include <algorithm>
#include <cstdio>

namespace sieve_cli {
namespace {

bool in_chain(const ChainSetup& setup, const char* name) {
    return std::find(setup.chain.begin(), setup.chain.end(), name) != setup.chain.end();
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

} // namespace

Json chain_params_json(const sieve::Chain& chain, const SamplingOptions& o, const ChainSetup& setup) {
    Json j;
    auto get = [&](sieve_param p) { return chain.get_param(p, 0); };
    auto integer = [&](sieve_param p) { return static_cast<int64_t>(get(p)); };
    auto real = [&](sieve_param p) { return json_float(static_cast<float>(get(p))); };
    j["temp"] = real(SIEVE_PARAM_TEMPERATURE);
    j["dynatemp_range"] = real(SIEVE_PARAM_DYNATEMP_RANGE);
    j["dynatemp_exp"] = real(SIEVE_PARAM_DYNATEMP_EXPONENT);
    j["top_k"] = integer(SIEVE_PARAM_TOP_K);
    j["top_p"] = real(SIEVE_PARAM_TOP_P);
    j["min_p"] = real(SIEVE_PARAM_MIN_P);
    j["typical"] = real(SIEVE_PARAM_TYPICAL_P);
    j["top_n_sigma"] = real(SIEVE_PARAM_TOP_N_SIGMA);
    j["xtc_probability"] = real(SIEVE_PARAM_XTC_PROBABILITY);
    j["xtc_threshold"] = real(SIEVE_PARAM_XTC_THRESHOLD);
    j["min_keep"] = integer(SIEVE_PARAM_MIN_KEEP);
    Json bias = Json::array();
    for (const LogitBiasEntry& e : setup.bias) bias.push_back({{"token", e.token}, {"bias", json_float(e.bias)}});
    j["logit_bias"] = std::move(bias);
    j["repeat_last_n"] = integer(SIEVE_PARAM_REPEAT_LAST_N);
    j["repeat_penalty"] = real(SIEVE_PARAM_REPEAT_PENALTY);
    j["frequency_penalty"] = real(SIEVE_PARAM_FREQUENCY_PENALTY);
    j["presence_penalty"] = real(SIEVE_PARAM_PRESENCE_PENALTY);
    j["dry_multiplier"] = real(SIEVE_PARAM_DRY_MULTIPLIER);
    j["dry_base"] = real(SIEVE_PARAM_DRY_BASE);
    j["dry_allowed_length"] = integer(SIEVE_PARAM_DRY_ALLOWED_LENGTH);
    j["dry_penalty_last_n"] = integer(SIEVE_PARAM_DRY_PENALTY_LAST_N);
    j["dry_sequence_breakers"] = setup.breakers;
    j["mirostat"] = o.mirostat;
    j["mirostat_lr"] = real(SIEVE_PARAM_MIROSTAT_ETA);
    j["mirostat_ent"] = real(SIEVE_PARAM_MIROSTAT_TAU);
    j["adaptive_target"] = real(SIEVE_PARAM_ADAPTIVE_TARGET);
    j["adaptive_decay"] = real(SIEVE_PARAM_ADAPTIVE_DECAY);
    j["history_capacity"] = setup.history_capacity;
    j["history"] = setup.history;
    return j;
}

std::vector<uint32_t> row_seeds(const sieve::Chain& chain, int32_t rows) {
    std::vector<uint32_t> seeds(static_cast<size_t>(rows));
    for (int32_t r = 0; r < rows; ++r) seeds[r] = static_cast<uint32_t>(chain.get_param(SIEVE_PARAM_SEED, r));
    return seeds;
}

Json sample_json_header(const Device& device, const sieve::Chain& chain, const SamplingOptions& o,
                        const ChainSetup& setup, const Json& seed, int32_t vocab) {
    Json doc;
    doc["device"] = device.label;
    doc["backend"] = device.cpu_twin ? "cpu" : "vulkan";
    doc["samplers"] = join_names(setup.chain);
    if (!seed.is_null()) doc["seed"] = seed;
    const Json params = chain_params_json(chain, o, setup);
    for (auto it = params.begin(); it != params.end(); ++it) doc[it.key()] = it.value();
    doc["vocab"] = vocab;
    return doc;
}

std::string sample_text_header(const sieve::Chain& chain, const SamplingOptions& o, const ChainSetup& setup,
                               const std::vector<uint32_t>& seeds) {
    auto get = [&](sieve_param p) { return number(chain.get_param(p, 0)); };
    std::string t = "samplers: " + join_names(setup.chain) + "\n";
    std::string p;
    auto add = [&](const std::string& name, sieve_param param) { p += (p.empty() ? "" : "  ") + name + " " + get(param); };
    if (in_chain(setup, "penalties")) {
        add("repeat-last-n", SIEVE_PARAM_REPEAT_LAST_N);
        add("repeat-penalty", SIEVE_PARAM_REPEAT_PENALTY);
        add("frequency-penalty", SIEVE_PARAM_FREQUENCY_PENALTY);
        add("presence-penalty", SIEVE_PARAM_PRESENCE_PENALTY);
    }
    if (in_chain(setup, "dry")) {
        add("dry-multiplier", SIEVE_PARAM_DRY_MULTIPLIER);
        add("dry-base", SIEVE_PARAM_DRY_BASE);
        add("dry-allowed-length", SIEVE_PARAM_DRY_ALLOWED_LENGTH);
        add("dry-penalty-last-n", SIEVE_PARAM_DRY_PENALTY_LAST_N);
    }
    if (in_chain(setup, "top_n_sigma")) add("top-n-sigma", SIEVE_PARAM_TOP_N_SIGMA);
    if (in_chain(setup, "top_k")) add("top-k", SIEVE_PARAM_TOP_K);
    if (in_chain(setup, "typ_p")) add("typical", SIEVE_PARAM_TYPICAL_P);
    if (in_chain(setup, "top_p")) add("top-p", SIEVE_PARAM_TOP_P);
    if (in_chain(setup, "min_p")) add("min-p", SIEVE_PARAM_MIN_P);
    if (in_chain(setup, "xtc")) {
        add("xtc-probability", SIEVE_PARAM_XTC_PROBABILITY);
        add("xtc-threshold", SIEVE_PARAM_XTC_THRESHOLD);
    }
    if (in_chain(setup, "temperature")) {
        add("temp", SIEVE_PARAM_TEMPERATURE);
        if (chain.get_param(SIEVE_PARAM_DYNATEMP_RANGE, 0) > 0) {
            add("dynatemp-range", SIEVE_PARAM_DYNATEMP_RANGE);
            add("dynatemp-exp", SIEVE_PARAM_DYNATEMP_EXPONENT);
        }
    }
    if (in_chain(setup, "mirostat") || in_chain(setup, "mirostat_v2")) {
        p += (p.empty() ? "" : "  ") + std::string("mirostat ") + std::to_string(o.mirostat);
        add("mirostat-lr", SIEVE_PARAM_MIROSTAT_ETA);
        add("mirostat-ent", SIEVE_PARAM_MIROSTAT_TAU);
    }
    if (in_chain(setup, "adaptive_p")) {
        add("adaptive-target", SIEVE_PARAM_ADAPTIVE_TARGET);
        add("adaptive-decay", SIEVE_PARAM_ADAPTIVE_DECAY);
    }
    if (chain.get_param(SIEVE_PARAM_MIN_KEEP, 0) > 0) add("min-keep", SIEVE_PARAM_MIN_KEEP);
    if (!setup.bias.empty()) p += (p.empty() ? "" : "  ") + std::string("logit-bias ") + std::to_string(setup.bias.size()) + " token(s)";
    const bool differ = std::any_of(seeds.begin(), seeds.end(), [&](uint32_t s) { return s != seeds.front(); });
    if (!seeds.empty()) p += (p.empty() ? "" : "  ") + (differ ? std::string("seed per row") : "seed " + std::to_string(seeds.front()));
    return t + "params: " + p;
}

} // namespace sieve_cli
