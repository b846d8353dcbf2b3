#include "bench_device_input.hpp"

#include "exit_codes.hpp"

#include <vulkan/vulkan.h>

#include <sieve/sieve_vulkan.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sieve_cli {

// The Vulkan functions the bench calls, loaded from the system loader.
struct BenchVulkan::Api {
    void* loader = nullptr;
    PFN_vkGetInstanceProcAddr gipa = nullptr;
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = 0;
    uint32_t api_version = VK_API_VERSION_1_1;
    uint32_t features = 0;
    VkPhysicalDeviceMemoryProperties memory{};
    VkDeviceSize max_allocation = 0;  // maxMemoryAllocationSize (0: not told)
#define SIEVE_VK_FN(name) PFN_##name name = nullptr;
    SIEVE_VK_FN(vkDestroyInstance)
    SIEVE_VK_FN(vkEnumeratePhysicalDevices)
    SIEVE_VK_FN(vkGetPhysicalDeviceProperties)
    SIEVE_VK_FN(vkGetPhysicalDeviceProperties2)
    SIEVE_VK_FN(vkGetPhysicalDeviceFeatures2)
    SIEVE_VK_FN(vkGetPhysicalDeviceQueueFamilyProperties)
    SIEVE_VK_FN(vkGetPhysicalDeviceMemoryProperties)
    SIEVE_VK_FN(vkCreateDevice)
    SIEVE_VK_FN(vkGetDeviceProcAddr)
    SIEVE_VK_FN(vkCreateDebugUtilsMessengerEXT)
    SIEVE_VK_FN(vkDestroyDebugUtilsMessengerEXT)
    SIEVE_VK_FN(vkDestroyDevice)
    SIEVE_VK_FN(vkDeviceWaitIdle)
    SIEVE_VK_FN(vkGetDeviceQueue)
    SIEVE_VK_FN(vkCreateBuffer)
    SIEVE_VK_FN(vkDestroyBuffer)
    SIEVE_VK_FN(vkGetBufferMemoryRequirements)
    SIEVE_VK_FN(vkAllocateMemory)
    SIEVE_VK_FN(vkFreeMemory)
    SIEVE_VK_FN(vkBindBufferMemory)
    SIEVE_VK_FN(vkMapMemory)
    SIEVE_VK_FN(vkCreateCommandPool)
    SIEVE_VK_FN(vkDestroyCommandPool)
    SIEVE_VK_FN(vkAllocateCommandBuffers)
    SIEVE_VK_FN(vkBeginCommandBuffer)
    SIEVE_VK_FN(vkEndCommandBuffer)
    SIEVE_VK_FN(vkCmdCopyBuffer)
    SIEVE_VK_FN(vkQueueSubmit)
    SIEVE_VK_FN(vkQueueWaitIdle)
#undef SIEVE_VK_FN
};

namespace {

[[noreturn]] void vk_fail(const std::string& what) {
    throw CliError(kExitDevice, "--input device: " + what);
}

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) vk_fail(std::string(what) + " failed (VkResult " + std::to_string(r) + ")");
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* data,
                                          void*) {
    // The library's own prefix: tests fail on any such line.
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
        std::fprintf(stderr, "sieve: validation: %s\n", data && data->pMessage ? data->pMessage : "");
    return VK_FALSE;
}

uint32_t memory_type(const VkPhysicalDeviceMemoryProperties& props, uint32_t bits, VkMemoryPropertyFlags want) {
    for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
        if ((bits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) return i;
    return UINT32_MAX;
}

} // namespace

bool validation_wanted() {
    const char* env = std::getenv("SIEVE_VALIDATION");
    return env && std::strcmp(env, "0") != 0 && *env;
}

struct DeviceLogits::Handles {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
};

DeviceLogits::~DeviceLogits() {
    if (!h_ || !vk_) return;
    const BenchVulkan::Api& a = *vk_->api_;
    a.vkDeviceWaitIdle(a.device);
    if (h_->buffer) a.vkDestroyBuffer(a.device, h_->buffer, nullptr);
    if (h_->memory) a.vkFreeMemory(a.device, h_->memory, nullptr);
}

std::vector<sieve_token> DeviceLogits::sample(sieve::Chain& chain, int32_t first, int32_t rows) const {
    sieve_vulkan_logits l;
    sieve_vulkan_logits_init(&l, h_->buffer, h_->size, SIEVE_DTYPE_F32, rows, vocab_);
    l.offset = static_cast<VkDeviceSize>(first) * static_cast<VkDeviceSize>(vocab_) * sizeof(float);
    std::vector<sieve_token> out(static_cast<size_t>(rows));
    const sieve_status s = sieve_sample_vulkan(chain.get(), &l, out.data());
    // Row-level failures are the rows' business (as Chain::sample leaves them).
    if (s != SIEVE_OK && !sieve::Chain::row_level(s)) sieve::check(s);
    return out;
}

