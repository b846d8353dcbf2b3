// Vulkan result checking: a failed call becomes a Failure with the call's name.
#pragma once

#include <volk.h>

#include "api/error.hpp"

#include <string>

namespace sieve {

inline sieve_status status_of(VkResult r) {
    switch (r) {
    case VK_ERROR_DEVICE_LOST: return SIEVE_ERROR_DEVICE_LOST;
    case VK_TIMEOUT: return SIEVE_ERROR_TIMEOUT;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return SIEVE_ERROR_OUT_OF_MEMORY;
    default: return SIEVE_ERROR_VULKAN;
    }
}

inline void vk_check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) fail(status_of(r), std::string(what) + " failed (VkResult " + std::to_string(r) + ")");
}

} // namespace sieve
