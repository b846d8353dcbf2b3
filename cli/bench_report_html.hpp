// `sieve bench --report FILE.html`: one self-contained page (inline CSS and
// SVG, no script, no font, no network) with the run's plots and table.
#pragma once

#include "json_output.hpp"

#include <string>

namespace sieve_cli {

// The page for a `sieve bench --json` document.
std::string report_html(const Json& run);

} // namespace sieve_cli
