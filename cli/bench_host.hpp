// What `sieve bench` records about the host, so a reader can judge a run made
// on a machine that was busy: the CPU model and the load average (Linux).
#pragma once

#include <optional>
#include <string>

namespace sieve_cli {

// "model name" of /proc/cpuinfo, or "" where there is none.
std::string host_cpu_model();

// The 1-minute load average from /proc/loadavg, or none where there is none.
std::optional<double> host_load_average();

} // namespace sieve_cli
