// A compute pipeline of its own over a few storage buffers (bindings 0..n-1)
// and a push-constant block, with its own layouts and descriptor set: for the
// device self-test and the calibration, which stay out of the engine's shared
// layout and pipelines. Everything is released with the object, whatever
// throws.
#pragma once

#include "vulkan/vk_device.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sieve {

namespace shaders {
struct Spirv;  // sieve_shaders.hpp (generated)
}

class StandaloneKernel {
public:
    StandaloneKernel(Device& device, const shaders::Spirv& code, const std::vector<VkBuffer>& buffers,
                     uint32_t push_bytes, uint32_t workgroup_size, uint32_t capacity);
    ~StandaloneKernel();
    StandaloneKernel(const StandaloneKernel&) = delete;
    StandaloneKernel& operator=(const StandaloneKernel&) = delete;

    // Binds the pipeline and its set, pushes `push` (push_bytes), dispatches.
    void record(VkCommandBuffer cmd, const void* push, uint32_t groups_x, uint32_t groups_y) const;

private:
    void release();
    Device& device_;
    uint32_t push_bytes_;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipeline pipeline_ = VK_NULL_HANDLE;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    VkDescriptorSet set_ = VK_NULL_HANDLE;
};

} // namespace sieve
