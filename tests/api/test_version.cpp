// One version (issue 25): the project() version in CMakeLists.txt is written
// once and every place that shows it agrees: sieve_version.h's macros,
// sieve_version(), `sieve --version`, `sieve devices --json`, the bench JSON,
// the CMake package's version file, sieve.pc and the README's status line.
#include "cli_process.hpp"

#include <sieve/sieve.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace {

const std::string kVersion = SIEVE_PROJECT_VERSION;

std::string dotted(uint32_t v) {
    return std::to_string(SIEVE_VERSION_GET_MAJOR(v)) + "." + std::to_string(SIEVE_VERSION_GET_MINOR(v)) + "." +
           std::to_string(SIEVE_VERSION_GET_PATCH(v));
}

class OneVersion : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_version_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    sieve_test::Proc sieve(const std::string& args) const { return sieve_test::run_program(SIEVE_CLI_PATH, args, dir_); }
    static nlohmann::json parse(const std::string& text) {
        nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
        EXPECT_FALSE(doc.is_discarded()) << "not JSON: " << text.substr(0, 400);
        return doc;
    }
    std::filesystem::path dir_;
};

TEST_F(OneVersion, HeaderAndLibrary) {
    EXPECT_EQ(std::string(SIEVE_VERSION_STRING), kVersion);
    EXPECT_EQ(dotted(SIEVE_VERSION), kVersion);
    EXPECT_EQ(dotted(sieve_version()), kVersion);
    EXPECT_TRUE(SIEVE_VERSION_COMPATIBLE(SIEVE_VERSION, sieve_version()));
}

TEST_F(OneVersion, CompatibilityRule) {
    // 0.x: each minor is its own ABI; from 1.0: a newer minor serves an older one.
    EXPECT_TRUE(SIEVE_VERSION_COMPATIBLE(SIEVE_MAKE_VERSION(0, 3, 0), SIEVE_MAKE_VERSION(0, 3, 7)));
    EXPECT_FALSE(SIEVE_VERSION_COMPATIBLE(SIEVE_MAKE_VERSION(0, 2, 0), SIEVE_MAKE_VERSION(0, 3, 0)));
    EXPECT_FALSE(SIEVE_VERSION_COMPATIBLE(SIEVE_MAKE_VERSION(0, 3, 0), SIEVE_MAKE_VERSION(0, 2, 0)));
    EXPECT_TRUE(SIEVE_VERSION_COMPATIBLE(SIEVE_MAKE_VERSION(1, 2, 0), SIEVE_MAKE_VERSION(1, 4, 1)));
    EXPECT_FALSE(SIEVE_VERSION_COMPATIBLE(SIEVE_MAKE_VERSION(1, 4, 0), SIEVE_MAKE_VERSION(1, 2, 0)));
    EXPECT_FALSE(SIEVE_VERSION_COMPATIBLE(SIEVE_MAKE_VERSION(1, 0, 0), SIEVE_MAKE_VERSION(2, 0, 0)));
}

TEST_F(OneVersion, Cli) {
    const sieve_test::Proc v = sieve("--version");
    ASSERT_EQ(v.code, 0) << v.err;
    EXPECT_EQ(v.out, "sieve " + kVersion + "\n");
    const sieve_test::Proc d = sieve("devices --json");
    ASSERT_EQ(d.code, 0) << d.err;
    EXPECT_EQ(parse(d.out).value("library_version", ""), kVersion);
}

TEST_F(OneVersion, BenchJson) {
    const sieve_test::Proc b = sieve("bench --suite tiny --tokens 3 --warmup 1 --profile-tokens 1 "
                                     "--calibration-iterations 3 --twin-budget 0.2 --case greedy --device cpu --json");
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_EQ(parse(b.out).value("library_version", ""), kVersion);
}

TEST_F(OneVersion, PackageFiles) {
    const std::string build = SIEVE_BUILD_DIR;
    const std::string config = sieve_test::read_text(build + "/SieveConfigVersion.cmake");
    EXPECT_NE(config.find("set(PACKAGE_VERSION \"" + kVersion + "\")"), std::string::npos)
        << "SieveConfigVersion.cmake:\n" << config.substr(0, 600);
    const std::string pc = sieve_test::read_text(build + "/sieve.pc");
    EXPECT_NE(pc.find("\nVersion: " + kVersion + "\n"), std::string::npos) << "sieve.pc:\n" << pc;
}

TEST_F(OneVersion, Readme) {
    const std::string readme = sieve_test::read_text(std::string(SIEVE_SOURCE_DIR) + "/README.md");
    EXPECT_NE(readme.find("**Status (v" + kVersion + ").**"), std::string::npos)
        << "README.md's status line does not name v" << kVersion;
}

} // namespace
