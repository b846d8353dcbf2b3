// The test binary's main: validation layers on for every context the suite makes
// (SIEVE_VALIDATION=1); contexts made through test_support forward every
// validation message to count_validation_message, which fails the running test.
// SIEVE_TEST_STAGED_MEMORY=1 gives every context a discrete GPU's memory path
// (vk_device.hpp: stage_memory_for_tests) on a device with unified memory, so
// that lavapipe records the staging copies an NVIDIA or AMD card records, and
// validation checks their barriers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

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
    const char* staged = std::getenv("SIEVE_TEST_STAGED_MEMORY");
    if (staged != nullptr && std::strcmp(staged, "0") != 0 && staged[0] != '\0') {
        if (std::strcmp(staged, "1") != 0) {
            std::fprintf(stderr, "SIEVE_TEST_STAGED_MEMORY=%s: 0 or 1\n", staged);
            return 2;
        }
        sieve::stage_memory_for_tests(true);
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
