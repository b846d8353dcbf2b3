#include "sample_json.hpp"

namespace sieve_cli {

Json history_params_json(const sieve::Chain& chain, const SamplingOptions& o, const ChainSetup& setup) {
    Json j;
    auto get = [&](sieve_param p) { return chain.get_param(p, 0); };
    auto integer = [&](sieve_param p) { return static_cast<int64_t>(get(p)); };
    auto real = [&](sieve_param p) { return json_float(static_cast<float>(get(p))); };
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

Json sample_json_header(const Device& device, const sieve::Chain& chain, const SamplingOptions& o,
                        const ChainSetup& setup, const Json& seed, int32_t vocab) {
    Json doc;
    doc["device"] = device.label;
    doc["backend"] = device.cpu_twin ? "cpu" : "vulkan";
    doc["samplers"] = samplers_label(o);
    doc["temp"] = json_float(o.temp);
    if (!seed.is_null()) doc["seed"] = seed;
    const Json history_params = history_params_json(chain, o, setup);
    for (auto it = history_params.begin(); it != history_params.end(); ++it) doc[it.key()] = it.value();
    doc["vocab"] = vocab;
    return doc;
}

} // namespace sieve_cli
