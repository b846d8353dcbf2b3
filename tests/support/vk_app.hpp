// A small Vulkan app on its own instance, device and queue, with buffers,
// semaphores and command buffers, handed to Sieve through
// sieve_context_create_vulkan: the "app" of the external-device tests
// (app_device.hpp, with validation) and of the batch benchmark (without).
// Free of GoogleTest: a failing Vulkan call throws std::runtime_error.
#pragma once

#include <volk.h>

#include <sieve/sieve_vulkan.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace sieve_test {

inline void vk_app_check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed: VkResult " + std::to_string(r));
}

struct VkAppOptions {
    bool timeline = false;  // Vulkan 1.2 with timelineSemaphore enabled
    // Non-null: the validation layer with synchronization validation, its
    // warnings and errors to this callback.
    PFN_vkDebugUtilsMessengerCallbackEXT on_message = nullptr;
};

struct VkApp {
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = 0;
    VolkDeviceTable vk{};
    VkCommandPool pool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;

    struct AppBuffer {
        VkBuffer buffer = VK_NULL_HANDLE;
        VkDeviceMemory memory = VK_NULL_HANDLE;
        void* mapped = nullptr;
        VkDeviceSize size = 0;
    };
    std::vector<AppBuffer> buffers;  // destroyed with the device

    uint32_t api_version = VK_API_VERSION_1_1;
    bool timeline = false;  // Vulkan 1.2 with timelineSemaphore enabled

