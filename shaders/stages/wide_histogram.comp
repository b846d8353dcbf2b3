#version 450
#extension GL_GOOGLE_include_directive : require
// A top-p cut past the candidate buffer, pass 2 of 3 (wide.glsl): 64 or 256
// value bins of the row's entries after the buffer and at or above L, per
// chunk, with their mass at the cut's temperatures. No counts (a bin holds a
// member when its mass is positive; members lighter than 2^-40 of the
// maximum, whose exact mass is 0, make a bin look emptier, which only sends
// a min_keep past the buffer to the CPU twin sooner; the list's overflow is
// found by the gather, and min_keep is covered by the buffer, gpu_params.cpp)
// and no masses at the draw's temperatures (bounded from the cut's, below;
// wide_gather sums them): on a CPU device each per-bin sum is a scatter of a
// lane at a time, about half of the pass.
// A GPU adds each member's mass into the workgroup's bins in shared memory
// (64-bit sums from 32-bit atomics); a CPU device keeps every invocation's
// bins in registers by index, and the workgroup adds them up. The last
// workgroup adds the chunks: a buffer row's masses are exact 40-bit sums (the
// same bins for any split of the row into chunks, in any order), a direct
// row's float sums in a fixed order. That workgroup then finds the bin
// holding the cut and the bins the draw can land in, and arms the gather.
#include "common.glsl"
#include "row.glsl"
#include "arrive.glsl"
#include "result.glsl"
#include "u64.glsl"
#include "ksum.glsl"
#include "wide.glsl"
#include "wide_draw.glsl"
#include "stretch.glsl"

// The logits again, four at a time: rows without bias or bitmask whose stride
// is a multiple of 4 (chunks start at multiples of 4) take one load per 4
// logits (a CPU device gathers scalar loads lane by lane).
#include "logits4.glsl"
// Rows of whole vec4s without bias or bitmask (pipelines.cpp builds this
// variant for them): the vec4 map only. A CPU device runs both maps' loads
// under a lane mask when the choice is left to run time.
layout(constant_id = SPEC_WIDE_ROWS_X4) const uint WIDE_ROWS_X4 = 0u;

// A GPU's bins (INDEXED_BINS 0): each member's exact mass added into its
// bin by shared atomics, value WIDE_BINS the mass below L (store_exact_bins).
const uint SHARED_BINS = INDEXED_BINS == 0u ? WIDE_BINS + 1u : 1u;
shared uint s_bin_lo[SHARED_BINS], s_bin_hi[SHARED_BINS];

// A CPU device's bins: WIDE_COLS words of every invocation at a time
// (columns: row t is invocation t's; store_exact_bins, store_float_bins).
// The rows also stage the last workgroup's reads: what a direct row's chunks
// left in device memory, for a walk in chunk order on invocation 0 (float
// sums): the whole workgroup copies them into s_ab at once, up to
// STAGE_WORDS words a batch, and invocation 0 takes them from there (one
// memory latency a batch, where invocation 0 alone waited one a chunk).
// decide shares the exact bins' sums through it too, two words a value
// (DECIDE_WORDS: a CPU device's 8 rows of 64 words hold 512 of 256 bins'
// 514). A GPU needs the staging rows only: the host records direct rows
// (store_float_bins' columns) on a CPU device alone, and a pipeline built
// otherwise still gets a row an invocation rather than writing past them.
const uint WIDE_COLS = INDEXED_BINS == 0u ? 16u : (WIDE_BINS < 64u ? WIDE_BINS : 64u);
const uint DECIDE_WORDS = 2u * (WIDE_BINS + 1u);
const uint DECIDE_ROWS = (DECIDE_WORDS + WIDE_COLS - 1u) / WIDE_COLS;
const uint COLUMN_ROWS = INDEXED_BINS == 0u && WIDE_DIRECT == 0u ? 0u : WG;
const uint STAGE_ROWS = COLUMN_ROWS > DECIDE_ROWS ? COLUMN_ROWS : DECIDE_ROWS;
shared uint s_ab[STAGE_ROWS][WIDE_COLS];
const uint STAGE_WORDS = STAGE_ROWS * WIDE_COLS;
uint staged(uint i) { return s_ab[i / WIDE_COLS][i % WIDE_COLS]; }
void stage(uint i, uint word) { s_ab[i / WIDE_COLS][i % WIDE_COLS] = word; }

// A direct row's chunk as staged (stage_chunks): its largest raw key, its
// bins' float masses, its mass below L.
const uint CHUNK_WORDS = WIDE_BINS + 2u;

