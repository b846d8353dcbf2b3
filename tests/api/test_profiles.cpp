// Profiles (sieve.h: sieve_profile_bits): under the gpu profile a CPU device
// (lavapipe) records exactly the plans a discrete GPU with the same features
// and limits would; profiles are reported, combine, and bad names are refused.
#include "chain/context.hpp"
#include "vulkan/device_profile.hpp"
#include "vulkan/gpu_context.hpp"
#include "vulkan/gpu_plan.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>

namespace {

sieve::Context context_with_profile(const char* profile) {
    sieve::ContextOptions o = sieve_test::gpu_options();
    o.profile(profile);
    return sieve::Context(o);
}

using sieve_test::limits_of;

// The device as enumeration describes it (no context, no profile).
sieve_device_info enumerated(uint32_t index) { return sieve::devices().at(index); }

// The plan-shaping limits of a device described as `type` with `device`'s
// features and limits, every feature on, no profile and no caps.
sieve::EffectiveLimits described_as(sieve_device_info device, sieve_device_type type) {
    device.type = type;
    sieve_context_options defaults;
    sieve_context_options_init(&defaults);
    sieve::EffectiveLimits limits;
    sieve::shape_limits(device, device.features, defaults, SIEVE_PROFILE_DEVICE, &limits);
    return limits;
}

void expect_same_shape(const sieve::EffectiveLimits& got, const sieve::EffectiveLimits& want) {
    EXPECT_EQ(got.plan_type, want.plan_type);
    EXPECT_EQ(got.workgroup_size, want.workgroup_size);
    EXPECT_EQ(got.shared_memory, want.shared_memory);
    EXPECT_EQ(got.candidate_capacity, want.candidate_capacity);
    EXPECT_EQ(got.features, want.features);
    EXPECT_EQ(got.cpu_paths, want.cpu_paths);
}

TEST(Profiles, ParseNamesAndRefuseUnknownOnes) {
    uint32_t bits = 99;
    ASSERT_EQ(sieve_profile_parse("device", &bits), SIEVE_OK);
    EXPECT_EQ(bits, 0u);
    ASSERT_EQ(sieve_profile_parse("gpu", &bits), SIEVE_OK);
    EXPECT_EQ(bits, uint32_t{SIEVE_PROFILE_GPU});
    ASSERT_EQ(sieve_profile_parse("constrained,gpu", &bits), SIEVE_OK);
    EXPECT_EQ(bits, uint32_t{SIEVE_PROFILE_GPU | SIEVE_PROFILE_CONSTRAINED});
    EXPECT_STREQ(sieve_profile_name(bits), "gpu,constrained");
    EXPECT_STREQ(sieve_profile_name(SIEVE_PROFILE_CONSTRAINED), "constrained");
    EXPECT_STREQ(sieve_profile_name(0), "device");
    for (const char* bad : {"", "GPU", "gpu,", ",gpu", "gpu,gpu", "phone", "gpu constrained", "device,gpu"}) {
        EXPECT_EQ(sieve_profile_parse(bad, &bits), SIEVE_ERROR_INVALID_ARGUMENT) << bad;
        EXPECT_NE(std::string(sieve_last_error()).find("device, gpu, constrained and gpu,constrained"),
                  std::string::npos)
            << sieve_last_error();
    }
    EXPECT_EQ(sieve_profile_parse("gpu", nullptr), SIEVE_ERROR_INVALID_ARGUMENT);
}

TEST(Profiles, UnknownProfileRefusedAtContextCreation) {
    sieve_context_options o;
    sieve_context_options_init(&o);
    o.profile = "mobile";
    sieve_context* ctx = nullptr;
    EXPECT_EQ(sieve_context_create(&o, &ctx), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(std::string(sieve_last_error()).find("unknown profile 'mobile'"), std::string::npos);
}

// The CPU backend has no plans to shape: a profile named for it is refused,
// not ignored (env SIEVE_PROFILE, which every context reads, is ignored there).
TEST(Profiles, CpuBackendRefusesANamedProfile) {
    sieve_context_options o;
    sieve_context_options_init(&o);
    o.backend = SIEVE_BACKEND_CPU;
    o.profile = "gpu";
    sieve_context* ctx = nullptr;
    EXPECT_EQ(sieve_context_create(&o, &ctx), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(sieve_last_error()).find("CPU backend"), std::string::npos) << sieve_last_error();
    o.profile = "device";
    ASSERT_EQ(sieve_context_create(&o, &ctx), SIEVE_OK);
    sieve_context_destroy(ctx);
}

// An older caller's options end before `profile`: it gets the env's profile.
TEST(Profiles, OlderOptionsStructTakesTheEnvProfile) {
    sieve_context_options o;
    sieve_context_options_init(&o);
    o.profile = "not read";  // beyond the older struct
    o.struct_size = offsetof(sieve_context_options, profile);
    o.validation = 1;
    sieve_context* ctx = nullptr;
    ASSERT_EQ(sieve_context_create(&o, &ctx), SIEVE_OK) << sieve_last_error();
    sieve_device_info info{};
    ASSERT_EQ(sieve_context_device_info(ctx, &info), SIEVE_OK);
    uint32_t env = 0;
    ASSERT_EQ(sieve_profile_parse(nullptr, &env), SIEVE_OK);
    EXPECT_EQ(info.profile, env);
    sieve_context_destroy(ctx);
}

TEST(Profiles, ContextReportsItsProfile) {
    for (const char* name : {"device", "gpu", "constrained", "gpu,constrained"}) {
        auto ctx = context_with_profile(name);
        uint32_t bits = 0;
        ASSERT_EQ(sieve_profile_parse(name, &bits), SIEVE_OK);
        EXPECT_EQ(ctx.device_info().profile, bits) << name;
    }
}

// The proof that the gpu profile's plan is the real one: its limits are those
// derived for a device described as a discrete GPU with the same features and
// limits, and what it records (chunks of a pass, dispatches per call) is what
// that plan says.
TEST(Profiles, GpuProfileRecordsTheDiscreteGpuPlan) {
    auto gpu = context_with_profile("gpu");
    const sieve_device_info info = gpu.device_info();
    const sieve_device_info device = enumerated(info.index);
    const sieve::EffectiveLimits want = described_as(device, SIEVE_DEVICE_DISCRETE_GPU);
    const sieve::EffectiveLimits& got = limits_of(gpu);
    expect_same_shape(got, want);
    EXPECT_EQ(info.workgroup_size, std::min(256u, device.max_workgroup_size));
    EXPECT_FALSE(got.cpu_paths);
    // On a GPU the profile changes nothing: the described GPU is its own plan.
    expect_same_shape(described_as(device, SIEVE_DEVICE_DISCRETE_GPU), [&] {
        sieve::EffectiveLimits as_gpu;
        sieve_context_options defaults;
        sieve_context_options_init(&defaults);
        sieve_device_info d = device;
        d.type = SIEVE_DEVICE_DISCRETE_GPU;
        sieve::shape_limits(d, d.features, defaults, SIEVE_PROFILE_GPU, &as_gpu);
        return as_gpu;
    }());

    // Chunks per row: what a pass over the row records (the calibration pass
    // uses the engine's split) against the described GPU's chunking.
    for (int32_t vocab : {32000, 151936, 262144}) {
        sieve_calibration cal{};
        ASSERT_EQ(sieve_context_calibrate(gpu.get(), vocab, 2, 3, &cal), SIEVE_OK) << sieve_last_error();
        uint32_t chunks = 0, size = 0;
        sieve::chunking(static_cast<uint32_t>(vocab), want, want.plan_type, &chunks, &size);
        EXPECT_EQ(cal.workgroups, 2 * chunks) << vocab;
        // (At least 8 logits an invocation: 32000 makes 16 chunks of 256 x 8.)
        EXPECT_EQ(chunks, std::min(sieve::max_chunks_for(want, SIEVE_DEVICE_DISCRETE_GPU),
                                   (static_cast<uint32_t>(vocab) + want.workgroup_size * 8 - 1) / (want.workgroup_size * 8)))
            << vocab;
    }

    // Dispatches and row passes: the plan the described GPU makes, and what a
    // call records and counts.
    struct Case {
        const char* samplers;
        bool collect, greedy;
    };
    for (const Case& c : {Case{"greedy", false, true}, Case{"temperature;dist", false, false},
                          Case{"top_k;top_p;min_p;temperature;dist", true, false},
                          Case{"min_p;temperature;dist", true, false}}) {
        for (int32_t rows : {1, 4}) {
            const int32_t vocab = 151936;
            sieve::Chain chain(gpu, sieve_test::chain_desc(c.samplers, rows, vocab, 0.8f, 7));
            const sieve::Plan plan =
                sieve::make_plan(sieve::RecordingKind::Sample, c.greedy, c.collect, false, 0u,
                                 static_cast<uint32_t>(vocab), want, want.plan_type, false, false);
            EXPECT_EQ(sieve::rows_per_group(static_cast<uint32_t>(rows), vocab, want.plan_type, plan.min_row_passes),
                      static_cast<uint32_t>(rows));  // a GPU reads all rows in one group
            auto [dispatches, passes] = chain.plan_figures(rows, vocab);
            EXPECT_EQ(dispatches, plan.min_dispatches) << c.samplers << " rows " << rows;
            EXPECT_EQ(passes, plan.min_row_passes) << c.samplers << " rows " << rows;
            auto logits = sieve_test::make_rows(sieve_test::Shape::Zipf, rows, vocab, 3);
            const sieve_counters before = chain.counters();
            for (auto& t : chain.sample(logits.data(), rows, vocab)) ASSERT_EQ(t.status, SIEVE_OK);
            const sieve_counters after = chain.counters();
            EXPECT_GE(after.dispatches - before.dispatches, plan.min_dispatches) << c.samplers;
            EXPECT_GE(after.row_passes - before.row_passes, static_cast<uint64_t>(rows) * plan.min_row_passes)
                << c.samplers;
        }
    }
}

// Not vacuous: a CPU device's own plan differs from the described GPU's in
// exactly the choices the gpu profile turns; on a CPU device (lavapipe) the
// context without a profile records the CPU plan.
TEST(Profiles, CpuDevicePlanDiffersFromTheGpuPlan) {
    auto own = context_with_profile("device");
    const sieve_device_info info = own.device_info();
    const sieve::EffectiveLimits cpu = described_as(enumerated(info.index), SIEVE_DEVICE_CPU);
    const sieve::EffectiveLimits gpu = described_as(enumerated(info.index), SIEVE_DEVICE_DISCRETE_GPU);
    EXPECT_TRUE(cpu.cpu_paths);
    EXPECT_FALSE(gpu.cpu_paths);
    EXPECT_EQ(cpu.workgroup_size, std::min(64u, info.max_workgroup_size));
    EXPECT_EQ(gpu.workgroup_size, std::min(256u, info.max_workgroup_size));
    EXPECT_LE(sieve::max_chunks_for(cpu, SIEVE_DEVICE_CPU), 4u);
    EXPECT_EQ(sieve::max_chunks_for(gpu, SIEVE_DEVICE_DISCRETE_GPU), 64u);
    if (info.type == SIEVE_DEVICE_CPU) {
        expect_same_shape(limits_of(own), cpu);
        sieve_calibration cal{};
        ASSERT_EQ(sieve_context_calibrate(own.get(), 151936, 1, 3, &cal), SIEVE_OK);
        EXPECT_LE(cal.workgroups, 4u);
    } else {
        expect_same_shape(limits_of(own), described_as(enumerated(info.index), info.type));
    }
}

// gpu,constrained = a small phone GPU: the GPU's chunking with the constrained
// limits and no optional features (so the portable, GLSL450-model shaders).
// The candidate buffer leaves room for the rest of the largest shader's
// shared memory: the collect tail's (and collect_fused.comp's) grows with the
// workgroup, up to 40 bytes an invocation. A 48 KiB device asked for
// 512-wide workgroups gets a buffer of 2048 (4096 and the tail's 17.6 KB
// would need 50 KB); at 256 it keeps 4096.
TEST(Profiles, CandidateBufferLeavesTheTailItsSharedMemory) {
    sieve_device_info device = enumerated(0);
    device.type = SIEVE_DEVICE_DISCRETE_GPU;
    device.max_shared_memory = 49152;
    device.max_workgroup_size = 1024;
    sieve_context_options options;
    sieve_context_options_init(&options);
    for (uint32_t wg : {256u, 512u}) {
        options.max_workgroup_size = wg;
        sieve::EffectiveLimits limits;
        sieve::shape_limits(device, device.features, options, SIEVE_PROFILE_DEVICE, &limits);
        EXPECT_EQ(limits.workgroup_size, wg);
        EXPECT_LE(8 * limits.candidate_capacity + 40 * limits.workgroup_size + 1200, 49152u) << wg;
        EXPECT_EQ(limits.candidate_capacity, wg == 256u ? 4096u : 2048u) << wg;
    }
}

TEST(Profiles, GpuConstrainedIsAPhoneGpu) {
    auto phone = context_with_profile("gpu,constrained");
    const sieve_device_info info = phone.device_info();
    const sieve::EffectiveLimits& got = limits_of(phone);
    EXPECT_EQ(info.features, 0u);
    EXPECT_EQ(info.workgroup_size, 128u);
    EXPECT_LE(got.shared_memory, 16384u);
    EXPECT_FALSE(got.cpu_paths);
    EXPECT_EQ(got.plan_type, info.type == SIEVE_DEVICE_CPU ? SIEVE_DEVICE_DISCRETE_GPU : info.type);
    sieve_calibration cal{};
    ASSERT_EQ(sieve_context_calibrate(phone.get(), 151936, 1, 3, &cal), SIEVE_OK);
    EXPECT_EQ(cal.workgroups, sieve::max_chunks_for(got, SIEVE_DEVICE_DISCRETE_GPU));
}

// The memory-model variants of the handoff shaders are used exactly where the
// context may use the feature.
TEST(Profiles, MemoryModelVariantWhereTheFeatureIs) {
    for (const char* name : {"device", "gpu", "constrained"}) {
        auto ctx = context_with_profile(name);
        auto* vk = dynamic_cast<sieve::VulkanContext*>(ctx.get()->impl.get());
        ASSERT_NE(vk, nullptr);
        const bool feature = (ctx.device_info().features & SIEVE_FEATURE_VULKAN_MEMORY_MODEL) != 0;
        EXPECT_EQ(vk->pipelines().uses_memory_model(), feature) << name;
        if (std::string(name) == "constrained") {
            EXPECT_FALSE(feature);
        }
    }
}

} // namespace
