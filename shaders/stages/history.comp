#version 450
#extension GL_GOOGLE_include_directive : require
// The history samplers' prepare pass (one workgroup per row, before any pass
// that reads the row): from the slot's history it builds the row's Adjust
// block, the tokens whose logit the penalties and DRY change, so that every
// later pass applies them as it reads a logit (row_logit in common.glsl). It
// reads the history, never the row: its cost grows with the history, not the
// vocabulary.
//
// The block: a bitmap of the adjusted tokens (one word per 32 tokens), an
// open-addressing hash of 2^hash_bits entries (>= 2 x the history capacity,
// so it never fills: every key is a history token) and the list of those in
// use (the loops over entries visit only them), DRY's repeat counts, and
// the table the passes read: the bitmap's prefix counts and each adjusted
// token's final logit (bias included) by rank. Lookups stay here; a pass reads
// an adjusted logit with no loop (common.glsl, row_logit). A row without a
// bias or bitmask whose raw logits no result needs is patched instead
// (ROW_PATCH): its adjusted logits written into the row, no bitmap or table.
#include "common.glsl"
#include "arrive.glsl"
#include "wg_scan.glsl"

shared uint s_restart;  // the most recent history position where a breaker ends
// The row itself, written where ROW_PATCH asks for the adjusted logits in place.
layout(std430, set = 0, binding = BINDING_LOGITS) buffer LogitsOut { float logits_out[]; };

// Repeat lengths up to this are compared directly, in parallel (step 2).
const uint DIRECT_LCP_LIMIT = 512u;

// The i-th most recent token of the slot (llama.cpp's ring_buffer::rat(i)),
// after the row's prefix (sieve_verify's drafts before the position, newest
// last): the history the position sees.
uint g_slot;
uint g_count;
uint g_head;
uint g_prefix;
uint g_prefix_len;
uint rat(uint i) {
    if (i < g_prefix_len) return row_inputs[g_prefix + g_prefix_len - 1u - i];
    i -= g_prefix_len;
    return slot_state[g_slot + SLOT_HEADER + (g_head + pc.hist_cap - 1u - i) % pc.hist_cap];
}

// The token's entry (word offset), inserted when absent: its index added to
// the used entries. (Its bitmap bit is set by the row's last workgroup,
// mark_adjusted: the bitmap still holds the previous call's bits until then.)
uint adjust_insert(uint base, uint token) {
    uint mask = (1u << pc.hash_bits) - 1u;
    uint e = adjust_hash(token);
    uint hash_base = base + pc.bitmap_words;
    for (uint probe = 0u; probe <= mask; ++probe) {
        uint o = hash_base + e * ADJ_ENTRY;
        uint prev = atomicCompSwap(adjust[o + ADJ_KEY], 0u, token + 1u);
        if (prev == 0u) {
            uint used = adjust_used_at(base);
            adjust[used + 1u + atomicAdd(adjust[used], 1u)] = e;
        }
        if (prev == 0u || prev == token + 1u) return o;
        e = (e + 1u) & mask;
    }
    return NO_INPUTS;  // unreachable: the table holds twice the history
}

// The row's breakers in row_inputs: [n, then per sequence: length, tokens
// (head first)].
bool single_token_breaker(uint breakers, uint token) {
    if (breakers == NO_INPUTS) return false;
    uint n = row_inputs[breakers];
    uint o = breakers + 1u;
    for (uint b = 0u; b < n; ++b) {
        uint len = row_inputs[o];
        if (len == 1u && row_inputs[o + 1u] == token) return true;
        o += 1u + len;
    }
    return false;
}

// llama_sampler_dry_apply's step 1 for history position i (a head token i
// positions from the end): the longest breaker starting there whose tail
// follows it, or -1. Tails run toward the present: tail[k] is rat(i - 1 - k).
int breaker_match(uint breakers, uint i) {
    uint token = rat(i);
    uint n = row_inputs[breakers];
    uint o = breakers + 1u;
    int longest = -1;
    for (uint b = 0u; b < n; ++b) {
        uint len = row_inputs[o];
        int seq_len = int(len) - 1;
        if (row_inputs[o + 1u] == token && seq_len > longest && seq_len <= int(i)) {
            bool match = true;
            for (uint k = 0u; k < uint(seq_len) && match; ++k) match = row_inputs[o + 2u + k] == rat(i - 1u - k);
            if (match) longest = seq_len;
        }
        o += 1u + len;
    }
    return longest;
}