// Chunks [c0, c0 + chunks) of a direct row, CHUNK_WORDS words each.
void stage_chunks(uint row, uint c0, uint chunks) {
    for (uint i = gl_LocalInvocationID.x; i < chunks * CHUNK_WORDS; i += WG) {
        uint k = i / CHUNK_WORDS, w = i % CHUNK_WORDS;
        uint h = wide_hist_at(row, c0 + k);
        stage(i, w == 0u ? chunk_stats[(row * pc.n_chunks + c0 + k) * CHUNK_STRIDE + C_MAX_KEY]
                         : histograms[h + (w <= WIDE_BINS ? WH_BIN(w - 1u) : WH_BELOW)]);
    }
    barrier();
}

// A deferred row (ROW_DEFER_TOP_P): the total is the buffer's mass, the bins'
// and the mass below L (`past`), exact 40-bit sums at the cut's temperatures
// against the row's maximum. top-p's target p * total is first looked for in
// the buffer (llama.cpp: the first entry whose cumulative mass reaches it,
// with at least min_keep entries), as the tail's op_top_p looks for it: each
// invocation sums its block of the buffer, a prefix sum over the blocks
// (wg_scan.glsl) places the target, and the first block whose end reaches it
// is walked (the sums are exact: the entry a walk over the whole buffer on one
// invocation finds). There, the survivors are a prefix of the buffer and the
// draw happens here, by exact masses (wide_draw.glsl). Else R_WIDE_RC becomes
// what the bins must still cover and the row goes on as any other. The whole
// workgroup; the answer is the same in every invocation.
bool cut_in_buffer(uint row, uvec2 past) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    float mcx = uintBitsToFloat(row_state[o + R_WIDE_MC]);
    float mdx = uintBitsToFloat(row_state[o + R_WIDE_MD]);
    uint n = row_state[o + R_WIDE_N];
    uint min_keep = row_state[o + R_WIDE_KEEP];
    uint keys = wide_cut_keys_at(row);
    if (t == 0u) s_first = 0xFFFFFFFFu;  // ordered before the offers by the scan's barriers
    uvec2 before, part;
    uvec2 mass = wide_block_sums(keys, 1u, n, mcx, before, part);
    float target_f = param_f(row, P_TOP_P) * fixed40_value(u64_add(mass, past));
    uvec2 target = fixed40(max(target_f, 0.0));
    // The first entry where the cumulative mass reaches the target: in the
    // first block whose end reaches it (a later block's first entry offers
    // too; the smallest wins).
    if (!u64_less(u64_add(before, part), target)) {
        uint first, end;
        wg_block(n, first, end);
        uvec2 acc = before;
        for (uint i = first; i < end; ++i) {
            acc = u64_add(acc, wide_entry_mass(keys, 1u, i, mcx));
            if (!u64_less(acc, target)) {
                wg_first_offer(i);
                break;
            }
        }
    }
    uint reach = wg_first_end();  // n and past it: the buffer's mass stays under the target
    // The walk's rule: the first i with cum >= target and i + 1 >= min_keep;
    // cumulative sums only grow, so past min_keep it is the first reach.
    uint last = max(reach + 1u, min_keep);
    if (reach >= n || last > n) {  // uniform
        if (t == 0u) {
            if (reach < n) {  // min_keep reaches past the buffer: ranks, not masses
                wide_fallback(row, 2u);
            } else {
                row_state[o + R_WIDE_RC] = floatBitsToUint(target_f - fixed40_value(mass));
            }
        }
        return reach < n;
    }
    // The draw over the buffer's first `last` entries (wide_draw.glsl).
    uint buf = wide_buffer_at(row);
    uvec2 exact = wide_block_sums(buf, 2u, last, mdx, before, part);
    buffer_draw_pick(buf, last, mdx, u64_mul_u32_shr32(exact, row_uniform(row)), before, part);
    if (t == 0u) {
        float p = u64_to_float(s_pick_q) / u64_to_float(exact);
        uint step = row_step(row);
        write_result(row, s_pick_token, p, log(p), STATUS_OK, step, 2u);
        advance_step(row, step);
        row_state[o + R_WIDE_PHASE] = WIDE_NONE;
    }
    return true;
}

