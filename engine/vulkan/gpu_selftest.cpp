#include "vulkan/gpu_selftest.hpp"

#include "vulkan/gpu_context.hpp"
#include "vulkan/standalone_kernel.hpp"
#include "vulkan/vk_check.hpp"

#include <sieve_shaders.hpp>

#include <cstring>
#include <string>

namespace sieve {

namespace {

// Runs a self-test kernel (binding 0: `inputs`, binding 1: `out_words` words
// of results; push constant: the case count) once over `cases` invocations,
// or over `cases` workgroups of 64 (`per_workgroup`).
std::vector<uint32_t> run_self_test(sieve_context* context, const char* what, const shaders::Spirv& code,
                                    const std::vector<uint32_t>& inputs, uint32_t cases, size_t out_words,
                                    bool per_workgroup = false) {
    auto* vc = context ? dynamic_cast<VulkanContext*>(context->impl.get()) : nullptr;
    if (!vc) fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string(what) + " needs a Vulkan context");
    Device& device = vc->device();
    const auto& vk = device.vk();
    VkDevice dev = device.handle();
    if (cases == 0) return {};

    Buffer in = device.create_buffer(inputs.size() * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, HostAccess::Writes, nullptr);
    Buffer out = device.create_buffer(out_words * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, HostAccess::Reads, nullptr);
    std::memcpy(in.mapped, inputs.data(), inputs.size() * 4);

    const uint32_t wg = 64;
    const StandaloneKernel kernel(device, code, {in.buffer, out.buffer}, 4, wg, 0);

    VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cp.queueFamilyIndex = device.family();
    VkCommandPool command_pool = VK_NULL_HANDLE;
    vk_check(vk.vkCreateCommandPool(dev, &cp, nullptr, &command_pool), "vkCreateCommandPool");
    VkCommandBuffer cmd = device.allocate_command_buffer(command_pool);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk.vkBeginCommandBuffer(cmd, &bi);
    kernel.record(cmd, &cases, per_workgroup ? cases : (cases + wg - 1) / wg, 1);
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                            nullptr, 0, nullptr);
    vk.vkEndCommandBuffer(cmd);
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence = VK_NULL_HANDLE;
    vk_check(vk.vkCreateFence(dev, &fi, nullptr, &fence), "vkCreateFence");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    VkResult r = device.submit(si, fence);
    if (r == VK_SUCCESS) r = vk.vkWaitForFences(dev, 1, &fence, VK_TRUE, 10ull * 1000 * 1000 * 1000);

    std::vector<uint32_t> result(out_words);
    if (r == VK_SUCCESS) std::memcpy(result.data(), out.mapped, out_words * 4);
    vk.vkDestroyFence(dev, fence, nullptr);
    vk.vkDestroyCommandPool(dev, command_pool, nullptr);
    device.destroy_buffer(in);
    device.destroy_buffer(out);
    vk_check(r, (std::string(what) + " submission").c_str());
    return result;
}

} // namespace

std::vector<std::array<uint32_t, 4>> philox_on_device(sieve_context* context, const std::vector<PhiloxCase>& cases) {
    const uint32_t n = static_cast<uint32_t>(cases.size());
    std::vector<uint32_t> inputs(static_cast<size_t>(n) * 6);
    for (uint32_t i = 0; i < n; ++i) {
        std::memcpy(inputs.data() + i * 6, cases[i].counter.data(), 16);
        std::memcpy(inputs.data() + i * 6 + 4, cases[i].key.data(), 8);
    }
    const std::vector<uint32_t> words =
        run_self_test(context, "philox_on_device", shaders::philox_kat, inputs, n, size_t{n} * 4);
    std::vector<std::array<uint32_t, 4>> result(words.size() / 4);
    if (!result.empty()) std::memcpy(result.data(), words.data(), words.size() * 4);
    return result;
}

std::vector<float> quotients_on_device(sieve_context* context, const std::vector<DivisionCase>& cases) {
    const uint32_t n = static_cast<uint32_t>(cases.size());
    std::vector<uint32_t> inputs(static_cast<size_t>(n) * 3);
    for (uint32_t i = 0; i < n; ++i) {
        std::memcpy(&inputs[i * 3], &cases[i].x, 4);
        std::memcpy(&inputs[i * 3 + 1], &cases[i].y, 4);
        std::memcpy(&inputs[i * 3 + 2], &cases[i].skew, 4);
    }
    const std::vector<uint32_t> words = run_self_test(context, "quotients_on_device", shaders::division_kat, inputs, n, n);
    std::vector<float> result(words.size());
    if (!result.empty()) std::memcpy(result.data(), words.data(), words.size() * 4);
    return result;
}

std::vector<RawRange> raw_ranges_on_device(sieve_context* context, const std::vector<RawRangeCase>& cases) {
    const uint32_t n = static_cast<uint32_t>(cases.size());
    std::vector<uint32_t> inputs(static_cast<size_t>(n) * 3);
    for (uint32_t i = 0; i < n; ++i) {
        std::memcpy(&inputs[i * 3], &cases[i].scale, 4);
        inputs[i * 3 + 1] = cases[i].lo;
        inputs[i * 3 + 2] = cases[i].hi;
    }
    const std::vector<uint32_t> words =
        run_self_test(context, "raw_ranges_on_device", shaders::raw_range_kat, inputs, n, size_t{n} * 3, true);
    std::vector<RawRange> result(words.size() / 3);
    for (size_t i = 0; i < result.size(); ++i) result[i] = {words[i * 3] != 0, words[i * 3 + 1], words[i * 3 + 2]};
    return result;
}

} // namespace sieve
