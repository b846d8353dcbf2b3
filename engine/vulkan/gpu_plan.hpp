// The plan: which passes a (chain, rows, vocab) records, how a row is split into
// chunks, and what that costs in dispatches and full-row reads.
#pragma once

#include "vulkan/pipelines.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sieve {

// A dispatch whose grid the recording states (vkCmdDispatch), not one the
// shaders or the host arm (vkCmdDispatchIndirect).
constexpr uint32_t kNotIndirect = UINT32_MAX;

struct Dispatch {
    Stage stage;
    uint32_t level;
    bool per_chunk;                    // grid x = chunks (else one workgroup per row)
    uint32_t indirect = kNotIndirect;  // else: word offset of its VkDispatchIndirectCommand in the group's block
};

// A plan's dispatches run once per row group: a window's rows, or a part of
// them (rows_per_group).
struct RowGroup {
    uint32_t window;     // the row window whose descriptor set it binds
    uint32_t row_base;   // its first row, counted from the window's first
    uint32_t rows;
    uint32_t args_base;  // its indirect dispatch arguments, in words (GROUP_ARGS_WORDS a group)
};

// The indirect arguments of a row group (gpu_layout.h: WIDE_*_ARGS,
// LEVEL_ARGS_STRIDE, SHADER_ARGS_WORDS, COLLECT_*_ARGS, GROUP_ARGS_WORDS):
// each level's decision arms the next level.
inline uint32_t histogram_args(uint32_t level) { return level * glsl::LEVEL_ARGS_STRIDE; }

enum class RecordingKind : uint32_t { Sample = 0, Distribution = 1 };

// collect.glsl: a collect pass splits a row into at most MAX_COLLECT_CHUNKS
// chunks, each keeping up to CAP / 2 candidates in the row's candidate region
// of collect_row_words(CAP) words (also the tail's scratch).
inline uint64_t collect_row_words(uint32_t capacity) {
    return static_cast<uint64_t>(glsl::MAX_COLLECT_CHUNKS) * capacity;
}

struct Plan {
    bool small = false;        // vocab <= CAP: finalize reads the row itself
    uint32_t n_chunks = 1;
    uint32_t chunk_size = 1;
    // The most chunks the collect pass may split a row into (the chunk
    // statistics' slots per row its dispatches index by): n_chunks on a CPU
    // device; on a GPU the chunks the vocabulary takes (chunking, at most
    // MAX_ROW_CHUNKS), for plain rows (collect_chunks_for_group).
    uint32_t collect_slots = 1;
    // The chunks the wide passes split every row into (wide_chunk_size):
    // collect_slots, or fewer on a GPU at larger batches (split_for_batch).
    uint32_t wide_chunks = 1;
    uint32_t flags = 0;
    std::vector<Dispatch> dispatches;
    uint32_t min_row_passes = 1;  // full-row reads when the first level resolves the draw
    uint32_t min_dispatches = 1;  // dispatches that launch workgroups in that case
    bool wide_direct = false;     // the wide passes alone (wide.glsl: WIDE_DIRECT)
    // A truncating chain's tail runs in the collect pass's last chunk
    // workgroup of each row (collect_fused.comp), not as a dispatch of its
    // own: a GPU's plan.
    bool fused_tail = false;
    uint32_t history_groups = 0;  // the history pass's building workgroups per row (0: no history pass)
};

// Chunks depend on the vocabulary and the device only (on a CPU device, its
// hardware threads), never on the row count, so a row's results are the same
// whatever the batch (the exceptions, collect_chunks_for_group and
// split_for_batch, split only rows whose result no split changes). max_chunks_for sizes the
// buffers; chunks_for is what a row gets (<= max_chunks_for).
uint32_t max_chunks_for(const EffectiveLimits& limits, sieve_device_type type);
uint32_t chunks_for(const EffectiveLimits& limits, sieve_device_type type);
void chunking(uint32_t vocab, const EffectiveLimits& limits, sieve_device_type type, uint32_t* n_chunks,
              uint32_t* chunk_size);

// On a CPU device one pass over many rows evicts them from the cache before the
// next pass comes back to them, so a plan that reads each row more than once
// (row_passes, the plan's minimum) runs rows in groups whose logits stay
// cached: every pass of a group, then the next group. A plan that reads each
// row once (the collect pass, greedy) takes all rows at once, as a GPU
// always does: fewer dispatches, each a handoff to the device's threads.
// Results do not depend on it: a row's work is the same in any group.
uint32_t rows_per_group(uint32_t rows, uint32_t vocab, sieve_device_type type, uint32_t row_passes);

