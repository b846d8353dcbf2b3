#include "cli.hpp"

#include "commands.hpp"
#include "exit_codes.hpp"
#include "json_output.hpp"

#include <sieve/sieve.hpp>

#include <CLI/CLI.hpp>

#include <functional>
#include <new>
#include <string>

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

} // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    CLI::App app{"sieve: next-token sampling from LLM logits on any Vulkan device", "sieve"};
    app.require_subcommand(1);
    app.set_version_flag("--version", version_text());
    app.footer("Exit status: 0 success, 2 usage error, 3 bad input, 4 device error.");

    DevicesOptions devices;
    SampleOptions sample;
    BenchOptions bench;
    CLI::App* devices_cmd = add_devices_command(app, devices);
    CLI::App* sample_cmd = add_sample_command(app, sample);
    CLI::App* bench_cmd = add_bench_command(app, bench);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e, out, err); // prints help/version, or the parse error
        return code == 0 ? kExitOk : kExitUsage;
    }

    if (devices_cmd->parsed()) return guarded(devices.json, out, err, [&] { return run_devices(devices, out, err); });
    if (sample_cmd->parsed()) return guarded(sample.json, out, err, [&] { return run_sample(sample, out, err); });
    for (int i = 0; i < argc; ++i) bench.command_line += (i ? " " : "") + shell_word(argv[i]);
    if (bench_cmd->parsed()) return guarded(bench.json, out, err, [&] { return run_bench(bench, out, err); });
    err << "sieve: error: no command given\n";
    return kExitUsage;
}

} // namespace sieve_cli
