// `sieve bench` run as a user would (SIEVE_CLI_PATH): the tiny suite end to end
// so the runner cannot rot, its JSON against docs/bench-schema.json, the HTML
// report, --compare, the suite's contents, and bad input. No timing is asserted.
#include "bench_schema_validator.hpp"
#include "bench_suite.hpp"
#include "cli_process.hpp"
#include "npy.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdlib.h>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

using sieve_test::Proc;
using sieve_test::read_text;

Proc run_sieve(const std::string& args, const std::filesystem::path& dir) {
    return sieve_test::run_program(SIEVE_CLI_PATH, args, dir);
}

// Small and quick: few tokens, one profiled token, few calibration submits.
const std::string kTiny = "bench --suite tiny --tokens 3 --warmup 1 --profile-tokens 1 --calibration-iterations 3 --twin-budget 0.2";

class Bench : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_bench_XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    Proc sieve(const std::string& args) const { return run_sieve(args, dir_); }

    static json parse(const std::string& text) {
        json doc = json::parse(text, nullptr, false);
        EXPECT_FALSE(doc.is_discarded()) << "not JSON: " << text.substr(0, 400);
        return doc;
    }

    static sieve_test::SchemaValidator validator() {
        const std::string text = read_text(std::string(SIEVE_SOURCE_DIR) + "/docs/bench-schema.json");
        json schema = json::parse(text, nullptr, false);
        EXPECT_FALSE(schema.is_discarded()) << "docs/bench-schema.json is not JSON";
        return sieve_test::SchemaValidator(schema);
    }

    static void expect_valid(const json& doc) {
        const auto errors = validator().validate(doc);
        for (const auto& e : errors) ADD_FAILURE() << "schema: " << e;
    }

    // The tiny suite's JSON, run once per test binary (it takes a few seconds).
    static const json& tiny_run() {
        static json doc;
        static bool done = false;
        if (!done) {
            done = true;
            std::string tmpl = (std::filesystem::temp_directory_path() / "sieve_bench_XXXXXX").string();
            if (mkdtemp(tmpl.data()) == nullptr) return doc;
            Proc r = run_sieve(kTiny + " --json", tmpl);
            EXPECT_EQ(r.code, 0) << r.err;
            doc = parse(r.out);
            std::filesystem::remove_all(tmpl);
        }
        return doc;
    }

    std::filesystem::path dir_;
};

const json* find_case(const json& doc, const std::string& name) {
    for (const json& c : doc["cases"])
        if (c["name"] == name) return &c;
    return nullptr;
}

TEST_F(Bench, TinySuiteRunsAndItsJsonFollowsTheSchema) {
    const json& doc = tiny_run();
    ASSERT_TRUE(doc.is_object());
    expect_valid(doc);
    EXPECT_EQ(doc["schema"], "sieve-bench/1");
    EXPECT_EQ(doc["settings"]["suite"], "tiny");
    EXPECT_EQ(doc["settings"]["tokens"], 3);
    ASSERT_EQ(doc["cases"].size(), 5u);
    std::set<std::string> names;
    for (const json& c : doc["cases"]) names.insert(c["name"].get<std::string>());
    EXPECT_EQ(names, (std::set<std::string>{"greedy/zipf/v4096/b1", "default/zipf/v4096/b2", "dist/peaked/v3000/b1",
                                            "penalties_dry_n64/zipf/v4096/b2", "penalties_dry_n4096/zipf/v4096/b2"}));
    // The host's fence wait as the environment set it (CI sets none).
    const char* spin = std::getenv("SIEVE_WAIT_SPIN_US");
    if (!spin || !*spin) {
        EXPECT_TRUE(doc["wait_spin_us"].is_null());
    }
    // A CPU implementation of Vulkan is named as such and warned about.
    if (doc["device_type"] == "cpu") {
        EXPECT_TRUE(doc["cpu_implementation"].get<bool>());
        ASSERT_FALSE(doc["warnings"].empty());
        EXPECT_NE(doc["warnings"][0].get<std::string>().find("CPU implementation"), std::string::npos);
    }
}

