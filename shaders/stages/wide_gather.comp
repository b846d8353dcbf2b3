#version 450
#extension GL_GOOGLE_include_directive : require
// A top-p cut past the candidate buffer, pass 3 of 3 (wide.glsl): the members
// of the bins wide_histogram chose go to the row's list (one atomic per
// invocation); the last workgroup of the row finds the exact cut inside b*
// and draws: the buffer, a whole bin before b*, or b* up to the cut.
#include "common.glsl"
#include "row.glsl"
#include "arrive.glsl"
#include "result.glsl"
#include "bitonic.glsl"
#include "u64.glsl"
#include "wg_scan.glsl"
#include "wide.glsl"
#include "wide_draw.glsl"
#include "stretch.glsl"

// The logits four at a time (wide_histogram.comp says why).
#include "logits4.glsl"
// Rows of whole vec4s without bias or bitmask (pipelines.cpp builds this
// variant for them): the vec4 map only. A CPU device runs both maps' loads
// under a lane mask when the choice is left to run time.
layout(constant_id = SPEC_WIDE_ROWS_X4) const uint WIDE_ROWS_X4 = 0u;
// Entries an invocation holds before writing them (main): CPU devices only,
// where a local array indexed per lane is cheap (common.glsl: INDEXED_BINS);
// 512 at the 8 invocations a CPU device runs this pass with (pipelines.cpp).
const uint LOCAL_TAKES = INDEXED_BINS != 0u ? 4096u / WG : 0u;
// Elsewhere the workgroup stages its first CAP taken entries in shared
// memory (c_key, c_id: the resolve's sort buffer, free until then), one
// shared atomic a taken entry, and writes them side by side at one atomic on
// the row's count (main); entries past them are found by a second read.
const bool STAGE_TAKES = LOCAL_TAKES == 0u;

// The row's constants, read once per workgroup. The gathered bins: b* and
// the run [g_clo, g_cend) before it that the draw can land in (empty: both b*).
uint g_kn, g_idn, g_n_cut, g_n_draw, g_bstar, g_clo, g_cend;
float g_top, g_mc, g_md, g_lowest, g_scale, g_temperature;

void load_row(uint row) {
    uint o = row * ROW_STRIDE;
    g_kn = row_state[o + R_WIDE_KN];
    g_idn = row_state[o + R_WIDE_IDN];
    g_mc = uintBitsToFloat(row_state[o + R_WIDE_MC]);
    g_md = uintBitsToFloat(row_state[o + R_WIDE_MD]);
    g_lowest = uintBitsToFloat(row_state[o + R_WIDE_L]);
    g_scale = uintBitsToFloat(row_state[o + R_WIDE_INVW]);
    g_top = uintBitsToFloat(row_state[o + R_WIDE_TOP]);
    uint nt = row_state[o + R_WIDE_NT];
    g_n_cut = nt & 0x7FFFu;
    g_n_draw = ((nt >> 16u) & 0x7FFFu) - g_n_cut;
    g_temperature = param_f(row, P_TEMPERATURE);
    g_bstar = row_state[o + R_WIDE_BSTAR];
    g_clo = row_state[o + R_WIDE_CLO];
    g_cend = row_state[o + R_WIDE_CEND];
}

// ---- the gather ---------------------------------------------------------------

// Logit i (value x) at the cut's temperatures: its value v and bin, and
// whether it is a member of some bin (finite, at or above L, after the buffer).
bool wide_member(float x, uint i, out float v, out uint bin) {
    v = wide_divide(x, g_temperature, g_n_cut, WIDE_CUT_DIVISIONS);
    bin = wide_bin(v, g_top, g_scale);
    return !isinf(x) && v >= g_lowest && (WIDE_DIRECT != 0u || wide_after(sieve_key(v), i, g_kn, g_idn));
}

// Logit i (value x) belongs to a gathered bin: its key at the cut's
// temperatures, and its bin.
bool taken(float x, uint i, out uint key, out uint bin) {
    float v;
    bool live = wide_member(x, i, v, bin);
    key = sieve_key(v);
    return live && wide_gathered(bin, g_bstar, g_clo, g_cend);
}

