// The stateful samplers on the GPU against the CPU twin: penalties and DRY read
// the history of each row's sequence slot, which the GPU's own draws extend
// (tokens drawn on the GPU and fed back through the GPU history). Also the slot
// operations (accept, copy, save/restore, reset, the row -> slot map) on both
// backends, a 10 000-token generation in lockstep with the twin, and the
// inputs these calls refuse.
//
// Agreement rules: twin_compare.hpp.
#include "reference/reference.hpp"
#include "vulkan/slot_layout.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"
#include "twin_params.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using sieve::ref::SlotState;
using sieve_test::Profile;
using sieve_test::Shape;
using namespace sieve_test::twin;

// Tokens the boosted rows favour, so that generations repeat themselves and
// the penalties and DRY have something to act on.
std::vector<int32_t> alphabet(int32_t vocab) {
    std::vector<int32_t> out;
    for (int32_t i = 0; i < 12; ++i) out.push_back(static_cast<int32_t>((static_cast<int64_t>(i) * 7919 + 3) % vocab));
    return out;
}

// A row of `shape` whose alphabet tokens are lifted by 6 (a model that keeps
// choosing among a few tokens: the situation repetition control is for).
std::vector<float> boosted_rows(Shape shape, int32_t rows, int32_t vocab, uint32_t seed) {
    auto logits = sieve_test::make_rows(shape, rows, vocab, seed);
    for (int32_t r = 0; r < rows; ++r)
        for (int32_t t : alphabet(vocab)) {
            float& x = logits[static_cast<size_t>(r) * vocab + static_cast<size_t>(t)];
            if (std::isfinite(x)) x += 6.0f;
        }
    return logits;
}

// "penalties", "dry", "both" (llama.cpp-like strengths), "both_long" (windows of
// 4096), "neutral" (the samplers in the chain but off), "mirostat" (tau 5, eta
// 0.1 with penalties on), "adaptive" (target 0.3, decay 0.9).
RowParams history_params(const std::string& name, int32_t vocab) {
    RowParams p;
    p.temperature = 0.9f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.penalty_last_n = 0;
    p.dry_penalty_last_n = 0;
    if (name == "penalties" || name == "both" || name == "both_long") {
        p.penalty_last_n = name == "both_long" ? 4096 : 64;
        p.penalty_repeat = 1.3f;
        p.penalty_freq = 0.2f;
        p.penalty_present = 0.4f;
    }
    if (name == "dry" || name == "both" || name == "both_long") {
        p.dry_multiplier = 0.8f;
        p.dry_base = 1.75f;
        p.dry_allowed_length = 2;
        p.dry_penalty_last_n = name == "both_long" ? 4096 : 256;
        // A single-token breaker (never penalized, restarts repeats) and a
        // two-token one, from the alphabet.
        const auto a = alphabet(vocab);
        p.dry_sequence_breakers = {{a[5]}, {a[7], a[8]}};
    }
    if (name == "mirostat") {
        p.temperature = 1.0f;
        p.mirostat_tau = 5.0f;
        p.mirostat_eta = 0.1f;
        p.penalty_last_n = 64;
        p.penalty_repeat = 1.2f;
    }
    if (name == "adaptive") {
        p.adaptive_target = 0.3f;
        p.adaptive_decay = 0.9f;
    }
    return p;
}

// A chain of one row over `vocab` with histories of up to 4096 tokens
// (temperature 1).
sieve::Chain one_row_history_chain(const sieve::Context& ctx, const char* text, int32_t vocab, uint32_t seed) {
    sieve::ChainDesc d = sieve_test::chain_desc(text, 1, vocab, 1.0f, seed);
    d.history_capacity(4096);
    return sieve::Chain(ctx, d);
}

// The whole state of a slot as the GPU left it (history, mu, adaptive-p's
// average), through the public snapshot: the blob is the slot's record
// (engine/vulkan/slot_layout.hpp) after a tag and the capacity.
SlotState gpu_slot_state(sieve::Chain& chain, int32_t slot, uint32_t capacity) {
    const auto blob = chain.save_slot(slot);
    std::vector<uint32_t> words(blob.size() / 4);
    std::memcpy(words.data(), blob.data(), words.size() * 4);
    return sieve::slot_to_state(words.data() + 2, capacity);
}

// What the twin learnt drawing `token` equals what the GPU stored (mu and the
// adaptive-p average in float: within 1e-5 relative).
void expect_same_learnt(const SlotState& gpu, const SlotState& twin) {
    EXPECT_EQ(gpu.mu_set, twin.mu_set);
    if (gpu.mu_set && twin.mu_set) {
        EXPECT_NEAR(gpu.mu, twin.mu, 1e-5 * std::max(1.0f, std::fabs(twin.mu))) << "mu";
    }
    EXPECT_EQ(gpu.adaptive_set, twin.adaptive_set);
    if (gpu.adaptive_set && twin.adaptive_set) {
        EXPECT_NEAR(gpu.adaptive_weighted_sum, twin.adaptive_weighted_sum, 1e-5 * std::max(1.0f, twin.adaptive_weighted_sum));
        EXPECT_NEAR(gpu.adaptive_total_weight, twin.adaptive_total_weight, 1e-5 * std::max(1.0f, twin.adaptive_total_weight));
    }
}

// A prompt with repeats: the alphabet in a pattern that DRY sees as a
// repetition, different per row.
std::vector<int32_t> prompt(int32_t vocab, int32_t row, size_t length) {
    const auto a = alphabet(vocab);
    std::vector<int32_t> out;
    std::mt19937 rng(17u + static_cast<uint32_t>(row));
    const std::vector<int32_t> motif = {a[0], a[1 + row % 3], a[2], a[3]};
    while (out.size() < length) {
        if (rng() % 3 == 0) {
            out.push_back(a[rng() % a.size()]);
        } else {
            out.insert(out.end(), motif.begin(), motif.end());
        }
    }
    out.resize(length);
    return out;
}

struct HistoryCase {
    const char* chain;
    int32_t vocab;
    Shape shape;
    const char* preset;
};

std::string case_name(const HistoryCase& c) {
    std::string chain = c.chain;
    for (auto& ch : chain)
        if (ch == ';') ch = '_';
    return chain + "_v" + std::to_string(c.vocab) + "_" + sieve_test::shape_name(c.shape) + "_" + c.preset;
}