// The history pass's workgroups per row for a history ring of `capacity`
// tokens and `rows` rows: one per kHistoryPositionsPerGroup positions, so no
// workgroup walks a long history alone, but no more than
// kStreamingWorkgroupsPerUnit per compute unit over the rows on a GPU (a
// streaming pass, as split_for_batch's: its hash lives in the slot's buffer
// and it holds about 1 KB of shared memory, so four fit a unit at once, each
// with half the positions of two) and
// MAX_ROW_CHUNKS; on a CPU device one per compute unit over the rows, at most
// max_chunks_for's (lavapipe runs a workgroup per thread: on 2 cores, two
// workgroups took the pass at 4096 positions from about 900 to 730 us). Any
// split gives the same table (counts and maxima), so the batch may decide it.
inline constexpr uint32_t kHistoryPositionsPerGroup = 64;
uint32_t history_groups_for(uint32_t capacity, uint32_t rows, const EffectiveLimits& limits);

// The dispatch splits a row into the wide passes' chunks (Plan::wide_chunks,
// wide_chunk_size): the wide passes, and a collect plan's key levels and
// gather (FLAG_FLOOR_LEVELS), which the collect tail arms as it arms the
// wide passes (it knows that count: pc.wide_chunks).
bool on_wide_chunks(const Plan& plan, const Dispatch& d);
// The grid x of a direct dispatch of the plan: its chunks (on_wide_chunks:
// Plan::wide_chunks), the history pass's building workgroups, or one per row.
uint32_t workgroups_per_row(const Plan& plan, const Dispatch& d);
// Whether any of the plan's dispatches is indirect (reads arguments).
bool has_indirect(const Plan& plan);
// Whether a shader arms any of them: the host arms only the collect
// variants' (COLLECT_*_ARGS, GpuChain::arm_args), the shaders the rest.
bool has_shader_armed(const Plan& plan);

// Which of collect_chunk.glsl's two variants a call's row groups take
// (gpu_chain.cpp: arm_args): a plan records only those, since an empty
// indirect dispatch is not free (4 us on an H200, 8 at 64 rows: the unarmed
// variant of 521950c's plan).
enum class CollectVariants : uint8_t { Both, Plain, General };

// Where a selection chain's key levels 1..KEY_LEVELS are recorded (rows
// without truncation, whose level 0 may leave more than CAP logits in its
// bin). Inline: in the call's recording, launched indirectly, zero
// workgroups when no row needs them (a CPU device's plan, and every call the
// app submits or waits on itself). Apart: in two more command buffers of the
// same recording (key_levels_plan): levels 1..kNearKeyLevels and the gather,
// which the host submits after the first part only when level 0 armed level
// 1 for some row, then the far levels and the gather again, only when the
// near part armed the first of them. A GPU pays about 4 us for each recorded
// level even when it launches nothing (8 levels, a third of dist's GPU time
// on an H200), while a call needed level 1 rarely there (3.5% of one-row
// calls, 5.5% of 64-row calls on its zipf rows), and a row that needs level
// 1 seldom needs more than a few. Such a recording also holds its first part
// with the near levels after it in one command buffer (Near), which the host
// submits instead while the recording's recent calls needed level 1 often
// (kWholeAboveDeepRate), and the whole plan (Inline), while they needed the
// far levels often. Results are the same either way. A collect plan's key
// levels for min-p's survivors past the buffer (FLAG_FLOOR_LEVELS) are
// always apart: the collect tail arms level 1 instead of level 0.
enum class KeyLevels : uint8_t { Inline, Apart, Near };
// The key levels a Near plan holds, and an Apart recording's near part:
// on lavapipe, N(0, 1) rows needed one or two (dist, min-p 0.05), flat rows
// near 0 (N(0, 0.025), whose keys span many binades below the maximum's)
// up to three at min-p 0.05 in 29 of 30 calls, four in one.
constexpr uint32_t kNearKeyLevels = 3;
// Past this share of recent calls needing the key levels (level 1; the far
// ones), a recording with them apart runs its Near plan (its Inline plan):
// a further submission costs a submit and a wait (30-50 us on the H200) and
// a gather again, about twice the empty levels (4 us each) it saves the
// calls that do not need them.
constexpr double kWholeAboveDeepRate = 0.25;
// The weight of a call in that share (a running mean over about 8 calls).
constexpr double kDeepRateWeight = 1.0 / 8.0;

