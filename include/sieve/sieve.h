/*
 * Sieve: next-token sampling from LLM logits on any Vulkan device.
 *
 * This is the stable C ABI. Everything is reached through opaque handles and
 * every call returns a sieve_status; sieve_last_error() gives a message for the
 * last failing call on the calling thread.
 *
 * Ownership
 *   - sieve_context_create*() returns a context the caller owns; release it with
 *     sieve_context_destroy(). Its chains keep what they need of it: a chain
 *     destroyed after its context works until then, and the context's device
 *     work and memory go with the last of them.
 *   - sieve_chain_create() returns a chain the caller owns; sieve_chain_destroy().
 *   - Pointers passed in (logits, names, options) are only read during the call;
 *     Sieve keeps no reference to them. Output arrays are written during the call.
 *   - Strings returned by Sieve (sieve_last_error, sieve_status_name) are owned by
 *     Sieve: the status names are static, the last-error string stays valid until
 *     the next Sieve call on the same thread.
 *
 * Thread safety
 *   - Different chains may be used from different threads at the same time, also
 *     when they share a context (the context serializes its queue internally).
 *   - One chain must not be used from two threads at once (external sync).
 *   - sieve_last_error() is per thread.
 *
 * Semantics follow llama.cpp's samplers (see docs/semantics.md).
 */
#ifndef SIEVE_SIEVE_H
#define SIEVE_SIEVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(SIEVE_BUILDING_LIBRARY)
#    define SIEVE_API __declspec(dllexport)
#  else
#    define SIEVE_API
#  endif
#else
#  define SIEVE_API __attribute__((visibility("default")))
#endif

/* ---- version and ABI rules ------------------------------------------------
 *
 * The version is MAJOR.MINOR.PATCH (sieve_version.h, generated from the build's
 * one project version). Compatibility is promised at the level of this C ABI
 * (sieve.h, sieve_vulkan.h); sieve.hpp is header-only and compiled into the app.
 *
 *   PATCH  fixes with no change to any declaration, struct or enum. Any library
 *          of the same MAJOR.MINOR replaces any other.
 *   MINOR  additions only: new functions, new enum values, new fields at the END
 *          of a struct that has a struct_size member, new accepted names (sampler
 *          or profile strings). A program built against MAJOR.m works with a
 *          loaded library MAJOR.n for n >= m.
 *   MAJOR  anything else: a removed or changed function, a changed field or enum
 *          value, a field added to a struct without struct_size (sieve_device_info,
 *          sieve_token, sieve_counters, ...: the caller allocates them, so their
 *          size is part of the ABI), a changed meaning.
 *
 * struct_size: the caller sets it (the *_init functions do) to the sizeof the
 * struct it was compiled with. The library reads only the fields that fit in
 * struct_size and gives every later field its documented default, so a program
 * built against an older minor keeps working with a newer library; a struct_size
 * smaller than the struct's first release is SIEVE_ERROR_INVALID_ARGUMENT. A
 * struct that gains a field keeps accepting each earlier size (as
 * sieve_context_options does since wait_spin_us and profile were appended).
 *
 * While MAJOR is 0, a MINOR bump may also make an incompatible change (the
 * "MAJOR" list above): each 0.MINOR is its own ABI, the shared library's SONAME is
 * libsieve.so.0.MINOR, and the CMake package accepts only the same 0.MINOR.
 * From 1.0 on, the SONAME is libsieve.so.MAJOR and the package accepts any
 * MINOR >= the one asked for. SIEVE_VERSION_COMPATIBLE(built, loaded) says
 * whether a program built against `built` may use the library `loaded`.
 *
 * Changes
 *   0.5.0  sieve_call_timing and sieve_chain_call_timing (where a profiled call's
 *          wall time went: to the GPU, on it, back to the host).
 *   0.4.0  sieve_context_options.max_storage_buffer_range (at the end: older
 *          callers get 0); sieve_device_info.compute_units and
 *          compute_units_known (at the end of a struct without struct_size:
 *          incompatible with 0.3, hence the new SONAME); sieve_stage_estimate
 *          and sieve_chain_plan_estimate (the plan's estimated GPU time per
 *          dispatch).
 *   0.3.0  sieve_context_options.profile (at the end: older callers get NULL)
 *          and sieve_device_info.profile (at the end of a struct without
 *          struct_size: incompatible with 0.2, hence the new SONAME),
 *          sieve_profile_parse, sieve_profile_name.
 *   0.2.0  the first installed release of this ABI. */

#include <sieve/sieve_version.h>

#define SIEVE_MAKE_VERSION(major, minor, patch) \
    ((((uint32_t)(major)) << 22) | (((uint32_t)(minor)) << 12) | ((uint32_t)(patch)))
#define SIEVE_VERSION SIEVE_MAKE_VERSION(SIEVE_VERSION_MAJOR, SIEVE_VERSION_MINOR, SIEVE_VERSION_PATCH)
#define SIEVE_VERSION_GET_MAJOR(v) (((uint32_t)(v)) >> 22)
#define SIEVE_VERSION_GET_MINOR(v) ((((uint32_t)(v)) >> 12) & 0x3FFu)
#define SIEVE_VERSION_GET_PATCH(v) (((uint32_t)(v)) & 0xFFFu)
#define SIEVE_VERSION_COMPATIBLE(built, loaded)                                 \
    (SIEVE_VERSION_GET_MAJOR(built) == SIEVE_VERSION_GET_MAJOR(loaded) &&      \
     (SIEVE_VERSION_GET_MAJOR(built) == 0                                      \
          ? SIEVE_VERSION_GET_MINOR(built) == SIEVE_VERSION_GET_MINOR(loaded)  \
          : SIEVE_VERSION_GET_MINOR(built) <= SIEVE_VERSION_GET_MINOR(loaded)))

