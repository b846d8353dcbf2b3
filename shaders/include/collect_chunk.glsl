// The chunks of a truncating chain, in one read of the row (collect.comp, or
// collect_fused.comp with the row's tail in the last chunk to finish). Each
// chunk workgroup keeps the top `need` entries of its slice in canonical
// order (key descending, ties by lower id: a total order, so the result is
// exact) while it reads it once: entries above the running threshold (the
// need-th best so far) are appended to shared memory, which is compacted by a
// bitonic sort when it fills. The chunk also sums the full-row aggregates its
// row needs (agg.glsl), and leaves its sorted list and statistics for the
// tail (collect_tail.glsl). A row that fits the candidate buffer (FLAG_SMALL)
// is read and sorted whole by one workgroup.
#ifndef SIEVE_COLLECT_CHUNK_GLSL
#define SIEVE_COLLECT_CHUNK_GLSL
#include "common.glsl"
#include "row.glsl"
#include "agg.glsl"
#include "bitonic.glsl"
#include "collect.glsl"
#include "radix.glsl"
#include "stretch.glsl"
#include "phase_clock.glsl"

// Which rows this pipeline serves (pipelines.cpp). A CPU device runs every
// line of a shader in every workgroup under a lane mask, taken or not, so the
// rows the host can tell apart get a variant with only their own path.
layout(constant_id = SPEC_COLLECT_VARIANT) const uint COLLECT_VARIANT = 0u;
const uint VARIANT_GENERAL = 0u;  // chunks of any row
// Chunks of plain rows only (no aggregates, need <= PROBE x WG, vec4 map):
// the host arms it for a row group whose rows all are (gpu_chain.cpp).
const uint VARIANT_PLAIN = 1u;
const uint VARIANT_SMALL = 2u;  // whole rows that fit the buffer (FLAG_SMALL)
// The plain and general variants with radix_chunk, for a call where some
// row they serve keeps a need past RADIX_FROM (row_analysis.cpp:
// radix_chunk). The others leave it out: a CPU device runs its lines for
// every chunk, radix or not (lavapipe, the default chain at 151936: 12% of
// the call's instructions).
const uint VARIANT_PLAIN_RADIX = 3u;
const uint VARIANT_GENERAL_RADIX = 4u;
const bool PLAIN = COLLECT_VARIANT == VARIANT_PLAIN || COLLECT_VARIANT == VARIANT_PLAIN_RADIX;
const bool RADIX_CHUNKS = COLLECT_VARIANT == VARIANT_PLAIN_RADIX || COLLECT_VARIANT == VARIANT_GENERAL_RADIX;

// The logits again, four at a time (logits4.glsl): one load and one loop
// iteration per 4 logits in the hot loops (on a CPU device through the texel
// binding: row_vec4).
#include "logits4.glsl"

// The logits an invocation owns in a round, in the order it reads them: every
// WG-th (scalar map) or every WG-th group of 4 (vec4 map).
uint next_logit(uint i, bool vmap) { return vmap ? ((i & 3u) != 3u ? i + 1u : i + 4u * WG - 3u) : i + WG; }


shared uint s_fill, s_has_tau, s_tau_key, s_tau_id, s_wmax_key, s_count;

// Logits per invocation in a round once a threshold exists.
const uint LONG_ROUND = 64u;
const uint NO_RETRY = 0xFFFFFFFFu;

// Appends candidate (k, i); returns i when the buffer is full (retry it after
// the compaction), else NO_RETRY.
uint append(uint k, uint i) {
    uint slot = atomicAdd(s_fill, 1u);
    if (slot >= CAP) return i;
    c_key[slot] = k;
    c_id[slot] = i;
    return NO_RETRY;
}

// The key below which min-p's floor drops logits (0: none yet), from the
// chunk's running maximum.
uint floor_key(bool use_floor, float floor_offset) {
    if (!use_floor || s_wmax_key == 0u) return 0u;
    return min_p_floor_key(s_wmax_key, floor_offset);
}

// The probes' end: their picks at c[0, n) (n a power of two) sorted
// canonically (a key-0 pick sorts last), the need-th best is the first
// threshold. (Parallel: on a CPU device one invocation's loop costs far more
// than a few dozen barriers.)
void threshold_from_picks(uint n, uint need) {
    barrier();
    bitonic_sort_canonical(n);
    if (gl_LocalInvocationID.x == 0u && c_key[need - 1u] != 0u) {
        s_has_tau = 1u;
        s_tau_key = c_key[need - 1u];
        s_tau_id = c_id[need - 1u];
    }
    barrier();
}

// A first threshold without appending anything: each invocation keeps its
// PROBE best logits of the first round, and the need-th best of those is the
// threshold (each is a logit of the chunk, so it is at most the chunk's need-th
// best: nothing the chunk's top `need` holds is ever dropped).
// The invocations' picks are written at the end of c_key/c_id, then sorted at
// the front (PROBE * WG <= CAP / 2, so the two never overlap).
const uint PROBE = PICKS_PER_INVOCATION;
const uint PROBE_ROUND = 64u;  // logits per invocation the probe reads (a cheap loop: 4 selects each)
const uint PROBE_AT = CAP - PROBE * WG;

// Inserts (k, i) into a register list of the 4 best (descending; ids grow
// within an invocation, so a later equal key ranks after and is not taken).
#define PICK4(k, i)                                              \
    {                                                            \
        bool b0 = k > k0, b1 = k > k1, b2 = k > k2, b3 = k > k3; \
        k3 = b2 ? k2 : (b3 ? k : k3);                            \
        i3 = b2 ? i2 : (b3 ? i : i3);                            \
        k2 = b1 ? k1 : (b2 ? k : k2);                            \
        i2 = b1 ? i1 : (b2 ? i : i2);                            \
        k1 = b0 ? k0 : (b1 ? k : k1);                            \
        i1 = b0 ? i0 : (b1 ? i : i1);                            \
        k0 = b0 ? k : k0;                                        \
        i0 = b0 ? i : i0;                                        \
    }

// A vec4 of logits at vec4 index Q as one group: pick_chunk's row statistics
// (klo, kmin1) over its logits, then PICK4 of its largest key with Q (the
// largest key of all is k0). One insertion per 4 logits instead of one per
// logit (lavapipe, llama.cpp's default chain at vocab 262144: 396 -> 379 us).
#define PICK_VEC4(F4, Q)                                                      \
    {                                                                         \
        uint ka = sieve_key((F4).x), kb = sieve_key((F4).y);                  \
        uint kc = sieve_key((F4).z), kd = sieve_key((F4).w);                  \
        klo = min(min(klo, min(ka, kb)), min(kc, kd));                        \
        kmin1 = min(min(kmin1, min(ka - (KEY_NEG_INF + 1u), kb - (KEY_NEG_INF + 1u))), \
                    min(kc - (KEY_NEG_INF + 1u), kd - (KEY_NEG_INF + 1u)));   \
        uint kg = max(max(ka, kb), max(kc, kd));                              \
        uint qg = (Q);                                                        \
        PICK4(kg, qg)                                                         \
    }

