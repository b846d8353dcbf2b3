// `sieve bench --suite verify` (speculative decoding's verification against
// sieve_sample position by position) run as a user would: its cases, the
// figures of a short run against docs/bench-schema.json, and that the default
// suite leaves them out. No timing is asserted.
#include "bench_schema_validator.hpp"
#include "cli_fixture.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
using sieve_test::Proc;

using BenchVerify = sieve_test::CliTest;

TEST_F(BenchVerify, TheSuiteHasBothModesAtFourAndEightDraftsForOneAndSixteenSequences) {
    Proc list = sieve("bench --suite verify --list --json");
    ASSERT_EQ(list.code, 0) << describe(list);
    std::vector<std::string> want;
    for (const char* mode : {"match", "rejection"})
        for (int d : {4, 8})
            for (int b : {1, 16})
                want.push_back(std::string("verify_") + mode + "_d" + std::to_string(d) + "/default/peaked/v151936/b" +
                               std::to_string(b));
    EXPECT_EQ(json::parse(list.out)["cases"], json(want));
    Proc defaults = sieve("bench --list");
    ASSERT_EQ(defaults.code, 0) << describe(defaults);
    EXPECT_EQ(defaults.out.find("verify"), std::string::npos) << "the default suite runs no verification case";
}

// Two sequences (--rows), 4 drafts, both modes: every draft is the argmax of a
// peaked row, which the default chain keeps alone (p = 1), so every draft is
// accepted; the baseline makes drafts + 1 sample calls per step, each reading
// every sequence's row at least once. `input` is the run's --input.
void expect_short_run(const sieve_test::Proc& r, const std::string& input) {
    const int tokens = 3, sequences = 2, drafts = 4;
    ASSERT_EQ(r.code, 0) << sieve_test::describe(r);
    const json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out;
    json schema = json::parse(sieve_test::read_text(std::string(SIEVE_SOURCE_DIR) + "/docs/bench-schema.json"));
    for (const auto& e : sieve_test::SchemaValidator(schema).validate(doc)) ADD_FAILURE() << "schema: " << e;
    ASSERT_EQ(doc["cases"].size(), 2u) << r.out;
    for (const json& c : doc["cases"]) {
        SCOPED_TRACE(c["name"].get<std::string>());
        ASSERT_EQ(c["status"], "ok") << c;
        EXPECT_EQ(c["input"], input);
        ASSERT_TRUE(c.contains("verify")) << c;
        const json& v = c["verify"];
        EXPECT_EQ(v["mode"], c["name"].get<std::string>().rfind("verify_match", 0) == 0 ? "match" : "rejection");
        EXPECT_EQ(v["draft_probs"], v["mode"] == "match" ? "none" : "token");
        EXPECT_EQ(v["drafts"], drafts);
        EXPECT_EQ(v["sequences"], sequences);
        EXPECT_EQ(c["tokens"], tokens);
        EXPECT_EQ(v["offered"], tokens * sequences * drafts);
        EXPECT_EQ(v["accepted"], v["offered"]);
        EXPECT_EQ(v["acceptance"], 1.0);
        EXPECT_EQ(v["baseline_calls"], drafts + 1);
        EXPECT_EQ(v["baseline_steps"], tokens);
        EXPECT_GE(v["baseline_submits_per_step"].get<double>(), drafts + 1.0);
        EXPECT_GE(v["baseline_dispatches_per_step"].get<double>(), drafts + 1.0);
        EXPECT_GE(v["baseline_row_passes_per_step"].get<double>(), (drafts + 1.0) * sequences);
        // One call a step, over every position of every sequence.
        EXPECT_EQ(v["submits_per_step"], 1.0);
        EXPECT_GE(v["row_passes_per_step"].get<double>(), (drafts + 1.0) * sequences);
        const double verify = c["median_us"].get<double>(), baseline = v["baseline_median_us"].get<double>();
        EXPECT_NEAR(v["speedup"].get<double>(), baseline / verify, 1e-3 * baseline / verify + 1e-4);
        const double in_calls = verify * (drafts + 1) / baseline;
        EXPECT_NEAR(v["step_in_calls"].get<double>(), in_calls, 1e-3 * in_calls + 1e-4);
        EXPECT_GT(c["twin_median_us"].get<double>(), 0.0);
    }
}

const std::string kShortRun = "bench --suite verify --case _d4/ --rows 2 --tokens 3 --warmup 1 --twin-budget 0.2";

