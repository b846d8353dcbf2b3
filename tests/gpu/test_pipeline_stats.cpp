// The pipelines' statistics lines (SIEVE_PIPELINE_STATS,
// engine/vulkan/pipeline_stats.hpp): one a pipeline a context builds while
// the variable names a file when the context is made, none otherwise; each
// names its shader variant, its stage and the residency the estimate assumes
// for it, and holds the driver's statistics or says why there are none
// (lavapipe offers no VK_KHR_pipeline_executable_properties; an NVIDIA GPU
// reports its register count, which tools/pipeline_stats/residency.py reads).
#include "vulkan/gpu_estimate.hpp"
#include "vulkan/pipeline_stats.hpp"
#include "vulkan/pipelines.hpp"
#include "vulkan/row_analysis.hpp"
#include "pipeline_stats_file.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace {

using sieve_test::ScopedEnv;
using sieve_test::Shape;

// Samples a default chain (the fused collect pass) and a dist chain (the
// distribution passes) once each on `ctx` (a new context by default).
void sample_two_chains(int32_t vocab, const sieve::Context& ctx) {
    const int32_t rows = 2;
    const auto logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 11);
    for (const char* samplers : {"top_k;top_p;min_p;temperature;dist", "temperature;dist"}) {
        sieve::Chain chain(ctx, sieve_test::chain_desc(samplers, rows, vocab, 0.8f, 5));
        const auto tokens = chain.sample(logits.data(), rows, vocab);
        for (const sieve_token& t : tokens) EXPECT_EQ(t.status, SIEVE_OK);
    }
}

void sample_two_chains(int32_t vocab) { sample_two_chains(vocab, sieve_test::gpu_context()); }

// The plan stage a line names, or Stage::Count (calibration, ingest, ...).
sieve::Stage stage_named(const std::string& name) {
    for (uint32_t i = 0; i < static_cast<uint32_t>(sieve::Stage::Count); ++i)
        if (name == sieve::stage_name(static_cast<sieve::Stage>(i))) return static_cast<sieve::Stage>(i);
    return sieve::Stage::Count;
}

TEST(PipelineStats, EveryPipelineBuiltWritesALineThatSaysWhatItIsAndWhatItsDriverSays) {
    const std::string path = sieve_test::pipeline_stats_path("sieve_pipeline_stats");
    std::remove(path.c_str());
    {
        ScopedEnv env("SIEVE_PIPELINE_STATS", path.c_str());
        sample_two_chains(20000);
    }
    const auto lines = sieve_test::read_pipeline_stats(path);
    std::remove(path.c_str());
    ASSERT_GE(lines.size(), 4u) << "the collect pass, row_stats, mass_histogram and the gather at least";
    std::set<std::string> stages;
    for (const auto& j : lines) {
        const std::string stage = j.at("stage"), shader = j.at("shader");
        stages.insert(stage);
        EXPECT_FALSE(shader.empty());
        EXPECT_GT(j.at("workgroup").get<uint32_t>(), 0u) << shader;
        EXPECT_TRUE(j.at("specialization").contains("chain_ops")) << shader;
        // The plan's stages carry the estimate's residency for them; the
        // others (calibration, ingest) none.
        if (const sieve::Stage s = stage_named(stage); s != sieve::Stage::Count) {
            EXPECT_EQ(j.at("assumed_resident_per_unit").get<double>(), sieve::assumed_resident_per_unit(s)) << stage;
        } else {
            EXPECT_TRUE(j.at("assumed_resident_per_unit").is_null()) << stage;
        }
        // The driver's statistics, or why there are none: never both, never neither.
        if (j.at("executables").is_null()) {
            EXPECT_NE(j.at("absent").get<std::string>().find("VK_KHR_pipeline_executable_properties"),
                      std::string::npos)
                << j.dump();
        } else {
            EXPECT_FALSE(j.contains("absent")) << j.dump();
            ASSERT_FALSE(j.at("executables").empty()) << j.dump();
            EXPECT_FALSE(j.at("executables").at(0).at("statistics").empty()) << j.dump();
        }
    }
    std::string seen;
    for (const auto& st : stages) seen += st + " ";
    // The default chain's collect pass: its plain variant, or the general
    // one (a CI run under the gpu profile at subgroup 64 once built only
    // that; not reproduced since).
    EXPECT_GE(stages.count("collect_plain") + stages.count("collect"), 1u) << "a collect pass built, no line; lines for: "
                                                                           << seen;
    for (const char* stage : {"row_stats", "mass_histogram", "gather"})
        EXPECT_EQ(stages.count(stage), 1u) << stage << " built, no line; lines for: " << seen;
}

// The collect_plain lines' COLLECT_VARIANT values (1 plain, 3 plain with radix_chunk).
std::set<uint32_t> plain_variants(const std::vector<nlohmann::json>& lines) {
    std::set<uint32_t> out;
    for (const auto& j : lines)
        if (j.at("stage") == "collect_plain") out.insert(j.at("specialization").at("collect_variant").get<uint32_t>());
    return out;
}

