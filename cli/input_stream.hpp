// An input file, or stdin for "-", read in order: its size (for a regular
// file) is known before any data is read, so limits are checked first.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace sieve_cli {

class InputStream {
public:
    // Opens `path` ("-" = stdin). Throws CliError (bad input) for a missing or
    // unreadable file, a directory, or something that is not a regular file
    // (a pipe or a terminal is fine for "-").
    explicit InputStream(const std::string& path);
    ~InputStream();
    InputStream(const InputStream&) = delete;
    InputStream& operator=(const InputStream&) = delete;

    const std::string& name() const { return name_; }  // the path, or "stdin"
    std::optional<uint64_t> size() const { return size_; }  // a regular file's size
    uint64_t consumed() const { return consumed_; }

    // Appends up to n bytes to `out`; fewer only at the end of the input.
    // Throws CliError (bad input) on a read error.
    size_t read(std::vector<uint8_t>& out, size_t n);
    // True when nothing is left to read.
    bool at_end();

private:
    std::string name_;
    FILE* file_ = nullptr;
    bool owned_ = false;
    std::optional<uint64_t> size_;
    uint64_t consumed_ = 0;
};

} // namespace sieve_cli