// Two rows on slots 3 and 1 of 4, each with its own prompt, seed and
// temperature; `steps` tokens drawn on the GPU, each compared with the twin
// fed the GPU's own history (read back), and that history checked against
// the prompt plus the tokens drawn.
void run_history_case(const HistoryCase& c, Profile profile, int steps) {
    SCOPED_TRACE(case_name(c));
    const auto kinds = sieve_test::twin_chain(c.chain);
    ASSERT_FALSE(kinds.empty());
    constexpr int32_t kRows = 2;
    const std::vector<int32_t> slots = {3, 1};
    auto ctx = sieve_test::gpu_context(profile);
    sieve::ChainDesc desc = sieve_test::chain_desc(c.chain, kRows, c.vocab, 0.9f, 1);
    desc.slots(4).history_capacity(4096);
    sieve::Chain chain(ctx, desc);
    chain.set_slots(slots);
    std::vector<RowParams> params;
    std::vector<std::vector<int32_t>> expected(kRows);
    for (int32_t r = 0; r < kRows; ++r) {
        RowParams p = history_params(c.preset, c.vocab);
        p.seed = 500u + 31u * static_cast<uint32_t>(r);
        p.temperature *= r == 0 ? 1.0f : 1.3f;
        set_row_params(chain, r, p);
        params.push_back(p);
        expected[static_cast<size_t>(r)] = prompt(c.vocab, r, 40 + 25 * static_cast<size_t>(r));
        chain.accept(r, expected[static_cast<size_t>(r)]);
    }
    Tally tally;
    for (int step = 0; step < steps; ++step) {
        const auto logits = boosted_rows(c.shape, kRows, c.vocab, 900u + static_cast<uint32_t>(step));
        std::vector<SlotState> states(kRows);
        for (int32_t r = 0; r < kRows; ++r) {
            states[static_cast<size_t>(r)] = gpu_slot_state(chain, slots[static_cast<size_t>(r)], 4096);
            ASSERT_EQ(states[static_cast<size_t>(r)].history, expected[static_cast<size_t>(r)]) << "row " << r << " step " << step;
        }
        std::vector<Row> rows;
        for (int32_t r = 0; r < kRows; ++r)
            rows.push_back({kinds, logits.data() + static_cast<size_t>(r) * c.vocab, c.vocab,
                            params[static_cast<size_t>(r)], &states[static_cast<size_t>(r)]});
        if (step % 4 == 0) {
            for (int32_t r = 0; r < kRows; ++r) {
                SCOPED_TRACE("distribution, step " + std::to_string(step) + " row " + std::to_string(r));
                compare_distribution(gpu_distribution(chain, logits, kRows, c.vocab, r), &rows[static_cast<size_t>(r)],
                                     static_cast<uint32_t>(step), &tally);
                rows[static_cast<size_t>(r)].params = params[static_cast<size_t>(r)];
            }
        }
        const auto out = chain.sample(logits.data(), kRows, c.vocab);
        for (int32_t r = 0; r < kRows; ++r) {
            SCOPED_TRACE("token, step " + std::to_string(step) + " row " + std::to_string(r));
            const Row& row = rows[static_cast<size_t>(r)];
            compare_token(out[static_cast<size_t>(r)], row, static_cast<uint32_t>(step), &tally);
            expected[static_cast<size_t>(r)].push_back(out[static_cast<size_t>(r)].token);
            SlotState learnt = states[static_cast<size_t>(r)];
            const auto want = sieve::ref::sample_row(row.kinds, row.logits, row.vocab, row.params,
                                                     static_cast<uint32_t>(step), 0, &learnt);
            if (want.token == out[static_cast<size_t>(r)].token)
                expect_same_learnt(gpu_slot_state(chain, slots[static_cast<size_t>(r)], 4096), learnt);
        }
        if (testing::Test::HasFatalFailure()) return;
    }
    EXPECT_LE(tally.token_near_cdf_boundary, 1) << "tokens that differ at a CDF boundary";
    const auto counters = chain.counters();
    std::printf("%s: %llu rows of %d sample and some distribution calls finished by the CPU twin\n", case_name(c).c_str(),
                static_cast<unsigned long long>(counters.cpu_fallback_rows), steps * kRows);
}

const HistoryCase kCases[] = {
    // The selection-level path (no truncation), row larger than the candidate buffer.
    {"penalties;dry;temperature", 32000, Shape::Zipf, "both"},
    {"penalties;temperature", 1000, Shape::Gaussian, "penalties"},
    // The collect pass and its tail.
    {"penalties;dry;top_k;temperature", 32000, Shape::Gaussian, "both"},
    {"dry;top_k;min_p;temperature", 1000, Shape::Zipf, "dry"},
    // llama.cpp's default chain with its repetition samplers on.
    {"penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", 151936, Shape::Zipf, "both"},
    // DRY before the penalties (the order changes the logit: p(l - d) vs p(l) - d).
    {"dry;penalties;top_k;temperature", 32000, Shape::Peaked, "both"},
    // Top-p past the buffer (the wide passes) over adjusted logits; greedy.
    {"penalties;dry;top_p;temperature", 32000, Shape::Gaussian, "both"},
    {"penalties;dry;greedy", 32000, Shape::Zipf, "both"},
    // Masked logits (history tokens among them) and long windows.
    {"penalties;dry;top_k;temperature", 32000, Shape::Masked, "both_long"},
    // In the chain but off: no history pass, no change.
    {"penalties;dry;top_k;temperature", 32000, Shape::Zipf, "neutral"},
    // The learning final samplers: mirostat v2 and v1 (llama.cpp's common chain:
    // temperature then mirostat; the penalties before; v2's floor from the
    // slot's mu over a large row: collect.glsl), after a top-k; adaptive-p
    // after min-p, alone on a row the buffer holds whole, and on one it does not
    // (the twin finishes such rows and learns in the GPU's place).
    {"penalties;temperature;mirostat_v2", 32000, Shape::Zipf, "mirostat"},
    {"temperature;mirostat_v2", 151936, Shape::Peaked, "mirostat"},
    {"penalties;temperature;mirostat", 32000, Shape::Zipf, "mirostat"},
    {"top_k;temperature;mirostat_v2", 1000, Shape::Gaussian, "mirostat"},
    {"penalties;temperature;mirostat", 151936, Shape::Peaked, "mirostat"},
    {"min_p;temperature;adaptive_p", 32000, Shape::Zipf, "adaptive"},
    {"adaptive_p", 1000, Shape::Gaussian, "adaptive"},
    {"top_k;adaptive_p", 32000, Shape::Masked, "adaptive"},
    {"adaptive_p", 32000, Shape::Zipf, "adaptive"},
};

class GpuHistoryChain : public testing::TestWithParam<HistoryCase> {};

TEST_P(GpuHistoryChain, TokensFedBackAgreeWithTwin) { run_history_case(GetParam(), Profile::Full, 16); }

INSTANTIATE_TEST_SUITE_P(Cases, GpuHistoryChain, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<HistoryCase>& info) { return case_name(info.param); });

