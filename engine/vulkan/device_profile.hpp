// Profiles (sieve.h: sieve_profile_bits): what plans and limits a context
// records for, from the device's description alone, so a test can derive the
// plan of a device it does not have (a discrete GPU with lavapipe's limits)
// and compare it with what a profile records.
#pragma once

#include <sieve/sieve.h>

#include <cstdint>

namespace sieve {

struct EffectiveLimits;

// "device", "gpu", "constrained", "gpu,constrained" (either order) -> bits;
// anything else fails with SIEVE_ERROR_INVALID_ARGUMENT naming the valid ones.
uint32_t parse_profile(const char* name);
// The option's profile, else env SIEVE_PROFILE, else none.
uint32_t resolve_profile(const char* option);
// "device", "gpu", "constrained" or "gpu,constrained".
const char* profile_name(uint32_t profile);

// The compute units a context's plans spread a small batch over: env
// SIEVE_COMPUTE_UNITS (a whole number in [1, kMaxComputeUnits]; 1 keeps every
// row at the plan's chunks; a malformed value fails with
// SIEVE_ERROR_INVALID_ARGUMENT), else the device's.
constexpr uint32_t kMaxComputeUnits = 65536;
uint32_t resolve_compute_units(uint32_t device_units);

// The limits a context on `device` plans for: the workgroup size, shared
// memory budget, candidate capacity, usable features, the CPU device's own
// shader paths and the device type its plans are shaped for. `enabled` is the
// features the logical device has on; `options` caps (disable_features,
// max_shared_memory, max_workgroup_size) apply after the profile's.
void shape_limits(const sieve_device_info& device, uint32_t enabled, const sieve_context_options& options,
                  uint32_t profile, EffectiveLimits* limits);

} // namespace sieve
