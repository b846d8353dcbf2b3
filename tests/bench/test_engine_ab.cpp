// The engine A/B harness (tools/engine_ab/engine_ab.c, scripts/engine_ab.sh):
// one line a case with a positive median, the cases asked for only, and a
// usage error for bad arguments; the script refuses a missing or unknown
// revision before it builds anything.
#include "cli_process.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

const std::string kHarness = std::string(SIEVE_BUILD_DIR) + "/tools/sieve_engine_ab";
const std::string kScript = std::string(SIEVE_SOURCE_DIR) + "/scripts/engine_ab.sh";

// A directory of the test's own (run_program writes its stderr there).
fs::path temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "sieve_engine_ab_XXXXXX").string();
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
    return tmpl;
}

TEST(EngineAb, PrintsAMedianForEachCaseAskedFor) {
    ASSERT_TRUE(fs::exists(kHarness)) << kHarness << ": built with the tools (SIEVE_BUILD_TOOLS)";
    const fs::path dir = temp_dir();
    const auto r = sieve_test::run_program(kHarness, "3 greedy,min_p", dir);
    ASSERT_EQ(r.code, 0) << r.err;
    std::istringstream in(r.out);
    std::string name;
    double us = 0;
    ASSERT_TRUE(in >> name >> us) << r.out;
    EXPECT_EQ(name, "greedy");
    EXPECT_GT(us, 0.0);
    ASSERT_TRUE(in >> name >> us) << r.out;
    EXPECT_EQ(name, "min_p");
    EXPECT_GT(us, 0.0);
    EXPECT_FALSE(in >> name) << "only the cases asked for: " << r.out;
    fs::remove_all(dir);
}

TEST(EngineAb, BadArgumentsAreUsageErrors) {
    ASSERT_TRUE(fs::exists(kHarness)) << kHarness;
    const fs::path dir = temp_dir();
    for (const char* args : {"", "0", "3 greedy,nope", "3 greedy extra"}) {
        const auto r = sieve_test::run_program(kHarness, args, dir);
        EXPECT_EQ(r.code, 2) << "'" << args << "': " << r.out << r.err;
    }
    for (const char* args : {"", "no-such-revision-xyz", "HEAD --rounds 0"}) {
        const auto r = sieve_test::run_program("/usr/bin/env", "bash '" + kScript + "' " + args, dir);
        EXPECT_EQ(r.code, 2) << "'" << args << "': " << r.out << r.err;
    }
    fs::remove_all(dir);
}

} // namespace