// The first read's view of logit i (value x): whether it is taken (as
// taken() says) and, when it lies in a bin before b* that is not gathered,
// its exact mass at the draw's temperatures added to `before_run` (bins
// before the run) or `after_run` (between it and b*): the resolve needs
// those bins' draw masses only summed (wide_histogram only bounded them).
// One evaluation of the value and the bin for both. (inside: i is in the
// chunk; selects rather than a branch around the call.)
// Direct rows (a CPU device's, one fixed chunking) add float masses into
// `direct` instead (before, after), an invocation's own sums in its order:
// cheaper per logit there, and as reproducible.
// Its key at the cut's temperatures and its bin come out with it.
bool take_and_sum(float x, uint i, bool inside, inout uvec2 before_run, inout uvec2 after_run, inout vec2 direct,
                  out uint key, out uint bin) {
    float v;
    bool live = wide_member(x, i, v, bin) && inside;
    key = sieve_key(v);
    float vd = wide_divide(v, g_temperature, g_n_draw, WIDE_ALL_DIVISIONS);
    if (WIDE_DIRECT != 0u) {
        float wd = exp(vd - g_md);
        direct += vec2(live && bin < g_clo ? wd : 0.0, live && bin >= g_cend && bin < g_bstar ? wd : 0.0);
    } else {
        bool outside = live && (bin < g_clo || (bin >= g_cend && bin < g_bstar));
        uvec2 qd = outside ? sieve_mass(vd, g_md) : uvec2(0u);
        before_run = u64_add(before_run, bin < g_clo ? qd : uvec2(0u));
        after_run = u64_add(after_run, bin < g_clo ? uvec2(0u) : qd);
    }
    return live && wide_gathered(bin, g_bstar, g_clo, g_cend);
}

// b*'s members' key range [kmin, kmax], widened by a taken entry's key when
// it is b*'s (the resolve's cut selection splits that range).
void widen_bstar_keys(uint bin, uint key, inout uint kmin, inout uint kmax) {
    kmin = bin == g_bstar ? min(kmin, key) : kmin;
    kmax = bin == g_bstar ? max(kmax, key) : kmax;
}

// ---- selection inside the list ----------------------------------------------------

// Exact-mass selection levels over the list, by one workgroup: the members'
// keys split into 256 equal ranges, masses added exactly in shared memory
// (40-bit fixed point, 64-bit sums from 32-bit atomics: the order does not
// matter), the range holding the target kept; 4 levels reach one key. The last
// range (at most SEL_FINAL_MAX members) is sorted canonically and walked.
const uint SEL_BINS = 256u;
// (w_lo, w_hi: also the resolve's sums of the gathered bins, by bin.)
const uint W_SLOTS = SEL_BINS > WIDE_BINS ? SEL_BINS : WIDE_BINS;
shared uint w_cnt[SEL_BINS], w_lo[W_SLOTS], w_hi[W_SLOTS];
shared uint w_klo, w_khi, w_state, w_clamp, w_fill, w_token, w_key, w_bin, w_in_buffer;
// On a GPU the cut's selection (g_cut_select) also sums the draw's masses of
// b*'s members up to the cut (KEPT_BY_LEVELS): a level's ranges' (w_dlo,
// w_dhi), those before the chosen range added to w_kept as each level
// decides, then the final range's sorted members up to the cut.
shared uint w_dlo[SEL_BINS], w_dhi[SEL_BINS], w_kept_lo, w_kept_hi;
shared uint w_staged;  // main: entries staged in c_key, c_id (STAGE_TAKES), then the row's list slot of the first
shared uint w_chosen;  // a level's chosen range
shared uint w_found;   // the final range's member found (its index after the sort)
shared uvec2 w_target, w_q;
shared float w_total, w_rem;

// Levels go on until a range holds at most this many members: another level
// (one read of the list) costs less on a CPU device than sorting a few
// thousand entries in one workgroup.
const uint SEL_FINAL_MAX = CAP < 2u * WG ? CAP : 2u * WG;

const uint SEL_GOING = 0u;
const uint SEL_FINAL = 1u;  // the range [w_klo, w_khi] holds at most SEL_FINAL_MAX members
const uint SEL_FOUND = 2u;  // w_token, w_key, w_q
const uint SEL_EMPTY = 3u;  // no member
const uint SEL_TIE = 4u;    // more than SEL_FINAL_MAX members share one key (select_resolving_ties)

// Inside a tie group (more than SEL_FINAL_MAX members of one key): only members of key
// g_tie_key, each of mass 1, keyed ~id (ascending id = descending key).
uint g_tie_key = 0u;

// The cut's selection over b* (resolve): its members' key range is the one the
// gather's workgroups found (R_WIDE_KLO, R_WIDE_KHI: g_star_klo, g_star_khi),
// so it reads the list for none, and it sums the draw's masses of the
// members it keeps (w_kept), which the draw's total needs: two of the list's
// reads fewer (each a pass over thousands of entries by one workgroup).
bool g_cut_select = false;
uint g_star_klo, g_star_khi;
// A CPU device sums the kept draw masses in registers instead: the members
// before the final range as its read passes them, then the sorted members up
// to the cut (after a tie group's selection, one read of its own:
// kept_draw_mass). There each member's two shared 64-bit atomics in the
// levels run lane after lane (lavapipe, top-p at 151936: 2.5% of a call's
// instructions). The same members and integer masses either way.
const bool KEPT_BY_LEVELS = INDEXED_BINS == 0u;
// The resolve's sums of the gathered run's bins in registers, a CPU
// device's (one entry, never used, on a GPU).
const uint RUN_PARTS = INDEXED_BINS != 0u ? WIDE_BINS : 1u;

