// A GPU's plan keeps a selection chain's key levels apart (gpu_plan.hpp:
// KeyLevels::Apart): the call's first submission runs the statistics, level 0
// and the gather; only when level 0 left some row's bin larger than the
// candidate buffer does the chain submit the near key levels and the gather
// again, and only when those left one so the far levels and the gather (or,
// while its calls keep needing them, the near levels or all with the first
// part).
// The rows drawn first must stay as drawn (their phase PHASE_DONE), the rows
// left must be finished, and both must equal the twin. The gpu profile makes
// any device record a GPU's plan.
#include "app_logits.hpp"
#include "reference/reference.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using sieve_test::Shape;

sieve::Context gpu_plan_context() {
    sieve::ContextOptions o = sieve_test::gpu_options();
    o.profile("gpu");
    return sieve::Context(o);
}

// A peaked row's level-0 bin holds its one large logit; a flat row (logits
// of standard deviation 0.05) spreads its mass over the bins, each with
// thousands of logits: level 1 and more where the bin drawn holds more than
// the candidate buffer (2048 on lavapipe, 4096 on an H200: not every bin
// does). A plateau row (1 + N(0, 0.05^2)) lies in two level-0 bins (a key's
// top 11 bits: a quarter of a binade), each holding about half the row: past
// any device's buffer, level 1 every call.
enum class Row { Peaked, Flat, Plateau };

