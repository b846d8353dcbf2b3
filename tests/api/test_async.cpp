// Async submission and record-into (issue 5) on an app device with
// synchronization validation on: sieve_sample_vulkan_async + sieve_chain_wait
// and sieve_chain_record + sieve_chain_collect give the tokens
// sieve_sample_vulkan gives (same seeds: token, p, logprob and step bit for
// bit), through binary and timeline semaphores, with the ids copied into the
// app's buffer on the device; a host wait that runs out leaves a usable chain;
// every refused input has its status and message.
#include "app_logits.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

constexpr uint64_t kLongWait = 120ull * 1000 * 1000 * 1000;
constexpr int32_t kRows = 2, kVocab = 32000;
// The default chain (penalties and DRY read the slots' histories, so each
// step depends on the tokens the previous ones committed) and one whose rows
// go to the CPU twin (finished at wait / collect time).
// The default chain; min-p alone over more survivors than the buffer holds
// (the CPU twin's rows on a CPU device's plan, the key levels' on a GPU's);
// the same with a top-k after min-p (the twin's on every plan).
constexpr const char* kChains[] = {"", "min_p;temperature", "min_p;top_k;temperature"};

void configure(sieve::Chain& chain, const char* samplers) {
    if (std::string(samplers).rfind("min_p", 0) == 0) chain.set(SIEVE_PARAM_MIN_P, 0.0001);
    if (std::string(samplers) == "min_p;top_k;temperature") chain.set(SIEVE_PARAM_TOP_K, 5000);
    chain.set(SIEVE_PARAM_REPEAT_PENALTY, 1.3);
}

// The ids the app's buffer received are the tokens; twin_ran: some rows were
// finished after the call's own submission (by the CPU twin, or by the key
// levels' part the chain submits when the call is finished), whose ids exist
// only on the host (-1 in the buffer).
void expect_ids(const AppDevice::AppBuffer& ids, VkDeviceSize offset, const std::vector<sieve_token>& tokens,
                bool twin_ran) {
    for (size_t r = 0; r < tokens.size(); ++r) {
        int32_t id;
        std::memcpy(&id, static_cast<const unsigned char*>(ids.mapped) + offset + r * 4, 4);
        if (twin_ran && id == -1) continue;
        EXPECT_EQ(id, tokens[r].token) << "row " << r;
    }
}

// Whether a call in flight had rows finished after its own submission (its
// `own` submissions of the chain's: 1 for sieve_sample_vulkan_async, 0 for
// sieve_chain_record): the twin took some, or the chain submitted the key
// levels' part (gpu_chain_device.cpp: finish_key_levels).
bool finished_later(const sieve_counters& before, const sieve_counters& after, uint64_t own) {
    return after.cpu_fallback_rows > before.cpu_fallback_rows || after.submits - before.submits > own;
}

TEST(Async, EqualsSyncWithBinarySemaphores) {
    AppDevice app;
    auto ctx = app_context(app);
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F16, Shape::Zipf, kRows, kVocab, kVocab + 5, 6, 4);
    AppDevice::AppBuffer ids = app.make_buffer(64 + kRows * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    const VkSemaphore decoded = app.make_semaphore(false), sampled = app.make_semaphore(false);
    for (const char* samplers : kChains) {
        SCOPED_TRACE(std::string("chain '") + samplers + "'");
        sieve::Chain async(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 11));
        sieve::Chain sync(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 11));
        configure(async, samplers);
        configure(sync, samplers);
        for (int step = 0; step < 3; ++step) {
            SCOPED_TRACE("step " + std::to_string(step));
            app.copy_on_queue(a.staging, a.tensor);          // the decode
            app.submit_semaphores(VK_NULL_HANDLE, decoded);  // ... signals `decoded`
            sieve_vulkan_sync s;
            sieve_vulkan_sync_init(&s);
            s.wait_semaphore = decoded;
            s.signal_semaphore = sampled;
            s.token_buffer = ids.buffer;
            s.token_offset = 64;
            s.token_buffer_size = ids.size;
            const sieve_counters before = async.counters();
            ASSERT_EQ(sieve_sample_vulkan_async(async.get(), &a.desc, &s), SIEVE_OK) << sieve_last_error();
            const std::vector<sieve_token> want = sample_vulkan(sync, a.desc);
            app.submit_semaphores(sampled, VK_NULL_HANDLE, true);  // the next decode would wait here
            std::vector<sieve_token> got(kRows);
            ASSERT_EQ(sieve_chain_wait(async.get(), kLongWait, got.data()), SIEVE_OK) << sieve_last_error();
            expect_same(got, want);
            expect_ids(ids, 64, got, finished_later(before, async.counters(), 1));
        }
        EXPECT_EQ(async.counters().cpu_fallback_rows, sync.counters().cpu_fallback_rows);
    }
}