void probe_threshold(uint row, uint begin, uint stop, uint need) {
    uint t = gl_LocalInvocationID.x;
    uint k0 = 0u, k1 = 0u, k2 = 0u, k3 = 0u;  // descending; key 0: below every logit's
    uint i0 = 0u, i1 = 0u, i2 = 0u, i3 = 0u;
    for (uint i = begin + t; i < stop; i += WG) {
        uint k = sieve_key(row_logit(row, i));
        bool ok = key_valid(k);
        k = ok ? k : 0u;
        PICK4(k, i)
    }
    atomicMax(s_wmax_key, k0);  // min-p's floor starts from the first round's maximum
    c_key[PROBE_AT + PROBE * t] = k0;
    c_key[PROBE_AT + PROBE * t + 1u] = k1;
    c_key[PROBE_AT + PROBE * t + 2u] = k2;
    c_key[PROBE_AT + PROBE * t + 3u] = k3;
    c_id[PROBE_AT + PROBE * t] = i0;
    c_id[PROBE_AT + PROBE * t + 1u] = i1;
    c_id[PROBE_AT + PROBE * t + 2u] = i2;
    c_id[PROBE_AT + PROBE * t + 3u] = i3;
    barrier();
    for (uint j = t; j < PROBE * WG; j += WG) {  // to the front
        c_key[j] = c_key[PROBE_AT + j];
        c_id[j] = c_id[PROBE_AT + j];
    }
    threshold_from_picks(PROBE * WG, need);
}

// A picked group (maximum kg, vec4 index q) of pick_chunk: how many of its
// logits are >= tau, and writing them from `slot` on (returns the next slot).
// Key 0 is no pick.
uint group_takes(uint kg, uint q, uint row4, uint tau) {
    if (kg == 0u || kg < tau) return 0u;
    vec4 f4 = row_vec4(row4 + q);
    uint n = 0u;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        uint k = sieve_key(f4[c]);
        n += key_valid(k) && k >= tau ? 1u : 0u;
    }
    return n;
}

uint group_write(uint kg, uint q, uint row4, uint tau, uint slot) {
    if (kg == 0u || kg < tau) return slot;
    vec4 f4 = row_vec4(row4 + q);
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        uint k = sieve_key(f4[c]);
        if (key_valid(k) && k >= tau) {
            c_key[slot] = k;
            c_id[slot] = 4u * q + c;
            ++slot;
        }
    }
    return slot;
}

// Most picks pick_chunk sorts (rank_sort_to_list); more go to the collecting loop.
const uint PICK_LIMIT = 2u * WG < CAP / 2u ? 2u * WG : CAP / 2u;
// Plain chunks keep a larger need by a radix select (radix_chunk,
// VARIANT_PLAIN_RADIX; the host's twin: row_analysis.cpp). A CPU device
// (INDEXED_BINS) keeps pick_chunk and its collecting loop up to the picks'
// capacity: there each radix level's shared atomic per logit costs more
// (lavapipe, top-k 200 at 151936: the collect pass 600 us against 1100 by
// radix; top-k 500 and 1000: 1264 and 1550 by radix against 1623 and 2400
// in the general variant).
const uint RADIX_FROM = INDEXED_BINS != 0u ? PROBE * WG : PICK_LIMIT;
// Where the picks' select stops: at its first level where at most
// PICK_LIMIT picks reach the edge on a CPU device, as it always did; on a GPU
// (PICKS_DEEPER) at the first where at most need + PICK_SLACK do. There the
// rank sort costs each invocation a shared read of every entry it sorts, one
// after another, and a level a few barriers: at the default chain's 32
// chunks of a 151936-logit Zipf row, the first level's edge (an 8-bit key
// prefix: two binary exponents) holds about 280 logits of a chunk, the
// second's about 41 (need 40).
const uint PICK_SLACK = 64u;
const bool PICKS_DEEPER = INDEXED_BINS == 0u;

// A logit's key into a refining level's bins: keys >= tau0 only.
void refine_bin(uint k, uint tau0, uint prefix, uint shift) {
    if (key_valid(k) && k >= tau0) radix_count(k, prefix, shift, 0u);
}

// pick_chunk's logits >= tau0 were more than PICK_LIMIT. They are exactly a
// dropped invocation's share's and the other invocations' picked groups'
// (every logit >= tau0 lies in a group whose maximum is >= tau0, which such
// an invocation kept). A refining level counts them alone (a dropped share
// read again a level, the groups reloaded).
void refine_count(uint tau0, uint prefix, uint shift, bool dropped, uint row4, uint q_first, uint q_stop, uvec4 keys,
                  uvec4 groups) {
    if (dropped) {
        for (uint q = q_first; q < q_stop; q += RUN_LANES) {
            vec4 f4 = row_vec4(row4 + q);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) refine_bin(sieve_key(f4[c]), tau0, prefix, shift);
        }
    } else {
        // A loop, not four copies: a CPU device runs a loop's body once
        // where no lane enters it (at every level of every chunk, since
        // pick_chunk's first pass runs this under a lane mask).
        [[dont_unroll]] for (uint j = 0u; j < 4u; ++j) {
            if (keys[j] != 0u && keys[j] >= tau0) {
                vec4 f4 = row_vec4(row4 + groups[j]);
                [[unroll]] for (uint c = 0u; c < 4u; ++c) refine_bin(sieve_key(f4[c]), tau0, prefix, shift);
            }
        }
    }
}

// The first `kept` of c[0, ..) (sorted) into the chunk's list at `list`.
void write_list(uint kept, uint list) {
    for (uint i = gl_LocalInvocationID.x; i < kept; i += WG) {
        candidates[list + 2u * i] = c_key[i];
        candidates[list + 2u * i + 1u] = c_id[i];
    }
}

