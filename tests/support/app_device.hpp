// The app of the external-device tests: a VkApp (vk_app.hpp) whose instance
// runs the validation layer with synchronization validation on, every warning
// a test failure.
#pragma once

#include "test_support.hpp"
#include "vk_app.hpp"

namespace sieve_test {

inline VKAPI_ATTR VkBool32 VKAPI_CALL app_messenger(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT,
                                                    const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
        sieve_test::count_validation_message(data->pMessage, nullptr);
    return VK_FALSE;
}

struct AppDevice : VkApp {
    explicit AppDevice(bool with_timeline = false) : VkApp(VkAppOptions{with_timeline, app_messenger}) {}
};

} // namespace sieve_test
