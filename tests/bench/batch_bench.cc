// The batch curve (issue 5): latency per call and per row for B = 1, 8, 64, 256
// rows at vocab 151936 (llama.cpp's default chain, LM-like logits), with the
// logits uploaded from host memory (sieve_sample) and with the logits already
// in a device buffer (sieve_sample_vulkan on the benchmark's own device).
// Also the cost of raw log-probabilities (BM_HostUploadLogprobs20).
// Google Benchmark; run: build/tests/sieve_batch_bench [--benchmark_repetitions=5]
// Counters: us_per_row = real time per call / B.
#include <volk.h>

#include <sieve/sieve.h>
#include <sieve/sieve_vulkan.h>

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

// The "app": a device, a queue and one host-visible storage buffer of logits.
struct App {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = 0;
    VolkDeviceTable vk{};
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;

    explicit App(const std::vector<float>& logits) {
        if (volkInitialize() != VK_SUCCESS) std::abort();
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.apiVersion = VK_API_VERSION_1_1;
        VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ici.pApplicationInfo = &app;
        if (vkCreateInstance(&ici, nullptr, &instance) != VK_SUCCESS) std::abort();
        volkLoadInstanceOnly(instance);
        uint32_t n = 1;
        vkEnumeratePhysicalDevices(instance, &n, &physical);
        uint32_t qn = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, nullptr);
        std::vector<VkQueueFamilyProperties> qf(qn);
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, qf.data());
        for (uint32_t i = 0; i < qn; ++i)
            if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                family = i;
                break;
            }
        float priority = 1.0f;
        VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        q.queueFamilyIndex = family;
        q.queueCount = 1;
        q.pQueuePriorities = &priority;
        VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &q;
        if (vkCreateDevice(physical, &dci, nullptr, &device) != VK_SUCCESS) std::abort();
        volkLoadDeviceTable(&vk, device);
        vk.vkGetDeviceQueue(device, family, 0, &queue);
        size = logits.size() * sizeof(float);
        VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bi.size = size;
        bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
        vk.vkCreateBuffer(device, &bi, nullptr, &buffer);
        VkMemoryRequirements req;
        vk.vkGetBufferMemoryRequirements(device, buffer, &req);
        VkPhysicalDeviceMemoryProperties props;
        vkGetPhysicalDeviceMemoryProperties(physical, &props);
        const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        ai.allocationSize = req.size;
        for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
            if ((req.memoryTypeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) {
                ai.memoryTypeIndex = i;
                break;
            }
        vk.vkAllocateMemory(device, &ai, nullptr, &memory);
        vk.vkBindBufferMemory(device, buffer, memory, 0);
        void* mapped = nullptr;
        vk.vkMapMemory(device, memory, 0, VK_WHOLE_SIZE, 0, &mapped);
        std::memcpy(mapped, logits.data(), size);
        vk.vkUnmapMemory(device, memory);
    }
    ~App() {
        vk.vkDeviceWaitIdle(device);
        vk.vkDestroyBuffer(device, buffer, nullptr);
        vk.vkFreeMemory(device, memory, nullptr);
        vk.vkDestroyDevice(device, nullptr);
        vkDestroyInstance(instance, nullptr);
    }
};

struct Rig {
    std::vector<float> logits = zipf_rows(256);
    App app{logits};
    sieve_context* ctx = nullptr;
    Rig() {
        sieve_vulkan_device h{};
        h.struct_size = sizeof(h);
        h.instance = app.instance;
        h.physical_device = app.physical;
        h.device = app.device;
        h.queue = app.queue;
        h.queue_family_index = app.family;
        h.api_version = VK_API_VERSION_1_1;
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
    sieve_vulkan_logits_init(&in, g.app.buffer, g.app.size, SIEVE_DTYPE_F32, rows, kVocab);
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