// Bounds on bin b's mass at the draw's temperatures from its mass at the
// cut's, mc: each member's draw mass over its cut mass is
// exp((vd - v) - (mdx - mcx)), vd being v divided n_draw more times, so
// vd - v = v (t^-n_draw - 1) is monotone in v and its extremes over the bin's
// values are at the bin's ends (widened for the bin test's and the
// divisions' rounding; the bounds then for exp's and the sums').
vec2 draw_mass_bounds(uint b, float mc, float top, float scale, float lowest, float t, uint n_draw, float ref) {
    float width = 1.0 / scale;
    float vhi = (top - float(b) + 1.0) * width;
    float vlo = b + 1u == WIDE_BINS ? lowest : max(lowest, (top - float(b)) * width);
    float pad = 1e-3 * width + 1e-6 * (abs(vlo) + abs(vhi));
    vlo -= pad;
    vhi += pad;
    float glo = wide_divide(vlo, t, n_draw, WIDE_ALL_DIVISIONS) - vlo;
    float ghi = wide_divide(vhi, t, n_draw, WIDE_ALL_DIVISIONS) - vhi;
    float e = 1e-6 * (abs(vlo) + abs(vhi)) * float(n_draw + 1u) + 1e-6;
    return vec2(mc * exp(min(glo, ghi) - e - ref) * (1.0 - 1e-4), mc * exp(max(glo, ghi) + e - ref) * (1.0 + 1e-4));
}

// The bins' masses at the cut (s_mc), and bounds on their masses at the
// draw's temperatures (s_md), for choose.
shared float s_mc[WIDE_BINS];
shared vec2 s_md[WIDE_BINS];

// The whole workgroup, from the bins' masses at the cut (s_mc, after a
// barrier; the row's words in row_state visible to every invocation): the
// cut's bin, the draw's possible bins, the gather's arming (invocation 0).
void choose(uint row) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint passes = WIDE_DIRECT != 0u ? 1u : 2u;
    // top-p: the first entry whose cumulative mass reaches the target; the
    // bins before b* are kept whole. (Every invocation walks the bins, to
    // the same b*: a few float adds a bin.)
    float rc = uintBitsToFloat(row_state[o + R_WIDE_RC]);
    float before = 0.0;
    uint bstar = WIDE_BINS;
    uint kept = row_state[o + R_WIDE_N];  // at least: the buffer, one per bin before b* and one of b*
    for (uint b = 0u; b < WIDE_BINS; ++b) {
        float mc = s_mc[b];
        if (mc > 0.0 && before + mc >= rc) {
            bstar = b;
            break;
        }
        before += mc;
        kept += mc > 0.0 ? 1u : 0u;
    }
    // llama.cpp keeps at least min_keep: past b*'s start the GPU would need
    // ranks, not masses (the collect pass keeps min_keep entries in the
    // buffer, up to CAP / 2, so only a min_keep past that gets here).
    if (bstar == WIDE_BINS || row_state[o + R_WIDE_KEEP] > kept + 1u) {  // uniform
        if (t == 0u) wide_fallback(row, passes);
        return;
    }
    // The draw's masses per bin lie within bounds (draw_mass_bounds); so does
    // its total, whatever the cut inside b*: [a_lo, a_hi + bound of b*]. The
    // bins whose part of the CDF can meet u times the total (a contiguous
    // run: both ends of a bin's part only grow with b) are gathered with b*;
    // wide_gather sums the draw's masses of the bins before and after them.
    // (More members than the list holds: its resolve hands the row to the
    // CPU twin.) The bounds, a few exponentials and divisions a bin, one bin
    // an invocation; invocation 0 walks them.
    uint nt = row_state[o + R_WIDE_NT];
    uint n_draw = ((nt >> 16u) & 0x7FFFu) - (nt & 0x7FFFu);
    float top = uintBitsToFloat(row_state[o + R_WIDE_TOP]);
    float scale = uintBitsToFloat(row_state[o + R_WIDE_INVW]);
    float lowest = uintBitsToFloat(row_state[o + R_WIDE_L]);
    float temperature = param_f(row, P_TEMPERATURE);
    float ref = uintBitsToFloat(row_state[o + R_WIDE_MD]) - uintBitsToFloat(row_state[o + R_WIDE_MC]);
    for (uint b = t; b <= bstar; b += WG)
        s_md[b] = draw_mass_bounds(b, s_mc[b], top, scale, lowest, temperature, n_draw, ref);
    barrier();
    if (t != 0u) return;
    float bd = uintBitsToFloat(row_state[o + R_WIDE_BD]);
    vec2 a = vec2(bd);
    for (uint b = 0u; b < bstar; ++b) a += s_md[b];
    float u = float(row_uniform(row)) * 2.3283064365386963e-10;
    float lo = u * a.x * (1.0 - 1e-5), hi = u * (a.y + s_md[bstar].y) * (1.0 + 1e-5);
    uint clo = bstar, cend = bstar;
    vec2 cum = vec2(bd);
    for (uint b = 0u; b < bstar; ++b) {
        vec2 md = s_md[b];
        if (cum.y + md.y >= lo && cum.x <= hi) {
            clo = min(clo, b);
            cend = b + 1u;
        }
        cum += md;
    }
    row_state[o + R_WIDE_BSTAR] = bstar;
    row_state[o + R_WIDE_CLO] = clo;
    row_state[o + R_WIDE_CEND] = cend;
    row_state[o + R_WIDE_BEFORE] = floatBitsToUint(before);
    row_state[o + R_WIDE_COUNT] = 0u;
    row_state[o + R_WIDE_KLO] = 0xFFFFFFFFu;
    row_state[o + R_WIDE_KHI] = 0u;
    row_state[o + R_WIDE_PHASE] = WIDE_GATHER;
    atomicMax(dispatch_args[pc.args_base + WIDE_GATHER_ARGS], pc.n_chunks);
}

