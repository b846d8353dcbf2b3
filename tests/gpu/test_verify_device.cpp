// Verification from the app's VkBuffer: sieve_verify_vulkan, its async form
// (sieve_verify_vulkan_async + sieve_chain_wait_verified) and its record-into
// form (sieve_chain_record_verify + sieve_chain_collect_verified) give the
// tokens, and leave the slots, exactly as sieve_verify over the same values
// in host memory, in both modes, with the submissions each form promises;
// what they refuse, and that a refused or pending call changes nothing.
#include "app_logits.hpp"

#include <sieve/sieve_vulkan.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

constexpr int32_t kVocab = 3000;
constexpr uint64_t kLongWait = 120ull * 1000 * 1000 * 1000;
// Sequences with 2, 0 and 4 drafts: their positions back to back.
const std::vector<int32_t> kLengths = {2, 0, 4};
constexpr int32_t kRows = 2 + 1 + 0 + 1 + 4 + 1;
constexpr int32_t kSeq = 3;

struct Verified {
    std::vector<sieve_token> tokens = std::vector<sieve_token>(kRows);
    std::vector<sieve_verified> out = std::vector<sieve_verified>(kSeq);
    sieve_status status = SIEVE_OK;
};

// Each sequence's drafts: every position's argmax (accepted often at a low
// temperature), and for the rejection mode the draft model's probabilities:
// each draft's alone (q = 0.6: accepted when p > 0.6 u), or dense rows
// (uniform: the residual is p less a flat floor).
struct Drafts {
    std::vector<std::vector<int32_t>> tokens;
    std::vector<float> q;
    std::vector<std::vector<float>> dense;
    std::vector<sieve_draft> list;
    Drafts(const std::vector<float>& values, sieve_verify_mode mode, bool dense_q = false, int32_t vocab = kVocab) {
        int32_t row = 0;
        for (int32_t n : kLengths) {
            tokens.emplace_back();
            for (int32_t i = 0; i < n; ++i, ++row) {
                const float* r = values.data() + static_cast<size_t>(row) * vocab;
                tokens.back().push_back(static_cast<int32_t>(std::max_element(r, r + vocab) - r));
            }
            ++row;
        }
        q.assign(SIEVE_MAX_DRAFT, 0.6f);
        list.resize(kLengths.size());
        for (size_t s = 0; s < kLengths.size(); ++s) {
            sieve_draft_init(&list[s], tokens[s].data(), kLengths[s]);
            dense.emplace_back(static_cast<size_t>(kLengths[s]) * vocab, 1.0f / vocab);
            if (mode == SIEVE_VERIFY_REJECTION) {
                list[s].probs_kind = dense_q ? SIEVE_DRAFT_PROBS_DENSE : SIEVE_DRAFT_PROBS_TOKEN;
                list[s].probs = dense_q ? dense[s].data() : q.data();
            }
        }
    }
};

void configure(sieve::Chain& c) {
    c.set(SIEVE_PARAM_REPEAT_PENALTY, 1.1);  // sees the drafts before a position (where the chain has penalties)
    c.accept(0, {0, 1, 2});
}

void expect_same(const Verified& got, const Verified& want) {
    ASSERT_EQ(got.status, want.status) << sieve_last_error();
    for (size_t s = 0; s < got.out.size(); ++s) {
        EXPECT_EQ(got.out[s].status, want.out[s].status) << "sequence " << s;
        EXPECT_EQ(got.out[s].n_tokens, want.out[s].n_tokens) << "sequence " << s;
        EXPECT_EQ(got.out[s].n_accepted, want.out[s].n_accepted) << "sequence " << s;
    }
    for (size_t r = 0; r < got.tokens.size(); ++r) {
        EXPECT_EQ(got.tokens[r].token, want.tokens[r].token) << "row " << r;
        EXPECT_EQ(got.tokens[r].step, want.tokens[r].step) << "row " << r;
        EXPECT_EQ(got.tokens[r].p, want.tokens[r].p) << "row " << r;
        EXPECT_EQ(got.tokens[r].status, want.tokens[r].status) << "row " << r;
    }
}