std::vector<sieve_verified> DeviceLogits::verify(sieve::Chain& chain, const std::vector<sieve_draft>& drafts,
                                                 sieve_verify_mode mode) const {
    sieve_vulkan_logits l;
    sieve_vulkan_logits_init(&l, h_->buffer, h_->size, SIEVE_DTYPE_F32, rows_, vocab_);
    std::vector<sieve_token> tokens(static_cast<size_t>(rows_));
    std::vector<sieve_verified> out(drafts.size());
    const sieve_status s = sieve_verify_vulkan(chain.get(), &l, drafts.data(), static_cast<int32_t>(drafts.size()),
                                               mode, tokens.data(), out.data());
    // A sequence's failure is its own (its status), as Chain::verify leaves it.
    if (s != SIEVE_OK && !sieve::Chain::row_level(s)) sieve::check(s);
    return out;
}

void DeviceLogits::release_from(sieve::Chain& chain) const { sieve::check(sieve_chain_release_input(chain.get())); }

std::unique_ptr<BenchVulkan> BenchVulkan::open(const sieve_device_info& chosen) {
    std::unique_ptr<BenchVulkan> vk(new BenchVulkan());
    vk->api_ = std::make_unique<Api>();
    Api& a = *vk->api_;
    a.loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a.loader) vk_fail(std::string("cannot load the Vulkan loader libvulkan.so.1: ") + dlerror());
    a.gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(a.loader, "vkGetInstanceProcAddr"));
    if (!a.gipa) vk_fail("the Vulkan loader has no vkGetInstanceProcAddr");
    auto create_instance = reinterpret_cast<PFN_vkCreateInstance>(a.gipa(VK_NULL_HANDLE, "vkCreateInstance"));
    const bool validation = validation_wanted();
    a.api_version = chosen.api_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "sieve bench --input device";
    app.apiVersion = a.api_version;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    if (validation) {
        ici.enabledLayerCount = 1;
        ici.ppEnabledLayerNames = &layer;
        ici.enabledExtensionCount = 1;
        ici.ppEnabledExtensionNames = &ext;
    }
    check(create_instance(&ici, nullptr, &a.instance), "vkCreateInstance");
#define SIEVE_VK_LOAD(name) a.name = reinterpret_cast<PFN_##name>(a.gipa(a.instance, #name));
    SIEVE_VK_LOAD(vkDestroyInstance)
    SIEVE_VK_LOAD(vkEnumeratePhysicalDevices)
    SIEVE_VK_LOAD(vkGetPhysicalDeviceProperties)
    SIEVE_VK_LOAD(vkGetPhysicalDeviceProperties2)
    SIEVE_VK_LOAD(vkGetPhysicalDeviceFeatures2)
    SIEVE_VK_LOAD(vkGetPhysicalDeviceQueueFamilyProperties)
    SIEVE_VK_LOAD(vkGetPhysicalDeviceMemoryProperties)
    SIEVE_VK_LOAD(vkCreateDevice)
    SIEVE_VK_LOAD(vkGetDeviceProcAddr)
    SIEVE_VK_LOAD(vkCreateDebugUtilsMessengerEXT)
    SIEVE_VK_LOAD(vkDestroyDebugUtilsMessengerEXT)
