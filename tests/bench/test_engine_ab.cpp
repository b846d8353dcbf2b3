// The engine A/B harness (tools/engine_ab/engine_ab.c, scripts/engine_ab.sh):
// one line a case with a positive median and its stages' medians, the cases
// asked for only, and a usage error for bad arguments; the script refuses a
// missing or unknown revision, or --instructions without valgrind, before it
// builds anything.
#include "cli_process.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

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
    // "<case> <median us> <stage>=<median us> ...", a line a case.
    std::istringstream in(r.out);
    std::vector<std::string> names;
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string name, stage;
        double us = 0;
        ASSERT_TRUE(fields >> name >> us) << line;
        EXPECT_GT(us, 0.0) << line;
        names.push_back(name);
        size_t stages = 0;
        for (; fields >> stage; ++stages) {
            const size_t eq = stage.find('=');
            ASSERT_NE(eq, std::string::npos) << line;
            EXPECT_GT(std::stod(stage.substr(eq + 1)), 0.0) << line;
        }
        EXPECT_GE(stages, 1u) << "the stages of a profiled call: " << line;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"greedy", "min_p"})) << "only the cases asked for: " << r.out;
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

// --instructions counts under valgrind: without it, a usage error that says
// so, before anything is built (a PATH of the few tools the checks use).
TEST(EngineAb, InstructionsWithoutValgrindIsAUsageError) {
    const fs::path dir = temp_dir();
    const fs::path bin = dir / "bin";
    fs::create_directory(bin);
    for (const char* tool : {"bash", "git", "dirname", "realpath"}) {
        const char* found = nullptr;
        for (const char* d : {"/usr/bin/", "/bin/"})
            if (fs::exists(std::string(d) + tool)) {
                found = d;
                break;
            }
        ASSERT_NE(found, nullptr) << tool;
        fs::create_symlink(std::string(found) + tool, bin / tool);
    }
    const auto r = sieve_test::run_program("/usr/bin/env", "PATH='" + bin.string() + "' bash '" + kScript +
                                                                "' HEAD --instructions --build-dir '" +
                                                                SIEVE_BUILD_DIR + "'",
                                           dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("needs valgrind"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("building"), std::string::npos) << "nothing built: " << r.out;
    fs::remove_all(dir);
}

} // namespace
