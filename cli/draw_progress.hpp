// `sieve sample --draws N`: a line on the terminal while a long run draws,
// rewritten every half second with the time elapsed. Only when stderr is a
// terminal (and the run is long enough to wait for); a thread of its own, so
// the draws run as they would without it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <thread>

namespace sieve_cli {

class DrawProgress {
public:
    // Shows nothing unless `err` is std::cerr on a terminal and draws x rows
    // reaches kMinTokens.
    DrawProgress(std::ostream& err, int32_t draws, int32_t rows);
    ~DrawProgress();
    void stop();  // clears the line

    static constexpr int64_t kMinTokens = 100000;

private:
    void run(int64_t tokens);

    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::thread thread_;
};

} // namespace sieve_cli
