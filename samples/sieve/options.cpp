#include "options.hpp"

#include "exit_codes.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace sieve_cli {
namespace {

bool is_cpu(const std::string& s) {
    std::string l = s;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return l == "cpu";
}

CliError from_library(const sieve::Error& e, const std::string& what) {
    return CliError(exit_code_for(e.status()), what + ": " + e.what(), e.status());
}

} // namespace

void add_sampling_flags(CLI::App& cmd, SamplingOptions& o) {
    cmd.add_option("--samplers", o.samplers,
                   "samplers in order, llama.cpp names separated by ';' (default: llama.cpp's default chain)");
    cmd.add_option("--temp", o.temp, "temperature (<= 0: greedy masking)")->capture_default_str();
    cmd.add_option("--seed", o.seed, "RNG seed; 4294967295 or -1 = random (the seed used is reported)")
        ->check(CLI::Range(int64_t(-1), int64_t(0xFFFFFFFFll)))
        ->capture_default_str();
    cmd.add_option("--min-keep", o.min_keep, "minimum candidates every truncating sampler keeps")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    cmd.add_option("--top-k", o.top_k, "top-k sampling (<= 0 = off)")->capture_default_str();
    cmd.add_option("--top-p", o.top_p, "top-p sampling (>= 1 = off)")->capture_default_str();
    cmd.add_option("--min-p", o.min_p, "min-p sampling (<= 0 = off)")->capture_default_str();
    cmd.add_option("--typical", o.typical_p, "locally typical sampling, parameter p (>= 1 = off)")
        ->capture_default_str();
    cmd.add_option("--top-n-sigma", o.top_n_sigma, "top-n-sigma sampling (<= 0 = off)")->capture_default_str();
    cmd.add_option("--xtc-probability", o.xtc_probability, "XTC probability (<= 0 = off)")->capture_default_str();
    cmd.add_option("--xtc-threshold", o.xtc_threshold, "XTC threshold (> 0.5 = off)")->capture_default_str();
    cmd.add_option("--dynatemp-range", o.dynatemp_range,
                   "dynamic temperature range: temperature in [temp - range, temp + range] (<= 0 = off)")
        ->capture_default_str();
    cmd.add_option("--dynatemp-exp", o.dynatemp_exponent, "dynamic temperature exponent")->capture_default_str();
    cmd.add_option("--logit-bias", o.logit_bias,
                   "TOKEN_ID(+|-)BIAS added to that token's logit in every row, e.g. 15043+1 or 15043-inf "
                   "(repeatable)")
        ->take_last()
        ->allow_extra_args(false);
}

LogitBiasEntry parse_logit_bias(const std::string& text) {
    // llama.cpp (common/arg.cpp): `ss >> key && ss >> sign && getline(ss, value)`,
    // sign '+' or '-', bias = stof(value) * (sign == '-' ? -1 : 1).
    auto bad = [&](const std::string& why) {
        return CliError(kExitUsage, "--logit-bias '" + text + "': " + why + " (expected TOKEN_ID(+|-)BIAS, e.g. 15043+1 or 15043-inf)");
    };
    size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t digits_start = i;
    if (i < text.size() && text[i] == '-') ++i;  // a negative id parses (and is refused by the library)
    const size_t id_start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == id_start) throw bad("no token id");
    errno = 0;
    const long long id = std::strtoll(text.substr(digits_start, i - digits_start).c_str(), nullptr, 10);
    if (errno != 0 || id < INT32_MIN || id > INT32_MAX) throw bad("token id out of range");
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size() || (text[i] != '+' && text[i] != '-')) throw bad("no '+' or '-' after the token id");
    const float sign = text[i] == '-' ? -1.0f : 1.0f;
    const std::string value = text.substr(i + 1);
    char* end = nullptr;
    errno = 0;
    const float magnitude = std::strtof(value.c_str(), &end);
    if (value.empty() || end == value.c_str()) throw bad("no bias value");
    while (*end && std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (*end) throw bad("trailing characters after the bias");
    const float bias = sign * magnitude;
    if (std::isnan(bias)) throw bad("the bias is NaN");
    if (bias == INFINITY) throw bad("a +inf bias is refused (finite or -inf only)");
    return LogitBiasEntry{static_cast<int32_t>(id), bias};
}