// The draw's mass of a member at the cut's key kc.
uvec2 draw_mass_of_cut_key(uint kc) {
    return sieve_mass(wide_divide(sieve_key_value(kc), g_temperature, g_n_draw, WIDE_ALL_DIVISIONS), g_md);
}

// Adds the invocation's part of the kept draw mass into w_kept.
void add_kept(uvec2 part) {
    if (part != uvec2(0u)) U64_ATOMIC_ADD(w_kept_lo, w_kept_hi, part);
}

// Entries j, j + WG, ... of the list, LIST_LOADS of them (those below m; the
// others 0), all loaded before any is used: the list lives in device memory
// and every selection level reads it again, so on a GPU a loop that used
// each entry as it loaded it would wait for memory once an entry. Eight: the
// bench row's b* (about 8100 entries at 151936, 32 an invocation) in four
// memory round trips a read, for 16 registers. A CPU device (INDEXED_BINS)
// takes one at a time: four cost it more (lavapipe, top-p at 151936:
// wide_gather 299 us against 280); the arrays are sized by the
// specialization constant, one entry long there (as history.comp's).
const uint LIST_LOADS = INDEXED_BINS != 0u ? 1u : 8u;
void list_entries(uint list, uint j, uint m, out uvec2 e[LIST_LOADS]) {
    [[unroll]] for (uint u = 0u; u < LIST_LOADS; ++u)
        e[u] = j + u * WG < m ? wide_pairs[list / 2u + j + u * WG] : uvec2(0u);
}

// A list entry as a selection sees it: in bin `bin`, not after the cut when
// one is given; its key at the cut's (draw = false) or the draw's
// temperatures (inside a tie group: ~id).
bool member_of(uvec2 entry, uint bin, bool draw, bool use_cut, uint cut_k, uint cut_id, out uint key, out uint id) {
    uint kc = entry.x;
    id = entry.y;
    float v = sieve_key_value(kc);
    key = kc;
    if (wide_bin(v, g_top, g_scale) != bin || (use_cut && wide_after(kc, id, cut_k, cut_id))) return false;
    if (draw) key = sieve_key(wide_divide(v, g_temperature, g_n_draw, WIDE_ALL_DIVISIONS));
    if (g_tie_key != 0u) {
        if (key != g_tie_key) return false;
        key = ~id;
    }
    return true;
}

float key_mass_ref(bool draw) { return draw ? g_md : g_mc; }

// The mass of a member by its key (member_of's) against `ref` (key_mass_ref:
// the cut's or the draw's maximum), 1 inside a tie group. A level computes it
// only for the members its range holds: after the first level that is a few
// of the list's thousands, and each is an exp.
uvec2 member_mass(uint key, float ref) {
    return g_tie_key != 0u ? uvec2(1u, 0u) : sieve_mass(sieve_key_value(key), ref);
}

// Item i of a selection's walk: a level's bin (members false: its summed mass,
// eligible when it has members) or the final range's i-th member in canonical
// order (c_key after the sort: its mass against `ref`, unit inside a tie
// group; the draw never lands on a zero mass).
uvec2 pick_item(bool members, uint i, float ref, bool strict, out bool eligible) {
    if (members) {
        uvec2 q = member_mass(c_key[i], ref);
        eligible = !strict || q != uvec2(0u);
        return q;
    }
    eligible = w_cnt[i] != 0u;
    return uvec2(w_lo[i], w_hi[i]);
}

shared uint w_last;

// Whether a cumulative mass passes the target: exceeds it (strict, the
// draw) or reaches it (top-p).
bool passes(uvec2 cum, uvec2 tg, bool strict) { return strict ? u64_less(tg, cum) : !u64_less(cum, tg); }

// Of items [0, n) (pick_item) in order, the first eligible one at which the
// cumulative mass passes tg (strict: exceeds it, the draw; else reaches it,
// top-p), returned (n: none, always under a clamp), with `rest`, tg less the
// mass before it, and `last`, the last eligible item (n: none). What a walk
// on one invocation finds (the sums are exact), by the whole workgroup: each
// invocation sums its block (wg_block), a prefix sum places tg, and the
// blocks whose end passes it walk their own items; the first offer wins
// (on one invocation the walk is a shared read after another: up to 256
// bins a level and twice the workgroup's members with an exp each, twice a
// row). Uniform results; ends with a barrier.
uint pick_first(bool members, uint n, uvec2 tg, bool strict, float ref, bool clamp, out uvec2 rest, out uint last) {
    uint t = gl_LocalInvocationID.x;
    uint first, end;
    wg_block(n, first, end);
    uvec2 part = uvec2(0u);
    uint mine_last = 0u;  // 1 + the block's last eligible item (0: none)
    for (uint i = first; i < end; ++i) {
        bool ok;
        part = u64_add(part, pick_item(members, i, ref, strict, ok));
        if (ok) mine_last = i + 1u;
    }
    if (t == 0u) {  // ordered before the offers by the scan's barriers
        s_first = n;
        w_last = 0u;
    }
    uvec2 total;
    uvec2 before = wg_exclusive_u64(part, total);
    if (mine_last != 0u) atomicMax(w_last, mine_last);
    uvec2 block_end = u64_add(before, part);
    if (!clamp && passes(block_end, tg, strict)) {
        uvec2 acc = before;
        for (uint i = first; i < end; ++i) {
            bool ok;
            uvec2 q = pick_item(members, i, ref, strict, ok);
            uvec2 next = u64_add(acc, q);
            if (ok && passes(next, tg, strict)) {
                s_scan[t] = u64_sub(tg, acc);  // free after the scan's last barrier
                wg_first_offer(i);
                break;
            }
            acc = next;
        }
    }
    uint pick = wg_first_end();
    // The winner's block: wg_block's split (its offer was its block's first).
    rest = pick < n ? s_scan[pick / ((n + WG - 1u) / WG)] : tg;
    last = w_last == 0u ? n : w_last - 1u;
    barrier();
    return pick;
}

