#include "vulkan/token_copy.hpp"

#include "vulkan/vk_check.hpp"

#include <vector>

namespace sieve {

void emit_token_copy(const Device& device, VkCommandBuffer cmd, VkBuffer results, uint32_t result_stride,
                     const TokenTarget& target) {
    const auto& vk = device.vk();
    // The sampling passes wrote the results in compute shaders.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier,
                            0, nullptr, 0, nullptr);
    std::vector<VkBufferCopy> regions(target.rows);
    for (uint32_t r = 0; r < target.rows; ++r)
        regions[r] = {static_cast<VkDeviceSize>(r) * result_stride, target.offset + static_cast<VkDeviceSize>(r) * 4, 4};
    vk.vkCmdCopyBuffer(cmd, results, target.buffer, target.rows, regions.data());
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                            nullptr, 0, nullptr);
}

VkCommandBuffer TokenCopy::prepare(const TokenTarget& target, bool* recorded) {
    *recorded = false;
    if (cmd_ && target == current_) return cmd_;
    release_target();
    const auto& vk = device_.vk();
    cmd_ = device_.allocate_command_buffer(pool_);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    try {
        vk_check(vk.vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
        emit_token_copy(device_, cmd_, results_, stride_, target);
        vk_check(vk.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
    } catch (...) {
        release_target();
        throw;
    }
    current_ = target;
    *recorded = true;
    return cmd_;
}

void TokenCopy::release_target() {
    if (cmd_) device_.vk().vkFreeCommandBuffers(device_.handle(), pool_, 1, &cmd_);
    cmd_ = VK_NULL_HANDLE;
    current_ = TokenTarget{};
}

} // namespace sieve