// The penalties and DRY on the logit f of the token whose entry is at o, in
// chain order, as the twin applies them (llama_sampler_penalties_apply: logit
// <= 0 multiplied by the repeat penalty, > 0 divided, then count * freq +
// present subtracted; llama_sampler_dry_apply: its penalty subtracted).
// `precise`: no fused multiply-add, the twin rounds every step.
// count, dry_bits: the token's entry's ADJ_COUNT and ADJ_DRY.
float apply_history(uint row, uint count, uint dry_bits, float f) {
    uint flags = param_u(row, P_ROW_FLAGS);
    precise float dry = uintBitsToFloat(dry_bits);
    precise float x = f;
    if ((flags & ROW_DRY_FIRST) != 0u) x = x - dry;
    if (count > 0u) {
        precise float repeat = param_f(row, P_REPEAT);
        x = x <= 0.0 ? x * repeat : sieve_div(x, repeat);
        precise float sub = float(count) * param_f(row, P_FREQ) + param_f(row, P_PRESENT);
        x = x - sub;
    }
    if ((flags & ROW_DRY_FIRST) == 0u) x = x - dry;
    return x;
}

// llama.cpp's penalty `multiplier * pow(base, exponent)`: exponentiation by
// squaring in float (llama.cpp's std::pow runs in double; a few ulp apart).
float dry_penalty(float multiplier, float base, uint exponent) {
    float r = 1.0;
    float b = base;
    for (uint e = exponent; e != 0u; e >>= 1u) {
        if ((e & 1u) != 0u) r *= b;
        b *= b;
    }
    return multiplier * r;
}

// This workgroup's share [lo, hi) of n positions: contiguous blocks, one per
// workgroup of the row (gl_NumWorkGroups.x; one on a CPU device's plan).
uvec2 my_share(uint n) {
    uint per = (n + gl_NumWorkGroups.x - 1u) / gl_NumWorkGroups.x;
    uint lo = min(gl_WorkGroupID.x * per, n);
    return uvec2(lo, min(lo + per, n));
}

// The longest tail (tokens after the head) of the row's breakers.
uint longest_breaker_tail(uint breakers) {
    uint n = row_inputs[breakers];
    uint o = breakers + 1u;
    uint longest = 0u;
    for (uint b = 0u; b < n; ++b) {
        uint len = row_inputs[o];
        longest = max(longest, len - 1u);
        o += 1u + len;
    }
    return longest;
}

// llama_sampler_dry_apply's step 1: the most recent breaker limits the repeat
// length (rep_limit; n when none ends in the window). Every workgroup of the
// row finds it, scanning from the newest position one block of WG positions at
// a time, and stops at the first block with a match: the smallest position
// wins, whatever block order the workgroups run in. With an exponent cap
// (`binding` = allowed_length + the cap), a repeat limit of `binding` or more
// changes no penalty (the lengths past it are capped alike), and a breaker
// whose head lies at position i limits the repeat to at least i less its
// tail: the scan stops at binding + the longest tail and answers n past it,
// so a window without a recent breaker costs each workgroup one block, not
// the window.
uint dry_rep_limit(uint n, uint breakers, uint binding) {
    if (breakers == NO_INPUTS) return n;
    uint t = gl_LocalInvocationID.x;
    uint scan = min(n, binding + longest_breaker_tail(breakers));
    for (uint from = 0u; from < scan; from += WG) {
        if (t == 0u) s_restart = 0xFFFFFFFFu;
        barrier();
        uint i = from + t;
        if (i < scan) {
            int m = breaker_match(breakers, i);
            if (m >= 0) atomicMin(s_restart, (i << 16u) | uint(m));  // i < 2^16: the capacity's bound
        }
        barrier();
        uint found = s_restart;
        barrier();  // every invocation has read it before the next block resets it
        if (found != 0xFFFFFFFFu) return (found >> 16u) - (found & 0xFFFFu);  // uniform: shared, after a barrier
    }
    return n;
}

