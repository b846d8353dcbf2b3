// The GPU chain's one analysis of its samplers and a call's rows
// (engine/vulkan/row_analysis.hpp): chains and rows against what the
// recording, the parameter blocks and the collect choice must read. No device.
#include "vulkan/row_analysis.hpp"

#include <gpu_layout.h>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using K = sieve::ref::SamplerKind;
using Samplers = std::vector<K>;
using namespace sieve::glsl;

const Samplers kLlamaDefault = {K::TopK, K::TopP, K::MinP, K::Temperature, K::Dist};

// A GPU-sized device (capacity 2048, workgroups of 64) on a sampling call of a
// chain with a wide buffer, its logits in the app's device buffer (host_rows
// false: a bias or bitmask is the passes'), unless a test says otherwise.
sieve::RowContext context(bool cpu = false, bool sample = true) {
    sieve::RowContext at;
    at.capacity = 2048;
    at.workgroup_size = 64;
    at.cpu_paths = cpu;
    at.wide_passes = true;
    at.sample = sample;
    return at;
}

sieve::RowAnalysis row_of(const Samplers& s, const sieve::ref::RowParams& row,
                          const sieve::RowContext& at = context()) {
    return sieve::analyse_row(sieve::analyse_chain(s), s, row, at);
}

sieve::CallAnalysis call_of(const Samplers& s, const std::vector<sieve::ref::RowParams>& rows,
                            const sieve::RowContext& at = context()) {
    return sieve::analyse_call(sieve::analyse_chain(s), s, rows.data(), static_cast<uint32_t>(rows.size()), at);
}

TEST(RowAnalysis, ChainTable) {
    struct Case {
        Samplers samplers;
        bool collect, greedy, top_p, history;
        uint32_t ops, selector;
        uint64_t chain_ops;
        uint32_t wide_divisions;  // cut | all << 8
    };
    const Case cases[] = {
        {kLlamaDefault, true, false, true, false, 4, SELECT_DIST,
         OP_TOP_K | OP_TOP_P << 4 | OP_MIN_P << 8 | uint64_t{OP_TEMPERATURE} << 12, 0 | 1 << 8},
        {{K::Temperature, K::Dist}, false, false, false, false, 1, SELECT_DIST, OP_TEMPERATURE, 0 | 1 << 8},
        {{K::Greedy}, false, true, false, false, 0, SELECT_DIST, 0, 0},
        // Penalties and DRY are the history pass's: no op, no count.
        {{K::Penalties, K::Dry, K::TopK, K::Greedy}, true, true, false, true, 1, SELECT_DIST, OP_TOP_K, 0},
        {{K::Temperature, K::TopP, K::Temperature, K::Dist}, true, false, true, false, 3, SELECT_DIST,
         OP_TEMPERATURE | OP_TOP_P << 4 | OP_TEMPERATURE << 8, 1 | 2 << 8},
        // A learning selector needs the collect pass on its own.
        {{K::Temperature, K::Mirostat}, true, false, false, false, 1, SELECT_MIROSTAT, OP_TEMPERATURE, 0 | 1 << 8},
        {{K::AdaptiveP}, true, false, false, false, 0, SELECT_ADAPTIVE, 0, 0},
    };
    for (const Case& c : cases) {
        const sieve::ChainAnalysis a = sieve::analyse_chain(c.samplers);
        SCOPED_TRACE(testing::Message() << "chain of " << c.samplers.size() << ", ops " << c.ops);
        EXPECT_EQ(a.greedy, c.greedy);
        EXPECT_EQ(a.top_p, c.top_p);
        EXPECT_EQ(a.history, c.history);
        EXPECT_EQ(a.ops, c.ops);
        EXPECT_EQ(a.selector, c.selector);
        EXPECT_EQ(a.wide_divisions, c.wide_divisions);
        // Every sampler acts on a row of the default parameters: the call's
        // tail runs them all.
        const sieve::CallAnalysis call = call_of(c.samplers, {sieve::ref::RowParams{}});
        EXPECT_EQ(call.collect, c.collect);
        EXPECT_EQ(call.chain_ops, c.chain_ops);
        EXPECT_EQ(call.ops, c.ops);
    }
}

