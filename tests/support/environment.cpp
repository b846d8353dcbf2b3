// The test binary's main: validation layers on for every context the suite makes
// (SIEVE_VALIDATION=1); contexts made through test_support forward every
// validation message to count_validation_message, which fails the running test.
// SIEVE_TEST_STAGED_MEMORY=1 gives every context a discrete GPU's memory path
// (vk_device.hpp: stage_memory_for_tests) on a device with unified memory, so
// that lavapipe records the staging copies an NVIDIA or AMD card records, and
// validation checks their barriers.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "test_support.hpp"
#include "vulkan/vk_device.hpp"

namespace sieve_test {

std::atomic<uint64_t> g_validation_messages{0};

void count_validation_message(const char* message, void*) {
    g_validation_messages.fetch_add(1);
    ADD_FAILURE() << "Vulkan validation: " << message;
}

} // namespace sieve_test

int main(int argc, char** argv) {
    setenv("SIEVE_VALIDATION", "1", 0);
    const char* env = std::getenv("SIEVE_TEST_STAGED_MEMORY");
    const std::string staged = env != nullptr ? env : "";
    if (staged != "" && staged != "0" && staged != "1") {
        std::fprintf(stderr, "SIEVE_TEST_STAGED_MEMORY=%s: 0 or 1\n", staged.c_str());
        return 2;
    }
    if (staged == "1") sieve::stage_memory_for_tests(true);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
