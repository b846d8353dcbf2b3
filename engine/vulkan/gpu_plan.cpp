#include "vulkan/gpu_plan.hpp"

#include <algorithm>

namespace sieve {

using namespace glsl;

uint32_t max_chunks_for(const EffectiveLimits&, sieve_device_type type) {
    // A CPU implementation (lavapipe) runs a handful of workgroups in parallel:
    // more chunks only add merge work. A GPU needs many to fill it at batch 1.
    // (raw_stats.comp's last workgroup holds a row's chunks' top logprobs in
    // registers sized for MAX_ROW_CHUNKS.)
    return type == SIEVE_DEVICE_CPU ? 4u : MAX_ROW_CHUNKS;
}

uint32_t chunks_for(const EffectiveLimits& limits, sieve_device_type type) {
    // Lavapipe runs one workgroup per thread, one thread per core: more
    // chunks than cores only add per-workgroup work (on 2 cores, default chain
    // at 262144: 601 us per token with 2 chunks, 742 with 4).
    // A CPU device's compute units are its hardware threads (vk_instance.cpp's
    // stand-in; SIEVE_COMPUTE_UNITS sets them, so a 2-core machine can test
    // the plan of a 4-core one).
    const uint32_t most = max_chunks_for(limits, type);
    if (type != SIEVE_DEVICE_CPU) return most;
    return std::clamp(limits.compute_units, 1u, most);
}

void chunking(uint32_t vocab, const EffectiveLimits& limits, sieve_device_type type, uint32_t* n_chunks,
              uint32_t* chunk_size) {
    uint32_t min_chunk = limits.workgroup_size * 8u;  // at least 8 logits per invocation
    uint32_t n = std::clamp((vocab + min_chunk - 1) / min_chunk, 1u, chunks_for(limits, type));
    uint32_t size = (vocab + n - 1) / n;
    *chunk_size = size;
    *n_chunks = (vocab + size - 1) / size;
}

uint32_t collect_chunks_for_group(const Plan& plan, uint32_t vocab, uint32_t rows, uint32_t most_need, bool plain,
                                  const EffectiveLimits& limits) {
    if (!plain || plan.small || limits.plan_type == SIEVE_DEVICE_CPU) return plan.n_chunks;
    const uint32_t target = 2 * std::max(limits.compute_units, 1u);  // workgroups over the group
    const uint32_t need = std::max(most_need, 1u), cap = limits.candidate_capacity;
    uint32_t n = std::min({plan.collect_slots, kMostSplitChunks, std::max(target / std::max(rows, 1u), 1u)});
    // Fewer chunks only lengthen each list's share and cut the tail's merge.
    while (n > MAX_COLLECT_CHUNKS &&
           (need > chunk_list_pairs(n, cap) || tail_merge_entries(need, n, cap, limits.workgroup_size) > cap))
        --n;
    return collect_chunks_holding_logits(vocab, n);
}

namespace {

// Key levels first..last, each launched by the level before (indirect), then
// the gather, whose last workgroup per row draws the token (a row a later
// level still narrows is left to the gather after that level).
void append_key_levels_and_gather(Plan* p, uint32_t first, uint32_t last) {
    for (uint32_t level = first; level <= last; ++level)
        p->dispatches.push_back({Stage::MassHistogram, level, true, histogram_args(level)});
    p->dispatches.push_back({Stage::Gather, 0, true});
}

// The levels a plan made with `levels` holds after its first pass (0: none).
uint32_t levels_in_plan(KeyLevels levels) {
    return levels == KeyLevels::Inline ? KEY_LEVELS : levels == KeyLevels::Near ? kNearKeyLevels : 0u;
}

Plan make_row_plan(RecordingKind kind, bool greedy_chain, bool collect, bool wide, bool direct, uint32_t vocab,
                   const EffectiveLimits& limits, sieve_device_type type, CollectVariants variants, KeyLevels levels,
                   bool floor_levels) {
    Plan p;
    chunking(vocab, limits, type, &p.n_chunks, &p.chunk_size);
    if (greedy_chain) p.flags |= FLAG_GREEDY;
    if (collect) {
        if (kind == RecordingKind::Distribution) p.flags |= FLAG_DISTRIBUTION;
        p.small = vocab <= limits.candidate_capacity;
        if (p.small) {
            p.flags |= FLAG_SMALL;
            p.n_chunks = 1;
            p.chunk_size = vocab;
        } else {
            // At most MAX_COLLECT_CHUNKS chunks, each starting at a multiple of
            // 4 logits (collect_chunk.glsl reads plain rows four at a time). On a
            // GPU some rows may take more (collect_chunks_for_group): the
            // chunks the vocabulary takes.
            const uint32_t slots = std::min(p.n_chunks, MAX_ROW_CHUNKS);
            const uint32_t n = std::min(p.n_chunks, MAX_COLLECT_CHUNKS);
            // collect_tail.glsl's merge_chunk_aggs holds these chunks' aggregates
            // in WG / 2 shared slots, at the smallest workgroup (device_profile.cpp: 32).
            static_assert(MAX_COLLECT_CHUNKS <= 32 / 2, "merge_chunk_aggs: the chunks at the smallest workgroup");
            p.chunk_size = collect_chunk_size(vocab, n);
            p.n_chunks = collect_chunks_holding_logits(vocab, n);
            p.collect_slots = type == SIEVE_DEVICE_CPU ? p.n_chunks : collect_chunks_holding_logits(vocab, slots);
            p.wide_chunks = p.collect_slots;
            // A GPU's tail sorts the lists in shared memory; ranks by binary
            // search (dependent loads) cost a CPU device less than barriers.
            if (type != SIEVE_DEVICE_CPU) p.flags |= FLAG_SORT_MERGE;
        }
        // The chunks, then one workgroup per row for the merge, the chain and
        // the draw (collect_tail.glsl): on a GPU the chunks' last workgroup
        // of each row to finish (collect_fused.comp, no dispatch and barrier
        // of its own), on a CPU device a dispatch of its own, which keeps the
        // tail's code out of the chunks' shader (a CPU device runs every
        // line under a lane mask, taken or not). Chunks of a big row run one of two
        // variants of collect_chunk.glsl, which the host arms per row group each
        // call (gpu_chain.cpp: arm_args): the plain one when every row of
        // the group can take it, else the general one. Only the variants the
        // call's groups take are recorded.
        // Direct rows (wide.glsl: WIDE_DIRECT): the wide passes alone, the
        // histogram armed by the host, its last workgroup arming the gather.
        if (direct && wide && !p.small && !greedy_chain && kind == RecordingKind::Sample) {
            p.wide_direct = true;
            p.dispatches = {{Stage::WideHistogram, 0, true}, {Stage::WideGather, 0, true, WIDE_GATHER_ARGS}};
            p.min_row_passes = 2;
            p.min_dispatches = 2;
            return p;
        }
        if (p.small)
            p.dispatches = {{Stage::Collect, 0, false}};
        else {
            if (variants != CollectVariants::General)
                p.dispatches.push_back({Stage::CollectPlain, 0, true, COLLECT_PLAIN_ARGS});
            if (variants != CollectVariants::Plain)
                p.dispatches.push_back({Stage::Collect, 0, true, COLLECT_GENERAL_ARGS});
        }
        p.fused_tail = type != SIEVE_DEVICE_CPU;
        if (!p.fused_tail) p.dispatches.push_back({Stage::CollectTail, 0, false});
        // A top-p cut past the buffer: wide_histogram and wide_gather, armed
        // by the rows that need them (zero workgroups otherwise).
        if (wide && !p.small && !greedy_chain && kind == RecordingKind::Sample) {
            p.dispatches.push_back({Stage::WideHistogram, 0, true, WIDE_HIST_ARGS});
            p.dispatches.push_back({Stage::WideGather, 0, true, WIDE_GATHER_ARGS});
        }
        // min-p's survivors past the buffer: the key levels (level 1 armed
        // by the tail) and the gather, as a selection plan's, here or apart.
        if (floor_levels && !p.small && !greedy_chain && kind == RecordingKind::Sample) {
            p.flags |= FLAG_FLOOR_LEVELS;
            if (levels != KeyLevels::Apart) append_key_levels_and_gather(&p, 1, levels_in_plan(levels));
        }
        p.min_row_passes = 1;
        p.min_dispatches = p.fused_tail ? 1 : 2;
        return p;
    }
    if (kind == RecordingKind::Distribution) {
        p.flags |= FLAG_DISTRIBUTION;
        p.dispatches = {{Stage::RowStats, 0, true}, {Stage::MassHistogram, 0, true}, {Stage::Probabilities, 0, true}};
        p.min_row_passes = 3;
        p.min_dispatches = 3;
        return p;
    }
    p.small = vocab <= limits.candidate_capacity;
    if (p.small) {
        // One workgroup per row reads the row and draws: one dispatch.
        p.flags |= FLAG_SMALL;
        p.dispatches = {{Stage::Finalize, 0, false}};
        return p;
    }
    // Row statistics; its last workgroup per row answers failed and greedy rows.
    p.dispatches.push_back({Stage::RowStats, 0, true});
    if (!greedy_chain) {
        // Level 0 (its last workgroup per row takes the level's decision), key
        // levels recorded for the worst case (8 x 4 bits) but launched
        // indirectly: a level no row needs gets zero workgroups (Inline), or
        // recorded apart, all (key_levels_plan) or the far ones (Near). Then
        // the gather, whose last workgroup per row draws the token.
        p.dispatches.push_back({Stage::MassHistogram, 0, true});
        if (levels == KeyLevels::Apart)
            p.dispatches.push_back({Stage::Gather, 0, true});
        else
            append_key_levels_and_gather(&p, 1, levels_in_plan(levels));
    }
    p.min_row_passes = greedy_chain ? 1 : 3;
    p.min_dispatches = greedy_chain ? 1 : 3;
    return p;
}

} // namespace

uint32_t rows_per_group(uint32_t rows, uint32_t vocab, sieve_device_type type, uint32_t row_passes) {
    // (One read per row: 64 rows of 151936 from a device buffer took 140-152 us
    // per row in one group against 177-246 in groups of 3, sieve_batch_bench.)
    if (type != SIEVE_DEVICE_CPU || row_passes <= 1) return rows;
    const uint64_t cached_bytes = 2u << 20;  // measured on lavapipe: 2 rows of 151936 run as fast as 1
    const uint64_t fit = cached_bytes / (static_cast<uint64_t>(vocab) * sizeof(float));
    return static_cast<uint32_t>(std::clamp<uint64_t>(fit, 1, rows));
}

uint32_t history_groups_for(uint32_t capacity, uint32_t rows, const EffectiveLimits& limits) {
    const uint32_t by_history = (capacity + kHistoryPositionsPerGroup - 1) / kHistoryPositionsPerGroup;
    const uint32_t per_unit = limits.plan_type == SIEVE_DEVICE_CPU ? 1u : kStreamingWorkgroupsPerUnit;
    const uint32_t by_device = per_unit * std::max(limits.compute_units, 1u) / std::max(rows, 1u);
    const uint32_t most = limits.plan_type == SIEVE_DEVICE_CPU ? max_chunks_for(limits, SIEVE_DEVICE_CPU) : MAX_ROW_CHUNKS;
    return std::clamp<uint32_t>(std::min({by_history, by_device, most}), 1, most);
}

bool has_indirect(const Plan& plan) {
    return std::any_of(plan.dispatches.begin(), plan.dispatches.end(),
                       [](const Dispatch& d) { return d.indirect != kNotIndirect; });
}

bool has_shader_armed(const Plan& plan) {
    return std::any_of(plan.dispatches.begin(), plan.dispatches.end(), [](const Dispatch& d) {
        return d.indirect != kNotIndirect && d.indirect < SHADER_ARGS_WORDS;
    });
}

bool on_wide_chunks(const Plan& plan, const Dispatch& d) {
    if (d.stage == Stage::WideHistogram || d.stage == Stage::WideGather) return true;
    return (plan.flags & FLAG_FLOOR_LEVELS) != 0 && (d.stage == Stage::MassHistogram || d.stage == Stage::Gather);
}

uint32_t workgroups_per_row(const Plan& plan, const Dispatch& d) {
    if (d.stage == Stage::History && d.level == HISTORY_BUILD) return plan.history_groups;
    if (on_wide_chunks(plan, d)) return plan.wide_chunks;
    return d.per_chunk ? plan.n_chunks : 1u;
}

Plan make_plan(RecordingKind kind, bool greedy_chain, bool collect, bool wide, uint32_t history_groups, uint32_t vocab,
               const EffectiveLimits& limits, sieve_device_type type, bool logprobs, bool wide_direct,
               CollectVariants variants, KeyLevels levels, bool floor_levels) {
    const bool history = history_groups > 0;
    Plan p = make_row_plan(kind, greedy_chain, collect, wide, wide_direct && !history && !logprobs, vocab, limits, type,
                           variants, levels, floor_levels);
    p.history_groups = history_groups;
    if (history) {
        p.dispatches.insert(p.dispatches.begin(),
                            Dispatch{Stage::History, history_groups == 1 ? HISTORY_WHOLE : HISTORY_BUILD, false});
        p.min_dispatches += 1;
    }
    if (logprobs && kind == RecordingKind::Sample) {
        p.dispatches.insert(p.dispatches.begin(), Dispatch{Stage::RawStats, 0, true});
        p.min_dispatches += 1;
        p.min_row_passes += 1;
    }
    return p;
}

bool same_for_any_chunking(const Plan& p) {
    const auto& ds = p.dispatches;
    return !p.small &&
           std::any_of(ds.begin(), ds.end(), [](const Dispatch& d) { return d.stage == Stage::RowStats; }) &&
           std::all_of(ds.begin(), ds.end(), [](const Dispatch& d) {
               return d.stage == Stage::RowStats || d.stage == Stage::History || d.stage == Stage::MassHistogram ||
                      d.stage == Stage::Gather || d.stage == Stage::Probabilities;
           });
}

void split_for_batch(Plan* p, uint32_t rows, uint32_t vocab, const EffectiveLimits& limits) {
    if (limits.plan_type == SIEVE_DEVICE_CPU) return;
    const uint32_t target = kStreamingWorkgroupsPerUnit * std::max(limits.compute_units, 1u) / std::max(rows, 1u);
    // The wide passes' chunks start at multiples of 4 logits (they read
    // plain rows four at a time), as the collect pass's.
    if (!p->wide_direct) p->wide_chunks = collect_chunks_holding_logits(vocab, std::clamp(target, 1u, p->wide_chunks));
    if (!same_for_any_chunking(*p)) return;
    const uint32_t n = std::clamp(target, 1u, p->n_chunks);
    p->chunk_size = (vocab + n - 1) / n;
    p->n_chunks = (vocab + p->chunk_size - 1) / p->chunk_size;
}

void separate_tail(Plan* p) {
    if (!p->fused_tail) return;
    auto& ds = p->dispatches;
    auto last_collect = std::find_if(ds.rbegin(), ds.rend(), [](const Dispatch& d) {
        return d.stage == Stage::Collect || d.stage == Stage::CollectPlain;
    });
    ds.insert(last_collect.base(), Dispatch{Stage::CollectTail, 0, false});
    p->fused_tail = false;
    p->min_dispatches += 1;
}

void separate_history_clear(Plan* p) {
    auto& ds = p->dispatches;
    auto build = std::find_if(ds.begin(), ds.end(),
                              [](const Dispatch& d) { return d.stage == Stage::History && d.level == HISTORY_BUILD; });
    if (build == ds.end()) return;
    ds.insert(build, Dispatch{Stage::History, HISTORY_CLEAR, false});
    p->min_dispatches += 1;
}

Plan key_levels_plan(const Plan& first, uint32_t first_level, uint32_t last_level) {
    Plan p;
    p.n_chunks = first.n_chunks;
    p.chunk_size = first.chunk_size;
    p.collect_slots = first.collect_slots;
    p.wide_chunks = first.wide_chunks;
    p.flags = first.flags;
    append_key_levels_and_gather(&p, first_level, last_level);
    // Submitted only when a row needs its first level: that level and the gather.
    p.min_row_passes = 2;
    p.min_dispatches = 2;
    return p;
}

} // namespace sieve