/* The version of the library actually loaded: check it with
 * SIEVE_VERSION_COMPATIBLE(SIEVE_VERSION, sieve_version()). */
SIEVE_API uint32_t sieve_version(void);

/* ---- status ---------------------------------------------------------------- */

typedef enum sieve_status {
    SIEVE_OK = 0,
    SIEVE_ERROR_NULL_HANDLE = 1,        /* a handle argument was NULL */
    SIEVE_ERROR_INVALID_ARGUMENT = 2,   /* NULL pointer, negative size, sizes that disagree */
    SIEVE_ERROR_UNKNOWN_SAMPLER = 3,    /* a sampler name llama.cpp does not know */
    SIEVE_ERROR_UNSUPPORTED_SAMPLER = 4,/* a llama.cpp sampler Sieve does not implement yet */
    SIEVE_ERROR_INVALID_CHAIN = 5,      /* e.g. a sampler after the final draw */
    SIEVE_ERROR_INVALID_PARAMETER = 6,  /* NaN or infinite parameter, unknown parameter */
    SIEVE_ERROR_CAPACITY = 7,           /* rows or vocab 0 or beyond the chain's capacity */
    SIEVE_ERROR_DEVICE_LIMIT = 8,       /* a capacity the device cannot serve */
    SIEVE_ERROR_NON_FINITE_LOGIT = 9,   /* a row holds NaN or +Inf */
    SIEVE_ERROR_ALL_MASKED = 10,        /* every logit of a row is -Inf */
    SIEVE_ERROR_NO_DEVICE = 11,         /* no Vulkan device (or none matching the choice) */
    SIEVE_ERROR_VULKAN = 12,            /* a Vulkan call failed */
    SIEVE_ERROR_DEVICE_LOST = 13,
    SIEVE_ERROR_TIMEOUT = 14,           /* a host wait ran out; the chain stays usable */
    SIEVE_ERROR_OUT_OF_MEMORY = 15,
    SIEVE_ERROR_INTERNAL = 16,
    /* the chain has a sampling call in flight (sieve_sample_vulkan_async or
     * sieve_chain_record): finish it with sieve_chain_wait / sieve_chain_collect first */
    SIEVE_ERROR_PENDING = 17
} sieve_status;

/* Stable lowercase name of a status, e.g. "non_finite_logit". Never NULL. */
SIEVE_API const char* sieve_status_name(sieve_status status);

/* Message of the last failing call on this thread ("" after success). */
SIEVE_API const char* sieve_last_error(void);

/* ---- devices --------------------------------------------------------------- */

typedef enum sieve_device_type {
    SIEVE_DEVICE_OTHER = 0,
    SIEVE_DEVICE_INTEGRATED_GPU = 1,
    SIEVE_DEVICE_DISCRETE_GPU = 2,
    SIEVE_DEVICE_VIRTUAL_GPU = 3,
    SIEVE_DEVICE_CPU = 4
} sieve_device_type;

/* Optional device features Sieve can use; each has a fallback. */
typedef enum sieve_feature_bits {
    SIEVE_FEATURE_SUBGROUP_ARITHMETIC = 1u << 0,
    SIEVE_FEATURE_16BIT_STORAGE = 1u << 1,
    SIEVE_FEATURE_TIMELINE_SEMAPHORE = 1u << 2,
    /* vulkanMemoryModel with vulkanMemoryModelDeviceScope (Vulkan 1.2 core, or
     * VK_KHR_vulkan_memory_model on 1.1): the last-workgroup handoffs use
     * release/acquire atomics (shaders/include/arrive.glsl) */
    SIEVE_FEATURE_VULKAN_MEMORY_MODEL = 1u << 3,
    SIEVE_FEATURE_ALL = 0xFu
} sieve_feature_bits;

/* Profiles: plans recorded as another kind of device would record them, so a
 * test device (Mesa's lavapipe, a CPU) runs the plans real GPUs run. They
 * combine ("gpu,constrained": a small phone GPU). Names for
 * sieve_context_options.profile and env SIEVE_PROFILE: "device" (none), "gpu",
 * "constrained", "gpu,constrained". */
typedef enum sieve_profile_bits {
    SIEVE_PROFILE_DEVICE = 0,
    /* the plans a discrete GPU with the same features and limits records: its
     * chunk count per row (64), 256-invocation workgroups (or the device's
     * maximum), none of the CPU device's own shader paths or row groups; the
     * subgroup variants where the device has subgroup arithmetic. On a GPU it
     * changes nothing. */
    SIEVE_PROFILE_GPU = 1u << 0,
    /* the limits and features of a small phone GPU: no optional features,
     * 16 KiB shared memory, 128-invocation workgroups (the device's chunk
     * count is kept; any capped limit also turns off a CPU device's own
     * shader paths, which are tuned for its full limits) */
    SIEVE_PROFILE_CONSTRAINED = 1u << 1
} sieve_profile_bits;

typedef struct sieve_device_info {
    char name[256];
    char driver[256];
    uint32_t index;             /* position in sieve_enumerate_devices' order */
    sieve_device_type type;
    uint32_t vendor_id;
    uint32_t device_id;
    uint32_t api_version;       /* VK_MAKE_API_VERSION layout */
    uint32_t driver_version;
    uint64_t max_storage_buffer_range;
    uint32_t max_shared_memory;
    uint32_t max_workgroup_size;
    uint32_t subgroup_size;     /* informative only: Sieve never assumes it */
    uint32_t features;          /* sieve_feature_bits: present on the device (enumeration);
                                   usable by the context (sieve_context_device_info) */
    int32_t is_default;         /* 1 for the device an automatic choice picks */
    uint32_t workgroup_size;    /* a context's: the workgroup size its shaders run with */
    uint32_t candidate_capacity;/* a context's: rows up to this vocab are drawn in one dispatch */
    uint32_t profile;           /* a context's: the sieve_profile_bits in force (0 in enumeration) */
    /* Streaming multiprocessors / compute units / shader cores, what a GPU
     * plan sizes its grid by: from VK_NV_shader_sm_builtins,
     * VK_AMD_shader_core_properties or VK_ARM_shader_core_properties where
     * the device has one (compute_units_known 1), else a stand-in by device
     * type (0): 32 for a discrete or virtual GPU, 8 for an integrated one or
     * another kind, the host's hardware threads for a CPU device. */
    uint32_t compute_units;
    int32_t compute_units_known;
} sieve_device_info;

