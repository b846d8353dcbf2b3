#include "vulkan/vk_instance.hpp"

#include "vulkan/vk_check.hpp"
#include "vulkan/vk_device.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace sieve {

void load_vulkan(PFN_vkGetInstanceProcAddr app_loader) {
    static std::mutex mutex;
    static bool loaded = false;
    std::lock_guard<std::mutex> lock(mutex);
    if (loaded) return;
    if (app_loader) {
        volkInitializeCustom(app_loader);
    } else if (volkInitialize() != VK_SUCCESS) {
        fail(SIEVE_ERROR_NO_DEVICE,
             "no Vulkan loader found (Debian: apt-get install libvulkan1 mesa-vulkan-drivers)");
    }
    loaded = true;
}

namespace {

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    static_cast<Instance*>(user)->deliver(data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

bool has_layer(const char* name) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> layers(n);
    vkEnumerateInstanceLayerProperties(&n, layers.data());
    for (auto& l : layers)
        if (std::strcmp(l.layerName, name) == 0) return true;
    return false;
}

bool has_instance_extension(const char* name) {
    uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
    for (auto& e : exts)
        if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
}

// Guards the creation of the process's instances (never their use).
std::mutex g_instances_mutex;
std::atomic<uint64_t> g_instances_created{0};

} // namespace

void Instance::deliver(const char* text) {
    std::lock_guard<std::mutex> lock(sinks_mutex_);
    bool printed = false;
    for (MessageSink* sink : sinks_) {
        sink->count.fetch_add(1);
        if (sink->callback) {
            sink->callback(text, sink->user_data);
        } else if (!printed) {
            std::fprintf(stderr, "sieve: validation: %s\n", text);
            printed = true;
        }
    }
    if (sinks_.empty()) std::fprintf(stderr, "sieve: validation: %s\n", text);
}

Instance& Instance::slot(bool validation) {
    // Made once and never destroyed (see the class comment): destroying an
    // instance unloads the driver, and destruction at exit would run after
    // drivers' own exit handlers.
    static Instance* const slots[2] = {new Instance(false), new Instance(true)};
    return *slots[validation ? 1 : 0];
}

Instance& process_instance(bool validation) {
    Instance& instance = Instance::slot(validation);
    std::lock_guard<std::mutex> lock(g_instances_mutex);
    if (!instance.instance_) instance.create();
    // volk's instance-level function pointers are process-wide and an app's
    // context (sieve_context_create_vulkan) loads its own instance's: load
    // ours again for the context about to use them.
    volkLoadInstanceOnly(instance.instance_);
    return instance;
}

Instance& enumeration_instance() {
    {
        std::lock_guard<std::mutex> lock(g_instances_mutex);
        for (bool validation : {true, false}) {
            Instance& instance = Instance::slot(validation);
            if (instance.instance_) {
                volkLoadInstanceOnly(instance.instance_);
                return instance;
            }
        }
    }
    return process_instance(false);
}

uint64_t instances_created() { return g_instances_created.load(); }

Instance::Subscription::Subscription(bool validation, MessageSink* sink)
    : instance_(Instance::slot(validation)), sink_(sink) {
    {
        std::lock_guard<std::mutex> lock(instance_.sinks_mutex_);
        instance_.sinks_.push_back(sink_);
    }
    try {
        process_instance(validation);
    } catch (...) {
        std::lock_guard<std::mutex> lock(instance_.sinks_mutex_);
        instance_.sinks_.erase(std::find(instance_.sinks_.begin(), instance_.sinks_.end(), sink_));
        throw;
    }
}

Instance::Subscription::~Subscription() {
    std::lock_guard<std::mutex> lock(instance_.sinks_mutex_);
    instance_.sinks_.erase(std::find(instance_.sinks_.begin(), instance_.sinks_.end(), sink_));
}