// Rank sort of c[0, n) (distinct entries, after a barrier) straight into the
// chunk's list at `list`: each entry counts the entries before it in
// canonical order and, when that rank is below `need`, writes itself there.
// O(n^2 / WG) shared reads and no barrier: for the few dozen entries it
// sorts, far cheaper than a bitonic sort's stages on a CPU device, where
// every shared access of every invocation is a scalar load.
void rank_sort_to_list(uint n, uint need, uint list) {
    uint t = gl_LocalInvocationID.x;
    for (uint e = t; e < n; e += WG) {
        uint ke = c_key[e], ie = c_id[e];
        // Larger keys first, then equal keys by lower id: the ids are read
        // only by an invocation whose key is tied (rare in f32 rows, common
        // in f16/bf16 ones), since each shared load is a loop over the SIMD
        // lanes on a CPU device.
        uint r = 0u, equal = 0u;  // equal counts the entry itself
        for (uint j = 0u; j < n; ++j) {
            uint kj = c_key[j];
            r += kj > ke ? 1u : 0u;
            equal += kj == ke ? 1u : 0u;
        }
        for (uint j = 0u; equal > 1u && j < n; ++j) r += c_key[j] == ke && c_id[j] < ie ? 1u : 0u;
        if (r < need) {
            candidates[list + 2u * r] = ke;
            candidates[list + 2u * r + 1u] = ie;
        }
    }
}

