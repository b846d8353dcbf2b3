// Zero-copy input (issue 5): the app's logits in a VkBuffer on its own device,
// written by its own queue work that Sieve's submission must order itself
// after (synchronization validation on). A row sampled from the buffer equals
// the same row sampled from host memory (sieve_sample_logits) bit for bit:
// f32, f16 and bf16, at an offset and a row stride, through the GPU's own path
// and through the rows the CPU twin finishes.
#include "app_logits.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

TEST(ZeroCopy, EqualsHostInputForEveryDtype) {
    AppDevice app;
    auto ctx = app_context(app);
    constexpr int32_t kRows = 3;
    for (sieve_dtype dtype : {SIEVE_DTYPE_F32, SIEVE_DTYPE_F16, SIEVE_DTYPE_BF16})
        for (int32_t vocab : {1000, 32000})
            for (const char* samplers : {"", "top_p;temperature"})
                for (bool packed : {false, true}) {
                    SCOPED_TRACE(std::string("dtype ") + std::to_string(dtype) + ", vocab " + std::to_string(vocab) +
                                 ", chain '" + samplers + "', packed " + std::to_string(packed));
                    // Unpacked: an offset that is not a multiple of the device's
                    // binding alignment and a stride past the vocab. Packed rows
                    // from offset 0 (f32: the ingest pass's four-at-a-time kind).
                    const VkDeviceSize offset = packed ? 0 : 3 * (dtype == SIEVE_DTYPE_F32 ? 4 : 2);
                    const int32_t stride = packed ? vocab : vocab + 3;
                    AppLogits a = make_app_logits(app, dtype, Shape::Zipf, kRows, vocab, stride, offset, 21);
                    sieve::Chain zero(*ctx, chain_desc(samplers, kRows, vocab, 0.8f, 5));
                    sieve::Chain host(*ctx, chain_desc(samplers, kRows, vocab, 0.8f, 5));
                    for (int step = 0; step < 3; ++step) {
                        app.copy_on_queue(a.staging, a.tensor);  // the app's decode writes the tensor
                        expect_same(sample_vulkan(zero, a.desc), host.sample(a.host));
                    }
                }
}

// The device's minStorageBufferOffsetAlignment, as the app sees it.
VkDeviceSize offset_alignment(AppDevice& app) {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(app.physical, &props);
    return props.limits.minStorageBufferOffsetAlignment;
}