// The tail runs the samplers that act on some row of the call: one that every
// row's parameters switch off (llama.cpp's meanings: top-n-sigma <= 0,
// typical >= 1, XTC's probability <= 0 or threshold > 0.5, top-k <= 0,
// top-p >= 1, min-p <= 0) is left out, in the order the others keep; one
// that acts on any row stays. A temperature always acts. A call where only
// temperatures act takes no collect pass.
TEST(RowAnalysis, TheTailRunsOnlyTheSamplersActingOnSomeRow) {
    const Samplers full = {K::Penalties, K::Dry,  K::TopNSigma, K::TopK,        K::TypicalP,
                           K::TopP,      K::MinP, K::Xtc,       K::Temperature, K::Dist};
    const sieve::ref::RowParams defaults;  // top-n-sigma, typical and XTC off
    const uint64_t four = OP_TOP_K | OP_TOP_P << 4 | OP_MIN_P << 8 | uint64_t{OP_TEMPERATURE} << 12;
    sieve::CallAnalysis call = call_of(full, {defaults, defaults});
    EXPECT_EQ(call.chain_ops, four);
    EXPECT_EQ(call.ops, 4u);
    // XTC on in the second row only: in the call's tail, at its place.
    sieve::ref::RowParams xtc = defaults;
    xtc.xtc_probability = 0.5f;
    call = call_of(full, {defaults, xtc});
    EXPECT_EQ(call.chain_ops,
              OP_TOP_K | OP_TOP_P << 4 | OP_MIN_P << 8 | uint64_t{OP_XTC} << 12 | uint64_t{OP_TEMPERATURE} << 16);
    EXPECT_EQ(call.ops, 5u);
    // ... but not past its threshold's bound.
    xtc.xtc_threshold = 0.6f;
    EXPECT_EQ(call_of(full, {defaults, xtc}).chain_ops, four);
    // Top-n-sigma and typical on: at their places.
    sieve::ref::RowParams on = defaults;
    on.top_n_sigma = 1.0f;
    on.typical_p = 0.9f;
    EXPECT_EQ(call_of(full, {on}).chain_ops, OP_TOP_N_SIGMA | OP_TOP_K << 4 | OP_TYPICAL << 8 | uint64_t{OP_TOP_P} << 12 |
                                                 uint64_t{OP_MIN_P} << 16 | uint64_t{OP_TEMPERATURE} << 20);
    sieve::ref::RowParams off = defaults;
    off.top_k = 0;
    off.top_p = 1.0f;
    off.min_p = 0.0f;
    call = call_of(full, {off});
    EXPECT_EQ(call.chain_ops, uint64_t{OP_TEMPERATURE});
    EXPECT_EQ(call.ops, 1u);
    // Nothing but the temperature acts: the plan of rows without truncation,
    // as temperature;dist's; one row that truncates takes the collect pass.
    EXPECT_FALSE(call.collect);
    EXPECT_TRUE(call_of(full, {off, defaults}).collect);
    EXPECT_FALSE(call_of({K::TopK, K::Temperature, K::Greedy}, {off}).collect);
    // A learning selector needs it whatever the rows say.
    EXPECT_TRUE(call_of({K::TopK, K::Temperature, K::Mirostat}, {off}).collect);
    // What the chain alone says is unchanged: its count bounds the positions.
    EXPECT_EQ(sieve::analyse_chain(full).ops, 7u);
}