// Under the constrained profile the context may not use timeline semaphores
// (it pretends the feature is absent): a timeline sync is then refused before
// anything is submitted, which is what the timeline tests check there.
bool timeline_refused(sieve::Context& ctx, AppDevice& app) {
    if (ctx.device_info().features & SIEVE_FEATURE_TIMELINE_SEMAPHORE) return false;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 1);
    sieve::Chain chain(ctx, chain_desc("", kRows, kVocab, 0.8f, 1));
    sieve_vulkan_sync s;
    sieve_vulkan_sync_init(&s);
    s.timeline = 1;
    s.wait_semaphore = app.make_semaphore(true);
    s.wait_value = 1;
    EXPECT_TRUE(Fails(sieve_sample_vulkan_async(chain.get(), &a.desc, &s), SIEVE_ERROR_DEVICE_LIMIT, {"timeline"}));
    return true;
}

TEST(Async, EqualsSyncWithTimelineSemaphores) {
    AppDevice app(true);
    auto ctx = app_context(app, SIEVE_FEATURE_TIMELINE_SEMAPHORE);
    if (timeline_refused(*ctx, app)) return;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Gaussian, kRows, kVocab, kVocab, 0, 9);
    AppDevice::AppBuffer ids = app.make_buffer(kRows * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    for (const char* samplers : kChains) {
        SCOPED_TRACE(std::string("chain '") + samplers + "'");
        const VkSemaphore timeline = app.make_semaphore(true);
        sieve::Chain async(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 12));
        sieve::Chain sync(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 12));
        configure(async, samplers);
        configure(sync, samplers);
        for (uint64_t step = 0; step < 3; ++step) {
            SCOPED_TRACE("step " + std::to_string(step));
            app.copy_on_queue(a.staging, a.tensor);
            // The app's decode signals 2k+1 from the host, Sieve 2k+2.
            VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
            signal.semaphore = timeline;
            signal.value = 2 * step + 1;
            ASSERT_EQ(app.vk.vkSignalSemaphore(app.device, &signal), VK_SUCCESS);
            sieve_vulkan_sync s;
            sieve_vulkan_sync_init(&s);
            s.timeline = 1;
            s.wait_semaphore = s.signal_semaphore = timeline;
            s.wait_value = 2 * step + 1;
            s.signal_value = 2 * step + 2;
            s.token_buffer = ids.buffer;
            s.token_buffer_size = ids.size;
            const sieve_counters before = async.counters();
            ASSERT_EQ(sieve_sample_vulkan_async(async.get(), &a.desc, &s), SIEVE_OK) << sieve_last_error();
            // The host waits on Sieve's value, as a next decode's submission would on the device.
            VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
            wait.semaphoreCount = 1;
            wait.pSemaphores = &timeline;
            wait.pValues = &s.signal_value;
            ASSERT_EQ(app.vk.vkWaitSemaphores(app.device, &wait, kLongWait), VK_SUCCESS);
            std::vector<sieve_token> got(kRows);
            ASSERT_EQ(sieve_chain_wait(async.get(), kLongWait, got.data()), SIEVE_OK) << sieve_last_error();
            expect_same(got, sample_vulkan(sync, a.desc));
            expect_ids(ids, 0, got, finished_later(before, async.counters(), 1));
        }
        EXPECT_EQ(async.counters().cpu_fallback_rows, sync.counters().cpu_fallback_rows);
    }
}