std::vector<float> rows_of(const std::vector<Row>& kinds, int32_t vocab, uint32_t call) {
    std::vector<float> out;
    for (size_t r = 0; r < kinds.size(); ++r) {
        const uint32_t seed = 101u * call + static_cast<uint32_t>(r);
        std::vector<float> row = sieve_test::make_row(Shape::Gaussian, vocab, seed);
        if (kinds[r] == Row::Flat)
            for (float& x : row) x *= 0.025f;
        else if (kinds[r] == Row::Plateau)
            for (float& x : row) x = 1.0f + 0.025f * x;
        else
            row[seed % row.size()] = 25.0f;
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

TEST(SelectionLevels, KeyLevelsApartRunOnlyForCallsWhoseRowsNeedThem) {
    auto gpu = gpu_plan_context();
    const int32_t rows = 3, vocab = 151936;
    const float temperature = 0.8f;
    const std::string samplers = "temperature;dist";
    ASSERT_LT(static_cast<int32_t>(gpu.device_info().candidate_capacity), vocab);
    sieve::Chain chain(gpu, sieve_test::chain_desc(samplers, rows, vocab, temperature, 5));
    for (int32_t r = 0; r < rows; ++r) chain.set(SIEVE_PARAM_SEED, 40u + r, r);
    const auto kinds = sieve_test::twin_chain(samplers);

    // The plan's own figures: stats, level 0, gather (the levels are not in
    // the first part).
    EXPECT_EQ(chain.plan_figures(rows, vocab), std::make_pair(3u, 3u));
    chain.set_profiling(true);

    // The mixed calls put rows the first gather draws beside rows the second
    // one draws, in one row group.
    struct Call {
        std::vector<Row> rows;
        bool deep;
    };
    const Call calls[] = {{{Row::Peaked, Row::Peaked, Row::Peaked}, false},
                          {{Row::Peaked, Row::Plateau, Row::Peaked}, true},
                          {{Row::Plateau, Row::Peaked, Row::Plateau}, true},
                          {{Row::Peaked, Row::Peaked, Row::Peaked}, false}};
    sieve_test::twin::Tally tally;
    uint32_t step = 0;
    for (const Call& call : calls) {
        SCOPED_TRACE("call " + std::to_string(step));
        const std::vector<float> logits = rows_of(call.rows, vocab, step);
        const sieve_counters before = chain.counters();
        const std::vector<sieve_token> got = chain.sample(logits.data(), rows, vocab);
        const sieve_counters after = chain.counters();
        EXPECT_EQ(after.submits - before.submits, call.deep ? 2u : 1u);
        EXPECT_EQ(after.recordings, 1u);  // both parts recorded with the first call
        EXPECT_EQ(after.cpu_fallback_rows, before.cpu_fallback_rows);
        // The near levels' part: level 1 at least and the gather again.
        EXPECT_GE(after.dispatches - before.dispatches, call.deep ? 5u : 3u);
        if (!call.deep) {
            EXPECT_EQ(after.dispatches - before.dispatches, 3u);
        }
        // Its stages follow the first part's: level 1 comes after the first
        // gather, and only in a deep call.
        const std::vector<sieve_stage_time> stages = chain.stage_times();
        ASSERT_GE(stages.size(), 3u);
        EXPECT_EQ(std::string(stages[2].stage), "gather");
        const bool levels = stages.size() > 3 && std::string(stages[3].stage) == "mass_histogram" && stages[3].level == 1;
        EXPECT_EQ(levels, call.deep);
        for (int32_t r = 0; r < rows; ++r) {
            SCOPED_TRACE("row " + std::to_string(r));
            sieve::ref::RowParams params;
            params.temperature = temperature;
            params.seed = 40u + static_cast<uint32_t>(r);
            const float* row = logits.data() + static_cast<size_t>(r) * vocab;
            sieve_test::twin::compare_token(got[static_cast<size_t>(r)],
                                            sieve_test::twin::Row{kinds, row, vocab, params}, step, &tally);
            // A row's passes: stats, level 0, gather; a plateau row's key
            // levels besides.
            if (call.rows[static_cast<size_t>(r)] == Row::Peaked)
                EXPECT_EQ(got[static_cast<size_t>(r)].row_passes, 3u);
            else
                EXPECT_GT(got[static_cast<size_t>(r)].row_passes, 3u);
        }
        ++step;
    }
    EXPECT_LE(tally.token_near_cdf_boundary + tally.token_near_tie_order, 1);
}

// One chain's calls on rows the test builds call by call: each call's
// tokens against the twin (the chain's temperature, seed `seed` + row) and
// its submissions.
class CountedCalls {
public:
    CountedCalls(sieve::Context& gpu, const std::string& samplers, int32_t rows, int32_t vocab, float temperature,
                 uint32_t seed)
        : chain(gpu, sieve_test::chain_desc(samplers, rows, vocab, temperature, 5)),
          kinds_(sieve_test::twin_chain(samplers)), rows_(rows), vocab_(vocab), temperature_(temperature),
          seed_(seed) {
        for (int32_t r = 0; r < rows; ++r) chain.set(SIEVE_PARAM_SEED, seed + static_cast<uint32_t>(r), r);
    }

    std::vector<sieve_token> call(const std::vector<float>& logits) {
        const uint64_t before = chain.counters().submits;
        const std::vector<sieve_token> got = chain.sample(logits.data(), rows_, vocab_);
        submits.push_back(chain.counters().submits - before);
        for (int32_t r = 0; r < rows_; ++r) {
            SCOPED_TRACE("call " + std::to_string(step) + " row " + std::to_string(r));
            sieve::ref::RowParams params;
            params.temperature = temperature_;
            params.seed = seed_ + static_cast<uint32_t>(r);
            const float* row = logits.data() + static_cast<size_t>(r) * vocab_;
            sieve_test::twin::compare_token(got[static_cast<size_t>(r)],
                                            sieve_test::twin::Row{kinds_, row, vocab_, params}, step, &tally_);
        }
        ++step;
        return got;
    }

    // Tokens near a CDF boundary or a tie order: at most one over the calls.
    void expect_rare() const { EXPECT_LE(tally_.token_near_cdf_boundary + tally_.token_near_tie_order, 1); }

    sieve::Chain chain;
    std::vector<uint64_t> submits;  // each call's
    uint32_t step = 0;              // calls so far

private:
    std::vector<sieve::ref::SamplerKind> kinds_;
    int32_t rows_, vocab_;
    float temperature_;
    uint32_t seed_;
    sieve_test::twin::Tally tally_;
};

// A recording whose calls keep needing the key levels runs its near levels
// with its first part, one submission (Recording::deep_rate past
// kWholeAboveDeepRate: flat rows need no far ones), and goes
// back to two parts once they stop: the same tokens either way, and nothing
// recorded again.
TEST(SelectionLevels, CallsThatKeepNeedingTheLevelsRunThemInOneSubmission) {
    auto gpu = gpu_plan_context();
    const int32_t vocab = 151936;
    CountedCalls calls(gpu, "temperature;dist", 2, vocab, 0.8f, 80);
    const std::vector<uint64_t>& submits = calls.submits;
    auto call = [&](Row second) { calls.call(rows_of({Row::Peaked, second}, vocab, calls.step)); };
    // Flat rows every call: two submissions until the share passes a
    // quarter (three calls at a weight of 1/8), then one.
    for (int i = 0; i < 8; ++i) call(Row::Flat);
    EXPECT_EQ(submits[0], 2u);
    EXPECT_EQ(submits[1], 2u);
    for (size_t i = 4; i < submits.size(); ++i) EXPECT_EQ(submits[i], 1u) << "flat call " << i;
    // Peaked rows only: one submission whatever the share; once it has
    // fallen, a flat row takes two parts again.
    for (int i = 0; i < 16; ++i) call(Row::Peaked);
    for (size_t i = 8; i < submits.size(); ++i) EXPECT_EQ(submits[i], 1u) << "peaked call " << i;
    call(Row::Flat);
    EXPECT_EQ(submits.back(), 2u);
    EXPECT_EQ(calls.chain.counters().recordings, 1u);
    calls.expect_rare();
}

// A row whose chosen bin keeps its width level after level: a cluster of
// CAP + 500 logits at consecutive keys from 1.0 down (1.0 and the floats
// below it), one logit 16^j - 1 keys below 1.0 for j = 1..7, the rest -100
// (no mass, another level-0 bin). Each level's bin holding the cluster also
// holds the next of those logits at its low end, so its 16 key ranges keep
// more than CAP members in one until a range holds at most 16^3 keys: key
// level 4 at least, past the near levels (kNearKeyLevels, 3).
std::vector<float> nested_row(int32_t vocab, uint32_t cap, uint32_t seed) {
    std::vector<float> row(static_cast<size_t>(vocab), -100.0f);
    uint32_t top;
    const float one = 1.0f;
    std::memcpy(&top, &one, sizeof top);
    auto below_one = [&](uint32_t keys) {
        const uint32_t bits = top - keys;
        float x;
        std::memcpy(&x, &bits, sizeof x);
        return x;
    };
    const uint32_t start = (seed * 7919u) % static_cast<uint32_t>(vocab), cluster = cap + 500u;
    for (uint32_t i = 0; i < cluster; ++i) row[(start + i) % static_cast<uint32_t>(vocab)] = below_one(i);
    uint32_t keys = 1;
    for (uint32_t j = 1; j <= 7; ++j) {
        keys *= 16u;
        row[(start + cluster + 97u * j) % static_cast<uint32_t>(vocab)] = below_one(keys - 1u);
    }
    return row;
}

// Rows that need the far key levels (past kNearKeyLevels) take a third part
// after the near levels' (a dist row from level 0, a min-p row past the buffer
// from the collect tail), and while calls keep needing them the whole plan
// at once; once they stop, a call's near levels run with its first part
// (rows still needing level 1) and a nested row's far levels apart. Every
// token equals the twin's.
TEST(SelectionLevels, RowsPastTheNearLevelsTakeTheFarOnes) {
    auto gpu = gpu_plan_context();
    const int32_t vocab = 151936;
    const uint32_t cap = gpu.device_info().candidate_capacity;
    for (const std::string samplers : {"temperature;dist", "min_p;temperature"}) {
        SCOPED_TRACE(samplers);
        CountedCalls calls(gpu, samplers, 2, vocab, 1.0f, 60);
        const std::vector<uint64_t>& submits = calls.submits;
        // Row 0 nested or flat (levels 1 to 3 at most), row 1 peaked.
        auto call = [&](bool nested) {
            std::vector<float> logits =
                nested ? nested_row(vocab, cap, calls.step) : rows_of({Row::Flat}, vocab, calls.step);
            const std::vector<float> peaked = rows_of({Row::Peaked}, vocab, calls.step);
            logits.insert(logits.end(), peaked.begin(), peaked.end());
            const std::vector<sieve_token> got = calls.call(logits);
            EXPECT_EQ(calls.chain.counters().cpu_fallback_rows, 0u);
            // The first pass (dist: statistics and level 0; min-p: the
            // collect pass), levels 1 to 4 at least, the gather.
            if (nested) {
                EXPECT_GE(got[0].row_passes, samplers == "temperature;dist" ? 7u : 6u);
            }
        };
        // Nested rows: three parts until the far levels' share passes a
        // quarter (three calls at a weight of 1/8), then the whole plan.
        for (int i = 0; i < 6; ++i) call(true);
        for (size_t i = 0; i < 3; ++i) EXPECT_EQ(submits[i], 3u) << "nested call " << i;
        for (size_t i = 3; i < 6; ++i) EXPECT_EQ(submits[i], 1u) << "nested call " << i;
        // Flat rows: level 1 every call, the far levels never; their share
        // falls below a quarter after ten calls, level 1's does not.
        for (int i = 0; i < 12; ++i) call(false);
        for (size_t i = 6; i < submits.size(); ++i) EXPECT_LE(submits[i], 2u) << "flat call " << i;
        EXPECT_EQ(submits.back(), 1u);
        // Now a nested row: the near levels with the first part, the far
        // ones apart.
        call(true);
        EXPECT_EQ(submits.back(), 2u);
        EXPECT_EQ(calls.chain.counters().recordings, 1u);
        calls.expect_rare();
    }
}

// The app's own submissions (sieve_sample_vulkan_async, sieve_chain_record)
// are not the chain's to continue: their recordings keep the key levels in
// the one command buffer. The async call and the blocking one (two parts)
// give the same tokens bit for bit, as the host input does.
TEST(SelectionLevels, AsyncCallsKeepTheKeyLevelsInlineAndAgree) {
    sieve_test::AppDevice app;
    const sieve_vulkan_device handles = app.handles(0);
    sieve::ContextOptions options;
    options.on_message(sieve_test::count_validation_message, nullptr).profile("gpu");
    sieve_context* raw = nullptr;
    ASSERT_EQ(sieve_context_create_vulkan(&handles, &options.raw, &raw), SIEVE_OK) << sieve_last_error();
    sieve::Context ctx(raw);
    const int32_t rows = 2, vocab = 151936;
    sieve_test::AppLogits a = sieve_test::make_app_logits(app, SIEVE_DTYPE_F32, Shape::Ties, rows, vocab, vocab, 0, 9);
    auto desc = sieve_test::chain_desc("temperature;dist", rows, vocab, 0.8f, 11);
    sieve::Chain async(ctx, desc), blocking(ctx, desc), host(ctx, desc);
    app.copy_on_queue(a.staging, a.tensor);
    for (int step = 0; step < 2; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const sieve_counters async_before = async.counters(), blocking_before = blocking.counters();
        ASSERT_EQ(sieve_sample_vulkan_async(async.get(), &a.desc, nullptr), SIEVE_OK) << sieve_last_error();
        std::vector<sieve_token> got(rows);
        ASSERT_EQ(sieve_chain_wait(async.get(), 120ull * 1000 * 1000 * 1000, got.data()), SIEVE_OK)
            << sieve_last_error();
        const std::vector<sieve_token> want = sieve_test::sample_vulkan(blocking, a.desc);
        sieve_test::expect_same(got, want);
        sieve_test::expect_same(got, host.sample(a.host));
        // Rows of six values, each held by about 25000 logits, need level 1:
        // one submission async (the levels ran in it), two blocking.
        EXPECT_EQ(async.counters().submits - async_before.submits, 1u);
        EXPECT_EQ(blocking.counters().submits - blocking_before.submits, 2u);
        EXPECT_GT(async.counters().dispatches - async_before.dispatches, 3u);
        for (const sieve_token& t : got) EXPECT_GT(t.row_passes, 3u);
    }
}

// dist's passes read a chunk four logits at a time (logits4.glsl:
// chunk_quad): a vec4 a load (a CPU device: a texel fetch) where the chunk's
// ends are multiples of 4, else one by one, the overhang past the chunk's end
// repeating its last logit for the pass to mask. Rows whose only finite
// logits are equal ones at each chunk's two first and two last ids, on a CPU
// device's plan of 1 to 4 chunks (one a compute unit), over vocabularies
// whose chunks end aligned and not: each logit is one candidate of the
// gather (one read twice, by its own chunk and by the overhang of the chunk
// before, would draw one id for two), so every token equals the twin's.
TEST(SelectionLevels, ChunksOfAnyAlignmentGatherEachLogitOnce) {
    const std::string samplers = "temperature;dist";
    const auto kinds = sieve_test::twin_chain(samplers);
    const float temperature = 0.8f;
    sieve_test::twin::Tally tally;
    for (const char* units : {"1", "2", "3", "4"}) {
        sieve::Context device = sieve_test::device_plan_context(units);
        const bool cpu_plan = device.device_info().type == SIEVE_DEVICE_CPU;
        for (int32_t vocab : {10000, 10001, 10002}) {
            SCOPED_TRACE(std::string("units ") + units + " vocab " + std::to_string(vocab));
            ASSERT_LT(static_cast<int32_t>(device.device_info().candidate_capacity), vocab);
            sieve::Chain chain(device, sieve_test::chain_desc(samplers, 1, vocab, temperature, 3));
            const uint32_t chunks = sieve_test::stage_workgroups(chain, 1, vocab, "gather");
            ASSERT_GT(chunks, 0u);
            if (cpu_plan) {
                EXPECT_EQ(chunks, static_cast<uint32_t>(std::stoi(units)));
            }
            const int32_t size = (vocab + static_cast<int32_t>(chunks) - 1) / static_cast<int32_t>(chunks);
            std::vector<float> row(static_cast<size_t>(vocab), -std::numeric_limits<float>::infinity());
            for (int32_t end = size; end < vocab; end += size)  // two each side of every chunk's end
                for (int32_t i = end - 2; i < end + 2; ++i) row[static_cast<size_t>(i)] = 1.5f;
            row[0] = row[static_cast<size_t>(vocab) - 1] = 1.5f;
            for (uint32_t step = 0; step < 12; ++step) {
                sieve_test::twin::sample_against_twin(chain, kinds, row, temperature, 7u + step, &tally);
            }
        }
    }
    EXPECT_LE(tally.token_near_cdf_boundary + tally.token_near_tie_order, 1);
}

} // namespace
