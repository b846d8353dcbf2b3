// The GPU-time estimate (engine/vulkan/gpu_estimate.cpp, sieve_chain_plan_estimate)
// against what it was fitted to: the H200's per-stage GPU times of commit 30de833
// (h200_stage_times.json, copied from ../shared/gpu-baseline/h200-bench.json).
// The plan recorded under the GPU profile here, as 30de833 had it, is the one
// the H200 ran: every stage's estimate must lie within 2x of its measured time. Times are not
// measured here.
#include "bench_suite.hpp"
#include "cli_process.hpp"
#include "options.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sieve/sieve.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace {

using nlohmann::json;
using sieve_cli::BenchCase;

json fixture() {
    const std::string text = sieve_test::read_text(std::string(SIEVE_SOURCE_DIR) + "/tests/bench/h200_stage_times.json");
    return json::parse(text);
}

// A bench JSON of the H200's run of 521950c (docs/gpu-runs/).
json run_of_521950c(const std::string& file) {
    return json::parse(
        sieve_test::read_text(std::string(SIEVE_SOURCE_DIR) + "/docs/gpu-runs/h200-2026-11-27-521950c/" + file));
}

sieve_cli::Device gpu_profile_device() {
    sieve_cli::Device d;
    sieve::ContextOptions opts;
    opts.profile("gpu");
    d.context = std::make_unique<sieve::Context>(opts);
    d.info = d.context->device_info();
    d.has_info = true;
    return d;
}

const BenchCase* find_case(const std::vector<BenchCase>& cases, const std::string& name) {
    for (const BenchCase& c : cases)
        if (c.name == name) return &c;
    return nullptr;
}

// Each stage's estimate, and the case's sum, within 2x of the stage times a
// GPU run measured (a bench JSON case's "stages"), the plan's dispatches in
// the run's order; with `launched` (that case's "estimate"), the workgroups
// too. Returns the stages compared.
int expect_within_twice(const std::string& name, const std::vector<sieve_stage_estimate>& est,
                        const json& measured, const json* launched = nullptr) {
    EXPECT_EQ(est.size(), measured.size()) << name << ": the plan's dispatches differ from the H200's";
    if (est.size() != measured.size()) return 0;
    double est_total = 0, gpu_total = 0;
    for (size_t i = 0; i < est.size(); ++i) {
        const std::string stage = measured[i]["stage"];
        const double gpu_us = measured[i]["gpu_us"];
        EXPECT_EQ(std::string(est[i].stage), stage) << name << " dispatch " << i;
        EXPECT_EQ(est[i].level, measured[i]["level"].get<uint32_t>()) << name << " dispatch " << i;
        if (launched) {
            EXPECT_EQ(est[i].workgroups, (*launched)[i]["workgroups"].get<uint32_t>()) << name << " " << stage;
        }
        EXPECT_GE(est[i].est_us, 0.5 * gpu_us) << name << " " << stage << " L" << est[i].level << ": est "
                                                << est[i].est_us << " us, H200 " << gpu_us << " us";
        EXPECT_LE(est[i].est_us, 2.0 * gpu_us) << name << " " << stage << " L" << est[i].level << ": est "
                                                << est[i].est_us << " us, H200 " << gpu_us << " us";
        est_total += est[i].est_us;
        gpu_total += gpu_us;
    }
    EXPECT_GE(est_total, 0.5 * gpu_total) << name;
    EXPECT_LE(est_total, 2.0 * gpu_total) << name;
    std::printf("%-36s est %7.1f us, H200 %7.1f us\n", name.c_str(), est_total, gpu_total);
    return static_cast<int>(est.size());
}