/* The profile a name stands for (sieve_profile_bits; NULL = env SIEVE_PROFILE,
 * unset = "device"): SIEVE_ERROR_INVALID_ARGUMENT for an unknown name, with a
 * message listing the valid ones. */
SIEVE_API sieve_status sieve_profile_parse(const char* name, uint32_t* profile);
/* "device", "gpu", "constrained" or "gpu,constrained". Never NULL. */
SIEVE_API const char* sieve_profile_name(uint32_t profile);

/* Lists Vulkan devices. Call with infos == NULL to get the count in *count;
 * otherwise *count is the capacity of infos on entry and the number written on
 * return. Devices are not opened. */
SIEVE_API sieve_status sieve_enumerate_devices(sieve_device_info* infos, uint32_t* count);

/* ---- context --------------------------------------------------------------- */

typedef struct sieve_context sieve_context;
typedef struct sieve_chain sieve_chain;

typedef enum sieve_backend {
    SIEVE_BACKEND_VULKAN = 0,   /* the GPU engine */
    SIEVE_BACKEND_CPU = 1       /* the CPU twin: the executable specification */
} sieve_backend;

/* Called for every validation-layer message (when validation is on). */
typedef void (*sieve_message_callback)(const char* message, void* user_data);

typedef struct sieve_context_options {
    uint32_t struct_size;       /* sizeof(sieve_context_options) */
    sieve_backend backend;
    /* Device choice: NULL = env SIEVE_DEVICE, else automatic (discrete >
     * integrated > virtual > CPU). A decimal string is an index, anything else a
     * case-insensitive substring of the device name. */
    const char* device;
    /* -1 = env SIEVE_VALIDATION (1 = on), 0 = off, 1 = on. */
    int32_t validation;
    /* Features to pretend absent (sieve_feature_bits) and limits to cap (0 =
     * the device's); the constrained profile (below) sets all features off,
     * 16 KiB shared memory and 128-invocation workgroups. */
    uint32_t disable_features;
    uint32_t max_shared_memory;    /* 0 or >= 16384 (Vulkan's guaranteed minimum) */
    uint32_t max_workgroup_size;   /* 0 or >= 32; also the size used when set (else 256 on GPUs, 64 on CPU devices) */
    sieve_message_callback message_callback; /* NULL = print to stderr */
    void* message_user_data;
    /* A blocking sampling call (sieve_sample, sieve_sample_vulkan, ...) may
     * poll its submission's fence near the time it expects the device to
     * finish instead of sleeping through it: a sleeping thread can wake tens
     * of microseconds after the device finished. With a window of W
     * microseconds and calls of the same shape that recently took about E,
     * the call sleeps until E - W, polls (yielding the thread between polls)
     * until E + W at most, then sleeps again: at most 2 W of polling a call.
     * On a device that is not a CPU, a call whose fence signaled while it
     * slept sets E to E - W at most (its time held the wake-up too).
     * The first call of a shape, and waits that are not a sampling call's
     * (sieve_chain_wait, ...), sleep at once; sieve_context_calibrate waits
     * as the calls do, so its floor is theirs. 0 = never poll; -1 = env
     * SIEVE_WAIT_SPIN_US, else 20 on a GPU and 0 on a CPU device (lavapipe),
     * whose polling thread competes with the device's own for the host's
     * cores; at most 1000000. A window longer than the call polls from the
     * start: on lavapipe (2 cores) 2000 made top_p;temperature at vocab
     * 151936 run half its calls near 0.75 ms and half near 1.13. A caller
     * whose struct_size ends before this field gets -1. */
    int32_t wait_spin_us;
    /* The profile (sieve_profile_bits, by name): NULL = env SIEVE_PROFILE, else
     * "device"; "device", "gpu", "constrained" or "gpu,constrained". An unknown
     * name is SIEVE_ERROR_INVALID_ARGUMENT. Profiles shape the Vulkan backend's
     * plans: the CPU backend ignores env SIEVE_PROFILE and refuses a profile
     * named here (SIEVE_ERROR_INVALID_ARGUMENT). A caller whose struct_size
     * ends before this field gets NULL. */
    const char* profile;
    /* A cap on the storage-buffer binding range the plans use (0 = the
     * device's maxStorageBufferRange; a larger value changes nothing). Buffers
     * whose rows pass it are bound in row windows (README: "Batches"), so a
     * smaller cap makes any device split what a smaller one would: how tests
     * cover the windows on every GPU. 0 or >= 4194304 (4 MiB: every per-row
     * buffer of the largest vocabulary, 262144). A caller whose struct_size
     * ends before this field gets 0. */
    uint64_t max_storage_buffer_range;
} sieve_context_options;

/* Fills defaults: Vulkan backend, automatic device, validation from env. */
SIEVE_API void sieve_context_options_init(sieve_context_options* options);

/* options may be NULL (defaults). */
SIEVE_API sieve_status sieve_context_create(const sieve_context_options* options, sieve_context** out);
SIEVE_API void sieve_context_destroy(sieve_context* context);
SIEVE_API sieve_status sieve_context_device_info(const sieve_context* context, sieve_device_info* out);
/* Number of validation messages seen so far (0 when validation is off). */
SIEVE_API sieve_status sieve_context_validation_messages(const sieve_context* context, uint64_t* out);