// The submission waits on a timeline value the app signals only after Sieve's
// host wait ran out: TIMEOUT first, the chain refuses other calls but keeps the
// call in flight, and the later wait returns the synchronous tokens.
TEST(Async, TimeoutThenUsable) {
    AppDevice app(true);
    auto ctx = app_context(app, SIEVE_FEATURE_TIMELINE_SEMAPHORE);
    if (timeline_refused(*ctx, app)) return;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_BF16, Shape::Zipf, kRows, kVocab, kVocab, 0, 5);
    app.copy_on_queue(a.staging, a.tensor);
    const VkSemaphore gate = app.make_semaphore(true);
    sieve::Chain async(*ctx, chain_desc("", kRows, kVocab, 0.8f, 13));
    sieve::Chain sync(*ctx, chain_desc("", kRows, kVocab, 0.8f, 13));
    sieve_vulkan_sync s;
    sieve_vulkan_sync_init(&s);
    s.timeline = 1;
    s.wait_semaphore = gate;
    s.wait_value = 1;
    ASSERT_EQ(sieve_sample_vulkan_async(async.get(), &a.desc, &s), SIEVE_OK) << sieve_last_error();
    std::vector<sieve_token> got(kRows);
    EXPECT_TRUE(Fails(sieve_chain_wait(async.get(), 1000 * 1000, got.data()), SIEVE_ERROR_TIMEOUT, {"wait again"}));
    EXPECT_TRUE(Fails(sieve_chain_wait(async.get(), 0, got.data()), SIEVE_ERROR_TIMEOUT, {"wait again"}));
    // In flight: the chain's other calls are refused and change nothing.
    EXPECT_TRUE(Fails(sieve_sample_vulkan(async.get(), &a.desc, got.data()), SIEVE_ERROR_PENDING, {"sieve_chain_wait"}));
    EXPECT_TRUE(Fails(sieve_chain_set_param(async.get(), -1, SIEVE_PARAM_TEMPERATURE, 2.0), SIEVE_ERROR_PENDING,
                      {"in flight"}));
    EXPECT_TRUE(Fails(sieve_chain_collect(async.get(), got.data()), SIEVE_ERROR_INVALID_ARGUMENT, {"sieve_chain_wait"}));
    VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    signal.semaphore = gate;
    signal.value = 1;
    ASSERT_EQ(app.vk.vkSignalSemaphore(app.device, &signal), VK_SUCCESS);
    ASSERT_EQ(sieve_chain_wait(async.get(), kLongWait, got.data()), SIEVE_OK) << sieve_last_error();
    expect_same(got, sample_vulkan(sync, a.desc));
    // Usable afterwards, synchronously and asynchronously.
    expect_same(sample_vulkan(async, a.desc), sample_vulkan(sync, a.desc));
    ASSERT_EQ(sieve_sample_vulkan_async(async.get(), &a.desc, nullptr), SIEVE_OK) << sieve_last_error();
    ASSERT_EQ(sieve_chain_wait(async.get(), kLongWait, got.data()), SIEVE_OK) << sieve_last_error();
    expect_same(got, sample_vulkan(sync, a.desc));
}

// Record-into: the app's command buffer holds its decode (here a copy into the
// logits tensor) and Sieve's passes; one submission, then collect.
TEST(RecordInto, EqualsSampleVulkan) {
    AppDevice app;
    auto ctx = app_context(app);
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F16, Shape::Gaussian, kRows, kVocab, kVocab + 2, 4, 6);
    AppDevice::AppBuffer ids = app.make_buffer(kRows * 4 + 8, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    for (const char* samplers : kChains) {
        SCOPED_TRACE(std::string("chain '") + samplers + "'");
        sieve::Chain recorded(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 14));
        sieve::Chain sync(*ctx, chain_desc(samplers, kRows, kVocab, 0.8f, 14));
        configure(recorded, samplers);
        configure(sync, samplers);
        int finished_after_the_app = 0;
        for (int step = 0; step < 3; ++step) {
            SCOPED_TRACE("step " + std::to_string(step));
            VkCommandBuffer cmd = app.begin_command_buffer();
            app.record_copy(cmd, a.staging, a.tensor);  // the decode
            sieve_vulkan_sync s;
            sieve_vulkan_sync_init(&s);
            s.token_buffer = ids.buffer;
            s.token_offset = 8;
            s.token_buffer_size = ids.size;
            ASSERT_EQ(sieve_chain_record(recorded.get(), cmd, &a.desc, &s), SIEVE_OK) << sieve_last_error();
            app.submit_and_wait(cmd);
            const sieve_counters before = recorded.counters();
            std::vector<sieve_token> got(kRows);
            ASSERT_EQ(sieve_chain_collect(recorded.get(), got.data()), SIEVE_OK) << sieve_last_error();
            expect_same(got, sample_vulkan(sync, a.desc));
            const bool later = finished_later(before, recorded.counters(), 0);
            expect_ids(ids, 8, got, later);
            finished_after_the_app += later ? 1 : 0;
        }
        EXPECT_EQ(recorded.counters().cpu_fallback_rows, sync.counters().cpu_fallback_rows);
        if (samplers != kChains[0]) {
            EXPECT_GT(finished_after_the_app, 0) << "no row was finished after the app's submission";
        }
        if (samplers == kChains[2]) {
            EXPECT_GT(recorded.counters().cpu_fallback_rows, 0u) << "the case no longer reaches the CPU twin";
        }
        // The chain takes synchronous calls again.
        app.copy_on_queue(a.staging, a.tensor);
        expect_same(sample_vulkan(recorded, a.desc), sample_vulkan(sync, a.desc));
    }
}

