// Issue 35: `sieve bench --compare A.json B.json` says what differs between
// the two runs (device, backend, profile, settings) and carries the warnings
// each run recorded; --report with --compare is refused, --json-out writes
// the comparison.
#include "cli_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <fstream>
#include <string>

namespace {

using nlohmann::json;
using sieve_test::Proc;

using BenchCompare = sieve_test::CliTest;

json run_doc(const std::string& device, const std::string& backend, const std::string& profile, int tokens,
             const json& warnings) {
    return {{"device", device},
            {"backend", backend},
            {"profile", profile},
            {"library_version", "0.3.0"},
            {"settings", {{"suite", "tiny"}, {"tokens", tokens}, {"warmup", 10}}},
            {"warnings", warnings},
            {"cases", {{{"name", "greedy/zipf/v4096/b1"}, {"status", "ok"}, {"median_us", 100.0}}}}};
}

TEST_F(BenchCompare, SaysWhatDiffersAndCarriesTheRunsWarnings) {
    std::ofstream(path("a.json")) << run_doc("llvmpipe", "vulkan", "device", 200, {"the host was busy"}).dump();
    std::ofstream(path("b.json")) << run_doc("cpu (CPU twin)", "cpu", "gpu", 50, {"2 case(s) with p90 above 1.5 x"}).dump();
    const std::string files = "bench --compare '" + path("a.json") + "' '" + path("b.json") + "'";
    Proc j = sieve(files + " --json");
    ASSERT_EQ(j.code, 0) << describe(j);
    const json doc = parse(j);
    std::set<std::string> fields;
    for (const json& d : doc["differences"]) fields.insert(d["field"].get<std::string>());
    EXPECT_EQ(fields, (std::set<std::string>{"device", "backend", "profile", "settings.tokens"}));
    for (const json& d : doc["differences"])
        if (d["field"] == "settings.tokens") {
            EXPECT_EQ(d["a"], 200);
            EXPECT_EQ(d["b"], 50);
        }
    const std::string warnings = doc["warnings"].dump();
    EXPECT_NE(warnings.find("A: the host was busy"), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("B: 2 case(s) with p90"), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("the runs differ in device, backend, profile, settings.tokens"), std::string::npos) << warnings;
    EXPECT_NE(j.err.find("warning: A: the host was busy"), std::string::npos) << j.err;
    EXPECT_EQ(doc["cases"][0]["ratio"], 1.0);

    Proc t = sieve(files);
    ASSERT_EQ(t.code, 0) << describe(t);
    EXPECT_NE(t.out.find("differs: device: A 'llvmpipe', B 'cpu (CPU twin)'"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("differs: settings.tokens: A 200, B 50"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("warning: A: the host was busy"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("warning: B: 2 case(s) with p90"), std::string::npos) << t.out;

    // A run compared with itself: nothing differs, its warnings are still carried.
    Proc same = sieve("bench --compare '" + path("a.json") + "' '" + path("a.json") + "' --json");
    ASSERT_EQ(same.code, 0) << describe(same);
    EXPECT_EQ(parse(same)["differences"], json::array());
    EXPECT_EQ(parse(same)["warnings"], json({"A: the host was busy", "B: the host was busy"}));
}

TEST_F(BenchCompare, ReportIsRefusedAndJsonOutWritesTheComparison) {
    std::ofstream(path("a.json")) << run_doc("x", "vulkan", "device", 200, json::array()).dump();
    const std::string files = "bench --compare '" + path("a.json") + "' '" + path("a.json") + "'";
    Proc report = sieve(files + " --report '" + path("cmp.html") + "'");
    EXPECT_EQ(report.code, 2) << describe(report);
    EXPECT_NE(report.err.find("--report"), std::string::npos) << report.err;
    EXPECT_NE(report.err.find("--compare"), std::string::npos) << report.err;
    EXPECT_FALSE(std::filesystem::exists(path("cmp.html")));
    Proc out = sieve(files + " --json-out '" + path("cmp.json") + "'");
    ASSERT_EQ(out.code, 0) << describe(out);
    const json doc = json::parse(sieve_test::read_text(path("cmp.json")));
    EXPECT_EQ(doc["matched"], 1);
    EXPECT_EQ(doc["geomean_ratio"], 1.0);
    EXPECT_TRUE(doc.contains("differences"));
}

} // namespace