/* ---- chain ----------------------------------------------------------------- */

typedef struct sieve_chain_desc {
    uint32_t struct_size;       /* sizeof(sieve_chain_desc) */
    /* The ordered samplers, llama.cpp names separated by ';' (also accepts ','),
     * e.g. "temperature;dist" or "greedy". NULL or "" = llama.cpp's default
     * chain. When the chain does not end with "dist" or "greedy", "dist" is
     * appended, as llama.cpp's common sampler does. */
    const char* samplers;
    int32_t max_rows;           /* capacity: rows per call (>= 1) */
    int32_t max_vocab;          /* capacity: vocabulary size (>= 1) */
    /* Defaults for every row; change per row with sieve_chain_set_param. */
    float temperature;          /* llama.cpp default 0.8 */
    uint32_t seed;              /* SIEVE_SEED_RANDOM = pick one */
    int32_t min_keep;           /* llama.cpp default 0 */
    /* Sequence slots: the state that lives across calls (the accepted-token
     * history, mirostat's mu, adaptive-p's average, the RNG step) belongs to a
     * slot; each call maps its rows to slots (sieve_chain_set_slots). 0 = max_rows. */
    int32_t max_slots;
    /* Tokens of history each slot keeps: the largest repeat_last_n /
     * dry_penalty_last_n any row may use (default 1024, at most 65536). */
    int32_t history_capacity;
    /* A capacity the backend cannot serve is SIEVE_ERROR_DEVICE_LIMIT: on the
     * CPU backend, rows' parameters and slot records beyond 1 GiB of host
     * memory (e.g. max_slots 2^31 - 1). */
} sieve_chain_desc;

#define SIEVE_SEED_RANDOM 0xFFFFFFFFu   /* llama.cpp's LLAMA_DEFAULT_SEED */

SIEVE_API void sieve_chain_desc_init(sieve_chain_desc* desc);
SIEVE_API sieve_status sieve_chain_create(sieve_context* context, const sieve_chain_desc* desc, sieve_chain** out);
SIEVE_API void sieve_chain_destroy(sieve_chain* chain);

/* Per-row parameters. They live in a parameter block the GPU reads at every
 * call: changing them re-records nothing. */
typedef enum sieve_param {
    SIEVE_PARAM_TEMPERATURE = 0,    /* <= 0: greedy masking, as llama.cpp */
    SIEVE_PARAM_SEED = 1,           /* integer in [0, 2^32-1]; resets the row's step */
    SIEVE_PARAM_MIN_KEEP = 2,       /* llama.cpp's min_keep for the truncating samplers */
    /* The truncating samplers' parameters, with llama.cpp's names, defaults and
     * meanings (docs/semantics.md): */
    SIEVE_PARAM_TOP_K = 3,              /* integer; <= 0 = off (default 40) */
    SIEVE_PARAM_TOP_P = 4,              /* >= 1 = off (default 0.95) */
    SIEVE_PARAM_MIN_P = 5,              /* <= 0 = off (default 0.05) */
    SIEVE_PARAM_TYPICAL_P = 6,          /* >= 1 = off (default 1.0) */
    SIEVE_PARAM_TOP_N_SIGMA = 7,        /* <= 0 = off (default -1.0) */
    SIEVE_PARAM_XTC_PROBABILITY = 8,    /* <= 0 = off (default 0.0) */
    SIEVE_PARAM_XTC_THRESHOLD = 9,      /* > 0.5 = off (default 0.1) */
    SIEVE_PARAM_DYNATEMP_RANGE = 10,    /* <= 0 = plain temperature (default 0.0) */
    SIEVE_PARAM_DYNATEMP_EXPONENT = 11, /* default 1.0 */
    /* The samplers that read the slot's history (docs/semantics.md). A last_n
     * is an integer in [0, history_capacity]; llama.cpp's -1 ("the context")
     * is refused: Sieve has no context, set the window explicitly. */
    SIEVE_PARAM_REPEAT_LAST_N = 12,         /* penalties' window; 0 = off (default 64) */
    SIEVE_PARAM_REPEAT_PENALTY = 13,        /* > 0; 1 = off (default 1.0) */
    SIEVE_PARAM_FREQUENCY_PENALTY = 14,     /* default 0.0 */
    SIEVE_PARAM_PRESENCE_PENALTY = 15,      /* default 0.0 */
    SIEVE_PARAM_DRY_MULTIPLIER = 16,        /* 0 = off (default 0.0) */
    SIEVE_PARAM_DRY_BASE = 17,              /* < 1 = off (default 1.75) */
    SIEVE_PARAM_DRY_ALLOWED_LENGTH = 18,    /* integer >= 0 (default 2) */
    SIEVE_PARAM_DRY_PENALTY_LAST_N = 19,    /* DRY's window; 0 = off (default: history_capacity) */
    SIEVE_PARAM_MIROSTAT_TAU = 20,          /* target surprise (default 5.0); mu starts at 2 tau; in [-1e6, 1e6] */
    SIEVE_PARAM_MIROSTAT_ETA = 21,          /* learning rate (default 0.1); in [-1e6, 1e6] */
    SIEVE_PARAM_ADAPTIVE_TARGET = 22,       /* adaptive-p's target; < 0 = a plain draw; in [-1e6, 1e6] */
    SIEVE_PARAM_ADAPTIVE_DECAY = 23         /* adaptive-p's decay */
} sieve_param;

/* row = -1 sets every row. */
SIEVE_API sieve_status sieve_chain_set_param(sieve_chain* chain, int32_t row, sieve_param param, double value);
SIEVE_API sieve_status sieve_chain_get_param(const sieve_chain* chain, int32_t row, sieve_param param, double* value);
/* Resets the state of the slot `row` maps to: its history, mirostat mu,
 * adaptive-p average and RNG step; row = -1 resets every slot. */
