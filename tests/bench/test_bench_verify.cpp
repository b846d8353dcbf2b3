// `sieve bench --suite verify` (speculative decoding's verification against
// sieve_sample position by position) run as a user would: its cases, the
// figures of a short run against docs/bench-schema.json, and that the default
// suite leaves them out. No timing is asserted.
#include "bench_schema_validator.hpp"
#include "cli_fixture.hpp"

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
// every sequence's row at least once.
TEST_F(BenchVerify, AShortRunReportsTheStepAndTheBaseline) {
    const int tokens = 3, sequences = 2, drafts = 4;
    Proc r = sieve("bench --suite verify --case _d4/ --rows 2 --tokens 3 --warmup 1 --twin-budget 0.2 --json");
    ASSERT_EQ(r.code, 0) << describe(r);
    const json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out;
    json schema = json::parse(sieve_test::read_text(std::string(SIEVE_SOURCE_DIR) + "/docs/bench-schema.json"));
    for (const auto& e : sieve_test::SchemaValidator(schema).validate(doc)) ADD_FAILURE() << "schema: " << e;
    ASSERT_EQ(doc["cases"].size(), 2u) << r.out;
    for (const json& c : doc["cases"]) {
        SCOPED_TRACE(c["name"].get<std::string>());
        ASSERT_EQ(c["status"], "ok") << c;
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
        const double speedup = v["baseline_median_us"].get<double>() / c["median_us"].get<double>();
        EXPECT_NEAR(v["speedup"].get<double>(), speedup, 1e-3 * speedup + 1e-4);
        EXPECT_GT(c["twin_median_us"].get<double>(), 0.0);
    }
    Proc text = sieve("bench --suite verify --case verify_match_d4 --rows 2 --tokens 3 --warmup 1 --twin-budget 0.2");
    ASSERT_EQ(text.code, 0) << describe(text);
    EXPECT_NE(text.out.find("verify match, 4 drafts x 2 sequence(s): acceptance 100.0% (24 of 24)"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("5 x sieve_sample"), std::string::npos) << text.out;
}

} // namespace