TEST_F(BenchVerify, AShortRunReportsTheStepAndTheBaseline) {
    expect_short_run(sieve(kShortRun + " --json"), "host");
    Proc text = sieve("bench --suite verify --case verify_match_d4 --rows 2 --tokens 3 --warmup 1 --twin-budget 0.2");
    ASSERT_EQ(text.code, 0) << describe(text);
    EXPECT_NE(text.out.find("verify match, 4 drafts x 2 sequence(s): acceptance 100.0% (24 of 24)"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("per step: sieve_verify "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("5 x sieve_sample "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("; the step in baseline calls "), std::string::npos) << text.out;
}

// --input device: the step is one sieve_verify_vulkan call on a device-local
// buffer of every sequence's positions, the baseline sieve_sample_vulkan on
// each position's rows of another; the same drafts are accepted.
TEST_F(BenchVerify, DeviceInputTimesTheVulkanForms) {
    expect_short_run(sieve(kShortRun + " --input device --json"), "device");
    Proc text = sieve("bench --suite verify --case verify_rejection_d4 --rows 2 --tokens 3 --warmup 1 --twin-budget 0.2 "
                      "--input device");
    ASSERT_EQ(text.code, 0) << describe(text);
    EXPECT_NE(text.out.find("one sieve_verify_vulkan call for every sequence's drafts"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("verify rejection, 4 drafts x 2 sequence(s) (q = 1 per draft): acceptance 100.0%"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("per step: sieve_verify_vulkan "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("5 x sieve_sample_vulkan "), std::string::npos) << text.out;
}

// Under the gpu profile the match mode's step and baseline carry the plans'
// estimated GPU time (the step's one call over every position against drafts
// + 1 calls over the sequences); the rejection mode's distribution plan has
// none, nor has a CPU device's own plan.
TEST_F(BenchVerify, TheMatchModeIsEstimatedUnderTheGpuProfile) {
    json schema = json::parse(sieve_test::read_text(std::string(SIEVE_SOURCE_DIR) + "/docs/bench-schema.json"));
    {
        sieve_test::ScopedEnv gpu("SIEVE_PROFILE", "gpu");
        Proc r = sieve(kShortRun + " --json");
        ASSERT_EQ(r.code, 0) << describe(r);
        const json doc = json::parse(r.out, nullptr, false);
        ASSERT_FALSE(doc.is_discarded()) << r.out;
        for (const auto& e : sieve_test::SchemaValidator(schema).validate(doc)) ADD_FAILURE() << "schema: " << e;
        ASSERT_EQ(doc["cases"].size(), 2u) << r.out;
        for (const json& c : doc["cases"]) {
            SCOPED_TRACE(c["name"].get<std::string>());
            const json& v = c["verify"];
            if (v["mode"] == "rejection") {
                EXPECT_TRUE(c["est_us"].is_null()) << c;
                EXPECT_TRUE(v["baseline_est_us"].is_null()) << v;
                continue;
            }
            ASSERT_TRUE(c["est_us"].is_number()) << c;
            ASSERT_TRUE(v["baseline_est_us"].is_number()) << v;
            double sum = 0;
            for (const json& e : c["estimate"]) sum += e["est_us"].get<double>();
            EXPECT_NEAR(c["est_us"].get<double>(), sum, 0.01 * c["estimate"].size());
            // One call over ten rows against five over two.
            EXPECT_GT(c["est_us"].get<double>(), 0.0);
            EXPECT_GT(v["baseline_est_us"].get<double>(), c["est_us"].get<double>());
        }
        Proc text = sieve("bench --suite verify --case verify_match_d4 --rows 2 --tokens 3 --warmup 1 --twin-budget 0.2");
        ASSERT_EQ(text.code, 0) << describe(text);
        EXPECT_NE(text.out.find("ESTIMATED on the reference GPU (the plans, not a measurement): the step "),
                  std::string::npos)
            << text.out;
    }
    // The device's own plan: estimated where it is a GPU's, not on lavapipe.
    sieve_test::ScopedEnv own("SIEVE_PROFILE", nullptr);
    Proc r = sieve("bench --suite verify --case verify_match_d4/ --rows 2 --tokens 3 --warmup 1 --twin-budget 0.2 --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    const json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out;
    const bool cpu_plan = doc["device_type"] == "cpu";
    ASSERT_EQ(doc["cases"].size(), 1u) << r.out;
    for (const json& c : doc["cases"]) {
        EXPECT_EQ(c["est_us"].is_null(), cpu_plan) << c;
        EXPECT_EQ(c["verify"]["baseline_est_us"].is_null(), cpu_plan) << c;
    }
}

// The CPU twin backend has no device buffers: the case says so, the run goes on.
TEST_F(BenchVerify, DeviceInputOnTheTwinBackendIsUnsupported) {
    Proc r = sieve(kShortRun + " --device cpu --input device --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    const json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out;
    ASSERT_EQ(doc["cases"].size(), 2u) << r.out;
    for (const json& c : doc["cases"]) {
        EXPECT_EQ(c["status"], "unsupported") << c;
        EXPECT_NE(c["message"].get<std::string>().find("--input device needs a Vulkan device"), std::string::npos) << c;
    }
}

} // namespace
