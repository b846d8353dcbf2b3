/* zero_copy.c: Sieve on the application's own Vulkan device, sampling straight
 * from the application's own VkBuffer (C99).
 *
 * Plays an inference engine: creates its own instance, device and queue, a
 * buffer for its "output tensor" (4 rows of 32000 f32 logits, rows 32064 floats
 * apart, from byte 256), fills it with its own compute dispatch
 * (fill_logits.comp), and hands device, queue and buffer to Sieve. The fill is
 * submitted and not waited for: Sieve's submission on the same queue orders
 * itself after it. Then it checks the tokens against sampling the same values
 * from host memory (a second chain, same seeds), prints them and returns 0.
 *
 * With SIEVE_VALIDATION=1 the app's instance enables the validation layer
 * (synchronization validation too) and any message fails the run. */
#include <vulkan/vulkan.h>

#include <sieve/sieve.h>
#include <sieve/sieve_vulkan.h>

#include <stdint.h>

#include "fill_logits.spv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 4
#define VOCAB 32000
#define STRIDE 32064
#define OFFSET 256

static unsigned validation_messages = 0;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    (void)type;
    (void)user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        ++validation_messages;
        fprintf(stderr, "zero_copy: validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static int vk_failed(const char* what, VkResult r) {
    if (r == VK_SUCCESS) return 0;
    fprintf(stderr, "zero_copy: %s failed: VkResult %d\n", what, (int)r);
    return 1;
}

static int sieve_failed(const char* what, sieve_status s) {
    if (s == SIEVE_OK) return 0;
    fprintf(stderr, "zero_copy: %s failed: %s: %s\n", what, sieve_status_name(s), sieve_last_error());
    return 1;
}

static int has_layer(const char* name) {
    uint32_t n = 0, i;
    VkLayerProperties* props;
    int found = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    props = (VkLayerProperties*)calloc(n ? n : 1, sizeof(*props));
    vkEnumerateInstanceLayerProperties(&n, props);
    for (i = 0; i < n; ++i) found |= strcmp(props[i].layerName, name) == 0;
    free(props);
    return found;
}

