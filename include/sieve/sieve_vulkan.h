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

/* ---- zero-copy input ----------------------------------------------------------
 * Logits that already sit in a VkBuffer on the context's device (the app's
 * output tensor): sieve_sample_vulkan reads them there, without a trip through
 * the host. A context made by sieve_context_create_vulkan on the app's device is
 * required (a context on a device Sieve created cannot see the app's buffers).
 *
 * Synchronization: the logits must be written by work the app submitted to the
 * context's queue before the call (Sieve's submission starts with a barrier that
 * makes every earlier write on that queue visible to its shaders), or by work on
 * another queue that has completed (a fence the app waited for). The call returns
 * after the tokens are written; Sieve only reads the buffer.
 *
 * Cost: one device pass widens the rows into Sieve's own f32 buffer (the later
 * passes may rewrite that copy: penalties and DRY patch it in place), recorded in
 * a command buffer of its own that is re-recorded only when the buffer, offset,
 * dtype or shape changes.
 *
 * Lifetime: Sieve keeps a descriptor of the last buffer it sampled from. Call
 * sieve_chain_release_input before destroying that buffer if the chain may be
 * used afterwards (a new buffer can reuse a destroyed one's handle value). */
typedef struct sieve_vulkan_logits {
    uint32_t struct_size;   /* sizeof(sieve_vulkan_logits) */
    VkBuffer buffer;        /* created with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT on the context's device */
    VkDeviceSize size;      /* the buffer's size in bytes, as created (Vulkan cannot be asked) */
    VkDeviceSize offset;    /* bytes from the buffer's start to row 0's first logit; a multiple of the element size */
    sieve_dtype dtype;
    int32_t rows;
    int32_t vocab;
    int64_t row_stride;     /* elements between row starts, >= vocab; 0 = vocab */
} sieve_vulkan_logits;

/* Fills struct_size, the buffer, its size, the dtype and the sizes; offset and
 * row_stride 0. */
SIEVE_API void sieve_vulkan_logits_init(sieve_vulkan_logits* logits, VkBuffer buffer, VkDeviceSize size,
                                        sieve_dtype dtype, int32_t rows, int32_t vocab);

/* sieve_sample over logits in a VkBuffer: the same rules, statuses and results
 * as sieve_sample on the same values. Refused (SIEVE_ERROR_INVALID_ARGUMENT) on a
 * CPU-backend context and when the rows reach past `size`; SIEVE_ERROR_DEVICE_LIMIT
 * when the rows span more than the device's maxStorageBufferRange. */
SIEVE_API sieve_status sieve_sample_vulkan(sieve_chain* chain, const sieve_vulkan_logits* logits, sieve_token* out);

/* Forgets the buffer the chain last sampled from (its descriptor and the command
 * buffer that reads it). Waits for nothing: every sampling call has finished
 * when it returns. */
SIEVE_API sieve_status sieve_chain_release_input(sieve_chain* chain);

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_SIEVE_VULKAN_H */
