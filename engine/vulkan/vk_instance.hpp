// The Vulkan loader (volk), Sieve's own instance with optional validation, and
// the device list with Sieve's automatic choice.
#pragma once

#include <volk.h>

#include <sieve/sieve.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sieve {

// Loads the system Vulkan loader once per process (or the app's
// vkGetInstanceProcAddr). Throws SIEVE_ERROR_NO_DEVICE when there is none.
void load_vulkan(PFN_vkGetInstanceProcAddr app_loader = nullptr);

// Counts and forwards validation messages.
struct MessageSink {
    sieve_message_callback callback = nullptr;
    void* user_data = nullptr;
    std::atomic<uint64_t> count{0};
};

class Instance {
public:
    // validation: enable VK_LAYER_KHRONOS_validation (+ synchronization
    // validation) and a messenger that forwards to `sink`.
    Instance(bool validation, MessageSink* sink);
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    bool validation() const { return messenger_ != VK_NULL_HANDLE; }

private:
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    // volk's function pointers are process-wide and reloaded for every instance
    // (an enumeration's instance has no debug-utils functions): what this
    // instance needs to tear itself down is taken from it and kept here.
    PFN_vkDestroyInstance destroy_instance_ = nullptr;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
};

struct PhysicalDevice {
    VkPhysicalDevice handle = VK_NULL_HANDLE;
    sieve_device_info info{};
    uint32_t compute_family = UINT32_MAX;
};

// Devices with a compute queue and Vulkan >= 1.1, in enumeration order, with
// info.is_default marking the automatic choice.
std::vector<PhysicalDevice> list_devices(VkInstance instance);

// The device for `choice` (NULL/"" = env SIEVE_DEVICE, else automatic).
const PhysicalDevice& choose_device(const std::vector<PhysicalDevice>& devices, const char* choice);

sieve_device_info describe_device(VkPhysicalDevice device, uint32_t index);

} // namespace sieve
