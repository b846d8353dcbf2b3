/*
 * Sieve on the application's own Vulkan objects.
 *
 * Include after <vulkan/vulkan.h> (or volk.h). The application keeps ownership of
 * every handle it passes: Sieve never destroys them, and they must outlive the
 * context and every chain created from it. The application owns external synchronization of the queue: Sieve
 * submits to it from inside sieve_* calls only, so the app must not submit to the
 * same queue from another thread during those calls.
 */
#ifndef SIEVE_SIEVE_VULKAN_H
#define SIEVE_SIEVE_VULKAN_H

#include "sieve.h"

#ifndef VK_VERSION_1_0
#  error "include <vulkan/vulkan.h> (or volk.h) before <sieve/sieve_vulkan.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sieve_vulkan_device {
    uint32_t struct_size;                   /* sizeof(sieve_vulkan_device) */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* NULL = the system loader's */
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    VkQueue queue;                          /* must support compute */
    uint32_t queue_family_index;
    uint32_t api_version;                   /* the apiVersion the device was created with (>= 1.1) */
    /* Optional features the app enabled on `device` (sieve_feature_bits):
     * Vulkan cannot be asked which ones were enabled.
     * SIEVE_FEATURE_VULKAN_MEMORY_MODEL means both vulkanMemoryModel and
     * vulkanMemoryModelDeviceScope (and, on Vulkan 1.1, the extension). */
    uint32_t enabled_features;
} sieve_vulkan_device;

SIEVE_API sieve_status sieve_context_create_vulkan(const sieve_vulkan_device* device,
                                                   const sieve_context_options* options, sieve_context** out);

/* ---- zero-copy input ----------------------------------------------------------
 * Logits that already sit in a VkBuffer on the context's device (the app's
 * output tensor): sieve_sample_vulkan reads them there, without a trip through
 * the host. A context made by sieve_context_create_vulkan on the app's device is
 * required (a context on a device Sieve created cannot see the app's buffers).
 *
 * Synchronization: the logits must be written by work the app submitted to the
 * context's queue before the call (Sieve's submission starts with a barrier that
 * makes every earlier write on that queue visible to its shaders), or by work on
 * another queue that has completed (a fence the app waited for). The call returns
 * after the tokens are written; Sieve only reads the buffer.
 *
 * Cost: f32 rows are read where they are, with no copy, when the device can
 * bind them: `offset` (and the start of every row window, see
 * maxStorageBufferRange) a multiple of minStorageBufferOffsetAlignment, a
 * row_stride that is a multiple of 4 only when the vocab is too, and no row
 * whose penalties or DRY act (those patch the logits in place, which Sieve
 * never does in the app's buffer). The chain's recordings then name the app's
 * buffer: they are re-recorded when the buffer, offset, stride or size changes.
 * Every other input (f16, bf16, other offsets, acting penalties) takes one more
 * device pass that widens the rows into Sieve's own f32 buffer, recorded in a
 * command buffer of its own that is re-recorded only when the buffer, offset,
 * dtype or shape changes. Rows the CPU twin finishes are brought to the host by
 * that pass too.
 *
 * Lifetime: Sieve keeps a descriptor of the last buffer it sampled from. Call
 * sieve_chain_release_input before destroying that buffer if the chain may be
 * used afterwards (a new buffer can reuse a destroyed one's handle value). */
typedef struct sieve_vulkan_logits {
    uint32_t struct_size;   /* sizeof(sieve_vulkan_logits) */
    VkBuffer buffer;        /* created with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT on the context's device */
    VkDeviceSize size;      /* the buffer's size in bytes, as created (Vulkan cannot be asked) */
    VkDeviceSize offset;    /* bytes from the buffer's start to row 0's first logit; a multiple of the element size */
    sieve_dtype dtype;
    int32_t rows;
    int32_t vocab;
    int64_t row_stride;     /* elements between row starts, >= vocab; 0 = vocab */
} sieve_vulkan_logits;

/* Fills struct_size, the buffer, its size, the dtype and the sizes; offset and
 * row_stride 0. */
SIEVE_API void sieve_vulkan_logits_init(sieve_vulkan_logits* logits, VkBuffer buffer, VkDeviceSize size,
                                        sieve_dtype dtype, int32_t rows, int32_t vocab);

/* sieve_sample over logits in a VkBuffer: the same rules, statuses and results
 * as sieve_sample on the same values. Refused (SIEVE_ERROR_INVALID_ARGUMENT) on a
 * CPU-backend context and when the rows reach past `size`; SIEVE_ERROR_DEVICE_LIMIT
 * when the rows span more than the device's maxStorageBufferRange. */