// The member (canonical order) at which the cumulative mass passes `target`:
// strict (the draw) the first whose cumulative mass exceeds it, else (top-p)
// the first whose cumulative mass reaches it; rounding past the end gives the
// last member with mass. Sets w_state (SEL_FOUND, SEL_EMPTY or SEL_TIE).
void select_member(uint list, uint m, uint bin, bool draw, bool use_cut, uint cut_k, uint cut_id, uvec2 target,
                   bool strict) {
    uint t = gl_LocalInvocationID.x;
    // The members' key range first (no mass needed): the levels split only
    // that. The cut's comes from the gather.
    bool gathered_range = g_cut_select && g_tie_key == 0u;  // uniform
    bool sum_kept = gathered_range && KEPT_BY_LEVELS;   // by the levels
    bool kept_before = gathered_range && !KEPT_BY_LEVELS;  // by the final range's read
    if (t == 0u) {
        w_klo = gathered_range ? g_star_klo : 0xFFFFFFFFu;
        w_khi = gathered_range ? g_star_khi : 0u;
        w_state = SEL_GOING;
        w_clamp = 0u;
        w_target = target;
        if (gathered_range) {  // not in a tie group's selection: it adds to the cut's sum
            w_kept_lo = 0u;
            w_kept_hi = 0u;
        }
    }
    barrier();
    uint kmin = 0xFFFFFFFFu, kmax = 0u;
    for (uint j0 = t; !gathered_range && j0 < m; j0 += LIST_LOADS * WG) {
        uvec2 e[LIST_LOADS];
        list_entries(list, j0, m, e);
        [[unroll]] for (uint u = 0u; u < LIST_LOADS; ++u) {
            uint k, id;
            if (j0 + u * WG >= m || !member_of(e[u], bin, draw, use_cut, cut_k, cut_id, k, id)) continue;
            kmin = min(kmin, k);
            kmax = max(kmax, k);
        }
    }
    if (kmin <= kmax) {
        atomicMin(w_klo, kmin);
        atomicMax(w_khi, kmax);
    }
    barrier();
    if (w_klo > w_khi) {  // uniform: no member
        if (t == 0u) w_state = SEL_EMPTY;
        barrier();
        return;
    }
    for (uint level = 0u; level < 4u; ++level) {
        if (w_state == SEL_GOING) {  // uniform: shared, after a barrier
            uint klo = w_klo, khi = w_khi;
            uint step = (khi - klo) / SEL_BINS + 1u;
            for (uint b = t; b < SEL_BINS; b += WG) {
                w_cnt[b] = 0u;
                w_lo[b] = 0u;
                w_hi[b] = 0u;
                w_dlo[b] = 0u;
                w_dhi[b] = 0u;
            }
            barrier();
            for (uint j0 = t; j0 < m; j0 += LIST_LOADS * WG) {
                uvec2 e[LIST_LOADS];
                list_entries(list, j0, m, e);
                [[unroll]] for (uint u = 0u; u < LIST_LOADS; ++u) {
                    uint k, id;
                    if (j0 + u * WG >= m || !member_of(e[u], bin, draw, use_cut, cut_k, cut_id, k, id) || k < klo ||
                        k > khi)
                        continue;
                    uint b = (khi - k) / step;  // bin 0: the largest keys
                    atomicAdd(w_cnt[b], 1u);
                    U64_ATOMIC_ADD(w_lo[b], w_hi[b], member_mass(k, key_mass_ref(draw)));
                    if (sum_kept) {
                        uvec2 qd = draw_mass_of_cut_key(k);
                        U64_ATOMIC_ADD(w_dlo[b], w_dhi[b], qd);
                    }
                }
            }
            barrier();
            uvec2 tg;
            uint last;
            uint chosen = pick_first(false, SEL_BINS, w_target, strict, 0.0, w_clamp != 0u, tg, last);
            if (t == 0u) {
                if (chosen == SEL_BINS && last != SEL_BINS) {
                    chosen = last;  // rounding past the end: the last member
                    w_clamp = 1u;
                }
                w_chosen = chosen;
                if (chosen == SEL_BINS) {
                    w_state = SEL_EMPTY;
                } else {
                    if (w_clamp == 0u) w_target = tg;
                    uint dlo = chosen * step;
                    uint dhi = min(dlo + (step - 1u), khi - klo);
                    w_khi = khi - dlo;
                    w_klo = khi - dhi;
                    if (w_cnt[chosen] <= SEL_FINAL_MAX) w_state = SEL_FINAL;
                    else if (w_klo == w_khi) {
                        w_state = SEL_TIE;
                        w_fill = w_cnt[chosen];
                    }
                }
            }
            barrier();
            if (sum_kept) {  // uniform: the ranges before the chosen one are kept whole
                uvec2 part = uvec2(0u);
                uint before = w_state == SEL_EMPTY ? 0u : w_chosen;
                for (uint b = t; b < before; b += WG) part = u64_add(part, uvec2(w_dlo[b], w_dhi[b]));
                add_kept(part);
                barrier();  // read before the next level clears them
            }
        }
    }
    if (w_state == SEL_GOING) {  // 4 levels of 8 bits always end on one key
        if (t == 0u) w_state = SEL_EMPTY;
        barrier();
    }
    if (w_state != SEL_FINAL) return;  // uniform
    if (t == 0u) w_fill = 0u;
    barrier();
    uint klo = w_klo, khi = w_khi;
    uvec2 kept = uvec2(0u);  // kept_before: the members before the range (larger keys), kept whole
    for (uint j0 = t; j0 < m; j0 += LIST_LOADS * WG) {
        uvec2 e[LIST_LOADS];
        list_entries(list, j0, m, e);
        [[unroll]] for (uint u = 0u; u < LIST_LOADS; ++u) {
            uint k, id;
            if (j0 + u * WG >= m || !member_of(e[u], bin, draw, use_cut, cut_k, cut_id, k, id) || k < klo) continue;
            if (k > khi) {
                if (kept_before) kept = u64_add(kept, draw_mass_of_cut_key(k));
                continue;
            }
            uint slot = atomicAdd(w_fill, 1u);
            c_key[slot] = k;
            c_id[slot] = id;
        }
    }
    barrier();
    uint n = w_fill;
    sort_prefix(n);
    float ref = key_mass_ref(draw);
    uvec2 rest;
    uint last;
    uint pick = pick_first(true, n, w_target, strict, ref, w_clamp != 0u, rest, last);
    if (t == 0u) {
        // Rounding past the end (or a clamp): the last member with mass; none
        // has any: the last member, with mass 0.
        uint i = pick < n ? pick : (last < n ? last : n - 1u);
        bool ok;
        w_token = c_id[i];
        w_key = c_key[i];
        w_q = pick < n || last < n ? pick_item(true, i, ref, strict, ok) : uvec2(0u);
        w_state = SEL_FOUND;
        w_found = i;
    }
    barrier();
    if (gathered_range) {  // uniform: the sorted members up to the cut are kept
        uvec2 part = kept;
        for (uint j = t; j <= w_found; j += WG) part = u64_add(part, draw_mass_of_cut_key(c_key[j]));
        add_kept(part);
        barrier();
    }
}