// decide's values: the WIDE_BINS bins and the mass below L, each the sum of
// its word over the chunks, taken by DECIDE_LANES invocations a value
// (chunks lane, lane + DECIDE_LANES, ...): on a GPU's 256 invocations 65
// values x 32 chunks are 11 independent loads an invocation, where one
// invocation a value waited on all 32 in turn. A CPU device's workgroup of 8
// has one invocation a value and more.
const uint DECIDE_VALUES = WIDE_BINS + 1u;
const uint DECIDE_LANES = WG >= 2u * DECIDE_VALUES ? WG / DECIDE_VALUES : 1u;

// Value b's word (WIDE_BINS: below L) summed over chunks c0, c0 + step, ...
uvec2 chunk_sum(uint row, uint b, uint c0, uint step) {
    uint w = b < WIDE_BINS ? WH_BIN(b) : WH_BELOW;
    uvec2 sum = uvec2(0u);
    for (uint c = c0; c < pc.n_chunks; c += step) sum = u64_add(sum, wide_hist_u64(wide_hist_at(row, c), w));
    return sum;
}

void stage_u64(uint b, uvec2 sum) {
    stage(2u * b, sum.x);
    stage(2u * b + 1u, sum.y);
}

// A row after the buffer (the collect tail armed it): the chunks' exact sums
// of each bin and of the mass below L (exact, so in any order and any split
// over the invocations), shared with the workgroup (two words a value). The
// whole workgroup.
void decide(uint row) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    if (DECIDE_LANES == 1u) {
        for (uint b = t; b < DECIDE_VALUES; b += WG) stage_u64(b, chunk_sum(row, b, 0u, 1u));
    } else {
        uint b = t / DECIDE_LANES;  // one round: WG / DECIDE_LANES >= DECIDE_VALUES
        s_scan[t] = b < DECIDE_VALUES ? chunk_sum(row, b, t % DECIDE_LANES, DECIDE_LANES) : uvec2(0u);
        barrier();
        if (t < DECIDE_VALUES) {
            uvec2 sum = uvec2(0u);
            for (uint l = 0u; l < DECIDE_LANES; ++l) sum = u64_add(sum, s_scan[t * DECIDE_LANES + l]);
            stage_u64(t, sum);
        }
    }
    barrier();
    uvec2 past = uvec2(0u);  // the bins' and below L's
    for (uint b = 0u; b <= WIDE_BINS; ++b) past = u64_add(past, uvec2(staged(2u * b), staged(2u * b + 1u)));
    for (uint b = t; b < WIDE_BINS; b += WG) s_mc[b] = fixed40_value(uvec2(staged(2u * b), staged(2u * b + 1u)));
    if ((row_state[o + R_WIDE_NT] & WIDE_DEFERRED) != 0u && cut_in_buffer(row, past)) return;  // uniform
    // choose reads s_mc, and R_WIDE_RC (a deferred row's, which
    // cut_in_buffer's invocation 0 wrote) in every invocation.
    memoryBarrierBuffer();
    barrier();
    choose(row);
}

// A direct row's grid (wide.glsl: WIDE_DIRECT): the window ln(V / (1 - p)) + 1
// below the maximum in WIDE_BINS - 1 bins, from the row's parameters only, so
// its scale is the same in every workgroup of the row (values of more than
// 2^20 / s, about 65536 at top-p 0.95 and V 151936, send the row to the CPU
// twin: decide_direct).
float direct_scale(uint row) {
    float p = param_f(row, P_TOP_P);
    return wide_scale(log(float(pc.vocab) / (1.0 - p)) + 1.0, 1.0, true);
}

// A chunk's maximum at the cut's temperatures (-inf: no finite logit), from its
// largest raw key; the row's from the row's (divisions are monotone).
float direct_max(uint max_key, uint row, uint n_cut) {
    bool finite = max_key > KEY_NEG_INF && max_key < KEY_POS_INF;
    return finite ? wide_divide(sieve_key_value(max_key), param_f(row, P_TEMPERATURE), n_cut, WIDE_CUT_DIVISIONS)
                  : NEG_INF;
}