SIEVE_API sieve_status sieve_chain_reset(sieve_chain* chain, int32_t row);

/* ---- sequence slots ---------------------------------------------------------
 * A slot's state lives in device memory the GPU reads and writes directly: the
 * token a call draws is appended to its slot's history by the same submission
 * (sieve_sample; sieve_sample_draws and sieve_chain_distribution change no
 * slot). The calls below act between sampling calls, on the host's view of that
 * memory (no submission, no copy through a staging buffer). */

/* Maps rows to slots for the following calls: row r uses slots[r] for
 * r < n, slot r beyond (NULL = every row r uses slot r). Slots are in
 * [0, max_slots); a call whose rows would share a slot fails with
 * SIEVE_ERROR_INVALID_ARGUMENT (two appends to one history have no order). */
SIEVE_API sieve_status sieve_chain_set_slots(sieve_chain* chain, const int32_t* slots, int32_t n);

/* Appends tokens chosen elsewhere (a prompt, a grammar engine, a speculative
 * verifier) to the history of the slot `row` maps to, oldest first, as
 * llama.cpp's accept would. Ids must be in [0, max_vocab). Mirostat and
 * adaptive-p learn only from tokens they drew, as in llama.cpp. */
SIEVE_API sieve_status sieve_accept(sieve_chain* chain, int32_t row, const int32_t* tokens, int32_t n);

/* Slot to slot on the device (beam search forks a sequence; a speculative
 * decoder keeps a spare slot to roll back to). */
SIEVE_API sieve_status sieve_chain_copy_slot(sieve_chain* chain, int32_t src_slot, int32_t dst_slot);
SIEVE_API sieve_status sieve_chain_reset_slot(sieve_chain* chain, int32_t slot);

/* A slot's whole state as an opaque blob of sieve_chain_slot_state_size bytes,
 * restorable into any slot of a chain with the same history capacity. */
SIEVE_API sieve_status sieve_chain_slot_state_size(const sieve_chain* chain, size_t* bytes);
SIEVE_API sieve_status sieve_chain_save_slot(sieve_chain* chain, int32_t slot, void* data, size_t size);
SIEVE_API sieve_status sieve_chain_restore_slot(sieve_chain* chain, int32_t slot, const void* data, size_t size);

/* A slot's history, oldest first: *count receives its length (at most
 * history_capacity), at most `capacity` tokens (the newest) are written. */
SIEVE_API sieve_status sieve_chain_slot_history(sieve_chain* chain, int32_t slot, int32_t* tokens, int32_t capacity,
                                                int32_t* count);

/* A row's DRY sequence breakers as token-id sequences (llama.cpp's
 * --dry-sequence-breaker, tokenized by the caller): `tokens` holds the
 * sequences back to back, lengths[i] tokens each (head token first). n = 0
 * clears them; row = -1 sets every row. Each sequence has 1..32 tokens with
 * ids in [0, max_vocab); at most 64 sequences and 256 tokens per row. */
SIEVE_API sieve_status sieve_chain_set_dry_breakers(sieve_chain* chain, int32_t row, const int32_t* tokens,
                                                    const int32_t* lengths, int32_t n);

/* A row's logit bias (llama.cpp's --logit-bias: added to the logit before the
 * chain, as its common sampler does; -INFINITY bans a token). Replaces the row's
 * list; n = 0 clears it; row = -1 sets every row. Token ids must be in
 * [0, max_vocab) and finite or -INFINITY biases (llama.cpp skips bad ids
 * silently; Sieve refuses them). The list is copied. A GPU chain takes at most
 * 1024 entries per row (SIEVE_ERROR_CAPACITY beyond). */
SIEVE_API sieve_status sieve_chain_set_logit_bias(sieve_chain* chain, int32_t row, const int32_t* tokens,
                                                  const float* biases, int32_t n);
/* A row's allowed-token bitmask, as structured-output engines produce it:
 * ceil(vocab / 32) words, bit (id % 32) of word (id / 32) set = allowed. Applied
 * before the chain (disallowed tokens become -inf), which differs from
 * llama.cpp's sample-then-check grammar. words = NULL clears it; the mask is
 * copied. A call whose vocab needs more words than were set fails; a row whose
 * mask allows nothing gets SIEVE_ERROR_ALL_MASKED. */
SIEVE_API sieve_status sieve_chain_set_token_bitmask(sieve_chain* chain, int32_t row, const uint32_t* words,
                                                     int32_t n_words);

typedef struct sieve_token {
    int32_t token;          /* -1 when status != SIEVE_OK */
    float p;                /* probability under the final distribution */
    float logprob;          /* natural log of p */
    sieve_status status;    /* per row: a bad row does not stop the others */
    uint32_t seed;          /* the seed actually used (a drawn one for SIEVE_SEED_RANDOM) */
    uint32_t step;          /* the RNG step used for this token */
    uint32_t row_passes;    /* full-row reads this row's token needed on the device */
} sieve_token;

/* Samples one token per row from row-major f32 logits [rows][vocab]. Returns
 * SIEVE_OK when every row succeeded, otherwise the status of the first failed
 * row (each row's own status is in out[i].status). Each successful row's step
 * advances by one. A call-level failure (bad sizes or arguments, a busy chain,
 * a device error: nothing is sampled) writes its status into out[i].status,
 * with token -1 and every other field 0, for each i < min(rows, max_rows) when
 * out is not NULL; so do sieve_sample_logits, sieve_sample_draws (when out is
 * not NULL) and sieve_sample_vulkan. After SIEVE_ERROR_TIMEOUT (the host's wait
 * ran out; reported the same way) the call's submission still runs to its end,
 * the chain's next call waits for it, and what it commits takes effect though
 * the call returned no token: each successful row's token joins its slot's
 * history and its step advances (sieve_verify commits nothing then). */