TEST(Estimate, ReproducesTheH200StageTimesWithinTwiceOfThePlanOf30de833) {
    const json fx = fixture();
    ASSERT_TRUE(fx.contains("source"));
    ASSERT_GE(fx["cases"].size(), 10u);
    const sieve_cli::Device device = gpu_profile_device();
    const std::vector<BenchCase> suite = sieve_cli::suite_cases("default", sieve_cli::SamplingOptions{});
    int stages = 0;
    for (const json& fc : fx["cases"]) {
        const std::string name = fc["name"];
        const BenchCase* c = find_case(suite, name);
        ASSERT_NE(c, nullptr) << name << " is no longer a case of the default suite";
        sieve::Chain chain = sieve_cli::make_chain(device, c->sampling, c->rows, c->vocab);
        // The plan as 30de833 ran it (rows at the plan's chunks, the tail's
        // ranks): what the H200 measured.
        stages += expect_within_twice(name, sieve_test::plan_estimate_as_run(chain, c->rows, c->vocab, "30de833"),
                                      fc["stages"]);
    }
    EXPECT_GE(stages, 40);
}

// 521950c's shaders and plan (both collect variants recorded) against the
// H200's run of 521950c (docs/gpu-runs/h200-2026-11-27-521950c/dev_b1.json,
// the raw file), with the H200's 132 SMs, which decide how rows split into
// chunks. Every case of that run's default suite but the 8-row one at
// v32000, whose collect pass took 57 us where 16 chunks of one row took 39
// and 32 chunks of 8 rows at v151936 36 (estimate.md).
TEST(Estimate, ReproducesTheH200StageTimesWithinTwiceOfThePlanOf521950c) {
    const json run = run_of_521950c("dev_b1.json");
    ASSERT_GE(run["cases"].size(), 10u);
    sieve_test::ScopedEnv units("SIEVE_COMPUTE_UNITS", "132");
    const sieve_cli::Device device = gpu_profile_device();
    const std::vector<BenchCase> suite = sieve_cli::suite_cases("default", sieve_cli::SamplingOptions{});
    int stages = 0;
    for (const json& rc : run["cases"]) {
        const std::string name = rc["name"];
        if (name == "default/zipf/v32000/b8") continue;
        const BenchCase* c = find_case(suite, name);
        ASSERT_NE(c, nullptr) << name << " is no longer a case of the default suite";
        sieve::Chain chain = sieve_cli::make_chain(device, c->sampling, c->rows, c->vocab);
        stages += expect_within_twice(name, sieve_test::plan_estimate_as_run(chain, c->rows, c->vocab, "521950c"),
                                      rc["stages"], &rc["estimate"]);
    }
    EXPECT_GE(stages, 40);
}

// At 64 rows 521950c's profiled stage times summed past the wall clock
// (timestamps between the dispatches serialize them), so they fit nothing;
// the wall clock of each call (its GPU time, the submit and the wait) still
// bounds the estimate of that call's plan from above. (It caught the history
// pass counted at one workgroup a SM: 217 us for a call that took 204.7; it
// bounds the history pass's cost per token, gpu_estimate.hpp.)
TEST(Estimate, StaysUnderTheWallClockOf521950cAtSixtyFourRows) {
    const json run = run_of_521950c("dev_b64.json");
    ASSERT_GE(run["cases"].size(), 8u);
    sieve_test::ScopedEnv units("SIEVE_COMPUTE_UNITS", "132");
    const sieve_cli::Device device = gpu_profile_device();
    const std::vector<BenchCase> suite = sieve_cli::suite_cases("default", sieve_cli::SamplingOptions{});
    for (const json& rc : run["cases"]) {
        const std::string name = rc["name"];
        const std::string one_row = name.substr(0, name.rfind("/b")) + "/b1";
        const BenchCase* c = find_case(suite, one_row);
        ASSERT_NE(c, nullptr) << one_row << " is no longer a case of the default suite";
        ASSERT_EQ(rc["rows"].get<int32_t>(), 64) << name;
        sieve::Chain chain = sieve_cli::make_chain(device, c->sampling, 64, c->vocab);
        double est = 0;
        for (const sieve_stage_estimate& e : sieve_test::plan_estimate_as_run(chain, 64, c->vocab, "521950c")) est += e.est_us;
        const double wall = rc["median_us"];
        std::printf("%-36s est %7.1f us, H200 wall clock %7.1f us\n", name.c_str(), est, wall);
        EXPECT_LT(est, wall) << name;
    }
}