// A direct row (s: the chunks' statistics merged): the row's status as the
// collect tail finds it (NaN or +inf, every logit masked, a finite logit the
// temperatures make infinite), then its chunks' bins shifted onto the row's
// grid (whole bins: the grid is exact) and scaled to the row's maximum, in
// chunk order (invocation 0, from the staged words: a chunk's largest key,
// its bins' masses, its mass below L), the total, and what the gather needs.
// The whole workgroup (the status and the grid are the same in every
// invocation: s and the row's parameters).
void decide_direct(uint row, RowStats s) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint step = row_step(row);
    float temperature = param_f(row, P_TEMPERATURE);
    uint n_all = WIDE_ALL_DIVISIONS, n_cut = WIDE_CUT_DIVISIONS;  // the chain's (row_analysis.cpp: ChainAnalysis::wide_divisions)
    uint status = row_status(s);
    // The temperatures divide the survivors only (llama.cpp's array holds
    // them; the twin's rule): the maximum always survives, and divisions only
    // grow the magnitudes or only shrink them, so the last one tells.
    float md = wide_divide(sieve_key_value(s.max_key), temperature, n_all, n_all);
    if (status == STATUS_OK && isinf(md)) status = STATUS_NON_FINITE;
    if (t == 0u) {
        row_state[o + R_STATUS] = status;
        row_state[o + R_FIRST_BAD] = s.first_bad;
    }
    if (status != STATUS_OK) {  // uniform
        if (t != 0u) return;
        write_result(row, 0xFFFFFFFFu, 0.0, 0.0, status, step, 1u);
        row_state[o + R_WIDE_PHASE] = WIDE_NONE;
        return;
    }
    float scale = direct_scale(row);
    float m = direct_max(s.max_key, row, n_cut);
    float top = wide_grid(m, scale);
    float lowest = (top - float(WIDE_BINS - 1u)) / scale;
    // Values the grid cannot hold exactly; or the window's bottom, below every
    // survivor, overflowing at the draw's temperatures: whether a survivor
    // does, only the CPU twin can tell.
    if (!wide_grid_fits(lowest, m, scale) || isinf(wide_divide(lowest, temperature, n_all - n_cut, n_all))) {
        if (t == 0u) wide_fallback(row, 1u);  // uniform
        return;
    }
    // Invocation 0's sums (an array indexed per lane: a CPU device's), shared
    // for choose once added.
    float mc[WIDE_BINS];
    for (uint b = 0u; b < WIDE_BINS; ++b) mc[b] = 0.0;
    vec2 below = vec2(0.0);  // compensated: the total's smallest part
    const uint per = CHUNK_WORDS;
    const uint batch = STAGE_WORDS / per;
    for (uint c0 = 0u; c0 < pc.n_chunks; c0 += batch) {
        uint chunks = min(batch, pc.n_chunks - c0);
        stage_chunks(row, c0, chunks);
        for (uint k = 0u; k < chunks && t == 0u; ++k) {
            float mcc = direct_max(staged(k * per), row, n_cut);
            if (isinf(mcc)) continue;  // no finite logit in the chunk
            float f = exp(mcc - m);
            uint shift = uint(top - wide_grid(mcc, scale));
            for (uint b = 0u; b < WIDE_BINS; ++b) {
                float x = uintBitsToFloat(staged(k * per + 1u + b)) * f;
                if (b + shift < WIDE_BINS) mc[b + shift] += x;
                else ksum_add(below, x);
            }
            ksum_add(below, uintBitsToFloat(staged(k * per + 1u + WIDE_BINS)) * f);
        }
        barrier();  // the next batch overwrites them
    }
    if (t == 0u) {
        vec2 total = below;
        for (uint b = 0u; b < WIDE_BINS; ++b) {
            ksum_add(total, mc[b]);
            s_mc[b] = mc[b];
        }
        float p = param_f(row, P_TOP_P);
        row_state[o + R_WIDE_KN] = 0xFFFFFFFFu;  // no buffer: every entry is after it
        row_state[o + R_WIDE_IDN] = 0u;
        row_state[o + R_WIDE_MC] = floatBitsToUint(m);
        row_state[o + R_WIDE_MD] = floatBitsToUint(md);
        row_state[o + R_WIDE_L] = floatBitsToUint(lowest);
        row_state[o + R_WIDE_INVW] = floatBitsToUint(scale);
        row_state[o + R_WIDE_TOP] = floatBitsToUint(top);
        row_state[o + R_WIDE_NT] = n_cut | WIDE_NT_DIRECT | (n_all << 16u);
        row_state[o + R_WIDE_RC] = floatBitsToUint(p * (total.x - total.y));
        row_state[o + R_WIDE_BD] = floatBitsToUint(0.0);
        row_state[o + R_WIDE_N] = 0u;
        row_state[o + R_WIDE_KEEP] = param_u(row, P_MIN_KEEP);
    }
    // choose reads these words and s_mc in every invocation.
    memoryBarrierBuffer();
    barrier();
    choose(row);
}

