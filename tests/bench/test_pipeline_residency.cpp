// tools/pipeline_stats/residency.py: the workgroups resident an SM of each
// pipeline the statistics lines describe (SIEVE_PIPELINE_STATS), by the
// occupancy rules of an H100/H200, beside the residency the estimate assumes.
// The lines here are written as an NVIDIA driver's would read (its register
// count; lavapipe gives none, tests/gpu/test_pipeline_stats.cpp).
#include "cli_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

const std::string kTool = std::string(SIEVE_SOURCE_DIR) + "/tools/pipeline_stats/residency.py";

class Residency : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 on this machine";
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_residency_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        if (!dir_.empty()) std::filesystem::remove_all(dir_);
    }
    // A line of a pipeline with `statistics` (JSON object text) on an SM of 64 warps.
    static std::string line(const char* stage, const char* shader, int wg, double assumed, const std::string& statistics) {
        return std::string(R"({"device":"NVIDIA H200","shader":")") + shader + R"(","stage":")" + stage +
               R"(","workgroup":)" + std::to_string(wg) + R"(,"capacity":4096,"specialization":{"chain_ops":0},)" +
               R"("assumed_resident_per_unit":)" + std::to_string(assumed) +
               R"(,"warps_per_unit":64,"executables":[{"name":"Compute Shader","statistics":)" + statistics + "}]}";
    }
    nlohmann::json rows_of(const std::string& text) const {
        const std::string path = (dir_ / "pipelines.jsonl").string();
        std::ofstream(path) << text;
        const sieve_test::Proc r = sieve_test::run_program("python3", "'" + kTool + "' --json '" + path + "'", dir_);
        EXPECT_EQ(r.code, 0) << r.err;
        const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
        EXPECT_FALSE(doc.is_discarded()) << r.out;
        return doc;
    }
    std::filesystem::path dir_;
};

TEST_F(Residency, RegistersLimitAWorkgroupOf256ByWholeWarpsOfRegisters) {
    // 128 registers: 4096 a warp, 16 warps of 65536, two workgroups of 8
    // warps; 64: four; 255 (rounded up to 256): one; 33 (1056 a warp,
    // allocated as 1280: 51 warps, where 1056 would give 62): six, under
    // the 8 the SM's 64 warps allow.
    const auto rows = rows_of(line("collect_plain", "collect_fused", 256, 2, R"({"Register Count":128})") + "\n" +
                              line("history", "history", 256, 4, R"({"Register Count":64,"Binary Size":900})") + "\n" +
                              line("wide_gather", "wide_gather", 256, 1, R"({"Register Count":255})") + "\n" +
                              line("gather", "gather", 256, 4, R"({"Register Count":33})") + "\n");
    ASSERT_EQ(rows.size(), 4u);
    const int want[] = {2, 4, 1, 6};
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(rows[i].at("resident"), want[i]) << rows[i].dump();
        EXPECT_EQ(rows[i].at("limited_by"), "registers") << rows[i].dump();
        EXPECT_EQ(rows[i].at("limits").at("warps"), 8) << rows[i].dump();
        // No statistic states shared memory: an upper bound.
        EXPECT_EQ(rows[i].at("upper_bound"), true);
    }
    EXPECT_EQ(rows[0].at("verdict"), "the known limits allow what is assumed");
    EXPECT_EQ(rows[2].at("verdict"), "the known limits allow what is assumed");
    EXPECT_EQ(rows[3].at("verdict"), "the known limits allow what is assumed");
    // 6 > 4 assumed is only a bound; 2 of an assumed 4 is a finding.
    const auto fewer = rows_of(line("row_stats", "row_stats", 256, 4, R"({"Register Count":128})") + "\n");
    EXPECT_EQ(fewer.at(0).at("verdict"), "fewer than assumed");
}

TEST_F(Residency, AStatedSharedMemoryLimitsItTooAndMakesItExact) {
    // 38000 bytes and 1 KB reserved: 5 in 228 KB (6 without the reserve),
    // fewer than the registers' 6.
    const auto rows = rows_of(
        line("wide_gather", "wide_gather", 256, 1, R"({"Register Count":40,"Shared Memory Size":38000})") + "\n");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].at("resident"), 5);
    EXPECT_EQ(rows[0].at("limited_by"), "shared");
    EXPECT_EQ(rows[0].at("upper_bound"), false);
    EXPECT_EQ(rows[0].at("verdict"), "more than assumed");
}

TEST_F(Residency, RepeatedPipelinesCountOnceAndLinesWithoutStatisticsSayWhy) {
    const std::string nv = line("gather", "gather", 256, 4, R"({"Register Count":32})");
    const std::string lavapipe =
        R"({"device":"llvmpipe","shader":"gather","stage":"gather","workgroup":64,"capacity":2048,)"
        R"("specialization":{"chain_ops":0},"assumed_resident_per_unit":4,"warps_per_unit":null,)"
        R"("executables":null,"absent":"the driver does not offer it"})";
    const std::string amd = line("gather", "gather_amd", 256, 4, R"({"VGPRs":32})");
    const auto rows = rows_of(nv + "\n" + nv + "\n" + lavapipe + "\n" + amd + "\n");
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[1].at("absent"), "the driver does not offer it");
    EXPECT_FALSE(rows[1].contains("resident"));
    EXPECT_NE(rows[2].at("absent").get<std::string>().find("no register count"), std::string::npos);
}

TEST_F(Residency, AFileItCannotReadExitsTwo) {
    const std::string missing = (dir_ / "none.jsonl").string();
    EXPECT_EQ(sieve_test::run_program("python3", "'" + kTool + "' '" + missing + "'", dir_).code, 2);
    const std::string bad = (dir_ / "bad.jsonl").string();
    std::ofstream(bad) << "{not json\n";
    EXPECT_EQ(sieve_test::run_program("python3", "'" + kTool + "' '" + bad + "'", dir_).code, 2);
}

} // namespace
