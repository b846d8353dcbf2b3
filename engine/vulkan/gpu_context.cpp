#include "vulkan/gpu_context.hpp"

#include "vulkan/vk_check.hpp"

#include <sieve/sieve_vulkan.h>

#include <cstdlib>
#include <cstring>

namespace sieve {

bool validation_requested(const sieve_context_options& options) {
    if (options.validation >= 0) return options.validation != 0;
    const char* env = std::getenv("SIEVE_VALIDATION");
    return env && std::strcmp(env, "0") != 0 && *env;
}

VulkanContext::VulkanContext(const sieve_context_options& options) {
    sink_.callback = options.message_callback;
    sink_.user_data = options.message_user_data;
    instance_ = std::make_unique<Instance::Subscription>(validation_requested(options), &sink_);
    auto devices = list_devices(instance_->instance().handle());
    const PhysicalDevice& chosen = choose_device(devices, options.device);
    device_ = std::make_unique<Device>(chosen, options);
    pipelines_ = std::make_unique<Pipelines>(*device_);
}

VulkanContext::VulkanContext(const sieve_vulkan_device& app, const sieve_context_options& options) {
    if (app.struct_size < sizeof(sieve_vulkan_device))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "sieve_vulkan_device.struct_size is too small");
    if (!app.instance || !app.physical_device || !app.device || !app.queue)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "sieve_vulkan_device needs instance, physical_device, device and queue");
    if (app.api_version < VK_API_VERSION_1_1)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the app's device must be created with apiVersion >= 1.1");
    sink_.callback = options.message_callback;
    sink_.user_data = options.message_user_data;
    load_vulkan(app.get_instance_proc_addr);
    volkLoadInstanceOnly(app.instance);
    uint32_t qn = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(app.physical_device, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> families(qn);
    vkGetPhysicalDeviceQueueFamilyProperties(app.physical_device, &qn, families.data());
    if (app.queue_family_index >= qn || !(families[app.queue_family_index].queueFlags & VK_QUEUE_COMPUTE_BIT))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "the app's queue family does not support compute");
    device_ = std::make_unique<Device>(app.instance, app.physical_device, app.device, app.queue,
                                       app.queue_family_index, app.enabled_features, options);
    pipelines_ = std::make_unique<Pipelines>(*device_);
}

VulkanContext::~VulkanContext() {
    pipelines_.reset();
    device_.reset();
    instance_.reset();
}

// The samplers the GPU engine runs. The twin may know more (it is the
// specification and lands first); a chain holding one the GPU does not run yet
// is refused here, never run partly.
bool gpu_implements(ref::SamplerKind kind) {
    switch (kind) {
    case ref::SamplerKind::Temperature:
    case ref::SamplerKind::Greedy:
    case ref::SamplerKind::Dist:
    case ref::SamplerKind::TopK:
    case ref::SamplerKind::TopP:
    case ref::SamplerKind::MinP:
    case ref::SamplerKind::TypicalP:
    case ref::SamplerKind::TopNSigma:
    case ref::SamplerKind::Xtc:
    // From the slot's history (history.comp), first in the chain.
    case ref::SamplerKind::Penalties:
    case ref::SamplerKind::Dry:
    // The learning final samplers (selectors.glsl).
    case ref::SamplerKind::Mirostat:
    case ref::SamplerKind::MirostatV2:
    case ref::SamplerKind::AdaptiveP: return true;
    default: return false;
    }
}

std::unique_ptr<ChainImpl> VulkanContext::create_chain(const ChainConfig& config) {
    for (auto kind : config.samplers)
        if (!gpu_implements(kind))
            fail(SIEVE_ERROR_UNSUPPORTED_SAMPLER, std::string("sampler '") + ref::sampler_name(kind) +
                                                      "' is not implemented on the GPU yet (the CPU backend runs it)");
    return make_gpu_chain(*this, config);
}

std::unique_ptr<ContextImpl> make_vulkan_context(const sieve_context_options& options) {
    return std::make_unique<VulkanContext>(options);
}

} // namespace sieve
