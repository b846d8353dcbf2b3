// Latency statistics for `sieve bench`.
#pragma once

#include <vector>

namespace sieve_cli {

struct LatencyStats {
    int count = 0;
    double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};

// Percentile q in [0, 1] of sorted values, linear interpolation between ranks.
double percentile_sorted(const std::vector<double>& sorted, double q);
LatencyStats latency_stats(std::vector<double> values);

} // namespace sieve_cli
