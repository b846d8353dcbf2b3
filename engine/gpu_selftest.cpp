#include "gpu_selftest.hpp"

#include "gpu_context.hpp"
#include "vk_check.hpp"

#include <sieve_shaders.hpp>

#include <cstring>

namespace sieve {

std::vector<std::array<uint32_t, 4>> philox_on_device(sieve_context* context, const std::vector<PhiloxCase>& cases) {
    auto* vc = context ? dynamic_cast<VulkanContext*>(context->impl.get()) : nullptr;
    if (!vc) fail(SIEVE_ERROR_INVALID_ARGUMENT, "philox_on_device needs a Vulkan context");
    Device& device = vc->device();
    const auto& vk = device.vk();
    VkDevice dev = device.handle();
    const uint32_t n = static_cast<uint32_t>(cases.size());
    if (n == 0) return {};

    Buffer in = device.create_buffer(n * 6 * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, nullptr);
    Buffer out = device.create_buffer(n * 4 * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, nullptr);
    auto* words = static_cast<uint32_t*>(in.mapped);
    for (uint32_t i = 0; i < n; ++i) {
        std::memcpy(words + i * 6, cases[i].counter.data(), 16);
        std::memcpy(words + i * 6 + 4, cases[i].key.data(), 8);
    }

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
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    vk_check(vk.vkCreateDescriptorSetLayout(dev, &sl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 4};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &range;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    vk_check(vk.vkCreatePipelineLayout(dev, &pl, nullptr, &layout), "vkCreatePipelineLayout");
    const uint32_t wg = 64;
    VkPipeline pipeline = create_compute_pipeline(device, layout, shaders::philox_kat.words,
                                                  shaders::philox_kat.size_bytes, wg, 0);

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dp.maxSets = 1;
    dp.poolSizeCount = 1;
    dp.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    vk_check(vk.vkCreateDescriptorPool(dev, &dp, nullptr, &pool), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_check(vk.vkAllocateDescriptorSets(dev, &ai, &set), "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo infos[2] = {{in.buffer, 0, VK_WHOLE_SIZE}, {out.buffer, 0, VK_WHOLE_SIZE}};
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
    VkCommandPool command_pool = VK_NULL_HANDLE;
    vk_check(vk.vkCreateCommandPool(dev, &cp, nullptr, &command_pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = command_pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk_check(vk.vkAllocateCommandBuffers(dev, &cai, &cmd), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk.vkBeginCommandBuffer(cmd, &bi);
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
    vk.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &n);
    vk.vkCmdDispatch(cmd, (n + wg - 1) / wg, 1, 1);
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

    std::vector<std::array<uint32_t, 4>> result(n);
    if (r == VK_SUCCESS) std::memcpy(result.data(), out.mapped, n * 16);
    vk.vkDestroyFence(dev, fence, nullptr);
    vk.vkDestroyCommandPool(dev, command_pool, nullptr);
    vk.vkDestroyDescriptorPool(dev, pool, nullptr);
    vk.vkDestroyPipeline(dev, pipeline, nullptr);
    vk.vkDestroyPipelineLayout(dev, layout, nullptr);
    vk.vkDestroyDescriptorSetLayout(dev, set_layout, nullptr);
    device.destroy_buffer(in);
    device.destroy_buffer(out);
    vk_check(r, "philox self-test submission");
    return result;
}

} // namespace sieve
