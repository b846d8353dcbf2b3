// The tail of a truncating chain, one workgroup per row: it merges the
// chunks' sorted lists (collect_chunk.glsl) into the row's top `need`, runs
// the chain on them (tail.glsl) and draws, or hands the row to the wide
// passes. On a GPU's plan the chunks' last workgroup to finish runs it
// (collect_fused.comp: no dispatch and barrier of its own); on a CPU
// device's plan it is a dispatch of its own (collect_tail.comp), because a
// CPU device runs every line of a shader under a lane mask in every
// workgroup, taken or not, so there the chunks' shader carries none of it.
#ifndef SIEVE_COLLECT_TAIL_GLSL
#define SIEVE_COLLECT_TAIL_GLSL
#include "common.glsl"
#include "row.glsl"
#include "result.glsl"
#include "agg.glsl"
#include "wide.glsl"
#include "tail.glsl"
#include "selectors.glsl"
#include "collect.glsl"
#include "wg_scan.glsl"

// sieve_chain_distribution: per row, at (2 * stride + 2) words: [count or
// STATUS_FALLBACK, step, count x (id, p bits)] in canonical order.
layout(std430, set = 0, binding = BINDING_OUTPUT) writeonly buffer DistOut { uint dist_out[]; };

shared uint s_at[MAX_ROW_CHUNKS], s_len[MAX_ROW_CHUNKS];  // the merge's lists
// sort_chunk_lists: where each list's entries start, counted in order; in
// merge_list_runs, where each run of the round starts.
shared uint s_from[MAX_ROW_CHUNKS + 1u];
// merge_list_runs' pairs of a round: where each pair's outputs start,
// packed one after another (s_pair_from[pairs]: their total).
shared uint s_pair_from[MAX_ROW_CHUNKS / 2u + 1u];

uint chunk_kept(uint row, uint c) { return chunk_stats[(row * pc.n_chunks + c) * CHUNK_STRIDE + C_KEPT]; }

// Keys a search round of entries_reaching loads at once: on a GPU each
// round waits for memory once (two rounds for a list of 64, where a binary
// search waited six times); a CPU device takes one, a binary search.
const uint REACH_PROBES = INDEXED_BINS != 0u ? 1u : GPU_REACH_PROBES;

// How many of the first `len` entries of the list at `at` have a key of at
// least k: a prefix. Each round probes REACH_PROBES places of the window
// [lo, hi) still unknown, spread evenly in it (all in it, some the same where
// it is small); the probes reaching k are a prefix of them, and the window
// becomes the gap after the last of those.
uint entries_reaching(uint at, uint len, uint k) {
    uint lo = 0u, hi = len;
    while (lo < hi) {
        uint w = hi - lo, base = lo, reach = 0u;  // probe j at base + (j + 1) w / (REACH_PROBES + 1)
        uint key[REACH_PROBES];
        [[unroll]] for (uint j = 0u; j < REACH_PROBES; ++j)
            key[j] = candidates[at + 2u * (base + (j + 1u) * w / (REACH_PROBES + 1u))];
        [[unroll]] for (uint j = 0u; j < REACH_PROBES; ++j) reach += key[j] >= k ? 1u : 0u;
        if (reach > 0u) lo = base + reach * w / (REACH_PROBES + 1u) + 1u;
        if (reach < REACH_PROBES) hi = base + (reach + 1u) * w / (REACH_PROBES + 1u);
    }
    return lo;
}

// Where the row's n_chunks lists are and their first `need` entries' count.
// min-p's floor (`floored`, ROW_FLOOR): a chunk dropped the logits below its
// running maximum + the floor and, where it kept `need`, those after its
// last (canonical order); each list is cut to its entries at or above the
// row's floor (from the row's maximum, the lists' first entries, which
// every invocation reads), a superset of what min-p keeps (floor_lists_whole).
void locate_chunk_lists(uint row, uint need, uint n_chunks, bool floored, float floor_offset) {
    uint kf = 0u;
    if (floored) {  // uniform
        uint kmax = 0u;
        for (uint c = 0u; c < n_chunks; ++c) {
            uint k0 = candidates[chunk_list_at(row, c, n_chunks)];  // loaded whatever the count: one wait
            kmax = chunk_kept(row, c) != 0u ? max(kmax, k0) : kmax;
        }
        kf = min_p_floor_key(kmax, floor_offset);
    }
    for (uint c = gl_LocalInvocationID.x; c < n_chunks; c += WG) {
        uint at = chunk_list_at(row, c, n_chunks), len = min(chunk_kept(row, c), need);
        s_at[c] = at;
        s_len[c] = floored ? entries_reaching(at, len, kf) : len;
    }
    barrier();
}