    explicit VkApp(const VkAppOptions& options = {}) : timeline(options.timeline) {
        vk_app_check(volkInitialize(), "volkInitialize");
        if (timeline) api_version = VK_API_VERSION_1_2;
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.apiVersion = api_version;
        const char* layer = "VK_LAYER_KHRONOS_validation";
        const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        // Synchronization validation on: Sieve's submissions on the app's
        // queue must order themselves against the app's own work.
        VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
        const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
        features.enabledValidationFeatureCount = 1;
        features.pEnabledValidationFeatures = enables;
        VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ici.pApplicationInfo = &app;
        if (options.on_message) {
            ici.pNext = &features;
            ici.enabledLayerCount = 1;
            ici.ppEnabledLayerNames = &layer;
            ici.enabledExtensionCount = 1;
            ici.ppEnabledExtensionNames = &ext;
        }
        vk_app_check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
        volkLoadInstanceOnly(instance);
        if (options.on_message) {
            VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
            mci.messageSeverity =
                VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
            mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
            mci.pfnUserCallback = options.on_message;
            vk_app_check(vkCreateDebugUtilsMessengerEXT(instance, &mci, nullptr, &messenger),
                         "vkCreateDebugUtilsMessengerEXT");
        }
        uint32_t n = 1;
        VkResult r = vkEnumeratePhysicalDevices(instance, &n, &physical);
        vk_app_check(r == VK_INCOMPLETE ? VK_SUCCESS : r, "vkEnumeratePhysicalDevices");
        uint32_t qn = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, nullptr);
        std::vector<VkQueueFamilyProperties> qf(qn);
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, qf.data());
        for (uint32_t i = 0; i < qn; ++i)
            if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                family = i;
                break;
            }
        float priority = 1.0f;
        VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        q.queueFamilyIndex = family;
        q.queueCount = 1;
        q.pQueuePriorities = &priority;
        VkPhysicalDeviceTimelineSemaphoreFeatures timeline_features{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
        timeline_features.timelineSemaphore = VK_TRUE;
        VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        if (timeline) dci.pNext = &timeline_features;
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &q;
        vk_app_check(vkCreateDevice(physical, &dci, nullptr, &device), "vkCreateDevice");
        volkLoadDeviceTable(&vk, device);
        vk.vkGetDeviceQueue(device, family, 0, &queue);
        VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        cp.queueFamilyIndex = family;
        vk_app_check(vk.vkCreateCommandPool(device, &cp, nullptr, &pool), "vkCreateCommandPool");
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        vk_app_check(vk.vkCreateFence(device, &fi, nullptr, &fence), "vkCreateFence");
    }
    VkApp(const VkApp&) = delete;
    VkApp& operator=(const VkApp&) = delete;
    ~VkApp() {
        vk.vkDeviceWaitIdle(device);
        for (auto& b : buffers) {
            vk.vkDestroyBuffer(device, b.buffer, nullptr);
            vk.vkFreeMemory(device, b.memory, nullptr);
        }
        for (VkSemaphore s : semaphores) vk.vkDestroySemaphore(device, s, nullptr);
        vk.vkDestroyFence(device, fence, nullptr);
        vk.vkDestroyCommandPool(device, pool, nullptr);
        vk.vkDestroyDevice(device, nullptr);
        if (messenger) vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
        vkDestroyInstance(instance, nullptr);
    }

    // A buffer of the app's: host-visible (to fill it) or device-local.
    AppBuffer make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, bool host_visible) {
        AppBuffer b;
        b.size = size;
        VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bi.size = size;
        bi.usage = usage;
        vk_app_check(vk.vkCreateBuffer(device, &bi, nullptr, &b.buffer), "vkCreateBuffer");
        VkMemoryRequirements req;
        vk.vkGetBufferMemoryRequirements(device, b.buffer, &req);
        VkPhysicalDeviceMemoryProperties props;
        vkGetPhysicalDeviceMemoryProperties(physical, &props);
        const VkMemoryPropertyFlags want =
            host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                         : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        uint32_t type = 0;
        for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
            if ((req.memoryTypeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) {
                type = i;
                break;
            }
        VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = type;
        vk_app_check(vk.vkAllocateMemory(device, &ai, nullptr, &b.memory), "vkAllocateMemory");
        vk_app_check(vk.vkBindBufferMemory(device, b.buffer, b.memory, 0), "vkBindBufferMemory");
        if (host_visible) {
            vk_app_check(vk.vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
        }
        buffers.push_back(b);
        return b;
    }

    // Copies src to dst on the queue, the way an app's decode writes its
    // output tensor: submitted, not waited for (the next submission on the
    // queue, Sieve's, must order itself after it). Returns after submitting.
    void copy_on_queue(const AppBuffer& src, const AppBuffer& dst) {
        VkCommandBuffer cmd = begin_command_buffer();
        record_copy(cmd, src, dst);
        vk.vkEndCommandBuffer(cmd);
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        vk_app_check(vk.vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
    }

    // The decode's write of dst into the app's command buffer: the previous
    // sampling call's reads of dst (its compute passes) before this
    // overwrite, then the copy (which Sieve's first barrier orders its reads
    // after, in the same command buffer or a later submission).
    void record_copy(VkCommandBuffer cmd, const AppBuffer& src, const AppBuffer& dst) {
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_SHADER_READ_BIT;
        barrier.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier,
                                0, nullptr, 0, nullptr);
        VkBufferCopy region{0, 0, std::min(src.size, dst.size)};
        vk.vkCmdCopyBuffer(cmd, src.buffer, dst.buffer, 1, &region);
    }

    // Ends the app's command buffer, submits it with the app's fence and
    // waits for it (the app's side of record-into).
    void submit_and_wait(VkCommandBuffer cmd) {
        vk_app_check(vk.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        vk_app_check(vk.vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
        wait_fence();
    }

    // A primary command buffer of the app's pool (freed with it), recording.
    VkCommandBuffer begin_command_buffer() {
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        ai.commandPool = pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        vk_app_check(vk.vkAllocateCommandBuffers(device, &ai, &cmd), "vkAllocateCommandBuffers");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vk_app_check(vk.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        return cmd;
    }

    // A semaphore of the app's, destroyed with the device: binary, or a
    // timeline starting at 0 (needs the timeline device).
    VkSemaphore make_semaphore(bool timeline_type) {
        VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
        type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
        VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
        if (timeline_type) si.pNext = &type;
        VkSemaphore s = VK_NULL_HANDLE;
        vk_app_check(vk.vkCreateSemaphore(device, &si, nullptr, &s), "vkCreateSemaphore");
        semaphores.push_back(s);
        return s;
    }
    std::vector<VkSemaphore> semaphores;

    // An empty submission that waits on `wait` (binary, at every stage) and/or
    // signals `signal` (binary): the app's side of a semaphore handshake.
    // fence: the app's fence, waited for here when set.
    void submit_semaphores(VkSemaphore wait, VkSemaphore signal, bool fence_wait = false) {
        const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.waitSemaphoreCount = wait ? 1 : 0;
        si.pWaitSemaphores = &wait;
        si.pWaitDstStageMask = &stage;
        si.signalSemaphoreCount = signal ? 1 : 0;
        si.pSignalSemaphores = &signal;
        vk_app_check(vk.vkQueueSubmit(queue, 1, &si, fence_wait ? fence : VK_NULL_HANDLE), "vkQueueSubmit");
        if (fence_wait) wait_fence();
    }
    void wait_fence() {
        vk_app_check(vk.vkWaitForFences(device, 1, &fence, VK_TRUE, 120ull * 1000 * 1000 * 1000), "vkWaitForFences");
        vk.vkResetFences(device, 1, &fence);
    }

    sieve_vulkan_device handles(uint32_t enabled_features = 0) const {
        sieve_vulkan_device h{};
        h.struct_size = sizeof(h);
        h.instance = instance;
        h.physical_device = physical;
        h.device = device;
        h.queue = queue;
        h.queue_family_index = family;
        h.api_version = api_version;
        h.enabled_features = enabled_features;
        return h;
    }
};

} // namespace sieve_test
