#include "vulkan/vk_device.hpp"

#include "vulkan/device_profile.hpp"
#include "vulkan/pipeline_stats.hpp"
#include "vulkan/vk_check.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace sieve {

namespace {
std::atomic<bool> g_stage_memory_for_tests{false};
std::atomic<bool> g_exact_division_for_tests{false};
#ifdef SIEVE_PHASE_CLOCK
// The phase-clock build's shaders read both shader clocks
// (shaders/include/phase_clock.glsl): a device without them cannot run it.
void require_shader_clock(VkPhysicalDevice physical) {
    VkPhysicalDeviceShaderClockFeaturesKHR clock{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &clock;
    vkGetPhysicalDeviceFeatures2(physical, &features);
    if (!clock.shaderSubgroupClock || !clock.shaderDeviceClock)
        fail(SIEVE_ERROR_DEVICE_LIMIT, "the phase-clock build (SIEVE_PHASE_CLOCK) needs VK_KHR_shader_clock's "
                                       "subgroup and device clocks, which this device does not offer");
}
#endif

} // namespace

bool stage_memory_for_tests(bool on) { return g_stage_memory_for_tests.exchange(on); }
bool exact_division_for_tests(bool on) { return g_exact_division_for_tests.exchange(on); }

namespace {

bool offers_extension(VkPhysicalDevice physical, const char* name) {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> extensions(n);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, extensions.data());
    return std::any_of(extensions.begin(), extensions.end(),
                       [name](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// VK_EXT_calibrated_timestamps with both the device's time domain and the
// host's CLOCK_MONOTONIC (the clock Submitter reads around a call).
bool offers_calibrated_timestamps(VkPhysicalDevice physical) {
    if (!offers_extension(physical, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) ||
        !vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)
        return false;
    uint32_t m = 0;
    vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(physical, &m, nullptr);
    std::vector<VkTimeDomainEXT> domains(m);
    vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(physical, &m, domains.data());
    auto has = [&](VkTimeDomainEXT d) { return std::find(domains.begin(), domains.end(), d) != domains.end(); };
    return has(VK_TIME_DOMAIN_DEVICE_EXT) && has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
}

// The warps an SM holds (VK_NV_shader_sm_builtins), 0 where unknown.
uint32_t warps_per_sm(VkPhysicalDevice physical) {
    if (!offers_extension(physical, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) return 0;
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &nv;
    vkGetPhysicalDeviceProperties2(physical, &props);
    return nv.shaderWarpsPerSM;
}

} // namespace

int32_t resolve_wait_spin(int32_t option) {
    if (option >= 0) return option;
    const char* env = std::getenv("SIEVE_WAIT_SPIN_US");
    if (!env || !*env) return -1;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 0 || v > kMaxWaitSpinUs)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string("SIEVE_WAIT_SPIN_US=") + env + " is not a whole number in [0, " +
                                               std::to_string(kMaxWaitSpinUs) + "]");
    return static_cast<int32_t>(v);
}

Device::Device(const PhysicalDevice& physical, const sieve_context_options& options)
    : physical_(physical.handle), family_(physical.compute_family), owned_(true) {
    info_ = physical.info;
    // Enable the optional features the device has and the profile allows.
    const bool constrained = resolve_profile(options.profile) & SIEVE_PROFILE_CONSTRAINED;
    const uint32_t wanted = info_.features & ~options.disable_features & (constrained ? 0u : ~0u);
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    storage16.storageBuffer16BitAccess = (wanted & SIEVE_FEATURE_16BIT_STORAGE) ? VK_TRUE : VK_FALSE;
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    timeline.timelineSemaphore = (wanted & SIEVE_FEATURE_TIMELINE_SEMAPHORE) ? VK_TRUE : VK_FALSE;
    if (wanted & SIEVE_FEATURE_TIMELINE_SEMAPHORE) storage16.pNext = &timeline;
    // The memory model: core in 1.2 (the feature struct), an extension in 1.1.
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    std::vector<const char*> extensions;
    if (wanted & SIEVE_FEATURE_VULKAN_MEMORY_MODEL) {
        memory_model.vulkanMemoryModel = VK_TRUE;
        memory_model.vulkanMemoryModelDeviceScope = VK_TRUE;
        memory_model.pNext = storage16.pNext;
        storage16.pNext = &memory_model;
        if (info_.api_version < VK_API_VERSION_1_2) extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    }
    // Profiling's call timing puts the GPU's timestamps on the host's clock.
    const bool calibrated = offers_calibrated_timestamps(physical_);
    if (calibrated) extensions.push_back(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    // The compiled pipelines' statistics, only where SIEVE_PIPELINE_STATS
    // asks (capturing them may cost a driver its pipeline cache).
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    bool statistics = false;
    statistics_file_ = pipeline_stats_path();
    if (!statistics_file_.empty()) {
        if (offers_extension(physical_, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
            VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
            features.pNext = &executables;
            vkGetPhysicalDeviceFeatures2(physical_, &features);
            statistics = executables.pipelineExecutableInfo == VK_TRUE;
        }
        if (statistics) {
            executables.pNext = storage16.pNext;
            storage16.pNext = &executables;
            extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
        } else {
            statistics_absent_ = "the driver does not offer VK_KHR_pipeline_executable_properties' pipelineExecutableInfo";
        }
        warps_per_unit_ = warps_per_sm(physical_);
    }
#ifdef SIEVE_PHASE_CLOCK
    require_shader_clock(physical_);
    VkPhysicalDeviceShaderClockFeaturesKHR clock{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR};
    clock.shaderSubgroupClock = VK_TRUE;
    clock.shaderDeviceClock = VK_TRUE;
    clock.pNext = storage16.pNext;
    storage16.pNext = &clock;
    extensions.push_back(VK_KHR_SHADER_CLOCK_EXTENSION_NAME);
#endif

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = family_;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.pNext = &storage16;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    vk_check(vkCreateDevice(physical_, &info, nullptr, &device_), "vkCreateDevice");
    volkLoadDeviceTable(&table_, device_);
    table_.vkGetDeviceQueue(device_, family_, 0, &queue_);
    calibrated_timestamps_ = calibrated && table_.vkGetCalibratedTimestampsEXT;
    captures_statistics_ = statistics && table_.vkGetPipelineExecutablePropertiesKHR &&
                           table_.vkGetPipelineExecutableStatisticsKHR;
    if (statistics && !captures_statistics_) statistics_absent_ = "the loader gave no vkGetPipelineExecutable*KHR";
    init(options, wanted);
}

Device::Device(VkInstance instance, VkPhysicalDevice physical, VkDevice device, VkQueue queue, uint32_t family,
               uint32_t enabled_features, const sieve_context_options& options)
    : physical_(physical), device_(device), queue_(queue), family_(family), owned_(false) {
    (void)instance;
#ifdef SIEVE_PHASE_CLOCK
    fail(SIEVE_ERROR_DEVICE_LIMIT, "the phase-clock build (SIEVE_PHASE_CLOCK) creates its own device: the app's "
                                   "was not created with VK_KHR_shader_clock");
#endif
    info_ = describe_device(physical, 0);
    volkLoadDeviceTable(&table_, device_);
    statistics_file_ = pipeline_stats_path();
    if (!statistics_file_.empty()) {
        statistics_absent_ = "the app created the device (sieve_context_create_vulkan): Sieve enables no extension on it";
        warps_per_unit_ = warps_per_sm(physical);
    }
    init(options, info_.features & enabled_features & ~options.disable_features);
}

void Device::init(const sieve_context_options& options, uint32_t enabled_features) {
    // (Resolved before any Vulkan object exists: sieve_context_create checks it first.)
    wait_spin_us_ = static_cast<uint32_t>(options.wait_spin_us >= 0 ? options.wait_spin_us
                                                                     : default_wait_spin_us(info_.type));
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(physical_, &props);
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

    shape_limits(info_, enabled_features, options, resolve_profile(options.profile), &limits_);
    info_.features = limits_.features;  // a context reports what it may use
    info_.workgroup_size = limits_.workgroup_size;
    info_.candidate_capacity = limits_.candidate_capacity;
    info_.profile = limits_.profile;
    limits_.max_storage_buffer_range = props.limits.maxStorageBufferRange;
    if (options.max_storage_buffer_range)
        limits_.max_storage_buffer_range = std::min<uint64_t>(limits_.max_storage_buffer_range, options.max_storage_buffer_range);
    info_.max_storage_buffer_range = limits_.max_storage_buffer_range;  // a context reports what it plans with
    limits_.min_storage_offset_alignment = props.limits.minStorageBufferOffsetAlignment;
    limits_.max_texel_buffer_elements = props.limits.maxTexelBufferElements;
    limits_.min_texel_offset_alignment = props.limits.minTexelBufferOffsetAlignment;
    VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props2.pNext = &maintenance3;
    vkGetPhysicalDeviceProperties2(physical_, &props2);
    limits_.max_allocation_size = maintenance3.maxMemoryAllocationSize;
    limits_.max_workgroup_count_y = props.limits.maxComputeWorkGroupCount[1];

    uint32_t qn = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> families(qn);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &qn, families.data());
    limits_.timestamps = family_ < qn && families[family_].timestampValidBits > 0 && props.limits.timestampComputeAndGraphics;
    limits_.timestamp_period_ns = props.limits.timestampPeriod;

    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
        VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
        if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
            (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
            VkDeviceSize heap = memory_.memoryHeaps[memory_.memoryTypes[i].heapIndex].size;
            // A discrete GPU's BAR (256 MiB, or all of VRAM with resizable
            // BAR) is not UMA: the host reads it uncached, a PCIe round trip
            // a load (HostAccess), and rows the twin finishes are read back.
            const bool cached = f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
            if ((cached && heap > (VkDeviceSize(1) << 30)) || info_.type == SIEVE_DEVICE_INTEGRATED_GPU ||
                info_.type == SIEVE_DEVICE_CPU)
                unified_memory_ = true;
        }
    }
    if (g_stage_memory_for_tests.load()) unified_memory_ = false;
    exact_division_ = info_.type != SIEVE_DEVICE_CPU || g_exact_division_for_tests.load();
}

Device::~Device() {
    if (owned_ && device_) {
        table_.vkDeviceWaitIdle(device_);
        table_.vkDestroyDevice(device_, nullptr);
    }
}

VkCommandBuffer Device::allocate_command_buffer(VkCommandPool pool) const {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk_check(table_.vkAllocateCommandBuffers(device_, &ai, &cmd), "vkAllocateCommandBuffers");
    return cmd;
}

VkResult Device::submit(const VkSubmitInfo& submit, VkFence fence) {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    return table_.vkQueueSubmit(queue_, 1, &submit, fence);
}

uint32_t choose_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t bits, HostAccess access) {
    const VkMemoryPropertyFlags required =
        access == HostAccess::None ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                   : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    // Higher is better; the first type of the best score wins.
    auto score = [&](VkMemoryPropertyFlags f) {
        const bool local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, cached = f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
        switch (access) {
        case HostAccess::Writes: return local ? 1 : 0;
        case HostAccess::Reads: return cached ? 2 : (local ? 0 : 1);
        default: return 0;
        }
    };
    uint32_t best = UINT32_MAX;
    int best_score = -1;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
        const VkMemoryPropertyFlags f = memory.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (f & required) != required) continue;
        if (score(f) > best_score) {
            best = i;
            best_score = score(f);
        }
    }
    return best;
}

