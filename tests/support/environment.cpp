// The test binary's main: validation layers on for every context the suite makes
// (SIEVE_VALIDATION=1); contexts made through test_support forward every
// validation message to count_validation_message, which fails the running test.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_support.hpp"

namespace sieve_test {

std::atomic<uint64_t> g_validation_messages{0};

void count_validation_message(const char* message, void*) {
    g_validation_messages.fetch_add(1);
    ADD_FAILURE() << "Vulkan validation: " << message;
}

} // namespace sieve_test

int main(int argc, char** argv) {
    setenv("SIEVE_VALIDATION", "1", 0);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