// The token that follows a repeat of `len` ending k positions before the
// present (rat(k - 1)) would extend it: it keeps its longest repeat
// (llama_sampler_dry_apply's step 3; single-token breakers never get a penalty).
void dry_extends(uint base, uint breakers, uint allowed, uint k, uint len) {
    if (len < allowed) return;
    uint token = rat(k - 1u);
    if (single_token_breaker(breakers, token)) return;
    atomicMax(adjust[adjust_insert(base, token) + ADJ_DRY_LEN], len + 1u);
}

shared uint s_z_next, s_z_m, s_z_limit, s_z_stop, s_z_end, s_z_start;

// A position's repeat count as stored: min(Z[k], rep_limit) at
// adjust[repeats + last - k] (llama.cpp's dry_repeat_count).
uint z_at(uint repeats, uint last, uint k) { return adjust[repeats + last - k]; }

// The box rule for position k inside the box (lt, rt): the tokens from lt
// back repeat those from the present for rt - lt (stored counts are at most
// the true ones, so a box from one holds), so the history from the present
// back to rt has the period lt, and from k it reads as from p = k mod lt
// (< lt: a count already known) up to rt. Returns true with z where that
// decides the count; else raises m, the count known to match, to rt - k.
bool z_by_box(uint k, uint lt, uint rt, uint limit, uint repeats, uint last, inout uint m, out uint z) {
    z = 0u;
    if (lt == 0u || k >= rt) return false;
    uint p = k % lt, span = rt - k;
    if (p != 0u) {
        uint zp = z_at(repeats, last, p);
        if (zp < span) {  // a mismatch before rt, as from p (zp <= limit: zp < span <= n - k)
            z = zp;
            return true;
        }
    }
    m = max(m, min(span, limit));
    z = m;
    return m >= limit;
}

// Step 2 where lengths past DIRECT_LCP_LIMIT count: the reverse Z-array
// min(Z[k], rep_limit) for k in [1, n), by the whole workgroup, WG
// positions a block. Each position takes the box rule (z_by_box) with the
// furthest-reaching box of the blocks before, else compares directly, at
// most Z_DIRECT_STEPS; the positions still open (long repeats: a loop in
// the history) are then compared by the whole workgroup, WG tokens a step,
// the smallest first, each one's box offered to the others' rule in turn,
// as llama.cpp's serial Z-algorithm would use it. The same counts as that
// algorithm; the steps add up to about n / WG a block plus the repeats'
// lengths / WG, where one invocation took n and more.
const uint Z_DIRECT_STEPS = 16u;
void dry_z_array(uint n, uint rep_limit, uint repeats) {
    uint t = gl_LocalInvocationID.x;
    uint last = n - 1u;
    uint lt = 0u, rt = 0u;  // the box (uniform)
    for (uint b = 1u; b < n; b += WG) {  // uniform
        uint k = b + t;
        bool open = k < n;
        uint limit = open ? min(n - k, rep_limit) : 0u;
        uint m = 0u, z = 0u;
        if (open && z_by_box(k, lt, rt, limit, repeats, last, m, z)) open = false;
        if (open) {
            uint stop = min(limit, m + Z_DIRECT_STEPS);
            while (m < stop && rat(m) == rat(m + k)) ++m;
            z = m;
            open = m == stop && m < limit;  // the steps ran out
        }
        if (k < n && !open) adjust[repeats + last - k] = z;
        memoryBarrierBuffer();
        barrier();
        for (;;) {  // uniform: the open positions, smallest first
            if (t == 0u) {
                s_z_next = 0xFFFFFFFFu;
                s_z_stop = 0xFFFFFFFFu;
            }
            barrier();
            if (open) atomicMin(s_z_next, k);
            barrier();
            uint k0 = s_z_next;
            if (k0 == 0xFFFFFFFFu) break;
            if (open && k == k0) {
                s_z_m = m;
                s_z_limit = limit;
            }
            barrier();
            uint m0 = s_z_m, limit0 = s_z_limit, found;
            for (;; m0 += WG) {  // uniform: the first mismatch past m0, WG tokens a step
                uint j = m0 + t;
                if (j < limit0 && rat(j) != rat(j + k0)) atomicMin(s_z_stop, j);
                barrier();
                found = s_z_stop;
                barrier();  // read before the next step's atomics
                if (found != 0xFFFFFFFFu || m0 + WG >= limit0) break;
            }
            uint z0 = min(found, limit0);
            if (open && k == k0) {
                z = z0;
                adjust[repeats + last - k] = z;
                open = false;
            }
            if (k0 + z0 > rt) {
                lt = k0;
                rt = k0 + z0;
            }
            memoryBarrierBuffer();
            barrier();  // k0's count is visible to the rule below
            if (open && z_by_box(k, lt, rt, limit, repeats, last, m, z)) {
                adjust[repeats + last - k] = z;
                open = false;
            }
            memoryBarrierBuffer();
            barrier();
        }
        // The block's furthest-reaching box (any of them: the rule holds for
        // every box); z is each position's count, all resolved by now.
        if (t == 0u) {
            s_z_end = rt;
            s_z_start = 0u;
        }
        barrier();
        if (k < n) atomicMax(s_z_end, k + z);
        barrier();
        uint end = s_z_end;
        if (k < n && end > rt && k + z == end) atomicMax(s_z_start, k);
        barrier();
        if (end > rt) {
            rt = end;
            lt = s_z_start;
        }
        barrier();  // read before the next block's writes
    }
}