// collect: the chain has truncating samplers (or a dynamic temperature): one
// collect dispatch whose last workgroup runs the chain on the row's top
// candidates (collect_chunk.glsl, tail.glsl). Otherwise the selection levels.
// wide: the chain holds top-p, whose cut may fall past the candidate buffer:
// two more passes, launched indirectly only for rows that need them
// (wide.glsl).
// history_groups: some row's penalties or DRY act (0: none does): the history
// pass (history.comp, reading the slot's history, not the row) runs first, as
// one dispatch of one workgroup per row, or, with more than one group
// (history_groups_for), a clearing dispatch then a building one of that many
// workgroups per row.
// logprobs: the chain asks for raw log-probabilities: raw_stats.comp (one
// more pass over the row, per chunk) runs before everything.
// wide_direct: every row's only cut is a top-p the wide passes finish from
// the row itself (row_analysis.hpp: RowAnalysis::wide_direct; a CPU device): they run
// alone, two passes instead of the collect pass, its tail and two more
// (not with history or logprobs).
// variants: collect_chunk.glsl's variants the plan records (a big row's; a small
// row has one).
// levels: where a selection chain's key levels go (KeyLevels).
// floor_levels: a collect plan of big rows where a min-p row's survivors may
// reach past the buffer (RowAnalysis::floor_levels): FLAG_FLOOR_LEVELS, and
// the key levels and the gather after its passes, where `levels` puts them
// (Inline: in the plan; Apart: key_levels_plan's parts; Near: the near
// levels in the plan, the far ones apart).
Plan make_plan(RecordingKind kind, bool greedy_chain, bool collect, bool wide, uint32_t history_groups, uint32_t vocab,
               const EffectiveLimits& limits, sieve_device_type type, bool logprobs = false, bool wide_direct = false,
               CollectVariants variants = CollectVariants::Both, KeyLevels levels = KeyLevels::Inline,
               bool floor_levels = false);

// A GPU's plan whose figures no split of a row into chunks changes
// (same_for_any_chunking) splits each row into about kStreamingWorkgroupsPerUnit
// workgroups per compute unit over the call's rows, at most the plan's
// chunks: many a row at batch 1, a few at large batches. Such plans are the
// row statistics (maxima, first ids, counts) and what follows them without a
// truncating sampler: the selection levels (exact 40-bit mass sums,
// mass_histogram.comp), the gather (its candidates in any order, a tie's
// member counts) and the probabilities; the history pass before them has its
// own workgroups. Logprobs (raw_stats.comp: float sums over the chunks) keep
// the batch-independent chunking; the collect pass splits by its own rule
// (collect_chunks_for_group). A GPU plan's wide passes (a buffer row's exact
// sums, wide.glsl) split their rows the same way (Plan::wide_chunks). A CPU
// device's plan is left as it is.
void split_for_batch(Plan* plan, uint32_t rows, uint32_t vocab, const EffectiveLimits& limits);
// The row statistics, selection and gather passes stream their chunk with
// a few tens of kilobytes of shared memory at most (their reduction trees):
// four of their workgroups fit a compute unit at once where the collect
// pass's two do, and each reads a chunk at one workgroup's latency-bound
// rate, so four a unit read a batch's rows in one wave, twice as many loads
// in flight. (At 64 rows on an H200: 8 chunks a row, not 4.)
constexpr uint32_t kStreamingWorkgroupsPerUnit = 4;
// The plan is such a plan (and not a small row's one-dispatch plan).
bool same_for_any_chunking(const Plan& plan);

// The tail as a dispatch of its own after the collect passes, as every plan
// had it before the fused tail (the estimate's plans of measured runs).
void separate_tail(Plan* p);
// The history pass's clearing dispatch (HISTORY_CLEAR) before a split
// history pass, as 521950c's plan had it (the estimate's plans of measured
// runs); today the last workgroup of each call's pass empties the hash.
void separate_history_clear(Plan* p);

// A part of a plan made with KeyLevels::Apart or Near (a selection plan's,
// or a collect plan's with FLAG_FLOOR_LEVELS): key levels
// first_level..last_level (indirect, armed by the level before, or by the
// collect tail) and the gather again, whose rows drawn by an earlier gather
// return at once (their phase is PHASE_DONE). It starts from where the
// parts before left the rows: no history pass, no statistics, and the
// levels' arguments as the level before armed them.
Plan key_levels_plan(const Plan& first, uint32_t first_level, uint32_t last_level);

// collect.glsl: collect_chunk_size, the logits per chunk of a row split into
// n chunks (a multiple of 4). collect_chunks_holding_logits: how many of them
// hold logits (n itself when n came from it; the shaders take the count the
// host arms and derive the size from it).
inline uint32_t collect_chunk_size(uint32_t vocab, uint32_t n) { return ((vocab + n - 1) / n + 3) / 4 * 4; }
// The chunks that hold logits when a row is split into n of that size.
inline uint32_t collect_chunks_holding_logits(uint32_t vocab, uint32_t n) {
    const uint32_t size = collect_chunk_size(vocab, n);
    return (vocab + size - 1) / size;
}