// llama.cpp's default chain: its top-k (40, within what the buffer keeps)
// bounds the array first, so the row keeps 40, sums nothing, takes the plain
// collect variant and can never go wide (its recording holds no wide passes).
TEST(RowAnalysis, LlamaDefaultChainIsBoundedByItsTopK) {
    const sieve::ref::RowParams row;
    const sieve::RowAnalysis a = row_of(kLlamaDefault, row);
    EXPECT_EQ(a.need, 40u);
    EXPECT_EQ(a.flags, 0u);
    EXPECT_TRUE(a.collect_plain);
    EXPECT_FALSE(a.may_go_wide);
    EXPECT_FALSE(a.wide_direct);
    const sieve::CallAnalysis call = call_of(kLlamaDefault, {row, row});
    EXPECT_TRUE(call.collect);
    EXPECT_FALSE(call.wide);
    EXPECT_FALSE(call.history);
    EXPECT_FALSE(call.inputs);
    // A top-k past what the buffer keeps for it (64) bounds nothing: maybe
    // wide, unless a min-p acts after the top-p (its cut drops the rest or
    // sends the row to the twin).
    sieve::ref::RowParams at_bound;
    at_bound.top_k = 64;
    EXPECT_FALSE(row_of(kLlamaDefault, at_bound).may_go_wide);
    sieve::ref::RowParams big_k;
    big_k.top_k = 65;
    EXPECT_FALSE(row_of(kLlamaDefault, big_k).may_go_wide);
    sieve::ref::RowParams top_k_off = big_k;
    top_k_off.top_k = 0;
    EXPECT_FALSE(row_of(kLlamaDefault, top_k_off).may_go_wide);
    EXPECT_FALSE(call_of(kLlamaDefault, {top_k_off, top_k_off}).wide);
    EXPECT_TRUE(row_of({K::MinP, K::TopP, K::Temperature, K::Dist}, top_k_off).may_go_wide);  // min-p before it
    big_k.min_p = 0.0f;
    EXPECT_TRUE(row_of(kLlamaDefault, big_k).may_go_wide);
    EXPECT_TRUE(call_of(kLlamaDefault, {row, big_k}).wide);
    // Only top-p hands a cut to the wide passes: with it off (min-p alone
    // after top-k 0), no row can go wide and the recording holds no wide passes.
    sieve::ref::RowParams min_p_only;
    min_p_only.top_k = 0;
    min_p_only.top_p = 1.0f;
    EXPECT_FALSE(row_of(kLlamaDefault, min_p_only).may_go_wide);
    EXPECT_FALSE(call_of(kLlamaDefault, {min_p_only, min_p_only}).wide);
    EXPECT_TRUE(call_of(kLlamaDefault, {min_p_only, big_k}).wide);
    EXPECT_FALSE(row_of({K::MinP, K::Temperature, K::Dist}, min_p_only).may_go_wide);
}

// top-p the only cut: the wide passes take it (ROW_DEFER_TOP_P); on a CPU
// device they take the call alone. A distribution sums the mass itself.
TEST(RowAnalysis, TopPTheOnlyCutIsDeferredToTheWidePasses) {
    const Samplers s = {K::TopP, K::Temperature, K::Dist};
    const sieve::ref::RowParams row;
    const sieve::RowAnalysis a = row_of(s, row, context(true));
    EXPECT_EQ(a.flags, ROW_DEFER_TOP_P);
    EXPECT_EQ(a.need, 64u);
    EXPECT_TRUE(a.may_go_wide);
    EXPECT_TRUE(a.wide_direct);
    EXPECT_TRUE(call_of(s, {row}, context(true)).wide_direct);
    EXPECT_FALSE(call_of(s, {row}, context(false)).wide_direct);  // a GPU: the collect pass first

    const sieve::RowAnalysis dist = row_of(s, row, context(true, false));
    EXPECT_EQ(dist.flags, ROW_NEED_MASS);
    EXPECT_EQ(dist.agg_t, 1.0f);  // top-p reads the mass before the temperature
    EXPECT_FALSE(dist.collect_plain);
    EXPECT_FALSE(dist.wide_direct);
    const sieve::CallAnalysis dist_call = call_of(s, {row}, context(true, false));
    EXPECT_TRUE(dist_call.wide);  // recorded (the plan leaves them out of a distribution)
    EXPECT_FALSE(dist_call.wide_direct);

    // No wide buffer: the row sums its own mass.
    sieve::RowContext narrow = context(true);
    narrow.wide_passes = false;
    EXPECT_EQ(row_of(s, row, narrow).flags, ROW_NEED_MASS);
    EXPECT_FALSE(call_of(s, {row}, narrow).wide);

    // min_keep > 1, an acting penalty, or any row not deferred: not alone.
    sieve::ref::RowParams keep = row;
    keep.min_keep = 2;
    EXPECT_FALSE(row_of(s, keep, context(true)).wide_direct);
    EXPECT_FALSE(call_of(s, {row, keep}, context(true)).wide_direct);
    const Samplers with_penalties = {K::Penalties, K::TopP, K::Temperature, K::Dist};
    sieve::ref::RowParams penalised = row;
    penalised.penalty_repeat = 1.1f;
    EXPECT_TRUE(row_of(with_penalties, row, context(true)).wide_direct);
    EXPECT_FALSE(row_of(with_penalties, penalised, context(true)).wide_direct);
    // More temperatures than the wide passes divide by.
    const Samplers five = {K::TopP, K::Temperature, K::Temperature, K::Temperature, K::Temperature, K::Temperature,
                           K::Dist};
    EXPECT_EQ(row_of(five, row, context(true)).flags, ROW_DEFER_TOP_P);
    EXPECT_FALSE(row_of(five, row, context(true)).wide_direct);
}