// DRY's steps 1 to 3 over this workgroup's positions: each token a repeat
// would extend, with its longest repeat, in its entry. Returns early exactly
// where llama.cpp does (uniform: every workgroup of the row decides alike).
void dry_repeats(uint row, uint base) {
    uint t = gl_LocalInvocationID.x;
    // Its window (last_n_repeat); llama.cpp returns early when the
    // window is not longer than allowed_length.
    uint n = min(g_count, param_u(row, P_DRY_LAST_N));
    uint allowed = param_u(row, P_DRY_ALLOWED);
    if (n <= allowed) return;
    uint breakers = param_u(row, P_BREAKERS);
    uint max_exp = param_u(row, P_DRY_MAX_EXP);
    uint rep_limit = dry_rep_limit(n, breakers, max_exp > 0u ? allowed + max_exp : n);
    if (rep_limit < allowed) return;

    // Step 2: each position's repeat count min(Z[k], rep_limit): the longest
    // common prefix of the history read backwards from the present and from k
    // tokens earlier. llama.cpp computes it with the reverse Z-algorithm (the
    // same values, linear but sequential). Lengths beyond allowed_length + the
    // exponent cap give the same penalty, so with a cap every invocation
    // compares its positions directly, at most `cap` tokens each, and applies
    // step 3 at once; without one (base <= 1.000001), or past
    // DIRECT_LCP_LIMIT, the row's first workgroup builds the whole array
    // (dry_z_array), then takes step 3.
    uint cap = max_exp > 0u ? min(rep_limit, allowed + max_exp) : rep_limit;
    if (cap <= DIRECT_LCP_LIMIT) {
        uvec2 share = my_share(n);
        for (uint k = max(share.x, 1u) + t; k < share.y; k += WG) {
            uint limit = min(n - k, cap);
            uint m = 0u;
            while (m < limit && rat(m) == rat(m + k)) ++m;
            dry_extends(base, breakers, allowed, k, m);
        }
        return;
    }
    if (gl_WorkGroupID.x != 0u) return;
    uint repeats = adjust_repeats_at(base);
    dry_z_array(n, rep_limit, repeats);
    memoryBarrierBuffer();
    barrier();
    for (uint k = 1u + t; k < n; k += WG) dry_extends(base, breakers, allowed, k, adjust[repeats + n - 1u - k]);
}

// The last workgroup's loops over the used entries (dry_penalties,
// mark_adjusted, write_adjusted, clear_entries) take ENTRY_LOADS entries an
// invocation a trip, each step's loads issued for all of them before any is
// used: a GPU then waits for memory once a step a trip, not once a step an
// entry (each entry is a chain of dependent loads: its index, its fields,
// the token's logit; a window of 4096 tokens can use 4096 entries, 16 an
// invocation). Four: the pass's registers stay few, as its residency wants
// (gpu_plan.hpp: history_groups_for). A CPU device takes one at a time, its
// arrays one entry long: sized by the specialization constant (arrays of
// four with the slots past the first turned off by a condition took
// lavapipe's pass from about 205 to 240 us at 4096 tokens).
const uint ENTRY_LOADS = INDEXED_BINS != 0u ? 1u : 4u;
const uint NO_ENTRY = 0xFFFFFFFFu;

// Whether slot u of a trip from j0 holds a used entry: slot 0 always does
// (the loops run while j0 < count), so its load needs no test.
bool entry_slot(uint u, uint j0, uint count) { return u == 0u || j0 + u * WG < count; }