TEST(GpuHistoryConstrained, TokensFedBackAgreeWithTwin) {
    run_history_case({"penalties;dry;top_k;temperature", 32000, Shape::Zipf, "both"}, Profile::Constrained, 12);
}

// The dispatch figures: the history pass adds no full-row pass, and one
// dispatch: one workgroup per row on a CPU device's plan; a GPU's splits a
// long history (4096 tokens: 64 workgroups per row), and nothing clears
// before it (the previous call's last workgroup emptied the hash). Rows with
// the samplers off add nothing.
TEST(GpuHistoryPlan, OneDispatchNoRowPass) {
    auto ctx = sieve_test::gpu_context();
    const char* chain_text = "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature";
    auto desc = sieve_test::chain_desc(chain_text, 1, 151936, 0.8f, 3);
    desc.history_capacity(4096);
    sieve::Chain chain(ctx, desc);
    const auto off = chain.plan_figures(1, 151936);
    set_row_params(chain, 0, history_params("both", 151936));
    const auto on = chain.plan_figures(1, 151936);
    const sieve_device_info info = ctx.device_info();
    const bool cpu_plan = info.type == SIEVE_DEVICE_CPU && !(info.profile & SIEVE_PROFILE_GPU);
    EXPECT_EQ(on.first, off.first + 1u);
    EXPECT_EQ(on.second, off.second);
    std::vector<uint32_t> history_groups;
    for (const sieve_stage_estimate& e : chain.plan_estimate(1, 151936))
        if (std::string(e.stage) == "history") history_groups.push_back(e.workgroups);
    // A CPU device's plan: a workgroup per core, at most 4 (gpu_plan.cpp, history_groups_for).
    const std::vector<uint32_t> expected{cpu_plan ? std::clamp(info.compute_units, 1u, 4u) : 64u};
    EXPECT_EQ(history_groups, expected);
    chain.accept(0, prompt(151936, 0, 64));
    const auto logits = boosted_rows(Shape::Zipf, 1, 151936, 4);
    const auto before = chain.counters();
    chain.sample(logits.data(), 1, 151936);
    const auto after = chain.counters();
    EXPECT_EQ(after.dispatches - before.dispatches, on.first);
    EXPECT_EQ(after.row_passes - before.row_passes, on.second);
}

// The GPU applies penalties and DRY as it reads a logit, i.e. first: a chain
// placing them after another sampler is created (at llama.cpp's defaults they
// are no-ops) but a row whose penalties act there is refused, while the CPU
// backend runs that order.
TEST(GpuHistoryOrder, ActingAfterAnotherSamplerIsRefusedOnTheGpuOnly) {
    auto gpu_ctx = sieve_test::gpu_context();
    auto cpu_ctx = sieve_test::cpu_context();
    const auto logits = boosted_rows(Shape::Zipf, 1, 1000, 2);
    sieve::Chain gpu(gpu_ctx, sieve_test::chain_desc("top_k;penalties;temperature", 1, 1000, 0.8f, 5));
    sieve::Chain cpu(cpu_ctx, sieve_test::chain_desc("top_k;penalties;temperature", 1, 1000, 0.8f, 5));
    EXPECT_EQ(gpu.sample(logits.data(), 1, 1000)[0].status, SIEVE_OK);
    for (sieve::Chain* c : {&gpu, &cpu}) {
        c->set(SIEVE_PARAM_REPEAT_PENALTY, 1.5);
        c->accept(0, {alphabet(1000)[0]});
    }
    const auto before = gpu.slot_history(0);
    sieve_token t{};
    EXPECT_TRUE(sieve_test::Fails(sieve_sample(gpu.get(), logits.data(), 1, 1000, &t), SIEVE_ERROR_UNSUPPORTED_SAMPLER,
                                  {"penalties", "first", "CPU backend"}));
    EXPECT_EQ(gpu.slot_history(0), before) << "a refused call changes no slot";
    EXPECT_EQ(cpu.sample(logits.data(), 1, 1000)[0].status, SIEVE_OK);
    gpu.set(SIEVE_PARAM_REPEAT_PENALTY, 1.0);  // off again: the chain runs
    EXPECT_EQ(gpu.sample(logits.data(), 1, 1000)[0].status, SIEVE_OK);
}

// sieve_sample_draws with the history samplers on: every draw is from the
// same distribution (the history pass writes adjusted logits into the row,
// which must not pile up from draw to draw; a bias the upload wrote into the
// row is written again with them), each equal to the twin's.
TEST(GpuHistoryDraws, EveryDrawSeesTheSameAdjustedRow) {
    const char* modes[] = {"adjusted in the row", "with a logit bias the upload writes, adjusted in the row",
                           "with a logit bias left to the passes (the table path)"};
    for (int mode = 0; mode < 3; ++mode) {
        SCOPED_TRACE(modes[mode]);
        const bool bias = mode > 0;
        constexpr int32_t kV = 3000;
        const char* text = "penalties;dry;top_k;temperature";
        const auto kinds = sieve_test::twin_chain(text);
        auto ctx = sieve_test::gpu_context();
        sieve::Chain chain(ctx, sieve_test::chain_desc(text, 1, kV, 1.0f, 8));
        if (mode == 2) sieve_test::leave_inputs_to_the_passes(chain);
        RowParams p = history_params("both", kV);
        p.seed = 8;
        // Mild, so that the history's tokens stay the likely ones and a second
        // application would move the draws among them.
        p.temperature = 1.0f;
        p.penalty_repeat = 1.1f;
        p.penalty_freq = 0.05f;
        p.penalty_present = 0.0f;
        p.dry_multiplier = 0.3f;
        if (bias) p.logit_bias = {{alphabet(kV)[1], 0.75f}, {alphabet(kV)[2], -0.5f}};
        set_row_params(chain, 0, p);
        std::vector<int32_t> biased_tokens;
        std::vector<float> biases;
        for (const auto& b : p.logit_bias) {
            biased_tokens.push_back(b.token);
            biases.push_back(b.bias);
        }
        chain.set_logit_bias(biased_tokens, biases, 0);
        chain.accept(0, prompt(kV, 0, 60));
        SlotState state;
        state.history = chain.slot_history(0);
        const auto logits = boosted_rows(Shape::Zipf, 1, kV, 12);
        const auto tokens = chain.draws(logits.data(), 1, kV, 24);
        Tally tally;
        for (int d = 0; d < 24; ++d) {
            sieve_token got{};
            got.token = tokens[static_cast<size_t>(d)];
            got.status = SIEVE_OK;
            got.step = static_cast<uint32_t>(d);
            got.seed = p.seed;
            SlotState fresh = state;
            const auto want = sieve::ref::sample_row(kinds, logits.data(), kV, p, static_cast<uint32_t>(d), 0, &fresh);
            got.p = want.p;  // draws report no per-draw p: compare the tokens
            compare_token(got, Row{kinds, logits.data(), kV, p, &state}, static_cast<uint32_t>(d), &tally);
        }
        EXPECT_LE(tally.token_near_cdf_boundary, 1);
        EXPECT_EQ(chain.slot_history(0), state.history) << "draws commit nothing";
    }
}