// min-p first: the collect pass keeps what is above its floor (in raw logits,
// times the temperatures before it) and the draw needs no mass.
TEST(RowAnalysis, MinPFirstSetsTheFloor) {
    sieve::ref::RowParams row;
    row.temperature = 2.0f;
    const sieve::RowAnalysis a = row_of({K::Temperature, K::MinP, K::Dist}, row);
    EXPECT_EQ(a.flags, ROW_FLOOR);
    EXPECT_NEAR(a.floor, 2.0 * std::log(0.05) * (1.0 + 1e-5), 1e-6);
    EXPECT_TRUE(a.collect_plain);
    // After top-p alone (which keeps the row's maximum) min-p sets its floor
    // too, at the temperatures before it, and top-p wants the mass: llama.cpp's
    // default chain with top-k off.
    const sieve::RowAnalysis after = row_of({K::TopP, K::Temperature, K::MinP, K::Dist}, row, context(false, false));
    EXPECT_EQ(after.flags, ROW_NEED_MASS | ROW_FLOOR);
    EXPECT_NEAR(after.floor, 2.0 * std::log(0.05) * (1.0 + 1e-5), 1e-6);
    EXPECT_FALSE(after.collect_plain);
    // After a cut that may drop the maximum (typical, XTC), or masks (top-n-sigma),
    // none; nor for a second min-p (one floor a row), nor where top-p is off
    // (min-p is then the first cut).
    sieve::ref::RowParams cuts = row;
    cuts.typical_p = 0.9f;
    cuts.xtc_probability = 0.5f;
    cuts.xtc_threshold = 0.1f;
    cuts.top_n_sigma = 1.0f;
    for (K before : {K::TypicalP, K::Xtc, K::TopNSigma}) {
        SCOPED_TRACE(static_cast<int>(before));
        EXPECT_EQ(row_of({K::TopP, before, K::MinP, K::Dist}, cuts, context(false, false)).flags & ROW_FLOOR, 0u);
        EXPECT_EQ(row_of({before, K::TopP, K::MinP, K::Dist}, cuts, context(false, false)).flags & ROW_FLOOR, 0u);
    }
    sieve::ref::RowParams off = row;
    off.top_p = 1.0f;
    // (min-p is then the only cut: its survivors past the buffer may take
    // the key levels.)
    EXPECT_EQ(row_of({K::TopP, K::MinP, K::Dist}, off).flags, ROW_FLOOR | ROW_FLOOR_LEVELS);
    const sieve::RowAnalysis twice = row_of({K::MinP, K::Temperature, K::MinP, K::Dist}, row);
    EXPECT_EQ(twice.flags, ROW_FLOOR);
    EXPECT_NEAR(twice.floor, std::log(0.05) * (1.0 + 1e-5), 1e-6);
}