// The app's tensor as it is now (after the queue's work so far).
std::vector<unsigned char> read_back(AppDevice& app, const AppDevice::AppBuffer& tensor) {
    AppDevice::AppBuffer host = app.make_buffer(tensor.size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    VkCommandBuffer cmd = app.begin_command_buffer();
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    app.vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier,
                                0, nullptr, 0, nullptr);
    VkBufferCopy region{0, 0, tensor.size};
    app.vk.vkCmdCopyBuffer(cmd, tensor.buffer, host.buffer, 1, &region);
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    app.vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                                nullptr, 0, nullptr);
    app.vk.vkEndCommandBuffer(cmd);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    EXPECT_EQ(app.vk.vkQueueSubmit(app.queue, 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
    EXPECT_EQ(app.vk.vkQueueWaitIdle(app.queue), VK_SUCCESS);
    const auto* bytes = static_cast<const unsigned char*>(host.mapped);
    return std::vector<unsigned char>(bytes, bytes + tensor.size);
}

// f32 rows at an offset the device binds are read where they are: one full-
// row pass per row (the plan's), no ingest pass; every other input takes the
// ingest pass (two). Either way the tokens equal the host path's, whatever
// the stride (scalar reads, or four at a time when stride and vocab are
// multiples of 4), and the bytes between and after the rows (NaN) are never
// read.
TEST(ZeroCopy, BindsF32RowsWhereTheyAre) {
    AppDevice app;
    auto ctx = app_context(app);
    const VkDeviceSize align = offset_alignment(app);
    constexpr int32_t kRows = 3;
    struct Input {
        sieve_dtype dtype;
        int32_t vocab;
        int64_t stride;
        VkDeviceSize offset;
        bool direct;
    };
    const Input inputs[] = {
        {SIEVE_DTYPE_F32, 32000, 32000, 0, true},
        {SIEVE_DTYPE_F32, 32000, 32004, 4 * align, true},  // vec4 rows a stride apart
        {SIEVE_DTYPE_F32, 32000, 32003, align, true},      // scalar reads
        {SIEVE_DTYPE_F32, 5001, 5001, 0, true},            // rows that end inside a vec4
        {SIEVE_DTYPE_F32, 5001, 5004, 0, false},           // a vec4 stride over rows that do not: ingest
        {SIEVE_DTYPE_F32, 32000, 32000, align + 4, align <= 4},  // an offset the device may not bind
        {SIEVE_DTYPE_F16, 32000, 32000, 0, false},
    };
    for (const Input& in : inputs)
        for (const char* samplers : {"", "top_p;temperature", "greedy"}) {
            SCOPED_TRACE(std::string("dtype ") + std::to_string(in.dtype) + ", vocab " + std::to_string(in.vocab) +
                         ", stride " + std::to_string(in.stride) + ", offset " + std::to_string(in.offset) +
                         ", chain '" + samplers + "'");
            AppLogits a = make_app_logits(app, in.dtype, Shape::Zipf, kRows, in.vocab, in.stride, in.offset, 31);
            sieve::Chain zero(*ctx, chain_desc(samplers, kRows, in.vocab, 0.8f, 5));
            sieve::Chain host(*ctx, chain_desc(samplers, kRows, in.vocab, 0.8f, 5));
            for (int step = 0; step < 2; ++step) {
                app.copy_on_queue(a.staging, a.tensor);
                const uint64_t zero_before = zero.counters().row_passes, host_before = host.counters().row_passes;
                expect_same(sample_vulkan(zero, a.desc), host.sample(a.host));
                EXPECT_EQ(zero.counters().cpu_fallback_rows, 0u);
                // The host path's passes, plus the ingest pass's read of each row.
                EXPECT_EQ(zero.counters().row_passes - zero_before,
                          host.counters().row_passes - host_before + (in.direct ? 0u : kRows));
            }
        }
}

// A row the history pass patches (penalties acting) is never patched in the
// app's buffer: such calls take the ingest pass, and the app's bytes stay as
// the app wrote them.
TEST(ZeroCopy, NeverWritesTheAppsBuffer) {
    AppDevice app;
    auto ctx = app_context(app);
    constexpr int32_t kRows = 2, kVocab = 32000;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 17);
    const char* samplers = "penalties;top_k;temperature";
    sieve::Chain zero(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 5));
    sieve::Chain host(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 5));
    for (sieve::Chain* c : {&zero, &host}) {
        c->set(SIEVE_PARAM_REPEAT_PENALTY, 1.5);
        c->set(SIEVE_PARAM_REPEAT_LAST_N, 64);
        c->set(SIEVE_PARAM_TOP_K, 40);
    }
    app.copy_on_queue(a.staging, a.tensor);
    for (int step = 0; step < 4; ++step) {  // the history pass patches the rows once tokens were drawn
        SCOPED_TRACE("step " + std::to_string(step));
        const uint64_t zero_before = zero.counters().row_passes, host_before = host.counters().row_passes;
        expect_same(sample_vulkan(zero, a.desc), host.sample(a.host));
        EXPECT_EQ(zero.counters().row_passes - zero_before, host.counters().row_passes - host_before + kRows)
            << "penalties acting: the ingest pass reads the rows";
    }
    EXPECT_EQ(read_back(app, a.tensor), a.bytes);
}

// Rows whose survivors pass the candidate buffer go to the CPU twin, which
// needs them on the host: the same tokens as from host memory, counted.
// A capacity of several row windows (vocab 262144: a dozen rows, a few per
// binding under the context's 16 MiB cap, kWindowTestRange, on every device): the ingest pass fills each window from its own binding of the
// app's rows; every row equals the host path's.
TEST(ZeroCopy, AcrossRowWindows) {
    AppDevice app;
    // Every device splits under this cap, whatever its own maxStorageBufferRange.
    auto ctx = app_context(app, 0, kWindowTestRange);
    constexpr int32_t kVocab = 262144;
    const uint64_t range = ctx->device_info().max_storage_buffer_range;
    ASSERT_EQ(range, kWindowTestRange) << "the context plans with the cap it was given";
    constexpr int32_t rows = 12;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F16, Shape::Zipf, rows, kVocab, kVocab + 8, 2, 12);
    sieve::Chain zero(*ctx, chain_desc("", rows, kVocab, 0.8f, 5));
    sieve::Chain host(*ctx, chain_desc("", rows, kVocab, 0.8f, 5));
    ASSERT_GE(row_windows(zero).count, 2u) << "the capacity is not split into row windows";
    app.copy_on_queue(a.staging, a.tensor);
    expect_same(sample_vulkan(zero, a.desc), host.sample(a.host));
}

