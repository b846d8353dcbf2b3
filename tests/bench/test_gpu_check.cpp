// scripts/gpu_check.sh, run as a person with a GPU would (from an existing
// build, --no-setup): it refuses a machine whose only Vulkan devices are CPU
// implementations with its own exit status, and, with a CPU device standing
// in (SIEVE_GPU_CHECK_ALLOW_CPU=1, a few tests and one bench case), writes
// one report that parses and names the device, every test and the bench.
#include "cli_process.hpp"

#include <sieve/sieve.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string script() { return std::string(SIEVE_SOURCE_DIR) + "/scripts/gpu_check.sh"; }

bool only_cpu_devices() {
    for (const sieve_device_info& d : sieve::devices())
        if (d.type != SIEVE_DEVICE_CPU) return false;
    return true;
}

fs::path temp_dir(const char* name) {
    fs::path dir = fs::temp_directory_path() / (std::string("sieve_gpu_check_") + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// The check from this build with lavapipe standing in for a GPU: two Philox
// tests and the steady-state test, one bench case, the verify case given,
// 10 tokens; `extra`: more arguments; `env`: more variables (NAME=VALUE ...).
sieve_test::Proc run_check_on_cpu(const fs::path& dir, const fs::path& report, const std::string& verify_case,
                                  const std::string& extra = "", const std::string& env = "") {
    return sieve_test::run_program(
        "/usr/bin/env", env + " SIEVE_GPU_CHECK_ALLOW_CPU=1 bash '" + script() + "' --no-setup --build-dir '" +
                            std::string(SIEVE_BUILD_DIR) + "' --out '" + report.string() + "' " + extra +
                            " --filter 'PhiloxGpu.*:GpuSteadyState.NoRecordingNoAllocationPerToken'"
                            " --bench-case default/zipf/v32000/b1 --verify-case " + verify_case + " --tokens 10",
        dir);
}

TEST(GpuCheck, RefusesAMachineWithoutAGpu) {
    if (!only_cpu_devices()) GTEST_SKIP() << "this machine has a GPU: the refusal cannot happen here";
    const fs::path dir = temp_dir("refuse");
    const auto r = sieve_test::run_program(
        "/usr/bin/env", "-u SIEVE_GPU_CHECK_ALLOW_CPU bash '" + script() + "' --no-setup --build-dir '" +
                            std::string(SIEVE_BUILD_DIR) + "' --out '" + (dir / "report.json").string() + "'",
        dir);
    EXPECT_EQ(r.code, 5) << r.out << r.err;
    EXPECT_NE(r.err.find("no GPU"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "report.json"));
}

TEST(GpuCheck, UnknownArgumentIsAUsageError) {
    const fs::path dir = temp_dir("usage");
    const auto r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --no-setup --frobnicate", dir);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
}

TEST(GpuCheck, WritesOneReportWithDeviceTestsAndBench) {
    const fs::path dir = temp_dir("report");
    const fs::path report = dir / "report.json";
    const auto r = run_check_on_cpu(dir, report, "verify_match_d4/default/peaked/v151936/b");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    EXPECT_EQ(doc.at("schema"), "sieve-gpu-check/1");
    const int index = doc.at("device_index").get<int>();
    const auto& device = doc.at("devices").at("devices").at(index);
    for (const char* key : {"name", "type", "driver", "api_version", "subgroup_size", "features"})
        EXPECT_TRUE(device.contains(key)) << key;
    EXPECT_EQ(doc.at("tests_exit_status"), 0);
    const auto& tests = doc.at("tests");
    EXPECT_GE(tests.at("tests").get<int>(), 3);
    EXPECT_EQ(tests.at("failures").get<int>(), 0);
    bool named = false;
    for (const auto& suite : tests.at("testsuites"))
        for (const auto& t : suite.at("testsuite"))
            named = named || t.at("name") == "NoRecordingNoAllocationPerToken";
    EXPECT_TRUE(named) << "each test is in the report by name";
    EXPECT_EQ(doc.at("bench_exit_status"), 0);
    ASSERT_EQ(doc.at("bench").at("cases").size(), 1u);
    EXPECT_EQ(doc.at("bench").at("cases").at(0).at("name"), "default/zipf/v32000/b1");
    // The same case with the logits already in device memory, at 1 row and 64.
    EXPECT_EQ(doc.at("bench_device_exit_status"), 0);
    ASSERT_EQ(doc.at("bench_device").at("cases").size(), 1u);
    EXPECT_EQ(doc.at("bench_device").at("input"), "device");
    EXPECT_EQ(doc.at("bench_device_b64").at("cases").at(0).at("name"), "default/zipf/v32000/b64");
    // ... issue 34's batch shape, the default chain at 32000 x 256 rows ...
    EXPECT_EQ(doc.at("bench_device_b256_exit_status"), 0);
    ASSERT_EQ(doc.at("bench_device_b256").at("cases").size(), 1u);
    EXPECT_EQ(doc.at("bench_device_b256").at("cases").at(0).at("name"), "default/zipf/v32000/b256");
    EXPECT_EQ(doc.at("bench_device_b256").at("cases").at(0).at("status"), "ok");
    EXPECT_EQ(doc.at("bench_device_b256").at("input"), "device");
    // ... and on flat rows (the full suite's case of that name).
    EXPECT_EQ(doc.at("bench_device_flat_exit_status"), 0);
    ASSERT_EQ(doc.at("bench_device_flat").at("cases").size(), 1u);
    EXPECT_EQ(doc.at("bench_device_flat").at("cases").at(0).at("name"), "default/flat/v32000/b1");
    EXPECT_EQ(doc.at("bench_device_flat").at("input"), "device");
    // The one-row case again, the host waiting asleep and polling from the submit.
    EXPECT_EQ(doc.at("bench_wait_exit_status"), 0);
    for (const char* wait : {"bench_wait_sleep", "bench_wait_poll"}) {
        ASSERT_EQ(doc.at(wait).at("cases").size(), 1u) << wait;
        EXPECT_EQ(doc.at(wait).at("cases").at(0).at("name"), "default/zipf/v32000/b1") << wait;
        EXPECT_EQ(doc.at(wait).at("input"), "device") << wait;
    }
    // The benches ran without the validation layer, which this test's own
    // environment turns on (it would time itself: the bench warns of it).
    for (const char* bench : {"bench", "bench_device", "bench_device_b64", "bench_device_b256", "bench_device_flat",
                              "bench_wait_sleep", "bench_wait_poll", "verify_bench"})
        for (const auto& w : doc.at(bench).at("warnings"))
            EXPECT_EQ(w.get<std::string>().find("validation layers on"), std::string::npos) << bench << ": " << w;
    // No nvidia-smi (a CI machine): no clocks.
    if (std::system("command -v nvidia-smi > /dev/null 2>&1") != 0) {
        EXPECT_TRUE(doc.at("clocks").is_null()) << doc.at("clocks").dump();
    }
    // Each pipeline the one-row and 64-row cases build, with its residency
    // an SM where the driver gives its statistics, else why not.
    EXPECT_EQ(doc.at("pipeline_stats_exit_status"), 0);
    const auto& pipelines = doc.at("pipeline_stats");
    ASSERT_TRUE(pipelines.is_array()) << pipelines.dump();
    bool collect = false;
    for (const auto& p : pipelines) {
        collect = collect || p.at("stage") == "collect_plain";
        EXPECT_TRUE(p.contains("resident") || p.contains("absent")) << p.dump();
    }
    EXPECT_TRUE(collect) << "the default chain's collect pass: " << pipelines.dump();
    // The PyTorch peer: figures where torch has CUDA, else one line saying why not.
    EXPECT_EQ(doc.at("torch_exit_status"), 0);
    ASSERT_FALSE(doc.at("torch").at("lines").empty());
    if (doc.at("torch").at("lines").at(0).value("status", "") == "skipped")
        std::printf("the PyTorch peer was skipped: %s\n",
                    doc.at("torch").at("lines").at(0).value("reason", "").c_str());
    // No phase-clock build given: the part says so and the report holds null.
    EXPECT_EQ(doc.at("phases_exit_status"), 0);
    EXPECT_TRUE(doc.at("phases").is_null());
    EXPECT_NE(r.out.find("no phase-clock build: skipped"), std::string::npos) << r.out;
    // No baseline build given: no A/B, null in the report.
    EXPECT_EQ(doc.at("ab_bench_exit_status"), 0);
    EXPECT_TRUE(doc.at("ab_bench").is_null());
    EXPECT_NE(r.out.find("no baseline build: skipped"), std::string::npos) << r.out;
    EXPECT_EQ(doc.at("verify_bench_exit_status"), 0);
    // The case matches as a substring: 1 and 16 sequences, verified as an
    // engine does, from device-local buffers.
    const auto& verify = doc.at("verify_bench").at("cases");
    ASSERT_EQ(verify.size(), 2u);
    for (const auto& c : verify) {
        EXPECT_EQ(c.at("name").get<std::string>().rfind("verify_match_d4/default/peaked/v151936/b", 0), 0u);
        EXPECT_EQ(c.at("status"), "ok") << c;
        EXPECT_EQ(c.at("input"), "device");
        EXPECT_TRUE(c.contains("verify"));
    }
}

// --skip leaves parts out: their report entries are null, their wall time 0,
// and the run says so; the parts left run as ever.
TEST(GpuCheck, SkippedPartsAreNullInTheReport) {
    const fs::path dir = temp_dir("skip");
    const fs::path report = dir / "report.json";
    const auto r = run_check_on_cpu(dir, report, "verify_match_d4/default/peaked/v151936/b1",
                                    "--skip tests,bench,verify_bench,wait_bench,ab_bench,pipeline_stats,torch,phases");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    for (const char* part :
         {"tests", "bench", "verify_bench", "bench_wait_sleep", "bench_wait_poll", "pipeline_stats", "phases"})
        EXPECT_TRUE(doc.at(part).is_null()) << part;
    for (const char* part :
         {"tests", "bench", "verify_bench", "wait_bench", "ab_bench", "pipeline_stats", "torch", "phases"})
        EXPECT_NE(r.out.find(std::string("== ") + part + ": skipped (--skip)"), std::string::npos) << part;
    EXPECT_EQ(doc.at("torch").at("lines").at(0).at("reason"), "--skip torch");
    EXPECT_EQ(doc.at("bench_device").at("cases").at(0).at("name"), "default/zipf/v32000/b1");
    EXPECT_EQ(doc.at("bench_device_b64").at("cases").at(0).at("name"), "default/zipf/v32000/b64");
}

// Where nvidia-smi is there (here a stand-in that prints its CSV lines, every
// 0.1 s, an SM clock of 1755 MHz), the report holds the GPU's clocks through
// each part, and the log a line a part.
TEST(GpuCheck, TheClocksThroughEachPartWhereNvidiaSmiIsThere) {
    const fs::path dir = temp_dir("clocks");
    const fs::path bin = dir / "bin";
    fs::create_directories(bin);
    {
        std::ofstream smi(bin / "nvidia-smi");
        smi << "#!/bin/bash\n"
               "while true; do echo \"$(date '+%Y/%m/%d %H:%M:%S.%3N'), 0, 1755, 2619, P0\"; sleep 0.1; done\n";
    }
    fs::permissions(bin / "nvidia-smi", fs::perms::owner_all, fs::perm_options::add);
    const fs::path report = dir / "report.json";
    const char* path = std::getenv("PATH");
    const auto r = run_check_on_cpu(dir, report, "verify_match_d4/default/peaked/v151936/b1",
                                    "--skip tests,verify_bench,device_bench,wait_bench,ab_bench,pipeline_stats,torch,phases",
                                    "PATH='" + bin.string() + ":" + (path ? path : "/usr/bin:/bin") + "'");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    const auto& clocks = doc.at("clocks");
    ASSERT_TRUE(clocks.is_object()) << clocks.dump();
    EXPECT_EQ(clocks.at("source"), "nvidia-smi");
    const auto& bench = clocks.at("parts").at("bench");
    ASSERT_EQ(bench.size(), 1u) << bench.dump();
    EXPECT_EQ(bench.at(0).at("gpu"), 0);
    EXPECT_GE(bench.at(0).at("samples").get<int>(), 2);
    EXPECT_EQ(bench.at(0).at("sm_mhz").at("median").get<double>(), 1755.0);
    EXPECT_EQ(bench.at(0).at("sm_mhz").at("min").get<double>(), 1755.0);
    EXPECT_EQ(bench.at(0).at("mem_mhz_median").get<double>(), 2619.0);
    EXPECT_EQ(bench.at(0).at("pstates"), nlohmann::json::array({"P0"}));
    EXPECT_TRUE(clocks.at("parts").contains("devices"));
    EXPECT_NE(r.out.find("== clocks: bench: GPU 0 SM 1755 MHz median (1755-1755)"), std::string::npos) << r.out;
}

// The caller's GoogleTest sharding (this test binary's, run in shards) does
// not reach the check's tests: all three run.
TEST(GpuCheck, TheCallersShardingLeavesItsTestsWhole) {
    const fs::path dir = temp_dir("outer_shards");
    const fs::path report = dir / "report.json";
    const auto r = run_check_on_cpu(dir, report, "verify_match_d4/default/peaked/v151936/b1",
                                    "--skip bench,verify_bench,device_bench,wait_bench,ab_bench,pipeline_stats,torch,phases",
                                    "GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=1");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    EXPECT_EQ(doc.at("tests").at("tests").get<int>(), 3);
}

TEST(GpuCheck, SkipNamesOnlyItsParts) {
    const fs::path dir = temp_dir("skip_unknown");
    const auto r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --no-setup --skip tests,benches", dir);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("unknown part 'benches'"), std::string::npos) << r.err;
}

// --baseline-build DIR: the engine of another build against this one's, the
// same CLI with each libsieve in turn (here the build against itself), three
// alternating rounds of the one-row case from device memory, each round's
// comparison in the report with the baseline's commit.
TEST(GpuCheck, ABaselineBuildIsComparedInAlternatingRounds) {
    const fs::path dir = temp_dir("baseline");
    const fs::path report = dir / "report.json";
    const auto r = run_check_on_cpu(dir, report, "verify_match_d4/default/peaked/v151936/b1",
                                    "--skip tests,bench,verify_bench,device_bench,wait_bench,pipeline_stats,torch,phases "
                                    "--baseline-build '" + std::string(SIEVE_BUILD_DIR) + "'");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    EXPECT_EQ(doc.at("ab_bench_exit_status"), 0);
    const auto& ab = doc.at("ab_bench");
    EXPECT_EQ(ab.at("baseline_commit").get<std::string>().size(), 40u) << ab.at("baseline_commit");
    ASSERT_EQ(ab.at("rounds").size(), 3u);
    for (const auto& round : ab.at("rounds")) {
        ASSERT_EQ(round.at("cases").size(), 1u) << round.dump();
        const auto& c = round.at("cases").at(0);
        EXPECT_EQ(c.at("name"), "default/zipf/v32000/b1");
        EXPECT_GT(c.at("ratio").get<double>(), 0.0) << c.dump();
    }
    EXPECT_NE(r.out.find("round 3: baseline "), std::string::npos) << r.out;
    EXPECT_TRUE(doc.at("seconds").contains("ab_bench"));
}

// The baseline's side runs on the baseline's library, not this build's: a
// library there that does not load fails the A/B (exit 1, its status in the
// report) while the rest of the check runs.
TEST(GpuCheck, TheBaselineSideLoadsTheBaselinesLibrary) {
    const fs::path dir = temp_dir("baseline_broken");
    const fs::path broken = dir / "broken-build";
    fs::create_directories(broken / "engine");
    for (const auto& e : fs::directory_iterator(fs::path(SIEVE_BUILD_DIR) / "engine"))
        if (e.path().filename().string().rfind("libsieve.so.", 0) == 0)
            std::ofstream(broken / "engine" / e.path().filename()) << "not a library";
    const fs::path report = dir / "report.json";
    const auto r = run_check_on_cpu(dir, report, "verify_match_d4/default/peaked/v151936/b1",
                                    "--skip tests,bench,verify_bench,device_bench,wait_bench,pipeline_stats,torch,phases "
                                    "--baseline-build '" + broken.string() + "'");
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    EXPECT_EQ(doc.at("ab_bench_exit_status"), 1);
    EXPECT_EQ(doc.at("ab_bench").at("baseline_commit"), "unknown");  // no CMakeCache.txt to name its checkout
}

// A baseline folder without a libsieve under the CLI's SONAME: refused
// before anything runs, for the check and for a bundle.
TEST(GpuCheck, ABaselineBuildWithoutItsLibraryIsRefused) {
    const fs::path dir = temp_dir("baseline_missing");
    const fs::path empty = dir / "no-build";
    fs::create_directories(empty);
    auto r = sieve_test::run_program("/usr/bin/env", "SIEVE_GPU_CHECK_ALLOW_CPU=1 bash '" + script() +
                                                         "' --no-setup --build-dir '" + std::string(SIEVE_BUILD_DIR) +
                                                         "' --out '" + (dir / "report.json").string() +
                                                         "' --baseline-build '" + empty.string() + "'",
                                     dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("no-build/engine/libsieve.so"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "report.json"));
    const fs::path target = dir / "target";
    r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --no-setup --build-dir '" +
                                                    std::string(SIEVE_BUILD_DIR) + "' --baseline-build '" +
                                                    empty.string() + "' --bundle '" + target.string() + "'",
                                dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("no-build/engine/libsieve.so"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(target));
}

// --shards N runs the tests in N processes and merges their reports: every
// test once, the counts summed.
TEST(GpuCheck, ShardedTestsMergeIntoOneReport) {
    if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 on this machine";
    const fs::path dir = temp_dir("sharded");
    const fs::path report = dir / "report.json";
    const auto r = run_check_on_cpu(dir, report, "verify_match_d4/default/peaked/v151936/b1", "--shards 2");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    EXPECT_EQ(doc.at("tests_exit_status"), 0);
    const auto& tests = doc.at("tests");
    EXPECT_EQ(tests.at("shards").get<int>(), 2);
    EXPECT_EQ(tests.at("failures").get<int>(), 0);
    std::vector<std::string> names;
    for (const auto& suite : tests.at("testsuites"))
        for (const auto& t : suite.at("testsuite")) names.push_back(suite.at("name").get<std::string>() + "." + t.at("name").get<std::string>());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "a test ran in two shards";
    EXPECT_EQ(static_cast<int>(names.size()), tests.at("tests").get<int>());
    EXPECT_EQ(names.size(), 3u) << "PhiloxGpu's two tests and the steady-state test";
}

// --shards takes a whole number of processes.
TEST(GpuCheck, ShardsAreAWholeNumber) {
    const fs::path dir = temp_dir("shards_usage");
    for (const char* bad : {"0", "x", "-2", "100"}) {
        const auto r = sieve_test::run_program("/usr/bin/env",
                                               "bash '" + script() + "' --no-setup --shards " + bad, dir);
        EXPECT_EQ(r.code, 2) << bad;
        EXPECT_NE(r.err.find("--shards"), std::string::npos) << r.err;
    }
}

// --bundle DIR refuses a directory that holds anything, and writes nothing.
TEST(GpuCheck, BundleRefusesADirectoryThatIsNotEmpty) {
    const fs::path dir = temp_dir("bundle_not_empty");
    const fs::path target = dir / "target";
    fs::create_directories(target);
    { std::ofstream(target / "keep.txt") << "mine"; }
    const auto r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --no-setup --build-dir '" +
                                                               std::string(SIEVE_BUILD_DIR) + "' --bundle '" +
                                                               target.string() + "'",
                                           dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;
    EXPECT_EQ(std::distance(fs::directory_iterator(target), fs::directory_iterator()), 1);
    EXPECT_EQ(sieve_test::read_text((target / "keep.txt").string()), "mine");
}

// --phase-build naming a folder without that build's CLI: usage error before
// anything is written.
TEST(GpuCheck, BundleRefusesAPhaseBuildWithoutItsCli) {
    const fs::path dir = temp_dir("bundle_phase");
    const fs::path target = dir / "target";
    const auto r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --no-setup --build-dir '" +
                                                               std::string(SIEVE_BUILD_DIR) + "' --phase-build '" +
                                                               (dir / "no-phase-build").string() + "' --bundle '" +
                                                               target.string() + "'",
                                           dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("no-phase-build/cli/sieve is missing"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(target));
}

// A path that cannot be made a directory (below a plain file, even as root),
// or that is a file: usage error, nothing written.
TEST(GpuCheck, BundleRefusesAPathItCannotWrite) {
    const fs::path dir = temp_dir("bundle_unwritable");
    { std::ofstream(dir / "file") << "mine"; }
    for (const fs::path& target : {dir / "file" / "bundle", dir / "file"}) {
        const auto r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --no-setup --build-dir '" +
                                                                   std::string(SIEVE_BUILD_DIR) + "' --bundle '" +
                                                                   target.string() + "'",
                                               dir);
        EXPECT_EQ(r.code, 2) << target << r.out << r.err;
        EXPECT_NE(r.err.find("--bundle"), std::string::npos) << r.err;
        EXPECT_EQ(sieve_test::read_text((dir / "file").string()), "mine");
    }
    const auto r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --bundle", dir);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--bundle needs a directory"), std::string::npos) << r.err;
}