// ROW_FLOOR_LEVELS (RowAnalysis::floor_levels): min-p acts, after at most
// one top-p and nothing else, with nothing but at most one plain
// temperature after it (penalties and DRY aside, and samplers the row
// switches off), the draw is dist, a sampling call; the call's analysis has
// it where a row does.
TEST(RowAnalysis, FloorLevelsOnlyWhereMinPIsTheOnlyCutOrFollowsATopP) {
    sieve::ref::RowParams row;
    row.temperature = 0.8f;
    row.min_p = 0.05f;
    row.top_k = 0;
    row.top_p = 1.0f;
    auto levels = [&](const Samplers& s, const sieve::ref::RowParams& r, const sieve::RowContext& at = context()) {
        const sieve::RowAnalysis a = row_of(s, r, at);
        EXPECT_EQ(a.floor_levels, (a.flags & ROW_FLOOR_LEVELS) != 0);
        return a.floor_levels;
    };
    EXPECT_TRUE(levels({K::MinP, K::Dist}, row));
    EXPECT_TRUE(levels({K::MinP, K::Temperature, K::Dist}, row));
    EXPECT_TRUE(levels({K::Penalties, K::Dry, K::TopK, K::TopP, K::MinP, K::Temperature, K::Dist}, row));
    EXPECT_TRUE(levels({K::MinP, K::Temperature, K::Dist}, row, context(true)));  // the host decides the device
    sieve::ref::RowParams min_keep = row;
    min_keep.min_keep = 5000;  // the tail's to refuse (min_p_cut)
    EXPECT_TRUE(levels({K::MinP, K::Temperature, K::Dist}, min_keep));

    EXPECT_FALSE(levels({K::MinP, K::Temperature, K::Dist}, row, context(false, false)));  // a distribution
    EXPECT_FALSE(levels({K::Temperature, K::MinP, K::Dist}, row));                       // a division first
    EXPECT_FALSE(levels({K::MinP, K::Temperature, K::Temperature, K::Dist}, row));       // two temperatures
    EXPECT_FALSE(levels({K::MinP, K::Temperature, K::Greedy}, row));
    EXPECT_FALSE(levels({K::MinP, K::Temperature, K::MirostatV2}, row));
    sieve::ref::RowParams cut = row;
    cut.top_k = 40;
    EXPECT_FALSE(levels({K::TopK, K::MinP, K::Temperature, K::Dist}, cut));
    EXPECT_FALSE(levels({K::MinP, K::TopK, K::Temperature, K::Dist}, cut));
    cut = row;
    cut.top_p = 0.9f;
    // llama.cpp's default chain with top-k off: one top-p before min-p.
    EXPECT_TRUE(levels({K::TopK, K::TopP, K::MinP, K::Temperature, K::Dist}, cut));
    EXPECT_TRUE(levels({K::TopP, K::MinP, K::Dist}, cut));
    EXPECT_FALSE(levels({K::TopP, K::TopP, K::MinP, K::Temperature, K::Dist}, cut));  // two cuts before
    EXPECT_FALSE(levels({K::MinP, K::TopP, K::Temperature, K::Dist}, cut));           // a cut after
    EXPECT_FALSE(levels({K::TopP, K::Temperature, K::MinP, K::Dist}, cut));           // a division before
    EXPECT_FALSE(levels({K::TopP, K::Temperature, K::Dist}, cut));                    // no min-p
    sieve::ref::RowParams dynamic = row;
    dynamic.dynatemp_range = 0.5f;
    EXPECT_FALSE(levels({K::MinP, K::Temperature, K::Dist}, dynamic));
    sieve::ref::RowParams cold = row;
    cold.temperature = 0.0f;
    EXPECT_FALSE(levels({K::MinP, K::Temperature, K::Dist}, cold));
    sieve::ref::RowParams no_min_p = row;
    no_min_p.min_p = 0.0f;
    EXPECT_FALSE(levels({K::MinP, K::Temperature, K::Dist}, no_min_p));

    const Samplers chain = {K::TopK, K::MinP, K::Temperature, K::Dist};
    sieve::ref::RowParams top_k = row;
    top_k.top_k = 1000;
    top_k.min_p = 0.0f;
    EXPECT_TRUE(call_of(chain, {top_k, row}).floor_levels);
    EXPECT_FALSE(call_of(chain, {top_k, top_k}).floor_levels);
}