// A direct row's chunk statistics (the collect pass's, row_stats.comp's
// rules): its largest raw key (after bias and bitmask) and NaN/+inf, a max and
// a min per logit (the count and the first index read the share again, only in
// an invocation that saw one). No argmax (no direct row is greedy) and no
// smallest finite key (only the maximum's overflow decides: decide_direct).
RowStats direct_stats(uint row, uint begin, uint end, bool vmap, uint j_first, uint j_stop) {
    uint kmax = 0u, klo = 0xFFFFFFFFu;
    uint j = j_first;
    if (WIDE_ROWS_X4 != 0u) {
        // Four loads an iteration: a CPU device loads a vector lane by lane,
        // each waiting on memory; independent loads overlap (the collect
        // pass's loop, collect_chunk.glsl).
        uint q0 = (row * pc.stride + begin) / 4u;
        for (; j + 3u * RUN_LANES < j_stop; j += 4u * RUN_LANES) {
            vec4 fa = row_vec4(q0 + j), fb = row_vec4(q0 + j + RUN_LANES);
            vec4 fc = row_vec4(q0 + j + 2u * RUN_LANES), fd = row_vec4(q0 + j + 3u * RUN_LANES);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                uint ka = sieve_key(fa[c]), kb = sieve_key(fb[c]), kc = sieve_key(fc[c]), kd = sieve_key(fd[c]);
                kmax = max(max(kmax, ka), max(kb, max(kc, kd)));
                klo = min(min(klo, ka), min(kb, min(kc, kd)));
            }
        }
    }
    for (; j < j_stop; j += RUN_LANES) {
        vec4 f4 = vmap ? row_vec4((row * pc.stride + begin) / 4u + j) : row_quad(row, begin + 4u * j, end);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            uint k = sieve_key(f4[c]);
            // (Rows of whole vec4s end with a quad; row_quad repeats the
            // chunk's last logit past its end.)
            bool in_chunk = WIDE_ROWS_X4 != 0u || !vmap || begin + 4u * j + c < end;
            kmax = in_chunk ? max(kmax, k) : kmax;
            klo = in_chunk ? min(klo, k) : klo;
        }
    }
    RowStats s = row_stats_empty();
    s.max_key = kmax;
    s.argmax = 0u;
    s.finite = kmax > KEY_NEG_INF && kmax < KEY_POS_INF ? 1u : 0u;
    if (kmax >= KEY_POS_INF || klo < KEY_NEG_INF) {
        for (uint j = j_first; j < j_stop; j += RUN_LANES) {
            vec4 f4 = vmap ? row_vec4((row * pc.stride + begin) / 4u + j) : row_quad(row, begin + 4u * j, end);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                uint i = begin + 4u * j + c;
                uint k = sieve_key(f4[c]);
                bool bad = i < end && !key_valid(k);
                s.bad += bad ? 1u : 0u;
                s.first_bad = bad ? min(s.first_bad, i) : s.first_bad;
            }
        }
    }
    return s;
}

// The bins an invocation keeps: exact ones for a CPU device's buffer rows,
// float ones for direct rows; otherwise one entry, never used (a CPU device
// would otherwise clear and carry 256 of them per invocation for nothing; a
// GPU adds into s_bin_lo, s_bin_hi).
const uint EXACT_BINS = WIDE_DIRECT != 0u || INDEXED_BINS == 0u ? 1u : WIDE_BINS;
const uint FLOAT_BINS = WIDE_DIRECT != 0u ? WIDE_BINS : 1u;