// Only a call with a plain row whose need passes the register picks builds
// the plain pipeline that holds radix_chunk (a CPU device would run its lines
// for every chunk of every call): top-k 40 takes the plain variant alone,
// the same chain at top-k CAP / 2 the radix one, as the row analysis says
// (a profile whose workgroups' picks do not fit half the buffer has no
// plain rows: no plain pipeline at all).
TEST(PipelineStats, OnlyACallWithARadixRowBuildsThePlainPipelineWithRadixChunks) {
    const std::string path = sieve_test::pipeline_stats_path("sieve_pipeline_stats_radix");
    std::remove(path.c_str());
    const int32_t vocab = 20000;
    std::set<uint32_t> small_k, large_k, want_small, want_large;
    {
        ScopedEnv env("SIEVE_PIPELINE_STATS", path.c_str());
        const sieve::Context ctx = sieve_test::gpu_context();
        const sieve::EffectiveLimits& lim = sieve_test::limits_of(ctx);
        ASSERT_GT(static_cast<uint32_t>(vocab), lim.candidate_capacity) << "a row of chunks";
        // The variant the row analysis gives a row of this chain at top-k k.
        const auto variant_for = [&](int32_t k) -> std::set<uint32_t> {
            sieve::RowContext at;
            at.capacity = lim.candidate_capacity;
            at.workgroup_size = lim.workgroup_size;
            at.cpu_paths = lim.cpu_paths;
            sieve::ref::RowParams row;
            row.top_k = k;
            using K = sieve::ref::SamplerKind;
            const std::vector<K> kinds = {K::TopK, K::Temperature, K::Dist};
            const sieve::RowAnalysis a = sieve::analyse_row(sieve::analyse_chain(kinds), kinds, row, at);
            if (!a.collect_plain) return {};
            return {a.radix_chunk ? 3u : 1u};
        };
        sieve::Chain chain(ctx, sieve_test::chain_desc("top_k;temperature;dist", 1, vocab, 0.8f, 5));
        const auto logits = sieve_test::make_rows(Shape::Zipf, 1, vocab, 13);
        EXPECT_EQ(chain.sample(logits.data(), 1, vocab).at(0).status, SIEVE_OK);
        small_k = plain_variants(sieve_test::read_pipeline_stats(path));
        const int32_t half = static_cast<int32_t>(lim.candidate_capacity / 2);
        chain.set(SIEVE_PARAM_TOP_K, half);
        EXPECT_EQ(chain.sample(logits.data(), 1, vocab).at(0).status, SIEVE_OK);
        large_k = plain_variants(sieve_test::read_pipeline_stats(path));
        want_small = variant_for(40);
        want_large = want_small;
        for (uint32_t v : variant_for(half)) want_large.insert(v);
        // Where the profile has plain rows and half the buffer passes the
        // picks (4 x WG on a CPU device's paths, 2 x WG else), the calls differ.
        const uint32_t wg = lim.workgroup_size, cap = lim.candidate_capacity;
        if (cap >= 8 * wg && cap / 2 > (lim.cpu_paths ? 4 : 2) * wg) {
            EXPECT_EQ(want_large.count(3u), 1u);
        }
    }
    std::remove(path.c_str());
    EXPECT_EQ(small_k, want_small) << "top-k 40: the plain variant (1), without radix_chunk (3)";
    EXPECT_EQ(large_k, want_large) << "top-k CAP / 2 after it";
}

TEST(PipelineStats, AContextMadeWithoutTheVariableWritesNothing) {
    const std::string path = sieve_test::pipeline_stats_path("sieve_pipeline_stats_none");
    std::remove(path.c_str());
    {
        ScopedEnv env("SIEVE_PIPELINE_STATS", path.c_str());
        sample_two_chains(20000);
    }
    const size_t before = sieve_test::read_pipeline_stats(path).size();
    ASSERT_GT(before, 0u);
    // A vocabulary whose plans build other pipelines (the small-row path).
    sample_two_chains(1000);
    EXPECT_EQ(sieve_test::read_pipeline_stats(path).size(), before);
    // Nor does one made before the variable was set, whose pipelines are built after.
    {
        sieve::Context ctx = sieve_test::gpu_context();
        ScopedEnv env("SIEVE_PIPELINE_STATS", path.c_str());
        sample_two_chains(1000, ctx);
    }
    EXPECT_EQ(sieve_test::read_pipeline_stats(path).size(), before);
    std::remove(path.c_str());
}

// The line's JSON as a reader takes it: names escaped, values as the driver
// gave them, the specialization and the residency.
TEST(PipelineStats, TheLineIsJsonWithTheDriversNamesEscaped) {
    sieve::Specialization spec;
    spec.workgroup_size = 256;
    spec.capacity = 4096;
    spec.chain_ops = 0x1234;
    sieve::PipelineStatsLine line{"GPU \"9\"", "collect_fused_short", "collect_plain", 2, 64, &spec};
    line.executables = {{"Compute\tShader", {{"Register Count", "96"}, {"Spills \"x\"", "false"}, {"Ratio", "0.5"}}}};
    const auto j = nlohmann::json::parse(sieve::pipeline_stats_json(line));
    EXPECT_EQ(j.at("device"), "GPU \"9\"");
    EXPECT_EQ(j.at("workgroup"), 256);
    EXPECT_EQ(j.at("capacity"), 4096);
    EXPECT_EQ(j.at("specialization").at("chain_ops"), 0x1234);
    EXPECT_EQ(j.at("assumed_resident_per_unit"), 2.0);
    EXPECT_EQ(j.at("warps_per_unit"), 64);
    const auto& x = j.at("executables").at(0);
    EXPECT_EQ(x.at("name"), "Compute\tShader");
    EXPECT_EQ(x.at("statistics").at("Register Count"), 96);
    EXPECT_EQ(x.at("statistics").at("Spills \"x\""), false);
    EXPECT_EQ(x.at("statistics").at("Ratio"), 0.5);
    EXPECT_FALSE(j.contains("absent"));

    sieve::PipelineStatsLine none{"cpu", "gather", "gather", 4, 0, nullptr, {}, "why"};
    const auto k = nlohmann::json::parse(sieve::pipeline_stats_json(none));
    EXPECT_TRUE(k.at("executables").is_null());
    EXPECT_EQ(k.at("absent"), "why");
    EXPECT_TRUE(k.at("warps_per_unit").is_null());
    EXPECT_FALSE(k.contains("workgroup"));
}

} // namespace