Verified verify_host(sieve::Chain& c, const AppLogits& a, const Drafts& d, sieve_verify_mode mode) {
    Verified v;
    v.status = sieve_verify(c.get(), &a.host, d.list.data(), kSeq, mode, v.tokens.data(), v.out.data());
    return v;
}

// The three forms of a verification from the app's buffer.
enum class Form { Sync, Async, Record };
const char* form_name(Form f) { return f == Form::Sync ? "sync" : f == Form::Async ? "async" : "record"; }

Verified verify_device(AppDevice& app, sieve::Chain& c, const AppLogits& a, const Drafts& d, sieve_verify_mode mode,
                       Form form) {
    Verified v;
    switch (form) {
    case Form::Sync:
        app.copy_on_queue(a.staging, a.tensor);  // the decode
        v.status = sieve_verify_vulkan(c.get(), &a.desc, d.list.data(), kSeq, mode, v.tokens.data(), v.out.data());
        break;
    case Form::Async: {
        // The decode signals `decoded`, the verification waits on it and
        // signals `verified`, which the app's next submission waits on.
        const VkSemaphore decoded = app.make_semaphore(false), verified = app.make_semaphore(false);
        app.copy_on_queue(a.staging, a.tensor);
        app.submit_semaphores(VK_NULL_HANDLE, decoded);
        sieve_vulkan_sync s;
        sieve_vulkan_sync_init(&s);
        s.wait_semaphore = decoded;
        s.signal_semaphore = verified;
        EXPECT_EQ(sieve_verify_vulkan_async(c.get(), &a.desc, d.list.data(), kSeq, mode, &s), SIEVE_OK)
            << sieve_last_error();
        app.submit_semaphores(verified, VK_NULL_HANDLE, true);
        v.status = sieve_chain_wait_verified(c.get(), kLongWait, v.tokens.data(), v.out.data());
        break;
    }
    case Form::Record: {
        // One command buffer: the app's decode, then Sieve's passes.
        VkCommandBuffer cmd = app.begin_command_buffer();
        app.record_copy(cmd, a.staging, a.tensor);
        EXPECT_EQ(sieve_chain_record_verify(c.get(), cmd, &a.desc, d.list.data(), kSeq, mode), SIEVE_OK)
            << sieve_last_error();
        app.submit_and_wait(cmd);
        v.status = sieve_chain_collect_verified(c.get(), v.tokens.data(), v.out.data());
        break;
    }
    }
    return v;
}

struct Case {
    const char* samplers;
    sieve_verify_mode mode;
    sieve_dtype dtype;
    bool dense_q = false;  // the rejection mode's q: dense rows, else each draft's alone
    // The passes read the app's rows where they are (f32, no history pass
    // patching them, a collect pass whose output the host reads as it is):
    // no ingest pass, unless some row goes to the twin.
    bool in_place = false;
};