// The draw's masses of b*'s members up to the cut (cut_k, cut_id), summed
// exactly by the workgroup (uniform): a CPU device's after a tie group's
// selection (KEPT_BY_LEVELS).
uvec2 kept_draw_mass(uint list, uint m, uint bstar, uint cut_k, uint cut_id) {
    uvec2 part = uvec2(0u);
    for (uint j0 = gl_LocalInvocationID.x; j0 < m; j0 += LIST_LOADS * WG) {
        uvec2 e[LIST_LOADS];
        list_entries(list, j0, m, e);
        [[unroll]] for (uint u = 0u; u < LIST_LOADS; ++u) {
            uint k, id;
            if (j0 + u * WG < m && member_of(e[u], bstar, false, true, cut_k, cut_id, k, id))
                part = u64_add(part, draw_mass_of_cut_key(k));
        }
    }
    return wg_sum_u64(part);
}

shared uint w_rank;

// select_member, and inside a tie group the member the target falls on: every
// member has the group's mass q, so it is the j-th in id order (j = target / q
// for the draw, the first j with (j + 1) q >= target for top-p), found by the
// same levels over ~id with unit masses.
void select_resolving_ties(uint list, uint m, uint bin, bool draw, bool use_cut, uint cut_k, uint cut_id, uvec2 target,
                           bool strict) {
    uint t = gl_LocalInvocationID.x;
    g_tie_key = 0u;
    select_member(list, m, bin, draw, use_cut, cut_k, cut_id, target, strict);
    if (w_state != SEL_TIE) return;  // uniform
    uint tie_key = w_klo;
    if (t == 0u) {
        uvec2 q = sieve_mass(sieve_key_value(tie_key), key_mass_ref(draw));
        uvec2 tg = w_target;
        uint count = w_fill;
        uint j = count - 1u;
        if (w_clamp == 0u && q != uvec2(0u)) {
            uvec2 r = strict ? u64_div(tg, q) : (tg == uvec2(0u) ? uvec2(0u) : u64_div(u64_sub(tg, uvec2(1u, 0u)), q));
            j = (r.y != 0u || r.x >= count) ? count - 1u : r.x;
        }
        w_rank = j;
        w_q = q;
    }
    barrier();
    uvec2 q_each = w_q;
    g_tie_key = tie_key;
    select_member(list, m, bin, draw, use_cut, cut_k, cut_id, uvec2(w_rank, 0u), true);
    g_tie_key = 0u;
    if (t == 0u && w_state == SEL_FOUND) {
        w_key = tie_key;
        w_q = q_each;
        // The cut's: the group's members up to the cut, w_rank + 1 of them
        // in id order, each of one draw mass, are kept.
        if (g_cut_select && KEPT_BY_LEVELS) add_kept(u64_mul_u32(draw_mass_of_cut_key(tie_key), w_rank + 1u));
    }
    barrier();
    if (g_cut_select && !KEPT_BY_LEVELS && w_state == SEL_FOUND) {  // uniform
        uvec2 kept = kept_draw_mass(list, m, bin, w_key, w_token);
        if (t == 0u) {
            w_kept_lo = kept.x;
            w_kept_hi = kept.y;
        }
        barrier();
    }
}

