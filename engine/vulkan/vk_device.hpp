// A logical device Sieve runs on (its own or the app's), its queue, the
// effective limits after its profile, buffers and compute pipelines.
#pragma once

#include <volk.h>

#include "vulkan/vk_instance.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sieve {

// sieve_context_options.wait_spin_us: the default polling window and the largest accepted.
// A CPU device polls not at all by default: there the polling thread shares
// the host's cores with the device's own (lavapipe, 2 cores, 151936: one-row
// calls of greedy, the default chain and min_p 8-17% faster without it,
// alternating runs; docs/perf-log.md, "Waiting for the fence").
constexpr int32_t kDefaultWaitSpinUs = 20;
constexpr int32_t kCpuDeviceDefaultWaitSpinUs = 0;
constexpr int32_t kMaxWaitSpinUs = 1000000;
inline int32_t default_wait_spin_us(sieve_device_type type) {
    return type == SIEVE_DEVICE_CPU ? kCpuDeviceDefaultWaitSpinUs : kDefaultWaitSpinUs;
}
// sieve_context_options.max_storage_buffer_range: the least cap a context takes.
constexpr uint64_t kMinStorageBufferRangeCap = 4u << 20;

// The option's value: itself when >= 0, else env SIEVE_WAIT_SPIN_US (a
// malformed value fails: SIEVE_ERROR_INVALID_ARGUMENT), else -1: the
// device's default (default_wait_spin_us), which the Device resolves.
int32_t resolve_wait_spin(int32_t option);

// Tests only: contexts created while this is set take a discrete GPU's memory
// path on a device with unified memory, the logits uploaded through a staging
// buffer and the rows the twin finishes read back by a copy (lavapipe would
// never record either). Returns the previous setting.
bool stage_memory_for_tests(bool on);

// Tests only: contexts created while this is set correct every quotient
// (shaders: EXACT_DIVISION) on a CPU device too, whose vector division is
// IEEE's, so lavapipe runs the passes that only a GPU's inexact division
// takes (raw_range.glsl's members by raw keys). Returns the previous setting.
bool exact_division_for_tests(bool on);

// Limits and features after the profile and the context's caps are applied
// (device_profile.hpp: shape_limits): what every pipeline and plan is built for.
// sieve_device_info.compute_units of a discrete or virtual GPU whose count no
// extension gives (sieve.h states it).
constexpr uint32_t kStandInGpuComputeUnits = 32;

struct EffectiveLimits {
    uint32_t workgroup_size = 0;      // power of two
    uint32_t shared_memory = 0;       // bytes a pipeline may use
    uint32_t candidate_capacity = 0;  // CAP: power of two, CAP * 8 bytes of shared memory
    uint32_t features = 0;            // sieve_feature_bits usable
    // The shader paths written for a CPU device (common.glsl: INDEXED_BINS,
    // wide.glsl: WIDE_BINS): a CPU device's own, unless the context asks for
    // a workgroup size or shared memory budget (the constrained profile
    // emulates a GPU, so the suite runs the GPU paths there too).
    bool cpu_paths = false;
    // The device kind the plans are shaped for (chunks per row, row groups,
    // the tail's width): the device's own, a discrete GPU under the gpu
    // profile (sieve_profile_bits).
    sieve_device_type plan_type = SIEVE_DEVICE_OTHER;
    // The compute units (SMs, CUs) the plans spread a small batch over
    // (sieve_device_info.compute_units; a stated GPU's under the gpu profile
    // on a CPU device).
    uint32_t compute_units = 1;
    uint32_t profile = 0;  // sieve_profile_bits in force
    uint64_t max_storage_buffer_range = 0;
    uint64_t min_storage_offset_alignment = 1;  // minStorageBufferOffsetAlignment
    uint64_t max_texel_buffer_elements = 0;     // maxTexelBufferElements
    uint64_t min_texel_offset_alignment = 1;    // minTexelBufferOffsetAlignment
    uint64_t max_allocation_size = UINT64_MAX;  // maxMemoryAllocationSize (Vulkan 1.1)
    uint32_t max_workgroup_count_y = 0;
    bool timestamps = false;
    float timestamp_period_ns = 1.0f;
    // Whether the plans draw min-p's survivors past the buffer by the key
    // levels (a GPU's; a CPU device's leave them to the CPU twin):
    // gpu_chain.cpp's RecordingKey::floor_levels, scan.glsl's FLOOR_LEVELS.
    bool floor_levels_plan() const { return plan_type != SIEVE_DEVICE_CPU; }
};