void add_device_flag(CLI::App& cmd, std::string& device) {
    cmd.add_option("--device", device,
                   "device: index or name substring (see `sieve devices`), or 'cpu' for the CPU twin "
                   "(default: SIEVE_DEVICE, else the best device)");
}

std::string samplers_label(const SamplingOptions& o) {
    return o.samplers.empty() ? std::string("llama.cpp default") : o.samplers;
}

Device open_cpu_twin() { return open_device("cpu"); }

Device open_device(const std::string& device) {
    Device d;
    d.cpu_twin = is_cpu(device);
    sieve::ContextOptions opts;
    if (d.cpu_twin) opts.backend(SIEVE_BACKEND_CPU);
    else if (!device.empty()) opts.device(device.c_str());
    try {
        d.context = std::make_unique<sieve::Context>(opts);
    } catch (const sieve::Error& e) {
        std::string which = d.cpu_twin ? "the CPU twin" : device.empty() ? "the default device" : "device '" + device + "'";
        throw from_library(e, "cannot open " + which);
    }
    try {
        d.info = d.context->device_info();
        d.has_info = true;
    } catch (const sieve::Error&) {
        d.has_info = false; // the CPU twin may have no device to describe
    }
    if (d.cpu_twin) d.label = "cpu (CPU twin)";
    else d.label = d.has_info ? std::string(d.info.name) : std::string("unknown device");
    return d;
}

sieve::Chain make_chain(const Device& device, const SamplingOptions& o, int32_t rows, int32_t vocab) {
    sieve::ChainDesc desc;
    if (!o.samplers.empty()) desc.samplers(o.samplers);
    else desc.raw.samplers = nullptr; // the library's (llama.cpp's) default chain
    desc.capacity(rows, vocab).temperature(o.temp).min_keep(o.min_keep);
    desc.seed(o.seed < 0 ? SIEVE_SEED_RANDOM : static_cast<uint32_t>(o.seed));
    std::vector<int32_t> bias_tokens;
    std::vector<float> bias_values;
    for (const std::string& text : o.logit_bias) {
        const LogitBiasEntry e = parse_logit_bias(text);
        bias_tokens.push_back(e.token);
        bias_values.push_back(e.bias);
    }
    auto build = [&]() {
        sieve::Chain chain(*device.context, desc);
        return chain;
    };
    sieve::Chain chain = [&]() {
        try {
            return build();
        } catch (const sieve::Error& e) {
            CliError err = from_library(e, "cannot build the chain '" + samplers_label(o) + "' for " +
                                               std::to_string(rows) + " x " + std::to_string(vocab));
            if (e.status() == SIEVE_ERROR_UNSUPPORTED_SAMPLER && o.samplers.empty() && !device.cpu_twin)
                throw CliError(err.exit_code(),
                               std::string(err.what()) +
                                   " (llama.cpp's default chain needs samplers the GPU engine does not run yet; "
                                   "use --device cpu, or choose a chain with --samplers, e.g. --samplers "
                                   "\"temperature;dist\")",
                               e.status());
            throw err;
        }
    }();
    // Per-row parameters (every row): llama.cpp's flags.
    const std::pair<sieve_param, double> params[] = {
        {SIEVE_PARAM_TOP_K, o.top_k},
        {SIEVE_PARAM_TOP_P, o.top_p},
        {SIEVE_PARAM_MIN_P, o.min_p},
        {SIEVE_PARAM_TYPICAL_P, o.typical_p},
        {SIEVE_PARAM_TOP_N_SIGMA, o.top_n_sigma},
        {SIEVE_PARAM_XTC_PROBABILITY, o.xtc_probability},
        {SIEVE_PARAM_XTC_THRESHOLD, o.xtc_threshold},
        {SIEVE_PARAM_DYNATEMP_RANGE, o.dynatemp_range},
        {SIEVE_PARAM_DYNATEMP_EXPONENT, o.dynatemp_exponent},
    };
    for (const auto& [param, value] : params) {
        try {
            chain.set(param, value);
        } catch (const sieve::Error& e) {
            throw from_library(e, "cannot set the sampling parameters");
        }
    }
    if (!bias_tokens.empty()) {
        try {
            chain.set_logit_bias(bias_tokens, bias_values);
        } catch (const sieve::Error& e) {
            // A flag the library refuses (token outside the vocab, or not on this
            // device) is a usage error.
            throw CliError(kExitUsage, std::string("--logit-bias: ") + e.what(), e.status());
        }
    }
    return chain;
}

} // namespace sieve_cli
