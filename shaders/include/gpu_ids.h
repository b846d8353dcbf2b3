// The numbers the host and the shaders must agree on to find each other:
// descriptor bindings and specialization-constant ids. Included by C++
// (engine/vulkan/pipelines.hpp and the passes' hosts) and by GLSL (common.glsl and
// the self-contained shaders). Macros only, so that including it adds nothing
// to a shader's SPIR-V.
#ifndef SIEVE_GPU_IDS_H
#define SIEVE_GPU_IDS_H

// The passes' one descriptor set (common.glsl): storage buffers 0..12, then
// the logits again as a uniform texel buffer of vec4s.
#define BINDING_LOGITS 0         // [row][stride] floats (logits4.glsl: the same as vec4s)
#define BINDING_PARAMS 1         // [row][PARAM_STRIDE]: the host's parameter block
#define BINDING_CHUNK_STATS 2    // [row][chunk][CHUNK_STRIDE]
#define BINDING_ROW_STATE 3      // [row][ROW_STRIDE]
#define BINDING_SLOT_STATE 4     // slot records (SLOT_HEADER + history ring), bound whole
#define BINDING_HISTOGRAMS 5     // [row][chunk][bin][HIST_STRIDE]
#define BINDING_CANDIDATES 6     // [row][MAX_COLLECT_CHUNKS * CAP]
#define BINDING_RESULTS 7        // [row][RESULT_STRIDE]
#define BINDING_OUTPUT 8         // a distribution's probabilities (probabilities.comp, collect_tail.glsl)
#define BINDING_DISPATCH_ARGS 9  // [row group][GROUP_ARGS_WORDS], bound whole
#define BINDING_ROW_INPUTS 10    // per row: logit bias, token bitmask, DRY breakers
#define BINDING_WIDE 11          // per row: wide.glsl's buffer entries and list
#define BINDING_ADJUST 12        // per row: history.comp's table of adjusted logits
#define BINDING_STORAGE_COUNT 13
#define BINDING_LOGITS_TEXELS 13  // uniform texel buffer (logits4.glsl: TEXEL_READ)

// Specialization-constant ids: each id is one constant in every shader that
// declares it (engine/vulkan/pipelines.cpp: create_compute_pipeline sets them all).
#define SPEC_WG 0                // workgroup size (local_size_x_id)
#define SPEC_CAP 1               // candidate capacity (power of two)
#define SPEC_INPUTS_MODE 2       // common.glsl: INPUTS_MODE
#define SPEC_CHAIN_OPS_LO 3      // common.glsl: CHAIN_OPS_LO
#define SPEC_CHAIN_OPS_HI 4      // common.glsl: CHAIN_OPS_HI
#define SPEC_CHAIN_SELECTOR 5    // common.glsl: CHAIN_SELECTOR
#define SPEC_COLLECT_VARIANT 6   // collect_chunk.glsl: COLLECT_VARIANT
#define SPEC_TEXEL_READ 7        // logits4.glsl: TEXEL_READ
#define SPEC_INDEXED_BINS 8      // common.glsl: INDEXED_BINS
#define SPEC_WIDE_BINS 9         // wide.glsl: WIDE_BINS
#define SPEC_WIDE_DIVISIONS 10   // wide.glsl: WIDE_DIVISIONS
#define SPEC_WIDE_DIRECT 11      // wide.glsl: WIDE_DIRECT
#define SPEC_WIDE_ROWS_X4 12     // wide_histogram.comp, wide_gather.comp: WIDE_ROWS_X4
#define SPEC_INGEST_KIND 13      // ingest.comp: INGEST_KIND
#define SPEC_TAIL_SERIAL 14      // tail.glsl: TAIL_SERIAL
#define SPEC_EXACT_DIVISION 15   // common.glsl: EXACT_DIVISION
#define SPEC_FLOOR_LEVELS 16     // scan.glsl: FLOOR_LEVELS
#define SPEC_CHUNK_WG 17         // common.glsl: CHUNK_WG
#define SPEC_COUNT 18

#endif
