// The Vulkan loader (volk), Sieve's own instance with optional validation, and
// the device list with Sieve's automatic choice.
#pragma once

#include <volk.h>

#include <sieve/sieve.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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

// Sieve's own VkInstance. There is one per process for each validation
// setting, made on first use and never destroyed (process_instance): every
// context Sieve creates itself shares it.
//
// Why: a VkInstance's creation loads the ICD (and the validation layer) and its
// destruction unloads them. NVIDIA's driver links libnvidia-tls.so, whose TLS
// uses the initial-exec model, so every load takes static TLS that glibc does
// not give back on dlclose; after a few dozen create/destroy cycles in one
// process dlopen fails ("cannot allocate memory in static TLS block") and
// vkCreateInstance returns VK_ERROR_INCOMPATIBLE_DRIVER. Keeping the instance
// keeps the driver loaded once, so contexts can come and go any number of
// times on every driver. It also makes a context's creation cheaper.
//
// Validation messages: one messenger per instance forwards each message to
// every subscribed sink (the live contexts with validation on); with no
// subscriber it prints to stderr. A message names no context, so with several
// contexts alive each counts it.
class Instance {
public:
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    bool validation() const { return validation_; }

    // A context's hold on the process's instance: forwards the instance's
    // validation messages to `sink` while it lives. The sink is subscribed
    // before the instance is created, so it also sees what creation reports.
    class Subscription {
    public:
        Subscription(bool validation, MessageSink* sink);
        ~Subscription();
        Subscription(const Subscription&) = delete;
        Subscription& operator=(const Subscription&) = delete;
        Instance& instance() const { return instance_; }

    private:
        Instance& instance_;
        MessageSink* sink_;
    };

    // Called by the messenger: hands `text` to every subscribed sink.
    void deliver(const char* text);

private:
    friend Instance& process_instance(bool validation);
    friend Instance& enumeration_instance();
    explicit Instance(bool validation) : validation_(validation) {}
    static Instance& slot(bool validation);  // the object, made or not
    void create();                           // under the process's instance mutex

    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    const bool validation_;
    std::mutex sinks_mutex_;
    std::vector<MessageSink*> sinks_;
};

// The process's instance with or without validation (VK_LAYER_KHRONOS_validation
// + synchronization validation), created on the first call; later calls return
// the same one. Throws as vkCreateInstance fails (no loader, no driver, no
// validation layer); a failed creation is tried again by the next call.
Instance& process_instance(bool validation);

// For listing devices: whichever process instance exists (validation or not),
// else the one without validation (listing needs no layer).
Instance& enumeration_instance();

// How many VkInstances Sieve has created in this process (at most 2: with and
// without validation). For the tests that check contexts share one.
uint64_t instances_created();

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
