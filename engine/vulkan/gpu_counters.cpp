#include "vulkan/gpu_counters.hpp"

namespace sieve {

void GpuCounters::count_recording(const Plan& plan, const std::vector<RowGroup>& groups, const uint32_t* args) {
    for (const RowGroup& g : groups)
        for (const Dispatch& d : plan.dispatches)
            dispatches_ += (d.indirect == kNotIndirect || args[g.args_base + d.indirect] != 0) ? 1 : 0;
}

} // namespace sieve