SIEVE_API sieve_status sieve_sample_vulkan(sieve_chain* chain, const sieve_vulkan_logits* logits, sieve_token* out);

/* sieve_verify (sieve.h, "speculative decoding") over logits in a VkBuffer:
 * the positions' rows back to back, as sieve_verify takes them, in one
 * submission; the same rules, statuses and results as sieve_verify on the same
 * values. Both modes read the rows where they are when sieve_sample_vulkan
 * would (f32, no penalty or DRY acting), else copy them into Sieve's own
 * buffer first (the ingest pass). The match mode of a chain with
 * mirostat, mirostat_v2 or adaptive_p verifies one position after another
 * (each position's learnt state depends on the token before it): its rows are
 * read back to the host once and each position is one submission, as
 * sieve_verify does. A CPU-backend context is refused
 * (SIEVE_ERROR_INVALID_ARGUMENT). */
SIEVE_API sieve_status sieve_verify_vulkan(sieve_chain* chain, const sieve_vulkan_logits* logits,
                                           const sieve_draft* drafts, int32_t n_seq, sieve_verify_mode mode,
                                           sieve_token* tokens, sieve_verified* out);

/* Forgets the buffers the chain last sampled from and copied tokens to (their
 * descriptors and the command buffers that name them). Waits for nothing: every
 * sampling call has finished when it returns (SIEVE_ERROR_PENDING while an
 * async or recorded call is in flight). */
SIEVE_API sieve_status sieve_chain_release_input(sieve_chain* chain);

/* ---- async submission ---------------------------------------------------------
 * sieve_sample_vulkan_async submits the same work as sieve_sample_vulkan to the
 * context's queue and returns without waiting; sieve_chain_wait waits for it
 * (with a timeout) and hands back the tokens. In between, the submission can
 * wait on and signal the app's semaphores, and copy the sampled token ids into
 * the app's buffer, so the app's next decode can consume them on the device
 * with no host round trip.
 *
 * One call in flight per chain: until sieve_chain_wait returns anything but
 * SIEVE_ERROR_TIMEOUT, every other call on the chain that samples, changes its
 * parameters or reads or writes its slots fails with SIEVE_ERROR_PENDING and
 * changes nothing (sieve_chain_get_param, _counters, _plan_figures,
 * _stage_times and _slot_state_size still answer). The parameters were written
 * to the device when the call was made; the slots' new tokens are committed by
 * the submission itself, except for the rows the CPU twin finishes (below),
 * which sieve_chain_wait commits.
 *
 * Queue: Sieve submits to the context's queue from inside
 * sieve_sample_vulkan_async (and sieve_chain_wait for the rows the twin
 * finishes); the app owns the queue's external synchronization and must not
 * submit to it from another thread during those calls. The app keeps ownership
 * of the semaphores and the token buffer: they must stay alive until
 * sieve_chain_wait has returned SIEVE_OK (or a failure other than timeout).
 *
 * Synchronization the submission provides:
 *   - it waits on wait_semaphore (if any) at VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
 *     and starts with the barrier of sieve_sample_vulkan: every earlier write on
 *     the context's queue is visible to it;
 *   - signal_semaphore (if any) is signalled when all of it has finished, the
 *     token copy included (a semaphore signal makes every write available, so a
 *     submission of the app's that waits on it sees the token ids);
 *   - without a semaphore, the app's later work on the queue that reads the token
 *     buffer must follow a barrier from VK_PIPELINE_STAGE_TRANSFER_BIT /
 *     VK_ACCESS_TRANSFER_WRITE_BIT, and the host may read it (a host-visible
 *     buffer) after sieve_chain_wait returned SIEVE_OK.
 *
 * Rows the call's own submission does not finish (survivors past the GPU's
 * candidate buffer: sampled by the CPU twin, counted in cpu_fallback_rows, or,
 * min-p's alone, drawn by a submission of the chain's own) and rows that fail
 * (non-finite logits, ...) are -1 in the token buffer; sieve_chain_wait returns
 * their true result (the twin or that submission draws such a row there,
 * reading the app's logits again: the logits buffer must keep its values until
 * sieve_chain_wait returns when that can happen). */