void Instance::create() {
    load_vulkan();
    if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
        fail(SIEVE_ERROR_NO_DEVICE, "the Vulkan loader is older than 1.1");

    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "sieve";
    app.pEngineName = "sieve";
    app.engineVersion = SIEVE_VERSION;
    app.apiVersion = VK_API_VERSION_1_2;  // the highest version Sieve uses; 1.1 devices still work

    std::vector<const char*> layers, extensions;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    if (has_instance_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        info.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    if (validation_) {
        const char* layer = "VK_LAYER_KHRONOS_validation";
        if (!has_layer(layer))
            fail(SIEVE_ERROR_VULKAN, "validation requested but VK_LAYER_KHRONOS_validation is missing "
                                     "(Debian: apt-get install vulkan-validationlayers)");
        layers.push_back(layer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        features.enabledValidationFeatureCount = 1;
        features.pEnabledValidationFeatures = enables;
        messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                    VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        messenger.pfnUserCallback = on_validation_message;
        messenger.pUserData = this;
        features.pNext = &messenger;  // also reports instance creation itself
        info.pNext = &features;
    }
    info.pApplicationInfo = &app;
    info.enabledLayerCount = static_cast<uint32_t>(layers.size());
    info.ppEnabledLayerNames = layers.data();
    info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    VkInstance handle = VK_NULL_HANDLE;
    VkResult r = vkCreateInstance(&info, nullptr, &handle);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) fail(SIEVE_ERROR_NO_DEVICE, "no Vulkan driver found");
    vk_check(r, "vkCreateInstance");
    g_instances_created.fetch_add(1);
    volkLoadInstanceOnly(handle);
    if (validation_) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(handle, "vkCreateDebugUtilsMessengerEXT"));
        auto destroy_instance = reinterpret_cast<PFN_vkDestroyInstance>(vkGetInstanceProcAddr(handle, "vkDestroyInstance"));
        if (!create) {
            destroy_instance(handle, nullptr);
            fail(SIEVE_ERROR_VULKAN, "VK_EXT_debug_utils functions are missing");
        }
        messenger.pNext = nullptr;
        VkResult r = create(handle, &messenger, nullptr, &messenger_);
        if (r != VK_SUCCESS) destroy_instance(handle, nullptr);
        vk_check(r, "vkCreateDebugUtilsMessengerEXT");
    }
    instance_ = handle;
}