// The word offsets of used entries j0, j0 + WG, ... (ENTRY_LOADS of them;
// NO_ENTRY from in_use on). j0 < in_use.
void entry_offsets(uint base, uint hash_base, uint j0, uint in_use, out uint o[ENTRY_LOADS]) {
    uint used = adjust_used_at(base);
    [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u)
        o[u] = entry_slot(u, j0, in_use) ? hash_base + adjust[used + 1u + j0 + u * WG] * ADJ_ENTRY : NO_ENTRY;
}

// Field `field` of each entry (0 for NO_ENTRY).
void entry_fields(uint o[ENTRY_LOADS], uint field, out uint v[ENTRY_LOADS]) {
    [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u)
        v[u] = u == 0u || o[u] != NO_ENTRY ? adjust[o[u] + field] : 0u;
}

// DRY's step 4: the penalty of each token a repeat extends, exponent capped as
// llama.cpp caps it.
void dry_penalties(uint row, uint base, uint hash_base, uint in_use) {
    uint t = gl_LocalInvocationID.x;
    uint allowed = param_u(row, P_DRY_ALLOWED);
    uint max_exp = param_u(row, P_DRY_MAX_EXP);
    float multiplier = param_f(row, P_DRY_MULT);
    float dry_base = param_f(row, P_DRY_BASE);
    for (uint j0 = t; j0 < in_use; j0 += ENTRY_LOADS * WG) {
        uint o[ENTRY_LOADS], len[ENTRY_LOADS];
        entry_offsets(base, hash_base, j0, in_use, o);
        entry_fields(o, ADJ_DRY_LEN, len);
        [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u) {
            if (len[u] == 0u) continue;  // NO_ENTRY too
            uint exponent = len[u] - 1u - allowed;
            if (max_exp > 0u && exponent > max_exp) exponent = max_exp;
            adjust[o[u] + ADJ_DRY] = floatBitsToUint(dry_penalty(multiplier, dry_base, exponent));
        }
    }
}

// The adjusted tokens among bitmap words [w, to): four loads issued before
// any is used (one invocation's stretch is ~19 words at vocabulary 151936;
// a load after each add would wait for each in turn).
uint bits_from(uint base, uint w, uint to) {
    uint sum = 0u;
    for (; w + 4u <= to; w += 4u) {
        uint a = adjust[base + w], b = adjust[base + w + 1u], c = adjust[base + w + 2u], d = adjust[base + w + 3u];
        sum += bitCount(a) + bitCount(b) + bitCount(c) + bitCount(d);
    }
    for (; w < to; ++w) sum += bitCount(adjust[base + w]);
    return sum;
}

// The bitmap's prefix counts (the adjusted tokens in the words before each),
// where the passes read them: row_logit reads a word's count only after
// finding its token's bit, so only the words that hold an adjusted token need
// one. With at most one adjusted token an invocation, each token counts the
// tokens below it in a list in shared memory (its rank; in_use compares), and
// the lowest of its word writes the word's count: no pass over the bitmap,
// whose 4748 words at vocabulary 151936 were most of the last workgroup's time
// on lavapipe with a short window. Otherwise every word's count: the bitmap's
// words summed and scanned.
shared uint s_adjusted[WG];
void write_prefix_counts(uint base, uint hash_base, uint in_use, uint words) {
    uint t = gl_LocalInvocationID.x;
    uint prefix = adjust_prefix_at(base);
    if (in_use <= WG) {  // uniform: every invocation read the same count
        uint used = adjust_used_at(base);
        uint token = t < in_use ? adjust[hash_base + adjust[used + 1u + t] * ADJ_ENTRY + ADJ_KEY] - 1u : 0u;
        s_adjusted[t] = token;
        barrier();
        if (t >= in_use) return;
        uint below = 0u;
        for (uint j = 0u; j < in_use; ++j) below += s_adjusted[j] < token ? 1u : 0u;
        uint w = token >> 5u;
        // The bitmap holds exactly the used entries' tokens (mark_adjusted).
        if (w < words && (adjust[base + w] & ((1u << (token & 31u)) - 1u)) == 0u) adjust[prefix + w] = below;
        return;
    }
    uint from, to;
    wg_block(words, from, to);
    uvec2 total;
    uint sum = wg_exclusive_u64(uvec2(bits_from(base, from, to), 0u), total).x;  // adjusted tokens < 2^32
    for (uint w = from; w < to; w += 4u) {
        uint n = min(4u, to - w);
        uint bits[4];
        [[unroll]] for (uint i = 0u; i < 4u; ++i) bits[i] = i < n ? adjust[base + w + i] : 0u;
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
            if (i < n) adjust[prefix + w + i] = sum;
            sum += bitCount(bits[i]);
        }
    }
}

