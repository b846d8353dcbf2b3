#include "vulkan/device_profile.hpp"

#include "api/error.hpp"
#include "vulkan/vk_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

namespace sieve {

namespace {

uint32_t floor_pow2(uint32_t v) { return v == 0 ? 0 : 1u << (31 - __builtin_clz(v)); }

constexpr uint32_t kProfileAll = SIEVE_PROFILE_GPU | SIEVE_PROFILE_CONSTRAINED;

} // namespace

uint32_t parse_profile(const char* name) {
    const std::string text = name ? name : "";
    if (text == "device") return SIEVE_PROFILE_DEVICE;
    uint32_t bits = 0;
    std::stringstream parts(text);
    std::string part;
    bool ok = !text.empty();
    while (ok && std::getline(parts, part, ',')) {
        const uint32_t bit = part == "gpu"           ? uint32_t{SIEVE_PROFILE_GPU}
                             : part == "constrained" ? uint32_t{SIEVE_PROFILE_CONSTRAINED}
                                                     : 0u;
        ok = bit != 0 && !(bits & bit);
        bits |= bit;
    }
    ok = ok && text.back() != ',';
    if (!ok)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "unknown profile '" + text +
                                               "': the profiles are device, gpu, constrained and gpu,constrained");
    return bits;
}

uint32_t resolve_profile(const char* option) {
    if (option) return parse_profile(option);
    const char* env = std::getenv("SIEVE_PROFILE");
    if (!env || !*env) return SIEVE_PROFILE_DEVICE;
    try {
        return parse_profile(env);
    } catch (const Failure& e) {
        fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string("SIEVE_PROFILE: ") + e.what());
    }
}

const char* profile_name(uint32_t profile) {
    switch (profile & kProfileAll) {
    case SIEVE_PROFILE_GPU: return "gpu";
    case SIEVE_PROFILE_CONSTRAINED: return "constrained";
    case SIEVE_PROFILE_GPU | SIEVE_PROFILE_CONSTRAINED: return "gpu,constrained";
    default: return "device";
    }
}

uint32_t resolve_compute_units(uint32_t device_units) {
    const char* env = std::getenv("SIEVE_COMPUTE_UNITS");
    if (!env || !*env) return device_units;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 1 || v > static_cast<long>(kMaxComputeUnits))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string("SIEVE_COMPUTE_UNITS=") + env +
                                               " is not a whole number in [1, " + std::to_string(kMaxComputeUnits) + "]");
    return static_cast<uint32_t>(v);
}

void shape_limits(const sieve_device_info& device, uint32_t enabled, const sieve_context_options& given,
                  uint32_t profile, EffectiveLimits* out) {
    sieve_context_options options = given;
    if (profile & SIEVE_PROFILE_CONSTRAINED) {
        // What a small phone GPU offers.
        options.disable_features |= SIEVE_FEATURE_ALL;
        options.max_shared_memory = options.max_shared_memory ? std::min(options.max_shared_memory, 16384u) : 16384u;
        options.max_workgroup_size = options.max_workgroup_size ? std::min(options.max_workgroup_size, 128u) : 128u;
    }
    // The device kind the plans are made for: the gpu profile makes a CPU
    // device record what a discrete GPU would.
    const bool as_gpu = (profile & SIEVE_PROFILE_GPU) && device.type == SIEVE_DEVICE_CPU;
    const sieve_device_type plan_type = as_gpu ? SIEVE_DEVICE_DISCRETE_GPU : device.type;
    EffectiveLimits& limits = *out;
    limits.plan_type = plan_type;
    limits.profile = profile;
    // Under the gpu profile a CPU device plans for the stand-in count of a
    // discrete GPU whose count no extension gives (vk_instance.cpp).
    limits.compute_units = resolve_compute_units(as_gpu ? kStandInGpuComputeUnits : std::max(device.compute_units, 1u));

    // A CPU implementation runs an invocation group as SIMD lanes and a barrier
    // as a switch between them: small workgroups cost far less there. An
    // explicit size (the constrained profile, tests of the GPU sizes) wins.
    uint32_t wg = options.max_workgroup_size ? options.max_workgroup_size
                                             : (plan_type == SIEVE_DEVICE_CPU ? 64u : 256u);
    wg = std::min(wg, device.max_workgroup_size);
    uint32_t shared = device.max_shared_memory;
    if (options.max_shared_memory) shared = std::min(shared, options.max_shared_memory);
    limits.shared_memory = shared;
    // Shared memory the shaders declare (shaders/): mass_histogram's bin
    // tree takes 64 bytes per invocation; finalize/gather take 8 bytes per
    // candidate (CAP), 18 per invocation (row-stats tree, tie flags) and about
    // 6.3 KB of fixed arrays (the draw's 32 x 16 bins); the collect tail (and
    // collect_fused.comp, which holds it) 8 per candidate, up to 40 per
    // invocation (the row-stats and aggregates' trees, the scan's partials)
    // and up to 1.2 KB (spirv-opt with the spec constants frozen: 25676
    // bytes at 256 and 2048, 50380 at 512 and 4096, 9228 at 128 and 512).
    // All must fit the budget.
    wg = std::min(wg, (shared - 512) / 64);
    limits.workgroup_size = std::max(32u, floor_pow2(wg));
    const uint32_t fixed = std::max(18 * limits.workgroup_size + 6400, 40 * limits.workgroup_size + 1200);
    limits.candidate_capacity = std::clamp(floor_pow2((shared - fixed) / 8), 64u, 4096u);
    limits.features = device.features & enabled & ~options.disable_features;
    // The CPU device's own shader paths are tuned for its full limits: any
    // capped limit (the constrained profile) turns them off as well.
    limits.cpu_paths = plan_type == SIEVE_DEVICE_CPU && !options.max_workgroup_size && !options.max_shared_memory;
}

} // namespace sieve
