#include "vulkan/phase_log.hpp"

#ifdef SIEVE_PHASE_CLOCK
#include "gpu_layout.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace sieve {

void log_phases(uint32_t* results, uint32_t rows) {
    // The file SIEVE_PHASE_LOG names now (a run may point it elsewhere between calls).
    static std::mutex mutex;
    static std::string path;
    static std::FILE* file = nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    const char* wanted = std::getenv("SIEVE_PHASE_LOG");
    if (path != (wanted ? wanted : "")) {
        if (file) std::fclose(file);
        path = wanted ? wanted : "";
        file = path.empty() ? nullptr : std::fopen(path.c_str(), "a");
    }
    const uint32_t last = rows - 1;
    for (uint32_t row : {0u, last}) {
        uint32_t* marks = results + static_cast<size_t>(row) * glsl::RESULT_STRIDE + glsl::RES_PHASES;
        bool any = false;
        for (uint32_t i = 0; i < 2 * glsl::PHASE_MARKS; ++i) any = any || marks[i] != glsl::PHASE_UNSET;
        if (any && file) {
            std::string line = "{\"rows\":" + std::to_string(rows) + ",\"row\":" + std::to_string(row);
            for (uint32_t k = 0; k < 2; ++k) {
                line += k == 0 ? ",\"cycles\":[" : "],\"ticks\":[";
                for (uint32_t i = 0; i < glsl::PHASE_MARKS; ++i) {
                    const uint32_t v = marks[2 * i + k];
                    line += (i ? "," : "") + (v == glsl::PHASE_UNSET ? std::string("null") : std::to_string(v));
                }
            }
            line += "]}\n";
            std::fputs(line.c_str(), file);
            std::fflush(file);
        }
        for (uint32_t i = 0; i < 2 * glsl::PHASE_MARKS; ++i) marks[i] = glsl::PHASE_UNSET;
        if (row == last) break;  // one row: logged once
    }
}

} // namespace sieve
#endif