// ---- the resolve ------------------------------------------------------------------

void resolve(uint row) {
    uint t = gl_LocalInvocationID.x;
    uint o = row * ROW_STRIDE;
    uint step = row_step(row);
    uint list = wide_list_at(row);
    // The gathered bins held more members than the list: the CPU twin
    // (wide_histogram does not count them; uniform: written before arriving).
    if (row_state[o + R_WIDE_COUNT] > pc.wide_cap) {
        if (t == 0u) wide_fallback(row, wide_gather_passes(row));
        return;
    }
    uint m = row_state[o + R_WIDE_COUNT];
    uint bstar = row_state[o + R_WIDE_BSTAR];
    float rc = uintBitsToFloat(row_state[o + R_WIDE_RC]);
    float before = uintBitsToFloat(row_state[o + R_WIDE_BEFORE]);

    // 1. The cut: the member of b* where the mass reaches what the buffer and
    //    the bins before it left (llama.cpp's cum_sum >= p, min_keep checked
    //    by wide_histogram), and the draw's masses of b*'s kept part summed
    //    exactly as it goes (w_kept).
    g_star_klo = row_state[o + R_WIDE_KLO];
    g_star_khi = row_state[o + R_WIDE_KHI];
    g_cut_select = true;
    select_resolving_ties(list, m, bstar, false, false, 0u, 0u, fixed40(max(rc - before, 0.0)), false);
    g_cut_select = false;
    if (w_state != SEL_FOUND) {
        if (t == 0u) wide_fallback(row, wide_gather_passes(row));
        return;
    }
    uint cut_k = w_key, cut_id = w_token;
    uvec2 bstar_kept = uvec2(w_kept_lo, w_kept_hi);

    // 2. The draw's masses, summed exactly, of the gathered run's bins (slot
    //    b of w_lo/w_hi), where there is a run: on a CPU device each
    //    invocation adds its members by bin (an array indexed per lane),
    //    then one 64-bit atomic per bin; a GPU adds each member by shared
    //    atomics (its bins, 64, would make the array local memory).
    if (g_clo < g_cend) {  // uniform: the row's
        for (uint b = t; b < WIDE_BINS; b += WG) {
            w_lo[b] = 0u;
            w_hi[b] = 0u;
        }
        barrier();
        uvec2 part[RUN_PARTS];
        for (uint b = 0u; b < RUN_PARTS; ++b) part[b] = uvec2(0u);
        for (uint j0 = t; j0 < m; j0 += LIST_LOADS * WG) {
            uvec2 e[LIST_LOADS];
            list_entries(list, j0, m, e);
            [[unroll]] for (uint u = 0u; u < LIST_LOADS; ++u) {
                uint b = wide_bin(sieve_key_value(e[u].x), g_top, g_scale);
                if (j0 + u * WG < m && b >= g_clo && b < g_cend) {
                    uvec2 q = draw_mass_of_cut_key(e[u].x);
                    if (INDEXED_BINS != 0u) part[b] = u64_add(part[b], q);
                    else if (q != uvec2(0u)) U64_ATOMIC_ADD(w_lo[b], w_hi[b], q);
                }
            }
        }
        for (uint b = g_clo; INDEXED_BINS != 0u && b < g_cend; ++b) {
            if (part[b] != uvec2(0u)) U64_ATOMIC_ADD(w_lo[b], w_hi[b], part[b]);
        }
        barrier();
    }

    // 3. The draw over the survivors in canonical order: the buffer, the bins
    //    before the run (summed by the chunks), the run's bins, the bins
    //    between it and b* (summed), b*'s kept part. A target in a summed
    //    stretch means the histogram's bounds failed: the CPU twin.
    //    The chunks' sums outside the run, exact, are added by the whole
    //    workgroup (any order), and so is the buffer's stretch
    //    (wide_draw.glsl); invocation 0 walks the bins.
    uint n = row_state[o + R_WIDE_N];
    uint buf = wide_buffer_at(row);
    uvec2 before_run = uvec2(0u), after_run = uvec2(0u);
    for (uint c = t; c < pc.n_chunks; c += WG) {
        uint h = wide_hist_at(row, c);
        before_run = u64_add(before_run, wide_hist_u64(h, WH_BEFORE_RUN));
        after_run = u64_add(after_run, wide_hist_u64(h, WH_AFTER_RUN));
    }
    vec2 outside = vec2(fixed40_value(wg_sum_u64(before_run)), fixed40_value(wg_sum_u64(after_run)));
    // The total and the target: the same float steps in every invocation.
    float total = uintBitsToFloat(row_state[o + R_WIDE_BD]) + outside.x;
    for (uint b = g_clo; b < g_cend; ++b) total += fixed40_value(uvec2(w_lo[b], w_hi[b]));
    total += outside.y;
    total += fixed40_value(bstar_kept);
    float u = float(row_uniform(row)) * 2.3283064365386963e-10;
    uvec2 tg = fixed40(u * total);
    uvec2 block_before, block;
    uvec2 buffered = wide_block_sums(buf, 2u, n, g_md, block_before, block);
    buffer_draw_pick(buf, n, g_md, tg, block_before, block);
    if (t == 0u) {
        w_total = total;
        w_in_buffer = s_pick_hit;
        w_token = s_pick_token;
        w_q = s_pick_q;
        float rem = s_pick_hit != 0u ? 0.0 : fixed40_value(u64_sub(tg, buffered));
        uint bin = WIDE_BINS;  // WIDE_BINS: in a summed stretch
        if (rem >= outside.x) {
            rem -= outside.x;
            bin = bstar;
            for (uint b = g_clo; b < g_cend && bin == bstar; ++b) {
                float md = fixed40_value(uvec2(w_lo[b], w_hi[b]));
                if (rem < md) bin = b;
                else rem -= md;
            }
            if (bin == bstar) {
                if (rem < outside.y) bin = WIDE_BINS;
                else rem -= outside.y;
            }
        }
        w_bin = bin;
        w_rem = max(rem, 0.0);
    }
    barrier();
    if (w_in_buffer == 0u) {  // uniform
        uint bin = w_bin;
        if (bin == WIDE_BINS) {  // beyond what the histogram's bounds foresaw
            if (t == 0u) wide_fallback(row, wide_gather_passes(row));
            return;
        }
        select_resolving_ties(list, m, bin, true, bin == bstar, cut_k, cut_id, fixed40(w_rem), true);
        if (w_state != SEL_FOUND) {
            if (t == 0u) wide_fallback(row, wide_gather_passes(row));
            return;
        }
    }
    if (t == 0u) {
        float p = fixed40_value(w_q) / w_total;
        write_result(row, w_token, p, log(p), STATUS_OK, step, wide_gather_passes(row));
        advance_step(row, step);
        row_state[o + R_WIDE_PHASE] = WIDE_NONE;
    }
}