// Every refused input: its status and message; the chain samples on as one
// that never saw the bad calls.
TEST(Async, BadInput) {
    AppDevice app;
    auto ctx = app_context(app);  // binary semaphores only
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 7);
    app.copy_on_queue(a.staging, a.tensor);
    AppDevice::AppBuffer ids = app.make_buffer(kRows * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    const VkSemaphore sem = app.make_semaphore(false);
    sieve::Chain chain(*ctx, chain_desc("", kRows, kVocab, 0.8f, 15));
    sieve::Chain clean(*ctx, chain_desc("", kRows, kVocab, 0.8f, 15));
    std::vector<sieve_token> out(kRows);
    sieve_vulkan_sync good;
    sieve_vulkan_sync_init(&good);
    good.token_buffer = ids.buffer;
    good.token_buffer_size = ids.size;
    auto refused = [&](sieve_vulkan_sync s, sieve_status want, std::initializer_list<std::string> words) {
        EXPECT_TRUE(Fails(sieve_sample_vulkan_async(chain.get(), &a.desc, &s), want, words));
    };
    sieve_vulkan_sync s = good;
    s.struct_size = 8;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"struct_size"});
    s = good;
    s.timeline = 2;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"timeline is 2"});
    s = good;
    s.wait_semaphore = s.signal_semaphore = sem;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"same binary semaphore"});
    s = good;
    s.timeline = 1;
    s.signal_semaphore = sem;
    s.signal_value = 0;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"signal_value of 0"});
    s.wait_semaphore = sem;
    s.wait_value = 4;
    s.signal_value = 4;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"signal_value 4", "wait_value 4"});
    s = good;
    s.timeline = 1;  // the context was not told the device has them
    refused(s, SIEVE_ERROR_DEVICE_LIMIT, {"timeline semaphores", "enabled_features"});
    s = good;
    s.token_offset = 2;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"token_offset 2", "multiple of 4"});
    s = good;
    s.token_buffer_size = kRows * 4 - 1;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"token buffer is too small", "8 bytes"});
    s = good;
    s.token_offset = 4;
    refused(s, SIEVE_ERROR_INVALID_ARGUMENT, {"token buffer is too small", "offset 4"});
    // The logits get sieve_sample_vulkan's checks.
    sieve_vulkan_logits d = a.desc;
    d.size = 16;
    EXPECT_TRUE(Fails(sieve_sample_vulkan_async(chain.get(), &d, &good), SIEVE_ERROR_INVALID_ARGUMENT, {"too small"}));
    EXPECT_TRUE(Fails(sieve_sample_vulkan_async(chain.get(), nullptr, &good), SIEVE_ERROR_INVALID_ARGUMENT, {"logits"}));
    EXPECT_TRUE(Fails(sieve_sample_vulkan_async(nullptr, &a.desc, &good), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    // Nothing in flight.
    EXPECT_TRUE(Fails(sieve_chain_wait(chain.get(), 0, out.data()), SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to wait for"}));
    EXPECT_TRUE(Fails(sieve_chain_collect(chain.get(), out.data()), SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to collect"}));
    EXPECT_TRUE(Fails(sieve_chain_wait(nullptr, 0, out.data()), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    EXPECT_TRUE(Fails(sieve_chain_collect(nullptr, out.data()), SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    // Record-into: a command buffer, only the token buffer of a sync.
    EXPECT_TRUE(Fails(sieve_chain_record(chain.get(), VK_NULL_HANDLE, &a.desc, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"cmd is VK_NULL_HANDLE"}));
    VkCommandBuffer cmd = app.begin_command_buffer();
    s = good;
    s.signal_semaphore = sem;
    EXPECT_TRUE(Fails(sieve_chain_record(chain.get(), cmd, &a.desc, &s), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"only the token buffer"}));
    s = good;
    s.token_buffer_size = 4;
    EXPECT_TRUE(Fails(sieve_chain_record(chain.get(), cmd, &a.desc, &s), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"token buffer is too small"}));
    // The CPU backend has no device to submit to.
    sieve::Context cpu = cpu_context();
    sieve::Chain twin(cpu, chain_desc("", kRows, kVocab, 0.8f, 15));
    EXPECT_TRUE(Fails(sieve_sample_vulkan_async(twin.get(), &a.desc, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"Vulkan context"}));
    EXPECT_TRUE(Fails(sieve_chain_record(twin.get(), cmd, &a.desc, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"Vulkan context"}));
    EXPECT_TRUE(Fails(sieve_chain_wait(twin.get(), 0, out.data()), SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to wait for"}));

    // A recorded call in flight: wait is the wrong finisher, other calls wait their turn.
    ASSERT_EQ(sieve_chain_record(chain.get(), cmd, &a.desc, nullptr), SIEVE_OK) << sieve_last_error();
    EXPECT_TRUE(Fails(sieve_chain_wait(chain.get(), 0, out.data()), SIEVE_ERROR_INVALID_ARGUMENT, {"sieve_chain_collect"}));
    EXPECT_TRUE(Fails(sieve_sample_vulkan_async(chain.get(), &a.desc, nullptr), SIEVE_ERROR_PENDING,
                      {"sieve_chain_collect"}));
    EXPECT_TRUE(Fails(sieve_chain_record(chain.get(), cmd, &a.desc, nullptr), SIEVE_ERROR_PENDING, {"sieve_chain_collect"}));
    EXPECT_TRUE(Fails(sieve_chain_reset(chain.get(), -1), SIEVE_ERROR_PENDING, {"in flight"}));
    const int32_t token = 1;
    EXPECT_TRUE(Fails(sieve_accept(chain.get(), 0, &token, 1), SIEVE_ERROR_PENDING, {"in flight"}));
    EXPECT_TRUE(Fails(sieve_chain_release_input(chain.get()), SIEVE_ERROR_PENDING, {"in flight"}));
    EXPECT_TRUE(Fails(sieve_chain_set_logprobs(chain.get(), 3), SIEVE_ERROR_PENDING, {"in flight"}));
    {
        std::vector<int32_t> counts(kRows);
        EXPECT_TRUE(Fails(sieve_chain_candidates(chain.get(), &a.host, nullptr, 0, counts.data()), SIEVE_ERROR_PENDING,
                          {"in flight"}));
    }
    double value = 0;
    EXPECT_EQ(sieve_chain_get_param(chain.get(), 0, SIEVE_PARAM_TEMPERATURE, &value), SIEVE_OK);
    sieve_counters counters;
    EXPECT_EQ(sieve_chain_counters(chain.get(), &counters), SIEVE_OK);
    app.submit_and_wait(cmd);
    std::vector<sieve_token> got(kRows);
    ASSERT_EQ(sieve_chain_collect(chain.get(), got.data()), SIEVE_OK) << sieve_last_error();
    expect_same(got, sample_vulkan(clean, a.desc));
    // An async call in flight: collect is the wrong finisher.
    ASSERT_EQ(sieve_sample_vulkan_async(chain.get(), &a.desc, &good), SIEVE_OK) << sieve_last_error();
    EXPECT_TRUE(Fails(sieve_chain_collect(chain.get(), out.data()), SIEVE_ERROR_INVALID_ARGUMENT, {"sieve_chain_wait"}));
    EXPECT_TRUE(Fails(sieve_chain_wait(chain.get(), kLongWait, nullptr), SIEVE_ERROR_INVALID_ARGUMENT, {"out"}));
    ASSERT_EQ(sieve_chain_wait(chain.get(), kLongWait, got.data()), SIEVE_OK) << sieve_last_error();
    expect_same(got, sample_vulkan(clean, a.desc));
    // Nothing changed: the chain samples as one that never saw the bad calls.
    expect_same(sample_vulkan(chain, a.desc), sample_vulkan(clean, a.desc));
}

} // namespace
