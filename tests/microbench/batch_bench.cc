// The batch curve (issue 5): latency per call and per row for B = 1, 8, 64, 256
// rows at vocab 151936 (llama.cpp's default chain, LM-like logits), with the
// logits uploaded from host memory (sieve_sample) and with the logits already
// in a device buffer (sieve_sample_vulkan on the benchmark's own device).
// Also the cost of raw log-probabilities (BM_HostUploadLogprobs20).
// Google Benchmark; run: build/tests/sieve_batch_bench [--benchmark_repetitions=5]
// Counters: us_per_row = real time per call / B.
#include "../support/vk_app.hpp"

#include <sieve/sieve.h>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace {

constexpr int32_t kVocab = 151936;

std::vector<float> zipf_rows(int32_t rows) {
    std::mt19937 rng(7);
    std::normal_distribution<float> noise(0.0f, 0.3f);
    std::vector<float> out(static_cast<size_t>(rows) * kVocab);
    std::vector<int32_t> rank(kVocab);
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t i = 0; i < kVocab; ++i) rank[static_cast<size_t>(i)] = i;
        std::shuffle(rank.begin(), rank.end(), rng);
        for (int32_t i = 0; i < kVocab; ++i)
            out[static_cast<size_t>(r) * kVocab + i] =
                12.0f - 1.1f * std::log(static_cast<float>(rank[static_cast<size_t>(i)] + 1)) + noise(rng);
    }
    return out;
}

// The "app" (vk_app.hpp, no validation): its own device and queue and one
// host-visible storage buffer holding the logits.
struct Rig {
    std::vector<float> logits = zipf_rows(256);
    sieve_test::VkApp app;
    sieve_test::VkApp::AppBuffer tensor =
        app.make_buffer(logits.size() * sizeof(float), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true);
    sieve_context* ctx = nullptr;
    Rig() {
        std::memcpy(tensor.mapped, logits.data(), tensor.size);
        const sieve_vulkan_device h = app.handles();
        if (sieve_context_create_vulkan(&h, nullptr, &ctx) != SIEVE_OK) {
            std::fprintf(stderr, "%s\n", sieve_last_error());
            std::abort();
        }
    }
    ~Rig() { sieve_context_destroy(ctx); }
};

Rig& rig() {
    static Rig r;
    return r;
}

void run(benchmark::State& state, bool device_input, int32_t logprobs = -1) {
    const int32_t rows = static_cast<int32_t>(state.range(0));
    Rig& g = rig();
    sieve_chain_desc desc;
    sieve_chain_desc_init(&desc);
    desc.max_rows = rows;
    desc.max_vocab = kVocab;
    desc.seed = 1234;
    sieve_chain* chain = nullptr;
    if (sieve_chain_create(g.ctx, &desc, &chain) != SIEVE_OK) {
        state.SkipWithError(sieve_last_error());
        return;
    }
    sieve_chain_set_logprobs(chain, logprobs);
    std::vector<sieve_token> out(static_cast<size_t>(rows));
    sieve_vulkan_logits in;
    sieve_vulkan_logits_init(&in, g.tensor.buffer, g.tensor.size, SIEVE_DTYPE_F32, rows, kVocab);
    auto sample = [&] {
        return device_input ? sieve_sample_vulkan(chain, &in, out.data())
                            : sieve_sample(chain, g.logits.data(), rows, kVocab, out.data());
    };
    for (int i = 0; i < 2; ++i) sample();  // pipelines compile at their first dispatch on lavapipe
    for (auto _ : state)
        if (sample() != SIEVE_OK) state.SkipWithError(sieve_last_error());
    state.counters["us_per_row"] =
        benchmark::Counter(static_cast<double>(rows) * 1e-6, benchmark::Counter::kIsIterationInvariantRate |
                                                                 benchmark::Counter::kInvert);
    sieve_chain_destroy(chain);
}

void BM_HostUpload(benchmark::State& state) { run(state, false); }
void BM_DeviceLogits(benchmark::State& state) { run(state, true); }
// What raw log-probabilities cost: the token's and the top 20 (one more pass).
void BM_HostUploadLogprobs20(benchmark::State& state) { run(state, false, 20); }
void BM_HostUploadLogprobs0(benchmark::State& state) { run(state, false, 0); }

BENCHMARK(BM_HostUpload)->Arg(1)->Arg(8)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DeviceLogits)->Arg(1)->Arg(8)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HostUploadLogprobs20)->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HostUploadLogprobs0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
