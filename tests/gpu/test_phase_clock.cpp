// The phase-clock build (cmake -DSIEVE_PHASE_CLOCK=ON; a diagnostic, never
// the product: shaders/include/phase_clock.glsl). Only that build compiles
// these tests: in any other the marks do not exist. The collect tail must mark
// the phases it passes in order, leave the others unset, and log nothing for
// a call without a tail (SIEVE_PHASE_LOG, engine/vulkan/phase_log.cpp).
#ifdef SIEVE_PHASE_CLOCK
#include "gpu_layout.h"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using sieve_test::Shape;

using namespace sieve::glsl;  // PH_*, PHASE_MARKS

struct Logged {
    int rows = 0, row = 0;
    std::vector<std::optional<uint32_t>> cycles, ticks;
};

std::vector<Logged> read_log(const std::string& path) {
    std::vector<Logged> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        Logged l;
        l.rows = j.at("rows");
        l.row = j.at("row");
        for (const auto* key : {"cycles", "ticks"}) {
            auto& dst = std::string(key) == "cycles" ? l.cycles : l.ticks;
            for (const auto& v : j.at(key)) dst.push_back(v.is_null() ? std::nullopt : std::optional<uint32_t>(v));
        }
        out.push_back(l);
    }
    return out;
}

// Samples `calls` times with the log pointed at a fresh file; returns its lines.
std::vector<Logged> sample_logged(sieve::Context& ctx, const std::string& samplers, int32_t rows, int calls) {
    const int32_t vocab = 151936;
    // A new name each time: the library keeps the file it opened while the
    // variable names the same path.
    static int files = 0;
    const std::string path =
        testing::TempDir() + "phase_clock_" + std::to_string(getpid()) + "_" + std::to_string(files++) + ".jsonl";
    std::remove(path.c_str());
    sieve_test::ScopedEnv log("SIEVE_PHASE_LOG", path.c_str());
    sieve::Chain chain(ctx, sieve_test::chain_desc(samplers, rows, vocab, 0.8f, 7));
    const std::vector<float> logits = sieve_test::make_rows(Shape::Zipf, rows, vocab, 11);
    for (int c = 0; c < calls; ++c)
        for (const sieve_token& t : chain.sample(logits.data(), rows, vocab)) EXPECT_EQ(t.status, SIEVE_OK);
    auto lines = read_log(path);
    std::remove(path.c_str());
    return lines;
}

// The marks `set` are set and every other one unset; the set ones do not go
// back in time on either clock.
void expect_marks(const Logged& l, const std::vector<uint32_t>& set) {
    ASSERT_EQ(l.cycles.size(), size_t(PHASE_MARKS));
    ASSERT_EQ(l.ticks.size(), size_t(PHASE_MARKS));
    for (uint32_t m = 0; m < PHASE_MARKS; ++m) {
        const bool want = std::find(set.begin(), set.end(), m) != set.end();
        EXPECT_EQ(l.ticks[m].has_value(), want) << "mark " << m;
        EXPECT_EQ(l.cycles[m].has_value(), want) << "mark " << m;
    }
    uint32_t last_ticks = 0, last_cycles = 0;
    for (uint32_t m : set) {
        if (!l.ticks[m] || !l.cycles[m]) continue;
        EXPECT_GE(*l.ticks[m], last_ticks) << "mark " << m;
        EXPECT_GE(*l.cycles[m], last_cycles) << "mark " << m;
        last_ticks = *l.ticks[m];
        last_cycles = *l.cycles[m];
    }
    EXPECT_GT(last_ticks, 0u) << "the tail's whole span";
}

TEST(PhaseClock, TheFusedTailMarksItsChunkEachSamplerAndTheDraw) {
    // (Zipf rows at top-k 40: the chunks take the register picks, pick_chunk.)
    sieve_test::ScopedEnv profile("SIEVE_PROFILE", "gpu");  // a GPU's plan: the tail in the chunks' dispatch
    auto ctx = sieve_test::gpu_context();
    const auto lines = sample_logged(ctx, "top_k;top_p;min_p;temperature;dist", 2, 3);
    ASSERT_EQ(lines.size(), 6u);  // rows 0 and 1, each call
    for (size_t i = 0; i < lines.size(); ++i) {
        EXPECT_EQ(lines[i].rows, 2);
        EXPECT_EQ(lines[i].row, int(i % 2));
        expect_marks(lines[i], {PH_READ, PH_SELECT, PH_COUNTED, PH_WRITTEN, PH_CHUNK, PH_ARRIVED, PH_STATS, PH_LOCATED,
                                PH_LISTS, PH_OP0, PH_OP0 + 1, PH_OP0 + 2, PH_OP0 + 3, PH_SELECTOR, PH_TOTAL, PH_END});
    }
}

TEST(PhaseClock, ATailOfItsOwnHasNoChunkMark) {
    sieve_test::ScopedEnv profile("SIEVE_PROFILE", "device");  // a CPU device's plan: collect_tail.comp
    auto ctx = sieve_test::gpu_context();
    const auto lines = sample_logged(ctx, "min_p;dist", 1, 2);
    ASSERT_EQ(lines.size(), 2u);
    for (const Logged& l : lines)
        expect_marks(l, {PH_ARRIVED, PH_STATS, PH_LOCATED, PH_LISTS, PH_OP0, PH_SELECTOR, PH_TOTAL, PH_END});
}

TEST(PhaseClock, ACallWithoutATailLogsNothing) {
    sieve_test::ScopedEnv profile("SIEVE_PROFILE", "gpu");
    auto ctx = sieve_test::gpu_context();
    EXPECT_TRUE(sample_logged(ctx, "greedy", 1, 2).empty());
    EXPECT_TRUE(sample_logged(ctx, "temperature;dist", 1, 2).empty());
}

} // namespace
#endif