// A direct row's chunk bins (float) and mass below L into the chunk's words,
// summed over the workgroup by columns: every invocation's bins into shared
// memory, WIDE_COLS at a time, then invocation b adds bin b's column in
// invocation order (the same sums on every run). (Direct rows are a CPU
// device's, where every shared access is a scalar access per lane; a tree's
// levels make several times as many.)
void store_float_bins(uint h, float mc[FLOAT_BINS], float below) {
    uint t = gl_LocalInvocationID.x;
    for (uint base = 0u; base < WIDE_BINS; base += WIDE_COLS) {
        [[unroll]] for (uint b = 0u; b < WIDE_COLS; ++b) s_ab[t][b] = floatBitsToUint(mc[base + b]);
        barrier();
        for (uint b = t; b < WIDE_COLS; b += WG) {
            float sum = 0.0;
            for (uint u = 0u; u < WG; ++u) sum += uintBitsToFloat(s_ab[u][b]);
            histograms[h + WH_BIN(base + b)] = floatBitsToUint(sum);
        }
        barrier();
    }
    s_ab[t][0] = floatBitsToUint(below);
    barrier();
    if (t == 0u) {
        float sum = 0.0;
        for (uint u = 0u; u < WG; ++u) sum += uintBitsToFloat(s_ab[u][0]);
        histograms[h + WH_BELOW] = floatBitsToUint(sum);
    }
}

// A buffer row's exact bins (two words each) and mass below L into the
// chunk's words; value b = WIDE_BINS is the mass below L. Integer sums,
// exact in any order. A GPU's bins are the workgroup's already (s_bin_lo,
// s_bin_hi): each invocation adds its mass below L (deferred rows; one
// atomic a subgroup where subgroup arithmetic exists), and invocation b
// stores value b. A CPU device's by columns, half of WIDE_COLS values a
// round (low and high words).
void store_exact_bins(uint h, uint mlo[EXACT_BINS], uint mhi[EXACT_BINS], uvec2 below) {
    uint t = gl_LocalInvocationID.x;
    if (INDEXED_BINS == 0u) {
#ifdef SIEVE_SUBGROUP
        below = subgroup_add_u64(below);
        if (!subgroupElect()) below = uvec2(0u);
#endif
        if (below != uvec2(0u)) U64_ATOMIC_ADD(s_bin_lo[WIDE_BINS], s_bin_hi[WIDE_BINS], below);
        barrier();
        for (uint b = t; b <= WIDE_BINS; b += WG)
            store_wide_hist_u64(h, b < WIDE_BINS ? WH_BIN(b) : WH_BELOW, uvec2(s_bin_lo[b], s_bin_hi[b]));
        return;
    }
    const uint values = WIDE_COLS / 2u;
    for (uint base = 0u; base <= WIDE_BINS; base += values) {
        [[unroll]] for (uint c = 0u; c < values; ++c) {
            uint b = min(base + c, WIDE_BINS - 1u);
            uvec2 m = base + c < WIDE_BINS ? uvec2(mlo[b], mhi[b]) : (base + c == WIDE_BINS ? below : uvec2(0u));
            s_ab[t][2u * c] = m.x;
            s_ab[t][2u * c + 1u] = m.y;
        }
        barrier();
        for (uint c = t; c < values && base + c <= WIDE_BINS; c += WG) {
            uvec2 sum = uvec2(0u);
            for (uint u = 0u; u < WG; ++u) {
                sum = u64_add(sum, uvec2(s_ab[u][2u * c], 0u));
                sum.y += s_ab[u][2u * c + 1u];
            }
            store_wide_hist_u64(h, base + c < WIDE_BINS ? WH_BIN(base + c) : WH_BELOW, sum);
        }
        barrier();
    }
}

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    uint o = row * ROW_STRIDE;
    // Uniform in the workgroup. Direct rows: every row of the call (the host's choice).
    if (WIDE_DIRECT == 0u && row_state[o + R_WIDE_PHASE] != WIDE_HIST) return;
    bind_row(row);
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);
    bool vmap = WIDE_ROWS_X4 != 0u || (!ROW_INPUTS && (pc.stride & 3u) == 0u);
    // Quads either way: a row read element by element adds in the same order
    // as one read four at a time, so their sums (and draws) are the same.
    uint n = (end - begin + 3u) / 4u;
    uint j_first, j_stop;  // contiguous stretches (stretch.glsl)
    stretch_share(0u, n, j_first, j_stop);
    float temperature = param_f(row, P_TEMPERATURE);

    // The bins: bin 0 at grid index `top`, values below `lowest` left out
    // (deferred rows sum their mass), masses exp(v - mcx); only entries after
    // the buffer (kn, idn).
    uint kn, idn, n_cut;
    float top, scale, mcx, lowest;
    bool deferred;
    RowStats stats;
    if (WIDE_DIRECT != 0u) {
        // The chunk's statistics and maximum first; its bins are anchored at
        // its own maximum (decide_direct shifts them onto the row's grid). A
        // chunk with NaN or +inf (the row fails) or no finite logit sums nothing.
        stats = wg_reduce_row_stats(direct_stats(row, begin, end, vmap, j_first, j_stop));
        n_cut = WIDE_CUT_DIVISIONS;
        kn = 0xFFFFFFFFu;
        idn = 0u;
        scale = direct_scale(row);
        mcx = direct_max(stats.max_key, row, n_cut);
        top = wide_grid(mcx, scale);
        lowest = (top - float(WIDE_BINS - 1u)) / scale;
        deferred = true;
        if (t == 0u) store_chunk_stats(row, chunk, stats);  // (no overflow count: row_stats_empty's 0)
        if (stats.bad != 0u || stats.finite == 0u) {
            j_stop = j_first;  // nothing to bin (uniform)
            mcx = 0.0;
        }
    } else {
        kn = row_state[o + R_WIDE_KN];
        idn = row_state[o + R_WIDE_IDN];
        mcx = uintBitsToFloat(row_state[o + R_WIDE_MC]);
        lowest = uintBitsToFloat(row_state[o + R_WIDE_L]);
        scale = uintBitsToFloat(row_state[o + R_WIDE_INVW]);
        top = uintBitsToFloat(row_state[o + R_WIDE_TOP]);
        uint nt = row_state[o + R_WIDE_NT];
        n_cut = nt & 0x7FFFu;
        deferred = (nt & WIDE_DEFERRED) != 0u;
    }

    // Buffer rows: each member's exact 40-bit mass at the cut against the
    // row's maximum (sieve_mass), added into its bin in two words (mlo, mhi)
    // and, for deferred rows, below L (the total). Direct rows (a CPU device,
    // one chunking): float masses against the chunk's own maximum (mc,
    // below_f; decide_direct rescales them).
    uint mlo[EXACT_BINS], mhi[EXACT_BINS];
    float mc[FLOAT_BINS];
    [[unroll]] for (uint b = 0u; b < EXACT_BINS; ++b) {
        mlo[b] = 0u;
        mhi[b] = 0u;
    }
    [[unroll]] for (uint b = 0u; b < FLOAT_BINS; ++b) mc[b] = 0.0;
    if (INDEXED_BINS == 0u) {
        for (uint b = t; b < SHARED_BINS; b += WG) {
            s_bin_lo[b] = 0u;
            s_bin_hi[b] = 0u;
        }
        barrier();
    }
    uvec2 below = uvec2(0u);
    float below_f = 0.0;