// A token that leaves the penalties' window reads its own logit again. A row
// with a logit bias the passes apply (left to them, as for the app's device
// buffers) reads adjusted logits through the history pass's table
// (the bitmap of this call's adjusted tokens and their ranks), which each
// call rebuilds after the previous one's (a GPU's plan splits the pass over
// workgroups at this capacity). A row without one has them written into the
// row (ROW_PATCH) and leaves the bitmap as the last call with a bias marked
// it: with the bias on every third call, the window of each call with it
// differs from the last one's, whose bits it clears. Window 1, present
// penalty 5: 7 (10) and 8 (9) take turns; token 9 (6) wins only where 7 keeps
// a stale penalty.
TEST(GpuHistoryWindow, ATokenThatLeavesTheWindowIsNoLongerAdjusted) {
    constexpr int32_t kV = 32000;
    auto ctx = sieve_test::gpu_context();
    for (const bool every_call : {true, false}) {
        SCOPED_TRACE(every_call ? "a bias on every call" : "a bias on every third call");
        sieve::Chain chain = one_row_history_chain(ctx, "penalties;top_k;temperature", kV, 5);
        sieve_test::leave_inputs_to_the_passes(chain);
        RowParams p = history_params("neutral", kV);
        p.penalty_last_n = 1;
        p.penalty_repeat = 1.0f;
        p.penalty_freq = 0.0f;
        p.penalty_present = 5.0f;
        p.top_k = 1;
        p.temperature = 1.0f;
        set_row_params(chain, 0, p);
        std::vector<float> logits(kV, 0.0f);
        logits[7] = 10.0f;
        logits[8] = 9.0f;
        logits[9] = 6.0f;
        chain.accept(0, {7});
        for (int step = 0; step < 9; ++step) {
            if (every_call || step % 3 == 0) {
                chain.set_logit_bias({kV - 1}, {0.5f}, 0);
            } else {
                chain.set_logit_bias({}, {}, 0);
            }
            const sieve_token got = chain.sample(logits.data(), 1, kV)[0];
            ASSERT_EQ(got.status, SIEVE_OK);
            EXPECT_EQ(got.token, step % 2 == 0 ? 8 : 7) << "step " << step;
        }
    }
}

// The history pass's table ranks each adjusted token among them: by counting
// the tokens below it in a list where they are few (at most one a workgroup
// invocation), by a scan of the bitmap's words where they are many
// (history.comp, write_prefix_counts). Histories of 60 and of 2000 distinct
// tokens, the row's likeliest (so that the top-k keeps adjusted ones) and
// their neighbours in the same bitmap words, a third
// of them twice (counts of one and two, a repeat for DRY), on a row with a
// bias left to the passes (the table path), against the twin, then a window of other tokens
// that pushes every one of them out; on the test's plan, and on a CPU
// device's plan with one workgroup for the whole window.
TEST(GpuHistoryTable, RanksOfFewAndManyAdjustedTokensEqualTheTwin) {
    constexpr int32_t kV = 32000;
    const char* text = "penalties;dry;top_k;temperature";
    const auto kinds = sieve_test::twin_chain(text);
    const auto logits = sieve_test::make_rows(Shape::Zipf, 1, kV, 31);
    std::vector<int32_t> likeliest(kV);
    std::iota(likeliest.begin(), likeliest.end(), 0);
    std::stable_sort(likeliest.begin(), likeliest.end(), [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
    });
    for (const bool whole : {false, true}) {
        sieve::Context ctx = whole ? sieve_test::device_plan_context("1") : sieve_test::gpu_context();
        for (const size_t distinct : {size_t{60}, size_t{2000}}) {
            SCOPED_TRACE(std::string(whole ? "one workgroup a row, " : "") + std::to_string(distinct) +
                         " distinct tokens in the history");
            sieve::Chain chain = one_row_history_chain(ctx, text, kV, 13);
            sieve_test::leave_inputs_to_the_passes(chain);
            RowParams p = history_params("both_long", kV);
            p.seed = 13;
            p.temperature = 1.0f;
            p.logit_bias = {{kV - 1, 0.5f}};
            set_row_params(chain, 0, p);
            chain.set_logit_bias({kV - 1}, {0.5f}, 0);
            // Each of the likeliest with its neighbour id (t ^ 1: the same
            // bitmap word), so that words hold several adjusted tokens.
            std::vector<int32_t> history;
            std::vector<bool> taken(kV, false);
            for (size_t i = 0; history.size() < distinct; ++i)
                for (const int32_t t : {likeliest[i], likeliest[i] ^ 1})
                    if (!taken[static_cast<size_t>(t)] && history.size() < distinct) {
                        taken[static_cast<size_t>(t)] = true;
                        history.push_back(t);
                    }
            std::shuffle(history.begin(), history.end(), std::mt19937(7));
            const std::vector<int32_t> again(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(distinct / 3));
            history.insert(history.end(), again.begin(), again.end());
            chain.accept(0, history);
            Tally tally;
            for (uint32_t step = 0; step < 3; ++step) {
                SlotState state;
                state.history = chain.slot_history(0);
                Row row{kinds, logits.data(), kV, p, &state};
                compare_distribution(gpu_distribution(chain, logits, 1, kV, 0), &row, step, &tally);
                row.params = p;
                compare_token(chain.sample(logits.data(), 1, kV)[0], row, step, &tally);
                if (testing::Test::HasFatalFailure()) return;
            }
            // Then as many other tokens fill the window: every adjusted token
            // leaves it, and its bitmap bit is cleared from the list the last
            // call marked (history.comp, mark_adjusted), or the row's
            // likeliest would still read a table entry.
            std::vector<int32_t> other;
            for (int32_t t = 0; other.size() < distinct; ++t)
                if (!taken[static_cast<size_t>(t)]) other.push_back(t);
            std::vector<int32_t> fill;
            for (size_t i = 0; fill.size() < 4096; ++i) fill.push_back(other[i % other.size()]);
            chain.accept(0, fill);
            SlotState state;
            state.history = chain.slot_history(0);
            Row row{kinds, logits.data(), kV, p, &state};
            compare_distribution(gpu_distribution(chain, logits, 1, kV, 0), &row, 3, &tally);
            if (testing::Test::HasFatalFailure()) return;
            EXPECT_LE(tally.token_near_cdf_boundary, 1);
        }
    }
}