// f16 through the ingest pass; f32 bound where it is, whose rows the ingest
// pass brings to the host only when the twin needs them.
TEST(ZeroCopy, RowsTheTwinFinishes) {
    AppDevice app;
    auto ctx = app_context(app);
    constexpr int32_t kRows = 2, kVocab = 32000;
    for (sieve_dtype dtype : {SIEVE_DTYPE_F16, SIEVE_DTYPE_F32}) {
    SCOPED_TRACE("dtype " + std::to_string(dtype));
    AppLogits a = make_app_logits(app, dtype, Shape::Gaussian, kRows, kVocab, kVocab, 0, 8);
    // min-p's survivors past the buffer with a top-k after it: the twin's on
    // every plan (a GPU's draws min-p alone by its key levels).
    sieve::Chain zero(*ctx, chain_desc("min_p;top_k;temperature", kRows, kVocab, 0.8f, 3));
    sieve::Chain host(*ctx, chain_desc("min_p;top_k;temperature", kRows, kVocab, 0.8f, 3));
    for (sieve::Chain* c : {&zero, &host}) {
        c->set(SIEVE_PARAM_MIN_P, 0.001);
        c->set(SIEVE_PARAM_TOP_K, 5000);
    }
    for (int step = 0; step < 2; ++step) {
        app.copy_on_queue(a.staging, a.tensor);
        expect_same(sample_vulkan(zero, a.desc), host.sample(a.host));
    }
    EXPECT_GT(zero.counters().cpu_fallback_rows, 0u) << "the case no longer reaches the CPU twin";
    EXPECT_EQ(zero.counters().cpu_fallback_rows, host.counters().cpu_fallback_rows);
    }
}

// min-p alone over more survivors than the buffer holds (min_p 1e-4 over
// Gaussian rows): on a GPU's plan the key levels draw them (on a CPU
// device's, the twin), in the call's second submission for a synchronous
// call, and, for a call the app submits (recorded) or leaves in flight, in a
// submission the chain makes when the call is finished. Every form draws the
// same tokens, p included.
TEST(ZeroCopy, EveryFormDrawsMinPPastTheBufferAlike) {
    AppDevice app;
    auto ctx = app_context(app);
    constexpr int32_t kRows = 2, kVocab = 32000;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Gaussian, kRows, kVocab, kVocab, 0, 21);
    sieve::Chain sync(*ctx, chain_desc("min_p;temperature", kRows, kVocab, 0.8f, 3));
    sieve::Chain async(*ctx, chain_desc("min_p;temperature", kRows, kVocab, 0.8f, 3));
    sieve::Chain recorded(*ctx, chain_desc("min_p;temperature", kRows, kVocab, 0.8f, 3));
    for (sieve::Chain* c : {&sync, &async, &recorded}) c->set(SIEVE_PARAM_MIN_P, 0.0001);
    const sieve_device_info info = ctx->device_info();
    const bool levels = !(info.type == SIEVE_DEVICE_CPU && !(info.profile & SIEVE_PROFILE_GPU));
    for (int step = 0; step < 3; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        app.copy_on_queue(a.staging, a.tensor);
        const std::vector<sieve_token> want = sample_vulkan(sync, a.desc);
        std::vector<sieve_token> got(kRows);
        ASSERT_EQ(sieve_sample_vulkan_async(async.get(), &a.desc, nullptr), SIEVE_OK) << sieve_last_error();
        ASSERT_EQ(sieve_chain_wait(async.get(), UINT64_MAX, got.data()), SIEVE_OK) << sieve_last_error();
        expect_same(got, want);
        VkCommandBuffer cmd = app.begin_command_buffer();
        ASSERT_EQ(sieve_chain_record(recorded.get(), cmd, &a.desc, nullptr), SIEVE_OK) << sieve_last_error();
        app.submit_and_wait(cmd);
        ASSERT_EQ(sieve_chain_collect(recorded.get(), got.data()), SIEVE_OK) << sieve_last_error();
        expect_same(got, want);
        if (levels) {
            for (const sieve_token& t : want) EXPECT_GE(t.row_passes, 3u) << "the key levels did not draw the row";
        }
    }
    for (sieve::Chain* c : {&sync, &async, &recorded}) {
        if (levels) EXPECT_EQ(c->counters().cpu_fallback_rows, 0u);
        else EXPECT_EQ(c->counters().cpu_fallback_rows, 6u);
    }
}