TEST(RowAnalysis, AggregatesAndSelectors) {
    sieve::ref::RowParams row;
    row.top_n_sigma = 1.5f;
    const sieve::RowAnalysis sigma = row_of({K::TopNSigma, K::Dist}, row);
    EXPECT_EQ(sigma.flags, ROW_NEED_SIGMA | ROW_NEED_MASS);
    EXPECT_FALSE(sigma.collect_plain);
    // The learning selectors see half the buffer. Mirostat v2 after
    // temperatures alone takes its floor from the slot's mu (ROW_MU_FLOOR:
    // the shaders compute it); after a cut, or for v1 and adaptive-p, none.
    const sieve::RowAnalysis miro = row_of({K::Temperature, K::MirostatV2}, row);
    EXPECT_EQ(miro.need, 1024u);
    EXPECT_EQ(miro.flags, ROW_NEED_MASS | ROW_FLOOR | ROW_MU_FLOOR);
    EXPECT_EQ(miro.agg_t, 0.8f);
    EXPECT_FALSE(miro.radix_chunk);
    sieve::ref::RowParams cut = row;
    cut.top_n_sigma = -1.0f;
    cut.min_p = 0.05f;
    for (const Samplers& chain : {Samplers{K::MinP, K::Temperature, K::MirostatV2}, Samplers{K::Temperature, K::Mirostat},
                                  Samplers{K::Temperature, K::AdaptiveP}}) {
        const sieve::RowAnalysis other = row_of(chain, cut);
        EXPECT_EQ(other.flags & ROW_MU_FLOOR, 0u);
        EXPECT_EQ(other.need, 1024u);
    }
    EXPECT_EQ(row_of({K::MinP, K::Temperature, K::MirostatV2}, cut).flags, ROW_NEED_MASS | ROW_FLOOR);  // min-p's
    // A need past the register picks (more than 4 per invocation) is plain
    // too: its chunks select it by radix. A workgroup whose picks would not
    // fit half the buffer (8 x WG > CAP) is not.
    sieve::ref::RowParams wide_k;
    wide_k.top_k = 300;
    const sieve::RowAnalysis k300 = row_of({K::TopK, K::Dist}, wide_k);
    EXPECT_EQ(k300.need, 300u);
    EXPECT_TRUE(k300.collect_plain);
    EXPECT_FALSE(row_of({K::TopK, K::Dist}, wide_k, [] {
                     sieve::RowContext at = context();
                     at.workgroup_size = at.capacity / 4;
                     return at;
                 }()).collect_plain);
}