// Every form against sieve_verify on host logits, three steps (each step's
// slots carry the tokens the previous one committed), on chains with and
// without a collect pass, penalties reading the drafts, rows the CPU twin
// finishes (min_p 1e-4 keeps more survivors than the GPU's buffer: on a
// GPU's plan the key levels draw them instead, in every form), and in
// the match mode a chain with mirostat_v2 (sync only: position by position).
// The vocabulary passes the device's candidate capacity (rows up to it are
// drawn whole in one dispatch, never by the twin): 3000 on lavapipe (2048),
// twice the capacity where it is larger (4096 on an H200: 8192, where min_p
// 1e-4 over Zipf rows keeps about 4300 survivors, past the buffer's 2048).
TEST(VerifyDevice, EveryFormEqualsHostLogits) {
    AppDevice app;
    auto ctx = app_context(app);
    const int32_t capacity = static_cast<int32_t>(ctx->device_info().candidate_capacity);
    const sieve_device_info info = ctx->device_info();
    const bool levels = !(info.type == SIEVE_DEVICE_CPU && !(info.profile & SIEVE_PROFILE_GPU));  // a GPU's plan
    const int32_t vocab = capacity < kVocab ? kVocab : 2 * capacity;
    const Case cases[] = {
        {"penalties;top_k;temperature;dist", SIEVE_VERIFY_MATCH, SIEVE_DTYPE_F32},
        {"penalties;top_k;temperature;dist", SIEVE_VERIFY_REJECTION, SIEVE_DTYPE_F16},
        {"penalties;top_k;temperature;dist", SIEVE_VERIFY_REJECTION, SIEVE_DTYPE_F32, true},
        {"temperature;dist", SIEVE_VERIFY_REJECTION, SIEVE_DTYPE_F32},
        {"top_k;temperature;dist", SIEVE_VERIFY_REJECTION, SIEVE_DTYPE_F32, false, true},
        {"min_p;temperature;dist", SIEVE_VERIFY_MATCH, SIEVE_DTYPE_BF16},
        {"min_p;temperature;dist", SIEVE_VERIFY_REJECTION, SIEVE_DTYPE_F32, false, true},
        {"temperature;mirostat_v2", SIEVE_VERIFY_MATCH, SIEVE_DTYPE_F16},
    };
    int accepted = 0, rejected = 0, in_place_steps = 0;
    uint64_t twin_rows = 0;
    for (const Case& k : cases) {
        const bool learns = std::string(k.samplers).find("mirostat") != std::string::npos;
        AppLogits a = make_app_logits(app, k.dtype, Shape::Zipf, kRows, vocab, vocab + 5, 0, 77);
        const Drafts d(make_rows(Shape::Zipf, kRows, vocab, 77), k.mode, k.dense_q, vocab);
        for (Form form : {Form::Sync, Form::Async, Form::Record}) {
            if (learns && form != Form::Sync) continue;  // refused: VerifyDeviceAsync.BadInput
            SCOPED_TRACE(std::string(k.samplers) + (k.mode == SIEVE_VERIFY_MATCH ? " match " : " rejection ") +
                         (k.dense_q ? "dense q " : "") + form_name(form) + " dtype " + std::to_string(k.dtype));
            const float temperature = k.mode == SIEVE_VERIFY_MATCH ? 0.1f : 0.8f;
            sieve::Chain device(*ctx, chain_desc(k.samplers, kRows, vocab, temperature, 9));
            sieve::Chain host(*ctx, chain_desc(k.samplers, kRows, vocab, temperature, 9));
            for (sieve::Chain* c : {&device, &host}) {
                configure(*c);
                if (std::string(k.samplers).find("min_p") != std::string::npos) c->set(SIEVE_PARAM_MIN_P, 0.0001);
            }
            for (int step = 0; step < 3; ++step) {
                SCOPED_TRACE("step " + std::to_string(step));
                const sieve_counters before = device.counters();
                const Verified got = verify_device(app, device, a, d, k.mode, form);
                const sieve_counters after = device.counters();
                // The positions' work is one submission of the chain's (none
                // when recorded: the app submits it), plus one re-run of the
                // ingest pass when some rows go to the twin or a chain without
                // a collect pass reads its rows on the host, plus the key
                // levels' part where min-p's survivors pass the buffer on a
                // GPU's plan (every form: gpu_chain_device.cpp,
                // finish_key_levels); position by position for a learner.
                const uint64_t submits = after.submits - before.submits;
                const uint64_t levels_part = levels && std::string(k.samplers).rfind("min_p", 0) == 0 ? 1u : 0u;
                if (learns) EXPECT_LE(submits, 1u + SIEVE_MAX_DRAFT + 1u);
                else if (form == Form::Record) EXPECT_LE(submits, 1u + levels_part);
                else EXPECT_LE(submits, 2u + levels_part);
                if (!learns && after.cpu_fallback_rows == before.cpu_fallback_rows && k.mode == SIEVE_VERIFY_MATCH) {
                    const uint64_t own = form == Form::Record ? 0u : 1u;
                    EXPECT_GE(submits, own);
                    EXPECT_LE(submits, own + levels_part);
                }
                twin_rows += after.cpu_fallback_rows - before.cpu_fallback_rows;
                const sieve_counters host_before = host.counters();
                expect_same(got, verify_host(host, a, d, k.mode));
                const sieve_counters host_after = host.counters();
                // Rows the passes read where the app keeps them: no ingest
                // pass, the dispatches and row passes of the host logits' call.
                if (k.in_place && after.cpu_fallback_rows == before.cpu_fallback_rows) {
                    ++in_place_steps;
                    EXPECT_EQ(after.dispatches - before.dispatches, host_after.dispatches - host_before.dispatches);
                    EXPECT_EQ(after.row_passes - before.row_passes, host_after.row_passes - host_before.row_passes);
                }
                for (int32_t slot = 0; slot < kSeq; ++slot)
                    EXPECT_EQ(device.save_slot(slot), host.save_slot(slot)) << "slot " << slot;
                for (size_t s = 0; s < got.out.size(); ++s) {
                    accepted += got.out[s].n_accepted;
                    rejected += got.out[s].n_accepted < kLengths[s] ? 1 : 0;
                }
            }
        }
    }
    EXPECT_GE(accepted, 20) << "drafts past position 0 should be reached";
    EXPECT_GT(rejected, 0) << "some sequence should stop before its bonus";
    EXPECT_GT(twin_rows, 0u) << "no case reaches the CPU twin any more";
    EXPECT_GE(in_place_steps, 9) << "the rejection mode on rows read in place";
}

