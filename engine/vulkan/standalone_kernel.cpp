#include "vulkan/standalone_kernel.hpp"

#include "vulkan/pipelines.hpp"
#include "vulkan/vk_check.hpp"

#include <sieve_shaders.hpp>

namespace sieve {

StandaloneKernel::StandaloneKernel(Device& device, const shaders::Spirv& code, const std::vector<VkBuffer>& buffers,
                                   uint32_t push_bytes, uint32_t workgroup_size, uint32_t capacity)
    : device_(device), push_bytes_(push_bytes) {
    const auto& vk = device.vk();
    VkDevice dev = device.handle();
    const uint32_t n = static_cast<uint32_t>(buffers.size());
    try {
        set_layout_ = create_storage_set_layout(device, n);
        layout_ = create_pipeline_layout(device, set_layout_, push_bytes);
        Specialization s;
        s.workgroup_size = workgroup_size;
        s.capacity = capacity;
        pipeline_ = create_compute_pipeline(device, layout_, code, s, PipelineUse{code.name});
        pool_ = create_storage_pool(device, 1, n);
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        ai.descriptorPool = pool_;
        ai.descriptorSetCount = 1;
        ai.pSetLayouts = &set_layout_;
        vk_check(vk.vkAllocateDescriptorSets(dev, &ai, &set_), "vkAllocateDescriptorSets");
        write_storage_set(device, set_, buffers.data(), n);
    } catch (...) {
        release();
        throw;
    }
}

StandaloneKernel::~StandaloneKernel() { release(); }

void StandaloneKernel::release() {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (pool_) vk.vkDestroyDescriptorPool(dev, pool_, nullptr);  // frees the set
    if (pipeline_) vk.vkDestroyPipeline(dev, pipeline_, nullptr);
    if (layout_) vk.vkDestroyPipelineLayout(dev, layout_, nullptr);
    if (set_layout_) vk.vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
    pool_ = VK_NULL_HANDLE;
    pipeline_ = VK_NULL_HANDLE;
    layout_ = VK_NULL_HANDLE;
    set_layout_ = VK_NULL_HANDLE;
}

void StandaloneKernel::record(VkCommandBuffer cmd, const void* push, uint32_t groups_x, uint32_t groups_y) const {
    const auto& vk = device_.vk();
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
    vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0, nullptr);
    if (push_bytes_) vk.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_, push);
    vk.vkCmdDispatch(cmd, groups_x, groups_y, 1);
}

} // namespace sieve