void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    uint o = row * ROW_STRIDE;
    if (row_state[o + R_WIDE_PHASE] != WIDE_GATHER) return;  // uniform in the workgroup
    bind_row(row);
    load_row(row);
    uint chunk = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint list = wide_list_at(row);

    // The taken entries are held while the chunk is read, then written to
    // the row's list: no global atomic per logit. On a GPU (STAGE_TAKES) the
    // workgroup's first CAP wait in shared memory, a slot each by a shared
    // atomic, and go to the list side by side at one atomic on the row's
    // count. On a CPU device (which runs a rare branch's atomic under a lane
    // mask for every logit) each invocation counts its own, and the ids of
    // its first LOCAL_TAKES wait in a local array: each logit's id is written
    // there by index whatever it is (slot `takes`, kept only when taken; slot
    // LOCAL_TAKES is scratch), which costs less there than reading the chunk
    // again. Either way an invocation's held entries are the first it took
    // (a shared slot past CAP stays past it: the count only grows), and those
    // past them are found by a second read, which takes them in the same
    // order and skips the held ones.
    uint begin = chunk * pc.chunk_size;
    uint end = min(begin + pc.chunk_size, pc.vocab);
    bool vmap = WIDE_ROWS_X4 != 0u || (!ROW_INPUTS && (pc.stride & 3u) == 0u);
    uint n = (end - begin + 3u) / 4u;  // quads either way (row_quad)
    uint takes = 0u;
    uvec2 before_run = uvec2(0u), after_run = uvec2(0u);  // draw masses of the bins before b* not gathered
    vec2 direct = vec2(0.0);  // direct rows' (take_and_sum)
    uint local_id[LOCAL_TAKES + 1u];  // ids only, the key computed again when written: one store per logit
    uint held = 0u;  // STAGE_TAKES: this invocation's entries staged
    uint kmin = 0xFFFFFFFFu, kmax = 0u;  // b*'s members' keys, as they are held or written
    uint j_first, j_stop;  // contiguous stretches (stretch.glsl)
    stretch_share(0u, n, j_first, j_stop);
    if (STAGE_TAKES) {
        if (t == 0u) w_staged = 0u;
        barrier();
    }
