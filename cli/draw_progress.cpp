#include "draw_progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace sieve_cli {

DrawProgress::DrawProgress(std::ostream& err, int32_t draws, int32_t rows) {
    const int64_t tokens = int64_t(draws) * rows;
    if (&err != &std::cerr || !isatty(STDERR_FILENO) || tokens < kMinTokens) return;
    thread_ = std::thread([this, tokens] { run(tokens); });
}

DrawProgress::~DrawProgress() { stop(); }

void DrawProgress::stop() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
    }
    wake_.notify_all();
    thread_.join();
    std::cerr << "\r\033[K" << std::flush;
}

void DrawProgress::run(int64_t tokens) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char line[128];
        std::snprintf(line, sizeof line, "\r\033[Kdrawing %lld tokens: %.0f s", static_cast<long long>(tokens), s);
        std::cerr << line << std::flush;
        wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; });
    }
}

} // namespace sieve_cli