// After locate_chunk_lists of a floored row: whether its lists hold every
// logit at or above the row's floor (the rest fails min-p: min_p_cut), and
// at most HALF in all (*total), so the merge keeps them all, not the first
// `need`. Not where a list's `need` entries all reach the floor (its chunk
// may have dropped passing logits): the row goes to the CPU twin.
bool floor_lists_whole(uint need, uint n_chunks, out uint total) {
    total = 0u;
    bool open = false;
    for (uint c = 0u; c < n_chunks; ++c) {
        total += s_len[c];
        open = open || s_len[c] == need;
    }
    return !open && total <= HALF;
}

// The row's top `need` (canonical order) from the chunks' sorted lists, into
// c_key/c_id; returns how many. The lists are folded in one at a time, each
// fold a merge path (Odeh, Green, Mwassi, Shmueli and Birk, "Merge Path:
// parallel merging made simple", 2012): invocation t writes outputs [t s,
// t s + s) of the merge, s = ceil(n / WG); a binary search over the two runs
// (the co-rank) finds how many of its first t s outputs come from each, and
// it merges its s outputs from there on its own. Each invocation makes about
// log2(need) + s reads a fold, where ranking every entry by a binary search in
// every other list made (lists - 1) log2(need) reads an entry: a CPU device
// runs each access as a loop over its SIMD lanes, and the ranks were 87% of
// the tail of top-k 1000 on lavapipe. (Sorting the lists together instead
// costs a barrier per stage: about 2 ms for top-k 1000 there.) The fold's
// result stays in c_key/c_id: every invocation holds its outputs until all
// have read the runs, so each fold writes over the last one's.

// Outputs an invocation holds in a fold: need <= HALF.
const uint MERGE_SEG = (HALF + WG - 1u) / WG;
const uint RUN_MERGED = 0xFFFFFFFFu;  // run_entry: the fold so far, in c_key/c_id

// Entry i of chunk list c, or of the fold so far (c = RUN_MERGED).
uvec2 run_entry(uint c, uint i) {
    if (c == RUN_MERGED) return c_entry(i);
    uint at = s_at[c] + 2u * i;
    return uvec2(candidates[at], candidates[at + 1u]);
}

// The first min(need, a + b) entries of runs ra (a entries) and rb (b) merged
// into c_key/c_id; returns how many.
uint merge_runs(uint ra, uint a, uint rb, uint b, uint need) {
    uint n = min(need, a + b);
    uint seg = (n + WG - 1u) / WG;  // <= MERGE_SEG
    uint p = min(gl_LocalInvocationID.x * seg, n);
    uint stop = min(p + seg, n);
    // The co-rank: i of the first p outputs come from ra, the smallest i whose
    // entry comes after rb's entry p - i - 1 (the predicate holds below it).
    uint lo = p > b ? p - b : 0u, hi = min(p, a);
    while (lo < hi) {
        uint mid = (lo + hi) >> 1u;
        if (entry_before(run_entry(ra, mid), run_entry(rb, p - mid - 1u))) lo = mid + 1u;
        else hi = mid;
    }
    uint i = lo, j = p - lo;
    uvec2 x = i < a ? run_entry(ra, i) : uvec2(0u), y = j < b ? run_entry(rb, j) : uvec2(0u);
    uvec2 held[MERGE_SEG];
    for (uint q = 0u; q < stop - p; ++q) {
        bool from_a = j >= b || (i < a && entry_before(x, y));
        held[q] = from_a ? x : y;
        if (from_a) {
            ++i;
            if (i < a) x = run_entry(ra, i);
        } else {
            ++j;
            if (j < b) y = run_entry(rb, j);
        }
    }
    barrier();  // every invocation has read the runs: the fold so far is overwritten next
    for (uint q = 0u; q < stop - p; ++q) {
        c_key[p + q] = held[q].x;
        c_id[p + q] = held[q].y;
    }
    barrier();
    return n;
}

// (After locate_chunk_lists.)
uint merge_chunk_lists(uint need, uint n_chunks) {
    // List 0 with list 1 (or with nothing), then the fold with each next list.
    uint n = merge_runs(0u, s_len[0], 1u, n_chunks > 1u ? s_len[1] : 0u, need);
    for (uint c = 2u; c < n_chunks; ++c) n = merge_runs(RUN_MERGED, n, c, s_len[c], need);
    return n;
}