typedef struct sieve_vulkan_sync {
    uint32_t struct_size;           /* sizeof(sieve_vulkan_sync) */
    VkSemaphore wait_semaphore;     /* VK_NULL_HANDLE = none */
    uint64_t wait_value;            /* timeline: the value to wait for (ignored for binary) */
    VkSemaphore signal_semaphore;   /* VK_NULL_HANDLE = none; signalled once the tokens are written */
    uint64_t signal_value;          /* timeline: the value to signal, > 0 (and > wait_value on the same semaphore) */
    /* 1: both semaphores are timeline semaphores (needs SIEVE_FEATURE_TIMELINE_SEMAPHORE
     * in the context's features: the app enabled timelineSemaphore and said so in
     * sieve_vulkan_device.enabled_features); 0: binary semaphores (Vulkan 1.1). */
    int32_t timeline;
    /* Optional: rows x int32 token ids written at token_offset (a multiple of 4)
     * by the same submission, with vkCmdCopyBuffer: the buffer needs
     * VK_BUFFER_USAGE_TRANSFER_DST_BIT and token_buffer_size (its size as
     * created) >= token_offset + rows * 4. VK_NULL_HANDLE = no copy. */
    VkBuffer token_buffer;
    VkDeviceSize token_offset;
    VkDeviceSize token_buffer_size;
} sieve_vulkan_sync;

/* Zeroes the struct and sets struct_size: no semaphores, binary, no token buffer. */
SIEVE_API void sieve_vulkan_sync_init(sieve_vulkan_sync* sync);

/* Submits sieve_sample_vulkan's work and returns. sync may be NULL (no semaphores,
 * no token copy). Checks as sieve_sample_vulkan, plus: SIEVE_ERROR_INVALID_ARGUMENT
 * for a bad sync (struct_size, timeline not 0/1, the same binary semaphore to wait
 * on and signal, a timeline signal_value of 0 or not past wait_value on the same
 * semaphore, a token_offset not a multiple of 4, a token buffer smaller than
 * token_offset + rows * 4); SIEVE_ERROR_DEVICE_LIMIT for timeline = 1 when the
 * context may not use timeline semaphores; SIEVE_ERROR_PENDING when a call is
 * already in flight. */
SIEVE_API sieve_status sieve_sample_vulkan_async(sieve_chain* chain, const sieve_vulkan_logits* logits,
                                                 const sieve_vulkan_sync* sync);

/* Waits up to timeout_ns for the call sieve_sample_vulkan_async made and writes
 * its rows' tokens to out (as sieve_sample_vulkan would; its status likewise).
 * SIEVE_ERROR_TIMEOUT: still running, nothing written, the call stays in flight
 * (wait again later). SIEVE_ERROR_DEVICE_LOST: the device is lost; the call is
 * dropped and each of its rows in out gets that status (token -1). SIEVE_ERROR_INVALID_ARGUMENT when nothing is in flight or the call in
 * flight was recorded (sieve_chain_collect finishes that). timeout_ns = 0 polls. */
SIEVE_API sieve_status sieve_chain_wait(sieve_chain* chain, uint64_t timeout_ns, sieve_token* out);

/* ---- record-into ---------------------------------------------------------------
 * sieve_chain_record records the call's device work (the ingest pass when the
 * rows need one, the chain's plan and, with sync->token_buffer, the token copy)
 * into a command buffer the app is recording, instead of submitting it; the app
 * submits it with its own work, waits for that submission (fence or semaphore), then calls
 * sieve_chain_collect for the tokens. No host round trip between the app's
 * decode and the sampling: both run in one submission.
 *
 * cmd: a primary command buffer in the recording state, outside a render pass,
 * allocated from a pool of the context's queue family, submitted once to the
 * context's queue. Sieve leaves its own compute pipeline, descriptor set 0 and
 * push constants bound: rebind yours after the call.
 *
 * sync: NULL or only its token_buffer fields (the semaphores belong to the app's
 * submission: wait and signal them there; set them here and the call is refused).
 *
 * Barriers Sieve records:
 *   at the start: ALL_COMMANDS / MEMORY_WRITE | SHADER_READ -> COMPUTE_SHADER /
 *     SHADER_READ | SHADER_WRITE (the app's earlier writes of the logits, in this
 *     command buffer or earlier on the queue, and any earlier reads of Sieve's
 *     logits), then COMPUTE_SHADER | DRAW_INDIRECT | TRANSFER -> COMPUTE_SHADER |
 *     TRANSFER (Sieve's previous call on this chain);
 *   between its own passes: COMPUTE_SHADER -> COMPUTE_SHADER | DRAW_INDIRECT;
 *   at the end: COMPUTE_SHADER / SHADER_WRITE -> HOST / HOST_READ (the results
 *     after the app's fence) and, with a token buffer, COMPUTE_SHADER ->
 *     TRANSFER, the copy, then TRANSFER / TRANSFER_WRITE -> HOST / HOST_READ.
 * What the app must guarantee: its later commands that read the token buffer
 * follow a barrier from TRANSFER / TRANSFER_WRITE; its later commands that write
 * the logits buffer follow a barrier from COMPUTE_SHADER (Sieve read it there);
 * the logits are written before the call's commands on the same queue (or by
 * work another queue finished before the submission, made visible by a
 * semaphore wait).
 *
 * Parameters and slots: the call writes the rows' parameters to Sieve's mapped
 * parameter block now (and the indirect arguments that pick the collect pass's
 * variant for them) and the GPU reads them when the app's submission runs;
 * as with async, every other call on the chain fails with SIEVE_ERROR_PENDING
 * until sieve_chain_collect, so nothing can change them in between. Until then
 * the chain must not be destroyed and the command buffer must not be submitted
 * more than once. Profiling records no timestamps into the app's buffer. */