// The whole chunk in one read with registers only (plain rows, vec4 map):
// every invocation keeps the PROBE groups of 4 logits (vec4s) of its share
// with the largest maxima (its picks: each a group's maximum and vec4 index)
// and the row statistics. A radix select over the picks' keys (8 bits a
// level, counts in shared memory) finds the first level's key edge tau such
// that at least `need` picks have a key >= tau and at most min(PICK_LIMIT,
// need + PICK_SLACK) do (or the exact key of the need-th pick). Each pick's
// key is a distinct logit of the chunk, so the chunk's top `need` are >=
// tau, and every logit >= tau lies in a group whose maximum is >= tau. An
// invocation whose PROBE-th pick has a key >= tau may have dropped such
// groups: it reads its own share again and takes every logit >= tau; the
// others read their picked groups >= tau again (a vec4 each) and take their
// logits >= tau. So the chunk's logits >= tau,
// rank sorted, hold its top `need`: the first `need` of them are written to
// the chunk's list at `list` (returns true; `kept` = how many).
// Past PICK_LIMIT they are left in the buffer for the caller's compaction to
// sort (returns false, in_buffer). When they pass half the buffer (ties at
// tau), or tau is still too low after the last level, the collecting loop
// reads the chunk again from tau (returns false; a valid threshold, since
// `need` chunk logits are >= tau).
bool pick_chunk(uint row, uint begin, uint end, uint need, uint list, bool use_floor, float floor_offset, AggWant w,
                inout Agg a, inout uint bad, inout uint first_bad, inout uint kmin, inout uint kmax, out uint kept,
                out bool in_buffer) {
    uint t = gl_LocalInvocationID.x;
    kept = 0u;
    in_buffer = false;
    uint k0 = 0u, k1 = 0u, k2 = 0u, k3 = 0u;  // groups' maxima, descending; key 0: below every logit's
    uint i0 = 0u, i1 = 0u, i2 = 0u, i3 = 0u;  // their vec4 indices
    uint kmin1 = 0xFFFFFFFFu;  // min of k - (KEY_NEG_INF + 1): -inf wraps to the top
    // NaN and +Inf only need finding here, not counting: keys above
    // KEY_POS_INF - 1 or below KEY_NEG_INF. The loop is the pass's cost on a CPU
    // device, so it carries two min/max per logit instead of the count, the
    // first index and a select; the largest key is the first pick, k0.
    // (NaN/+Inf keys may become picks: the row fails on them whatever its
    // candidates are.)
    uint klo = 0xFFFFFFFFu;
    uint row4 = row * (pc.stride / 4u);
    uint q_first, q_stop;  // contiguous stretches (stretch.glsl)
    stretch_share(begin / 4u, end / 4u, q_first, q_stop);
    const uint q_step = RUN_LANES;
    // Rows of the general variant whose chain needs the full-row aggregates
    // sum them in the same read (the plain variants compile none of it).
    bool sums = !PLAIN && w.sums;
    // Two loads an iteration: lavapipe loads a vector lane by lane, each
    // lane's load waiting on the previous one's; two independent loads
    // overlap.
    uint q = q_first;
    for (; q + 3u * q_step < q_stop; q += 4u * q_step) {
        vec4 fa = row_vec4(row4 + q);
        vec4 fb = row_vec4(row4 + q + q_step);
        vec4 fc = row_vec4(row4 + q + 2u * q_step);
        vec4 fd = row_vec4(row4 + q + 3u * q_step);
        PICK_VEC4(fa, q)
        PICK_VEC4(fb, q + q_step)
        PICK_VEC4(fc, q + 2u * q_step)
        PICK_VEC4(fd, q + 3u * q_step)
        if (sums) {
            agg_add4(a, fa, w.t, w.sigma, w.mass);
            agg_add4(a, fb, w.t, w.sigma, w.mass);
            agg_add4(a, fc, w.t, w.sigma, w.mass);
            agg_add4(a, fd, w.t, w.sigma, w.mass);
        }
    }
    for (; q + q_step < q_stop; q += 2u * q_step) {
        vec4 fa = row_vec4(row4 + q);
        vec4 fb = row_vec4(row4 + q + q_step);
        PICK_VEC4(fa, q)
        PICK_VEC4(fb, q + q_step)
        if (sums) {
            agg_add4(a, fa, w.t, w.sigma, w.mass);
            agg_add4(a, fb, w.t, w.sigma, w.mass);
        }
    }
    for (; q < q_stop; q += q_step) {
        vec4 fa = row_vec4(row4 + q);
        PICK_VEC4(fa, q)
        if (sums) agg_add4(a, fa, w.t, w.sigma, w.mass);
    }
    phase_chunk_mark(PH_READ);
    kmin = kmin1 < KEY_POS_INF - KEY_NEG_INF - 1u ? kmin1 + KEY_NEG_INF + 1u : 0xFFFFFFFFu;
    if (CHAIN_HAS_FLOOR) kmax = max(kmax, k0);
    // min-p's floor from the chunk's maximum (read after the select's first
    // barrier): at or below the row's, so nothing min-p keeps is below it.
    if (CHAIN_HAS_FLOOR && use_floor) atomicMax(s_wmax_key, kmax);
    // This invocation saw NaN or +Inf (rare): its share again, for their count
    // and the first one's index (a loop, so no other invocation pays for it).
    bool saw_bad = k0 >= KEY_POS_INF || klo < KEY_NEG_INF;
    for (uint q = q_first; saw_bad && q < q_stop; q += q_step) {
        vec4 f4 = row_vec4(row4 + q);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            uint k = sieve_key(f4[c]);
            bool ok = key_valid(k);
            bad += ok ? 0u : 1u;
            first_bad = ok ? first_bad : min(first_bad, 4u * q + c);
        }
    }

    // Pass 0: a radix select over the picks' keys finds tau (bins in
    // c_id[0, 256), the level's prefix in `prefix`). Pass 1 (at most once, a
    // refining pass, below): the same select over the logits >= pass 0's tau
    // alone (refine_count). One select serves both: a CPU device runs a
    // refine it does not take under a lane mask, and a select of its own
    // (its barriers and bin choice) cost the default chain 3% of its
    // instructions on lavapipe.
    uint tau = 0u, m = 0u;
    bool floored = false;
    bool dropped = false;
    uint mine;
    for (uint pass = 0u;; ++pass) {  // uniform; at most two
        uint tau0 = tau;  // 0 in pass 0: every pick counts
        uint prefix = 0u, above = 0u;
        for (uint shift = 24u;; shift -= 8u) {  // uniform
            radix_clear(0u);
            if (pass == 0u) {
                if (k0 != 0u) radix_count(k0, prefix, shift, 0u);
                if (k1 != 0u) radix_count(k1, prefix, shift, 0u);
                if (k2 != 0u) radix_count(k2, prefix, shift, 0u);
                if (k3 != 0u) radix_count(k3, prefix, shift, 0u);
            } else {
                refine_count(tau0, prefix, shift, dropped, row4, q_first, q_stop, uvec4(k0, k1, k2, k3),
                             uvec4(i0, i1, i2, i3));
            }
            // Fewer than `need` picks: every pick (tau 0). (A refining pass
            // counts more than PICK_LIMIT >= need: a bin is found.)
            if (!radix_choose(need, 0u, prefix, above, m)) break;
            tau = max(tau0, prefix << shift);
            // (A refining pass reads groups again a level: it stops at
            // PICK_LIMIT.)
            uint enough = PICKS_DEEPER && pass == 0u ? min(PICK_LIMIT, need + PICK_SLACK) : PICK_LIMIT;
            if (m <= enough || shift == 0u) break;
        }
        if (pass == 0u) {
            phase_chunk_mark(PH_SELECT);
            // tau == 0 takes every pick (key 0: no logit). A min-p row
            // (ROW_FLOOR) whose `need` is more than the picks (the survivors
            // are bounded by the floor, not by a count) or whose need-th pick
            // lies below the floor takes the chunk's logits at or above the
            // floor instead: a superset of what min-p keeps, usually a few
            // dozen, so the picks hold them all.
            if (CHAIN_HAS_FLOOR && use_floor) {
                uint kf = floor_key(true, floor_offset);
                floored = kf > tau;
                tau = max(tau, kf);
            }
        }
        // An invocation whose 4th pick reaches tau may have dropped groups
        // with logits >= tau: it reads its own share again (1/WG of the
        // chunk) and takes all of them.
        dropped = k3 != 0u && k3 >= tau;
        if (t == 0u) {
            s_fill = 0u;
            s_count = 0u;
            s_has_tau = tau != 0u ? 1u : 0u;
            s_tau_key = tau;
            s_tau_id = 0xFFFFFFFFu;  // every logit of key tau passes
        }
        barrier();
        // tau still too low after the last level (m is uniform): the
        // collecting loop reads the chunk again from tau. (A floor's count is
        // checked below.)
        if (pass == 0u && m > PICK_LIMIT && !floored) return false;
        mine = group_takes(k0, i0, row4, tau) + group_takes(k1, i1, row4, tau) + group_takes(k2, i2, row4, tau) +
               group_takes(k3, i3, row4, tau);
        if (dropped) {
            mine = 0u;
            for (uint q = q_first; q < q_stop; q += q_step) {
                vec4 f4 = row_vec4(row4 + q);
                [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                    uint k = sieve_key(f4[c]);
                    bool ok = key_valid(k);
                    mine += ok && k >= tau ? 1u : 0u;
                }
            }
        }
        if (mine > 0u) atomicAdd(s_count, mine);
        barrier();
        // More than PICK_LIMIT (the rank sort's cost grows with the square):
        // where the chunk's best crowd a few invocations' shares (a block of
        // ids a script's tokens fill), those invocations kept PROBE groups of
        // many, and tau is raised over the logits >= tau alone, once
        // (lavapipe, the default chain over a row whose best 1000 lie in one
        // block: the collect pass 1130 -> 240 us): the refining pass finds
        // the lowest edge with at least `need` of them at or above it,
        // stopping at the first level where at most PICK_LIMIT are, or at the
        // last (one key), and takes max(tau, that edge): `need` of the
        // chunk's logits are still >= it. (Only counting too many could raise
        // the edge too far; counting too few lowers it, which keeps the
        // result and costs entries.) Up to half the buffer (a tie group at
        // tau, or a floor's survivors: a flat row) they are gathered and
        // sorted below; past it the collecting loop reads the chunk again
        // from tau. A floor that more than half the buffer reaches (the
        // chunk's own, from its maximum: a Gaussian row's chunk at min-p
        // 0.05, thousands) is refined too, to the chunk's best `need` (its
        // share of the buffer), which is what the collecting loop kept, at
        // a few reads of the chunk where the loop compacted the buffer again
        // and again (lavapipe: the collect pass 6.5 -> 1.4 ms).
        bool refine = pass == 0u && (floored || need <= PICK_LIMIT);
        if (s_count <= (refine && !floored ? PICK_LIMIT : HALF)) break;  // uniform
        if (!refine) return false;
    }
    phase_chunk_mark(PH_COUNTED);
    uint slot = mine > 0u ? atomicAdd(s_fill, mine) : 0u;
    if (dropped) {
        for (uint q = q_first; q < q_stop; q += q_step) {
            vec4 f4 = row_vec4(row4 + q);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                uint k = sieve_key(f4[c]);
                bool ok = key_valid(k);
                if (ok && k >= tau) {
                    c_key[slot] = k;
                    c_id[slot] = 4u * q + c;
                    ++slot;
                }
            }
        }
    } else {
        slot = group_write(k0, i0, row4, tau, slot);
        slot = group_write(k1, i1, row4, tau, slot);
        slot = group_write(k2, i2, row4, tau, slot);
        group_write(k3, i3, row4, tau, slot);
    }
    barrier();
    phase_chunk_mark(PH_WRITTEN);
    uint n = s_fill;
    // Past PICK_LIMIT the rank sort's square passes the bitonic sort's
    // stages: the caller's compaction sorts the gathered logits (a flat
    // row's floor in a CPU device's 2 chunks: 150 survivors each; before,
    // the collecting loop read such a chunk again).
    in_buffer = n > PICK_LIMIT;
    if (in_buffer) return false;  // uniform
    rank_sort_to_list(n, need, list);
    kept = min(n, need);
    return true;
}