// Each position's row takes its sequence's bias and bitmask, which the passes
// read from the row's input block: a sample from the app's buffer first wrote
// every chain row's own inputs into the blocks the positions then take, and
// a bias set on every row at once gave rows of different bitmasks the same
// set of inputs to compare by (the blocks are written when their inputs
// change, not every call).
TEST(VerifyDevice, PositionsTakeTheirSequencesInputs) {
    AppDevice app;
    auto ctx = app_context(app);
    const int32_t capacity = static_cast<int32_t>(ctx->device_info().candidate_capacity);
    const int32_t vocab = capacity < kVocab ? kVocab : 2 * capacity;
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, vocab, vocab, 0, 78);
    const Drafts d(make_rows(Shape::Zipf, kRows, vocab, 78), SIEVE_VERIFY_MATCH, false, vocab);
    sieve::Chain device(*ctx, chain_desc("top_k;temperature;dist", kRows, vocab, 0.1f, 9));
    sieve::Chain host(*ctx, chain_desc("top_k;temperature;dist", kRows, vocab, 0.1f, 9));
    const size_t words = static_cast<size_t>(vocab + 31) / 32;
    for (sieve::Chain* c : {&device, &host}) {
        for (int32_t r = 0; r < kRows; ++r) {
            // Row r bans a different third of the vocabulary (ids 3j + r % 3).
            std::vector<uint32_t> mask(words, 0u);
            for (int32_t t = 0; t < vocab; ++t)
                if (t % 3 != r % 3) mask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
            c->set_token_bitmask(mask, r);
        }
        c->set_logit_bias({1, 2, 3}, {0.5f, 0.5f, 0.5f});
        app.copy_on_queue(a.staging, a.tensor);
        std::vector<sieve_token> sampled(kRows);
        ASSERT_EQ(sieve_sample_vulkan(c->get(), &a.desc, sampled.data()), SIEVE_OK) << sieve_last_error();
    }
    const Verified got = verify_device(app, device, a, d, SIEVE_VERIFY_MATCH, Form::Sync);
    expect_same(got, verify_host(host, a, d, SIEVE_VERIFY_MATCH));
    for (int32_t slot = 0; slot < kSeq; ++slot) EXPECT_EQ(device.save_slot(slot), host.save_slot(slot)) << "slot " << slot;
}