// Which plain rows take radix_chunk (collect_chunk.glsl's RADIX_FROM): on a
// CPU device a need past the register picks (4 x WG = 256 here), on a GPU
// past PICK_LIMIT (min(2 x WG, CAP / 2) = 128); never a row min-p's floor
// bounds. Only a call with such a row records the pipeline of its variant
// that holds it (FLAG_RADIX_CHUNKS).
TEST(RowAnalysis, RadixChunksPastTheRegisterPicks) {
    const Samplers top_k = {K::TopK, K::Dist};
    const auto with_k = [](int32_t k) {
        sieve::ref::RowParams row;
        row.top_k = k;
        return row;
    };
    for (const bool cpu : {true, false}) {
        SCOPED_TRACE(cpu ? "CPU device" : "GPU");
        const uint32_t from = cpu ? 256 : 128;
        EXPECT_FALSE(row_of(top_k, with_k(static_cast<int32_t>(from)), context(cpu)).radix_chunk);
        EXPECT_TRUE(row_of(top_k, with_k(static_cast<int32_t>(from + 1)), context(cpu)).radix_chunk);
        EXPECT_TRUE(row_of(top_k, with_k(1000), context(cpu)).radix_chunk);
        EXPECT_FALSE(row_of(kLlamaDefault, sieve::ref::RowParams{}, context(cpu)).radix_chunk);  // top-k 40
        // Half the buffer, the most a row keeps.
        EXPECT_TRUE(row_of(top_k, with_k(5000), context(cpu)).radix_chunk);
        // min-p first bounds the row by its floor, whatever its need.
        sieve::ref::RowParams floored = with_k(1000);
        EXPECT_FALSE(row_of({K::MinP, K::TopK, K::Dist}, floored, context(cpu)).radix_chunk);
        // Sums over the row: the general variant, whose radix select sums
        // them in its first read. Mirostat v1 and adaptive-p keep half the
        // buffer without a floor: radix too.
        sieve::ref::RowParams sigma = with_k(1000);
        sigma.top_n_sigma = 1.5f;
        const sieve::RowAnalysis sigma_k = row_of({K::TopNSigma, K::TopK, K::Dist}, sigma, context(cpu));
        EXPECT_FALSE(sigma_k.collect_plain);
        EXPECT_TRUE(sigma_k.radix_chunk);
        EXPECT_TRUE(row_of({K::Temperature, K::Mirostat}, sieve::ref::RowParams{}, context(cpu)).radix_chunk);
        EXPECT_TRUE(row_of({K::Temperature, K::AdaptiveP}, sieve::ref::RowParams{}, context(cpu)).radix_chunk);
    }
    // The bound follows the workgroup (plain rows have CAP >= 8 x WG, so
    // PICK_LIMIT is 2 x WG there).
    sieve::RowContext narrow = context();
    narrow.capacity = 512;
    narrow.workgroup_size = 32;
    EXPECT_FALSE(row_of(top_k, with_k(64), narrow).radix_chunk);
    EXPECT_TRUE(row_of(top_k, with_k(65), narrow).radix_chunk);
    narrow.cpu_paths = true;
    EXPECT_FALSE(row_of(top_k, with_k(128), narrow).radix_chunk);
    EXPECT_TRUE(row_of(top_k, with_k(129), narrow).radix_chunk);
}

// A dynamic temperature needs the collect pass even when the chain does not.
TEST(RowAnalysis, DynamicTemperatureNeedsTheCollectPass) {
    const Samplers s = {K::Temperature, K::Dist};
    sieve::ref::RowParams plain, dynamic;
    dynamic.dynatemp_range = 0.5f;
    EXPECT_FALSE(row_of(s, plain).collect);
    EXPECT_TRUE(row_of(s, dynamic).collect);
    EXPECT_FALSE(call_of(s, {plain, plain}).collect);
    EXPECT_TRUE(call_of(s, {plain, dynamic}).collect);
    EXPECT_FALSE(row_of({K::Dist}, dynamic).collect);  // no temperature sampler to make dynamic
}

// Penalties and DRY: the history pass, the row patched in place unless it has
// a bias or bitmask or the chain keeps the raw logits (logprobs), which then
// reads its adjustments through the inputs variant.
TEST(RowAnalysis, HistorySamplers) {
    const Samplers s = {K::Penalties, K::Dry, K::TopK, K::Temperature, K::Dist};
    sieve::ref::RowParams off, both;
    both.penalty_repeat = 1.1f;
    both.dry_multiplier = 0.8f;
    EXPECT_FALSE(row_of(s, off).adjusts());
    EXPECT_EQ(row_of(s, off).flags & (ROW_ADJUST | ROW_PATCH), 0u);
    const sieve::RowAnalysis a = row_of(s, both);
    EXPECT_TRUE(a.penalties);
    EXPECT_TRUE(a.dry);
    EXPECT_EQ(a.flags, ROW_ADJUST | ROW_PATCH);
    EXPECT_EQ(row_of({K::Dry, K::Penalties, K::Dist}, both).flags & ROW_DRY_FIRST, ROW_DRY_FIRST);
    // A row's penalty parameters act only where the chain holds penalties.
    const sieve::RowAnalysis dry_only = row_of({K::Dry, K::Dist}, both);
    EXPECT_FALSE(dry_only.penalties);
    EXPECT_TRUE(dry_only.dry);

    // The GPU runs them first: acting after another sampler, the row is refused.
    EXPECT_EQ(sieve::misplaced_history(s, both), nullptr);
    EXPECT_STREQ(sieve::misplaced_history({K::TopK, K::Dry, K::Dist}, both), "dry");
    EXPECT_EQ(sieve::misplaced_history({K::TopK, K::Dry, K::Dist}, off), nullptr);

    sieve::ref::RowParams biased = both;
    biased.logit_bias.push_back({3, 1.0f});
    EXPECT_EQ(row_of(s, biased).flags, ROW_ADJUST | ROW_HAS_INPUTS);
    const sieve::CallAnalysis call = call_of(s, {off, both});
    EXPECT_TRUE(call.history);
    EXPECT_TRUE(call.patched);
    EXPECT_FALSE(call.inputs);

    sieve::RowContext logprobs = context();
    logprobs.keep_raw_logits = true;
    EXPECT_EQ(row_of(s, both, logprobs).flags, ROW_ADJUST);
    const sieve::CallAnalysis raw = call_of(s, {both}, logprobs);
    EXPECT_TRUE(raw.raw_stats);
    EXPECT_TRUE(raw.inputs);
    EXPECT_FALSE(raw.patched);
    // A distribution has no raw_stats pass, but its rows stay unpatched too:
    // they read the history table, which the inputs variant compiles.
    logprobs.sample = false;
    EXPECT_FALSE(call_of(s, {both}, logprobs).raw_stats);
    EXPECT_TRUE(call_of(s, {both}, logprobs).inputs);
    EXPECT_FALSE(call_of(s, {both}, logprobs).patched);
}

