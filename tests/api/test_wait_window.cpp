// The window a context's sampling calls poll their fence in
// (sieve_context_options.wait_spin_us): the option where set, else env
// SIEVE_WAIT_SPIN_US, else the device's default (none on a CPU device).
#include "vulkan/vk_device.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

namespace {

uint32_t window_of(int32_t option) {
    sieve::Context context(sieve_test::gpu_options().wait_spin(option));
    return sieve_test::device_of(context).wait_spin_us();
}

TEST(WaitWindow, TheDevicesDefaultWithNeitherOptionNorEnvironment) {
    sieve_test::ScopedEnv env("SIEVE_WAIT_SPIN_US", nullptr);
    sieve::Context context(sieve_test::gpu_options().wait_spin(-1));
    const sieve::Device& device = sieve_test::device_of(context);
    EXPECT_EQ(device.wait_spin_us(), static_cast<uint32_t>(sieve::default_wait_spin_us(device.info().type)));
}

TEST(WaitWindow, TheEnvironmentOverTheDefaultAndTheOptionOverBoth) {
    sieve_test::ScopedEnv env("SIEVE_WAIT_SPIN_US", "9");
    EXPECT_EQ(window_of(-1), 9u);
    EXPECT_EQ(window_of(7), 7u);
    EXPECT_EQ(window_of(0), 0u);
}

}  // namespace