// The logits of quad J (F4), in order: taken, summed, their ids held.
#define TAKE_QUAD(F4, J)                                                                          \
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {                                                   \
        uint i = begin + 4u * (J) + c;                                                            \
        uint key, bin;                                                                            \
        bool take = take_and_sum((F4)[c], i, i < end, before_run, after_run, direct, key, bin);   \
        if (LOCAL_TAKES > 0u) {                                                                   \
            uint at = min(takes, LOCAL_TAKES);                                                    \
            local_id[at] = i;                                                                     \
        }                                                                                         \
        if (STAGE_TAKES && take) {                                                                \
            uint at = atomicAdd(w_staged, 1u);                                                    \
            if (at < CAP) {                                                                       \
                c_key[at] = key;                                                                  \
                c_id[at] = i;                                                                     \
                ++held;                                                                           \
                widen_bstar_keys(bin, key, kmin, kmax);                                           \
            }                                                                                     \
        }                                                                                         \
        takes += take ? 1u : 0u;                                                                  \
    }
    FOR_WIDE_QUADS(row, begin, end, vmap, j_first, j_stop, TAKE_QUAD)
    if (STAGE_TAKES) {
        // The staged entries, side by side (w_staged: their count, then
        // their first slot in the list).
        barrier();
        uint staged = min(w_staged, CAP);
        barrier();
        if (t == 0u) w_staged = staged > 0u ? atomicAdd(row_state[o + R_WIDE_COUNT], staged) : 0u;
        barrier();
        uint first = w_staged;
        for (uint e = t; e < staged; e += WG)
            if (first + e < pc.wide_cap) wide_pairs[list / 2u + first + e] = uvec2(c_key[e], c_id[e]);
    }
    uint slot = takes > held ? atomicAdd(row_state[o + R_WIDE_COUNT], takes - held) : 0u;
    if (LOCAL_TAKES > 0u) {
        held = min(takes, LOCAL_TAKES);
        for (uint e = 0u; e < held; ++e) {
            uint id = local_id[e];
            uint key, bin;
            taken(row_logit(row, id), id, key, bin);  // its key again (it was taken)
            if (slot + e < pc.wide_cap) wide_pairs[list / 2u + slot + e] = uvec2(key, id);
            widen_bstar_keys(bin, key, kmin, kmax);
        }
        slot += held;
    }
    takes -= held;
    uint skip = held;  // taken entries already written
    for (uint j = j_first; takes > 0u && j < j_stop; j += RUN_LANES) {
        vec4 f4 = vmap ? row_vec4((row * pc.stride + begin) / 4u + j) : row_quad(row, begin + 4u * j, end);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            uint i = begin + 4u * j + c;
            uint k, bin;
            if (i < end && taken(f4[c], i, k, bin)) {
                if (skip > 0u) {
                    --skip;
                } else {
                    if (slot < pc.wide_cap) {
                        wide_pairs[list / 2u + slot] = uvec2(k, i);
                    }
                    widen_bstar_keys(bin, k, kmin, kmax);
                    ++slot;
                    --takes;
                }
            }
        }
    }
    // The chunk's exact sums (the same for any split of the row) into its
    // words (wide.glsl); a direct row's invocation sums as fixed point first.
    if (WIDE_DIRECT != 0u) {
        before_run = fixed40(direct.x);
        after_run = fixed40(direct.y);
    }
    // b*'s key range: the workgroup's in w_klo, w_khi (cleared before the
    // first sum's barriers, added to between the two sums, read after the
    // second's: no barrier of their own), then one atomic each on the row's.
    if (t == 0u) {
        w_klo = 0xFFFFFFFFu;
        w_khi = 0u;
    }
    before_run = wg_sum_u64(before_run);
    if (kmin <= kmax) {
        atomicMin(w_klo, kmin);
        atomicMax(w_khi, kmax);
    }
    after_run = wg_sum_u64(after_run);
    if (t == 0u) {
        uint h = wide_hist_at(row, chunk);
        store_wide_hist_u64(h, WH_BEFORE_RUN, before_run);
        store_wide_hist_u64(h, WH_AFTER_RUN, after_run);
        if (w_klo <= w_khi) {
            atomicMin(row_state[o + R_WIDE_KLO], w_klo);
            atomicMax(row_state[o + R_WIDE_KHI], w_khi);
        }
    }
    if (!last_to_arrive(row)) return;
    resolve(row);
}