TEST(Estimate, NamesEveryDispatchOfThePlanAndItsWorkgroups) {
    const sieve_cli::Device device = gpu_profile_device();
    sieve_cli::SamplingOptions o;
    o.samplers = "top_k;temperature;dist";
    sieve::Chain chain = sieve_cli::make_chain(device, o, 4, 151936);
    const auto [dispatches, passes] = chain.plan_figures(4, 151936);
    const std::vector<sieve_stage_estimate> est = chain.plan_estimate(4, 151936);
    ASSERT_GE(est.size(), dispatches);
    uint32_t launched = 0;
    for (const sieve_stage_estimate& e : est) {
        EXPECT_GT(e.est_us, 0.0) << e.stage;
        launched += e.workgroups > 0 ? 1 : 0;
        // A GPU plan's tail runs in the chunks' last workgroups (Plan::fused_tail).
        EXPECT_NE(std::string(e.stage), "collect_tail");
        if (std::string(e.stage) == "collect_plain") {
            EXPECT_EQ(e.workgroups % 4u, 0u);  // chunks x 4 rows
        }
    }
    EXPECT_EQ(launched, dispatches);  // the plan's minimum: the dispatches expected to launch workgroups
    (void)passes;
}

double total_us(const std::vector<sieve_stage_estimate>& stages, const char* only = nullptr) {
    double sum = 0;
    for (const sieve_stage_estimate& e : stages)
        if (!only || std::string(e.stage) == only) sum += e.est_us;
    return sum;
}

// The collect pass and its tail: today's GPU plan runs the tail in the
// chunks' dispatch, the measured runs' in one of its own.
double collect_and_tail_us(const std::vector<sieve_stage_estimate>& stages) {
    return total_us(stages, "collect_plain") + total_us(stages, "collect") + total_us(stages, "collect_tail");
}

// What the GPU plan changed since the baseline, as the estimate ranks it: at
// one row the default chain's rows split into more chunks and its tail merges
// the lists (an estimate, stated constants: estimate.md); top-k 1000's chunks
// select by radix instead of compacting, and its tail cuts the lists by
// splitters and merges them in shared memory instead of 8000 chains of
// dependent loads.
TEST(Estimate, RanksTheGpuPlanAheadOfTheBaselineAtOneRow) {
    const sieve_cli::Device device = gpu_profile_device();
    sieve_cli::SamplingOptions o;
    sieve::Chain chain = sieve_cli::make_chain(device, o, 1, 151936);
    const auto now = chain.plan_estimate(1, 151936);
    const auto then = sieve_test::plan_estimate_as_run(chain, 1, 151936, "30de833");
    EXPECT_LT(total_us(now, "collect_plain"), total_us(then, "collect_plain"));
    EXPECT_LT(collect_and_tail_us(now), total_us(then, "collect_plain") + total_us(then, "collect_tail"));
    o.samplers = "top_k;temperature";
    o.top_k = 1000;
    sieve::Chain k1000 = sieve_cli::make_chain(device, o, 1, 151936);
    const auto k1000_then = sieve_test::plan_estimate_as_run(k1000, 1, 151936, "30de833");
    EXPECT_LT(2 * collect_and_tail_us(k1000.plan_estimate(1, 151936)),
              total_us(k1000_then, "collect_tail"));
}

// Today's tail merges the lists in pairs of runs (an estimate: its costs
// are stated); 521950c's sorted them whole below the buffer. Today's runs in the chunks' dispatch, which saves its launch
// (5 us) and the empty collect variant's (5 us) besides.
TEST(Estimate, RanksTodaysTailAheadOf521950cs) {
    sieve_test::ScopedEnv units("SIEVE_COMPUTE_UNITS", "132");
    const sieve_cli::Device device = gpu_profile_device();
    sieve::Chain chain = sieve_cli::make_chain(device, sieve_cli::SamplingOptions{}, 1, 151936);
    const auto now = chain.plan_estimate(1, 151936);
    const auto then = sieve_test::plan_estimate_as_run(chain, 1, 151936, "521950c");
    EXPECT_EQ(total_us(now, "collect_tail"), 0.0);
    EXPECT_LT(collect_and_tail_us(now) + 15.0, collect_and_tail_us(then));
}

