#include "json_output.hpp"

#include "device_text.hpp"
#include "exit_codes.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace sieve_cli {

Json json_float(float value) {
    if (!std::isfinite(value)) return nullptr;
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf - 1, value);
    *res.ptr = '\0';
    return std::strtod(buf, nullptr);
}

Json device_json(const sieve_device_info& info) {
    Json d;
    d["index"] = info.index;
    d["name"] = info.name;
    d["default"] = info.is_default != 0;
    d["type"] = device_type_name(info.type);
    d["driver"] = info.driver;
    d["vendor_id"] = info.vendor_id;
    d["device_id"] = info.device_id;
    d["api_version"] = vk_version_string(info.api_version);
    d["driver_version"] = info.driver_version;
    d["max_storage_buffer_range"] = info.max_storage_buffer_range;
    d["max_shared_memory"] = info.max_shared_memory;
    d["max_workgroup_size"] = info.max_workgroup_size;
    d["subgroup_size"] = info.subgroup_size;
    d["compute_units"] = info.compute_units;
    d["compute_units_known"] = info.compute_units_known != 0;
    d["features"] = feature_names(info.features);
    // A context's (enumeration leaves it 0: see the document's own "profile").
    d["profile"] = sieve_profile_name(info.profile);
    return d;
}

Json row_error_json(int32_t row, sieve_status status, const std::string& message) {
    Json r;
    r["row"] = row;
    r["status"] = sieve_status_name(status);
    r["message"] = message;
    return r;
}

Json run_error_json(int exit_code, sieve_status status, const std::string& message) {
    Json e;
    e["status"] = status != SIEVE_OK ? sieve_status_name(status) : exit_class_name(exit_code);
    e["exit_code"] = exit_code;
    e["message"] = message;
    return e;
}

void print_json(std::ostream& out, const Json& doc) {
    out << doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

} // namespace sieve_cli
