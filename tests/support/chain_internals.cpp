// row_windows and baseline_plan_estimate (test_support.hpp): reach into the
// chain's implementation, which the tests link statically, for what no public
// call reports.
#include "test_support.hpp"

#include "chain/context.hpp"
#include "vulkan/gpu_chain.hpp"

namespace sieve_test {

Windows row_windows(const sieve::Chain& chain) {
    const auto* gpu = dynamic_cast<const sieve::GpuChain*>(chain.get()->impl.get());
    if (!gpu) return {};
    return {gpu->row_windows().count, gpu->row_windows().rows};
}

std::vector<sieve_stage_estimate> baseline_plan_estimate(const sieve::Chain& chain, int32_t rows, int32_t vocab) {
    const auto* gpu = dynamic_cast<const sieve::GpuChain*>(chain.get()->impl.get());
    if (!gpu) return {};
    return gpu->plan_estimate(rows, vocab, true);
}

} // namespace sieve_test
