// Every word layout the host and the shaders share, written once: the push
// constants, the per-row parameter block (P_*, ROW_*, OP_*), a slot's record
// (S_*), the per-chunk, per-row and per-bin words, the results, the indirect
// dispatch arguments and the rows' wide and history blocks. Included by GLSL
// (common.glsl, where it stands: the order of its constants is part of every
// shader's SPIR-V) and by C++ (namespace sieve::glsl, the same names), where
// the static_asserts at the end check the pieces against each other.
// Bindings and specialization-constant ids: gpu_ids.h.
#ifndef SIEVE_GPU_LAYOUT_H
#define SIEVE_GPU_LAYOUT_H

#ifdef __cplusplus
#include <cstdint>
namespace sieve::glsl {
using uint = uint32_t;
#define SIEVE_CONST inline constexpr
#else
#define SIEVE_CONST const
#endif

// Fixed for a recording (push constants are baked into the command buffer).
#define SIEVE_PUSH_CONSTANTS(FIELD) \
    FIELD(vocab)        /* logits per row in use */ \
    FIELD(stride)       /* floats between rows */ \
    FIELD(chunk_size)   /* logits per workgroup chunk (fixed by vocab, never by rows) */ \
    FIELD(n_chunks)     /* chunks per row */ \
    FIELD(level)        /* selection level of this dispatch (histogram); the history pass's kind (HISTORY_*) */ \
    FIELD(flags)        /* FLAG_* */ \
    FIELD(row_base)     /* first row of this dispatch's row group (workgroup y = row - row_base) */ \
    FIELD(args_base)    /* this row group's indirect dispatch arguments (words) */ \
    FIELD(wide_cap)     /* entries of a row's wide list (wide.glsl); 0: the chain has no wide path */ \
    FIELD(hist_cap)     /* tokens of a slot's history ring (the chain's history capacity) */ \
    FIELD(hash_bits)    /* log2 of a row's history hash entries (history.comp) */ \
    FIELD(bitmap_words) /* words of a row's history bitmap: ceil(max_vocab / 32) */ \
    FIELD(wide_chunks)  /* chunks the wide passes split a row into (the collect tail arms them so) */
#ifdef __cplusplus
#define SIEVE_PUSH_FIELD(name) uint32_t name;
struct Push { SIEVE_PUSH_CONSTANTS(SIEVE_PUSH_FIELD) };
#undef SIEVE_PUSH_FIELD
#else
#define SIEVE_PUSH_FIELD(name) uint name;
layout(push_constant) uniform Push { SIEVE_PUSH_CONSTANTS(SIEVE_PUSH_FIELD) } pc;
#undef SIEVE_PUSH_FIELD
#endif

SIEVE_CONST uint FLAG_GREEDY = 1u;   // the chain ends in greedy
SIEVE_CONST uint FLAG_SMALL = 2u;    // the whole row fits the candidate buffer: finalize reads it directly
SIEVE_CONST uint FLAG_DISTRIBUTION = 4u;  // sieve_chain_distribution: no result, no step advance
// collect_tail.glsl merges the chunks' lists by sorting them in shared memory
// (a GPU's plan: no dependent global loads), not by merge paths (a CPU device's)
SIEVE_CONST uint FLAG_SORT_MERGE = 8u;
// collect_chunk.glsl's plain chunks keep a `need` past the register picks by a radix
// select over the chunk (re-reads cost less than compactions): a call with such a
// row (row_analysis.cpp: radix_chunk), whose plain pipeline holds it (VARIANT_PLAIN_RADIX)
SIEVE_CONST uint FLAG_RADIX_CHUNKS = 16u;
// The recording holds the key levels and the gather for collect rows (in its
// key levels' part, or inline): a min-p row whose survivors reach past the
// buffer (ROW_FLOOR_LEVELS) goes there from the collect tail, not to the CPU
// twin (collect_tail.glsl: hand_to_levels). The levels and the gather then
// split a row as the wide passes do (pc.wide_chunks: gpu_plan.hpp,
// on_wide_chunks).
SIEVE_CONST uint FLAG_FLOOR_LEVELS = 32u;
// CHAIN_SELECTOR's values (engine/vulkan/row_analysis.cpp: ChainAnalysis::selector).
SIEVE_CONST uint SELECT_DIST = 0u;   // dist or greedy: nothing learns
SIEVE_CONST uint SELECT_MIROSTAT = 1u;
SIEVE_CONST uint SELECT_MIROSTAT_V2 = 2u;
SIEVE_CONST uint SELECT_ADAPTIVE = 3u;

// Selection levels: level 0 bins the row by value below the maximum (where the
// softmax mass lives); levels 1..8 split a key interval into 16 equal parts, so
// 8 of them reach a single 32-bit key.
SIEVE_CONST uint BINS = 16u;
SIEVE_CONST uint KEY_LEVELS = 8u;

// sieve_status values the shaders report
SIEVE_CONST uint STATUS_OK = 0u;
SIEVE_CONST uint STATUS_NON_FINITE = 9u;
SIEVE_CONST uint STATUS_ALL_MASKED = 10u;
// Not a sieve_status: the row's survivors reach past the candidate buffer; the
// host samples it with the CPU twin (counted in cpu_fallback_rows).
SIEVE_CONST uint STATUS_FALLBACK = 0x46414C4Cu;

// Per-row parameters, written by the host into a persistently mapped block
// (engine/vulkan/gpu_params.cpp: write_row_params).
SIEVE_CONST uint PARAM_STRIDE = 48u;
SIEVE_CONST uint P_SCALE = 0u;       // float: the chain's temperature product, 1 without temperature; <= 0 = greedy
SIEVE_CONST uint P_SEED = 1u;
SIEVE_CONST uint P_SLOT = 2u;        // word offset of the row's slot record in slot_state
SIEVE_CONST uint P_DRAW = 3u;
SIEVE_CONST uint P_ROW_FLAGS = 4u;   // ROW_*
SIEVE_CONST uint P_TEMPERATURE = 5u; // float, the sampler parameters (llama.cpp's meanings)
SIEVE_CONST uint P_TOP_K = 6u;       // int
SIEVE_CONST uint P_TOP_P = 7u;
SIEVE_CONST uint P_MIN_P = 8u;
SIEVE_CONST uint P_TYPICAL = 9u;
SIEVE_CONST uint P_N_SIGMA = 10u;
SIEVE_CONST uint P_XTC_PROB = 11u;
SIEVE_CONST uint P_XTC_THRESHOLD = 12u;
SIEVE_CONST uint P_DYN_RANGE = 13u;
SIEVE_CONST uint P_DYN_EXPONENT = 14u;
SIEVE_CONST uint P_MIN_KEEP = 15u;   // uint, >= 0
SIEVE_CONST uint P_AGG_T = 16u;      // float: the temperature product the full-row mass is summed at
SIEVE_CONST uint P_NEED = 17u;       // candidates the collect pass keeps (1..CAP/2)
SIEVE_CONST uint P_LOGPROBS = 18u;   // top raw log-probabilities wanted (0..20; raw_stats.comp)
SIEVE_CONST uint P_INPUTS = 20u;     // word offset of the row's bias/bitmask block in row_inputs
SIEVE_CONST uint P_FLOOR = 21u;      // float, ROW_FLOOR: the min-p floor below the running maximum (raw logits)
// The history samplers (history.comp); a window of 0 = the sampler is off.
SIEVE_CONST uint P_PEN_LAST_N = 19u;
SIEVE_CONST uint P_REPEAT = 22u;     // float
SIEVE_CONST uint P_FREQ = 23u;       // float
SIEVE_CONST uint P_PRESENT = 24u;    // float
SIEVE_CONST uint P_DRY_LAST_N = 25u;
SIEVE_CONST uint P_DRY_MULT = 26u;   // float
SIEVE_CONST uint P_DRY_BASE = 27u;   // float
SIEVE_CONST uint P_DRY_ALLOWED = 28u;
SIEVE_CONST uint P_DRY_MAX_EXP = 29u;  // llama.cpp's exponent cap (0 = none), computed by the host as llama.cpp does
SIEVE_CONST uint P_BREAKERS = 30u;   // word offset of the row's DRY breakers in row_inputs (NO_INPUTS: none)
// The learning final samplers (selectors.glsl).
SIEVE_CONST uint P_MIRO_TAU = 31u;   // float
SIEVE_CONST uint P_MIRO_ETA = 32u;   // float
SIEVE_CONST uint P_ADAPT_TARGET = 33u;  // float; < 0: a plain draw
SIEVE_CONST uint P_ADAPT_DECAY = 34u;   // float
// A position of a sequence's draft (sieve_verify): the slot's step plus the
// position, and the drafts before it as tokens past the slot's history.
SIEVE_CONST uint P_STEP_ADD = 35u;      // added to the slot's step (0 outside sieve_verify)
SIEVE_CONST uint P_PREFIX = 36u;        // word offset in row_inputs of P_PREFIX_LEN tokens, oldest first
SIEVE_CONST uint P_PREFIX_LEN = 37u;    // tokens the history samplers see after the slot's history (0: none)

SIEVE_CONST uint ROW_HAS_INPUTS = 1u;  // a logit bias or a token bitmask applies
SIEVE_CONST uint ROW_NEED_SIGMA = 2u;  // the collect pass sums mean/variance of the row
SIEVE_CONST uint ROW_NEED_MASS = 4u;   // the collect pass sums the row's softmax mass at P_AGG_T
SIEVE_CONST uint ROW_FLOOR = 8u;       // min-p is the chain's first cut, or after top-p alone (or ROW_MU_FLOOR): collect only logits above its floor
SIEVE_CONST uint ROW_DEFER_TOP_P = 16u;  // top-p is the only cut: the wide passes sum the mass (wide.glsl)
SIEVE_CONST uint ROW_ADJUST = 32u;   // penalties or DRY act: logits of history tokens change (history.comp)
SIEVE_CONST uint ROW_DRY_FIRST = 64u;  // DRY comes before the penalties in the chain
SIEVE_CONST uint ROW_COMMIT = 128u;  // the drawn token joins the slot's history (sieve_sample, not draws)
// The history pass writes the adjusted logits into the row itself (rows
// without bias or bitmask: the passes then read plain logits, at no cost).
// The host uploads the row before every submission, so the next one starts
// from the model's logits again.
SIEVE_CONST uint ROW_PATCH = 256u;
// The row's slot keeps its step: several positions of one sequence read it,
// and the host advances it by the tokens sieve_verify emits.
SIEVE_CONST uint ROW_HOLD_STEP = 512u;
// The floor (ROW_FLOOR) is mirostat v2's, from the slot's mu (collect.glsl:
// row_floor_offset): only temperatures act before the selector.
SIEVE_CONST uint ROW_MU_FLOOR = 1024u;
// min-p is the row's only cut, then at most one temperature and dist
// (row_analysis.cpp: floor_levels): survivors past the buffer may take the
// key levels (FLAG_FLOOR_LEVELS).
SIEVE_CONST uint ROW_FLOOR_LEVELS = 2048u;

SIEVE_CONST uint OP_END = 0u;
SIEVE_CONST uint OP_TEMPERATURE = 1u;
SIEVE_CONST uint OP_TOP_K = 2u;
SIEVE_CONST uint OP_TOP_P = 3u;
SIEVE_CONST uint OP_MIN_P = 4u;
SIEVE_CONST uint OP_TYPICAL = 5u;
SIEVE_CONST uint OP_TOP_N_SIGMA = 6u;
SIEVE_CONST uint OP_XTC = 7u;

// A sequence slot's record (engine/vulkan/slot_layout.hpp): header words, then the
// history ring of pc.hist_cap tokens. The host reads and writes it between
// calls (mapped memory); the draw advances the step and appends the token.
SIEVE_CONST uint S_STEP = 0u;
SIEVE_CONST uint S_COUNT = 1u;       // tokens in the ring
SIEVE_CONST uint S_HEAD = 2u;        // where the next token goes
SIEVE_CONST uint S_FLAGS = 3u;       // SLOT_*
SIEVE_CONST uint S_MU = 4u;          // float: mirostat's mu
SIEVE_CONST uint S_ADAPT_SUM = 5u;   // float: adaptive-p's weighted sum
SIEVE_CONST uint S_ADAPT_WEIGHT = 6u;  // float: adaptive-p's total weight
SIEVE_CONST uint SLOT_MU_SET = 1u;
SIEVE_CONST uint SLOT_ADAPTIVE_SET = 2u;
SIEVE_CONST uint SLOT_HEADER = 16u;

// Per-chunk statistics (row_stats.comp).
SIEVE_CONST uint CHUNK_STRIDE = 16u;
SIEVE_CONST uint C_MAX_KEY = 0u;
SIEVE_CONST uint C_ARGMAX = 1u;
SIEVE_CONST uint C_MIN_FINITE_KEY = 2u;
SIEVE_CONST uint C_BAD = 3u;
SIEVE_CONST uint C_FIRST_BAD = 4u;
SIEVE_CONST uint C_FINITE = 5u;
SIEVE_CONST uint C_OVERFLOW = 6u;
SIEVE_CONST uint C_KEPT = 7u;        // collect: candidates the chunk kept
SIEVE_CONST uint C_AGG = 8u;         // collect: Agg (count, mean, m2, mass max, mass sum) as float bits
// The tie draw (gather.comp, PHASE_TIE; collect chains never take it): the
// chunk's members of the tie group.
SIEVE_CONST uint C_TIE = 8u;

// Per-row selection state within one call.
SIEVE_CONST uint ROW_STRIDE = 40u;
SIEVE_CONST uint R_STATUS = 0u;
SIEVE_CONST uint R_PHASE = 1u;
SIEVE_CONST uint R_MAX_KEY = 2u;
SIEVE_CONST uint R_ARGMAX = 3u;
SIEVE_CONST uint R_KEY_LO = 4u;      // the chosen bin's members: keys in [KEY_LO, KEY_HI]
SIEVE_CONST uint R_KEY_HI = 5u;
SIEVE_CONST uint R_TARGET = 6u;      // the draw target's remaining 40-bit mass inside that bin: low word
SIEVE_CONST uint R_TOTAL = 7u;       // float: the row's total mass, sum of exp(x - max) (the exact sum's value)
SIEVE_CONST uint R_CAND_COUNT = 8u;
SIEVE_CONST uint R_PASSES = 9u;
SIEVE_CONST uint R_BUCKET_COUNT = 10u;
SIEVE_CONST uint R_FIRST_BAD = 11u;
SIEVE_CONST uint R_BIN = 12u;        // the chosen bin at the last level (tie path: per-chunk counts)
SIEVE_CONST uint R_MIN_KEY = 13u;    // the smallest finite key
SIEVE_CONST uint R_ARRIVE = 14u;     // workgroups of the current pass done with the row (last_to_arrive)
// Words 15..32, 34 and 35: a top-p cut past the candidate buffer (wide.glsl).
SIEVE_CONST uint R_WIDE_PHASE = 16u;   // WIDE_*
SIEVE_CONST uint R_WIDE_KN = 17u;      // the buffer's last entry at the cut (key at the cut's temperatures, id):
SIEVE_CONST uint R_WIDE_IDN = 18u;     //   "after the buffer" = canonically after it
SIEVE_CONST uint R_WIDE_MC = 19u;      // float: the row's maximum at the cut's temperatures (mass reference)
SIEVE_CONST uint R_WIDE_MD = 20u;      // float: the row's maximum at the draw's temperatures
SIEVE_CONST uint R_WIDE_L = 21u;       // float: the lowest value the cut can reach (above)
SIEVE_CONST uint R_WIDE_INVW = 22u;    // float: the bins' scale s (wide_bin)
SIEVE_CONST uint R_WIDE_NT = 23u;      // temperature divisions before the cut | WIDE_NT_DIRECT | all of them << 16
                                       //   | WIDE_DEFERRED
SIEVE_CONST uint R_WIDE_RC = 24u;      // float: the mass the cut still needs past the buffer (reference MC);
                                       //   WIDE_DEFERRED: the buffer's mass at the cut (reference MC)
SIEVE_CONST uint R_WIDE_BD = 25u;      // float: the buffer's mass at the draw (reference MD)
SIEVE_CONST uint R_WIDE_N = 26u;       // entries in the buffer
SIEVE_CONST uint R_WIDE_BSTAR = 27u;   // the bin holding the cut
SIEVE_CONST uint R_WIDE_CLO = 28u;     // bins gathered: b* and the run [CLO, CEND) before it that the
SIEVE_CONST uint R_WIDE_CEND = 15u;    //   draw can land in (empty: both b*)
SIEVE_CONST uint R_WIDE_COUNT = 29u;   // list entries appended
SIEVE_CONST uint R_WIDE_BEFORE = 30u;  // float: mass (MC) of the bins before b*
SIEVE_CONST uint R_WIDE_KEEP = 31u;    // min_keep
SIEVE_CONST uint R_WIDE_TOP = 32u;     // float: bin 0's grid index, floor(v_n s) (direct rows: floor(M s))
SIEVE_CONST uint R_TARGET_HI = 33u;  // R_TARGET's high word
SIEVE_CONST uint R_WIDE_KLO = 34u;   // b*'s members' keys at the cut, their range [KLO, KHI] (wide_gather's
SIEVE_CONST uint R_WIDE_KHI = 35u;   //   workgroups; empty: KLO > KHI)
// The key levels over min-p's survivors (FLAG_FLOOR_LEVELS): LEVEL_* bits, and
// the raw floor every member passes (float: raw logit >= floor).
SIEVE_CONST uint R_LEVEL_MODE = 36u;
SIEVE_CONST uint R_LEVEL_FLOOR = 37u;
// LEVEL_CUT_CHECK: the raw maximum (float), and the mass top-p's cut needs,
// p times the row's mass at the cut relative to that maximum (float).
SIEVE_CONST uint R_LEVEL_CUT_MAX = 38u;
SIEVE_CONST uint R_LEVEL_CUT_NEED = 39u;

SIEVE_CONST uint PHASE_ACTIVE = 1u;  // levels still narrowing
SIEVE_CONST uint PHASE_GATHER = 2u;  // the bin fits the candidate buffer
SIEVE_CONST uint PHASE_TIE = 3u;     // > CAP members with one identical key
SIEVE_CONST uint PHASE_DONE = 4u;    // greedy, failed or drawn: nothing left to select

// R_LEVEL_MODE: a level's members also pass R_LEVEL_FLOOR (a division by the
// temperature can bring a logit below the floor onto the floor's quotient);
// the target is still to be formed, by the first level, from its own exact
// total (scan.glsl), as level 0 forms a whole row's.
SIEVE_CONST uint LEVEL_FLOOR = 1u;
SIEVE_CONST uint LEVEL_TARGET_PENDING = 2u;
// A top-p before min-p cut past the buffer (llama.cpp's default chain with
// top-k off): level 1 first shows that the survivors' mass at the cut stays
// below what the cut needs, so that top-p kept every one of them, or hands
// the row to the CPU twin (scan.glsl: cut_past_survivors).
SIEVE_CONST uint LEVEL_CUT_CHECK = 4u;

// Indirect dispatch arguments (VkDispatchIndirectCommand x, y, z) of a row
// group, in words from pc.args_base: the wide passes' (wide.glsl), then those
// the scans write for the levels after them, so a level no row needs launches
// no workgroup: [level * LEVEL_ARGS_STRIDE + 0..2] (levels 1..8). The shaders
// arm the first SHADER_ARGS_WORDS; the host the rest (below, C++ only).
SIEVE_CONST uint WIDE_HIST_ARGS = 0u;
SIEVE_CONST uint WIDE_GATHER_ARGS = 4u;
SIEVE_CONST uint LEVEL_ARGS_STRIDE = 8u;
SIEVE_CONST uint SHADER_ARGS_WORDS = 72u;

// Per-chunk bins of one level. The selection levels' masses are exact sums
// of 40-bit masses (sieve_mass), so no split of the row changes them.
SIEVE_CONST uint HIST_STRIDE = 5u;
SIEVE_CONST uint H_MASS_LO = 0u;   // the members' 40-bit masses summed: low word
SIEVE_CONST uint H_MASS_HI = 1u;   //   and high word
SIEVE_CONST uint H_COUNT = 2u;
SIEVE_CONST uint H_KEY_MIN = 3u;   // the members' key range (key levels)
SIEVE_CONST uint H_KEY_MAX = 4u;

// Per-row result, read by the host (engine/vulkan/gpu_results.cpp): the draw's words, then
// the raw log-probability words (raw_stats.comp); in the phase-clock build
// (SIEVE_PHASE_CLOCK, phase_clock.glsl) the tail's phase marks after them.
#ifdef SIEVE_PHASE_CLOCK
SIEVE_CONST uint RESULT_STRIDE = 104u;
#else
SIEVE_CONST uint RESULT_STRIDE = 64u;
#endif
SIEVE_CONST uint RES_TOKEN = 0u;
SIEVE_CONST uint RES_P = 1u;          // float
SIEVE_CONST uint RES_LOGPROB = 2u;    // float
SIEVE_CONST uint RES_STATUS = 3u;     // STATUS_*, or STATUS_FALLBACK
SIEVE_CONST uint RES_SEED = 4u;
SIEVE_CONST uint RES_STEP = 5u;
SIEVE_CONST uint RES_PASSES = 6u;     // full-row reads
SIEVE_CONST uint RES_FIRST_BAD = 7u;  // the first NaN or +Inf logit, or 0xFFFFFFFF
SIEVE_CONST uint RES_RAW_TOKEN = 8u;    // float: the drawn token's logit as the model gave it
SIEVE_CONST uint RES_RAW_MAX = 9u;      // float: the row's maximal finite logit
SIEVE_CONST uint RES_RAW_SUM = 10u;     // float: sum of exp(logit - max) over the finite logits
SIEVE_CONST uint RES_RAW_COUNT = 11u;   // top entries found (<= P_LOGPROBS)
SIEVE_CONST uint RES_RAW_IDS = 12u;     // MAX_RAW_LOGPROBS ids, canonical order
SIEVE_CONST uint RES_RAW_LOGITS = 32u;  // their logits (float bits)
SIEVE_CONST uint MAX_RAW_LOGPROBS = 20u;  // SIEVE_MAX_TOP_LOGPROBS
// The phase-clock build only: PHASE_MARKS marks of the collect tail's row, each
// two words, the shader's clocks since its workgroup started (subgroup clock
// cycles, device realtime ticks), PHASE_UNSET where the row did not pass it
// (engine/vulkan/phase_log.cpp writes them out).
SIEVE_CONST uint RES_PHASES = 64u;
SIEVE_CONST uint PHASE_MARKS = 20u;
SIEVE_CONST uint PHASE_UNSET = 0xFFFFFFFFu;
SIEVE_CONST uint PH_READ = 0u;      // the last workgroup's own chunk read into its register picks (pick_chunk)
SIEVE_CONST uint PH_SELECT = 1u;    //   the picks' radix select done: the chunk's threshold
SIEVE_CONST uint PH_COUNTED = 2u;   //   the chunk's logits at or above it counted (and the refining pass)
SIEVE_CONST uint PH_WRITTEN = 3u;   //   those logits in shared memory, before their rank sort
SIEVE_CONST uint PH_CHUNK = 4u;     //   the chunk listed (any path)
SIEVE_CONST uint PH_ARRIVED = 5u;   // counted in last (arrive.glsl)
SIEVE_CONST uint PH_STATS = 6u;     // the chunks' statistics and aggregates merged
SIEVE_CONST uint PH_LOCATED = 7u;   // the chunks' lists located (how much of each the array takes)
SIEVE_CONST uint PH_LISTS = 8u;     // the chunks' lists merged: the array
SIEVE_CONST uint PH_OP0 = 9u;       // after the chain's sampler at position i: PH_OP0 + i, i < SHORT_CHAIN_OPS
SIEVE_CONST uint PH_SELECTOR = 17u; // the learning selector's work before the draw
SIEVE_CONST uint PH_TOTAL = 18u;    // the draw's float total (rows with survivors past the array)
SIEVE_CONST uint PH_END = 19u;      // the row's result written

// A row's words in the candidates buffer (collect.glsl): up to
// MAX_COLLECT_CHUNKS chunks' lists of CAP / 2 (key, id) pairs, or, on a GPU,
// up to MAX_ROW_CHUNKS chunks of rows that keep few candidates (chunks x need
// <= CAP: each list fits its share, and the tail merges them at once).
SIEVE_CONST uint MAX_COLLECT_CHUNKS = 8u;
SIEVE_CONST uint MAX_ROW_CHUNKS = 64u;
// What each invocation of a chunk keeps while it reads (collect_chunk.glsl:
// PROBE): its probe's best logits, its register picks' best groups of 4.
// A chunk of a row with min-p's floor that sums full-row aggregates (the
// general variant: top-p before min-p, XTC after it) keeps at most that many
// an invocation of its workgroup (collect.glsl: chunk_need), not its whole
// share of the buffer: 256 at a CPU device's 64 invocations, 1024 at a GPU's
// 256. Only a flat row's crowded chunk keeps that many. More lets a row with
// more survivors in a chunk finish in the buffer (where 256 sent one with
// 257 in a chunk of a GPU's plan to the key levels' second submission, or to
// the CPU twin where top-p's cut lay among them), at the cost of a longer
// sort in each chunk of a row whose survivors pass the buffer anyway.
SIEVE_CONST uint PICKS_PER_INVOCATION = 4u;
// Keys a GPU's search round of a sorted list loads at once
// (collect_tail.glsl: entries_reaching; a CPU device's rounds take one).
SIEVE_CONST uint GPU_REACH_PROBES = 8u;
// A radix select's bins (radix.glsl: one 8-bit digit a level).
SIEVE_CONST uint RADIX_BINS = 256u;
// A GPU's radix chunks of at most this many logits an invocation go a level
// past the one that fits the buffer (collect_chunk.glsl: radix_gathered).
SIEVE_CONST uint RADIX_DEEP_LOGITS_PER_LANE = 64u;
// The group's collect_chunk.glsl variants' VkDispatchIndirectCommand (words of its
// indirect arguments, armed by the host before each submission: gpu_chain.cpp
// arm_collect): x is the chunks a row of the group is split into, 0 in the
// variant that does not run. collect_tail.glsl reads the x that ran.
SIEVE_CONST uint COLLECT_PLAIN_ARGS = 72u;
SIEVE_CONST uint COLLECT_GENERAL_ARGS = 76u;
// The most temperature divisions the wide passes take before a cut and in
// all (wide.glsl: WIDE_DIVISIONS).
SIEVE_CONST uint WIDE_MAX_DIVISIONS = 4u;

// A row's Adjust block (history.comp; engine/vulkan/gpu_chain_buffers.cpp: adjust_layout):
// the bitmap of adjusted tokens, 2^hash_bits entries of ADJ_ENTRY words,
// DRY's repeat counts (hist_cap words), the bitmap's prefix counts (one per
// word), the adjusted tokens' final logits by rank (hist_cap words): a
// logit is looked up without a loop; then the used entries (a count and up to
// hist_cap entry indices: every key is a history token), so that the history
// pass visits the entries in use, not all 2^hash_bits; then the marked tokens
// (a count and up to hist_cap ids: the bits the bitmap has set, which the
// next call clears).
SIEVE_CONST uint ADJ_ENTRY = 4u;
SIEVE_CONST uint ADJ_KEY = 0u;       // token + 1 (0 = empty)
SIEVE_CONST uint ADJ_COUNT = 1u;     // occurrences in the penalties' window
SIEVE_CONST uint ADJ_DRY = 2u;       // float: DRY's penalty (0 when none)
SIEVE_CONST uint ADJ_DRY_LEN = 3u;   // DRY's longest repeat the token extends, + 1 (0 = none)
// A row's block in words, the parts in the order above: the bitmap, the hash,
// DRY's repeats, the prefix counts, the values, the used entries (count and
// indices), the marked tokens (count and ids). The host passes 64-bit sizes.
#define SIEVE_ADJUST_ROW_WORDS(bitmap_words, hash_bits, hist_cap) \
    (2u * (bitmap_words) + (ADJ_ENTRY << (hash_bits)) + 4u * (hist_cap) + 2u)

// The history pass's dispatch (its `level` in the plan and the stage times):
// one workgroup per row (a CPU device's plan), or several per row (a GPU's:
// gpu_plan.cpp, history_groups_for). The shader tells them apart by its grid.
// HISTORY_CLEAR names the clearing dispatch 521950c's plan had before a split
// pass (the estimate's plan of that run, separate_history_clear); no plan
// records it today.
SIEVE_CONST uint HISTORY_WHOLE = 0u;
SIEVE_CONST uint HISTORY_CLEAR = 1u;
SIEVE_CONST uint HISTORY_BUILD = 2u;

// A row without a bias/bitmask block or DRY breakers (P_INPUTS, P_BREAKERS).
SIEVE_CONST uint NO_INPUTS = 0xFFFFFFFFu;

#undef SIEVE_CONST

#ifdef __cplusplus
// Host-only words of the same buffers (the shaders never read them).
//
// Per row group, GROUP_ARGS_WORDS of indirect dispatch arguments: words
// [0, SHADER_ARGS_WORDS) are armed by the shaders (the wide passes' and the
// levels'; reset by each recording), the rest by the host before each
// submission: which of collect_chunk.glsl's two variants runs and its chunks
// (COLLECT_PLAIN_ARGS, COLLECT_GENERAL_ARGS above).
inline constexpr uint GROUP_ARGS_WORDS = 80u;
// A VkDispatchIndirectCommand: x, y, z.
inline constexpr uint DISPATCH_COMMAND_WORDS = 3u;
// CHAIN_OPS_LO and CHAIN_OPS_HI: 8 ops of 4 bits each.
inline constexpr uint MAX_CHAIN_OPS = 16u;
// The positions of the tail's short build (tail.glsl: run_chain,
// SIEVE_SHORT_CHAIN): a chain of at most these many samplers on the GPU,
// all of them in CHAIN_OPS_LO.
inline constexpr uint SHORT_CHAIN_OPS = 8u;
static_assert(SHORT_CHAIN_OPS == MAX_CHAIN_OPS / 2, "tail.glsl's short build runs CHAIN_OPS_LO's positions");

static_assert(sizeof(Push) == 13 * sizeof(uint), "the push block: 13 words, no padding");
static_assert(P_PREFIX_LEN < PARAM_STRIDE, "the parameter block holds every P_*");
static_assert(ROW_FLOOR_LEVELS < (1u << 16), "ROW_* flags fit P_ROW_FLAGS");
static_assert(OP_XTC < 16u, "an op is a nibble of CHAIN_OPS_LO or CHAIN_OPS_HI");
static_assert(S_ADAPT_WEIGHT < SLOT_HEADER, "the slot header holds every S_*");
static_assert(C_TIE < CHUNK_STRIDE && C_AGG + 5u <= CHUNK_STRIDE, "a chunk's words fit CHUNK_STRIDE");
static_assert(R_ARRIVE < R_WIDE_CEND && R_WIDE_CEND < R_WIDE_PHASE, "the wide words follow the row's selection words");
static_assert(R_WIDE_TOP < ROW_STRIDE && R_TARGET_HI < ROW_STRIDE && R_WIDE_KHI < R_LEVEL_MODE &&
                  R_LEVEL_FLOOR < ROW_STRIDE && R_LEVEL_CUT_NEED < ROW_STRIDE,
              "a row's state holds the wide words, the target and the levels' floor");
static_assert(H_KEY_MAX < HIST_STRIDE, "a bin's words fit HIST_STRIDE");
static_assert(RES_FIRST_BAD < RES_RAW_TOKEN && RES_RAW_IDS + MAX_RAW_LOGPROBS <= RES_RAW_LOGITS &&
                  RES_RAW_LOGITS + MAX_RAW_LOGPROBS <= RES_PHASES,
              "a result's words fit before the phase marks");
#ifdef SIEVE_PHASE_CLOCK
static_assert(RES_PHASES + 2u * PHASE_MARKS <= RESULT_STRIDE && PH_END < PHASE_MARKS &&
                  PH_OP0 + SHORT_CHAIN_OPS == PH_SELECTOR,
              "the phase marks fit RESULT_STRIDE, one mark a position of the short chain");
#endif
static_assert(WIDE_HIST_ARGS + DISPATCH_COMMAND_WORDS <= WIDE_GATHER_ARGS &&
                  WIDE_GATHER_ARGS + DISPATCH_COMMAND_WORDS <= LEVEL_ARGS_STRIDE,
              "the wide passes' arguments come before level 1's");
static_assert(KEY_LEVELS * LEVEL_ARGS_STRIDE + DISPATCH_COMMAND_WORDS <= SHADER_ARGS_WORDS,
              "every level's arguments are armed by the shaders");
static_assert(SHADER_ARGS_WORDS <= COLLECT_PLAIN_ARGS && COLLECT_PLAIN_ARGS + 4u <= COLLECT_GENERAL_ARGS &&
                  COLLECT_GENERAL_ARGS + DISPATCH_COMMAND_WORDS <= GROUP_ARGS_WORDS,
              "the host's arguments follow the shaders'");
static_assert(ADJ_DRY_LEN < ADJ_ENTRY, "a history hash entry's words fit ADJ_ENTRY");
}  // namespace sieve::glsl
#endif

#endif
