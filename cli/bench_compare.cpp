#include "bench_compare.hpp"

#include "bench_json.hpp"
#include "exit_codes.hpp"
#include "text_format.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

namespace sieve_cli {
namespace {

std::optional<double> median_of(const Json& c) {
    if (c.value("status", std::string("ok")) != "ok") return std::nullopt;
    if (!c.contains("median_us") || !c["median_us"].is_number()) return std::nullopt;
    const double v = c["median_us"].get<double>();
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    return v;
}

// --peer's figures of a case: llama.cpp's median and its ratio to the device's.
std::optional<double> number_of(const Json& c, const char* key) {
    if (c.value("status", std::string("ok")) != "ok" || c.value("peer_status", std::string()) != "ok") return std::nullopt;
    if (!c.contains(key) || !c[key].is_number()) return std::nullopt;
    const double v = c[key].get<double>();
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    return v;
}

bool has_peer(const Json& doc) { return doc.contains("peer") && doc["peer"].is_object(); }

std::string label(const Json& doc) {
    std::string d = doc.contains("device") && doc["device"].is_string() ? doc["device"].get<std::string>() : "?";
    if (doc.contains("date") && doc["date"].is_string()) d += ", " + doc["date"].get<std::string>();
    if (doc.contains("library_version") && doc["library_version"].is_string())
        d += ", sieve " + doc["library_version"].get<std::string>();
    return d;
}

} // namespace

int run_compare(const std::string& a_path, const std::string& b_path, const std::string& filter, bool json,
                std::ostream& out) {
    const Json a = read_bench_json(a_path);
    const Json b = read_bench_json(b_path);
    std::map<std::string, const Json*> in_b;
    for (const Json& c : b["cases"]) in_b[c["name"].get<std::string>()] = &c;

    struct Row {
        std::string name;
        std::optional<double> a, b, ratio;
        std::optional<double> a_peer, b_peer, a_peer_ratio, b_peer_ratio;  // --peer runs
        std::string note;
    };
    std::vector<Row> rows;
    std::vector<std::string> only_a, only_b;
    double log_sum = 0;
    int matched = 0;
    std::map<std::string, bool> seen;
    auto wanted = [&](const std::string& name) { return filter.empty() || name.find(filter) != std::string::npos; };
    for (const Json& ca : a["cases"]) {
        const std::string name = ca["name"].get<std::string>();
        seen[name] = true;
        if (!wanted(name)) continue;
        auto it = in_b.find(name);
        if (it == in_b.end()) {
            only_a.push_back(name);
            continue;
        }
        Row r;
        r.name = name;
        r.a = median_of(ca);
        r.b = median_of(*it->second);
        r.a_peer = number_of(ca, "peer_median_us");
        r.b_peer = number_of(*it->second, "peer_median_us");
        r.a_peer_ratio = number_of(ca, "peer_ratio");
        r.b_peer_ratio = number_of(*it->second, "peer_ratio");
        if (r.a && r.b) {
            r.ratio = *r.b / *r.a;
            log_sum += std::log(*r.ratio);
            ++matched;
        } else {
            r.note = std::string(r.a ? "" : "A: " + ca.value("status", std::string("no median"))) +
                     (r.a || r.b ? "" : ", ") +
                     (r.b ? "" : "B: " + it->second->value("status", std::string("no median")));
        }
        rows.push_back(r);
    }
    for (const Json& cb : b["cases"])
        if (!seen.count(cb["name"].get<std::string>()) && wanted(cb["name"].get<std::string>()))
            only_b.push_back(cb["name"].get<std::string>());
    if (rows.empty())
        throw CliError(kExitBadInput, "'" + a_path + "' and '" + b_path + "' have no case name in common" +
                                          (filter.empty() ? "" : " matching --case '" + filter + "'"));
    std::optional<double> geomean;
    if (matched > 0) geomean = std::exp(log_sum / matched);

    // Either run with --peer: llama.cpp's median and llama/dev beside each side.
    const bool peers = has_peer(a) || has_peer(b);
    if (json) {
        Json doc;
        doc["a"] = Json{{"file", a_path}, {"device", a.value("device", Json(nullptr))}, {"date", a.value("date", Json(nullptr))}};
        doc["b"] = Json{{"file", b_path}, {"device", b.value("device", Json(nullptr))}, {"date", b.value("date", Json(nullptr))}};
        Json cases = Json::array();
        for (const Row& r : rows) {
            Json c;
            c["name"] = r.name;
            c["a_median_us"] = r.a ? Json(*r.a) : Json(nullptr);
            c["b_median_us"] = r.b ? Json(*r.b) : Json(nullptr);
            c["ratio"] = r.ratio ? Json(std::round(*r.ratio * 10000.0) / 10000.0) : Json(nullptr);
            if (peers) {
                c["a_peer_median_us"] = r.a_peer ? Json(*r.a_peer) : Json(nullptr);
                c["b_peer_median_us"] = r.b_peer ? Json(*r.b_peer) : Json(nullptr);
                c["a_peer_ratio"] = r.a_peer_ratio ? Json(*r.a_peer_ratio) : Json(nullptr);
                c["b_peer_ratio"] = r.b_peer_ratio ? Json(*r.b_peer_ratio) : Json(nullptr);
            }
            if (!r.note.empty()) c["note"] = r.note;
            cases.push_back(c);
        }
        doc["cases"] = std::move(cases);
        doc["matched"] = matched;
        doc["geomean_ratio"] = geomean ? Json(std::round(*geomean * 10000.0) / 10000.0) : Json(nullptr);
        doc["only_in_a"] = only_a;
        doc["only_in_b"] = only_b;
        print_json(out, doc);
        return kExitOk;
    }
    out << "A: " << a_path << " (" << label(a) << ")\n";
    out << "B: " << b_path << " (" << label(b) << ")\n";
    out << "B/A = B's median / A's median per token (< 1: B is faster)\n";
    if (peers) out << "A llama, B llama = llama.cpp's median in each run (--peer); llama/dev = it / Sieve's median (> 1: Sieve is faster)\n";
    out << pad("case", 34, false) << pad("A median", 12, true) << pad("B median", 12, true) << pad("B/A", 9, true);
    if (peers)
        out << pad("A llama", 10, true) << pad("A llama/dev", 12, true) << pad("B llama", 10, true) << pad("B llama/dev", 12, true);
    out << "\n";
    for (const Row& r : rows) {
        out << pad(r.name, 34, false) << pad(r.a ? fixed(*r.a, 1) : "-", 12, true) << pad(r.b ? fixed(*r.b, 1) : "-", 12, true)
            << pad(r.ratio ? fixed(*r.ratio, 3) : "-", 9, true);
        if (peers) {
            auto cell = [&](const std::optional<double>& v, int d, int w) { out << pad(v ? fixed(*v, d) : "-", w, true); };
            cell(r.a_peer, 1, 10);
            cell(r.a_peer_ratio, 2, 12);
            cell(r.b_peer, 1, 10);
            cell(r.b_peer_ratio, 2, 12);
        }
        if (!r.note.empty()) out << "  (" << r.note << ")";
        out << "\n";
    }
    if (geomean) out << "geometric mean of B/A over " << matched << " cases: " << fixed(*geomean, 3) << "\n";
    if (!only_a.empty()) out << "only in A: " << only_a.size() << " case(s), e.g. " << only_a.front() << "\n";
    if (!only_b.empty()) out << "only in B: " << only_b.size() << " case(s), e.g. " << only_b.front() << "\n";
    return kExitOk;
}

} // namespace sieve_cli
