// The host's wait for a submission's fence, as a sampling call makes it
// (sieve.h: sieve_context_options.wait_spin_us): the chains' Submitter and
// the calibration (calibration.cpp) wait the same way, so the floor `sieve
// bench` divides by is what a call pays.
#pragma once

#include "vulkan/vk_device.hpp"

#include <cstdint>

namespace sieve {

// Waits for `fence` (not reset). expected_ns: how long such waits usually
// take (0 = not yet known: sleeps at once), where the wait starts polling,
// updated with this one; null: sleeps at once, untimed. Returns the fence
// wait's result (VK_TIMEOUT after timeout_ns).
VkResult wait_for_fence(const Device& device, VkFence fence, uint64_t timeout_ns, double* expected_ns);

// The expectation after a wait that took `took_ns`: `expected_ns` before it
// (0 = none yet); `signaled_asleep_before_ns` > 0 where the fence signaled
// while the thread slept until then (E - W, before polling), else 0;
// `cpu_device`: the device runs on the host's CPU.
double next_wait_expectation(double expected_ns, double took_ns, double signaled_asleep_before_ns, bool cpu_device);

// How long a submission's host wait may take before the call reports
// SIEVE_ERROR_TIMEOUT: 120 s. A CPU device may compile a pipeline's shader
// when it is first dispatched, inside the submission (lavapipe: tens of
// seconds for the collect pass on a loaded 2-core machine, and past 120 s for
// the wide passes' variants at subgroup size 64 while another process
// compiled: docs/perf-log.md): 600 s there.
constexpr uint64_t kWaitTimeoutNs = 120ull * 1000 * 1000 * 1000;
constexpr uint64_t kCpuDeviceWaitTimeoutNs = 600ull * 1000 * 1000 * 1000;
inline uint64_t wait_timeout_ns(sieve_device_type type) {
    return type == SIEVE_DEVICE_CPU ? kCpuDeviceWaitTimeoutNs : kWaitTimeoutNs;
}

} // namespace sieve
