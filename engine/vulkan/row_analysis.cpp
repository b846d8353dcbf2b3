#include "vulkan/row_analysis.hpp"

#include <gpu_layout.h>

#include <algorithm>
#include <cmath>

namespace sieve {

namespace {

using ref::SamplerKind;
// The row flags (ROW_*), the ops (OP_*), the selectors (SELECT_*).
using namespace glsl;

uint32_t op_of(SamplerKind kind) {
    switch (kind) {
    case SamplerKind::Temperature: return OP_TEMPERATURE;
    case SamplerKind::TopK: return OP_TOP_K;
    case SamplerKind::TopP: return OP_TOP_P;
    case SamplerKind::MinP: return OP_MIN_P;
    case SamplerKind::TypicalP: return OP_TYPICAL;
    case SamplerKind::TopNSigma: return OP_TOP_N_SIGMA;
    case SamplerKind::Xtc: return OP_XTC;
    default: return OP_END;  // penalties and DRY (the history pass applies them first: history.comp); the draw
    }
}

uint32_t selector_of(SamplerKind last) {
    switch (last) {
    case SamplerKind::Mirostat: return SELECT_MIROSTAT;
    case SamplerKind::MirostatV2: return SELECT_MIROSTAT_V2;
    case SamplerKind::AdaptiveP: return SELECT_ADAPTIVE;
    default: return SELECT_DIST;
    }
}

// The wide passes' WIDE_DIVISIONS for the chain. A temperature sampler
// divides a row's values at most once (op_divide; greedy masking and a
// dynamic temperature, whose rows never take the wide passes, divide no
// more), so the chain's counts bound every row's.
uint32_t wide_divisions(const std::vector<SamplerKind>& samplers) {
    uint32_t all = 0, cut = 0;
    for (SamplerKind k : samplers) {
        if (k == SamplerKind::Temperature) ++all;
        if (k == SamplerKind::TopP) cut = all;
    }
    return std::min(cut, WIDE_MAX_DIVISIONS) | (std::min(all, WIDE_MAX_DIVISIONS) << 8);
}

// How many candidates the collect pass keeps and which full-row aggregates
// the tail may need, walking the chain as the tail will: while nothing has
// cut the array, a sampler that needs the row's softmax mass (top-p, XTC, the
// draw) reads it at the temperatures applied so far (agg_t); top-n-sigma reads
// the row's mean and variance. The first top-k <= CAP / 2 bounds the rest of
// the chain to its k candidates (a greedy masking to one).
struct Needs {
    uint32_t need;
    uint32_t flags = 0;
    float agg_t = 1.0f;
    float floor = 0.0f;  // ROW_FLOOR: min-p's ln(p) in raw logits (times the temperatures before it)
};

// Candidates kept when no top-k bounds the chain: rows whose survivors pass
// them go to the CPU twin (cpu_fallback_rows), but for rows with min-p's
// floor (ROW_FLOOR: min-p first, or after top-p alone), whose chunks keep
// their share of the buffer and whose tail
// keeps every survivor it can prove it holds (collect.glsl: chunk_need;
// collect_tail.glsl: floor_lists_whole).
constexpr uint32_t kUnboundedNeed = 64;

// Whether a sampler acts on this row (a parameter may switch it off: the
// llama.cpp meanings of k <= 0, p >= 1, min-p <= 0, n <= 0, XTC's bounds).
bool acts(SamplerKind kind, const ref::RowParams& row) {
    switch (kind) {
    case SamplerKind::Temperature: return true;
    case SamplerKind::TopK: return row.top_k > 0;
    case SamplerKind::TopP: return row.top_p < 1.0f;
    case SamplerKind::MinP: return row.min_p > 0.0f;
    case SamplerKind::TypicalP: return row.typical_p < 1.0f;
    case SamplerKind::TopNSigma: return row.top_n_sigma > 0.0f;
    case SamplerKind::Xtc: return row.xtc_probability > 0.0f && row.xtc_threshold <= 0.5f;
    default: return false;  // penalties and DRY: the history pass applies them before the chain (history.comp)
    }
}

// A top-p that is the row's only cut, with nothing after it but positive
// temperatures and the draw: the wide passes can find its cut from the full
// row's mass themselves, so the collect pass skips the row's softmax sum (an
// exp per logit and the scalar loop, about half its cost on a CPU device).
bool top_p_only_cut(const std::vector<SamplerKind>& samplers, size_t at, const ref::RowParams& row) {
    if (samplers.back() != SamplerKind::Dist || row.dynatemp_range > 0.0f || !(row.temperature > 0.0f)) return false;
    for (size_t i = at + 1; i + 1 < samplers.size(); ++i)
        if (samplers[i] != SamplerKind::Temperature && acts(samplers[i], row)) return false;
    return true;
}

Needs analyse_needs(const std::vector<SamplerKind>& samplers, const ref::RowParams& row, uint32_t half,
                    bool defer_top_p) {
    Needs n;
    n.need = std::min(kUnboundedNeed, half);
    float tprod = 1.0f;
    bool mass = false, xtc_before = false, cut_before = false;
    // Every cut so far kept the row's maximum (none yet, or only top-p's):
    // min-p's threshold is then the row's maximum + ln p, and its floor holds.
    bool max_kept = true;
    // After min-p has acted the rest of the array is never "unknown" again:
    // its cut falls inside the buffer (the rest is dropped) or past it (the
    // row goes to the CPU twin; op_min_p in tail.glsl), so the draw never
    // needs the row's mass, and the collect pass need not sum it (an exp
    // per logit, and no register picks for rows with aggregates).
    bool min_p_cut = false;
    auto want_mass = [&] {
        if (!mass) n.agg_t = tprod;
        mass = true;
        n.flags |= ROW_NEED_MASS;
    };
    for (size_t i = 0; i + 1 < samplers.size(); ++i) {
        if (samplers[i] != SamplerKind::Temperature && !acts(samplers[i], row)) continue;  // off for this row
        switch (samplers[i]) {
        case SamplerKind::Temperature:
            if (row.dynatemp_range > 0.0f) return n;  // entropy over the array: bounded or the CPU twin
            if (!(row.temperature > 0.0f)) return n;  // greedy masking: every entry is known after it
            tprod *= row.temperature;
            break;
        case SamplerKind::TopK:
            if (!xtc_before) n.need = std::min<uint32_t>(static_cast<uint32_t>(row.top_k), half);
            return n;
        case SamplerKind::TopP:
            // A cut past the buffer keeps at least min_keep entries: the
            // wide passes need them in the buffer (wide_histogram counts no
            // members of its bins), up to half the buffer.
            n.need = std::min(std::max(n.need, row.min_keep > 0 ? static_cast<uint32_t>(row.min_keep) : 0u), half);
            if (defer_top_p && !cut_before && !mass && !(n.flags & ROW_NEED_SIGMA) && top_p_only_cut(samplers, i, row)) {
                n.flags |= ROW_DEFER_TOP_P;
                return n;
            }
            want_mass();
            cut_before = true;
            break;
        case SamplerKind::MinP:
            // The chain's first cut, or the first after top-p's (llama.cpp's
            // default chain with top-k off), which keep the row's maximum: the
            // collect pass may drop what can never pass it (slightly more
            // generous than the threshold: rounding). After a top-p, what
            // top-p keeps past the buffer is below the floor, so min-p drops
            // it (tail.glsl: min_p_cut).
            min_p_cut = true;
            if (max_kept && row.min_p < 1.0f) {
                n.flags |= ROW_FLOOR;
                n.floor = static_cast<float>(static_cast<double>(tprod) * std::log(static_cast<double>(row.min_p)) * (1.0 + 1e-5));
            }
            max_kept = false;  // one floor a row
            cut_before = true;
            break;
        case SamplerKind::TypicalP:
            max_kept = false;
            cut_before = true;
            break;
        case SamplerKind::Xtc:
            want_mass();
            max_kept = false;
            xtc_before = true;
            cut_before = true;
            break;
        case SamplerKind::TopNSigma:
            n.flags |= ROW_NEED_SIGMA;
            max_kept = false;
            cut_before = true;
            break;
        default: break;
        }
    }
    switch (samplers.back()) {
    case SamplerKind::Dist:
        if (!min_p_cut) want_mass();
        break;
    case SamplerKind::Mirostat:
    case SamplerKind::MirostatV2:
    case SamplerKind::AdaptiveP:
        // The learning selectors see as much of the array as the buffer holds
        // (mirostat v2 at mu = 10 keeps tokens down to p = 2^-10).
        n.need = half;
        want_mass();
        // Mirostat v2 after temperatures alone (llama.cpp's chain for it)
        // keeps p >= 2^-mu, a floor below the row's maximum: the collect
        // pass drops what lies below it, from the slot's mu (collect.glsl:
        // row_floor_offset), and the cut knows the rest fails
        // (selectors.glsl: mirostat_v2_cut).
        if (samplers.back() == SamplerKind::MirostatV2 && !cut_before) n.flags |= ROW_FLOOR | ROW_MU_FLOOR;
        break;
    default: break;
    }
    return n;
}

// Whether the collect tail may hand the row to the wide passes (a top-p cut
// past the buffer): false where no top-p acts on the row (only op_top_p hands
// a cut over: tail.glsl), where an acting min-p follows the last top-p (its
// cut, in the buffer, drops the rest; past it, the row goes to the CPU twin:
// tail.glsl, min_p_cut; llama.cpp's default chain with top-k off), and when
// an acting top-k of at most what the buffer keeps comes before every other
// acting sampler (llama.cpp's default chain). Conservative: true wherever
// unsure.
bool may_go_wide(const ChainAnalysis& chain, const std::vector<SamplerKind>& samplers, const ref::RowParams& row,
                 uint32_t capacity) {
    if (!chain.top_p || !acts(SamplerKind::TopP, row)) return false;
    if (acts(SamplerKind::MinP, row)) {
        const auto last_top_p = std::find(samplers.rbegin(), samplers.rend(), SamplerKind::TopP);
        if (std::find(samplers.rbegin(), last_top_p, SamplerKind::MinP) != last_top_p) return false;
    }
    const uint32_t bound = std::min(kUnboundedNeed, capacity / 2);
    for (size_t i = 0; i + 1 < samplers.size(); ++i) {
        const SamplerKind k = samplers[i];
        if (k == SamplerKind::Temperature && !(row.dynatemp_range > 0.0f) && row.temperature > 0.0f) continue;
        if (k != SamplerKind::Temperature && !acts(k, row)) continue;
        // A top-k first, within the candidates the collect pass keeps for it:
        // the tail knows the whole array after it (op_top_k). Anything else:
        // maybe.
        return !(k == SamplerKind::TopK && static_cast<uint32_t>(row.top_k) <= bound);
    }
    return false;
}

// collect_chunk.glsl's plain variant: no full-row aggregates (want_sigma ||
// want_mass) and 2 * PROBE * WG <= CAP (PROBE = 4). Its chunks keep any need
// (up to CAP / 2): the register picks (pick_chunk) those they hold, a radix
// select over the chunk (radix_chunk) the larger ones. The bias/bitmask and
// the vec4 map are the recording's business.
bool collect_plain(uint32_t flags, uint32_t workgroup_size, uint32_t capacity) {
    return (flags & (ROW_NEED_SIGMA | ROW_NEED_MASS)) == 0 && 8 * workgroup_size <= capacity;
}

// collect_chunk.glsl's choice of radix_chunk for a row of either variant
// (plain, or general: its first read sums the aggregates): a need past
// RADIX_FROM (a CPU device's register picks, PROBE x WG; else PICK_LIMIT,
// min(2 x WG, CAP / 2)) and no min-p floor (the picks take a floored row
// whatever its need). The shader clamps the need to [1, CAP / 2] as
// analyse_needs does. The bias/bitmask and the vec4 map are the
// recording's business (RecordingKey::row_takes_radix).
bool radix_chunk(const RowAnalysis& a, const RowContext& at) {
    const uint32_t from = at.cpu_paths ? 4 * at.workgroup_size : std::min(2 * at.workgroup_size, at.capacity / 2);
    return (a.flags & ROW_FLOOR) == 0 && std::max(a.need, 1u) > from;
}

// A min-p row whose survivors may reach past the candidate buffer can be
// drawn by the key levels over them (collect_tail.glsl: hand_to_levels)
// where they are every logit at or above min-p's threshold and the draw
// needs nothing else: min-p is the only sampler acting before the draw (the
// history samplers aside: they adjust the logits before everything), or
// follows one top-p (llama.cpp's default chain with top-k off: both keep a
// canonical prefix, and min-p's is the row's where top-p's cut lies past it,
// which level 1 shows first: scan.glsl, cut_past_survivors), with at most
// one plain temperature after it, which the levels take as the row's scale
// (P_SCALE), and the draw is dist. (A min_keep the buffer does not hold,
// which may reach past the survivors, is the tail's to refuse: min_p_cut.)
// A sampling call only (a distribution lists the survivors: the CPU twin).
bool floor_levels(const ChainAnalysis& chain, const std::vector<SamplerKind>& samplers, const ref::RowParams& row,
                  const RowContext& at) {
    if (!at.sample || samplers.back() != SamplerKind::Dist || chain.temperatures > 1) return false;
    bool min_p = false, top_p = false;
    for (size_t i = 0; i + 1 < samplers.size(); ++i) {
        const SamplerKind k = samplers[i];
        if (k == SamplerKind::Penalties || k == SamplerKind::Dry) continue;
        if (k == SamplerKind::Temperature) {
            if (!min_p || row.dynatemp_range > 0.0f || !(row.temperature > 0.0f)) return false;
            continue;
        }
        if (!acts(k, row)) continue;
        if (k == SamplerKind::TopP && !top_p && !min_p) {
            top_p = true;
            continue;
        }
        if (k != SamplerKind::MinP || min_p) return false;
        min_p = true;
    }
    return min_p;
}

// llama_sampler_penalties_apply returns at once when penalty_last_n == 0 or
// every value is neutral; llama_sampler_dry_apply when multiplier == 0,
// base < 1 or dry_penalty_last_n == 0.
bool penalties_act(const ref::RowParams& row) {
    return row.penalty_last_n != 0 &&
           !(row.penalty_repeat == 1.0f && row.penalty_freq == 0.0f && row.penalty_present == 0.0f);
}

bool dry_acts(const ref::RowParams& row) {
    return row.dry_multiplier != 0.0f && row.dry_base >= 1.0f && row.dry_penalty_last_n != 0;
}

// The chain's samplers that act on some of the rows, into call->ops and
// call->chain_ops (packed as the shaders' CHAIN_OPS); returns whether one
// other than a temperature does. A sampler a row's parameters switch off is
// a no-op there, in llama.cpp and in tail.glsl alike (acts(): the conditions
// of the ops' early returns), so one off in every row of a call is left out
// of the call's pipeline and the tail spends no barrier or parameter read on
// it: llama.cpp's default chain leaves top-n-sigma, typical and XTC off. A
// temperature always acts.
bool live_chain_ops(const std::vector<SamplerKind>& samplers, const ref::RowParams* rows, uint32_t n,
                    CallAnalysis* call) {
    bool truncates = false;
    for (size_t i = 0; i + 1 < samplers.size(); ++i) {
        const uint32_t op = op_of(samplers[i]);
        if (op == OP_END || call->ops >= MAX_CHAIN_OPS) continue;  // longer chains are refused (GpuChain)
        bool live = false;
        for (uint32_t r = 0; r < n && !live; ++r) live = acts(samplers[i], rows[r]);
        if (!live) continue;
        call->chain_ops |= static_cast<uint64_t>(op) << (4 * call->ops++);
        truncates = truncates || op != OP_TEMPERATURE;
    }
    return truncates;
}

} // namespace

ChainAnalysis analyse_chain(const std::vector<SamplerKind>& samplers) {
    ChainAnalysis c;
    c.greedy = samplers.back() == SamplerKind::Greedy;
    c.selector = selector_of(samplers.back());
    for (size_t i = 0; i < samplers.size(); ++i) {
        const SamplerKind k = samplers[i];
        c.top_p = c.top_p || k == SamplerKind::TopP;
        c.history = c.history || k == SamplerKind::Penalties || k == SamplerKind::Dry;
        c.temperatures += k == SamplerKind::Temperature ? 1 : 0;
        if (i + 1 == samplers.size()) break;  // the draw
        if (k != SamplerKind::Penalties && k != SamplerKind::Dry) ++c.ops;
    }
    c.temperature = c.temperatures > 0;
    c.wide_divisions = wide_divisions(samplers);
    return c;
}

const char* misplaced_history(const std::vector<SamplerKind>& samplers, const ref::RowParams& row) {
    bool other_before = false;
    for (size_t i = 0; i + 1 < samplers.size(); ++i) {
        const SamplerKind k = samplers[i];
        const bool history = k == SamplerKind::Penalties || k == SamplerKind::Dry;
        const bool acts = k == SamplerKind::Penalties ? penalties_act(row) : dry_acts(row);
        if (history && other_before && acts) return ref::sampler_name(k);
        other_before = other_before || !history;
    }
    return nullptr;
}

RowAnalysis analyse_row(const ChainAnalysis& chain, const std::vector<SamplerKind>& samplers,
                        const ref::RowParams& row, const RowContext& at) {
    RowAnalysis a;
    const Needs needs = analyse_needs(samplers, row, at.capacity / 2, at.defer_top_p());
    a.need = needs.need;
    a.agg_t = needs.agg_t;
    a.floor = needs.floor;
    a.flags = needs.flags;
    a.collect = row.dynatemp_range > 0.0f && chain.temperature;
    a.collect_plain = collect_plain(a.flags, at.workgroup_size, at.capacity);
    a.radix_chunk = radix_chunk(a, at);
    // The history samplers (history.comp). Sieve's last_n are never -1 (the
    // engine refuses it); the window is the slot's history up to last_n.
    const auto penalties = std::find(samplers.begin(), samplers.end(), SamplerKind::Penalties);
    const auto dry = std::find(samplers.begin(), samplers.end(), SamplerKind::Dry);
    a.penalties = penalties != samplers.end() && penalties_act(row);
    a.dry = dry != samplers.end() && dry_acts(row);
    const bool has_inputs = !row.logit_bias.empty() || !row.token_bitmask.empty();
    a.inputs_on_upload = has_inputs && at.inputs_on_upload();
    a.inputs = has_inputs && !a.inputs_on_upload;
    if (a.inputs) a.flags |= ROW_HAS_INPUTS;
    if (a.adjusts()) a.flags |= ROW_ADJUST;
    // Without a bias or bitmask for the passes to apply (none, or the
    // upload's) the history pass writes the adjusted logits into the row (the
    // host uploads it again before every submission).
    // A chain asking for logprobs keeps the model's logits in the row: the
    // result reads the drawn token's raw logit there. Rows not patched read
    // their adjustments from the history pass's table.
    if (a.adjusts() && !a.inputs && !at.keep_raw_logits) a.flags |= ROW_PATCH;
    if (a.dry && dry < penalties) a.flags |= ROW_DRY_FIRST;
    a.may_go_wide = may_go_wide(chain, samplers, row, at.capacity);
    // The wide passes alone: top-p is the row's only cut (ROW_DEFER_TOP_P),
    // no buffer keeps min_keep entries (llama.cpp keeps at least one anyway),
    // penalties and DRY run in a pass of their own, and the wide passes
    // divide at most WIDE_MAX_DIVISIONS times (wide.glsl).
    a.wide_direct = (a.flags & ROW_DEFER_TOP_P) != 0 && row.min_keep <= 1 && !a.adjusts() &&
                    chain.temperatures <= WIDE_MAX_DIVISIONS;
    a.floor_levels = (a.flags & ROW_FLOOR) != 0 && floor_levels(chain, samplers, row, at);
    if (a.floor_levels) a.flags |= ROW_FLOOR_LEVELS;
    return a;
}

CallAnalysis analyse_call(const ChainAnalysis& chain, const std::vector<SamplerKind>& samplers,
                          const ref::RowParams* rows, uint32_t n, const RowContext& at) {
    CallAnalysis call;
    call.rows.reserve(n);
    // The collect pass: a learning selector, or a sampler other than a
    // temperature acting on some row (or a row's dynamic temperature,
    // below). A call whose rows switch every other sampler off is what
    // llama.cpp's chain then computes, the temperatures and the draw: the
    // plan of rows without truncation (temperature;dist's), whose draw reads
    // the whole row, where the collect pass's candidates would send every
    // row whose draw lands past them to the CPU twin.
    call.collect = live_chain_ops(samplers, rows, n, &call) || chain.selector != SELECT_DIST;
    call.raw_stats = at.raw_stats();
    bool may_go_wide = false, all_direct = true;
    for (uint32_t r = 0; r < n; ++r) {
        const RowAnalysis& a = call.rows.emplace_back(analyse_row(chain, samplers, rows[r], at));
        call.collect = call.collect || a.collect;
        call.history = call.history || a.adjusts();
        // Rows that adjust unpatched (a chain asking for logprobs, in a
        // sampling call or a distribution call alike) read their adjustments
        // from the history table, which only the inputs variant compiles.
        call.inputs = call.inputs || a.inputs || (a.adjusts() && !(a.flags & ROW_PATCH));
        call.patched = call.patched || (a.flags & ROW_PATCH) != 0;
        may_go_wide = may_go_wide || a.may_go_wide;
        all_direct = all_direct && a.wide_direct;
        call.floor_levels = call.floor_levels || a.floor_levels;
    }
    // Without the wide passes the pass constants say wide_cap 0, so no row is
    // handed to them (llama.cpp's default chain, whose top-k bounds the array
    // first: two empty indirect dispatches and their barriers less).
    call.wide = at.wide_passes && may_go_wide;
    // On a CPU device only (the grid's bins are added by index), not with the
    // history or raw_stats passes.
    call.wide_direct = at.cpu_paths && at.sample && call.collect && call.wide && !call.history && !call.raw_stats &&
                       !chain.greedy && all_direct;
    return call;
}

} // namespace sieve