// Whether a warning says the validation layer timed itself with the calls.
bool warns_of_validation(const json& doc) {
    for (const json& w : doc["warnings"])
        if (w.get<std::string>().find("validation layers on") != std::string::npos) return true;
    return false;
}

// The validation layer under the timings is warned about (the suite's
// environment turns it on: support/environment.cpp), and not where it is off.
TEST_F(Bench, TheValidationLayerUnderTheTimingsIsWarnedAbout) {
    ASSERT_STREQ(std::getenv("SIEVE_VALIDATION"), "1");
    EXPECT_TRUE(warns_of_validation(tiny_run()));
    sieve_test::ScopedEnv off("SIEVE_VALIDATION", "0");
    Proc r = sieve("bench --suite tiny --case greedy --tokens 3 --warmup 1 --profile-tokens 0 "
                   "--calibration-iterations 3 --twin-budget 0.1 --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json doc = parse(r.out);
    ASSERT_TRUE(doc.contains("warnings"));
    EXPECT_FALSE(warns_of_validation(doc));
}

TEST_F(Bench, MeasuredCasesCarryConsistentFigures) {
    const json& doc = tiny_run();
    ASSERT_TRUE(doc.contains("cases"));
    for (const std::string name : {"greedy/zipf/v4096/b1", "default/zipf/v4096/b2", "dist/peaked/v3000/b1",
                                   "penalties_dry_n64/zipf/v4096/b2", "penalties_dry_n4096/zipf/v4096/b2"}) {
        SCOPED_TRACE(name);
        const json* c = find_case(doc, name);
        ASSERT_NE(c, nullptr);
        ASSERT_EQ((*c)["status"], "ok") << c->dump();
        const double median = (*c)["median_us"].get<double>();
        EXPECT_GT(median, 0);
        EXPECT_LE((*c)["p10_us"].get<double>(), median);
        EXPECT_GE((*c)["p90_us"].get<double>(), median);
        EXPECT_EQ((*c)["tokens"], 3);
        EXPECT_EQ((*c)["twin_status"], "ok");
        EXPECT_GT((*c)["twin_median_us"].get<double>(), 0);
        EXPECT_NEAR((*c)["ratio"].get<double>(), (*c)["twin_median_us"].get<double>() / median, 1e-3);
        const int rows = (*c)["rows"], vocab = (*c)["vocab"];
        const int passes = (*c)["row_passes"];
        EXPECT_GE(passes, 1);
        EXPECT_EQ((*c)["bytes_read"].get<double>(), 4.0 * passes * rows * vocab);
        EXPECT_EQ((*c)["bytes_written"].get<double>(), 32.0 * rows);
        EXPECT_EQ((*c)["steady_recordings"], 0) << "the measured tokens record nothing";
        EXPECT_EQ((*c)["steady_allocations"], 0);
        EXPECT_EQ((*c)["measured_row_passes"].get<double>(), passes) << "built-in rows resolve at the first level";
        // The Vulkan device: stages from the profiled run and a calibration.
        ASSERT_EQ(doc["backend"], "vulkan");
        EXPECT_FALSE((*c)["stages"].empty());
        EXPECT_EQ((*c)["profiled_tokens"], 1);
        // The profiled call's wall time split at the GPU (sieve_chain_call_timing).
        ASSERT_TRUE((*c)["call_timing"].is_object());
        const json& ct = (*c)["call_timing"];
        EXPECT_GT(ct["gpu_span_us"].get<double>(), 0);
        EXPECT_GE(ct["wall_us"].get<double>(), ct["gpu_span_us"].get<double>());
        if (!ct["submit_to_gpu_us"].is_null()) {
            const double parts = ct["submit_to_gpu_us"].get<double>() + ct["gpu_span_us"].get<double>() +
                                 ct["gpu_to_host_us"].get<double>();
            EXPECT_NEAR(parts, ct["wall_us"].get<double>(), ct["deviation_us"].get<double>() + 1.0);
        }
        // The library's own time outside the submit and wait: the whole call
        // as the bench timed it less wall_us (one profiled call: no medians
        // to mix up), positive (host input copies the logits first).
        ASSERT_TRUE(ct["host_us"].is_number());
        ASSERT_TRUE(ct["call_us"].is_number());
        EXPECT_GT(ct["host_us"].get<double>(), 0.0);
        EXPECT_NEAR(ct["host_us"].get<double>(), ct["call_us"].get<double>() - ct["wall_us"].get<double>(), 0.01);
        ASSERT_TRUE((*c)["calibration"].is_object());
        const json& cal = (*c)["calibration"];
        EXPECT_GT(cal["submit_us"].get<double>(), 0);
        EXPECT_GE(cal["pass_total_us"].get<double>(), cal["pass_us"].get<double>());
        const double floor = passes * cal["pass_us"].get<double>() + cal["submit_us"].get<double>();
        EXPECT_NEAR((*c)["floor_us"].get<double>(), floor, 0.01);
        EXPECT_NEAR((*c)["efficiency"].get<double>(), floor / median, 1e-3);
    }
    const json* greedy = find_case(doc, "greedy/zipf/v4096/b1");
    ASSERT_NE(greedy, nullptr);
    EXPECT_EQ((*greedy)["dispatches"], 1) << "a greedy token is one dispatch";
    EXPECT_EQ((*greedy)["row_passes"], 1);
}

TEST_F(Bench, HistoryCasesAddTheHistoryPassOnly) {
    // llama.cpp's default chain with penalties and DRY on over a full history:
    // the same plan as the default chain's plus the history pass (no pass over
    // the row; 1 dispatch, or on a GPU's plan 2 past a capacity of 64: the
    // clearing and the building one), on the device and on the twin.
    const json& doc = tiny_run();
    ASSERT_TRUE(doc.contains("cases"));
    ASSERT_TRUE(doc["device_info"].is_object());
    const bool gpu_plan = doc["device_info"]["type"] != "cpu" ||
                          (doc["profile"].is_string() && doc["profile"].get<std::string>().find("gpu") != std::string::npos);
    const json* base = find_case(doc, "default/zipf/v4096/b2");
    ASSERT_NE(base, nullptr);
    ASSERT_EQ((*base)["status"], "ok");
    for (const std::string name : {"penalties_dry_n64/zipf/v4096/b2", "penalties_dry_n4096/zipf/v4096/b2"}) {
        SCOPED_TRACE(name);
        const json* c = find_case(doc, name);
        ASSERT_NE(c, nullptr);
        ASSERT_EQ((*c)["status"], "ok") << c->dump();
        EXPECT_EQ((*c)["samplers"], "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature");
        const int history_dispatches = gpu_plan && name.rfind("penalties_dry_n4096", 0) == 0 ? 2 : 1;
        EXPECT_EQ((*c)["dispatches"].get<int>(), (*base)["dispatches"].get<int>() + history_dispatches);
        EXPECT_EQ((*c)["row_passes"], (*base)["row_passes"]);
        EXPECT_GE((*c)["measured_dispatches"].get<double>(), (*c)["dispatches"].get<double>());
        EXPECT_EQ((*c)["twin_status"], "ok") << c->dump();
        ASSERT_FALSE((*c)["stages"].empty());
        EXPECT_EQ((*c)["stages"][0]["stage"], "history");
    }
}

TEST(BenchHistory, CaseHistoryIsFullDeterministicAndEndsInARepeat) {
    const sieve_cli::Logits logits = sieve_cli::zipf_logits(3, 5000);
    for (int32_t n : {64, 4096}) {
        SCOPED_TRACE(n);
        const sieve_cli::CaseHistory h = sieve_cli::case_history(logits, n);
        EXPECT_EQ(sieve_cli::case_history(logits, n).rows, h.rows) << "the device and the twin get the same prefix";
        ASSERT_EQ(h.rows.size(), 3u);
        ASSERT_FALSE(h.breakers.empty());
        for (const auto& b : h.breakers) ASSERT_EQ(b.size(), 1u);
        for (const auto& t : h.rows) {
            ASSERT_EQ(t.size(), static_cast<size_t>(n));
            std::set<int32_t> distinct(t.begin(), t.end());
            EXPECT_LT(distinct.size(), t.size()) << "tokens repeat";
            EXPECT_GT(distinct.size(), t.size() / 8) << "and not only a few of them";
            for (int32_t id : t) ASSERT_TRUE(id >= 0 && id < 5000);
            EXPECT_TRUE(distinct.count(h.breakers[0][0]) || distinct.count(h.breakers.back()[0])) << "sentences end";
            // The last 6 tokens occur earlier with a continuation: DRY has a match.
            bool repeat = false;
            for (size_t at = 0; at + 6 < t.size() - 6 && !repeat; ++at)
                repeat = std::equal(t.end() - 6, t.end(), t.begin() + static_cast<std::ptrdiff_t>(at));
            EXPECT_TRUE(repeat);
        }
        EXPECT_NE(h.rows[0], h.rows[1]) << "each row has its own text";
    }
}

TEST_F(Bench, TableNamesTheDeviceAndEveryCase) {
    Proc r = sieve(kTiny + " --case v4096");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("sieve bench: device '"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("greedy/zipf/v4096/b1"), std::string::npos);
    EXPECT_NE(r.out.find("default/zipf/v4096/b2"), std::string::npos);
    EXPECT_EQ(r.out.find("dist/peaked/v3000/b1"), std::string::npos) << "--case filters";
    EXPECT_NE(r.out.find("penalties_dry_n64/zipf/v4096/b2"), std::string::npos);
    EXPECT_EQ(r.out.find("unsupported"), std::string::npos) << "every tiny case runs";
    EXPECT_NE(r.out.find("gpu stages:"), std::string::npos);
    EXPECT_EQ(r.err.find("\r"), std::string::npos) << "no progress line when stderr is not a terminal";
}

TEST_F(Bench, CpuTwinAsDeviceHasNoCalibrationAndStillFollowsTheSchema) {
    sieve_test::ScopedEnv spin("SIEVE_WAIT_SPIN_US", "7");  // recorded as the run had it
    Proc r = sieve(kTiny + " --case greedy --device cpu --json");
    ASSERT_EQ(r.code, 0) << r.err;
    json doc = parse(r.out);
    expect_valid(doc);
    EXPECT_EQ(doc["wait_spin_us"], 7);
    EXPECT_EQ(doc["backend"], "cpu");
    EXPECT_TRUE(doc["cpu_implementation"].get<bool>());
    ASSERT_EQ(doc["cases"].size(), 1u);
    const json& c = doc["cases"][0];
    EXPECT_TRUE(c["calibration"].is_null());
    EXPECT_TRUE(c["floor_us"].is_null());
    EXPECT_TRUE(c["efficiency"].is_null());
    EXPECT_FALSE(c["calibration_message"].get<std::string>().empty());
    EXPECT_TRUE(c["stages"].empty());
    EXPECT_TRUE(c["call_timing"].is_null());
}

TEST_F(Bench, ReportIsOneSelfContainedPageWithPlots) {
    const std::string report = path("report.html"), out_json = path("run.json");
    Proc r = sieve(kTiny + " --case greedy --report '" + report + "' --json-out '" + out_json + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string html = read_text(report);
    ASSERT_FALSE(html.empty());
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(html.find("<svg"), std::string::npos);
    EXPECT_NE(html.find("Latency vs vocabulary"), std::string::npos);
    EXPECT_NE(html.find("Per-row cost vs batch"), std::string::npos);
    EXPECT_NE(html.find("Stage breakdown"), std::string::npos);
    EXPECT_NE(html.find("greedy/zipf/v4096/b1"), std::string::npos);
    // Nothing to fetch: no scripts, stylesheets, images or fonts from anywhere.
    for (const char* bad : {"<script", "<link", "src=", "@import", "url(", "https:"})
        EXPECT_EQ(html.find(bad), std::string::npos) << bad;
    // --json-out holds the same document --json prints.
    json doc = parse(read_text(out_json));
    expect_valid(doc);
    ASSERT_EQ(doc["cases"].size(), 1u);
}

TEST_F(Bench, CompareOfARunWithItselfIsRatioOneForEveryCase) {
    const std::string file = path("run.json");
    {
        std::ofstream f(file);
        f << tiny_run().dump();
    }
    Proc r = sieve("bench --compare '" + file + "' '" + file + "' --json");
    ASSERT_EQ(r.code, 0) << r.err;
    json doc = parse(r.out);
    ASSERT_EQ(doc["cases"].size(), 5u);
    for (const json& c : doc["cases"]) EXPECT_EQ(c["ratio"].get<double>(), 1.0) << c["name"];
    EXPECT_EQ(doc["matched"], 5);
    EXPECT_EQ(doc["geomean_ratio"].get<double>(), 1.0);
    EXPECT_TRUE(doc["only_in_a"].empty());

    Proc t = sieve("bench --compare '" + file + "' '" + file + "'");
    ASSERT_EQ(t.code, 0) << t.err;
    EXPECT_NE(t.out.find("greedy/zipf/v4096/b1"), std::string::npos);
    EXPECT_NE(t.out.find("1.000"), std::string::npos);
    EXPECT_NE(t.out.find("geometric mean of B/A over 5 cases: 1.000"), std::string::npos) << t.out;
}

TEST_F(Bench, CompareMatchesByNameAndRatiosAreBOverA) {
    json a = {{"device", "A"}, {"cases", {{{"name", "x"}, {"status", "ok"}, {"median_us", 100.0}},
                                          {{"name", "only_a"}, {"status", "ok"}, {"median_us", 5.0}}}}};
    json b = {{"device", "B"}, {"cases", {{{"name", "only_b"}, {"status", "ok"}, {"median_us", 7.0}},
                                          {{"name", "x"}, {"status", "ok"}, {"median_us", 50.0}}}}};
    std::ofstream(path("a.json")) << a.dump();
    std::ofstream(path("b.json")) << b.dump();
    Proc r = sieve("bench --compare '" + path("a.json") + "' '" + path("b.json") + "' --json");
    ASSERT_EQ(r.code, 0) << r.err;
    json doc = parse(r.out);
    ASSERT_EQ(doc["cases"].size(), 1u);
    EXPECT_EQ(doc["cases"][0]["ratio"].get<double>(), 0.5);
    EXPECT_EQ(doc["only_in_a"], json({"only_a"}));
    EXPECT_EQ(doc["only_in_b"], json({"only_b"}));
}

TEST_F(Bench, SuitesListTheirCases) {
    Proc r = sieve("bench --list");
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* name : {"greedy/zipf/v151936/b1", "dist/zipf/v151936/b1", "default/zipf/v151936/b1",
                             "default_topk0/zipf/v151936/b1", "top_p/zipf/v151936/b1", "min_p/zipf/v151936/b1",
                             "top_k1000/zipf/v151936/b1",
                             "penalties_dry_n64/zipf/v151936/b1", "penalties_dry_n4096/zipf/v151936/b1",
                             "default/zipf/v32000/b1", "default/zipf/v128256/b1",
                             "default/zipf/v262144/b1", "default/zipf/v32000/b8", "default/zipf/v32000/b64",
                             "default/zipf/v32000/b256", "default/flat/v151936/b1", "default/peaked/v151936/b1"})
        EXPECT_NE(r.out.find(std::string(name) + "\n"), std::string::npos) << name;
    Proc full = sieve("bench --suite full --list --json");
    ASSERT_EQ(full.code, 0) << full.err;
    json doc = parse(full.out);
    EXPECT_EQ(doc["cases"].size(), 9u * 3u * 4u * 4u) << "9 chains x 3 shapes x 4 vocabularies x 4 row counts";
    Proc filtered = sieve("bench --list --case top_k1000");
    ASSERT_EQ(filtered.code, 0);
    EXPECT_EQ(filtered.out, "top_k1000/zipf/v151936/b1\n");
    Proc history = sieve("bench --list --case penalties_dry");
    ASSERT_EQ(history.code, 0);
    EXPECT_EQ(history.out, "penalties_dry_n64/zipf/v151936/b1\npenalties_dry_n4096/zipf/v151936/b1\n");
    // A chain of the user's replaces the suite's; the history cases are the
    // suite's own and go with them.
    for (const std::string own : {"--samplers 'top_k;dist'", "--mirostat 2"}) {
        Proc replaced = sieve("bench --list --json " + own);
        ASSERT_EQ(replaced.code, 0) << replaced.err;
        for (const json& name : parse(replaced.out)["cases"])
            EXPECT_EQ(name.get<std::string>().find("penalties"), std::string::npos) << own << ": " << name;
    }
}

TEST_F(Bench, UnknownCaseOrSuiteIsAUsageError) {
    Proc r = sieve("bench --case no_such_case");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no case matches --case 'no_such_case'"), std::string::npos) << r.err;
    Proc s = sieve("bench --suite huge --list");
    EXPECT_EQ(s.code, 2);
    EXPECT_NE(s.err.find("unknown --suite 'huge'"), std::string::npos) << s.err;
    Proc j = sieve("bench --case no_such_case --json");
    EXPECT_EQ(j.code, 2);
    json doc = parse(j.out);
    EXPECT_EQ(doc["exit_code"], 2);
}

TEST_F(Bench, UnwritableOutputPathsFailBeforeMeasuring) {
    const std::string bad = path("no/such/dir/out");
    Proc r = sieve(kTiny + " --report '" + bad + ".html'");
    EXPECT_EQ(r.code, 3);
    EXPECT_NE(r.err.find("cannot write --report '" + bad + ".html'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("greedy/zipf"), std::string::npos) << "nothing was measured";
    Proc j = sieve(kTiny + " --json-out '" + bad + ".json'");
    EXPECT_EQ(j.code, 3);
    EXPECT_NE(j.err.find("cannot write --json-out"), std::string::npos) << j.err;
}

TEST_F(Bench, CompareRejectsMissingCorruptAndForeignFiles) {
    const std::string good = path("good.json");
    std::ofstream(good) << json({{"cases", {{{"name", "x"}, {"status", "ok"}, {"median_us", 1.0}}}}}).dump();
    Proc missing = sieve("bench --compare '" + path("missing.json") + "' '" + good + "'");
    EXPECT_EQ(missing.code, 3);
    EXPECT_NE(missing.err.find("cannot read '" + path("missing.json") + "'"), std::string::npos) << missing.err;

    std::ofstream(path("corrupt.json")) << "{\"cases\": [ {\"name\": ";
    Proc corrupt = sieve("bench --compare '" + good + "' '" + path("corrupt.json") + "'");
    EXPECT_EQ(corrupt.code, 3);
    EXPECT_NE(corrupt.err.find("is not valid JSON"), std::string::npos) << corrupt.err;

    std::ofstream(path("foreign.json")) << "{\"rows\": []}";
    Proc foreign = sieve("bench --compare '" + good + "' '" + path("foreign.json") + "'");
    EXPECT_EQ(foreign.code, 3);
    EXPECT_NE(foreign.err.find("no \"cases\" array"), std::string::npos) << foreign.err;

    std::ofstream(path("other.json")) << json({{"cases", {{{"name", "y"}}}}}).dump();
    Proc disjoint = sieve("bench --compare '" + good + "' '" + path("other.json") + "'");
    EXPECT_EQ(disjoint.code, 3);
    EXPECT_NE(disjoint.err.find("no case name in common"), std::string::npos) << disjoint.err;

    Proc one = sieve("bench --compare '" + good + "'");
    EXPECT_EQ(one.code, 2) << "--compare takes two files";
}

TEST_F(Bench, OneChainOnTheLogitsOfAFile) {
    std::vector<float> logits(2 * 5000);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 5000) / 500.0f;
    const std::string file = path("rows.npy");
    sieve_cli::write_npy_f32(file, {2, 5000}, logits.data());
    Proc r = sieve("bench --logits '" + file + "' --samplers 'top_k;temperature' --top-k 50 --tokens 3 --warmup 1 "
                   "--profile-tokens 1 --calibration-iterations 2 --twin-budget 0.2 --json");
    ASSERT_EQ(r.code, 0) << r.err;
    json doc = parse(r.out);
    expect_valid(doc);
    EXPECT_EQ(doc["settings"]["suite"], "file");
    EXPECT_EQ(doc["settings"]["logits"], file);
    ASSERT_EQ(doc["cases"].size(), 1u);
    const json& c = doc["cases"][0];
    EXPECT_EQ(c["name"], "top_k;temperature/file/v5000/b2");
    EXPECT_EQ(c["shape"], "file");
    EXPECT_EQ(c["rows"], 2);
    EXPECT_EQ(c["status"], "ok") << c.dump();

    // A chain the library does not know: a usage error, with its message.
    Proc bad = sieve("bench --logits '" + file + "' --samplers 'no_such_sampler' --tokens 3 --warmup 1");
    EXPECT_EQ(bad.code, 2);
    EXPECT_NE(bad.err.find("no_such_sampler"), std::string::npos) << bad.err;
    // A missing file: bad input.
    Proc missing = sieve("bench --logits '" + path("missing.npy") + "' --tokens 3");
    EXPECT_EQ(missing.code, 3);
}

TEST_F(Bench, CompareHonoursCaseFilter) {
    const std::string file = path("run.json");
    std::ofstream(file) << tiny_run().dump();
    Proc r = sieve("bench --compare '" + file + "' '" + file + "' --case greedy --json");
    ASSERT_EQ(r.code, 0) << r.err;
    json doc = parse(r.out);
    ASSERT_EQ(doc["cases"].size(), 1u);
    EXPECT_EQ(doc["cases"][0]["name"], "greedy/zipf/v4096/b1");
    Proc none = sieve("bench --compare '" + file + "' '" + file + "' --case nothing_like_this");
    EXPECT_EQ(none.code, 3);
    EXPECT_NE(none.err.find("matching --case 'nothing_like_this'"), std::string::npos) << none.err;
}

TEST_F(Bench, AFailingCaseIsReportedAndSetsTheExitStatus) {
    std::vector<float> logits(3000, 0.5f);
    logits[17] = std::nanf("");
    const std::string file = path("nan.npy");
    sieve_cli::write_npy_f32(file, {3000}, logits.data());
    Proc r = sieve("bench --logits '" + file + "' --samplers greedy --tokens 3 --warmup 1 --json");
    EXPECT_EQ(r.code, 3) << "a row that cannot be sampled is bad input";
    json doc = parse(r.out);
    expect_valid(doc);
    ASSERT_EQ(doc["cases"].size(), 1u);
    EXPECT_EQ(doc["cases"][0]["status"], "failed");
    EXPECT_NE(doc["cases"][0]["message"].get<std::string>().find("non_finite_logit"), std::string::npos)
        << doc["cases"][0].dump();
    EXPECT_NE(r.err.find("failed"), std::string::npos) << r.err;
}

TEST_F(Bench, UnknownSamplerOverTheSuiteIsAUsageError) {
    Proc r = sieve("bench --samplers 'top_k;no_such_sampler' --tokens 3 --case v151936");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no_such_sampler"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("unsupported"), std::string::npos) << "refused before any case runs";
}

} // namespace