SIEVE_API sieve_status sieve_sample(sieve_chain* chain, const float* logits, int32_t rows, int32_t vocab,
                                    sieve_token* out);

/* Draws `draws` tokens per row from the same distribution, advancing each row's
 * step once per draw (no other state changes). tokens is [rows][draws]; out may
 * be NULL, otherwise it receives the last draw's sieve_token per row. */
SIEVE_API sieve_status sieve_sample_draws(sieve_chain* chain, const float* logits, int32_t rows, int32_t vocab,
                                          int32_t draws, int32_t* tokens, sieve_token* out);

/* Logits the way an inference engine holds them: f32, f16 (IEEE binary16) or
 * bf16 values, row r starting row_stride elements after row r-1 (rows inside a
 * larger tensor). f16 and bf16 are widened to f32 exactly: sampling them gives
 * the same result as sampling their f32 values. */
typedef enum sieve_dtype {
    SIEVE_DTYPE_F32 = 0,
    SIEVE_DTYPE_F16 = 1,
    SIEVE_DTYPE_BF16 = 2
} sieve_dtype;

typedef struct sieve_logits {
    uint32_t struct_size;   /* sizeof(sieve_logits) */
    const void* data;       /* rows x row_stride elements of dtype, read during the call */
    sieve_dtype dtype;
    int32_t rows;
    int32_t vocab;
    int64_t row_stride;     /* elements between row starts, >= vocab; 0 = vocab */
} sieve_logits;

/* Fills struct_size, the pointer, the dtype and the sizes; row_stride = 0. */
SIEVE_API void sieve_logits_init(sieve_logits* logits, const void* data, sieve_dtype dtype, int32_t rows,
                                 int32_t vocab);

/* sieve_sample over a sieve_logits: the same rules, statuses and results. */
SIEVE_API sieve_status sieve_sample_logits(sieve_chain* chain, const sieve_logits* logits, sieve_token* out);

/* The final distribution the draw of one row would use (no state changes):
 * surviving token ids and their probabilities in canonical order (descending
 * probability, ties by lower id). *count receives the number of survivors;
 * at most `capacity` entries are written. */
SIEVE_API sieve_status sieve_chain_distribution(sieve_chain* chain, const float* logits, int32_t rows,
                                                int32_t vocab, int32_t row, int32_t* ids, float* probs,
                                                int32_t capacity, int32_t* count);

/* ---- log-probabilities -------------------------------------------------------
 * OpenAI-style logprobs of the model's raw distribution: the softmax of the
 * logits as given (temperature 1, before the logit bias, penalties and every
 * sampler). The final distribution's p and logprob of the drawn token are in
 * sieve_token. */
#define SIEVE_MAX_TOP_LOGPROBS 20

typedef struct sieve_logprobs {
    float raw_p;            /* the drawn token's probability under the raw distribution */
    float raw_logprob;      /* its natural log */
    int32_t n_top;          /* entries below: min(n, the row's finite logits) */
    int32_t top_ids[SIEVE_MAX_TOP_LOGPROBS];      /* most probable first, ties by lower id */
    float top_logprobs[SIEVE_MAX_TOP_LOGPROBS];   /* their raw log-probabilities */
} sieve_logprobs;

/* Asks the following sampling calls (sieve_sample, sieve_sample_logits,
 * sieve_sample_vulkan) for logprobs: n = -1 none (the default), 0 the drawn
 * token's raw log-probability, 1..SIEVE_MAX_TOP_LOGPROBS also the n most
 * probable tokens. On the GPU it costs one more pass over each row. */
SIEVE_API sieve_status sieve_chain_set_logprobs(sieve_chain* chain, int32_t n);
/* Row `row`'s logprobs from the last sampling call. SIEVE_ERROR_INVALID_ARGUMENT
 * when logprobs were off for that call, no call ran, the row is outside it, or
 * the row failed (its token's status). */
SIEVE_API sieve_status sieve_chain_logprobs(const sieve_chain* chain, int32_t row, sieve_logprobs* out);

/* ---- candidate export --------------------------------------------------------
 * A GPU prefix of the chain, finished on the host: a chain of the samplers the
 * GPU runs (e.g. "top_k;top_p;min_p;temperature"), whose survivors go to CPU
 * samplers the app owns (a grammar, a custom processor), as llama.cpp's backend
 * sampling does. */
typedef struct sieve_candidate {
    int32_t id;
    float logit;    /* the survivor's logit as the chain leaves it, shifted by a per-row constant
                       so that the survivors' log-sum-exp is 0: logit = ln p */
    float p;        /* its probability under the chain's distribution (what the draw would use) */
} sieve_candidate;

/* Runs the chain's samplers (not its final draw) over every row, with no state
 * change (as sieve_chain_distribution), and copies each row's survivors in
 * canonical order (descending p, ties by lower id): out is [rows][capacity],
 * counts[r] receives row r's number of survivors, of which the first
 * min(counts[r], capacity) are written. Returns SIEVE_OK or the first failed
 * row's status (that row's count is 0). The logits are one sieve_logits. */
SIEVE_API sieve_status sieve_chain_candidates(sieve_chain* chain, const sieve_logits* logits, sieve_candidate* out,
                                              int32_t capacity, int32_t* counts);