Buffer Device::create_buffer(VkDeviceSize size, VkBufferUsageFlags usage, HostAccess access,
                             std::atomic<uint64_t>* allocations) {
    Buffer b;
    b.size = size;
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = usage;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vk_check(table_.vkCreateBuffer(device_, &info, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements req{};
    table_.vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = choose_memory_type(memory_, req.memoryTypeBits, access);
    if (alloc.memoryTypeIndex == UINT32_MAX) {
        table_.vkDestroyBuffer(device_, b.buffer, nullptr);
        fail(SIEVE_ERROR_OUT_OF_MEMORY, "no suitable Vulkan memory type");
    }
    VkResult r = table_.vkAllocateMemory(device_, &alloc, nullptr, &b.memory);
    if (r != VK_SUCCESS) {
        table_.vkDestroyBuffer(device_, b.buffer, nullptr);
        vk_check(r, "vkAllocateMemory");
    }
    if (allocations) allocations->fetch_add(1);
    table_.vkBindBufferMemory(device_, b.buffer, b.memory, 0);
    if (access != HostAccess::None) vk_check(table_.vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    return b;
}

void Device::destroy_buffer(Buffer& b) {
    if (b.buffer) table_.vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.memory) table_.vkFreeMemory(device_, b.memory, nullptr);
    b = Buffer{};
}

} // namespace sieve