// The same on a GPU (FLAG_SORT_MERGE): merge paths in device memory cost
// each invocation a chain of dependent global loads a fold (a binary search,
// then its outputs one by one), a fold a list (7 at 8 chunks, 63 at 64).
// Instead the lists' entries go to c_key/c_id, each invocation copying
// entries of any list (independent loads: one memory latency, not one a
// list), and merge there in pairs, log2(lists) rounds of merge paths (two
// barriers a round, ceil(n / WG) outputs an invocation). Lists that
// could outgrow c_key/c_id together (lists x need > CAP: top-k 1000 at 8
// chunks, 8000 entries) are first cut by splitters (narrow_chunk_lists) to
// their entries down to a key the row's first `need` all reach, and a few
// past it (for top-k 1000 at 8 chunks and 256 invocations, at most 1288):
// what the workgroup copies and merges then grows with the need and the
// lists, not with their product. Should the cut lists still outgrow c_key
// (a tie group), merge paths in device memory fold them.
shared uint s_tau;

// s_from[c]: where list c's entries start, its first s_len[c] counted in
// list order; returns their total. The whole workgroup; ends with a barrier.
uint list_offsets(uint n_chunks) {
    uint first, end;
    wg_block(n_chunks, first, end);  // this invocation's lists
    uint part = 0u;
    for (uint c = first; c < end; ++c) part += s_len[c];
    uvec2 total;
    uint from = wg_exclusive_u64(uvec2(part, 0u), total).x;
    for (uint c = first; c < end; ++c) {
        s_from[c] = from;
        from += s_len[c];
    }
    if (gl_LocalInvocationID.x == 0u) s_from[n_chunks] = total.x;
    barrier();
    return total.x;
}

// Of the first `count` lists (s_from), or of a merge round's pairs
// (s_pair_from: `pairs`), the one holding entry j: the last that starts at
// or before it (one with no entries starts where the next one does).
uint holding(uint j, uint count, bool pairs) {
    uint lo = 0u, hi = count - 1u;
    while (lo < hi) {
        uint mid = (lo + hi + 1u) >> 1u;
        if ((pairs ? s_pair_from[mid] : s_from[mid]) <= j) lo = mid;
        else hi = mid - 1u;
    }
    return lo;
}

// The word offset of the row's j-th list entry, counting list by list (after
// list_offsets).
uint list_entry_at(uint j, uint n_chunks) {
    uint c = holding(j, n_chunks, false);
    return s_at[c] + 2u * (j - s_from[c]);
}

// How many of list c's splitters (c_key[c per, c per + per), keys not
// rising) reach key k: a prefix of them.
uint splitters_reaching(uint c, uint per, uint k) {
    uint lo = 0u, hi = per;
    while (lo < hi) {
        uint mid = (lo + hi) >> 1u;
        if (c_key[c * per + mid] >= k) lo = mid + 1u;
        else hi = mid;
    }
    return lo;
}

// Cuts each list (s_len) to its entries from the key tau on, up to one
// splitter past them, where tau is a key that at least `need` entries reach:
// the row's first `need` entries all reach it (canonical order puts higher
// keys first). Splitters: in each list of length len, S keys, the one at
// position min((i + 1) s, len) - 1 for i < S (s = ceil(need / S)); since a
// list is sorted, at least min((i + 1) s, len) of its entries reach the i-th
// one's key. For a key k, summing that over each list's last splitter
// reaching k gives a count of entries that surely reach k (each splitter's
// invocation counts its own key, a binary search a list); tau is the
// highest splitter key whose count reaches `need`, or 0 (every key) where
// none does (fewer entries than `need`). List c keeps up to its first
// splitter below tau. Without ties at tau the lists keep fewer than need +
// (lists + 1) s entries: the splitter reaching need adds at most s past it,
// and each list at most s - 1 past its last splitter reaching tau. S =
// max(min(WG, CAP) / lists, 1): a splitter an invocation, all in c_key
// (lists <= MAX_ROW_CHUNKS <= CAP). The whole workgroup; ends with a barrier.
void narrow_chunk_lists(uint need, uint n_chunks) {
    uint t = gl_LocalInvocationID.x;
    uint per = max(min(WG, CAP) / n_chunks, 1u), s = (need + per - 1u) / per;
    uint splitters = per * n_chunks;  // c_key[c per, c per + per): list c's keys (0 for an empty list)
    if (t == 0u) s_tau = 0u;
    for (uint j = t; j < splitters; j += WG) {
        uint c = j / per, len = s_len[c];
        c_key[j] = len == 0u ? 0u : candidates[s_at[c] + 2u * (min((j - c * per + 1u) * s, len) - 1u)];
    }
    barrier();
    for (uint j = t; j < splitters; j += WG) {
        uint k = c_key[j], reach = 0u;
        for (uint c = 0u; c < n_chunks; ++c) reach += min(splitters_reaching(c, per, k) * s, s_len[c]);
        if (reach >= need) atomicMax(s_tau, k);
    }
    barrier();
    uint tau = s_tau;
    for (uint c = t; c < n_chunks; c += WG) {
        uint lo = splitters_reaching(c, per, tau);
        uint len = s_len[c];  // entries from splitter lo's position on are below tau
        if (lo < per && len != 0u) s_len[c] = min((lo + 1u) * s, len) - 1u;
    }
    barrier();
}