// A one-row chain's distribution with `history` accepted under `p`, against
// the twin's (the caller stops on a fatal failure).
void expect_history_row_as_twin(sieve::Chain& chain, const std::vector<SamplerKind>& kinds,
                                const std::vector<float>& logits, int32_t vocab, const RowParams& p,
                                const std::vector<int32_t>& history) {
    set_row_params(chain, 0, p);
    chain.accept(0, history);
    SlotState state;
    state.history = chain.slot_history(0);
    Row row{kinds, logits.data(), vocab, p, &state};
    Tally tally;
    compare_distribution(gpu_distribution(chain, logits, 1, vocab, 0), &row, 0, &tally);
}

// DRY's most recent breaker limits a repeat only where the limit is below
// allowed_length + the exponent cap: the GPU scans the window for it only
// that far, plus the longest breaker's tail (history.comp, dry_rep_limit).
// A 30-token span said again, its first occurrence followed by the row's
// likeliest token; a four-token breaker inside the span with its head i
// positions from the end limits the repeat to i - 3. Base 1e4 caps the
// exponent at 9 (allowed 2: lengths of 11 and more are capped alike) and
// multiplier 1e-36 makes the likeliest token's penalty 1 where the limit is
// 11 or more (heads from 14 on) and at most 1e-4 below (heads 6 to 13): a
// scan that stops short of a binding breaker moves the distribution. A
// single-token breaker that
// never occurs comes first in the list. Against the twin, on the test's
// plan and on a CPU device's plan with one workgroup for the window.
TEST(GpuHistoryDry, ABreakerLimitsTheRepeatWhereverItLies) {
    constexpr int32_t kV = 32000;
    const char* text = "dry;top_k;temperature";
    const auto kinds = sieve_test::twin_chain(text);
    const auto logits = sieve_test::make_rows(Shape::Zipf, 1, kV, 41);
    const int32_t likeliest =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    // Distinct tokens, none the likeliest: the only repeat is the span's.
    int32_t next = 100;
    auto fresh = [&] {
        if (next == likeliest) ++next;
        return next++;
    };
    const std::vector<int32_t> breaker{fresh(), fresh(), fresh(), fresh()};
    for (const bool whole : {false, true}) {
        sieve::Context ctx = whole ? sieve_test::device_plan_context("1") : sieve_test::gpu_context();
        for (int32_t head = 6; head <= 20; ++head) {
            SCOPED_TRACE(std::string(whole ? "one workgroup a row, " : "") + "breaker head " + std::to_string(head) +
                         " tokens from the end");
            constexpr int32_t kSpan = 30;
            std::vector<int32_t> span;
            for (int32_t j = 0; j < kSpan; ++j) {
                const int32_t from_end = kSpan - 1 - j;
                span.push_back(from_end <= head && from_end > head - 4 ? breaker[static_cast<size_t>(head - from_end)]
                                                                       : 1000 + j);
            }
            std::vector<int32_t> history{2000, 2001, 2002};
            history.insert(history.end(), span.begin(), span.end());
            history.push_back(likeliest);
            for (int32_t j = 0; j < 5; ++j) history.push_back(3000 + j);
            history.insert(history.end(), span.begin(), span.end());
            sieve::Chain chain = one_row_history_chain(ctx, text, kV, 17);
            RowParams p = history_params("neutral", kV);
            p.seed = 17;
            p.temperature = 1.0f;
            p.dry_multiplier = 1e-36f;
            p.dry_base = 1e4f;
            p.dry_allowed_length = 2;
            p.dry_penalty_last_n = 256;
            p.dry_sequence_breakers = {{kV - 1}, breaker};
            expect_history_row_as_twin(chain, kinds, logits, kV, p, history);
            if (testing::Test::HasFatalFailure()) return;
        }
    }
}

