#include "input_stream.hpp"

#include "exit_codes.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace sieve_cli {

InputStream::InputStream(const std::string& path) : name_(path == "-" ? "stdin" : path) {
    if (path == "-") {
        file_ = stdin;
        struct stat st{};
        if (fstat(fileno(stdin), &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<uint64_t>(st.st_size);
        return;
    }
    struct stat st{};
    if (stat(path.c_str(), &st) != 0)
        throw CliError(kExitBadInput, path + ": cannot open: " + std::strerror(errno));
    // A directory opens as a stream on Linux and reports a size of 2^63 - 1.
    if (S_ISDIR(st.st_mode)) throw CliError(kExitBadInput, path + ": is a directory, not a file");
    if (!S_ISREG(st.st_mode)) throw CliError(kExitBadInput, path + ": is not a regular file");
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw CliError(kExitBadInput, path + ": cannot open: " + std::strerror(errno));
    owned_ = true;
    size_ = static_cast<uint64_t>(st.st_size);
}

InputStream::~InputStream() {
    if (owned_ && file_) std::fclose(file_);
}

size_t InputStream::read(std::vector<uint8_t>& out, size_t n) {
    const size_t start = out.size();
    out.resize(start + n);
    size_t got = 0;
    while (got < n) {
        const size_t r = std::fread(out.data() + start + got, 1, n - got, file_);
        got += r;
        if (r == 0) break;
    }
    out.resize(start + got);
    consumed_ += got;
    if (got < n && std::ferror(file_)) throw CliError(kExitBadInput, name_ + ": read error: " + std::strerror(errno));
    return got;
}

bool InputStream::at_end() {
    const int c = std::fgetc(file_);
    if (c == EOF) return true;
    std::ungetc(c, file_);
    return false;
}

} // namespace sieve_cli