// Each adjusted token's final logit: into the row itself where the row is
// patched (ROW_PATCH: the passes read the row as it is, never the bitmap or
// the table), else into the table the passes read: the bitmap's prefix
// counts, then the logit at the token's rank. Tokens past the call's
// vocabulary (a history from a larger one) are never read: no value is
// written for them.
void write_adjusted(uint row, uint base, uint hash_base, uint in_use, bool in_place) {
    uint t = gl_LocalInvocationID.x;
    if (!in_place) {  // uniform: the row's flag
        write_prefix_counts(base, hash_base, in_use, (pc.vocab + 31u) / 32u);
        memoryBarrierBuffer();
        barrier();
    }
    uint prefix = adjust_prefix_at(base);
    uint values = adjust_values_at(base);
    uint inputs = (param_u(row, P_ROW_FLAGS) & ROW_HAS_INPUTS) != 0u ? param_u(row, P_INPUTS) : NO_INPUTS;
    for (uint j0 = t; j0 < in_use; j0 += ENTRY_LOADS * WG) {
        uint o[ENTRY_LOADS], key[ENTRY_LOADS], count[ENTRY_LOADS], dry[ENTRY_LOADS];
        entry_offsets(base, hash_base, j0, in_use, o);
        entry_fields(o, ADJ_KEY, key);
        entry_fields(o, ADJ_COUNT, count);
        entry_fields(o, ADJ_DRY, dry);
        // Each token's logit, and where it goes in the table (a key past the
        // vocabulary, or none, loads nothing).
        float f[ENTRY_LOADS];
        uint rank[ENTRY_LOADS];
        [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u) {
            uint token = key[u] - 1u;
            bool live = token < pc.vocab;
            f[u] = live ? logits[row * pc.stride + token] : 0.0;
            rank[u] = live && !in_place ? adjust[prefix + (token >> 5u)] : 0u;
            rank[u] += live && !in_place ? bitCount(adjust[base + (token >> 5u)] & ((1u << (token & 31u)) - 1u)) : 0u;
        }
        [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u) {
            uint token = key[u] - 1u;
            if (token >= pc.vocab) continue;  // NO_ENTRY's key 0 too
            float x = flush_subnormal(f[u]);
            // The row fails on NaN and +Inf (the passes read them raw); the bias
            // first (the twin's order), then the history samplers, which leave a
            // masked (-inf) logit masked. (row_logit applies the token bitmask
            // before it reads this table.)
            if (!isnan(x) && !(isinf(x) && x > 0.0)) {
                if (inputs != NO_INPUTS && (row_inputs[inputs + 3u + 2u * (token >> 5u)] & (1u << (token & 31u))) != 0u)
                    x = apply_bias(inputs, token, x);
                if (!isnan(x) && !isinf(x)) x = apply_history(row, count[u], dry[u], x);
            }
            if (in_place) logits_out[row * pc.stride + token] = x;
            else adjust[values + rank[u]] = floatBitsToUint(x);
        }
    }
}

// The bitmap of this call's adjusted tokens: the previous call's bits (which
// the passes of that call read; their tokens in the marked list) cleared,
// then one bit per used entry, whose tokens become the marked list.
void mark_adjusted(uint base, uint hash_base, uint in_use) {
    uint t = gl_LocalInvocationID.x;
    uint marked = adjust_marked_at(base);
    uint before = adjust[marked];
    for (uint j0 = t; j0 < before; j0 += ENTRY_LOADS * WG) {
        uint token[ENTRY_LOADS];
        [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u)
            token[u] = entry_slot(u, j0, before) ? adjust[marked + 1u + j0 + u * WG] : NO_ENTRY;
        [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u)
            if (u == 0u || token[u] != NO_ENTRY) atomicAnd(adjust[base + (token[u] >> 5u)], ~(1u << (token[u] & 31u)));
    }
    memoryBarrierBuffer();
    barrier();
    for (uint j0 = t; j0 < in_use; j0 += ENTRY_LOADS * WG) {
        uint o[ENTRY_LOADS], key[ENTRY_LOADS];
        entry_offsets(base, hash_base, j0, in_use, o);
        entry_fields(o, ADJ_KEY, key);
        [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u) {
            if (u != 0u && o[u] == NO_ENTRY) continue;
            uint token = key[u] - 1u;
            atomicOr(adjust[base + (token >> 5u)], 1u << (token & 31u));
            adjust[marked + 1u + j0 + u * WG] = token;
        }
    }
    if (t == 0u) adjust[marked] = in_use;
}