// The logits of quad J (F4) into the bins, in order (the float sums, and so
// the draws, do not depend on how many quads a loop trip loads).
#define BIN_QUAD(F4, J)                                                                         \
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {                                                 \
        uint i = begin + 4u * (J) + c;                                                          \
        float x = (F4)[c];                                                                      \
        /* masked (the row has no NaN/+inf: it failed, or this chunk sums nothing) */         \
        bool live = i < end && !isinf(x);                                                       \
        float v = wide_divide(x, temperature, n_cut, WIDE_CUT_DIVISIONS);                       \
        live = live && (WIDE_DIRECT != 0u || wide_after(sieve_key(v), i, kn, idn));             \
        bool under = live && deferred && v < lowest;                                            \
        live = live && v >= lowest;                                                             \
        if (WIDE_DIRECT != 0u) {                                                                \
            /* Adding 0 to a bin leaves it as it was (masses are >= 0). */                      \
            float wc = exp(v - mcx);                                                            \
            below_f += under ? wc : 0.0;                                                        \
            mc[wide_bin(v, top, scale)] += live ? wc : 0.0;                                     \
        } else {                                                                                \
            uvec2 q = live || under ? sieve_mass(v, mcx) : uvec2(0u);                           \
            below = u64_add(below, under ? q : uvec2(0u));                                      \
            uint carry;                                                                         \
            if (INDEXED_BINS != 0u) {                                                           \
                uint bin = wide_bin(v, top, scale);                                             \
                mlo[bin] = uaddCarry(mlo[bin], live ? q.x : 0u, carry);                         \
                mhi[bin] += (live ? q.y : 0u) + carry;                                          \
            } else if (live && q != uvec2(0u)) {                                                \
                uint bin = wide_bin(v, top, scale);                                             \
                U64_ATOMIC_ADD(s_bin_lo[bin], s_bin_hi[bin], q)                                 \
            }                                                                                   \
        }                                                                                       \
    }
    FOR_WIDE_QUADS(row, begin, end, vmap, j_first, j_stop, BIN_QUAD)

    uint h = wide_hist_at(row, chunk);
    if (WIDE_DIRECT != 0u) store_float_bins(h, mc, below_f);
    else store_exact_bins(h, mlo, mhi, below);
    if (!last_to_arrive(row)) return;
    if (WIDE_DIRECT != 0u) {
        decide_direct(row, merge_chunk_stats(row, pc.n_chunks));
    } else {
        decide(row);
    }
}