// A verification waits on a timeline value the app signals only after the
// host's wait ran out: TIMEOUT, the chain refuses every other call (the
// sampling finishers included) and keeps the call, whose later wait returns
// the synchronous results.
TEST(VerifyDeviceAsync, TimeoutThenUsable) {
    AppDevice app(true);
    auto ctx = app_context(app, SIEVE_FEATURE_TIMELINE_SEMAPHORE);
    if (!(ctx->device_info().features & SIEVE_FEATURE_TIMELINE_SEMAPHORE)) {
        // The constrained profile hides the feature: a timeline sync is refused.
        AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 5);
        sieve::Chain c(*ctx, chain_desc("top_k;temperature;dist", kRows, kVocab, 0.1f, 3));
        const Drafts d(make_rows(Shape::Zipf, kRows, kVocab, 5), SIEVE_VERIFY_MATCH);
        sieve_vulkan_sync s;
        sieve_vulkan_sync_init(&s);
        s.timeline = 1;
        s.wait_semaphore = app.make_semaphore(true);
        s.wait_value = 1;
        EXPECT_TRUE(Fails(sieve_verify_vulkan_async(c.get(), &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH, &s),
                          SIEVE_ERROR_DEVICE_LIMIT, {"timeline"}));
        return;
    }
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 5);
    app.copy_on_queue(a.staging, a.tensor);
    const Drafts d(make_rows(Shape::Zipf, kRows, kVocab, 5), SIEVE_VERIFY_REJECTION);
    sieve::Chain async(*ctx, chain_desc("penalties;top_k;temperature;dist", kRows, kVocab, 0.8f, 13));
    sieve::Chain host(*ctx, chain_desc("penalties;top_k;temperature;dist", kRows, kVocab, 0.8f, 13));
    configure(async);
    configure(host);
    const VkSemaphore gate = app.make_semaphore(true);
    sieve_vulkan_sync s;
    sieve_vulkan_sync_init(&s);
    s.timeline = 1;
    s.wait_semaphore = gate;
    s.wait_value = 1;
    ASSERT_EQ(sieve_verify_vulkan_async(async.get(), &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_REJECTION, &s),
              SIEVE_OK)
        << sieve_last_error();
    Verified got;
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(async.get(), 1000 * 1000, got.tokens.data(), got.out.data()),
                      SIEVE_ERROR_TIMEOUT, {"wait again"}));
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(async.get(), 0, got.tokens.data(), got.out.data()),
                      SIEVE_ERROR_TIMEOUT, {"wait again"}));
    // In flight: every other call is refused and changes nothing.
    EXPECT_TRUE(Fails(sieve_verify_vulkan(async.get(), &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_REJECTION,
                                          got.tokens.data(), got.out.data()),
                      SIEVE_ERROR_PENDING, {"sieve_chain_wait_verified"}));
    EXPECT_TRUE(Fails(sieve_verify_vulkan_async(async.get(), &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_REJECTION,
                                                nullptr),
                      SIEVE_ERROR_PENDING, {"sieve_chain_wait_verified"}));
    std::vector<sieve_token> rows(kRows);
    EXPECT_TRUE(Fails(sieve_sample_vulkan(async.get(), &a.desc, rows.data()), SIEVE_ERROR_PENDING,
                      {"sieve_chain_wait_verified"}));
    EXPECT_TRUE(Fails(sieve_chain_wait(async.get(), 0, rows.data()), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"verification", "sieve_chain_wait_verified"}));
    EXPECT_TRUE(Fails(sieve_chain_collect(async.get(), rows.data()), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"verification", "sieve_chain_wait_verified"}));
    EXPECT_TRUE(Fails(sieve_chain_collect_verified(async.get(), got.tokens.data(), got.out.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"sieve_verify_vulkan_async", "sieve_chain_wait_verified"}));
    const int32_t token = 1;
    EXPECT_TRUE(Fails(sieve_accept(async.get(), 0, &token, 1), SIEVE_ERROR_PENDING, {"in flight"}));
    VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    signal.semaphore = gate;
    signal.value = 1;
    ASSERT_EQ(app.vk.vkSignalSemaphore(app.device, &signal), VK_SUCCESS);
    ASSERT_EQ(sieve_chain_wait_verified(async.get(), kLongWait, got.tokens.data(), got.out.data()), SIEVE_OK)
        << sieve_last_error();
    expect_same(got, verify_host(host, a, d, SIEVE_VERIFY_REJECTION));
    for (int32_t slot = 0; slot < kSeq; ++slot) EXPECT_EQ(async.save_slot(slot), host.save_slot(slot));
    // Usable afterwards; nothing is in flight.
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(async.get(), 0, got.tokens.data(), got.out.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to wait for"}));
    expect_same(verify_device(app, async, a, d, SIEVE_VERIFY_REJECTION, Form::Async),
                verify_host(host, a, d, SIEVE_VERIFY_REJECTION));
}