// The round's pairs of `runs` runs (run r's entries start at s_from[r],
// s_from[runs] is their end): pair g merges runs 2g and 2g + 1 (or 2g
// alone) into its first `need` entries, at s_pair_from[g]. Invocation 0.
void pair_outputs(uint runs, uint need) {
    uint pairs = (runs + 1u) >> 1u, at = 0u;
    for (uint g = 0u; g < pairs; ++g) {
        s_pair_from[g] = at;
        at += min(need, s_from[min(2u * g + 2u, runs)] - s_from[2u * g]);
    }
    s_pair_from[pairs] = at;
}

// Merges the lists, copied one after another into c[0, n) (s_from, and
// pair_outputs(n_chunks, need) done), in pairs of runs, log2(lists) rounds.
// A pair keeps only its first `need` entries (no entry past a run's
// need-th is among the row's first `need`), and the pairs' outputs are
// packed: each round then merges at most (runs / 2) need entries, where
// merging whole runs merged all the lists' entries every round (the default
// chain's 32 lists of 40: 1280 a round, 6400 in five rounds, against 1240
// in all). Invocation t writes packed outputs [t seg, t seg + seg) of a
// round, which may span pairs: it finds the pair holding its next output
// and merges from there to the pair's end or its own (merge_segment). The
// row's first min(n, need) end at c[0, ..). Ends with a barrier.
void merge_list_runs(uint n_chunks, uint need) {
    uint t = gl_LocalInvocationID.x;
    for (uint runs = n_chunks; runs > 1u; runs = (runs + 1u) >> 1u) {  // uniform
        uint pairs = (runs + 1u) >> 1u, total = s_pair_from[pairs];
        uint seg = (total + WG - 1u) / WG;  // <= SORT_SEG: total <= n <= CAP
        uint first = min(t * seg, total), stop = min(first + seg, total);
        for (uint p = first; p < stop;) {
            uint g = holding(p, pairs, true);
            uint a0 = s_from[2u * g], b0 = s_from[min(2u * g + 1u, runs)], end = s_from[min(2u * g + 2u, runs)];
            uint count = min(stop, s_pair_from[g + 1u]) - p;
            merge_segment(a0, b0 - a0, b0, end - b0, p - s_pair_from[g], count, p - first);
            p += count;
        }
        barrier();  // every invocation has read the runs and the pairs: both are overwritten next
        store_merge_held(first, stop - first);
        if (t == 0u && pairs > 1u) {  // the next round's runs are this one's pairs
            for (uint g = 0u; g <= pairs; ++g) s_from[g] = s_pair_from[g];
            pair_outputs(pairs, need);
        }
        barrier();
    }
}

// Entries an invocation loads before it stores any when it copies the lists
// into shared memory (sort_chunk_lists): on a GPU the copy then waits for
// memory once per COPY_LOADS entries an invocation (up to CAP / WG, 16 at
// 4096 and 256), not once an entry (the candidates buffer is coherent: a
// compiler need not move a later entry's load above this one's store). A
// CPU device takes one at a time, as wide_gather's list (LIST_LOADS).
const uint COPY_LOADS = INDEXED_BINS != 0u ? 1u : 8u;

// (After locate_chunk_lists.)
// `fits`: the lists hold at most HALF entries in all (floor_lists_whole).
uint sort_chunk_lists(uint need, uint n_chunks, bool fits) {
    if (!fits && n_chunks * need > CAP) narrow_chunk_lists(need, n_chunks);  // uniform; lists of at most need
    uint n = list_offsets(n_chunks);
    if (n > CAP) return merge_chunk_lists(need, n_chunks);
    for (uint j0 = gl_LocalInvocationID.x; j0 < n; j0 += COPY_LOADS * WG) {
        uvec2 e[COPY_LOADS];
        [[unroll]] for (uint u = 0u; u < COPY_LOADS; ++u) {
            uint j = j0 + u * WG;
            uint at = j < n ? list_entry_at(j, n_chunks) : 0u;
            e[u] = j < n ? uvec2(candidates[at], candidates[at + 1u]) : uvec2(0u);
        }
        [[unroll]] for (uint u = 0u; u < COPY_LOADS; ++u) {
            uint j = j0 + u * WG;
            if (j < n) {
                c_key[j] = e[u].x;
                c_id[j] = e[u].y;
            }
        }
    }
    // The first round's pairs while the copy's loads are under way.
    if (gl_LocalInvocationID.x == 0u) pair_outputs(n_chunks, need);
    barrier();
    merge_list_runs(n_chunks, need);
    return min(n, need);
}