/* ---- speculative decoding -----------------------------------------------------
 * Verifies the draft tokens of one or many sequences in one call: for each
 * sequence, its n_draft draft tokens and n_draft + 1 rows of target logits
 * (positions 0..n_draft: position i is the model's output after the sequence's
 * history plus drafts 0..i-1). The call emits the accepted drafts and one more
 * token (the correction at the first rejected position, or the bonus after the
 * last draft), and advances the sequence's slot by exactly those tokens.
 *
 * Sequence s is row s of the chain: its parameters, its logit bias, bitmask and
 * DRY breakers, and the slot sieve_chain_set_slots maps row s to (two
 * sequences of one call may not share a slot). Position i of a sequence whose
 * slot is at step t sees the slot's history plus drafts 0..i-1 (the penalties'
 * and DRY's windows included) and RNG step t + i; the slot ends at step t + k,
 * k being the number of tokens emitted, with those tokens in its history.
 *
 * SIEVE_VERIFY_MATCH is llama.cpp's rule (common_sampler_sample_and_accept_n):
 * position i samples with the full chain; the token is emitted, and the next
 * position runs only when it equals draft i. The tokens are those of calling
 * sieve_sample position by position with the slot accepting each token:
 * mirostat's mu and adaptive-p's average carry from position to position.
 *
 * On the Vulkan backend a call is one submission: every position of every
 * sequence is a row of one grid (on a GPU, a second one when a chain without
 * truncation needs its deeper selection levels for some row). The exception is the match mode of a chain
 * with mirostat, mirostat_v2 or adaptive_p, whose position i needs the learnt
 * state position i - 1 left: one submission per position, every sequence's
 * position i in the same one.
 *
 * SIEVE_VERIFY_REJECTION is speculative sampling (Leviathan et al. 2023; Chen et
 * al. 2023), which keeps the chain's distribution exactly: with p_i the chain's
 * final distribution at position i and q_i the draft model's, draft x_i is
 * accepted when u * q_i(x_i) < p_i(x_i), u the Philox uniform of (seed, step
 * t + i, draw 1): with probability min(1, p_i(x_i) / q_i(x_i)). At the first
 * rejection the correction is drawn from max(0, p_i - q_i), renormalized, by
 * canonical inverse CDF with the uniform of (seed, t + i, draw 0) (p_i itself
 * where the residual has no mass); when every draft is accepted the bonus is
 * the chain's ordinary draw at step t + n_draft. A chain with a learnt state
 * (mirostat, mirostat_v2, adaptive-p) is refused: their update depends on how a
 * token was drawn, which rejection sampling changes.
 *
 * Draft probabilities for the rejection mode: SIEVE_DRAFT_PROBS_DENSE gives
 * n_draft rows of vocab f32 (q_i over the whole vocabulary: finite, >= 0, each
 * row summing to 1 within 1e-3); SIEVE_DRAFT_PROBS_TOKEN gives q_i(x_i) alone
 * (in (0, 1]), q_i being 0 elsewhere: exact for one-hot drafts (greedy drafters,
 * n-grams: q_i(x_i) = 1), an approximation otherwise. The match mode takes
 * SIEVE_DRAFT_PROBS_NONE, and so does a sequence with no draft in either mode. */
#define SIEVE_MAX_DRAFT 16

typedef enum sieve_verify_mode {
    SIEVE_VERIFY_MATCH = 0,
    SIEVE_VERIFY_REJECTION = 1
} sieve_verify_mode;

typedef enum sieve_draft_probs {
    SIEVE_DRAFT_PROBS_NONE = 0,
    SIEVE_DRAFT_PROBS_DENSE = 1,
    SIEVE_DRAFT_PROBS_TOKEN = 2
} sieve_draft_probs;

typedef struct sieve_draft {
    uint32_t struct_size;       /* sizeof(sieve_draft) */
    int32_t n_draft;            /* 0..SIEVE_MAX_DRAFT */
    const int32_t* tokens;      /* n_draft ids in [0, vocab); may be NULL when n_draft is 0 */
    sieve_draft_probs probs_kind;
    const float* probs;         /* DENSE: [n_draft][vocab]; TOKEN: [n_draft]; NONE: NULL */
} sieve_draft;

/* Fills struct_size, n_draft and tokens; no draft probabilities. */
SIEVE_API void sieve_draft_init(sieve_draft* draft, const int32_t* tokens, int32_t n_draft);

typedef struct sieve_verified {
    sieve_status status;        /* the sequence's: a bad sequence does not stop the others */
    int32_t n_tokens;           /* tokens emitted: accepted drafts + 1; 0 when status != SIEVE_OK */
    int32_t n_accepted;         /* drafts accepted (n_tokens - 1; 0 on failure) */
} sieve_verified;

/* logits holds the sequences' positions back to back (sequence 0's n_0 + 1
 * rows, then sequence 1's, ...), at most max_rows rows in all; n_seq >= 1.
 * tokens has one entry per logits row: sequence s's emitted tokens are the
 * first out[s].n_tokens entries of its rows (the token, p and logprob under the
 * position's final distribution, the step used), the entries after them have
 * token -1 and status SIEVE_OK. Returns SIEVE_OK when every sequence succeeded,
 * else the first failed sequence's status; a failed sequence's slot is
 * unchanged. A call-level failure (bad arguments, a busy chain, a wait that ran
 * out, part way through the positions or not) changes no slot and writes its
 * status into out[s] (n_tokens 0) for s < min(n_seq, max_rows) when out is not
 * NULL; n_seq outside 1..max_rows is SIEVE_ERROR_CAPACITY. */
SIEVE_API sieve_status sieve_verify(sieve_chain* chain, const sieve_logits* logits, const sieve_draft* drafts,
                                    int32_t n_seq, sieve_verify_mode mode, sieve_token* tokens,
                                    sieve_verified* out);

/* Engine counters: what tests read to prove steady state records and allocates
 * nothing. */
typedef struct sieve_counters {
    uint64_t submits;
    uint64_t recordings;        /* call shapes recorded (their command buffers, once each) */
    uint64_t dispatches;        /* dispatches submitted (summed over submits) */
    uint64_t allocations;       /* device memory allocations */
    uint64_t row_passes;        /* full-row reads submitted (per row, summed) */
    uint64_t cpu_fallback_rows; /* rows the GPU could not finish exactly (survivors beyond
                                   its candidate buffer) and the CPU twin sampled instead */
} sieve_counters;

