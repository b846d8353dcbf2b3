/*
 * Sieve on the application's own Vulkan objects.
 *
 * Include after <vulkan/vulkan.h> (or volk.h). The application keeps ownership of
 * every handle it passes: Sieve never destroys them, and they must outlive the
 * context. The application owns external synchronization of the queue: Sieve
 * submits to it from inside sieve_* calls only, so the app must not submit to the
 * same queue from another thread during those calls.
 */
#ifndef SIEVE_SIEVE_VULKAN_H
#define SIEVE_SIEVE_VULKAN_H

#include "sieve.h"

#ifndef VK_VERSION_1_0
#  error "include <vulkan/vulkan.h> (or volk.h) before <sieve/sieve_vulkan.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sieve_vulkan_device {
    uint32_t struct_size;                   /* sizeof(sieve_vulkan_device) */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* NULL = the system loader's */
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    VkQueue queue;                          /* must support compute */
    uint32_t queue_family_index;
    uint32_t api_version;                   /* the apiVersion the device was created with (>= 1.1) */
    /* Optional features the app enabled on `device` (sieve_feature_bits):
     * Vulkan cannot be asked which ones were enabled. */
    uint32_t enabled_features;
} sieve_vulkan_device;

SIEVE_API sieve_status sieve_context_create_vulkan(const sieve_vulkan_device* device,
                                                   const sieve_context_options* options, sieve_context** out);

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_SIEVE_VULKAN_H */