// Every refused input of the async and recorded forms: its status and
// message, nothing left in flight, the slots as they were; then the chain
// verifies as one that never saw the bad calls.
TEST(VerifyDeviceAsync, BadInput) {
    AppDevice app;
    auto ctx = app_context(app);
    AppLogits a = make_app_logits(app, SIEVE_DTYPE_F32, Shape::Zipf, kRows, kVocab, kVocab, 0, 7);
    app.copy_on_queue(a.staging, a.tensor);
    const Drafts d(make_rows(Shape::Zipf, kRows, kVocab, 7), SIEVE_VERIFY_MATCH);
    sieve::Chain chain(*ctx, chain_desc("penalties;top_k;temperature;dist", kRows, kVocab, 0.1f, 15));
    sieve::Chain clean(*ctx, chain_desc("penalties;top_k;temperature;dist", kRows, kVocab, 0.1f, 15));
    configure(chain);
    configure(clean);
    std::vector<std::vector<uint8_t>> slots;
    for (int32_t slot = 0; slot < kSeq; ++slot) slots.push_back(chain.save_slot(slot));
    const auto async = [&](const sieve_vulkan_logits* l, const sieve_draft* dr, int32_t n, int32_t mode,
                           const sieve_vulkan_sync* s) {
        return sieve_verify_vulkan_async(chain.get(), l, dr, n, static_cast<sieve_verify_mode>(mode), s);
    };
    AppDevice::AppBuffer ids = app.make_buffer(kRows * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    sieve_vulkan_sync s;
    sieve_vulkan_sync_init(&s);
    s.token_buffer = ids.buffer;
    s.token_buffer_size = ids.size;
    EXPECT_TRUE(Fails(async(&a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH, &s), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"token_buffer", "sieve_chain_wait_verified"}));
    sieve_vulkan_sync_init(&s);
    s.struct_size = 4;
    EXPECT_TRUE(Fails(async(&a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH, &s), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"struct_size"}));
    sieve_vulkan_sync_init(&s);
    s.timeline = 1;  // the context was not told the device has them
    EXPECT_TRUE(Fails(async(&a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH, &s), SIEVE_ERROR_DEVICE_LIMIT,
                      {"timeline"}));
    // The drafts and the logits get sieve_verify_vulkan's checks.
    EXPECT_TRUE(Fails(async(&a.desc, d.list.data(), kSeq, 7, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"unknown verify mode 7"}));
    EXPECT_TRUE(Fails(async(&a.desc, nullptr, kSeq, SIEVE_VERIFY_MATCH, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"drafts is NULL"}));
    EXPECT_TRUE(Fails(async(&a.desc, d.list.data(), kRows + 1, SIEVE_VERIFY_MATCH, nullptr), SIEVE_ERROR_CAPACITY,
                      {"n_seq"}));
    EXPECT_TRUE(Fails(async(&a.desc, d.list.data(), 2, SIEVE_VERIFY_MATCH, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"rows of logits"}));
    std::vector<sieve_draft> bad = d.list;
    bad[2].n_draft = SIEVE_MAX_DRAFT + 1;
    EXPECT_TRUE(Fails(async(&a.desc, bad.data(), kSeq, SIEVE_VERIFY_MATCH, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"n_draft 17"}));
    bad = d.list;
    const int32_t out_of_range[4] = {0, 1, kVocab, 2};
    bad[2].tokens = out_of_range;
    EXPECT_TRUE(Fails(async(&a.desc, bad.data(), kSeq, SIEVE_VERIFY_MATCH, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"sequence 2"}));
    EXPECT_TRUE(Fails(async(&a.desc, d.list.data(), kSeq, SIEVE_VERIFY_REJECTION, nullptr),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 0"}));  // no draft probabilities
    sieve_vulkan_logits small = a.desc;
    small.size = 100;
    EXPECT_TRUE(Fails(async(&small, d.list.data(), kSeq, SIEVE_VERIFY_MATCH, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"too small"}));
    EXPECT_TRUE(Fails(async(nullptr, d.list.data(), kSeq, SIEVE_VERIFY_MATCH, nullptr), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"logits"}));
    EXPECT_TRUE(Fails(sieve_verify_vulkan_async(nullptr, &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH, nullptr),
                      SIEVE_ERROR_NULL_HANDLE, {"chain"}));
    VkCommandBuffer cmd = app.begin_command_buffer();
    EXPECT_TRUE(Fails(sieve_chain_record_verify(chain.get(), VK_NULL_HANDLE, &a.desc, d.list.data(), kSeq,
                                                SIEVE_VERIFY_MATCH),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"cmd is VK_NULL_HANDLE"}));
    EXPECT_TRUE(Fails(sieve_chain_record_verify(chain.get(), cmd, &a.desc, bad.data(), kSeq, SIEVE_VERIFY_MATCH),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"sequence 2"}));
    // Nothing in flight, or the wrong finisher's arguments.
    Verified v;
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(chain.get(), 0, v.tokens.data(), v.out.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to wait for"}));
    EXPECT_TRUE(Fails(sieve_chain_collect_verified(chain.get(), v.tokens.data(), v.out.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to collect"}));
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(chain.get(), 0, nullptr, v.out.data()), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"tokens is NULL"}));
    EXPECT_TRUE(Fails(sieve_chain_collect_verified(chain.get(), v.tokens.data(), nullptr),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"out is NULL"}));
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(nullptr, 0, v.tokens.data(), v.out.data()), SIEVE_ERROR_NULL_HANDLE,
                      {"chain"}));
    EXPECT_TRUE(Fails(sieve_chain_collect_verified(nullptr, v.tokens.data(), v.out.data()), SIEVE_ERROR_NULL_HANDLE,
                      {"chain"}));
    // A learner's match mode goes position by position: only sieve_verify_vulkan.
    {
        sieve::Chain learner(*ctx, chain_desc("temperature;mirostat_v2", kRows, kVocab, 0.8f, 1));
        EXPECT_TRUE(Fails(sieve_verify_vulkan_async(learner.get(), &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH,
                                                    nullptr),
                          SIEVE_ERROR_INVALID_ARGUMENT, {"mirostat", "sieve_verify_vulkan"}));
        EXPECT_TRUE(Fails(sieve_chain_record_verify(learner.get(), cmd, &a.desc, d.list.data(), kSeq,
                                                    SIEVE_VERIFY_MATCH),
                          SIEVE_ERROR_INVALID_ARGUMENT, {"mirostat"}));
        EXPECT_TRUE(Fails(sieve_chain_wait_verified(learner.get(), 0, v.tokens.data(), v.out.data()),
                          SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to wait for"}));
    }
    // The CPU backend has no device.
    {
        sieve::Context cpu = cpu_context();
        sieve::Chain twin(cpu, chain_desc("top_k;temperature;dist", kRows, kVocab, 0.8f, 15));
        EXPECT_TRUE(Fails(sieve_verify_vulkan_async(twin.get(), &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH,
                                                    nullptr),
                          SIEVE_ERROR_INVALID_ARGUMENT, {"Vulkan context"}));
        EXPECT_TRUE(Fails(sieve_chain_record_verify(twin.get(), cmd, &a.desc, d.list.data(), kSeq,
                                                    SIEVE_VERIFY_MATCH),
                          SIEVE_ERROR_INVALID_ARGUMENT, {"Vulkan context"}));
        EXPECT_TRUE(Fails(sieve_verify_vulkan(twin.get(), &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH,
                                              v.tokens.data(), v.out.data()),
                          SIEVE_ERROR_INVALID_ARGUMENT, {"Vulkan context"}));
        EXPECT_TRUE(Fails(sieve_chain_wait_verified(twin.get(), 0, v.tokens.data(), v.out.data()),
                          SIEVE_ERROR_INVALID_ARGUMENT, {"nothing to wait for"}));
    }
    for (int32_t slot = 0; slot < kSeq; ++slot) EXPECT_EQ(chain.save_slot(slot), slots[static_cast<size_t>(slot)]);
    // A recorded verification in flight: the async finisher and the sampling
    // finishers are the wrong ones; a sampling call in flight is not a
    // verification's to finish.
    ASSERT_EQ(sieve_chain_record_verify(chain.get(), cmd, &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH), SIEVE_OK)
        << sieve_last_error();
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(chain.get(), 0, v.tokens.data(), v.out.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"sieve_chain_record_verify", "sieve_chain_collect_verified"}));
    std::vector<sieve_token> rows(kRows);
    EXPECT_TRUE(Fails(sieve_chain_collect(chain.get(), rows.data()), SIEVE_ERROR_INVALID_ARGUMENT,
                      {"sieve_chain_collect_verified"}));
    EXPECT_TRUE(Fails(sieve_chain_record_verify(chain.get(), cmd, &a.desc, d.list.data(), kSeq, SIEVE_VERIFY_MATCH),
                      SIEVE_ERROR_PENDING, {"sieve_chain_collect_verified"}));
    app.submit_and_wait(cmd);
    ASSERT_EQ(sieve_chain_collect_verified(chain.get(), v.tokens.data(), v.out.data()), SIEVE_OK) << sieve_last_error();
    expect_same(v, verify_host(clean, a, d, SIEVE_VERIFY_MATCH));
    ASSERT_EQ(sieve_sample_vulkan_async(chain.get(), &a.desc, nullptr), SIEVE_OK) << sieve_last_error();
    EXPECT_TRUE(Fails(sieve_chain_wait_verified(chain.get(), 0, v.tokens.data(), v.out.data()),
                      SIEVE_ERROR_INVALID_ARGUMENT, {"samples rows", "sieve_chain_wait"}));
    ASSERT_EQ(sieve_chain_wait(chain.get(), kLongWait, rows.data()), SIEVE_OK) << sieve_last_error();
    std::vector<sieve_token> want(kRows);
    ASSERT_EQ(sieve_sample(clean.get(), reinterpret_cast<const float*>(a.bytes.data()), kRows, kVocab, want.data()),
              SIEVE_OK);
    for (size_t r = 0; r < rows.size(); ++r) EXPECT_EQ(rows[r].token, want[r].token) << "row " << r;
}

} // namespace