// The row's aggregates, its chunks' combined in chunk order (agg_combine),
// in invocation 0. The whole workgroup reads the chunks' aggregates at once
// into red_agg: one memory latency, where invocation 0 alone waited one a
// chunk. Rows with aggregates take collect_chunk.glsl's general variant, at most
// MAX_COLLECT_CHUNKS chunks (gpu_plan.cpp), which red_agg holds at any
// workgroup size (WG / 2 >= 16: device_profile.cpp).
Agg merge_chunk_aggs(uint row, uint n_chunks) {
    uint t = gl_LocalInvocationID.x;
    if (t < n_chunks) {
        Agg a = read_agg((row * pc.n_chunks + t) * CHUNK_STRIDE);
        red_agg[0][t] = a.count;
        red_agg[1][t] = a.mean;
        red_agg[2][t] = a.m2;
        red_agg[3][t] = a.mmax;
        red_agg[4][t] = a.msum;
    }
    barrier();
    Agg m = agg_empty();
    if (t == 0u)
        for (uint c = 0u; c < n_chunks; ++c)
            m = agg_combine(m, Agg(red_agg[0][c], red_agg[1][c], red_agg[2][c], red_agg[3][c], red_agg[4][c]));
    barrier();  // the caller's result overwrites them
    return m;
}

void write_distribution(uint row, uint n, float total, uint step) {
    // Rows of 2 x vocabulary + 2 words, whatever the logits' stride (the
    // app's rows may be spaced wider: SetKind::AppRowsDistribution).
    uint base = row * (2u * pc.vocab + 2u);
    uint t = gl_LocalInvocationID.x;
    if (t == 0u) {  // the row's status, as sampling would report it
        results[row * RESULT_STRIDE + 3u] = s_status;
        results[row * RESULT_STRIDE + 7u] = row_state[row * ROW_STRIDE + R_FIRST_BAD];
    }
    if (s_fallback != 0u || s_status != STATUS_OK) {
        if (t == 0u) {
            dist_out[base] = s_fallback != 0u ? STATUS_FALLBACK : 0u;
            dist_out[base + 1u] = step;
        }
        return;
    }
    bool greedy = (pc.flags & FLAG_GREEDY) != 0u;
    float v0 = cand_value(0u);
    uint finite = 0u;
    for (uint i = t; i < n; i += WG) finite += c_key[i] != KEY_NEG_INF ? 1u : 0u;
    uint count = greedy ? min(n, 1u) : wg_sum_u64(uvec2(finite, 0u)).x;  // uniform: the flags
    if (t == 0u) {
        dist_out[base] = count;
        dist_out[base + 1u] = step;
    }
    // Finite entries form a prefix of the canonical order.
    for (uint i = t; i < count; i += WG) {
        dist_out[base + 2u + 2u * i] = c_id[i];
        dist_out[base + 3u + 2u * i] = floatBitsToUint(greedy ? 1.0 : cand_mass(i, v0) / total);
    }
}

// Leaves the row to wide_histogram and wide_gather: what the cut knows, the
// buffer's entries at the draw's temperatures, and their mass.
void hand_to_wide(uint row, uint n) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint buf = wide_buffer_at(row);
    for (uint i = t; i < n; i += WG) {
        wide[buf + 2u * i] = c_key[i];
        wide[buf + 2u * i + 1u] = c_id[i];
    }
    uvec2 bd = wg_sum_u64(strided_mass(n));
    if (t != 0u) return;
    float v0 = cand_value(0u);
    float vn = sieve_key_value(s_wide_kn);
    float lowest = min(s_wide_lowest, vn);
    float scale = wide_scale(vn - lowest, max(abs(vn), abs(lowest)), false);  // the bins' grid (wide.glsl: wide_bin)
    row_state[o + R_WIDE_KN] = s_wide_kn;
    row_state[o + R_WIDE_IDN] = s_wide_idn;
    row_state[o + R_WIDE_MC] = floatBitsToUint(s_wide_mc);
    row_state[o + R_WIDE_MD] = floatBitsToUint(v0);
    row_state[o + R_WIDE_L] = floatBitsToUint(lowest);
    row_state[o + R_WIDE_INVW] = floatBitsToUint(scale);
    row_state[o + R_WIDE_TOP] = floatBitsToUint(wide_grid(vn, scale));
    row_state[o + R_WIDE_NT] = s_wide_divisions | (s_divisions << 16u);  // (WIDE_DEFERRED in s_wide_divisions)
    row_state[o + R_WIDE_RC] = floatBitsToUint(s_wide_rc);
    row_state[o + R_WIDE_BD] = floatBitsToUint(fixed40_value(bd));
    row_state[o + R_WIDE_N] = n;
    row_state[o + R_WIDE_KEEP] = param_u(row, P_MIN_KEEP);
    row_state[o + R_WIDE_PHASE] = WIDE_HIST;
    // The wide passes split a row into their own chunks (gpu_plan.hpp:
    // Plan::wide_chunks), whatever the collect pass did.
    atomicMax(dispatch_args[pc.args_base + WIDE_HIST_ARGS], pc.wide_chunks);
}