// The chunk's statistics (bad, first_bad, kmin) from one of its keys (id i),
// on its first read.
void chunk_stats_add(uint k, uint i, inout uint bad, inout uint first_bad, inout uint kmin) {
    bool ok = key_valid(k);
    bad += ok ? 0u : 1u;
    first_bad = ok ? first_bad : min(first_bad, i);
    kmin = (ok && k != KEY_NEG_INF) ? min(kmin, k) : kmin;
}

// Whether a collecting round takes key k of logit i: at or above the floor
// (min-p's) and canonically at or before the threshold (tk, ti).
bool round_takes(uint k, uint i, uint kfloor, uint tk, uint ti) { return k >= kfloor && (k > tk || (k == tk && i <= ti)); }

// A radix level over the chunk (the keys whose bits above `shift` + 8 are
// `prefix`) as two digits of 4 bits, each counted in registers, a read of
// the chunk each: a CPU device's level over most of the chunk, where a
// shared atomic costs a locked instruction a lane (lavapipe, top-k 1000 at
// 151936: a read that counts every logit by atomics about 410 us a chunk,
// one that counts them in registers about 50). Stops after the first digit
// where at most CAP keys are at or above its edge (`edge`: the shift the
// prefix's last digit ends at). As radix_choose otherwise.
bool radix_chunk_nibbles(uint row4, uint q_first, uint q_stop, uint shift, uint need, bool first_read, AggWant w,
                         inout Agg a, inout uint prefix, inout uint above, out uint m, out uint edge, inout uint bad,
                         inout uint first_bad, inout uint kmin) {
    bool found = true;
    for (uint nib = shift + 4u;; nib -= 4u) {  // uniform
        radix_clear(0u);
        uint counts[16];
        [[unroll]] for (uint j = 0u; j < 16u; ++j) counts[j] = 0u;
        // Digits 0-7 in lo's nibbles, 8-15 in hi's, added to `counts` every
        // 3 loads (12 logits: a nibble holds 15).
        uint lo = 0u, hi = 0u, loads = 0u;
        for (uint q = q_first; q < q_stop; q += RUN_LANES) {
            vec4 f4 = row_vec4(row4 + q);
            if (!PLAIN && first_read && nib == 28u && w.sums) agg_add4(a, f4, w.t, w.sigma, w.mass);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                uint k = sieve_key(f4[c]);
                if (first_read && nib == 28u) chunk_stats_add(k, 4u * q + c, bad, first_bad, kmin);
                bool ok = key_valid(k);
                uint d = ok && (nib == 28u || (k >> (nib + 4u)) == prefix) ? (k >> nib) & 15u : 16u;  // 16: none
                uint inc = 1u << ((d & 7u) << 2u);
                lo += d < 8u ? inc : 0u;
                hi += d - 8u < 8u ? inc : 0u;
            }
            if (++loads == 3u || q + RUN_LANES >= q_stop) {
                [[unroll]] for (uint j = 0u; j < 8u; ++j) {
                    counts[j] += (lo >> (4u * j)) & 15u;
                    counts[8u + j] += (hi >> (4u * j)) & 15u;
                }
                lo = 0u;
                hi = 0u;
                loads = 0u;
            }
        }
        [[unroll]] for (uint j = 0u; j < 16u; ++j) {
            if (counts[j] != 0u) atomicAdd(c_id[j], counts[j]);
        }
        found = radix_choose_digit(need, 0u, 4u, prefix, above, m);
        edge = nib;
        if (!found || m <= CAP || nib == shift) return found;
    }
    return found;  // not reached
}

// A CPU device counts a level in registers (radix_chunk_nibbles) where more
// than this share of the chunk's logits are in it: there the atomics' cost
// (about 5.4 ns a logit on lavapipe against 0.7 for a register read) passes
// a second read's.
const uint NIBBLE_LEVEL_SHARE = 5u;  // 1 / 5 of the chunk

// The most logits radix_chunk gathers and sorts (ties at the last level's
// one key aside) from a chunk of `logits`. On a GPU, for chunks of at most
// RADIX_DEEP_LOGITS_PER_LANE x WG (gpu_layout.h), the least power of two
// that holds `need`, the size the bitonic sort pads to: a level more (a read
// of the chunk from the cache, its counts and a choice) costs less than
// sorting twice the entries (top-k 1000 at 16 chunks of 151936 Zipf logits:
// the first level leaves about 2200 of a chunk's 9500, sorted at 4096, 78
// stages of 8 compare-exchanges an invocation; the second about 1000, sorted
// at 1024, 55 stages of 2). Past it (8 chunks or fewer at 151936) a read
// costs about what halving the sort saves (gpu_estimate.cpp:
// radix_chunk_us), and a CPU device sorts by merges, whose cost follows the
// entries: the buffer (CAP).
uint radix_gathered(uint need, uint logits) {
    bool deeper = INDEXED_BINS == 0u && logits <= RADIX_DEEP_LOGITS_PER_LANE * WG;
    return deeper ? min(CAP, next_pow2(need)) : CAP;
}