int main(void) {
    const char* validation = getenv("SIEVE_VALIDATION");
    const int validate = validation && strcmp(validation, "1") == 0 && has_layer("VK_LAYER_KHRONOS_validation");
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = UINT32_MAX;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = OFFSET + (VkDeviceSize)ROWS * STRIDE * sizeof(float);
    float* mapped = NULL;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkShaderModule module = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkCommandPool command_pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    sieve_context* context = NULL;
    sieve_chain* chain = NULL;
    sieve_chain* host_chain = NULL;
    sieve_token tokens[ROWS], host_tokens[ROWS];
    int rc = 1, step, r;

    /* ---- the app's Vulkan objects ---- */
    {
        VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
        VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        VkValidationFeaturesEXT features = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
        VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
        VkDebugUtilsMessengerCreateInfoEXT mci = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        const char* layer = "VK_LAYER_KHRONOS_validation";
        const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        app.pApplicationName = "sieve zero_copy sample";
        app.apiVersion = VK_API_VERSION_1_1;
        ici.pApplicationInfo = &app;
        mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
        mci.pfnUserCallback = on_message;
        if (validate) {
            features.enabledValidationFeatureCount = 1;
            features.pEnabledValidationFeatures = &sync;
            ici.pNext = &features;
            ici.enabledLayerCount = 1;
            ici.ppEnabledLayerNames = &layer;
            ici.enabledExtensionCount = 1;
            ici.ppEnabledExtensionNames = &ext;
        }
        if (vk_failed("vkCreateInstance", vkCreateInstance(&ici, NULL, &instance))) return 1;
        if (validate) {
            PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
                (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
            if (create_messenger) create_messenger(instance, &mci, NULL, &messenger);
        }
    }
    {
        uint32_t n = 1, qn = 0, i;
        VkQueueFamilyProperties* qf;
        float priority = 1.0f;
        VkDeviceQueueCreateInfo q = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        VkResult res = vkEnumeratePhysicalDevices(instance, &n, &physical);
        if (n == 0 || (res != VK_SUCCESS && res != VK_INCOMPLETE)) {
            fprintf(stderr, "zero_copy: no Vulkan device\n");
            goto done;
        }
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, NULL);
        qf = (VkQueueFamilyProperties*)calloc(qn, sizeof(*qf));
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, qf);
        for (i = 0; i < qn && family == UINT32_MAX; ++i)
            if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
        free(qf);
        q.queueFamilyIndex = family;
        q.queueCount = 1;
        q.pQueuePriorities = &priority;
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &q;
        if (vk_failed("vkCreateDevice", vkCreateDevice(physical, &dci, NULL, &device))) goto done;
        vkGetDeviceQueue(device, family, 0, &queue);
    }
    {
        /* The output tensor: host-visible so the check below can read it. */
        VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        VkMemoryRequirements req;
        VkPhysicalDeviceMemoryProperties props;
        VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        uint32_t i;
        bi.size = size;
        bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
        if (vk_failed("vkCreateBuffer", vkCreateBuffer(device, &bi, NULL, &buffer))) goto done;
        vkGetBufferMemoryRequirements(device, buffer, &req);
        vkGetPhysicalDeviceMemoryProperties(physical, &props);
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = UINT32_MAX;
        for (i = 0; i < props.memoryTypeCount && ai.memoryTypeIndex == UINT32_MAX; ++i)
            if ((req.memoryTypeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want)
                ai.memoryTypeIndex = i;
        if (vk_failed("vkAllocateMemory", vkAllocateMemory(device, &ai, NULL, &memory))) goto done;
        if (vk_failed("vkBindBufferMemory", vkBindBufferMemory(device, buffer, memory, 0))) goto done;
        if (vk_failed("vkMapMemory", vkMapMemory(device, memory, 0, VK_WHOLE_SIZE, 0, (void**)&mapped))) goto done;
    }
    {
        /* The app's fill pipeline. */
        VkDescriptorSetLayoutBinding binding = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
        VkDescriptorSetLayoutCreateInfo sl = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
        VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(uint32_t)};
        VkPipelineLayoutCreateInfo pl = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
        VkShaderModuleCreateInfo mi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        VkComputePipelineCreateInfo ci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
        VkDescriptorPoolCreateInfo dp = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        VkDescriptorSetAllocateInfo dsa = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        VkDescriptorBufferInfo info = {VK_NULL_HANDLE, OFFSET, VK_WHOLE_SIZE};
        VkWriteDescriptorSet write = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        VkCommandPoolCreateInfo cp = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        sl.bindingCount = 1;
        sl.pBindings = &binding;
        if (vk_failed("vkCreateDescriptorSetLayout", vkCreateDescriptorSetLayout(device, &sl, NULL, &set_layout))) goto done;
        pl.setLayoutCount = 1;
        pl.pSetLayouts = &set_layout;
        pl.pushConstantRangeCount = 1;
        pl.pPushConstantRanges = &range;
        if (vk_failed("vkCreatePipelineLayout", vkCreatePipelineLayout(device, &pl, NULL, &layout))) goto done;
        mi.codeSize = sizeof(fill_logits_spv);
        mi.pCode = fill_logits_spv;
        if (vk_failed("vkCreateShaderModule", vkCreateShaderModule(device, &mi, NULL, &module))) goto done;
        ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = module;
        ci.stage.pName = "main";
        ci.layout = layout;
        if (vk_failed("vkCreateComputePipelines", vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &ci, NULL, &pipeline)))
            goto done;
        dp.maxSets = 1;
        dp.poolSizeCount = 1;
        dp.pPoolSizes = &ps;
        if (vk_failed("vkCreateDescriptorPool", vkCreateDescriptorPool(device, &dp, NULL, &pool))) goto done;
        dsa.descriptorPool = pool;
        dsa.descriptorSetCount = 1;
        dsa.pSetLayouts = &set_layout;
        if (vk_failed("vkAllocateDescriptorSets", vkAllocateDescriptorSets(device, &dsa, &set))) goto done;
        info.buffer = buffer;
        write.dstSet = set;
        write.descriptorCount = 1;
        write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        write.pBufferInfo = &info;
        vkUpdateDescriptorSets(device, 1, &write, 0, NULL);
        cp.queueFamilyIndex = family;
        if (vk_failed("vkCreateCommandPool", vkCreateCommandPool(device, &cp, NULL, &command_pool))) goto done;
    }

    /* ---- Sieve on the app's device ---- */
    {
        sieve_vulkan_device handles;
        sieve_context_options options;
        sieve_chain_desc desc;
        memset(&handles, 0, sizeof(handles));
        handles.struct_size = sizeof(handles);
        handles.get_instance_proc_addr = vkGetInstanceProcAddr;
        handles.instance = instance;
        handles.physical_device = physical;
        handles.device = device;
        handles.queue = queue;
        handles.queue_family_index = family;
        handles.api_version = VK_API_VERSION_1_1;
        handles.enabled_features = 0; /* this app enabled no optional feature */
        sieve_context_options_init(&options);
        if (sieve_failed("sieve_context_create_vulkan", sieve_context_create_vulkan(&handles, &options, &context)))
            goto done;
        sieve_chain_desc_init(&desc);
        desc.samplers = NULL; /* llama.cpp's default chain */
        desc.max_rows = ROWS;
        desc.max_vocab = VOCAB;
        desc.seed = 1234;
        if (sieve_failed("sieve_chain_create", sieve_chain_create(context, &desc, &chain))) goto done;
        if (sieve_failed("sieve_chain_create", sieve_chain_create(context, &desc, &host_chain))) goto done;
    }

    for (step = 0; step < 3; ++step) {
        VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
        VkMemoryBarrier barrier = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        uint32_t push[2] = {VOCAB, STRIDE};
        sieve_vulkan_logits in;
        sieve_logits host;

        /* The app's decode step: fill the tensor on the queue, do not wait. */
        ai.commandPool = command_pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        if (cmd) vkFreeCommandBuffers(device, command_pool, 1, &cmd);
        if (vk_failed("vkAllocateCommandBuffers", vkAllocateCommandBuffers(device, &ai, &cmd))) goto done;
        vkBeginCommandBuffer(cmd, &bi);
        /* The previous step's reads (Sieve's) before this write. */
        barrier.srcAccessMask = VK_ACCESS_SHADER_READ_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                             &barrier, 0, NULL, 0, NULL);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
        push[0] = VOCAB;
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), push);
        vkCmdDispatch(cmd, (VOCAB + 63) / 64, ROWS, 1);
        /* For the host check below: the fill's writes visible to the host. */
        barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                             NULL, 0, NULL);
        vkEndCommandBuffer(cmd);
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cmd;
        if (vk_failed("vkQueueSubmit", vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE))) goto done;

        /* Sieve samples straight from the tensor. */
        sieve_vulkan_logits_init(&in, buffer, size, SIEVE_DTYPE_F32, ROWS, VOCAB);
        in.offset = OFFSET;
        in.row_stride = STRIDE;
        if (sieve_failed("sieve_sample_vulkan", sieve_sample_vulkan(chain, &in, tokens))) goto done;

        /* The check: the same values from host memory (the fill has finished:
         * Sieve's call waited for its own submission, which came after it). */
        sieve_logits_init(&host, (const char*)mapped + OFFSET, SIEVE_DTYPE_F32, ROWS, VOCAB);
        host.row_stride = STRIDE;
        if (sieve_failed("sieve_sample_logits", sieve_sample_logits(host_chain, &host, host_tokens))) goto done;
        for (r = 0; r < ROWS; ++r) {
            printf("step %d row %d: token %d p %.6f\n", step, r, tokens[r].token, tokens[r].p);
            if (tokens[r].token != host_tokens[r].token || tokens[r].p != host_tokens[r].p) {
                fprintf(stderr, "zero_copy: row %d: token %d from the buffer, %d from host memory\n", r,
                        tokens[r].token, host_tokens[r].token);
                goto done;
            }
        }
    }
    rc = validation_messages == 0 ? 0 : 1;

done:
    sieve_chain_destroy(host_chain);
    sieve_chain_destroy(chain);
    sieve_context_destroy(context);
    if (device) vkDeviceWaitIdle(device);
    if (command_pool) vkDestroyCommandPool(device, command_pool, NULL);
    if (pool) vkDestroyDescriptorPool(device, pool, NULL);
    if (pipeline) vkDestroyPipeline(device, pipeline, NULL);
    if (module) vkDestroyShaderModule(device, module, NULL);
    if (layout) vkDestroyPipelineLayout(device, layout, NULL);
    if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, NULL);
    if (buffer) vkDestroyBuffer(device, buffer, NULL);
    if (memory) vkFreeMemory(device, memory, NULL);
    if (device) vkDestroyDevice(device, NULL);
    if (messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(instance, messenger, NULL);
    }
    if (instance) vkDestroyInstance(instance, NULL);
    if (rc == 0) printf("zero_copy: ok (%d rows x %d tokens sampled from the app's buffer)\n", ROWS, VOCAB);
    return rc;
}
