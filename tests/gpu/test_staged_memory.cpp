// A discrete GPU's memory path on a device with unified memory (lavapipe),
// through the engine's test switch (vk_device.hpp: stage_memory_for_tests):
// the logits uploaded through a staging buffer, and the rows the twin
// finishes read back by a copy. Each call must equal the same call on the
// unified path, with validation on: an NVIDIA H200 run found both copies
// recorded on buffers without their transfer usage, which lavapipe alone
// never records.
#include "app_logits.hpp"
#include "test_support.hpp"
#include "vulkan/vk_device.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace sieve_test;

// The contexts made in its scope take the staged path.
class StagedMemory {
public:
    StagedMemory() : before_(sieve::stage_memory_for_tests(true)) {}
    ~StagedMemory() { sieve::stage_memory_for_tests(before_); }
    StagedMemory(const StagedMemory&) = delete;
    StagedMemory& operator=(const StagedMemory&) = delete;

private:
    bool before_;
};

// Host logits: the upload goes through the staging buffer; min-p's floor far
// below the candidate buffer sends rows to the twin, which reads the host's.
TEST(StagedMemory, HostLogitsEqualTheUnifiedPath) {
    std::unique_ptr<sieve::Context> staged;
    {
        StagedMemory on;
        staged = std::make_unique<sieve::Context>(gpu_options());
    }
    sieve::Context unified(gpu_options());
    constexpr int32_t kRows = 3, kVocab = 32000;
    const std::vector<float> logits = make_rows(Shape::Gaussian, kRows, kVocab, 21);
    for (const char* text : {"top_k;top_p;min_p;temperature", "min_p;temperature"}) {
        SCOPED_TRACE(text);
        sieve::Chain a(*staged, chain_desc(text, kRows, kVocab, 0.8f, 4));
        sieve::Chain b(unified, chain_desc(text, kRows, kVocab, 0.8f, 4));
        if (std::string(text) == "min_p;temperature") {
            a.set(SIEVE_PARAM_MIN_P, 0.001);
            b.set(SIEVE_PARAM_MIN_P, 0.001);
        }
        for (int step = 0; step < 3; ++step)
            expect_same(a.sample(logits.data(), kRows, kVocab), b.sample(logits.data(), kRows, kVocab));
        EXPECT_EQ(a.counters().cpu_fallback_rows, b.counters().cpu_fallback_rows);
    }
}

// Logits in the app's buffer (f16 through the ingest pass, f32 bound where
// it is): the rows the twin finishes come back by the read-back copy, which
// copies the call's rows only (the staged chain holds more rows and a longer
// vocabulary than the call: a copy short of the call's last row fails).
TEST(StagedMemory, DeviceRowsTheTwinFinishesEqualTheUnifiedPath) {
    AppDevice app;
    std::unique_ptr<sieve::Context> staged;
    {
        StagedMemory on;
        staged = app_context(app);
    }
    auto unified = app_context(app);
    constexpr int32_t kRows = 2, kVocab = 32000;
    for (sieve_dtype dtype : {SIEVE_DTYPE_F16, SIEVE_DTYPE_F32}) {
        SCOPED_TRACE("dtype " + std::to_string(dtype));
        AppLogits a = make_app_logits(app, dtype, Shape::Gaussian, kRows, kVocab, kVocab, 0, 8);
        // min-p's survivors past the buffer with a top-k after it: the twin's
        // on every plan (a GPU's draws min-p alone by its key levels).
        sieve::Chain zero(*staged, chain_desc("min_p;top_k;temperature", kRows + 3, kVocab + 1000, 0.8f, 3));
        sieve::Chain same(*unified, chain_desc("min_p;top_k;temperature", kRows, kVocab, 0.8f, 3));
        for (sieve::Chain* c : {&zero, &same}) {
            c->set(SIEVE_PARAM_MIN_P, 0.001);
            c->set(SIEVE_PARAM_TOP_K, 5000);
        }
        for (int step = 0; step < 2; ++step) {
            app.copy_on_queue(a.staging, a.tensor);
            expect_same(sample_vulkan(zero, a.desc), sample_vulkan(same, a.desc));
        }
        EXPECT_GT(zero.counters().cpu_fallback_rows, 0u) << "the case no longer reaches the CPU twin";
        EXPECT_EQ(zero.counters().cpu_fallback_rows, same.counters().cpu_fallback_rows);
    }
}

} // namespace