// DRY with bases of 1.02, 1.001 (exponent caps of 4480 and 88766, past
// every window here) and 1 (none): the row's first workgroup builds the
// whole reverse Z-array (history.comp, dry_z_array: boxes, a few direct
// steps, long repeats compared by the whole workgroup). Histories of 4096
// tokens over 40 words, which the row lifts to its top 40 (top-k 40: every
// penalty shows): one word throughout; loops of periods 3, 50 and 300 after
// random words; a block of 700 words said again; a loop of period 7 with
// every 500th word changed; random words (short repeats everywhere); the
// period-50 loop with a breaker inside it; and 48 random histories of 500 to
// 4096 tokens, over two words or loops of three words (periods 2 to 300)
// with a few changed, where boxes reach into the next block and repeats run
// to a box's end and on past it (on the CPU, each rule of dry_z_array
// broken changes DRY's result for 5 to 10% of such histories). A repeat one
// token longer or shorter moves its penalty by 2% (base 1.02: the short
// ones) or 0.1% (base 1.001: up to 4096 tokens). Against the twin's
// distribution, on the test's plan and on a CPU device's plan of one
// workgroup.
TEST(GpuHistoryDry, LongRepeatsWithoutACapEqualTheTwin) {
    constexpr int32_t kV = 32000, kN = 4096, kWords = 40;
    const char* text = "dry;top_k;temperature";
    const auto kinds = sieve_test::twin_chain(text);
    auto logits = sieve_test::make_rows(Shape::Zipf, 1, kV, 43);
    for (int32_t w = 0; w < kWords; ++w) logits[static_cast<size_t>(100 + w)] = 20.0f - 0.05f * static_cast<float>(w);
    std::mt19937 rng(7);
    auto word = [&] { return 100 + static_cast<int32_t>(rng() % kWords); };
    auto loop_after_words = [&](int32_t words, int32_t period) {
        std::vector<int32_t> h, cycle;
        for (int32_t i = 0; i < period; ++i) cycle.push_back(word());
        for (int32_t i = 0; i < words; ++i) h.push_back(word());
        while (static_cast<int32_t>(h.size()) < kN) h.push_back(cycle[h.size() % static_cast<size_t>(period)]);
        return h;
    };
    struct History {
        std::string name;
        std::vector<int32_t> tokens;
        bool breaker = false;
        int32_t words = kWords;  // the row's top-k: its lifted words
        bool base_1_02_only = false;
    };
    std::vector<History> histories;
    histories.push_back({"one word", std::vector<int32_t>(kN, 105)});
    for (int32_t period : {3, 50, 300}) histories.push_back({"period " + std::to_string(period), loop_after_words(200, period)});
    {
        std::vector<int32_t> h, block;
        for (int32_t i = 0; i < 700; ++i) block.push_back(word());
        for (int32_t i = 0; i < 1000; ++i) h.push_back(word());
        h.insert(h.end(), block.begin(), block.end());
        while (static_cast<int32_t>(h.size()) < kN - 700) h.push_back(word());
        h.insert(h.end(), block.begin(), block.end());
        histories.push_back({"a block said again", h});
    }
    {
        auto h = loop_after_words(0, 7);
        for (size_t i = 250; i < h.size(); i += 500) h[i] = word();
        histories.push_back({"period 7, every 500th changed", h});
    }
    {
        std::vector<int32_t> h;
        for (int32_t i = 0; i < kN; ++i) h.push_back(word());
        histories.push_back({"random words", h});
    }
    histories.push_back({"period 50 with a breaker", loop_after_words(200, 50), true});
    for (int32_t i = 0; i < 48; ++i) {
        std::vector<int32_t> h(500 + rng() % (kN - 499));
        const bool binary = i % 2 == 0;
        const int32_t period = 2 + static_cast<int32_t>(rng() % 299);
        std::vector<int32_t> cycle(static_cast<size_t>(period));
        for (auto& x : cycle) x = 100 + static_cast<int32_t>(rng() % 3);
        for (size_t j = 0; j < h.size(); ++j)
            h[j] = binary ? 100 + static_cast<int32_t>(rng() % 2) : cycle[j % static_cast<size_t>(period)];
        for (int32_t changes = binary ? 0 : 1 + static_cast<int32_t>(rng() % 20); changes > 0; --changes)
            h[rng() % h.size()] = 100 + static_cast<int32_t>(rng() % 3);
        histories.push_back({(binary ? "two words, " : "period " + std::to_string(period) + " changed, ") +
                                 std::to_string(h.size()) + " tokens",
                             h, false, binary ? 2 : 3, true});
    }
    for (const bool whole : {false, true}) {
        sieve::Context ctx = whole ? sieve_test::device_plan_context("1") : sieve_test::gpu_context();
        for (const History& c : histories) {
            for (const auto& [base, multiplier] : {std::pair{1.02f, 0.05f}, std::pair{1.001f, 0.2f}, std::pair{1.0f, 0.5f}}) {
                if (c.base_1_02_only && base != 1.02f) continue;
                SCOPED_TRACE(std::string(whole ? "one workgroup a row, " : "") + c.name + ", base " + std::to_string(base));
                sieve::Chain chain = one_row_history_chain(ctx, text, kV, 19);
                RowParams p = history_params("neutral", kV);
                p.seed = 19;
                p.temperature = 1.0f;
                p.top_k = c.words;
                p.dry_base = base;
                p.dry_multiplier = multiplier;
                p.dry_allowed_length = 2;
                p.dry_penalty_last_n = kN;
                const std::vector<int32_t>& h = c.tokens;
                // Two words of the loop 20 from the end: repeats stop there.
                if (c.breaker) p.dry_sequence_breakers = {{h[h.size() - 20], h[h.size() - 19]}};
                expect_history_row_as_twin(chain, kinds, logits, kV, p, h);
                if (testing::Test::HasFatalFailure()) return;
            }
        }
    }
}

// A masked token (a raw -inf logit, a token the bitmask disallows, a bias of
// -inf) stays masked whatever the penalties and DRY subtract, even a term of
// -inf, where llama.cpp's -inf - -inf would be NaN: the GPU's adjusted row
// (ROW_PATCH: no inputs, or the bitmask and bias the upload wrote into the
// row) and its table (row inputs left to the passes) all, against the twin.
TEST(GpuHistoryMasked, MaskedTokensStayMaskedUnderInfiniteTerms) {
    constexpr int32_t kV = 3000;
    const char* text = "penalties;dry;top_k;temperature;dist";
    const auto kinds = sieve_test::twin_chain(text);
    const auto a = alphabet(kV);
    const int32_t raw = a[0], disallowed = a[1], biased = a[2];  // boosted: the likeliest tokens
    const char* modes[] = {"adjusted in the row", "bitmask and bias the upload writes, adjusted in the row",
                           "bitmask and bias left to the passes (the table path)"};
    for (int mode = 0; mode < 3; ++mode) {
        SCOPED_TRACE(modes[mode]);
        const bool inputs = mode > 0;
        auto ctx = sieve_test::gpu_context();
        sieve::Chain chain(ctx, sieve_test::chain_desc(text, 1, kV, 1.0f, 8));
        if (mode == 2) sieve_test::leave_inputs_to_the_passes(chain);
        auto logits = boosted_rows(Shape::Zipf, 1, kV, 21);
        logits[static_cast<size_t>(raw)] = -INFINITY;
        RowParams p;
        p.seed = 9;
        p.temperature = 1.0f;
        p.top_k = 40;
        p.penalty_last_n = 64;
        p.penalty_repeat = 1.0f;
        p.penalty_freq = -3e38f;  // count 2: the term overflows to -inf
        p.penalty_present = inputs ? -3e38f : 0.0f;
        p.dry_multiplier = -3e38f;  // x 10^2 below: -inf
        p.dry_base = 10.0f;
        p.dry_allowed_length = 1;
        p.dry_penalty_last_n = 64;
        // Only masked tokens in the history: a finite logit meeting these
        // terms becomes +inf, which fails the row (tested elsewhere).
        std::vector<int32_t> history = {raw, raw};
        if (inputs) {
            std::vector<uint32_t> words((kV + 31) / 32, 0xFFFFFFFFu);
            words[static_cast<size_t>(disallowed) / 32] &= ~(1u << (disallowed % 32));
            p.token_bitmask = words;
            p.logit_bias = {{biased, -INFINITY}};
            chain.set_token_bitmask(words, 0);
            chain.set_logit_bias({biased}, {-INFINITY}, 0);
            // DRY: "raw disallowed raw" was followed by `disallowed`.
            history = {biased, raw, disallowed, raw, disallowed, raw};
        }
        set_row_params(chain, 0, p);
        chain.accept(0, history);
        SlotState state;
        state.history = history;
        const Row row{kinds, logits.data(), kV, p, &state};
        Tally tally;
        const auto tokens = chain.draws(logits.data(), 1, kV, 12);
        for (int d = 0; d < 12; ++d) {
            sieve_token got{};
            got.token = tokens[static_cast<size_t>(d)];
            got.status = got.token >= 0 ? SIEVE_OK : SIEVE_ERROR_NON_FINITE_LOGIT;
            got.step = static_cast<uint32_t>(d);
            got.seed = p.seed;
            SlotState fresh = state;
            got.p = sieve::ref::sample_row(kinds, logits.data(), kV, p, got.step, 0, &fresh).p;  // draws report no p
            compare_token(got, row, got.step, &tally);
        }
        const sieve_token t = chain.sample(logits.data(), 1, kV)[0];
        ASSERT_EQ(t.status, SIEVE_OK) << sieve_last_error();
        EXPECT_TRUE(t.p > 0.0f && t.p < 1.0f) << t.p;
        compare_token(t, row, t.step, &tally);
        for (int32_t m : inputs ? std::vector<int32_t>{raw, disallowed, biased} : std::vector<int32_t>{raw}) {
            EXPECT_NE(t.token, m);
            EXPECT_EQ(std::count(tokens.begin(), tokens.end(), m), 0);
        }
        EXPECT_LE(tally.token_near_cdf_boundary, 1);
    }
}

