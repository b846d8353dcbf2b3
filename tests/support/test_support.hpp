// Shared test helpers: GPU contexts with validation on (and the constrained
// profile), and seeded logits of the shapes the suite covers.
#pragma once

#include <sieve/sieve.hpp>

#include "reference/reference.hpp"

namespace sieve {
struct EffectiveLimits;  // vulkan/vk_device.hpp
class Device;            // vulkan/vk_device.hpp
}

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace sieve_test {

extern std::atomic<uint64_t> g_validation_messages;
void count_validation_message(const char* message, void*);

// Full: the device as it is. Constrained: a small phone GPU. Wide: the
// 256-invocation workgroups GPUs get (a CPU device defaults to 64).
enum class Profile { Full, Constrained, Wide };

// Sets (or, given nullptr, unsets) an environment variable for a scope, then
// restores what was there.
struct ScopedEnv {
    std::string name, old;
    bool had;
    ScopedEnv(const char* n, const char* value) : name(n) {
        const char* o = std::getenv(n);
        had = o != nullptr;
        if (had) old = o;
        if (value) setenv(n, value, 1);
        else unsetenv(n);
    }
    ~ScopedEnv() {
        if (had) setenv(name.c_str(), old.c_str(), 1);
        else unsetenv(name.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
};

inline sieve::ContextOptions gpu_options(Profile profile = Profile::Full) {
    sieve::ContextOptions o;
    o.validation(1).on_message(count_validation_message, nullptr);
    // The constrained profile: what a small phone GPU offers (no optional
    // features, 16 KiB shared memory, 128-invocation workgroups).
    if (profile == Profile::Constrained) o.constrained(SIEVE_FEATURE_ALL, 16384, 128);
    if (profile == Profile::Wide) o.constrained(0, 0, 256);
    return o;
}

inline sieve::Context gpu_context(Profile profile = Profile::Full) { return sieve::Context(gpu_options(profile)); }

// A context on the device's own plan, whatever SIEVE_PROFILE says, made with
// SIEVE_COMPUTE_UNITS = units: a CPU device's plan then splits rows as one
// with that many cores does (chunks, history workgroups).
inline sieve::Context device_plan_context(const char* units) {
    sieve::ContextOptions options = gpu_options();
    options.profile("device");
    ScopedEnv env("SIEVE_COMPUTE_UNITS", units);
    return sieve::Context(options);
}

// The workgroups a plan's stage is expected to launch over `rows` rows
// (sieve_chain_plan_estimate: the collect variant the host arms for them).
inline uint32_t stage_workgroups(const sieve::Chain& chain, int32_t rows, int32_t vocab, const char* stage) {
    for (const sieve_stage_estimate& e : chain.plan_estimate(rows, vocab))
        if (std::string(e.stage) == stage) return e.workgroups;
    ADD_FAILURE() << "no " << stage << " in the plan";
    return 0;
}

// A binding range small enough that every device splits a vocab-262144 batch
// of a dozen rows into row windows (sieve_context_options.max_storage_buffer_range):
// at most 7 rows of 262144 a window (a row takes 2 * 262144 + 2 words in its
// largest per-row buffer; alignment can leave fewer: row_windows says).
constexpr uint64_t kWindowTestRange = 16ull << 20;

// The row windows a GPU chain's buffers are bound in: how many, and the rows
// each holds ({0, 0} for a CPU chain).
struct Windows {
    uint32_t count = 0, rows = 0;
};
Windows row_windows(const sieve::Chain& chain);

// A GPU chain's host calls leave their rows' bias and bitmask to the passes,
// which apply them as they read (the general collect variant, row_logit, the
// history table), as for the app's device buffers, instead of writing them
// into the row on upload: the tests of those paths. Fails the test for a CPU
// chain.
void leave_inputs_to_the_passes(sieve::Chain& chain);

// A Vulkan context's device, and the limits it plans with (its profile
// applied). Fail the test (and throw) for a context of another backend.
const sieve::Device& device_of(const sieve::Context& context);
const sieve::EffectiveLimits& limits_of(const sieve::Context& context);

// sieve_chain_plan_estimate with the shaders of a measured run, "30de833"
// (also its plan: rows at the plan's chunks, the tail merging by ranks) or
// "521950c" (GpuChain::plan_estimate). Empty for a CPU chain.
std::vector<sieve_stage_estimate> plan_estimate_as_run(const sieve::Chain& chain, int32_t rows, int32_t vocab,
                                                       const std::string& commit);

inline sieve::Context cpu_context() {
    sieve::ContextOptions o;
    o.backend(SIEVE_BACKEND_CPU);
    return sieve::Context(o);
}

// The two backends an API test runs on (one test instance each).
enum class OnBackend { Gpu, Cpu };
inline sieve::Context backend_context(OnBackend b) { return b == OnBackend::Gpu ? gpu_context() : cpu_context(); }
inline std::string backend_name(const testing::TestParamInfo<OnBackend>& info) {
    return info.param == OnBackend::Gpu ? "Gpu" : "Cpu";
}

// Gaussian: N(0, 4); Flat: N(0, 1), no outliers (`sieve bench`'s flat rows),
// whose top-p cuts and draws fall among tens of thousands of logits.
enum class Shape { Gaussian, Zipf, Peaked, Masked, Ties, Flat };

inline const char* shape_name(Shape s) {
    switch (s) {
    case Shape::Gaussian: return "gaussian";
    case Shape::Zipf: return "zipf";
    case Shape::Peaked: return "peaked";
    case Shape::Masked: return "masked";
    case Shape::Ties: return "ties";
    case Shape::Flat: return "flat";
    }
    return "?";
}

// One row of `vocab` logits of the given shape, deterministic in `seed`.
inline std::vector<float> make_row(Shape shape, int32_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(vocab));
    switch (shape) {
    case Shape::Gaussian:
        for (auto& x : row) x = 2.0f * normal(rng);
        break;
    case Shape::Zipf: {
        // LM-like: logit = -1.1 * log(rank) + noise, ranks a random permutation.
        std::vector<int32_t> rank(row.size());
        for (size_t i = 0; i < rank.size(); ++i) rank[i] = static_cast<int32_t>(i);
        std::shuffle(rank.begin(), rank.end(), rng);
        for (size_t i = 0; i < row.size(); ++i)
            row[i] = 12.0f - 1.1f * std::log(static_cast<float>(rank[i] + 1)) + 0.3f * normal(rng);
        break;
    }
    case Shape::Peaked:
        for (auto& x : row) x = normal(rng);
        row[rng() % row.size()] = 25.0f;
        break;
    case Shape::Flat:
        for (auto& x : row) x = normal(rng);
        break;
    case Shape::Masked:
        for (auto& x : row) x = (rng() % 4 == 0) ? normal(rng) : -std::numeric_limits<float>::infinity();
        row[rng() % row.size()] = 1.0f;
        break;
    case Shape::Ties:
        // Few distinct values: large tie groups, as f16/bf16 logits give.
        for (auto& x : row) x = static_cast<float>(static_cast<int>(rng() % 6)) * 0.5f;
        break;
    }
    return row;
}

inline std::vector<float> make_rows(Shape shape, int32_t rows, int32_t vocab, uint32_t seed) {
    std::vector<float> out;
    out.reserve(static_cast<size_t>(rows) * vocab);
    for (int32_t r = 0; r < rows; ++r) {
        auto row = make_row(shape, vocab, seed * 7919u + static_cast<uint32_t>(r));
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

inline sieve::ChainDesc chain_desc(const std::string& samplers, int32_t rows, int32_t vocab, float temperature,
                                   uint32_t seed) {
    sieve::ChainDesc d;
    d.samplers(samplers).capacity(rows, vocab).temperature(temperature).seed(seed);
    return d;
}

inline std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The call returned `want`, and the thread's last error is non-empty and
// contains every one of `parts` (case-insensitive). Reads sieve_last_error()
// before any other Sieve call can replace it.
inline testing::AssertionResult Fails(sieve_status got, sieve_status want, std::initializer_list<std::string> parts) {
    const std::string message = sieve_last_error();
    if (got != want)
        return testing::AssertionFailure() << "status " << sieve_status_name(got) << " (" << got << "), expected "
                                           << sieve_status_name(want) << " (" << want << "); message: \""
                                           << message << "\"";
    if (message.empty()) return testing::AssertionFailure() << "sieve_last_error() is empty after " << sieve_status_name(got);
    for (const auto& p : parts)
        if (lower(message).find(lower(p)) == std::string::npos)
            return testing::AssertionFailure() << "message \"" << message << "\" does not mention \"" << p << "\"";
    return testing::AssertionSuccess() << message;
}

// The twin's parsed chain for `text`; empty (and the running test failed) when it
// does not parse, since a parsed chain always ends with its draw.
inline std::vector<sieve::ref::SamplerKind> twin_chain(const std::string& text) {
    std::vector<sieve::ref::SamplerKind> kinds;
    std::string message;
    EXPECT_EQ(sieve::ref::parse_chain(text.c_str(), &kinds, &message), SIEVE_OK) << message;
    return kinds;
}

} // namespace sieve_test