SIEVE_API sieve_status sieve_chain_record(sieve_chain* chain, VkCommandBuffer cmd, const sieve_vulkan_logits* logits,
                                          const sieve_vulkan_sync* sync);

/* After the app's submission of the recorded command buffer has completed (the
 * app waited for its fence or semaphore): writes the rows' tokens to out as
 * sieve_sample_vulkan would and finishes the rows the CPU twin samples (reading
 * the app's logits again, on the context's queue: keep them until then).
 * SIEVE_ERROR_INVALID_ARGUMENT when nothing was recorded or the call in flight
 * is an async one (sieve_chain_wait finishes that). */
SIEVE_API sieve_status sieve_chain_collect(sieve_chain* chain, sieve_token* out);

/* ---- async and record-into verification ---------------------------------------
 * sieve_verify_vulkan's work, submitted and left in flight
 * (sieve_verify_vulkan_async, finished by sieve_chain_wait_verified) or
 * recorded into the app's command buffer (sieve_chain_record_verify, finished
 * by sieve_chain_collect_verified after the app's submission completed). The
 * rules of sieve_sample_vulkan_async and sieve_chain_record hold (one call in
 * flight per chain, SIEVE_ERROR_PENDING for every other call until it is
 * finished, the queue, the semaphores, the barriers recorded, the logits kept
 * until the finish), with these differences:
 *   - the device work computes every position; the host walks each sequence's
 *     positions at the finish and only then advances its slot. The tokens a
 *     verification emits are therefore known on the host only: a sync's
 *     token_buffer is refused (SIEVE_ERROR_INVALID_ARGUMENT), and
 *     sieve_chain_record_verify takes no sync at all;
 *   - the drafts' token ids are copied by the call; a dense or per-token
 *     probability table (sieve_draft.probs) is read at the finish: keep it
 *     until then;
 *   - the match mode of a chain with mirostat, mirostat_v2 or adaptive_p is
 *     refused (SIEVE_ERROR_INVALID_ARGUMENT): it needs one submission per
 *     position (sieve_verify_vulkan does that).
 * The finish writes tokens[] (one per position, as sieve_verify) and out[] (one
 * per sequence) for the call in flight: size them as for that call. */
SIEVE_API sieve_status sieve_verify_vulkan_async(sieve_chain* chain, const sieve_vulkan_logits* logits,
                                                 const sieve_draft* drafts, int32_t n_seq, sieve_verify_mode mode,
                                                 const sieve_vulkan_sync* sync);

/* Waits up to timeout_ns for sieve_verify_vulkan_async's call and finishes it as
 * sieve_verify_vulkan would (its results and status). SIEVE_ERROR_TIMEOUT: still
 * running, nothing written, no slot changed: wait again. SIEVE_ERROR_DEVICE_LOST:
 * the call is dropped, every out[s] and tokens[i] carries that status, no slot
 * changed. SIEVE_ERROR_INVALID_ARGUMENT when no verification is in flight or it
 * was recorded (sieve_chain_collect_verified finishes that); a sampling call in
 * flight is finished by sieve_chain_wait / sieve_chain_collect, never here. */
SIEVE_API sieve_status sieve_chain_wait_verified(sieve_chain* chain, uint64_t timeout_ns, sieve_token* tokens,
                                                 sieve_verified* out);

/* Records sieve_verify_vulkan's device work into cmd (as sieve_chain_record;
 * the app submits it with its own work and waits for it). */
SIEVE_API sieve_status sieve_chain_record_verify(sieve_chain* chain, VkCommandBuffer cmd,
                                                 const sieve_vulkan_logits* logits, const sieve_draft* drafts,
                                                 int32_t n_seq, sieve_verify_mode mode);

/* After the app's submission of the recorded verification has completed:
 * finishes it as sieve_verify_vulkan would (rows the twin finishes read the
 * app's logits again, on the context's queue). SIEVE_ERROR_INVALID_ARGUMENT when
 * no verification was recorded or the one in flight is an async one. */
SIEVE_API sieve_status sieve_chain_collect_verified(sieve_chain* chain, sieve_token* tokens, sieve_verified* out);

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_SIEVE_VULKAN_H */