// ---- slots, on both backends ------------------------------------------------------

struct Backend {
    const char* name;
    bool gpu;
};

class SlotOps : public testing::TestWithParam<Backend> {
protected:
    sieve::Context context() { return GetParam().gpu ? sieve_test::gpu_context() : sieve_test::cpu_context(); }
};

constexpr int32_t kVocab = 3000;

sieve::Chain history_chain(sieve::Context& ctx, int32_t rows, int32_t slots, int32_t capacity = 256) {
    sieve::ChainDesc d = sieve_test::chain_desc("penalties;dry;top_k;temperature", rows, kVocab, 0.9f, 42);
    d.slots(slots).history_capacity(capacity);
    sieve::Chain chain(ctx, d);
    RowParams p = history_params("both", kVocab);
    p.penalty_last_n = std::min(p.penalty_last_n, capacity);
    p.dry_penalty_last_n = std::min(p.dry_penalty_last_n, capacity);
    for (int32_t r = 0; r < rows; ++r) set_row_params(chain, r, p);
    return chain;
}

std::vector<int32_t> generate(sieve::Chain& chain, int32_t rows, int n, uint32_t seed) {
    std::vector<int32_t> tokens;
    for (int i = 0; i < n; ++i) {
        const auto logits = boosted_rows(Shape::Zipf, rows, kVocab, seed + static_cast<uint32_t>(i));
        for (const auto& t : chain.sample(logits.data(), rows, kVocab)) {
            EXPECT_EQ(t.status, SIEVE_OK);
            tokens.push_back(t.token);
        }
    }
    return tokens;
}

TEST_P(SlotOps, SampleAppendsDrawsAndDistributionDoNot) {
    auto ctx = context();
    auto chain = history_chain(ctx, 1, 1);
    chain.accept(0, {5, 6, 7});
    const auto logits = boosted_rows(Shape::Zipf, 1, kVocab, 1);
    chain.draws(logits.data(), 1, kVocab, 4);
    chain.distribution(logits.data(), 1, kVocab, 0);
    EXPECT_EQ(chain.slot_history(0), (std::vector<int32_t>{5, 6, 7}));
    const auto t = chain.sample(logits.data(), 1, kVocab);
    EXPECT_EQ(chain.slot_history(0), (std::vector<int32_t>{5, 6, 7, t[0].token}));
    EXPECT_EQ(t[0].step, 4u) << "the draws advanced the step";
}

TEST_P(SlotOps, RingKeepsTheNewestTokens) {
    auto ctx = context();
    auto chain = history_chain(ctx, 1, 1, 8);
    std::vector<int32_t> many;
    for (int32_t i = 0; i < 13; ++i) many.push_back(100 + i);
    chain.accept(0, many);
    EXPECT_EQ(chain.slot_history(0), std::vector<int32_t>(many.end() - 8, many.end()));
    chain.accept(0, {1, 2});
    const auto h = chain.slot_history(0);
    ASSERT_EQ(h.size(), 8u);
    EXPECT_EQ(h[6], 1);
    EXPECT_EQ(h[7], 2);
    EXPECT_EQ(h[0], 107);
}

// A speculative decoder's rollback: save, generate, restore, generate again:
// the same tokens (history, state and step all restored).
TEST_P(SlotOps, SaveRestoreRollsBack) {
    auto ctx = context();
    auto chain = history_chain(ctx, 1, 2);
    chain.accept(0, prompt(kVocab, 0, 30));
    const auto snapshot = chain.save_slot(0);
    const auto first = generate(chain, 1, 6, 10);
    const auto after_first = chain.slot_history(0);
    chain.restore_slot(0, snapshot);
    EXPECT_EQ(chain.slot_history(0), prompt(kVocab, 0, 30));
    EXPECT_EQ(generate(chain, 1, 6, 10), first);
    EXPECT_EQ(chain.slot_history(0), after_first);
    // The same through a spare slot on the device.
    chain.copy_slot(0, 1);
    const auto second = generate(chain, 1, 4, 20);
    chain.copy_slot(1, 0);
    EXPECT_EQ(generate(chain, 1, 4, 20), second);
}

// Beam search forks a sequence: two rows on copies of one slot, with the same
// seed and logits, draw the same tokens; then their histories are their own.
TEST_P(SlotOps, CopiedSlotsForkIdentically) {
    auto ctx = context();
    auto chain = history_chain(ctx, 2, 3);
    chain.set(SIEVE_PARAM_SEED, 9, -1);
    chain.set_slots({2, 0});
    chain.accept(0, prompt(kVocab, 1, 50));  // slot 2
    chain.copy_slot(2, 0);
    for (int i = 0; i < 6; ++i) {
        auto one = boosted_rows(Shape::Gaussian, 1, kVocab, 70u + static_cast<uint32_t>(i));
        std::vector<float> both = one;
        both.insert(both.end(), one.begin(), one.end());
        const auto t = chain.sample(both.data(), 2, kVocab);
        EXPECT_EQ(t[0].token, t[1].token) << "step " << i;
    }
    EXPECT_EQ(chain.slot_history(2), chain.slot_history(0));
    chain.accept(1, {11});
    EXPECT_NE(chain.slot_history(2), chain.slot_history(0));
}

// Rows are independent: a row's tokens do not depend on the other rows, nor on
// which slot number holds its state.
TEST_P(SlotOps, RowsAreIndependentOfSlotNumbersAndNeighbours) {
    auto ctx = context();
    auto alone = history_chain(ctx, 1, 1);
    alone.accept(0, prompt(kVocab, 0, 40));
    const auto want = generate(alone, 1, 8, 300);

    auto chain = history_chain(ctx, 2, 5);
    chain.set_slots({4, 2});
    chain.accept(0, prompt(kVocab, 0, 40));
    chain.accept(1, prompt(kVocab, 1, 33));
    chain.set(SIEVE_PARAM_SEED, 77, 1);
    std::vector<int32_t> got;
    for (int i = 0; i < 8; ++i) {
        auto row0 = boosted_rows(Shape::Zipf, 1, kVocab, 300u + static_cast<uint32_t>(i));
        auto row1 = boosted_rows(Shape::Gaussian, 1, kVocab, 5u + static_cast<uint32_t>(i));
        row0.insert(row0.end(), row1.begin(), row1.end());
        got.push_back(chain.sample(row0.data(), 2, kVocab)[0].token);
    }
    EXPECT_EQ(got, want);
}

