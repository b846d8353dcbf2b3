// Which of a plan's indirect dispatch arguments the shaders arm
// (has_shader_armed, gpu_plan.hpp): the host arms only the collect variants'
// (COLLECT_*_ARGS, GpuChain::arm_args), every other indirect dispatch is armed
// by a shader of the same call. Where no shader arms any, a GPU's recording
// copies no arguments back for the host's count: the host writes its own
// values where it counts (Recording::shader_arms_args).
#include "vulkan/gpu_plan.hpp"
#include "vulkan/vk_device.hpp"

#include <gtest/gtest.h>

namespace {

using sieve::Plan;
using sieve::RecordingKind;

sieve::EffectiveLimits limits_for(sieve_device_type type) {
    sieve::EffectiveLimits l;
    l.workgroup_size = 256;
    l.candidate_capacity = 4096;
    l.plan_type = type;
    l.compute_units = type == SIEVE_DEVICE_CPU ? 2 : 132;
    return l;
}

Plan plan_of(sieve_device_type type, bool greedy, bool collect, bool wide, bool wide_direct = false,
             uint32_t history_groups = 0) {
    return sieve::make_plan(RecordingKind::Sample, greedy, collect, wide, history_groups, 151936, limits_for(type), type,
                            false, wide_direct);
}

bool host_armed(const sieve::Dispatch& d) {
    return d.indirect == sieve::glsl::COLLECT_PLAIN_ARGS || d.indirect == sieve::glsl::COLLECT_GENERAL_ARGS;
}

TEST(PlanArguments, OnlyTheCollectVariantsAreArmedByTheHost) {
    for (sieve_device_type type : {SIEVE_DEVICE_DISCRETE_GPU, SIEVE_DEVICE_CPU}) {
        SCOPED_TRACE(type);
        // The default chain's plan (top-k first): the collect variants alone.
        const Plan collect = plan_of(type, false, true, false);
        EXPECT_TRUE(sieve::has_indirect(collect));
        EXPECT_FALSE(sieve::has_shader_armed(collect));
        // ... with penalties' history pass before it (a direct dispatch).
        const Plan history = plan_of(type, false, true, false, false, 2);
        EXPECT_FALSE(sieve::has_shader_armed(history));
        // A top-p chain: its tail arms the wide passes.
        EXPECT_TRUE(sieve::has_shader_armed(plan_of(type, false, true, true)));
        // Temperature and dist: each selection level arms the next.
        EXPECT_TRUE(sieve::has_shader_armed(plan_of(type, false, false, false)));
        // Greedy: one direct pass, nothing armed.
        const Plan greedy = plan_of(type, true, false, false);
        EXPECT_FALSE(sieve::has_indirect(greedy));
        EXPECT_FALSE(sieve::has_shader_armed(greedy));
    }
    // Top-p alone on a GPU: the histogram's last workgroup arms the gather.
    EXPECT_TRUE(sieve::has_shader_armed(plan_of(SIEVE_DEVICE_DISCRETE_GPU, false, true, true, true)));
}

TEST(PlanArguments, EveryIndirectDispatchIsArmedByTheHostOrAShader) {
    for (sieve_device_type type : {SIEVE_DEVICE_DISCRETE_GPU, SIEVE_DEVICE_CPU})
        for (bool greedy : {false, true})
            for (bool collect : {false, true})
                for (bool wide : {false, true}) {
                    const Plan p = plan_of(type, greedy, collect, wide);
                    bool shader = false;
                    for (const sieve::Dispatch& d : p.dispatches) {
                        if (d.indirect == sieve::kNotIndirect) continue;
                        EXPECT_TRUE(host_armed(d) || d.indirect < sieve::glsl::SHADER_ARGS_WORDS)
                            << "an argument block at word " << d.indirect;
                        shader = shader || !host_armed(d);
                    }
                    EXPECT_EQ(sieve::has_shader_armed(p), shader) << type << greedy << collect << wide;
                }
}

} // namespace
