// row_windows, leave_inputs_to_the_passes, plan_estimate_as_run, device_of and limits_of (test_support.hpp): reach
// into the chain's and the context's implementation, which the tests link statically, for what no public
// call reports.
#include "test_support.hpp"

#include "chain/context.hpp"
#include "vulkan/gpu_chain.hpp"
#include "vulkan/gpu_context.hpp"

#include <stdexcept>
#include <string>

namespace sieve_test {

Windows row_windows(const sieve::Chain& chain) {
    const auto* gpu = dynamic_cast<const sieve::GpuChain*>(chain.get()->impl.get());
    if (!gpu) return {};
    return {gpu->row_windows().count, gpu->row_windows().rows};
}

void leave_inputs_to_the_passes(sieve::Chain& chain) {
    auto* gpu = dynamic_cast<sieve::GpuChain*>(chain.get()->impl.get());
    if (!gpu) {
        ADD_FAILURE() << "not a GPU chain";
        return;
    }
    gpu->leave_inputs_to_the_passes(true);
}

std::vector<sieve_stage_estimate> plan_estimate_as_run(const sieve::Chain& chain, int32_t rows, int32_t vocab,
                                                       const std::string& commit) {
    const auto* gpu = dynamic_cast<const sieve::GpuChain*>(chain.get()->impl.get());
    if (!gpu) return {};
    if (commit != "30de833" && commit != "521950c") throw std::invalid_argument("no estimate fitted to " + commit);
    return gpu->plan_estimate(rows, vocab,
                              commit == "30de833" ? sieve::ShaderSet::Of30de833 : sieve::ShaderSet::Of521950c);
}

const sieve::Device& device_of(const sieve::Context& context) {
    auto* vk = dynamic_cast<sieve::VulkanContext*>(context.get()->impl.get());
    if (!vk) {
        ADD_FAILURE() << "not a Vulkan context";
        throw std::invalid_argument("device_of: not a Vulkan context");
    }
    return vk->device();
}

const sieve::EffectiveLimits& limits_of(const sieve::Context& context) { return device_of(context).limits(); }

} // namespace sieve_test
