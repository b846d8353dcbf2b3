#include "bench_stats.hpp"

#include <algorithm>
#include <cmath>

namespace sieve_cli {

double percentile_sorted(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0.0;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

LatencyStats latency_stats(std::vector<double> values) {
    LatencyStats s;
    if (values.empty()) return s;
    std::sort(values.begin(), values.end());
    s.count = static_cast<int>(values.size());
    s.median = percentile_sorted(values, 0.5);
    s.p10 = percentile_sorted(values, 0.1);
    s.p90 = percentile_sorted(values, 0.9);
    s.min = values.front();
    s.max = values.back();
    return s;
}

} // namespace sieve_cli