SIEVE_API sieve_status sieve_chain_counters(const sieve_chain* chain, sieve_counters* out);

/* Per-token plan figures for `rows` x `vocab`: dispatches and full-row passes. */
SIEVE_API sieve_status sieve_chain_plan_figures(const sieve_chain* chain, int32_t rows, int32_t vocab,
                                                uint32_t* dispatches, uint32_t* row_passes);

/* Per-stage GPU time from timestamp queries. Profiling records separate
 * command buffers with timestamps (once per shape); off by default. The CPU
 * backend has no stages (count 0). */
typedef struct sieve_stage_time {
    char stage[32];     /* shader stage, e.g. "row_stats", "mass_histogram" */
    uint32_t level;     /* radix level for histogram/scan passes */
    double gpu_us;      /* GPU time of the dispatch in the last call, microseconds */
} sieve_stage_time;

SIEVE_API sieve_status sieve_chain_set_profiling(sieve_chain* chain, int32_t enabled);
/* Stage times of the last sampling call (the last draw). *count receives the
 * number of stages; at most `capacity` are written. */
SIEVE_API sieve_status sieve_chain_stage_times(const sieve_chain* chain, sieve_stage_time* out, uint32_t capacity,
                                               uint32_t* count);

/* Where the last profiled call's wall time went, for the calls the chain
 * submits and waits for itself (sieve_sample, sieve_sample_vulkan,
 * sieve_chain_distribution; the first submission of a call that needs two). The host's
 * times are CLOCK_MONOTONIC around the submit and the fence wait; the device's,
 * timestamps at the start and the end of the call's command buffer (after an
 * ingest pass, if any), put on the host's clock with
 * VK_EXT_calibrated_timestamps where the device offers it (on a context Sieve
 * created; not on an app's device):
 *   wall_us          the submit call's start to the wait's return;
 *   gpu_span_us      the command buffer's first command to its last, on the GPU;
 *   submit_to_gpu_us the submit's start to the GPU's first command (with calibrated);
 *   gpu_to_host_us   the GPU's last command to the wait's return (with calibrated);
 *   deviation_us     the calibration's maximum deviation, a bound on the error of
 *                    the two figures above. */
typedef struct sieve_call_timing {
    double wall_us;
    double gpu_span_us;
    double submit_to_gpu_us;
    double gpu_to_host_us;
    double deviation_us;
    int32_t calibrated;  /* 1: submit_to_gpu_us, gpu_to_host_us and deviation_us are set; 0: they are 0 */
    int32_t reserved;
} sieve_call_timing;

/* SIEVE_ERROR_INVALID_ARGUMENT for a NULL out, for the CPU backend (no device),
 * or when no profiled call has run since profiling was turned on. */
SIEVE_API sieve_status sieve_chain_call_timing(const sieve_chain* chain, sieve_call_timing* out);

/* The plan's dispatches for `rows` x `vocab` with an ESTIMATE of each one's GPU
 * time, never a measurement: a model of the reference GPU (an NVIDIA H200, 132
 * SMs) fitted to its measured stage times (docs/architecture/estimate.md),
 * from the plan's workgroups, the logits its busiest workgroup reads, its
 * serial steps and the launch. It describes the plan this context records
 * (SIEVE_PROFILE=gpu on any device records a GPU's), whatever device runs it.
 * Indirect dispatches are estimated as the rows are expected to take them
 * (`workgroups` 0: expected empty, est_us its launch alone). */
typedef struct sieve_stage_estimate {
    char stage[32];       /* shader stage, as sieve_stage_time names it */
    uint32_t level;       /* radix level for histogram passes */
    uint32_t workgroups;  /* expected to launch, over all row groups */
    uint32_t indirect;    /* 1: the data or the host decides its grid when the call runs */
    double est_us;        /* estimated GPU time on the reference GPU, microseconds */
} sieve_stage_estimate;

/* *count receives the number of dispatches; at most `capacity` are written (out
 * may be NULL when capacity is 0). The CPU backend has no plan: count 0.
 * SIEVE_ERROR_INVALID_ARGUMENT for a NULL count, or a NULL out with capacity > 0;
 * SIEVE_ERROR_CAPACITY for rows or vocab outside the chain's capacity (as
 * sieve_chain_plan_figures). */
SIEVE_API sieve_status sieve_chain_plan_estimate(const sieve_chain* chain, int32_t rows, int32_t vocab,
                                                 sieve_stage_estimate* out, uint32_t capacity, uint32_t* count);

/* ---- calibration ------------------------------------------------------------- */

/* What the device costs at the least: the figures `sieve bench` divides a case's
 * latency by (docs/bench.md). Measured with wall-clock host timers, each the
 * median over `iterations` submit-and-waits after a short warm-up, the host
 * waiting as a sampling call waits (sieve_context_options.wait_spin_us):
 *   submit_us      an empty command buffer submitted and waited for;
 *   pass_total_us  one bare pass over rows x vocab f32 logits in device memory
 *                  (shaders/stages/calibrate.comp: a vec4 max-reduction per chunk,
 *                  the engine's chunking, nothing else), submitted and waited for;
 *   pass_us        pass_total_us - submit_us (at least 0): the pass alone.
 * Buffers and the pipeline are created and destroyed by the call; chains are not
 * touched. A CPU-backend context has no device: SIEVE_ERROR_INVALID_ARGUMENT. */
typedef struct sieve_calibration {
    double submit_us;
    double pass_total_us;
    double pass_us;
    uint32_t iterations;
    uint32_t workgroups;    /* workgroups of the pass: chunks per row x rows */
} sieve_calibration;

SIEVE_API sieve_status sieve_context_calibrate(sieve_context* context, int32_t vocab, int32_t rows,
                                               int32_t iterations, sieve_calibration* out);

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_SIEVE_H */