namespace {

// sieve_device_info.compute_units: what a vendor's extension says, else a
// stand-in by device type (sieve.h states it).
template <typename HasExtension>
void count_compute_units(VkPhysicalDevice device, VkPhysicalDeviceType type, const HasExtension& has_extension,
                         sieve_device_info* info) {
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    uint32_t units = 0;
    if (has_extension(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
        props2.pNext = &nv;
        vkGetPhysicalDeviceProperties2(device, &props2);
        units = nv.shaderSMCount;
    } else if (has_extension(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderCorePropertiesAMD amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
        props2.pNext = &amd;
        vkGetPhysicalDeviceProperties2(device, &props2);
        units = amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
#ifdef VK_ARM_shader_core_properties  // newer headers than Debian 12's
    } else if (has_extension(VK_ARM_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderCorePropertiesARM arm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_ARM};
        props2.pNext = &arm;
        vkGetPhysicalDeviceProperties2(device, &props2);
        units = arm.shaderCoreCount;
#endif
    }
    info->compute_units_known = units > 0 ? 1 : 0;
    if (units == 0) {
        switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: units = kStandInGpuComputeUnits; break;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: units = std::max(std::thread::hardware_concurrency(), 1u); break;
        default: units = 8; break;
        }
    }
    info->compute_units = units;
}

} // namespace

sieve_device_info describe_device(VkPhysicalDevice device, uint32_t index) {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(device, &props);

    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props2.pNext = &subgroup;
    if (props.apiVersion >= VK_API_VERSION_1_2) subgroup.pNext = &driver;
    vkGetPhysicalDeviceProperties2(device, &props2);

    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features2.pNext = &storage16;
    if (props.apiVersion >= VK_API_VERSION_1_2) storage16.pNext = &timeline;
    // The memory model: core in 1.2, VK_KHR_vulkan_memory_model on 1.1.
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    uint32_t n_extensions = 0;
    vkEnumerateDeviceExtensionProperties(device, nullptr, &n_extensions, nullptr);
    std::vector<VkExtensionProperties> extensions(n_extensions);
    vkEnumerateDeviceExtensionProperties(device, nullptr, &n_extensions, extensions.data());
    auto has_extension = [&](const char* name) {
        for (const auto& e : extensions)
            if (std::strcmp(e.extensionName, name) == 0) return true;
        return false;
    };
    bool has_memory_model = props.apiVersion >= VK_API_VERSION_1_2 || has_extension(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    if (has_memory_model) {
        memory_model.pNext = storage16.pNext;
        storage16.pNext = &memory_model;
    }
    vkGetPhysicalDeviceFeatures2(device, &features2);

    sieve_device_info info{};
    std::snprintf(info.name, sizeof(info.name), "%s", props.deviceName);
    if (props.apiVersion >= VK_API_VERSION_1_2)
        std::snprintf(info.driver, sizeof(info.driver), "%s", (std::string(driver.driverName) + " " + driver.driverInfo).c_str());
    info.index = index;
    switch (props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info.type = SIEVE_DEVICE_INTEGRATED_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info.type = SIEVE_DEVICE_DISCRETE_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info.type = SIEVE_DEVICE_VIRTUAL_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info.type = SIEVE_DEVICE_CPU; break;
    default: info.type = SIEVE_DEVICE_OTHER; break;
    }
    info.vendor_id = props.vendorID;
    info.device_id = props.deviceID;
    info.api_version = props.apiVersion;
    info.driver_version = props.driverVersion;
    info.max_storage_buffer_range = props.limits.maxStorageBufferRange;
    info.max_shared_memory = props.limits.maxComputeSharedMemorySize;
    info.max_workgroup_size = std::min(props.limits.maxComputeWorkGroupInvocations,
                                       props.limits.maxComputeWorkGroupSize[0]);
    info.subgroup_size = subgroup.subgroupSize;
    count_compute_units(device, props.deviceType, has_extension, &info);
    if ((subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT))
        info.features |= SIEVE_FEATURE_SUBGROUP_ARITHMETIC;
    if (storage16.storageBuffer16BitAccess) info.features |= SIEVE_FEATURE_16BIT_STORAGE;
    if (props.apiVersion >= VK_API_VERSION_1_2 && timeline.timelineSemaphore)
        info.features |= SIEVE_FEATURE_TIMELINE_SEMAPHORE;
    if (has_memory_model && memory_model.vulkanMemoryModel && memory_model.vulkanMemoryModelDeviceScope)
        info.features |= SIEVE_FEATURE_VULKAN_MEMORY_MODEL;
    return info;
}

std::vector<PhysicalDevice> list_devices(VkInstance instance) {
    uint32_t n = 0;
    vk_check(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> handles(n);
    vk_check(vkEnumeratePhysicalDevices(instance, &n, handles.data()), "vkEnumeratePhysicalDevices");
    std::vector<PhysicalDevice> out;
    for (VkPhysicalDevice h : handles) {
        VkPhysicalDeviceProperties props{};
        vkGetPhysicalDeviceProperties(h, &props);
        if (props.apiVersion < VK_API_VERSION_1_1) continue;
        uint32_t qn = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(h, &qn, nullptr);
        std::vector<VkQueueFamilyProperties> families(qn);
        vkGetPhysicalDeviceQueueFamilyProperties(h, &qn, families.data());
        PhysicalDevice d;
        d.handle = h;
        for (uint32_t i = 0; i < qn; ++i) {
            // Timestamps are needed for the per-stage figures of `sieve bench`.
            if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && families[i].queueCount > 0) {
                d.compute_family = i;
                break;
            }
        }
        if (d.compute_family == UINT32_MAX) continue;
        d.info = describe_device(h, static_cast<uint32_t>(out.size()));
        out.push_back(d);
    }
    // Automatic choice: discrete > integrated > virtual > CPU > other.
    auto rank = [](sieve_device_type t) {
        switch (t) {
        case SIEVE_DEVICE_DISCRETE_GPU: return 0;
        case SIEVE_DEVICE_INTEGRATED_GPU: return 1;
        case SIEVE_DEVICE_VIRTUAL_GPU: return 2;
        case SIEVE_DEVICE_CPU: return 3;
        default: return 4;
        }
    };
    size_t best = 0;
    for (size_t i = 1; i < out.size(); ++i)
        if (rank(out[i].info.type) < rank(out[best].info.type)) best = i;
    if (!out.empty()) out[best].info.is_default = 1;
    return out;
}

const PhysicalDevice& choose_device(const std::vector<PhysicalDevice>& devices, const char* choice) {
    if (devices.empty()) fail(SIEVE_ERROR_NO_DEVICE, "no Vulkan 1.1 device with a compute queue");
    std::string want = choice && *choice ? choice : "";
    if (want.empty()) {
        const char* env = std::getenv("SIEVE_DEVICE");
        if (env && *env) want = env;
    }
    if (want.empty()) {
        for (auto& d : devices)
            if (d.info.is_default) return d;
    }
    bool numeric = !want.empty() && std::all_of(want.begin(), want.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric) {
        unsigned long index = std::strtoul(want.c_str(), nullptr, 10);
        if (index < devices.size()) return devices[index];
    } else {
        std::string lw = want;
        std::transform(lw.begin(), lw.end(), lw.begin(), [](unsigned char c) { return std::tolower(c); });
        for (auto& d : devices) {
            std::string name = d.info.name;
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
            if (name.find(lw) != std::string::npos) return d;
        }
    }
    std::string names;
    for (auto& d : devices) names += (names.empty() ? "" : ", ") + std::to_string(d.info.index) + ": " + d.info.name;
    fail(SIEVE_ERROR_NO_DEVICE, "no Vulkan device matches '" + want + "' (devices: " + names + ")");
}

} // namespace sieve
