// `sieve devices [--json]`: every Vulkan device with its limits and features,
// the default one marked, plus the CPU twin (`--device cpu`).
#include "commands.hpp"

#include "device_text.hpp"
#include "json_output.hpp"

#include <sieve/sieve.hpp>

#include <cstdio>
#include <cstdlib>

namespace sieve_cli {
CLI::App* add_devices_command(CLI::App& app, DevicesOptions& o) {
    CLI::App* cmd = app.add_subcommand("devices", "list the Vulkan devices, their limits and which one is the default");
    cmd->add_flag("--json", o.json, "print one JSON document");
    return cmd;
}

namespace {

// SIEVE_DEVICE as every command reads it: "cpu" (the twin is the default), a
// device the library opens (it marks that one the default), or an error
// naming the variable, as `sieve sample` would fail with it.
bool default_is_cpu_twin() {
    const char* env = std::getenv("SIEVE_DEVICE");
    if (!env || !*env) return false;
    const Device d = open_device("");  // throws, naming SIEVE_DEVICE, for a value that picks no device
    return d.cpu_twin;
}

} // namespace

int run_devices(const DevicesOptions& o, std::ostream& out, std::ostream& /*err*/) {
    const bool cpu_default = default_is_cpu_twin();
    std::vector<sieve_device_info> infos = sieve::devices();
    if (cpu_default)
        for (sieve_device_info& info : infos) info.is_default = 0;
    // The profile every command's context takes (env SIEVE_PROFILE): an unknown
    // name is refused here as it would be there.
    uint32_t profile = 0;
    sieve::check(sieve_profile_parse(nullptr, &profile));
    if (o.json) {
        Json doc;
        Json list = Json::array();
        Json def = nullptr;
        for (const sieve_device_info& info : infos) {
            list.push_back(device_json(info));
            if (info.is_default) def = info.index;
        }
        doc["devices"] = list;
        doc["default"] = def;
        doc["profile"] = sieve_profile_name(profile);
        if (cpu_default) doc["default"] = "cpu";
        doc["cpu_twin"] = {{"device", "cpu"},
                           {"description", "the CPU twin (executable specification), --device cpu"},
                           {"default", cpu_default}};
        doc["library_version"] = std::to_string(SIEVE_VERSION_GET_MAJOR(sieve_version())) + "." +
                                 std::to_string(SIEVE_VERSION_GET_MINOR(sieve_version())) + "." +
                                 std::to_string(SIEVE_VERSION_GET_PATCH(sieve_version()));
        print_json(out, doc);
        return 0;
    }
    out << "profile: " << sieve_profile_name(profile)
        << (profile ? " (SIEVE_PROFILE: contexts record the plans that profile describes)" : "") << "\n";
    if (infos.empty()) out << "no Vulkan devices found\n";
    for (const sieve_device_info& info : infos) {
        out << "[" << info.index << "] " << info.name << (info.is_default ? "  (default)" : "") << "\n";
        out << "    type " << device_type_name(info.type) << ", Vulkan " << vk_version_string(info.api_version)
            << ", driver " << (info.driver[0] ? info.driver : "?") << " (version " << info.driver_version << ")\n";
        char ids[64];
        std::snprintf(ids, sizeof ids, "0x%04x:0x%04x", info.vendor_id, info.device_id);
        out << "    vendor:device " << ids << "\n";
        out << "    max storage buffer range " << bytes_text(info.max_storage_buffer_range) << ", shared memory "
            << bytes_text(info.max_shared_memory) << ", workgroup size " << info.max_workgroup_size << ", subgroup size "
            << info.subgroup_size << ", " << info.compute_units
            << (info.compute_units_known ? " compute units" : " compute units (a stand-in: the driver does not say)") << "\n";
        out << "    features:";
        std::vector<std::string> names = feature_names(info.features);
        if (names.empty()) out << " none";
        for (const std::string& n : names) out << " " << n;
        out << "\n";
    }
    out << "[cpu] the CPU twin (executable specification): --device cpu"
        << (cpu_default ? "  (default: SIEVE_DEVICE=cpu)" : "") << "\n";
    return 0;
}

} // namespace sieve_cli