// A large `need` (VARIANT_PLAIN_RADIX; plain rows past RADIX_FROM without
// min-p's floor, which the picks take whatever their need): a radix select
// over the whole chunk, 8 bits a level, each level reading the chunk again
// (from the cache: a GPU reads far faster than it compacts) and counting the
// keys that share the prefix so far by shared atomics (on a CPU device, a
// level over most of the chunk in registers: radix_chunk_nibbles), until at
// most radix_gathered logits are at or above the level's edge tau; those are
// gathered and sorted, and the first `need` are the chunk's list (returns
// true; `kept` = how many). Ties past CAP at the last level's one key: the
// collecting loop reads the chunk again (returns false). A fixed number of
// barriers instead of compactions that grow with `need` (top-k 1000: dozens
// of sorts of the buffer).
bool radix_chunk(uint row, uint begin, uint end, uint need, uint list, AggWant w, inout Agg a, inout uint bad,
                 inout uint first_bad, inout uint kmin, out uint kept) {
    uint t = gl_LocalInvocationID.x;
    kept = 0u;
    uint row4 = row * (pc.stride / 4u);
    uint q_first, q_stop;  // contiguous stretches (stretch.glsl)
    stretch_share(begin / 4u, end / 4u, q_first, q_stop);
    uint prefix = 0u, above = 0u, m = end - begin, tau = 0u;
    uint gathered = radix_gathered(need, end - begin);
    bool fits = false;
    for (uint shift = 24u;; shift -= 8u) {  // uniform
        bool found, first_read = shift == 24u;
        uint edge = shift;
        if (INDEXED_BINS != 0u && NIBBLE_LEVEL_SHARE * (m - above) > end - begin) {  // the level's logits, at most
            found = radix_chunk_nibbles(row4, q_first, q_stop, shift, need, first_read, w, a, prefix, above, m, edge,
                                        bad, first_bad, kmin);
        } else {
            radix_clear(0u);
            for (uint q = q_first; q < q_stop; q += RUN_LANES) {
                vec4 f4 = row_vec4(row4 + q);
                if (!PLAIN && first_read && w.sums) agg_add4(a, f4, w.t, w.sigma, w.mass);
                [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                    uint k = sieve_key(f4[c]);
                    if (first_read) chunk_stats_add(k, 4u * q + c, bad, first_bad, kmin);
                    if (key_valid(k)) radix_count(k, prefix, shift, 0u);
                }
            }
            found = radix_choose(need, 0u, prefix, above, m);
        }
        // Not found: fewer than `need` logits in the chunk, every one (< need <= CAP / 2).
        tau = found ? prefix << edge : 0u;
        fits = !found || m <= CAP;
        if (!found || m <= gathered || shift == 0u) break;
    }
    if (!fits) return false;
    if (t == 0u) s_fill = 0u;
    barrier();
    for (uint q = q_first; q < q_stop; q += RUN_LANES) {
        vec4 f4 = row_vec4(row4 + q);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            uint k = sieve_key(f4[c]);
            if (key_valid(k) && k >= tau) {
                uint slot = atomicAdd(s_fill, 1u);
                c_key[slot] = k;
                c_id[slot] = 4u * q + c;
            }
        }
    }
    barrier();
    uint n = s_fill;
    if (INDEXED_BINS != 0u) merge_sort_prefix(n);
    else sort_prefix(n);
    kept = min(n, need);
    write_list(kept, list);
    return true;
}

// A large `need` (top-k in the hundreds to CAP / 2): each invocation keeps its
// PROBE_DEEP best picks of its whole share of the chunk in registers, and the
// need-th best of all picks is the threshold. On LM-like rows that is close
// to the chunk's own need-th best, so the collecting loop appends about
// `need` logits instead of thousands (top-k 1000 at 151936: one compaction
// instead of dozens). A pick is a logit of the chunk, or with the vec4 map a
// group of 4's largest one (one pick per group): distinct logits either way,
// so at least `need` chunk logits are at or above the threshold, which is at
// most the chunk's need-th best: nothing is lost.
const uint PROBE_DEEP = 16u;

// Inserts (k, i) into the register list pk/pi (descending; ids grow within an
// invocation, so a later equal key ranks after and is not taken), only for a
// pick above the 16th best: rare once an invocation has seen a few dozen.
// (On lavapipe the guard measured cheaper than unconditional selects: collect
// stage of top-k 1000 at 151936 about 5.1-5.9 ms with it, 6.9-7.7 without.)
// The threshold reads only pk, but pi stays: without it lavapipe's build of
// the pass ran top-k 1000 at 151936 in 10.6 ms instead of 3.1 (2026-11-25,
// alternating runs; not traced: the probe itself stayed cheap).
#define DEEP_INSERT(k, i)                                                   \
    if (k > pk[PROBE_DEEP - 1u]) {                                          \
        [[unroll]] for (uint j = PROBE_DEEP - 1u; j > 0u; --j) {            \
            bool here = k > pk[j], up = k > pk[j - 1u];                     \
            pk[j] = here ? (up ? pk[j - 1u] : k) : pk[j];                   \
            pi[j] = here ? (up ? pi[j - 1u] : i) : pi[j];                   \
        }                                                                   \
        bool top = k > pk[0];                                               \
        pi[0] = top ? i : pi[0];                                            \
        pk[0] = top ? k : pk[0];                                            \
    }

void deep_probe_threshold(uint row, uint begin, uint stop, uint need, bool vmap) {
    uint t = gl_LocalInvocationID.x;
    uint pk[PROBE_DEEP], pi[PROBE_DEEP];  // descending; key 0: below every logit's
    [[unroll]] for (uint j = 0u; j < PROBE_DEEP; ++j) {
        pk[j] = 0u;
        pi[j] = 0u;
    }
    if (vmap) {
        // Four logits a load and one insertion test per group of 4, for its
        // largest key: the insertions, not the loads, bound this loop (top-k
        // 1000 at 151936: 3.9 -> 3.2 ms against a test per logit, five
        // alternating runs). Chunks start at multiples of 4 and such rows end
        // at one.
        uint row4 = row * (pc.stride / 4u);
        uint q = begin / 4u + t;
        for (; q < stop / 4u; q += WG) {
            vec4 f4 = row_vec4(row4 + q);
            uint kg = 0u;
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                uint k = sieve_key(f4[c]);
                kg = max(kg, key_valid(k) ? k : 0u);
            }
            uint i = 4u * q;
            DEEP_INSERT(kg, i)
        }
    } else {
        for (uint i = begin + t; i < stop; i += WG) {
            uint k = sieve_key(row_logit(row, i));
            k = key_valid(k) ? k : 0u;
            DEEP_INSERT(k, i)
        }
    }
    atomicMax(s_wmax_key, pk[0]);  // min-p's floor starts from the maximum seen

    // The need-th largest pick key by radix select (8 bits a level, counts in
    // c_id[0, 256) by shared atomics, one invocation walks the bins): 4
    // levels instead of a bitonic sort of all WG x 16 picks (a barrier per
    // stage and scalar shared accesses per lane on a CPU device). Every
    // logit of that key passes (tau_id: all ids), so ties at it are kept.
    uint prefix = 0u, above = 0u, m;
    bool enough = true;
    for (uint shift = 24u; enough; shift -= 8u) {  // uniform
        radix_clear(0u);
        [[unroll]] for (uint j = 0u; j < PROBE_DEEP; ++j) {
            if (pk[j] != 0u) radix_count(pk[j], prefix, shift, 0u);
        }
        enough = radix_choose(need, 0u, prefix, above, m);  // else fewer than `need` picks: no threshold
        if (shift == 0u) break;
    }
    if (t == 0u && enough && prefix != 0u) {
        s_has_tau = 1u;
        s_tau_key = prefix;
        s_tau_id = 0xFFFFFFFFu;
    }
    barrier();
}