// min-p's survivors past the buffer (s_floor_levels; nothing after min-p but
// a temperature and dist: ROW_FLOOR_LEVELS): every logit at or above the
// threshold, a canonical prefix of the row, drawn by the recording's key
// levels (FLAG_FLOOR_LEVELS) as temperature;dist's levels draw a whole row:
// level 1 over the key range [the threshold's quotient, the maximum's] at
// the row's temperature (P_SCALE, the chain's one temperature), its members
// also at or above the raw threshold (row.glsl: level_floor), forms the
// target from its own exact total (scan.glsl); the gather draws. The step
// is left for that draw; the result until then reads as a twin's row's
// (token -1, STATUS_FALLBACK: what a call the app submits copies into its
// token buffer, and what the host would hand the twin were the levels' part
// never run). Invocation 0; false where a value the levels would take
// overflows at the temperature (the twin then draws, as before).
bool hand_to_levels(uint row, uint step) {
    uint o = row * ROW_STRIDE;
    float scale = row_scale(row);
    float top = scaled_logit(cand_value(0u), scale);  // the row's maximum (min-p ran on raw logits)
    float bottom = scaled_logit(s_level_floor, scale);
    if (isinf(top) || isinf(bottom)) return false;
    row_state[o + R_MAX_KEY] = sieve_key(top);
    row_state[o + R_KEY_LO] = sieve_key(bottom);
    row_state[o + R_KEY_HI] = sieve_key(top);
    row_state[o + R_LEVEL_FLOOR] = floatBitsToUint(s_level_floor);
    uint mode = LEVEL_FLOOR | LEVEL_TARGET_PENDING;
    if (s_floor_levels == 2u) {
        // After a top-p cut past the buffer: its target against the raw
        // maximum (nothing divided before either cut), for level 1's check.
        row_state[o + R_LEVEL_CUT_MAX] = floatBitsToUint(cand_value(0u));
        row_state[o + R_LEVEL_CUT_NEED] = floatBitsToUint(s_wide_need);
        mode |= LEVEL_CUT_CHECK;
    }
    row_state[o + R_LEVEL_MODE] = mode;
    row_state[o + R_CAND_COUNT] = 0u;
    row_state[o + R_PASSES] = 1u;
    row_state[o + R_PHASE] = PHASE_ACTIVE;
    write_result(row, 0xFFFFFFFFu, 0.0, 0.0, STATUS_FALLBACK, step, 1u);
    // The levels split a row into the wide passes' chunks (gpu_plan.hpp:
    // on_wide_chunks).
    atomicMax(dispatch_args[pc.args_base + LEVEL_ARGS_STRIDE], pc.wide_chunks);
    return true;
}

// The draw's last step, in the invocation whose block [first, end) of the
// array holds the target (less the blocks before it): the entry where the
// target falls, its result and the row's step. Both draws below end here.
void draw_in_block(uint row, uint first, uint end, uvec2 target, float v0, float total, uint step, uint region) {
    uint token = 0xFFFFFFFFu;
    uvec2 q = uvec2(0u);
    for (uint i = first; i < end; ++i) {
        q = sieve_mass(cand_value(i), v0);
        token = c_id[i];
        if (u64_less(target, q)) break;  // reached: the block's sum exceeds the target
        target = u64_sub(target, q);
    }
    float p = fixed40_value(q) / total;
    selector_learn(row, token, p, region);
    write_result(row, token, p, log(p), STATUS_OK, step, 1u);
    advance_step(row, step);
}

// The draw on a CPU device (TAIL_SERIAL): the array's exact masses in blocks
// of `per` entries, one block an invocation; then invocation 0 finds the
// block and the entry within it where the target falls: the serial walk's
// entry, with the sums of whole blocks taken at once (exact integers: any
// order gives the same). One barrier, where the workgroup-wide search takes
// three.
void draw_serial(uint row, uint n, bool whole, uint step, uint region) {
    uint t = gl_LocalInvocationID.x;
    float v0 = cand_value(0u);
    uint per = (n + WG - 1u) / WG;
    uint first = min(t * per, n), end = min(first + per, n);
    uvec2 part = uvec2(0u);
    for (uint i = first; i < end; ++i) part = u64_add(part, sieve_mass(cand_value(i), v0));
    s_scan[t] = part;
    barrier();
    if (t != 0u) return;
    float total = s_total;
    uvec2 exact = uvec2(0u);
    if (whole)
        for (uint b = 0u; b < WG; ++b) exact = u64_add(exact, s_scan[b]);
    else
        exact = fixed40(total);
    if (whole) total = fixed40_value(exact);
    uvec2 target = u64_mul_u32_shr32(exact, row_uniform(row));
    uint block = 0u;
    for (; block < WG; ++block) {
        if (u64_less(target, s_scan[block])) break;
        target = u64_sub(target, s_scan[block]);
    }
    if (block == WG) {  // past every entry: the draw falls past the buffer (never for a whole array)
        write_fallback(row, step, 1u);
        return;
    }
    draw_in_block(row, block * per, min(block * per + per, n), target, v0, total, step, region);
}