// How the host touches a buffer, which decides its memory type
// (choose_memory_type). On a discrete GPU, host-visible device-local memory
// (the PCIe BAR, all of VRAM with resizable BAR) is written by the host
// through write-combining at full speed but read uncached: every host load is
// a PCIe round trip of about a microsecond. On an H200, reading 8 result
// words per row that way cost about 7 us a row, most of a 64-row call. So a
// buffer the host reads lives in host-cached system memory, which the GPU
// writes over PCIe as posted writes; one the host writes and the GPU reads
// often stays in device-local memory. On a UMA device (lavapipe, phones,
// integrated GPUs) one memory type often has every property and both get it.
enum class HostAccess {
    None,    // device-local, not mapped
    Writes,  // mapped; the host writes, the GPU reads: device-local preferred
    Reads,   // mapped; the host reads (what the GPU wrote): host-cached preferred, device-local avoided
};

// The memory type for a buffer whose memoryTypeBits are `bits`, or UINT32_MAX
// when none fits: None needs DEVICE_LOCAL, the others HOST_VISIBLE |
// HOST_COHERENT; among those, Writes takes the first DEVICE_LOCAL one and
// Reads the first HOST_CACHED one, else one that is not DEVICE_LOCAL (system
// memory, uncached), else any.
uint32_t choose_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t bits, HostAccess access);

struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;   // persistently mapped when host-visible
    VkDeviceSize size = 0;
};

class Device {
public:
    // Sieve's own device on `physical`.
    Device(const PhysicalDevice& physical, const sieve_context_options& options);
    // The app's device; nothing is destroyed on exit.
    Device(VkInstance instance, VkPhysicalDevice physical, VkDevice device, VkQueue queue, uint32_t family,
           uint32_t enabled_features, const sieve_context_options& options);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const VolkDeviceTable& vk() const { return table_; }
    VkDevice handle() const { return device_; }
    VkPhysicalDevice physical() const { return physical_; }
    uint32_t family() const { return family_; }
    const sieve_device_info& info() const { return info_; }
    const EffectiveLimits& limits() const { return limits_; }
    // The window a sampling call polls its fence in, around its expected finish (wait_spin_us, resolved).
    uint32_t wait_spin_us() const { return wait_spin_us_; }

    // Queue submission is serialized: chains on one context may run on several threads.
    VkResult submit(const VkSubmitInfo& submit, VkFence fence);
    // One primary command buffer from `pool` (throws on failure).
    VkCommandBuffer allocate_command_buffer(VkCommandPool pool) const;

    // Mapped persistently and coherent unless `access` is None (HostAccess
    // says where it lives). Counts into *allocations.
    Buffer create_buffer(VkDeviceSize size, VkBufferUsageFlags usage, HostAccess access,
                         std::atomic<uint64_t>* allocations);
    void destroy_buffer(Buffer& buffer);
    // Whether device-local memory is also host-visible (UMA, lavapipe, phones):
    // then logits are written straight into the buffer the shaders read.
    bool unified_memory() const { return unified_memory_; }
    // The shaders correct each quotient (EXACT_DIVISION): every device but
    // a CPU implementation, whose vector division is IEEE's.
    bool exact_division() const { return exact_division_; }
    // Whether the device's timestamps can be put on the host's CLOCK_MONOTONIC
    // (VK_EXT_calibrated_timestamps, enabled on a device Sieve creates; an
    // app's device says nothing of its extensions): Submitter's call timing.
    bool calibrated_timestamps() const { return calibrated_timestamps_; }
    // The file SIEVE_PIPELINE_STATS named when the device was made (empty:
    // none; pipeline_stats.hpp), each pipeline's line goes there; whether its
    // pipelines capture the driver's statistics
    // (VK_KHR_pipeline_executable_properties, enabled on a device Sieve
    // creates), else why not; and the warps an SM holds
    // (VK_NV_shader_sm_builtins; 0 where unknown).
    const std::string& pipeline_stats_file() const { return statistics_file_; }
    bool captures_pipeline_statistics() const { return captures_statistics_; }
    const std::string& pipeline_statistics_absent() const { return statistics_absent_; }
    uint32_t warps_per_unit() const { return warps_per_unit_; }

private:
    void init(const sieve_context_options& options, uint32_t enabled_features);

    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t family_ = 0;
    bool owned_ = false;
    VolkDeviceTable table_{};
    sieve_device_info info_{};
    EffectiveLimits limits_{};
    VkPhysicalDeviceMemoryProperties memory_{};
    bool unified_memory_ = false;
    bool exact_division_ = true;
    bool calibrated_timestamps_ = false;
    std::string statistics_file_;
    bool captures_statistics_ = false;
    std::string statistics_absent_;
    uint32_t warps_per_unit_ = 0;
    uint32_t wait_spin_us_ = 0;
    std::mutex queue_mutex_;
};

} // namespace sieve
