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

std::string value_text(const Json& v) {
    if (v.is_null()) return "(none)";
    return v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump();
}

// What the two runs were measured with, where they differ: the device and
// its setting, the library, llama.cpp beside it, and every setting.
Json run_differences(const Json& a, const Json& b) {
    Json diffs = Json::array();
    auto field = [](const Json& doc, const std::string& key) { return doc.contains(key) ? doc[key] : Json(nullptr); };
    auto differ = [&](const std::string& name, const Json& va, const Json& vb) {
        if (va != vb) diffs.push_back(Json{{"field", name}, {"a", va}, {"b", vb}});
    };
    for (const char* key : {"device", "backend", "device_type", "driver", "profile", "wait_spin_us", "library_version"})
        differ(key, field(a, key), field(b, key));
    auto peer = [&](const Json& doc) {
        return doc.contains("peer") && doc["peer"].is_object() ? doc["peer"].value("version", Json("llama.cpp")) : Json(nullptr);
    };
    differ("peer", peer(a), peer(b));
    const Json sa = a.contains("settings") && a["settings"].is_object() ? a["settings"] : Json::object();
    const Json sb = b.contains("settings") && b["settings"].is_object() ? b["settings"] : Json::object();
    std::vector<std::string> keys;
    for (auto it = sa.begin(); it != sa.end(); ++it) keys.push_back(it.key());
    for (auto it = sb.begin(); it != sb.end(); ++it)
        if (!sa.contains(it.key())) keys.push_back(it.key());
    for (const std::string& k : keys) differ("settings." + k, field(sa, k), field(sb, k));
    return diffs;
}

std::vector<std::string> run_warnings(const Json& doc) {
    std::vector<std::string> out;
    if (doc.contains("warnings") && doc["warnings"].is_array())
        for (const Json& w : doc["warnings"])
            if (w.is_string()) out.push_back(w.get<std::string>());
    return out;
}

} // namespace

Comparison compare_runs(const std::string& a_path, const std::string& b_path, const std::string& filter) {
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
    Comparison result;
    Json& doc = result.doc;
    doc["a"] = Json{{"file", a_path}, {"device", a.value("device", Json(nullptr))}, {"date", a.value("date", Json(nullptr))},
                    {"label", label(a)}};
    doc["b"] = Json{{"file", b_path}, {"device", b.value("device", Json(nullptr))}, {"date", b.value("date", Json(nullptr))},
                    {"label", label(b)}};
    doc["peers"] = peers;
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
    doc["differences"] = run_differences(a, b);
    for (const std::string& w : run_warnings(a)) result.warnings.push_back("A: " + w);
    for (const std::string& w : run_warnings(b)) result.warnings.push_back("B: " + w);
    if (!doc["differences"].empty()) {
        std::string fields;
        for (const Json& d : doc["differences"]) fields += (fields.empty() ? "" : ", ") + d["field"].get<std::string>();
        result.warnings.push_back("the runs differ in " + fields + ": B/A measures those differences too, not Sieve alone");
    }
    doc["warnings"] = result.warnings;
    return result;
}

void print_comparison(std::ostream& out, const Comparison& c) {
    const Json& doc = c.doc;
    const bool peers = doc["peers"].get<bool>();
    out << "A: " << doc["a"]["file"].get<std::string>() << " (" << doc["a"]["label"].get<std::string>() << ")\n";
    out << "B: " << doc["b"]["file"].get<std::string>() << " (" << doc["b"]["label"].get<std::string>() << ")\n";
    for (const Json& d : doc["differences"])
        out << "differs: " << d["field"].get<std::string>() << ": A " << value_text(d["a"]) << ", B " << value_text(d["b"]) << "\n";
    for (const std::string& w : c.warnings) out << "warning: " << w << "\n";
    out << "B/A = B's median / A's median per token (< 1: B is faster)\n";
    if (peers) out << "A llama, B llama = llama.cpp's median in each run (--peer); llama/dev = it / Sieve's median (> 1: Sieve is faster)\n";
    out << pad("case", 34, false) << pad("A median", 12, true) << pad("B median", 12, true) << pad("B/A", 9, true);
    if (peers)
        out << pad("A llama", 10, true) << pad("A llama/dev", 12, true) << pad("B llama", 10, true) << pad("B llama/dev", 12, true);
    out << "\n";
    auto cell = [&](const Json& v, int d, int w) { out << pad(v.is_number() ? fixed(v.get<double>(), d) : "-", w, true); };
    for (const Json& r : doc["cases"]) {
        out << pad(r["name"].get<std::string>(), 34, false);
        cell(r["a_median_us"], 1, 12);
        cell(r["b_median_us"], 1, 12);
        cell(r["ratio"], 3, 9);
        if (peers) {
            cell(r["a_peer_median_us"], 1, 10);
            cell(r["a_peer_ratio"], 2, 12);
            cell(r["b_peer_median_us"], 1, 10);
            cell(r["b_peer_ratio"], 2, 12);
        }
        if (r.contains("note")) out << "  (" << r["note"].get<std::string>() << ")";
        out << "\n";
    }
    const int matched = doc["matched"].get<int>();
    if (doc["geomean_ratio"].is_number())
        out << "geometric mean of B/A over " << matched << " cases: " << fixed(doc["geomean_ratio"].get<double>(), 3) << "\n";
    const Json& only_a = doc["only_in_a"];
    const Json& only_b = doc["only_in_b"];
    if (!only_a.empty()) out << "only in A: " << only_a.size() << " case(s), e.g. " << only_a.front().get<std::string>() << "\n";
    if (!only_b.empty()) out << "only in B: " << only_b.size() << " case(s), e.g. " << only_b.front().get<std::string>() << "\n";
}

} // namespace sieve_cli