// A floored row's chunk (ROW_FLOOR) that the register picks do not read (a
// bias or bitmask, or a stride not a multiple of 4): its maximum first, in a
// read of its own, so that the floor drops logits from the collecting loop's
// first round on. Without it, that round took every logit until a threshold
// existed (sorts of the whole buffer), and the probes that find one read for a
// `need` (HALF for mirostat v2) that the floor, not a count, bounds.
void floor_from_chunk_max(uint row, uint begin, uint end) {
    uint km = 0u;
    for (uint i = begin + gl_LocalInvocationID.x; i < end; i += WG) {
        uint k = sieve_key(row_logit(row, i));
        km = key_valid(k) ? max(km, k) : km;
    }
    atomicMax(s_wmax_key, km);
    barrier();  // the floor (floor_key) reads the chunk's maximum
}

// Keeps the best `need` of the buffer, sorted; the need-th becomes the
// threshold. A bitonic sort: a few dozen barriers cost less on a CPU device
// than one invocation's loop over the entries.
void compact(uint need) {
    uint fill = min(s_fill, CAP);
    sort_prefix(fill);
    if (gl_LocalInvocationID.x == 0u) {
        if (fill >= need) {
            s_has_tau = 1u;
            s_tau_key = c_key[need - 1u];
            s_tau_id = c_id[need - 1u];
        }
        s_fill = min(fill, need);
    }
    barrier();
}