void collect_tail(uint row, uint n_chunks) {
    phase_arrived(row);
    bind_row(row);
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    bool small = (pc.flags & FLAG_SMALL) != 0u;
    uint need = chunk_need(row, n_chunks);  // what each chunk kept at most
    uint row_flags = param_u(row, P_ROW_FLAGS);
    uint region = row * ROW_WORDS;

    RowStats s = merge_chunk_stats(row, n_chunks);
    Agg a;
    uint n;
    bool floor_whole = false;  // min-p's floor left every survivor in the lists (floor_lists_whole)
    if (small) {
        // The whole row, sorted, is chunk 0's list (its aggregates are empty:
        // the tail computes what it needs from the array).
        n = pc.vocab;
        for (uint i = t; i < n; i += WG) {
            c_key[i] = candidates[region + 2u * i];
            c_id[i] = candidates[region + 2u * i + 1u];
        }
        a = agg_empty();
        barrier();
    } else {
        // A chain that reads no aggregates left every chunk's empty (collect_chunk.glsl).
        Agg m = (row_flags & (ROW_NEED_SIGMA | ROW_NEED_MASS)) != 0u ? merge_chunk_aggs(row, min(n_chunks, MAX_COLLECT_CHUNKS))
                                                                    : agg_empty();
        if (t == 0u) {
            red_agg[0][0] = m.count;
            red_agg[1][0] = m.mean;
            red_agg[2][0] = m.m2;
            red_agg[3][0] = m.mmax;
            red_agg[4][0] = m.msum;
        }
        bool floored = (row_flags & ROW_FLOOR) != 0u;
        phase_mark(row, PH_STATS);
        locate_chunk_lists(row, need, n_chunks, floored, row_floor_offset(row, row_flags));
        uint merge_need = need, total;
        floor_whole = floored && floor_lists_whole(need, n_chunks, total);
        phase_mark(row, PH_LOCATED);
        if (floor_whole) merge_need = max(total, 1u);
        // FLAG_SORT_MERGE is a GPU plan's (gpu_plan.cpp), never a CPU device's
        // paths: TAIL_SERIAL compiles the sort out of lavapipe's code, which
        // would run it under a lane mask in every call (tail.glsl: TAIL_SERIAL).
        bool sorting = TAIL_SERIAL == 0u && (pc.flags & FLAG_SORT_MERGE) != 0u;
        n = sorting ? sort_chunk_lists(merge_need, n_chunks, floor_whole) : merge_chunk_lists(merge_need, n_chunks);
        a = Agg(red_agg[0][0], red_agg[1][0], red_agg[2][0], red_agg[3][0], red_agg[4][0]);
        // The row's maximum is its first candidate (canonical: the first maximal id).
        s.max_key = c_key[0];
        s.argmax = c_id[0];
        s.finite = n > 0u && c_key[0] > KEY_NEG_INF ? 1u : 0u;
    }

    uint status = row_status(s);
    uint step = row_step(row);
    if (t == 0u) {
        row_state[o + R_STATUS] = status;
        row_state[o + R_FIRST_BAD] = s.first_bad;
        s_n = n;
        s_rest = pc.vocab - n;
        s_rest_kind = n == pc.vocab ? REST_NONE : (c_key[n - 1u] == KEY_NEG_INF ? REST_MASKED : REST_UNKNOWN);
        s_fallback = 0u;
        s_status = status;
        s_agg_ok = 1u;
        s_tprod = 1.0;
        s_rest_min = sieve_key_value(s.min_finite_key);
        // min-p's floor: is the rest exactly what it dropped (min_p_cut)?
        s_floor_ok = (row_flags & ROW_FLOOR) == 0u ? FLOOR_NONE : (floor_whole ? FLOOR_WHOLE : FLOOR_OPEN);
        s_floor_levels = 0u;
        s_wide = 0u;
        s_divisions = 0u;
        row_state[o + R_WIDE_PHASE] = WIDE_NONE;
    }
    // The buffer reads below follow this workgroup's own writes (scratch).
    memoryBarrierBuffer();
    barrier();
    phase_mark(row, PH_LISTS);
    if (status == STATUS_OK) run_chain(row, a, region);
    barrier();
    selector_before_draw(row, a.msum, region);
    phase_mark(row, PH_SELECTOR);

    // The draw: greedy takes entry 0 (the first maximal logit); dist walks the
    // canonical order by exact 40-bit masses (finalize.glsl's rule).
    n = s_n;
    bool greedy = (pc.flags & FLAG_GREEDY) != 0u;
    // A top-p cut past the buffer, then only temperatures: the wide passes
    // finish the row (wide.glsl). (--dump-dist of such a row, which lists
    // thousands of survivors, stays with the CPU twin.)
    bool wide_row = s_rest_kind == REST_CUT && s_wide != 0u && tail_live() && !greedy && pc.wide_cap > 0u &&
                    (pc.flags & FLAG_DISTRIBUTION) == 0u &&  // uniform: shared, after run_chain's barrier
                    (CHAIN_SELECTOR == SELECT_DIST || CHAIN_SELECTOR == SELECT_ADAPTIVE) &&  // mirostat's draw learns
                    s_divisions <= WIDE_MAX_DIVISIONS;
    if (wide_row) {
        hand_to_wide(row, n);
        return;
    }
    bool whole = s_rest_kind == REST_NONE || s_rest_kind == REST_MASKED;  // shared, after run_chain's barrier
    bool listing = (pc.flags & FLAG_DISTRIBUTION) != 0u;
    // The float total: the distribution's, or the draw's past the buffer (a
    // whole array's draw sums exact masses below instead).
    if (tail_live() && !greedy && (listing || !whole)) {  // uniform: shared, after a barrier
        float total = array_total(row, n, a.msum);
        if (t == 0u) {
            if (total < 0.0) s_fallback = 1u;
            // A listing names every survivor: with survivors past the buffer
            // (no cut bounds the array) the twin lists them.
            if (listing && !whole) s_fallback = 1u;
            s_total = total;
        }
    }
    barrier();
    phase_mark(row, PH_TOTAL);
    if (listing) {
        write_distribution(row, n, s_total, step);
        return;
    }
    if (s_status != STATUS_OK || s_fallback != 0u || greedy) {  // uniform: shared, after a barrier
        if (t != 0u) return;
        // A failed row fails whatever else is unsure (its step stays; a row
        // handed to the twin advances it, the twin drawing its token).
        if (s_status != STATUS_OK) {
            write_result(row, 0xFFFFFFFFu, 0.0, 0.0, s_status, step, 1u);
            return;
        }
        if (s_fallback != 0u) {
            if (s_floor_levels != 0u && hand_to_levels(row, step)) return;
            write_result(row, 0xFFFFFFFFu, 0.0, 0.0, STATUS_FALLBACK, step, 1u);
        } else {
            write_result(row, c_id[0], 1.0, 0.0, STATUS_OK, step, 1u);
        }
        advance_step(row, step);
        return;
    }
    if (TAIL_SERIAL != 0u) {  // a CPU device: invocation 0 walks the block sums (tail.glsl: TAIL_SERIAL)
        draw_serial(row, n, whole, step, region);
        return;
    }
    // The draw: the array's exact masses in blocks of contiguous entries, one
    // block an invocation, and their prefix sums over the workgroup
    // (wg_scan.glsl); the invocation whose block holds the target walks it:
    // the serial walk's entry, with the sums of whole blocks taken at once
    // (exact integers: any order gives the same).
    float v0 = cand_value(0u);
    uint first, end;
    wg_block(n, first, end);
    uvec2 part = uvec2(0u);
    for (uint i = first; i < end; ++i) part = u64_add(part, sieve_mass(cand_value(i), v0));
    uvec2 sum;
    uvec2 before = wg_exclusive_u64(part, sum);
    float total = s_total;
    uvec2 exact = whole ? sum : fixed40(total);
    if (whole) total = fixed40_value(sum);
    // The uniform of `step`, read before any invocation advanced it (not
    // row_uniform: the invocation that draws writes the slot's step).
    uvec2 target = u64_mul_u32_shr32(exact, sieve_uniform_u32(param_u(row, P_SEED), step, param_u(row, P_DRAW)));
    if (!u64_less(target, sum)) {  // past every entry: the draw falls past the buffer (never for a whole array)
        if (t != 0u) return;
        write_fallback(row, step, 1u);
        return;
    }
    if (u64_less(target, before) || !u64_less(target, u64_add(before, part))) return;  // another block holds it
    target = u64_sub(target, before);
    draw_in_block(row, first, end, target, v0, total, step, region);
}

#endif
