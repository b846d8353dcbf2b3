#include "bench_host.hpp"

#include <fstream>

namespace sieve_cli {

std::string host_cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) return "";
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
    }
    return "";
}

std::optional<double> host_load_average() {
    std::ifstream f("/proc/loadavg");
    double one = 0;
    if (f >> one) return one;
    return std::nullopt;
}

} // namespace sieve_cli
