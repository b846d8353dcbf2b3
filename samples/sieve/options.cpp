#include "options.hpp"

#include "exit_codes.hpp"

#include <algorithm>
#include <cctype>

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
    try {
        return sieve::Chain(*device.context, desc);
    } catch (const sieve::Error& e) {
        CliError err = from_library(e, "cannot build the chain '" + samplers_label(o) + "' for " + std::to_string(rows) +
                                           " x " + std::to_string(vocab));
        if (e.status() == SIEVE_ERROR_UNSUPPORTED_SAMPLER && o.samplers.empty())
            throw CliError(err.exit_code(),
                           std::string(err.what()) +
                               " (llama.cpp's default chain needs samplers this build does not implement yet; "
                               "choose a chain with --samplers, e.g. --samplers \"temperature;dist\")",
                           e.status());
        throw err;
    }
}

} // namespace sieve_cli