// The wide passes' chunk (wide_histogram.comp, wide_gather.comp): a row in
// plan.wide_chunks chunks (the same on a CPU device as the plan's).
inline uint32_t wide_chunk_size(const Plan& plan, uint32_t vocab) {
    return collect_chunk_size(vocab, plan.wide_chunks);
}

// The (key, id) pairs chunk c's list holds of a row split into n chunks
// (collect.glsl: chunk_list_at): CAP / 2 up to MAX_COLLECT_CHUNKS chunks,
// past them an equal share of the row's collect_row_words.
inline uint32_t chunk_list_pairs(uint32_t n, uint32_t capacity) {
    if (n <= glsl::MAX_COLLECT_CHUNKS) return capacity / 2;
    return static_cast<uint32_t>((collect_row_words(capacity) / n) & ~uint64_t{1}) / 2;
}

// The entries each chunk of a row split into n chunks keeps (collect.glsl:
// chunk_need, which this mirrors): `need` (clamped to [1, CAP / 2]), or, for
// a row with min-p's floor (ROW_FLOOR), its whole share of the row's words
// (chunk_list_pairs, up to CAP / 2; PICKS_PER_INVOCATION x the chunks'
// `workgroup` where the row sums full-row aggregates), never fewer than `need`.
inline uint32_t chunk_keep(uint32_t need, uint32_t row_flags, uint32_t n, uint32_t capacity, uint32_t workgroup) {
    need = std::clamp(need, 1u, std::max(capacity / 2, 1u));
    if (!(row_flags & glsl::ROW_FLOOR)) return need;
    uint32_t keep = std::min(chunk_list_pairs(n, capacity), capacity / 2);
    if (row_flags & (glsl::ROW_NEED_SIGMA | glsl::ROW_NEED_MASS))
        keep = std::min(keep, glsl::PICKS_PER_INVOCATION * workgroup);
    return std::max(need, keep);
}

// The most entries a GPU tail copies into its buffer to merge `lists` lists
// of up to `need` (collect_tail.glsl: sort_chunk_lists), ties aside: all of
// them where they fit the buffer (CAP), else what the splitters leave
// (narrow_chunk_lists: need + (lists + 1) ceil(need / S), S = max(min(WG,
// CAP) / lists, 1) splitters a list). Past CAP (a tie group) the tail folds
// the lists by merge paths in device memory instead, one dependent chain of
// loads a list.
inline uint64_t tail_merge_entries(uint32_t need, uint32_t lists, uint32_t capacity, uint32_t workgroup) {
    const uint64_t all = static_cast<uint64_t>(lists) * need;
    if (all <= capacity) return all;
    const uint32_t per = std::max(std::min(workgroup, capacity) / lists, 1u);
    return need + static_cast<uint64_t>(lists + 1) * ((need + per - 1) / per);
}

// The chunks a collect pass splits each row of a row group into (the
// variant's indirect x; gpu_chain.cpp arm_args). The plan's n_chunks,
// except on a GPU for a group of plain rows (collect_chunk.glsl's plain variant: no
// full-row aggregates, so how a row is split changes no result): about two
// workgroups per compute unit over the group (many chunks at batch 1, one a
// row at large batches), at most the chunk statistics' slots
// (plan.collect_slots) and kMostSplitChunks, and past MAX_COLLECT_CHUNKS only
// as many as keep every list of most_need entries in its share of the row's
// words (chunk_list_pairs) and the tail's merge in its buffer
// (tail_merge_entries <= CAP): top-k 1000 takes 16 chunks at one row on an
// H200 (CAP 4096), 8 at CAP 2048.
uint32_t collect_chunks_for_group(const Plan& plan, uint32_t vocab, uint32_t rows, uint32_t most_need, bool plain,
                                  const EffectiveLimits& limits);
// The most chunks a split row takes: the tail merges their lists on one
// workgroup, so more chunks than this cost the tail more than they save the
// chunks (an H200 at batch 1: 32 chunks about 20 us under 64 for the default
// chain, min-p, top-p and penalties; docs/perf-log.md).
constexpr uint32_t kMostSplitChunks = 32;

// wide.glsl: a row's words in the wide buffer for a list of `list` entries.
constexpr uint32_t kMaxWideList = 65536;
inline uint64_t wide_row_words(uint32_t capacity, uint32_t list) { return 2ull * capacity + 2ull * list; }

} // namespace sieve
