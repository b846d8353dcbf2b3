// Flags shared by `sample` and `bench` (device choice, sampling flags) and what
// they turn into: a context and a chain.
#pragma once

#include <CLI/CLI.hpp>
#include <sieve/sieve.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sieve_cli {

struct SamplingOptions {
    std::string samplers;            // "" = llama.cpp's default chain (the library's)
    float temp = 0.8f;               // llama.cpp default
    int64_t seed = SIEVE_SEED_RANDOM; // 4294967295 (or -1) = random; the seed used is reported
    int32_t min_keep = 0;
    // The truncating samplers, llama.cpp's flags and defaults (common_params_sampling).
    int32_t top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float typical_p = 1.0f;          // --typical
    float top_n_sigma = -1.0f;
    float xtc_probability = 0.0f;
    float xtc_threshold = 0.1f;
    float dynatemp_range = 0.0f;
    float dynatemp_exponent = 1.0f;  // --dynatemp-exp
    // --logit-bias TOKEN(+|-)BIAS, repeatable, as llama.cpp parses it; applied to every row.
    std::vector<std::string> logit_bias;
};

// One --logit-bias value, "15043+1", "15043-inf", "7-0.5": llama.cpp's
// TOKEN_ID(+/-)BIAS. Throws CliError (usage) for anything else, NaN and +inf.
struct LogitBiasEntry {
    int32_t token;
    float bias;
};
LogitBiasEntry parse_logit_bias(const std::string& text);

// --samplers, --temp, --seed, --min-keep, --top-k, --top-p, --min-p, --typical,
// --top-n-sigma, --xtc-probability, --xtc-threshold, --dynatemp-range,
// --dynatemp-exp, --logit-bias with llama.cpp's names and defaults.
void add_sampling_flags(CLI::App& cmd, SamplingOptions& o);
// --device N|NAME|cpu
void add_device_flag(CLI::App& cmd, std::string& device);

// "temperature;dist", or "llama.cpp default" when none was given.
std::string samplers_label(const SamplingOptions& o);

// A context on the chosen device: "cpu" selects the CPU twin backend, "" the
// library's choice (SIEVE_DEVICE, else automatic), anything else is passed on as
// the device string (index or name substring).
struct Device {
    std::unique_ptr<sieve::Context> context;
    bool cpu_twin = false;
    bool has_info = false;
    sieve_device_info info{};
    std::string label;   // the device name, or "cpu (CPU twin)"
};
Device open_device(const std::string& device);
Device open_cpu_twin();

// Builds the chain for rows x vocab. Library failures become CliError with the
// mapped exit code and, for sampler errors, a hint about what is implemented.
sieve::Chain make_chain(const Device& device, const SamplingOptions& o, int32_t rows, int32_t vocab);

} // namespace sieve_cli
