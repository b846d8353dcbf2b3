// The device's floor for sieve_context_calibrate (api.cpp) for `sieve bench` (docs/bench.md).
// An empty submit-and-wait, and one bare pass over rows x vocab logits
// (shaders/stages/calibrate.comp) with the engine's chunking. Everything it needs
// (buffers, layout, pipeline, command buffers) is its own and lives for the
// call only, so it touches no chain and no shared pipeline state.
#include "vulkan/calibration.hpp"
#include "api/error.hpp"
#include "vulkan/fence_wait.hpp"
#include "vulkan/gpu_plan.hpp"
#include "vulkan/standalone_kernel.hpp"
#include "vulkan/vk_check.hpp"

#include <sieve/sieve.h>
#include <sieve_shaders.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sieve {
namespace {

constexpr uint64_t kWaitNs = 30ull * 1000 * 1000 * 1000;
// Enough for the waits' expectations to settle (fence_wait.cpp: E falls by W
// a wait from a first wait asleep).
constexpr int32_t kWarmup = 8;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Vulkan objects of one calibration, released in reverse order whatever happens.
struct Objects {
    Device& device;
    Buffer logits, maxima;
    std::optional<StandaloneKernel> kernel;
    VkCommandPool command_pool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    explicit Objects(Device& d) : device(d) {}
    ~Objects() {
        const auto& vk = device.vk();
        VkDevice dev = device.handle();
        if (fence) vk.vkDestroyFence(dev, fence, nullptr);
        if (command_pool) vk.vkDestroyCommandPool(dev, command_pool, nullptr);
        kernel.reset();
        if (maxima.buffer) device.destroy_buffer(maxima);
        if (logits.buffer) device.destroy_buffer(logits);
    }
};

struct PassPush {
    uint32_t row_vec4, chunk_vec4, n_chunks;
};

// Submits `cmd` and waits as a sampling call waits for its submission
// (fence_wait.hpp: asleep until about the time such waits took, then polling:
// `expected_ns`, learned over the warm-up); returns the wall time in
// microseconds. Waiting asleep instead measured a floor no call pays (an
// NVIDIA H200: 50 us, where a greedy call took 35 us in all).
double submit_wait(Objects& o, VkCommandBuffer cmd, double* expected_ns) {
    const auto& vk = o.device.vk();
    vk_check(vk.vkResetFences(o.device.handle(), 1, &o.fence), "vkResetFences");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    const auto t0 = std::chrono::steady_clock::now();
    vk_check(o.device.submit(si, o.fence), "vkQueueSubmit (calibration)");
    const VkResult r = wait_for_fence(o.device, o.fence, kWaitNs, expected_ns);
    const auto t1 = std::chrono::steady_clock::now();
    if (r == VK_TIMEOUT) fail(SIEVE_ERROR_TIMEOUT, "calibration did not finish within the wait timeout");
    vk_check(r, "vkWaitForFences (calibration)");
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

} // namespace

sieve_calibration calibrate(Device& device, uint32_t vocab, uint32_t rows, uint32_t iterations) {
    const auto& vk = device.vk();
    VkDevice dev = device.handle();
    const EffectiveLimits& lim = device.limits();
    const uint32_t row_vec4 = (vocab + 3) / 4;  // rows padded to whole vec4s
    const uint64_t bytes = static_cast<uint64_t>(row_vec4) * 16u * rows;
    if (bytes > lim.max_storage_buffer_range)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "calibration: " + std::to_string(rows) + " x " + std::to_string(vocab) +
                                           " logits (" + std::to_string(bytes) +
                                           " bytes) exceed the device's maxStorageBufferRange of " +
                                           std::to_string(lim.max_storage_buffer_range));
    if (rows > lim.max_workgroup_count_y)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "calibration: " + std::to_string(rows) + " rows exceed maxComputeWorkGroupCount[1]");
    uint32_t n_chunks = 1, chunk_size = vocab;
    chunking(vocab, lim, lim.plan_type, &n_chunks, &chunk_size);  // the engine's split of a row
    const uint32_t chunk_vec4 = (chunk_size + 3) / 4;
    n_chunks = (row_vec4 + chunk_vec4 - 1) / chunk_vec4;

    Objects o(device);
    o.logits = device.create_buffer(bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    HostAccess::None, nullptr);
    o.maxima = device.create_buffer(static_cast<VkDeviceSize>(n_chunks) * rows * 4u, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                    HostAccess::Reads, nullptr);

    o.kernel.emplace(device, shaders::calibrate, std::vector<VkBuffer>{o.logits.buffer, o.maxima.buffer}, sizeof(PassPush),
                     lim.workgroup_size, lim.candidate_capacity);

    VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cp.queueFamilyIndex = device.family();
    vk_check(vk.vkCreateCommandPool(dev, &cp, nullptr, &o.command_pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = o.command_pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 3;
    VkCommandBuffer cmds[3] = {};
    vk_check(vk.vkAllocateCommandBuffers(dev, &cai, cmds), "vkAllocateCommandBuffers");
    VkCommandBuffer fill = cmds[0], empty = cmds[1], pass = cmds[2];
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vk_check(vk.vkCreateFence(dev, &fi, nullptr, &o.fence), "vkCreateFence");

    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    // The logits: 1.0f everywhere (their values do not change a max-reduction's cost).
    vk_check(vk.vkBeginCommandBuffer(fill, &bi), "vkBeginCommandBuffer");
    vk.vkCmdFillBuffer(fill, o.logits.buffer, 0, VK_WHOLE_SIZE, 0x3f800000u);
    VkMemoryBarrier filled{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    filled.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    filled.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
    vk.vkCmdPipelineBarrier(fill, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &filled,
                            0, nullptr, 0, nullptr);
    vk_check(vk.vkEndCommandBuffer(fill), "vkEndCommandBuffer");

    vk_check(vk.vkBeginCommandBuffer(empty, &bi), "vkBeginCommandBuffer");
    vk_check(vk.vkEndCommandBuffer(empty), "vkEndCommandBuffer");

    // Like a sampling call: the pass, then its results made visible to the host.
    const PassPush push{row_vec4, chunk_vec4, n_chunks};
    vk_check(vk.vkBeginCommandBuffer(pass, &bi), "vkBeginCommandBuffer");
    o.kernel->record(pass, &push, n_chunks, rows);
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(pass, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                            nullptr, 0, nullptr);
    vk_check(vk.vkEndCommandBuffer(pass), "vkEndCommandBuffer");

    submit_wait(o, fill, nullptr);
    std::vector<double> submit_us, pass_us;
    double empty_ns = 0, pass_ns = 0;  // each wait's expectation, as a recording's (GpuChain)
    for (int32_t i = 0; i < kWarmup; ++i) {
        submit_wait(o, empty, &empty_ns);
        submit_wait(o, pass, &pass_ns);
    }
    // Interleaved, so a change of clock or load during the call hits both alike.
    for (uint32_t i = 0; i < iterations; ++i) {
        submit_us.push_back(submit_wait(o, empty, &empty_ns));
        pass_us.push_back(submit_wait(o, pass, &pass_ns));
    }
    sieve_calibration c{};
    c.submit_us = median(submit_us);
    c.pass_total_us = median(pass_us);
    c.pass_us = std::max(0.0, c.pass_total_us - c.submit_us);
    c.iterations = iterations;
    c.workgroups = n_chunks * rows;
    return c;
}

} // namespace sieve