// The ingest pass is recorded once per buffer and shape: resampling the same
// buffer records nothing; another buffer records only the ingest again.
TEST(ZeroCopy, RecordsOnlyWhenTheBufferChanges) {
    AppDevice app;
    auto ctx = app_context(app);
    constexpr int32_t kRows = 2, kVocab = 5000;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 1);
    AppLogits b = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 2);
    sieve::Chain chain(*ctx, chain_desc("", kRows, kVocab, 0.8f, 5));
    app.copy_on_queue(a.staging, a.tensor);
    app.copy_on_queue(b.staging, b.tensor);
    sample_vulkan(chain, a.desc);
    const sieve_counters first = chain.counters();
    for (int i = 0; i < 5; ++i) sample_vulkan(chain, a.desc);
    EXPECT_EQ(chain.counters().recordings, first.recordings);
    EXPECT_EQ(chain.counters().allocations, first.allocations);
    sample_vulkan(chain, b.desc);
    EXPECT_EQ(chain.counters().recordings, first.recordings + 1) << "a new buffer re-records the ingest only";
    EXPECT_EQ(chain.counters().submits, first.submits + 6);
    // After release_input the same buffer is bound afresh.
    ASSERT_EQ(sieve_chain_release_input(chain.get()), SIEVE_OK);
    sample_vulkan(chain, b.desc);
    EXPECT_EQ(chain.counters().recordings, first.recordings + 2);
}

// Every refused descriptor: its status and message, and the chain samples on
// unchanged afterwards (the same tokens as a chain that never saw the bad calls).
TEST(ZeroCopy, BadInput) {
    AppDevice app;
    auto ctx = app_context(app);
    constexpr int32_t kRows = 2, kVocab = 1000;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F16, Shape::Zipf, kRows, kVocab, kVocab + 8, 4, 3);
    app.copy_on_queue(a.staging, a.tensor);
    sieve::Chain chain(*ctx, chain_desc("", kRows, kVocab, 0.8f, 5));
    sieve::Chain clean(*ctx, chain_desc("", kRows, kVocab, 0.8f, 5));
    std::vector<sieve_token> out(kRows);
    auto refused = [&](sieve_vulkan_logits d, sieve_status want, std::initializer_list<std::string> words) {
        EXPECT_TRUE(Fails(sieve_sample_vulkan(chain.get(), &d, out.data()), want, words));
    };
    sieve_vulkan_logits d = a.desc;
    d.size = a.desc.offset + (kVocab + 8) * 2;  // one row's worth
    refused(d, SIEVE_ERROR_INVALID_ARGUMENT, {"too small", "2 rows", "row_stride 1008"});
    d = a.desc;
    d.offset = a.desc.size + 2;
    refused(d, SIEVE_ERROR_INVALID_ARGUMENT, {"too small"});
    d = a.desc;
    d.row_stride = kVocab - 1;
    refused(d, SIEVE_ERROR_INVALID_ARGUMENT, {"row_stride 999", "smaller than the vocab"});
    d = a.desc;
    d.offset = 5;
    refused(d, SIEVE_ERROR_INVALID_ARGUMENT, {"offset 5", "element size 2"});
    d = a.desc;
    d.buffer = VK_NULL_HANDLE;
    refused(d, SIEVE_ERROR_INVALID_ARGUMENT, {"VK_NULL_HANDLE"});
    d = a.desc;
    d.struct_size = 4;
    refused(d, SIEVE_ERROR_INVALID_ARGUMENT, {"struct_size"});
    d = a.desc;
    d.dtype = static_cast<sieve_dtype>(9);
    refused(d, SIEVE_ERROR_INVALID_ARGUMENT, {"dtype 9"});
    d = a.desc;
    d.vocab = kVocab + 1;
    refused(d, SIEVE_ERROR_CAPACITY, {"vocab 1001"});
    EXPECT_TRUE(Fails(sieve_sample_vulkan(chain.get(), nullptr, out.data()), SIEVE_ERROR_INVALID_ARGUMENT, {"logits"}));
    EXPECT_TRUE(Fails(sieve_sample_vulkan(chain.get(), &a.desc, nullptr), SIEVE_ERROR_INVALID_ARGUMENT, {"out"}));
    EXPECT_TRUE(Fails(sieve_sample_vulkan(nullptr, &a.desc, out.data()), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    // The CPU backend cannot read a VkBuffer.
    sieve::Context cpu = cpu_context();
    sieve::Chain twin(cpu, chain_desc("", kRows, kVocab, 0.8f, 5));
    EXPECT_TRUE(Fails(sieve_sample_vulkan(twin.get(), &a.desc, out.data()), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"Vulkan context"}));
    // Nothing changed: the chain samples as one that never saw the bad calls.
    expect_same(sample_vulkan(chain, a.desc), sample_vulkan(clean, a.desc));
}

} // namespace