#undef SIEVE_VK_LOAD
    if (validation && a.vkCreateDebugUtilsMessengerEXT) {
        VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
        mci.pfnUserCallback = on_message;
        check(a.vkCreateDebugUtilsMessengerEXT(a.instance, &mci, nullptr, &a.messenger), "vkCreateDebugUtilsMessengerEXT");
    }

    // The physical device the run's own context chose.
    uint32_t n = 0;
    check(a.vkEnumeratePhysicalDevices(a.instance, &n, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> devices(n);
    check(a.vkEnumeratePhysicalDevices(a.instance, &n, devices.data()), "vkEnumeratePhysicalDevices");
    for (VkPhysicalDevice pd : devices) {
        VkPhysicalDeviceProperties p;
        a.vkGetPhysicalDeviceProperties(pd, &p);
        if (p.vendorID == chosen.vendor_id && p.deviceID == chosen.device_id && std::strcmp(p.deviceName, chosen.name) == 0) {
            a.physical = pd;
            break;
        }
    }
    if (!a.physical) vk_fail(std::string("the loader lists no device '") + chosen.name + "'");
    a.vkGetPhysicalDeviceMemoryProperties(a.physical, &a.memory);

    uint32_t qn = 0;
    a.vkGetPhysicalDeviceQueueFamilyProperties(a.physical, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> qf(qn);
    a.vkGetPhysicalDeviceQueueFamilyProperties(a.physical, &qn, qf.data());
    a.family = UINT32_MAX;
    for (uint32_t i = 0; i < qn && a.family == UINT32_MAX; ++i)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) a.family = i;
    if (a.family == UINT32_MAX) vk_fail(std::string("device '") + chosen.name + "' has no compute queue");

    // The optional features Sieve uses, enabled where the device has them,
    // so the plan is the one the library's own device would run.
    VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    subgroup.pNext = &maintenance3;
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props2.pNext = &subgroup;
    a.vkGetPhysicalDeviceProperties2(a.physical, &props2);
    a.max_allocation = maintenance3.maxMemoryAllocationSize;
    if ((subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT))
        a.features |= SIEVE_FEATURE_SUBGROUP_ARITHMETIC;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    if (a.api_version >= VK_API_VERSION_1_2) {
        f11.pNext = &f12;
        VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        f2.pNext = &f11;
        a.vkGetPhysicalDeviceFeatures2(a.physical, &f2);
        if (f11.storageBuffer16BitAccess) {
            e11.storageBuffer16BitAccess = VK_TRUE;
            a.features |= SIEVE_FEATURE_16BIT_STORAGE;
        }
        if (f12.timelineSemaphore) {
            e12.timelineSemaphore = VK_TRUE;
            a.features |= SIEVE_FEATURE_TIMELINE_SEMAPHORE;
        }
        if (f12.vulkanMemoryModel && f12.vulkanMemoryModelDeviceScope) {
            e12.vulkanMemoryModel = VK_TRUE;
            e12.vulkanMemoryModelDeviceScope = VK_TRUE;
            a.features |= SIEVE_FEATURE_VULKAN_MEMORY_MODEL;
        }
        e11.pNext = &e12;
        dci.pNext = &e11;
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = a.family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &q;
    check(a.vkCreateDevice(a.physical, &dci, nullptr, &a.device), "vkCreateDevice");
#define SIEVE_VK_LOAD(name) a.name = reinterpret_cast<PFN_##name>(a.vkGetDeviceProcAddr(a.device, #name));
    SIEVE_VK_LOAD(vkDestroyDevice)
    SIEVE_VK_LOAD(vkDeviceWaitIdle)
    SIEVE_VK_LOAD(vkGetDeviceQueue)
    SIEVE_VK_LOAD(vkCreateBuffer)
    SIEVE_VK_LOAD(vkDestroyBuffer)
    SIEVE_VK_LOAD(vkGetBufferMemoryRequirements)
    SIEVE_VK_LOAD(vkAllocateMemory)
    SIEVE_VK_LOAD(vkFreeMemory)
    SIEVE_VK_LOAD(vkBindBufferMemory)
    SIEVE_VK_LOAD(vkMapMemory)
    SIEVE_VK_LOAD(vkCreateCommandPool)
    SIEVE_VK_LOAD(vkDestroyCommandPool)
    SIEVE_VK_LOAD(vkAllocateCommandBuffers)
    SIEVE_VK_LOAD(vkBeginCommandBuffer)
    SIEVE_VK_LOAD(vkEndCommandBuffer)
    SIEVE_VK_LOAD(vkCmdCopyBuffer)
    SIEVE_VK_LOAD(vkQueueSubmit)
    SIEVE_VK_LOAD(vkQueueWaitIdle)
#undef SIEVE_VK_LOAD
    a.vkGetDeviceQueue(a.device, a.family, 0, &a.queue);
    return vk;
}

BenchVulkan::~BenchVulkan() {
    if (!api_) return;
    Api& a = *api_;
    if (a.device) {
        a.vkDeviceWaitIdle(a.device);
        a.vkDestroyDevice(a.device, nullptr);
    }
    if (a.messenger) a.vkDestroyDebugUtilsMessengerEXT(a.instance, a.messenger, nullptr);
    if (a.instance) a.vkDestroyInstance(a.instance, nullptr);
    if (a.loader) dlclose(a.loader);
}

std::unique_ptr<sieve::Context> BenchVulkan::make_context() const {
    const Api& a = *api_;
    sieve_vulkan_device d{};
    d.struct_size = sizeof d;
    d.get_instance_proc_addr = a.gipa;
    d.instance = a.instance;
    d.physical_device = a.physical;
    d.device = a.device;
    d.queue = a.queue;
    d.queue_family_index = a.family;
    d.api_version = a.api_version;
    d.enabled_features = a.features;
    sieve_context_options options;
    sieve_context_options_init(&options);
    sieve_context* ctx = nullptr;
    const sieve_status s = sieve_context_create_vulkan(&d, &options, &ctx);
    if (s != SIEVE_OK) throw CliError(exit_code_for(s), std::string("--input device: cannot make a context on the bench's device: ") + sieve_last_error(), s);
    return std::make_unique<sieve::Context>(ctx);
}

std::unique_ptr<DeviceLogits> BenchVulkan::upload(const float* data, int32_t rows, int32_t vocab, std::string* why) const {
    const Api& a = *api_;
    const VkDeviceSize size = static_cast<VkDeviceSize>(rows) * static_cast<VkDeviceSize>(vocab) * sizeof(float);
    std::unique_ptr<DeviceLogits> out(new DeviceLogits());
    out->vk_ = this;
    out->h_ = std::make_unique<DeviceLogits::Handles>();
    out->rows_ = rows;
    out->vocab_ = vocab;
    out->h_->size = size;
    // Refused before Vulkan is asked (an allocation past the limit is invalid usage).
    if (a.max_allocation > 0 && size > a.max_allocation) {
        *why = "the case's logits (" + std::to_string(size) + " bytes) exceed the device's maxMemoryAllocationSize (" +
               std::to_string(a.max_allocation) + ")";
        return nullptr;
    }
    // A buffer and its memory, or the reason the device cannot give them.
    auto make = [&](VkBufferUsageFlags usage, VkMemoryPropertyFlags want, VkBuffer* buffer, VkDeviceMemory* memory) {
        VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bi.size = size;
        bi.usage = usage;
        VkResult r = a.vkCreateBuffer(a.device, &bi, nullptr, buffer);
        if (r != VK_SUCCESS) {
            *why = "the device cannot make a buffer of " + std::to_string(size) + " bytes (VkResult " + std::to_string(r) + ")";
            return false;
        }
        VkMemoryRequirements req;
        a.vkGetBufferMemoryRequirements(a.device, *buffer, &req);
        VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = memory_type(a.memory, req.memoryTypeBits, want);
        if (ai.memoryTypeIndex == UINT32_MAX) {
            *why = "the device has no memory type for the logits' buffer";
            return false;
        }
        r = a.vkAllocateMemory(a.device, &ai, nullptr, memory);
        if (r != VK_SUCCESS) {
            *why = "the device cannot hold the case's logits: " + std::to_string(size) + " bytes (VkResult " + std::to_string(r) + ")";
            return false;
        }
        check(a.vkBindBufferMemory(a.device, *buffer, *memory, 0), "vkBindBufferMemory");
        return true;
    };
    if (!make(VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
              &out->h_->buffer, &out->h_->memory))
        return nullptr;
    // Through a host-visible staging buffer, once.
    VkBuffer staging = VK_NULL_HANDLE;
    VkDeviceMemory staging_memory = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    auto release = [&] {
        if (pool) a.vkDestroyCommandPool(a.device, pool, nullptr);
        if (staging) a.vkDestroyBuffer(a.device, staging, nullptr);
        if (staging_memory) a.vkFreeMemory(a.device, staging_memory, nullptr);
    };
    if (!make(VK_BUFFER_USAGE_TRANSFER_SRC_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
              &staging, &staging_memory)) {
        release();
        return nullptr;
    }
    try {
        void* mapped = nullptr;
        check(a.vkMapMemory(a.device, staging_memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
        std::memcpy(mapped, data, static_cast<size_t>(size));
        VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        cp.queueFamilyIndex = a.family;
        check(a.vkCreateCommandPool(a.device, &cp, nullptr, &pool), "vkCreateCommandPool");
        VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        cai.commandPool = pool;
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 1;
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        check(a.vkAllocateCommandBuffers(a.device, &cai, &cmd), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(a.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        const VkBufferCopy region{0, 0, size};
        a.vkCmdCopyBuffer(cmd, staging, out->h_->buffer, 1, &region);
        check(a.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        // The copy completes before Sieve's first submission reads the buffer
        // (sieve_vulkan.h: work on the context's queue that completed).
        check(a.vkQueueSubmit(a.queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
        check(a.vkQueueWaitIdle(a.queue), "vkQueueWaitIdle");
    } catch (...) {
        release();
        throw;
    }
    release();
    return out;
}

} // namespace sieve_cli
