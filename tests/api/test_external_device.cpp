// The engine on the app's own VkInstance / VkPhysicalDevice / VkDevice / queue:
// the test plays the app, creates everything itself (validation on), hands the
// handles to Sieve, samples, and destroys its objects after Sieve let go.
#include "reference/reference.hpp"
#include "app_device.hpp"
#include "app_logits.hpp"
#include "pipeline_stats_file.hpp"
#include "test_support.hpp"

#include <volk.h>

#include <sieve/sieve_vulkan.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using sieve_test::AppDevice;

TEST(ExternalDevice, SamplesOnTheAppsDevice) {
    AppDevice app;
    sieve_vulkan_device handles{};
    handles.struct_size = sizeof(handles);
    handles.instance = app.instance;
    handles.physical_device = app.physical;
    handles.device = app.device;
    handles.queue = app.queue;
    handles.queue_family_index = app.family;
    handles.api_version = VK_API_VERSION_1_1;
    handles.enabled_features = 0;  // the app enabled no optional feature
    sieve_context* raw = nullptr;
    sieve::ContextOptions options;
    options.on_message(sieve_test::count_validation_message, nullptr);
    ASSERT_EQ(sieve_context_create_vulkan(&handles, &options.raw, &raw), SIEVE_OK) << sieve_last_error();
    {
        sieve::Context ctx(raw);
        EXPECT_EQ(ctx.device_info().features, 0u) << "features the app did not enable must not be used";
        for (int32_t vocab : {500, 20000}) {
            const int32_t rows = 3;
            auto logits = sieve_test::make_rows(sieve_test::Shape::Zipf, rows, vocab, 4);
            sieve::Chain chain(ctx, sieve_test::chain_desc("temperature;dist", rows, vocab, 0.8f, 7));
            const auto kinds = sieve_test::twin_chain("temperature;dist");
            ASSERT_FALSE(kinds.empty());
            for (uint32_t step = 0; step < 3; ++step) {
                auto got = chain.sample(logits.data(), rows, vocab);
                for (int32_t r = 0; r < rows; ++r) {
                    sieve::ref::RowParams params;
                    params.temperature = 0.8f;
                    params.seed = 7;
                    auto want = sieve::ref::sample_row(kinds, logits.data() + static_cast<size_t>(r) * vocab, vocab,
                                                       params, step);
                    EXPECT_EQ(got[r].token, want.token);
                }
            }
        }
    }
    // Sieve released its objects and left the app's device alive: the app can
    // still use it.
    auto wait_idle = reinterpret_cast<PFN_vkDeviceWaitIdle>(vkGetDeviceProcAddr(app.device, "vkDeviceWaitIdle"));
    EXPECT_EQ(wait_idle(app.device), VK_SUCCESS);
}

// SIEVE_PIPELINE_STATS on the app's device: Sieve enables no extension on
// it, so each pipeline's line says why it has no statistics
// (engine/vulkan/pipeline_stats.hpp; tests/gpu/test_pipeline_stats.cpp has
// Sieve's own device).
TEST(ExternalDevice, PipelineStatisticsLinesSayTheAppMadeTheDevice) {
    const std::string path = sieve_test::pipeline_stats_path("sieve_app_pipeline_stats");
    std::remove(path.c_str());
    {
        sieve_test::ScopedEnv env("SIEVE_PIPELINE_STATS", path.c_str());
        AppDevice app;
        const auto ctx = sieve_test::app_context(app);
        const int32_t vocab = 20000;
        const auto logits = sieve_test::make_rows(sieve_test::Shape::Zipf, 1, vocab, 4);
        sieve::Chain chain(*ctx, sieve_test::chain_desc("temperature;dist", 1, vocab, 0.8f, 7));
        EXPECT_EQ(chain.sample(logits.data(), 1, vocab).at(0).status, SIEVE_OK);
    }
    std::ifstream in(path);
    size_t lines = 0;
    for (std::string line; std::getline(in, line); ++lines) {
        EXPECT_NE(line.find("\"executables\":null"), std::string::npos) << line;
        EXPECT_NE(line.find("the app created the device"), std::string::npos) << line;
    }
    EXPECT_GE(lines, 3u) << "row_stats, mass_histogram and the gather at least";
    std::remove(path.c_str());
}

TEST(ExternalDevice, RejectsIncompleteHandles) {
    sieve_vulkan_device handles{};
    handles.struct_size = sizeof(handles);
    sieve_context* raw = nullptr;
    EXPECT_EQ(sieve_context_create_vulkan(&handles, nullptr, &raw), SIEVE_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(raw, nullptr);
    EXPECT_NE(std::string(sieve_last_error()).find("instance"), std::string::npos);
    EXPECT_EQ(sieve_context_create_vulkan(nullptr, nullptr, &raw), SIEVE_ERROR_INVALID_ARGUMENT);
}

TEST(Devices, EnumerateAndChoose) {
    auto devices = sieve::devices();
    ASSERT_FALSE(devices.empty());
    int defaults = 0;
    for (auto& d : devices) defaults += d.is_default;
    EXPECT_EQ(defaults, 1);
    // By index and by name substring (case-insensitive).
    std::string name = devices[0].name;
    std::string upper = name.substr(0, 4);
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (std::string choice : {std::string("0"), upper}) {
        auto options = sieve_test::gpu_options();
        options.device(choice.c_str());
        sieve::Context ctx(options);
        EXPECT_EQ(std::string(ctx.device_info().name), name);
    }
}

// The constrained profile masks every optional feature, so the portable shader
// variants run (the suite runs both: SIEVE_PROFILE=constrained in test.sh).
TEST(Devices, ConstrainedProfileMasksFeaturesAndCapsLimits) {
    auto full = sieve_test::gpu_context(sieve_test::Profile::Full);
    auto constrained = sieve_test::gpu_context(sieve_test::Profile::Constrained);
    const sieve_device_info f = full.device_info(), c = constrained.device_info();
    EXPECT_EQ(c.features, 0u);
    EXPECT_LE(c.workgroup_size, 128u);
    EXPECT_LE(c.candidate_capacity, f.candidate_capacity);
    EXPECT_LE(c.candidate_capacity * 8u, 16384u) << "the candidates alone exceed the 16 KiB budget";
    // A context reports the features it may use: never more than enumeration found.
    auto devices = sieve::devices();
    EXPECT_EQ(f.features & ~devices[f.index].features, 0u);
}

TEST(Version, RuntimeMatchesHeader) {
    EXPECT_EQ(sieve_version(), SIEVE_VERSION);
    EXPECT_EQ(SIEVE_VERSION_GET_MAJOR(sieve_version()), static_cast<uint32_t>(SIEVE_VERSION_MAJOR));
    EXPECT_EQ(SIEVE_VERSION_GET_MINOR(sieve_version()), static_cast<uint32_t>(SIEVE_VERSION_MINOR));
    EXPECT_EQ(SIEVE_VERSION_GET_PATCH(sieve_version()), static_cast<uint32_t>(SIEVE_VERSION_PATCH));
}

} // namespace