void collect_chunk() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    bind_row(row);
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    bool small = COLLECT_VARIANT == VARIANT_SMALL;
    uint need = chunk_need(row, gl_NumWorkGroups.x);
    uint row_flags = param_u(row, P_ROW_FLAGS);
    bool want_sigma = (row_flags & ROW_NEED_SIGMA) != 0u;
    bool want_mass = (row_flags & ROW_NEED_MASS) != 0u;
    float agg_t = param_f(row, P_AGG_T);

    RowStats s = row_stats_empty();
    Agg a = agg_empty();
    uint kept;  // entries of this chunk's list
    // The chunks of this row: the host's split for the group (indirect x;
    // 1 for a small row), each of collect_chunk_size logits.
    uint n_chunks = gl_NumWorkGroups.x;
    uint list = chunk_list_at(row, chunk, n_chunks);
    bool listed = false;  // pick_chunk or radix_chunk sorted the chunk and wrote its list already
    bool in_buffer = false;  // ... or pick_chunk left its logits >= tau in the buffer, for the compaction to sort
    if (small) {
        // The whole row (vocab <= CAP) in the buffer.
        for (uint i = t; i < pc.vocab; i += WG) {
            float f = row_logit(row, i);
            row_stats_add(s, f, f, i);
            c_key[i] = (isnan(f) || (isinf(f) && f > 0.0)) ? 0u : sieve_key(f);
            c_id[i] = i;
        }
        s = wg_reduce_row_stats(s);
        sort_prefix(pc.vocab);
        kept = pc.vocab;
    } else {
        uint chunk_size = collect_chunk_size(n_chunks);
        uint begin = chunk * chunk_size;
        uint end = min(begin + chunk_size, pc.vocab);
        // Compaction sorts, so it is kept small: the buffer is compacted once it
        // holds a few times `need`, and until the first threshold exists rounds
        // read only about 2 x need logits (the first threshold comes early).
        uint trigger = min(CAP - WG, max(4u * need, 2u * WG));
        uint warm_per_inv = LONG_ROUND;
        // min-p's floor (ROW_FLOOR): a logit below the running maximum + ln(p) can
        // never survive it, so it is not collected (tail.glsl: op_min_p).
        bool use_floor = (row_flags & ROW_FLOOR) != 0u;
        bool aggregates = !PLAIN && (want_sigma || want_mass);
        AggWant w = AggWant(aggregates, want_sigma, want_mass, agg_t);
        float floor_offset = row_floor_offset(row, row_flags);
        if (t == 0u) {
            s_fill = 0u;
            s_has_tau = 0u;
            s_tau_key = 0u;  // below every key a candidate can have: everything passes
            s_tau_id = 0u;
            s_wmax_key = 0u;
        }
        barrier();
        // The hot loop does the least per logit (on a CPU device every
        // operation counts): its key, a range test for NaN/+Inf, the smallest
        // finite key, the threshold test. The maximum is the first candidate.
        // Rounds are long (a barrier costs microseconds on a CPU device): an
        // append that finds the buffer full marks where its invocation stopped
        // appending; after the round the buffer is compacted and those
        // invocations test their remaining logits again against the new
        // threshold. The append counter only grows, so a logit is appended once.
        uint bad = 0u, first_bad = 0xFFFFFFFFu, kmin = 0xFFFFFFFFu, kmax = 0u;
        // The threshold's own logit passes the test (<= ti): a probe threshold
        // is not in the buffer yet; a compaction's is, and is never tested again.
        // The register picks read whole vec4s: rows without a bias or bitmask
        // whose stride is a multiple of 4 (chunks start at multiples of 4).
        // They sum the aggregates in their one read (pick_chunk); the
        // collecting loop's vec4 map takes rows whose aggregates it need not
        // sum: none, or summed by picks that left the chunk to it (its
        // aggregates copy reads a logit at a time).
        bool vpicks = !ROW_INPUTS && (PLAIN || (pc.stride & 3u) == 0u);
        bool loop_sums = aggregates;  // the collecting loop sums them
        bool vmap = vpicks && !loop_sums;
        // A need past RADIX_FROM without a floor: radix_chunk, which sums the
        // aggregates in its first read as the picks do (the variant's flag
        // tested at run time as well: folded to a constant, lavapipe's code
        // for the radix levels took 5% more instructions).
        bool radix = RADIX_CHUNKS && (pc.flags & FLAG_RADIX_CHUNKS) != 0u && need > RADIX_FROM && !use_floor && vpicks;
        // (A floored row's picks take its logits over the floor, whatever its
        // need: mirostat v2's HALF, bounded by the floor.)
        bool picks = !radix && vpicks && 2u * PROBE * WG <= CAP && (PLAIN || need <= PROBE * WG || use_floor);
        if (radix)  // uniform
            listed = radix_chunk(row, begin, end, need, list, w, a, bad, first_bad, kmin, kept);
        else if (picks)
            listed = pick_chunk(row, begin, end, need, list, use_floor, floor_offset, w, a, bad, first_bad, kmin, kmax,
                                kept, in_buffer);
        else if (!PLAIN && CHAIN_HAS_FLOOR && use_floor)  // not in the plain variant (lavapipe runs it untaken)
            floor_from_chunk_max(row, begin, end);
        else if (!PLAIN && 2u * PROBE * WG <= CAP && need <= PROBE * WG)
            probe_threshold(row, begin, min(begin + PROBE_ROUND * WG, end), need);
        else if (!PLAIN && PROBE_DEEP * WG <= CAP && need <= PROBE_DEEP * WG)
            deep_probe_threshold(row, begin, end, need, vmap);
        // Radix or picks gave up: the collecting loop reads the chunk again
        // (the aggregates are summed).
        if ((radix || picks) && !listed && !in_buffer) {
            bad = 0u;
            first_bad = 0xFFFFFFFFu;
            kmin = 0xFFFFFFFFu;
            loop_sums = false;
            vmap = vpicks;
            if (t == 0u) s_fill = 0u;
            barrier();
        }
        uint base = listed || in_buffer ? end : begin;
        while (base < end) {
            uint fill = s_fill;
            barrier();  // every invocation has read it before anyone appends
            if (fill > trigger || (s_has_tau == 0u && fill >= need)) compact(need);
            uint per_inv = s_has_tau != 0u ? LONG_ROUND : warm_per_inv;
            uint stop = min(base + per_inv * WG * (vmap ? 4u : 1u), end);
            uint first = vmap ? base + 4u * t : base + t;
            uint tk = s_tau_key, ti = s_tau_id;
            uint kfloor = floor_key(use_floor, floor_offset);
            // Pass 1 over the round: statistics and how many logits this
            // invocation will append; no memory operation but the load (a CPU
            // device executes a rare branch's atomics under a lane mask for
            // every logit). The aggregates' loop is a separate copy, entered
            // only by rows that need them.
            uint takes = 0u;
            uint k0 = 0u, i0 = 0u;  // the last logit to append
            if (loop_sums) {
                for (uint i = base + t; i < stop; i += WG) {
                    float f = row_logit(row, i);
                    uint k = sieve_key(f);
                    bool ok = key_valid(k);
                    chunk_stats_add(k, i, bad, first_bad, kmin);
                    if (CHAIN_HAS_FLOOR) kmax = ok ? max(kmax, k) : kmax;
                    if (ok && k != KEY_NEG_INF) agg_add(a, f, f / agg_t, want_sigma, want_mass);
                    bool take = ok && round_takes(k, i, kfloor, tk, ti);
                    takes += take ? 1u : 0u;
                    k0 = take ? k : k0;
                    i0 = take ? i : i0;
                }
            } else if (vmap) {
                uint row4 = row * (pc.stride / 4u);
                for (uint q = base / 4u + t; q < stop / 4u; q += WG) {
                    vec4 f4 = row_vec4(row4 + q);
                    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                        uint i = 4u * q + c;
                        uint k = sieve_key(f4[c]);
                        bool ok = key_valid(k);
                        chunk_stats_add(k, i, bad, first_bad, kmin);
                        if (CHAIN_HAS_FLOOR) kmax = ok ? max(kmax, k) : kmax;
                        bool take = ok && round_takes(k, i, kfloor, tk, ti);
                        takes += take ? 1u : 0u;
                        k0 = take ? k : k0;
                        i0 = take ? i : i0;
                    }
                }
            } else {
                for (uint i = base + t; i < stop; i += WG) {
                    uint k = sieve_key(row_logit(row, i));
                    // Keys of -inf .. finite: [KEY_NEG_INF, KEY_POS_INF); NaN
                    // and +Inf fall outside (the row fails on them).
                    bool ok = key_valid(k);
                    chunk_stats_add(k, i, bad, first_bad, kmin);
                    if (CHAIN_HAS_FLOOR) kmax = ok ? max(kmax, k) : kmax;
                    bool take = ok && round_takes(k, i, kfloor, tk, ti);
                    takes += take ? 1u : 0u;
                    k0 = take ? k : k0;
                    i0 = take ? i : i0;
                }
            }
            // Pass 2, only by invocations with something to append: their
            // slots in one atomic, then the same test again over the round
            // (cached). A logit that finds the buffer full is retried below.
            uint slot = takes > 0u ? atomicAdd(s_fill, takes) : 0u;
            uint retry = NO_RETRY;
            if (takes == 1u) {  // the usual case once the threshold settled: no second read
                if (slot < CAP) {
                    c_key[slot] = k0;
                    c_id[slot] = i0;
                } else {
                    retry = i0;
                }
                takes = 0u;
            }
            for (uint i = first; takes > 0u && i < stop; i = next_logit(i, vmap)) {
                uint k = sieve_key(row_logit(row, i));
                bool ok = key_valid(k);
                if (ok && round_takes(k, i, kfloor, tk, ti)) {
                    if (slot < CAP) {
                        c_key[slot] = k;
                        c_id[slot] = i;
                    } else {
                        retry = min(retry, i);
                    }
                    ++slot;
                    --takes;
                }
            }
            if (CHAIN_HAS_FLOOR) atomicMax(s_wmax_key, kmax);
            barrier();
            while (s_fill > CAP) {  // uniform: read after a barrier
                compact(need);
                tk = s_tau_key;
                ti = s_tau_id;
                kfloor = floor_key(use_floor, floor_offset);
                uint from = retry;
                retry = NO_RETRY;
                for (uint i = from; i < stop; i = next_logit(i, vmap)) {
                    uint k = sieve_key(row_logit(row, i));
                    bool ok = key_valid(k);
                    for (bool go = ok && round_takes(k, i, kfloor, tk, ti) && retry == NO_RETRY; go; go = false)
                        retry = append(k, i);
                }
                barrier();
            }
            base = stop;
        }
        s = RowStats(0u, 0xFFFFFFFFu, kmin, bad, first_bad, 0u, 0u);
        if (!listed) compact(need);
        s = wg_reduce_row_stats(s);
        if (aggregates) a = wg_reduce_agg(a);
        if (!listed) kept = s_fill;
    }
    // The list for collect_tail.glsl (a small row's is the whole row, sorted)
    // and the chunk's statistics.
    if (!listed) write_list(kept, list);
    if (t == 0u) {
        uint c = (row * pc.n_chunks + chunk) * CHUNK_STRIDE;
        store_chunk_stats(row, chunk, s);
        chunk_stats[c + C_KEPT] = kept;
        write_agg(c, a);
    }
}

#endif
