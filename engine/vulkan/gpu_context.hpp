// The Vulkan backend's context: instance (when Sieve made it), device, pipelines
// and the validation message sink.
#pragma once

#include "chain/context.hpp"
#include "vulkan/pipelines.hpp"
#include "vulkan/vk_device.hpp"

#include <memory>

struct sieve_vulkan_device;

namespace sieve {

class VulkanContext final : public ContextImpl {
public:
    explicit VulkanContext(const sieve_context_options& options);
    VulkanContext(const sieve_vulkan_device& app, const sieve_context_options& options);
    ~VulkanContext() override;

    sieve_backend backend() const override { return SIEVE_BACKEND_VULKAN; }
    sieve_device_info device_info() const override { return device_->info(); }
    uint64_t validation_messages() const override { return sink_.count.load(); }
    std::unique_ptr<ChainImpl> create_chain(const ChainConfig& config) override;

    Device& device() { return *device_; }
    Pipelines& pipelines() { return *pipelines_; }

private:
    MessageSink sink_;
    // Sieve's own device: the hold on the process's instance (vk_instance.hpp:
    // shared by every such context, never destroyed). Null for the app's device.
    std::unique_ptr<Instance::Subscription> instance_;
    std::unique_ptr<Device> device_;
    std::unique_ptr<Pipelines> pipelines_;
};

std::unique_ptr<ChainImpl> make_gpu_chain(VulkanContext& context, const ChainConfig& config);

// Whether validation is on for these options (option, else env SIEVE_VALIDATION).
bool validation_requested(const sieve_context_options& options);

} // namespace sieve
