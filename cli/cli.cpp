#include "cli.hpp"

#include "commands.hpp"
#include "exit_codes.hpp"
#include "json_output.hpp"

#include <sieve/sieve.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

namespace sieve_cli {
namespace {

std::string version_text() {
    const uint32_t v = sieve_version();
    return "sieve " + std::to_string(SIEVE_VERSION_GET_MAJOR(v)) + "." + std::to_string(SIEVE_VERSION_GET_MINOR(v)) + "." +
           std::to_string(SIEVE_VERSION_GET_PATCH(v));
}

// Runs a command and turns every failure into its exit status and a message
// (on stderr; under --json also as a JSON document on stdout).
int guarded(bool json, std::ostream& out, std::ostream& err, const std::function<int()>& body) {
    int code = kExitOk;
    sieve_status status = SIEVE_OK;
    std::string message;
    try {
        return body();
    } catch (const CliError& e) {
        code = e.exit_code();
        status = e.status();
        message = e.what();
    } catch (const sieve::Error& e) {
        code = exit_code_for(e.status());
        status = e.status();
        message = e.what();
    } catch (const std::bad_alloc&) {
        code = kExitBadInput;
        message = "out of host memory (input too large?)";
    } catch (const std::exception& e) {
        code = kExitDevice;
        message = std::string("unexpected failure: ") + e.what();
    }
    err << "sieve: error: " << message << "\n";
    if (json) print_json(out, run_error_json(code, status, message));
    return code;
}

// An argument as a POSIX shell would need it quoted (for the record only).
std::string shell_word(const std::string& arg) {
    if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                            std::string::npos)
        return arg;
    std::string q = "'";
    for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Edit distance, for "did you mean" on a mistyped command.
size_t distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

const char* const kCommands[] = {"devices", "sample", "bench"};

// What is wrong with the first word when it is not a command CLI11 can take
// ("" when it is one, or --help / --version).
std::string first_word_error(int argc, const char* const* argv) {
    const std::string usage = "commands: devices, sample, bench (sieve --help describes them)";
    if (argc < 2) return "no command given; " + usage;
    const std::string word = argv[1];
    if (word == "--help" || word == "-h" || word == "--version") return {};
    for (const char* c : kCommands)
        if (word == c) return {};
    if (!word.empty() && word[0] == '-')
        return "unknown option '" + word + "' before the command (--version prints the version); " + usage;
    std::string hint;
    for (const char* c : kCommands)
        if (distance(word, c) <= 2) hint = std::string(" (did you mean '") + c + "'?)";
    return "unknown command '" + word + "'" + hint + "; " + usage;
}

bool asks_for_json(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--json") return true;
    return false;
}

// Output that could not be written (a full disk, a closed pipe) is an error:
// the command's results are lost.
int checked_output(int code, std::ostream& out, std::ostream& err) {
    errno = 0;
    out.flush();
    if (out) return code;
    const int e = errno;
    err << "sieve: error: cannot write the output to stdout" << (e ? std::string(": ") + std::strerror(e) : "") << "\n";
    return code == kExitOk ? kExitBadInput : code;
}

} // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    CLI::App app{"sieve: next-token sampling from LLM logits on any Vulkan device", "sieve"};
    app.require_subcommand(1);
    app.set_version_flag("--version", version_text());
    app.footer("Exit status: 0 success, 2 usage error, 3 bad input, 4 device error.");
    // llama.cpp's habit: a value flag given twice takes the last value.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    DevicesOptions devices;
    SampleOptions sample;
    BenchOptions bench;
    CLI::App* devices_cmd = add_devices_command(app, devices);
    CLI::App* sample_cmd = add_sample_command(app, sample);
    CLI::App* bench_cmd = add_bench_command(app, bench);

    if (argc >= 2 && std::string(argv[1]) == "help") {
        out << app.help();
        return checked_output(kExitOk, out, err);
    }
    const std::string first_error = first_word_error(argc, argv);
    try {
        if (!first_error.empty()) throw CliError(kExitUsage, first_error);
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return checked_output(app.exit(e, out, err), out, err);  // --help, --version
        const CLI::App* cmd = sample_cmd->parsed() ? sample_cmd : bench_cmd->parsed() ? bench_cmd : devices_cmd->parsed() ? devices_cmd : nullptr;
        const std::string help = cmd ? "sieve " + cmd->get_name() + " --help" : std::string("sieve --help");
        err << "sieve: error: " << e.what() << " (" << help << " lists the flags)\n";
        if (asks_for_json(argc, argv)) print_json(out, run_error_json(kExitUsage, SIEVE_OK, e.what()));
        return checked_output(kExitUsage, out, err);
    } catch (const CliError& e) {
        err << "sieve: error: " << e.what() << "\n";
        if (asks_for_json(argc, argv)) print_json(out, run_error_json(e.exit_code(), SIEVE_OK, e.what()));
        return checked_output(e.exit_code(), out, err);
    }

    int code = kExitUsage;
    if (devices_cmd->parsed()) code = guarded(devices.json, out, err, [&] { return run_devices(devices, out, err); });
    else if (sample_cmd->parsed()) code = guarded(sample.json, out, err, [&] { return run_sample(sample, out, err); });
    else if (bench_cmd->parsed()) {
        for (int i = 0; i < argc; ++i) bench.command_line += (i ? " " : "") + shell_word(argv[i]);
        code = guarded(bench.json, out, err, [&] { return run_bench(bench, out, err); });
    } else {
        err << "sieve: error: no command given\n";
    }
    return checked_output(code, out, err);
}

} // namespace sieve_cli