// A bias or bitmask on host logits: the upload writes it into the row, so
// the row is read as one without inputs (the plain collect variant, no
// inputs variant, its history adjustments patched in); not where the chain
// keeps the raw logits (logprobs), nor on the app's device buffers.
TEST(RowAnalysis, HostRowsTakeTheirInputsOnUpload) {
    sieve::ref::RowParams biased, masked, adjusted;
    biased.logit_bias.push_back({3, 1.0f});
    masked.token_bitmask.assign(8, 0xFFFF0000u);
    adjusted = biased;
    adjusted.penalty_repeat = 1.1f;
    sieve::RowContext host = context();
    host.host_rows = true;
    for (const sieve::ref::RowParams& row : {biased, masked}) {
        const sieve::RowAnalysis on_upload = row_of(kLlamaDefault, row, host);
        EXPECT_TRUE(on_upload.inputs_on_upload);
        EXPECT_FALSE(on_upload.inputs);
        EXPECT_EQ(on_upload.flags & ROW_HAS_INPUTS, 0u);
        EXPECT_TRUE(on_upload.collect_plain);
        EXPECT_FALSE(call_of(kLlamaDefault, {row}, host).inputs);
        const sieve::RowAnalysis by_the_passes = row_of(kLlamaDefault, row);
        EXPECT_FALSE(by_the_passes.inputs_on_upload);
        EXPECT_TRUE(by_the_passes.inputs);
        EXPECT_EQ(by_the_passes.flags & ROW_HAS_INPUTS, ROW_HAS_INPUTS);
        EXPECT_TRUE(call_of(kLlamaDefault, {row}).inputs);
    }
    const Samplers history = {K::Penalties, K::TopK, K::Temperature, K::Dist};
    EXPECT_EQ(row_of(history, adjusted, host).flags, ROW_ADJUST | ROW_PATCH);
    EXPECT_TRUE(call_of(history, {adjusted}, host).patched);
    EXPECT_FALSE(call_of(history, {adjusted}, host).inputs);
    EXPECT_EQ(row_of(history, adjusted).flags, ROW_ADJUST | ROW_HAS_INPUTS);
    host.keep_raw_logits = true;
    const sieve::RowAnalysis raw = row_of(history, adjusted, host);
    EXPECT_FALSE(raw.inputs_on_upload);
    EXPECT_EQ(raw.flags, ROW_ADJUST | ROW_HAS_INPUTS);
    EXPECT_TRUE(call_of(history, {adjusted}, host).inputs);
    // A row without inputs has nothing to take.
    host.keep_raw_logits = false;
    EXPECT_FALSE(row_of(kLlamaDefault, sieve::ref::RowParams{}, host).inputs_on_upload);
}

} // namespace