TEST_P(SlotOps, ResetClearsHistoryAndStep) {
    auto ctx = context();
    auto chain = history_chain(ctx, 1, 2);
    chain.accept(0, prompt(kVocab, 0, 20));
    const auto first = generate(chain, 1, 3, 50);
    chain.reset(0);
    EXPECT_TRUE(chain.slot_history(0).empty());
    chain.accept(0, prompt(kVocab, 0, 20));
    EXPECT_EQ(generate(chain, 1, 3, 50), first);
    chain.accept(0, {3});
    chain.reset_slot(0);
    EXPECT_TRUE(chain.slot_history(0).empty());
}

// The history changes the tokens (the samplers are not no-ops) the same way
// on both backends: the GPU's generation equals the CPU backend's.
TEST(SlotOpsBackends, GpuAndCpuGenerateTheSameTokens) {
    auto gpu_ctx = sieve_test::gpu_context();
    auto cpu_ctx = sieve_test::cpu_context();
    auto gpu = history_chain(gpu_ctx, 2, 2);
    auto cpu = history_chain(cpu_ctx, 2, 2);
    auto plain_ctx = sieve_test::cpu_context();
    sieve::Chain plain(plain_ctx, sieve_test::chain_desc("penalties;dry;top_k;temperature", 2, kVocab, 0.9f, 42));
    for (int32_t r = 0; r < 2; ++r) {
        set_row_params(plain, r, history_params("neutral", kVocab));
        gpu.accept(r, prompt(kVocab, r, 48));
        cpu.accept(r, prompt(kVocab, r, 48));
        plain.accept(r, prompt(kVocab, r, 48));
    }
    const auto g = generate(gpu, 2, 12, 600);
    const auto c = generate(cpu, 2, 12, 600);
    const auto p = generate(plain, 2, 12, 600);  // the samplers off (llama.cpp's defaults)
    size_t same = 0;
    for (size_t i = 0; i < g.size(); ++i) same += g[i] == c[i] ? 1 : 0;
    EXPECT_GE(same + 1, g.size()) << "at most one token may differ (a CDF boundary)";
    EXPECT_NE(c, p) << "the penalties and DRY changed nothing";
}

INSTANTIATE_TEST_SUITE_P(Backends, SlotOps, testing::Values(Backend{"Gpu", true}, Backend{"Cpu", false}),
                         [](const testing::TestParamInfo<Backend>& info) { return info.param.name; });

// ---- a long generation in lockstep ----------------------------------------------

// Resident host memory of this process in bytes (Linux /proc/self/statm).
uint64_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long size = 0, resident = 0;
    const int got = std::fscanf(f, "%llu %llu", &size, &resident);
    std::fclose(f);
    return got == 2 ? resident * 4096ull : 0;
}

// 10 000 tokens on the GPU with penalties and DRY (windows 64 and 4096 over a
// history of 4096), every token checked against the twin fed the GPU's own
// history and drawing with the same uniform. Tokens may differ only where the
// twin's double-precision CDF puts the uniform within 1e-6 of a boundary
// (counted and printed); the engine allocates and records nothing after the
// first tokens. A GPU's plan on a CPU device (SIEVE_PROFILE=gpu on lavapipe,
// scripts/test.sh's full matrix) takes 30 times as long a token, so there it
// stops at 5000 tokens: still about 900 past the ring's first wrap (a
// 100-token prompt, 4096 slots).
TEST(GpuHistoryLockstep, TenThousandTokens) {
    constexpr int32_t kV = 32000;
    const char* text = "penalties;dry;top_k;temperature";
    const auto kinds = sieve_test::twin_chain(text);
    auto ctx = sieve_test::gpu_context();
    const auto info = ctx.device_info();
    const bool gpu_plan_on_cpu = info.type == SIEVE_DEVICE_CPU && (info.profile & SIEVE_PROFILE_GPU);
    const int tokens = gpu_plan_on_cpu ? 5000 : 10000;
    sieve::Chain chain = one_row_history_chain(ctx, text, kV, 11);
    RowParams p = history_params("both", kV);
    p.penalty_last_n = 64;
    p.dry_penalty_last_n = 4096;
    p.top_k = 64;
    p.temperature = 1.0f;
    p.seed = 11;
    set_row_params(chain, 0, p);
    chain.accept(0, prompt(kV, 0, 100));
    std::vector<int32_t> history = chain.slot_history(0);
    // A fixed pool of rows, cycled (the history, not the logits, drives the samplers).
    std::vector<std::vector<float>> pool;
    for (uint32_t i = 0; i < 16; ++i) pool.push_back(boosted_rows(Shape::Zipf, 1, kV, 4000u + i));
    sieve_counters warm{};
    uint64_t warm_rss = 0;
    Tally tally;
    for (int step = 0; step < tokens; ++step) {
        const auto& logits = pool[static_cast<size_t>(step) % pool.size()];
        const auto got = chain.sample(logits.data(), 1, kV)[0];
        ASSERT_EQ(got.status, SIEVE_OK);
        SlotState state;
        state.history = history;
        compare_token(got, Row{kinds, logits.data(), kV, p, &state}, static_cast<uint32_t>(step), &tally);
        ASSERT_FALSE(testing::Test::HasFailure()) << "step " << step;
        // Both go on with the GPU's token, fed back through the GPU history.
        history.push_back(got.token);
        if (history.size() > 4096) history.erase(history.begin());
        if (step % 1000 == 999) {
            ASSERT_EQ(chain.slot_history(0), history) << "step " << step;
        }
        if (step == 10) {
            warm = chain.counters();
            warm_rss = resident_bytes();
        }
    }
    const auto end = chain.counters();
    EXPECT_EQ(end.allocations, warm.allocations);
    EXPECT_EQ(end.recordings, warm.recordings);
    EXPECT_EQ(end.cpu_fallback_rows, 0u);
    // Host memory stays flat too (a margin for the allocator and the test's
    // own vectors; a per-token leak of even 1 KiB would pass 9 MiB).
    const uint64_t end_rss = resident_bytes();
    ASSERT_GT(warm_rss, 0u);
    EXPECT_LT(end_rss, warm_rss + (8ull << 20)) << "resident memory grew from " << warm_rss << " to " << end_rss;
    std::printf("lockstep: %d tokens, %d differ at a CDF boundary, %d over near-ties\n", tokens,
                tally.token_near_cdf_boundary, tally.token_near_tie_order);
}

} // namespace