// A min-p-first row's tail cuts its lists to the row's floor (a read of
// their first entries, then 2 rounds of a list's search for a need of 40)
// and merges `need` entries, where top-k first merges every list's 40
// (32 chunks at one row: 1280, each round's pairs cut to 40): the same
// plan, need and ops otherwise
// (estimate.md, the tail's rows; stated constants).
TEST(Estimate, ChargesMinPsFloorCutInTheTail) {
    sieve_test::ScopedEnv units("SIEVE_COMPUTE_UNITS", "132");
    const sieve_cli::Device device = gpu_profile_device();
    sieve_cli::SamplingOptions o;
    o.top_k = 40;
    o.min_p = 0.05f;
    o.samplers = "min_p;top_k;temperature";
    const double floored = collect_and_tail_us(sieve_cli::make_chain(device, o, 1, 151936).plan_estimate(1, 151936));
    o.samplers = "top_k;min_p;temperature";
    const double bounded = collect_and_tail_us(sieve_cli::make_chain(device, o, 1, 151936).plan_estimate(1, 151936));
    // merge_lists_us's rounds over n entries: 32 lists, then 16 runs, ...,
    // 2; a round of p pairs keeps at most p x 40 of them, 2 barriers and
    // shared accesses of 2 p (placing the pairs) + log2(p) + log2(80) (the
    // pair and the co-rank) + 3 ceil(outputs / 256), at 0.065 and 0.065 / 4 us.
    auto rounds = [](double n) {
        double us = 0;
        for (double pairs = 16; pairs >= 1; pairs /= 2)
            us += 2 * 0.065 + 0.065 / 4 * (2 * pairs + std::log2(pairs) + 7 + 3 * std::ceil(std::min(pairs * 40, n) / 256));
        return us;
    };
    const double want = 3 * 0.75 + rounds(40) - rounds(1280);
    EXPECT_NEAR(floored - bounded, want, 1e-6) << "floored " << floored << " us, top-k first " << bounded << " us";
}

// The raw log-probabilities pass's top 20 (raw_stats.comp): 20 picks, a
// maximum and a sum on each chunk's workgroup and again on the row's last.
// 521950c's took log2(256) + 1 = 9 barrier steps each and read the chunks'
// lists again every round on the last; today's two a pick, two for the
// maximum and the sum together, and one read of the lists (stated constants,
// estimate.md: a step is a barrier and a shared access, 0.065 + 0.065 / 4 us;
// a dependent read 0.2 us). One row: one wave on both.
TEST(Estimate, ChargesTheRawLogprobsRounds) {
    sieve_test::ScopedEnv units("SIEVE_COMPUTE_UNITS", "132");
    const sieve_cli::Device device = gpu_profile_device();
    sieve::Chain chain = sieve_cli::make_chain(device, sieve_cli::SamplingOptions{}, 1, 151936);
    EXPECT_EQ(total_us(chain.plan_estimate(1, 151936), "raw_stats"), 0.0) << "no logprobs, no pass";
    ASSERT_EQ(sieve_chain_set_logprobs(chain.get(), 20), SIEVE_OK) << sieve_last_error();
    const double now = total_us(chain.plan_estimate(1, 151936), "raw_stats");
    const double then = total_us(sieve_test::plan_estimate_as_run(chain, 1, 151936, "521950c"), "raw_stats");
    const double step = 0.065 + 0.065 / 4;
    const double want = 2 * (22 * 9 - 42) * step + 19 * 0.2;
    EXPECT_NEAR(then - now, want, 1e-6) << "today " << now << " us, 521950c's " << then << " us";
    EXPECT_GT(now, 5.0 + 6.0 + 2 * 42 * step + 0.2 - 1e-6) << "launch, fixed term, rounds and the read of the lists";
}

TEST(Estimate, TheCpuBackendHasNoPlan) {
    const sieve_cli::Device twin = sieve_cli::open_cpu_twin();
    sieve::Chain chain = sieve_cli::make_chain(twin, sieve_cli::SamplingOptions{}, 1, 1000);
    EXPECT_TRUE(chain.plan_estimate(1, 1000).empty());
}

} // namespace
