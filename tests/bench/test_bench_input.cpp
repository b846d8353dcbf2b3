// `sieve bench --input device` (logits in a device-local buffer of the bench's
// own Vulkan device, sieve_sample_vulkan), the run's input in the JSON, the
// GPU time per call, the submit floor, the estimate under the gpu profile,
// and the groups whose cases alternate. No timing is asserted.
#include "bench_runner.hpp"
#include "bench_schema_validator.hpp"
#include "cli_process.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace {

using nlohmann::json;

const std::string kTiny = "bench --suite tiny --tokens 3 --warmup 1 --profile-tokens 1 --calibration-iterations 3 --twin-budget 0.2";

class BenchInput : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_bench_input_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    sieve_test::Proc sieve(const std::string& args) const { return sieve_test::run_program(SIEVE_CLI_PATH, args, dir_); }
    static json parse(const std::string& text) {
        json doc = json::parse(text, nullptr, false);
        EXPECT_FALSE(doc.is_discarded()) << "not JSON: " << text.substr(0, 400);
        return doc;
    }
    static void expect_valid(const json& doc) {
        const json schema = json::parse(sieve_test::read_text(std::string(SIEVE_SOURCE_DIR) + "/docs/bench-schema.json"));
        for (const auto& e : sieve_test::SchemaValidator(schema).validate(doc)) ADD_FAILURE() << "schema: " << e;
    }
    std::filesystem::path dir_;
};

// Sets an environment variable for the programs a test starts, and back.
using sieve_test::ScopedEnv;

TEST_F(BenchInput, DeviceInputMeasuresEveryCaseFromADeviceBufferAndFollowsTheSchema) {
    const sieve_test::Proc r = sieve(kTiny + " --input device --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json doc = parse(r.out);
    expect_valid(doc);
    EXPECT_EQ(doc["input"], "device");
    EXPECT_EQ(doc["settings"]["input"], "device");
    ASSERT_FALSE(doc["cases"].empty());
    for (const json& c : doc["cases"]) {
        EXPECT_EQ(c["input"], "device") << c["name"];
        ASSERT_EQ(c["status"], "ok") << c["name"] << ": " << c.value("message", "");
        EXPECT_GT(c["tokens"].get<int>(), 0);
        EXPECT_EQ(c["steady_recordings"], 0) << c["name"];
        EXPECT_EQ(c["steady_allocations"], 0) << c["name"];
        ASSERT_TRUE(c["gpu_us"].is_number()) << c["name"];
        double sum = 0;
        for (const json& s : c["stages"]) sum += s["gpu_us"].get<double>();
        EXPECT_GE(c["gpu_us"].get<double>(), 0.0);
        EXPECT_LE(c["gpu_us"].get<double>(), sum + 0.01) << "one profiled call: its sum";
        ASSERT_TRUE(c["submit_us"].is_number());
        EXPECT_DOUBLE_EQ(c["submit_us"].get<double>(), c["calibration"]["submit_us"].get<double>());
    }
}

TEST_F(BenchInput, HostIsTheDefaultInput) {
    const sieve_test::Proc r = sieve(kTiny + " --case greedy --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json doc = parse(r.out);
    expect_valid(doc);
    EXPECT_EQ(doc["input"], "host");
    for (const json& c : doc["cases"]) EXPECT_EQ(c["input"], "host");
}

TEST_F(BenchInput, DeviceInputOnTheCpuBackendIsUnsupportedAndTheRunGoesOn) {
    const sieve_test::Proc r = sieve(kTiny + " --device cpu --input device --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json doc = parse(r.out);
    expect_valid(doc);
    ASSERT_EQ(doc["cases"].size(), 5u);  // every case of the tiny suite is reported
    for (const json& c : doc["cases"]) {
        EXPECT_EQ(c["status"], "unsupported") << c["name"];
        EXPECT_NE(c.value("message", "").find("needs a Vulkan device"), std::string::npos) << c.value("message", "");
    }
    const sieve_test::Proc table = sieve(kTiny + " --device cpu --input device --case greedy");
    EXPECT_EQ(table.code, 0);
    EXPECT_NE(table.out.find("unsupported: --input device needs a Vulkan device"), std::string::npos) << table.out;
}

TEST_F(BenchInput, UnknownInputIsAUsageError) {
    const sieve_test::Proc r = sieve(kTiny + " --input gpu");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--input"), std::string::npos) << r.err;
}

TEST_F(BenchInput, TheEstimateIsPrintedUnderTheGpuProfileOnly) {
    {
        ScopedEnv gpu("SIEVE_PROFILE", "gpu");
        const sieve_test::Proc r = sieve(kTiny + " --case default --json");
        ASSERT_EQ(r.code, 0) << r.err;
        const json doc = parse(r.out);
        expect_valid(doc);
        for (const json& c : doc["cases"]) {
            ASSERT_TRUE(c["est_us"].is_number()) << c["name"];
            double sum = 0;
            for (const json& e : c["estimate"]) sum += e["est_us"].get<double>();
            EXPECT_NEAR(c["est_us"].get<double>(), sum, 0.01 * c["estimate"].size());
            ASSERT_EQ(c["estimate"].size(), c["stages"].size()) << c["name"];
            for (const json& s : c["stages"]) EXPECT_TRUE(s.contains("est_us")) << c["name"] << " " << s["stage"];
        }
        const sieve_test::Proc table = sieve(kTiny + " --case default");
        EXPECT_NE(table.out.find("(est "), std::string::npos) << table.out;
        EXPECT_NE(table.out.find("ESTIMATED"), std::string::npos);
    }
    // Lavapipe's own plan is a CPU device's: no estimate.
    const sieve_test::Proc r = sieve(kTiny + " --case default --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json doc = parse(r.out);
    const bool cpu_device = doc["device_type"] == "cpu";
    for (const json& c : doc["cases"])
        if (cpu_device) {
            EXPECT_TRUE(c["est_us"].is_null()) << c["name"];
            EXPECT_TRUE(c["estimate"].empty());
        }
}

TEST(BenchGroups, CasesAlternateInGroupsBoundedByCountAndBytesAndAVerificationCaseRunsAlone) {
    using sieve_cli::BenchCase;
    auto make = [](int32_t vocab, int32_t rows, const char* verify = "") {
        BenchCase c;
        c.name = std::to_string(vocab) + "x" + std::to_string(rows) + verify;
        c.vocab = vocab;
        c.rows = rows;
        c.verify = verify;
        return c;
    };
    std::vector<BenchCase> cases;
    for (size_t i = 0; i < sieve_cli::kGroupCases + 2; ++i) cases.push_back(make(1000, 1));
    auto groups = sieve_cli::case_groups(cases);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].size(), sieve_cli::kGroupCases);
    EXPECT_EQ(groups[1].size(), 2u);

    // 262144 x 256 floats are 256 MiB: alone in a group.
    cases = {make(1000, 1), make(262144, 256), make(1000, 1), make(151936, 1, "match"), make(1000, 1)};
    groups = sieve_cli::case_groups(cases);
    ASSERT_EQ(groups.size(), 5u);
    for (const auto& g : groups) EXPECT_EQ(g.size(), 1u);
    cases = {make(1000, 1), make(1000, 2)};
    EXPECT_EQ(sieve_cli::case_groups(cases).size(), 1u);
}

} // namespace