// The hash left empty for the next call, once the table is written: the used
// entries, and their count (which every invocation read before the table).
// The bitmap and the table stay: this call's passes read them.
void clear_entries(uint base, uint hash_base, uint in_use) {
    uint t = gl_LocalInvocationID.x;
    for (uint j0 = t; j0 < in_use; j0 += ENTRY_LOADS * WG) {
        uint o[ENTRY_LOADS];
        entry_offsets(base, hash_base, j0, in_use, o);
        [[unroll]] for (uint u = 0u; u < ENTRY_LOADS; ++u) {
            if (u != 0u && o[u] == NO_ENTRY) continue;
            adjust[o[u] + ADJ_KEY] = 0u;
            adjust[o[u] + ADJ_COUNT] = 0u;
            adjust[o[u] + ADJ_DRY] = 0u;
            adjust[o[u] + ADJ_DRY_LEN] = 0u;
        }
    }
    if (t == 0u) adjust[adjust_used_at(base)] = 0u;
}

// One dispatch: one workgroup per row (HISTORY_WHOLE, a CPU device's plan) or
// gl_NumWorkGroups.x per row (HISTORY_BUILD, a GPU's), each a share of the
// positions; the last to arrive finishes the row. Every workgroup of a row
// inserts into a hash that is empty when the dispatch starts: zeroed when the
// chain is created, and emptied again by the last workgroup of each call that
// built it (clear_entries). Rows whose penalties and DRY do not act this call
// leave their block as it is (no pass reads it: bind_row).
void main() {
    uint row = pc.row_base + gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint base = row * adjust_row_words();
    uint hash_base = base + pc.bitmap_words;

    if ((param_u(row, P_ROW_FLAGS) & ROW_ADJUST) == 0u) return;

    g_slot = param_u(row, P_SLOT);
    g_head = slot_state[g_slot + S_HEAD];
    g_prefix = param_u(row, P_PREFIX);
    g_prefix_len = param_u(row, P_PREFIX_LEN);
    // The windows are at most the history capacity (the host checks), and the
    // DRY arrays hold that many positions: the oldest tokens past it drop out.
    g_count = min(slot_state[g_slot + S_COUNT] + g_prefix_len, pc.hist_cap);

    // Penalties: each token's count over the window (llama.cpp's token_count).
    uvec2 share = my_share(min(g_count, param_u(row, P_PEN_LAST_N)));
    for (uint j = share.x + t; j < share.y; j += WG) atomicAdd(adjust[adjust_insert(base, rat(j)) + ADJ_COUNT], 1u);

    dry_repeats(row, base);
    // Every workgroup's entries complete: the last one to arrive finishes.
    memoryBarrierBuffer();
    barrier();
    if (gl_NumWorkGroups.x > 1u && !last_to_arrive_of(row, gl_NumWorkGroups.x)) return;
    // Every insert is done: the count of used entries is final (read once:
    // clear_entries resets it).
    uint in_use = adjust[adjust_used_at(base)];
    dry_penalties(row, base, hash_base, in_use);
    // A patched row's passes read no bitmap: it keeps the bits of the last
    // call that marked it, and the marked list names them still.
    bool in_place = (param_u(row, P_ROW_FLAGS) & ROW_PATCH) != 0u;
    if (!in_place) mark_adjusted(base, hash_base, in_use);
    memoryBarrierBuffer();
    barrier();
    write_adjusted(row, base, hash_base, in_use, in_place);
    // write_adjusted's reads of the entries before they are cleared.
    memoryBarrierBuffer();
    barrier();
    clear_entries(base, hash_base, in_use);
}
