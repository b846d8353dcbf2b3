// JSON helpers shared by the commands: one document per run on stdout, fields in
// a stable order (ordered_json), floats printed in their shortest form.
#pragma once

#include <nlohmann/json.hpp>

#include <sieve/sieve.h>

#include <ostream>
#include <string>

namespace sieve_cli {

using Json = nlohmann::ordered_json;

// A float as the double with the same shortest decimal form (0.31f -> 0.31),
// so JSON shows 0.31 rather than 0.31000000238418579. Non-finite -> null.
Json json_float(float value);

// A device as JSON (the `sieve devices --json` entry).
Json device_json(const sieve_device_info& info);

// A row that could not be sampled: {"row": r, "status": "...", "message": "..."}.
Json row_error_json(int32_t row, sieve_status status, const std::string& message);

// A whole-run failure under --json: {"status": "...", "exit_code": n, "message": "..."}.
Json run_error_json(int exit_code, sieve_status status, const std::string& message);

// Writes the document (compact, one line) and a newline.
void print_json(std::ostream& out, const Json& doc);

} // namespace sieve_cli
