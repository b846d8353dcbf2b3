// sieve_context_calibrate: the device's floor for `sieve bench` (docs/bench.md).
// An empty submit-and-wait, and one bare pass over rows x vocab logits
// (shaders/glsl/calibrate.comp) with the engine's chunking. Everything it needs
// (buffers, layout, pipeline, command buffers) is its own and lives for the
// call only, so it touches no chain and no shared pipeline state.
#include "error.hpp"
#include "gpu_context.hpp"
#include "gpu_plan.hpp"
#include "pipelines.hpp"
#include "vk_check.hpp"

#include <sieve/sieve.h>
#include <sieve_shaders.hpp>

#include <algorithm>
#include <chrono>
#include <new>
#include <string>
#include <vector>

namespace sieve {
namespace {

constexpr uint64_t kWaitNs = 30ull * 1000 * 1000 * 1000;
constexpr int32_t kWarmup = 3;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Vulkan objects of one calibration, released in reverse order whatever happens.
struct Objects {
    Device& device;
    Buffer logits, maxima;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkCommandPool command_pool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    explicit Objects(Device& d) : device(d) {}
    ~Objects() {
        const auto& vk = device.vk();
        VkDevice dev = device.handle();
        if (fence) vk.vkDestroyFence(dev, fence, nullptr);
        if (command_pool) vk.vkDestroyCommandPool(dev, command_pool, nullptr);
        if (pool) vk.vkDestroyDescriptorPool(dev, pool, nullptr);
        if (pipeline) vk.vkDestroyPipeline(dev, pipeline, nullptr);
        if (layout) vk.vkDestroyPipelineLayout(dev, layout, nullptr);
        if (set_layout) vk.vkDestroyDescriptorSetLayout(dev, set_layout, nullptr);
        if (maxima.buffer) device.destroy_buffer(maxima);
        if (logits.buffer) device.destroy_buffer(logits);
    }
};

struct PassPush {
    uint32_t row_vec4, chunk_vec4, n_chunks;
};

// Submits `cmd` and waits; returns the wall time in microseconds.
double submit_wait(Objects& o, VkCommandBuffer cmd) {
    const auto& vk = o.device.vk();
    vk_check(vk.vkResetFences(o.device.handle(), 1, &o.fence), "vkResetFences");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    const auto t0 = std::chrono::steady_clock::now();
    vk_check(o.device.submit(si, o.fence), "vkQueueSubmit (calibration)");
    const VkResult r = vk.vkWaitForFences(o.device.handle(), 1, &o.fence, VK_TRUE, kWaitNs);
    const auto t1 = std::chrono::steady_clock::now();
    if (r == VK_TIMEOUT) fail(SIEVE_ERROR_TIMEOUT, "calibration did not finish within the wait timeout");
    vk_check(r, "vkWaitForFences (calibration)");
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

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
    chunking(vocab, lim, device.info().type, &n_chunks, &chunk_size);  // the engine's split of a row
    const uint32_t chunk_vec4 = (chunk_size + 3) / 4;
    n_chunks = (row_vec4 + chunk_vec4 - 1) / chunk_vec4;

    Objects o(device);
    o.logits = device.create_buffer(bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    false, nullptr);
    o.maxima = device.create_buffer(static_cast<VkDeviceSize>(n_chunks) * rows * 4u, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                    true, nullptr);

    VkDescriptorSetLayoutBinding bindings[2] = {};
    for (uint32_t i = 0; i < 2; ++i) {
        bindings[i].binding = i;
        bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        bindings[i].descriptorCount = 1;
        bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    sl.bindingCount = 2;
    sl.pBindings = bindings;
    vk_check(vk.vkCreateDescriptorSetLayout(dev, &sl, nullptr, &o.set_layout), "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(PassPush)};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &o.set_layout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &range;
    vk_check(vk.vkCreatePipelineLayout(dev, &pl, nullptr, &o.layout), "vkCreatePipelineLayout");
    o.pipeline = create_compute_pipeline(device, o.layout, shaders::calibrate.words, shaders::calibrate.size_bytes,
                                         lim.workgroup_size, lim.candidate_capacity);

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dp.maxSets = 1;
    dp.poolSizeCount = 1;
    dp.pPoolSizes = &size;
    vk_check(vk.vkCreateDescriptorPool(dev, &dp, nullptr, &o.pool), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = o.pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &o.set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_check(vk.vkAllocateDescriptorSets(dev, &ai, &set), "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo infos[2] = {{o.logits.buffer, 0, VK_WHOLE_SIZE}, {o.maxima.buffer, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet writes[2] = {};
    for (uint32_t i = 0; i < 2; ++i) {
        writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[i].dstSet = set;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    vk.vkUpdateDescriptorSets(dev, 2, writes, 0, nullptr);

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
    vk.vkCmdBindPipeline(pass, VK_PIPELINE_BIND_POINT_COMPUTE, o.pipeline);
    vk.vkCmdBindDescriptorSets(pass, VK_PIPELINE_BIND_POINT_COMPUTE, o.layout, 0, 1, &set, 0, nullptr);
    vk.vkCmdPushConstants(pass, o.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    vk.vkCmdDispatch(pass, n_chunks, rows, 1);
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(pass, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                            nullptr, 0, nullptr);
    vk_check(vk.vkEndCommandBuffer(pass), "vkEndCommandBuffer");

    submit_wait(o, fill);
    std::vector<double> submit_us, pass_us;
    for (int32_t i = 0; i < kWarmup; ++i) {
        submit_wait(o, empty);
        submit_wait(o, pass);
    }
    // Interleaved, so a change of clock or load during the call hits both alike.
    for (uint32_t i = 0; i < iterations; ++i) {
        submit_us.push_back(submit_wait(o, empty));
        pass_us.push_back(submit_wait(o, pass));
    }
    sieve_calibration c{};
    c.submit_us = median(submit_us);
    c.pass_total_us = median(pass_us);
    c.pass_us = std::max(0.0, c.pass_total_us - c.submit_us);
    c.iterations = iterations;
    c.workgroups = n_chunks * rows;
    return c;
}

} // namespace
} // namespace sieve

// The C entry point lives here rather than in api.cpp so the calibration stays
// one file; it follows api.cpp's conventions (statuses, thread's last error).
SIEVE_API sieve_status sieve_context_calibrate(sieve_context* context, int32_t vocab, int32_t rows, int32_t iterations,
                                               sieve_calibration* out) {
    using namespace sieve;
    try {
        clear_last_error();
        if (!context) {
            set_last_error("context handle is NULL");
            return SIEVE_ERROR_NULL_HANDLE;
        }
        if (!out) fail(SIEVE_ERROR_INVALID_ARGUMENT, "out is NULL");
        if (vocab <= 0 || rows <= 0 || iterations <= 0)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "calibration needs vocab, rows and iterations >= 1 (got " +
                                                   std::to_string(vocab) + ", " + std::to_string(rows) + ", " +
                                                   std::to_string(iterations) + ")");
        auto* vc = dynamic_cast<VulkanContext*>(context->impl.get());
        if (!vc) fail(SIEVE_ERROR_INVALID_ARGUMENT, "the CPU backend has no device to calibrate");
        *out = calibrate(vc->device(), static_cast<uint32_t>(vocab), static_cast<uint32_t>(rows),
                         static_cast<uint32_t>(iterations));
        return SIEVE_OK;
    } catch (const Failure& e) {
        set_last_error(e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_last_error("out of host memory");
        return SIEVE_ERROR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_last_error(std::string("internal error: ") + e.what());
        return SIEVE_ERROR_INTERNAL;
    }
}