// The bundle travels: written from the build, under 30 MB, it runs from
// another directory with nothing of the checkout (its own CLI, test binary,
// libsieve and validation layer), and its report names the build's commit and
// each part's wall time; a baseline build given travels as its libsieve and
// commit, and the bundle's run compares the two engines.
TEST(GpuCheck, BundleRunsWithoutTheCheckout) {
    const fs::path dir = temp_dir("bundle");
    const fs::path bundle = dir / "travel" / "sieve-check";
    auto r = sieve_test::run_program("/usr/bin/env", "bash '" + script() + "' --no-setup --build-dir '" +
                                                         std::string(SIEVE_BUILD_DIR) + "' --baseline-build '" +
                                                         std::string(SIEVE_BUILD_DIR) + "' --bundle '" +
                                                         bundle.string() + "'",
                                     dir);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    uint64_t bytes = 0;
    for (const auto& e : fs::recursive_directory_iterator(bundle))
        if (e.is_regular_file()) bytes += e.file_size();
    EXPECT_LT(bytes, 30ull << 20);
    for (const char* f : {"gpu_check.sh", "BUNDLE", "bin/sieve", "bin/sieve_gpu_tests",
                          "layers/VkLayer_khronos_validation.json", "layers/libVkLayer_khronos_validation.so.gz",
                          "tools/pipeline_stats/residency.py", "baseline/BASELINE"})
        EXPECT_TRUE(fs::exists(bundle / f)) << f;
    bool baseline_lib = false;  // libsieve under its SONAME, compressed
    for (const auto& e : fs::directory_iterator(bundle / "baseline")) {
        const std::string name = e.path().filename().string();
        baseline_lib = baseline_lib || (name.rfind("libsieve.so.", 0) == 0 && e.path().extension() == ".gz");
    }
    EXPECT_TRUE(baseline_lib);
    const fs::path report = dir / "report.json";
    r = sieve_test::run_program(
        "/usr/bin/env", "SIEVE_GPU_CHECK_ALLOW_CPU=1 '" + (bundle / "gpu_check.sh").string() + "' --out '" +
                            report.string() +
                            "' --filter 'PhiloxGpu.*' --bench-case default/zipf/v32000/b1"
                            " --verify-case verify_match_d4/default/peaked/v151936/b1 --tokens 10",
        dir);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(sieve_test::read_text(report.string()));
    EXPECT_EQ(doc.at("bundled"), true);
    EXPECT_EQ(doc.at("commit").get<std::string>().size(), 40u) << doc.at("commit");
    EXPECT_GE(doc.at("tests").at("tests").get<int>(), 1);
    EXPECT_EQ(doc.at("tests").at("failures").get<int>(), 0);
    EXPECT_EQ(doc.at("ab_bench").at("rounds").size(), 3u);
    EXPECT_EQ(doc.at("ab_bench").at("baseline_commit"), doc.at("commit"));
    for (const char* part :
         {"devices", "tests", "bench", "verify_bench", "wait_bench", "ab_bench", "pipeline_stats", "phases"}) {
        EXPECT_TRUE(doc.at("seconds").contains(part)) << part;
        EXPECT_NE(r.out.find(std::string("== ") + part + ": "), std::string::npos) << part << " wall time not printed";
    }
    EXPECT_EQ(doc.at("bench").at("cases").size(), 1u);
}

} // namespace
