#include "bench_report_html.hpp"

#include "text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace sieve_cli {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#e7ba52"};
constexpr size_t kColorCount = sizeof kColors / sizeof kColors[0];

std::string esc(const std::string& s) {
    std::string o;
    for (char ch : s) {
        switch (ch) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        default: o += ch;
        }
    }
    return o;
}

std::string num(double v, int decimals = 1) { return fixed(v, decimals); }

std::string str(const Json& c, const char* key) {
    return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
}
double dbl(const Json& c, const char* key, double fallback = NAN) {
    return c.contains(key) && c[key].is_number() ? c[key].get<double>() : fallback;
}
bool ok(const Json& c) { return str(c, "status") == "ok" && std::isfinite(dbl(c, "median_us")); }

struct Series {
    std::string label;
    std::vector<std::pair<double, double>> points;  // x, y
    bool dashed = false;
};

constexpr size_t kMaxSeries = 12;  // more lines than this are unreadable

// A line plot with log2 x (vocab, rows) and linear y from 0.
std::string line_plot(const std::string& title, const std::string& x_label, const std::string& y_label,
                      std::vector<Series> series) {
    std::string omitted;
    if (series.size() > kMaxSeries) {
        omitted = std::to_string(series.size() - kMaxSeries) + " more series are not drawn (the table has every case)";
        series.resize(kMaxSeries);
    }
    const double W = 640, H = 340, L = 70, R = 200, T = 30, B = 50;
    double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
    for (const Series& s : series)
        for (auto [x, y] : s.points) {
            xmin = std::min(xmin, std::log2(x));
            xmax = std::max(xmax, std::log2(x));
            ymax = std::max(ymax, y);
        }
    std::ostringstream o;
    o << "<figure><svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' viewBox='0 0 " << W
      << " " << H << "' role='img' aria-label='" << esc(title) << "'>\n";
    o << "<text x='" << L << "' y='18' class='t'>" << esc(title) << "</text>\n";
    if (!std::isfinite(xmin) || ymax <= 0) {
        o << "<text x='" << L << "' y='" << H / 2 << "'>no data</text></svg></figure>\n";
        return o.str();
    }
    if (xmax - xmin < 1e-9) {
        xmin -= 0.5;
        xmax += 0.5;
    }
    // Round ticks: a step of 1, 2 or 5 x 10^k, about 4 of them.
    const double raw = ymax * 1.05 / 4;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / mag <= 1 ? mag : raw / mag <= 2 ? 2 * mag : raw / mag <= 5 ? 5 * mag : 10 * mag;
    const int ticks = static_cast<int>(std::ceil(ymax * 1.05 / step));
    ymax = step * ticks;
    const double pw = W - L - R, ph = H - T - B;
    auto X = [&](double x) { return L + (std::log2(x) - xmin) / (xmax - xmin) * pw; };
    auto Y = [&](double y) { return T + ph - y / ymax * ph; };
    // Styles inline (not only the page's CSS) so a plot saved on its own renders the same.
    o << "<rect x='" << L << "' y='" << T << "' width='" << pw << "' height='" << ph
      << "' fill='none' stroke='#999'/>\n";
    for (int i = 0; i <= ticks; ++i) {
        const double y = step * i;
        o << "<line x1='" << L << "' x2='" << L + pw << "' y1='" << Y(y) << "' y2='" << Y(y) << "' stroke='#e4e4e4'/>";
        o << "<text x='" << L - 6 << "' y='" << Y(y) + 4 << "' text-anchor='end'>" << num(y, y < 10 ? 1 : 0) << "</text>\n";
    }
    std::set<double> xs;
    for (const Series& s : series)
        for (auto p : s.points) xs.insert(p.first);
    double last_x = -1e9;
    bool lowered = false;
    for (double x : xs) {  // a label too close to the previous one goes one line lower
        lowered = X(x) - last_x < 45 && !lowered;
        o << "<text x='" << X(x) << "' y='" << T + ph + (lowered ? 28 : 16) << "' text-anchor='middle'>" << num(x, 0)
          << "</text>\n";
        last_x = X(x);
    }
    o << "<text x='" << L + pw / 2 << "' y='" << H - 6 << "' text-anchor='middle'>" << esc(x_label) << "</text>\n";
    o << "<text x='14' y='" << T + ph / 2 << "' transform='rotate(-90 14 " << T + ph / 2 << ")' text-anchor='middle'>"
      << esc(y_label) << "</text>\n";
    for (size_t i = 0; i < series.size(); ++i) {
        const Series& s = series[i];
        const char* color = kColors[i % kColorCount];
        std::vector<std::pair<double, double>> pts = s.points;
        std::sort(pts.begin(), pts.end());
        o << "<polyline fill='none' stroke='" << color << "' stroke-width='2'" << (s.dashed ? " stroke-dasharray='5,4'" : "")
          << " points='";
        for (auto [x, y] : pts) o << num(X(x), 1) << "," << num(Y(y), 1) << " ";
        o << "'/>\n";
        for (auto [x, y] : pts)
            o << "<circle cx='" << num(X(x), 1) << "' cy='" << num(Y(y), 1) << "' r='3' fill='" << color << "'><title>"
              << esc(s.label) << ": " << num(x, 0) << " -> " << num(y, 1) << "</title></circle>\n";
        const double ly = T + 12 + 18 * static_cast<double>(i);
        o << "<line x1='" << L + pw + 10 << "' x2='" << L + pw + 34 << "' y1='" << ly << "' y2='" << ly << "' stroke='"
          << color << "' stroke-width='2'" << (s.dashed ? " stroke-dasharray='5,4'" : "") << "/>";
        o << "<text x='" << L + pw + 40 << "' y='" << ly + 4 << "'>" << esc(s.label) << "</text>\n";
    }
    o << "</svg>";
    if (!omitted.empty()) o << "<figcaption>" << esc(omitted) << "</figcaption>";
    o << "</figure>\n";
    return o.str();
}

// Horizontal stacked bars: GPU time per stage for each profiled case.
std::string stage_plot(const Json& cases) {
    struct Bar {
        std::string name;
        std::vector<std::pair<std::string, double>> parts;
        double total = 0;
        double bare = NAN;  // row passes x the calibrated bare pass: what reading the rows costs
    };
    std::vector<Bar> bars;
    std::vector<std::string> stage_names;
    for (const Json& c : cases) {
        if (!ok(c) || !c.contains("stages") || !c["stages"].is_array() || c["stages"].empty()) continue;
        Bar b;
        b.name = str(c, "name");
        for (const Json& s : c["stages"]) {
            std::string n = str(s, "stage");
            const double level = dbl(s, "level", 0);
            if (level > 0) n += " L" + num(level, 0);
            const double us = dbl(s, "gpu_us", 0);
            b.parts.push_back({n, us});
            b.total += us;
            if (std::find(stage_names.begin(), stage_names.end(), n) == stage_names.end()) stage_names.push_back(n);
        }
        if (c.contains("calibration") && c["calibration"].is_object() && std::isfinite(dbl(c, "row_passes")))
            b.bare = dbl(c, "row_passes") * dbl(c["calibration"], "pass_us");
        bars.push_back(b);
    }
    std::ostringstream o;
    if (bars.empty()) return "<p>No stage times (the CPU twin backend has no stages).</p>\n";
    const double L = 230, R = 250, bar_h = 16, gap = 6, T = 30;
    const double W = 1000, pw = W - L - R;
    const double H = std::max(T + bars.size() * (bar_h + gap) + 40, T + 18.0 * stage_names.size() + 20);
    o << "<figure><svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' viewBox='0 0 " << W
      << " " << H << "' role='img' aria-label='GPU time per stage'>\n";
    o << "<text x='" << L << "' y='18' class='t'>share of each stage in the GPU time of a token (timestamps; total at the right; black tick: bare passes)</text>\n";
    for (size_t i = 0; i < bars.size(); ++i) {
        const Bar& b = bars[i];
        const double y = T + i * (bar_h + gap);
        o << "<text x='" << L - 6 << "' y='" << y + bar_h - 4 << "' text-anchor='end'>" << esc(b.name) << "</text>";
        double x = L;
        const double total = b.total > 0 ? b.total : 1;
        for (const auto& [n, us] : b.parts) {
            const size_t ci = static_cast<size_t>(std::find(stage_names.begin(), stage_names.end(), n) - stage_names.begin());
            const double w = us / total * pw;  // each bar is its case's whole GPU time: the shares show
            o << "<rect x='" << num(x, 1) << "' y='" << y << "' width='" << num(std::max(w, 0.5), 1) << "' height='" << bar_h
              << "' fill='" << kColors[ci % kColorCount] << "'><title>" << esc(b.name) << ": " << esc(n) << " " << num(us, 1)
              << " us</title></rect>";
            x += w;
        }
        if (std::isfinite(b.bare) && total > 0) {
            const double bx = L + std::min(1.0, b.bare / total) * pw;
            o << "<line x1='" << num(bx, 1) << "' x2='" << num(bx, 1) << "' y1='" << y - 2 << "' y2='" << y + bar_h + 2
              << "' stroke='#000' stroke-width='2'><title>bare passes (calibration): " << num(b.bare, 1)
              << " us</title></line>";
        }
        o << "<text x='" << num(L + pw + 4, 1) << "' y='" << y + bar_h - 4 << "'>" << num(b.total, 0) << " us</text>\n";
    }
    for (size_t i = 0; i < stage_names.size(); ++i) {
        const double ly = T + 12 + 18 * static_cast<double>(i);
        o << "<rect x='" << W - R + 80 << "' y='" << ly - 8 << "' width='12' height='12' fill='" << kColors[i % kColorCount]
          << "'/><text x='" << W - R + 98 << "' y='" << ly + 2 << "'>" << esc(stage_names[i]) << "</text>\n";
    }
    o << "</svg></figure>\n";
    return o.str();
}

} // namespace

std::string report_html(const Json& run) {
    const Json& cases = run["cases"];
    std::ostringstream o;
    o << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n<title>sieve bench: " << esc(str(run, "device"))
      << "</title>\n<style>\nbody{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}\n"
         "svg text{font-size:11px;font-family:sans-serif}svg .t{font-size:13px;font-weight:bold}\n"
         ".frame{fill:none;stroke:#999}.grid{stroke:#e4e4e4}\n"
         "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
         "td:first-child,th:first-child{text-align:left}.warn{color:#a40;font-weight:bold}\nfigure{margin:1em 0}\n"
         "</style></head><body>\n";
    o << "<h1>sieve bench</h1>\n<p>Device <b>" << esc(str(run, "device")) << "</b>";
    if (!str(run, "driver").empty()) o << " (driver " << esc(str(run, "driver")) << ")";
    o << ", sieve " << esc(str(run, "library_version")) << ", " << esc(str(run, "date")) << ", CPU twin: " << esc(str(run, "twin"))
      << ".</p>\n";
    const bool peer = run.contains("peer") && run["peer"].is_object();
    if (peer)
        o << "<p>Peer: llama.cpp " << esc(str(run["peer"], "version")) << " (" << esc(str(run["peer"], "library"))
          << "), on the CPU, in blocks of " << num(dbl(run["peer"], "block_tokens"), 0) << " tokens alternating with the device's (fill the candidates, llama_sampler_apply, "
             "llama_sampler_accept). llama/dev = its median / the device's (&gt; 1: Sieve is faster).</p>\n";
    if (!str(run, "command").empty()) o << "<p>Command: <code>" << esc(str(run, "command")) << "</code></p>\n";
    if (run.contains("warnings"))
        for (const Json& w : run["warnings"])
            if (w.is_string()) o << "<p class='warn'>warning: " << esc(w.get<std::string>()) << "</p>\n";
    o << "<p>Latency is end to end per sample call (one token for every row), median over the measured tokens. "
         "The floor is row passes x a bare pass over the rows + an empty submit, both measured in this run; "
         "efficiency = floor / median. See docs/bench.md.</p>\n";

    // Latency vs vocab: one series per chain/shape/rows that has several vocabularies.
    std::map<std::string, Series> by_vocab, twin_by_vocab, floor_by_vocab, peer_by_vocab;
    std::map<std::string, Series> by_rows, floor_by_rows;
    std::map<std::string, std::set<double>> vocabs_of, rows_of;
    for (const Json& c : cases) {
        if (!ok(c) || c.contains("verify")) continue;  // a step of several rows per sequence: not on these curves
        const std::string chain = str(c, "chain"), shape = str(c, "shape");
        const double v = dbl(c, "vocab"), b = dbl(c, "rows");
        vocabs_of[chain + "/" + shape + "/b" + num(b, 0)].insert(v);
        rows_of[chain + "/" + shape + "/v" + num(v, 0)].insert(b);
    }
    for (const Json& c : cases) {
        if (!ok(c) || c.contains("verify")) continue;  // a step of several rows per sequence: not on these curves
        const std::string chain = str(c, "chain"), shape = str(c, "shape");
        const double v = dbl(c, "vocab"), b = dbl(c, "rows"), med = dbl(c, "median_us");
        const std::string kv = chain + "/" + shape + "/b" + num(b, 0);
        if (vocabs_of[kv].size() >= 2) {
            by_vocab[kv].label = kv;
            by_vocab[kv].points.push_back({v, med});
            if (std::isfinite(dbl(c, "twin_median_us"))) {
                twin_by_vocab[kv].label = kv + " twin";
                twin_by_vocab[kv].dashed = true;
                twin_by_vocab[kv].points.push_back({v, dbl(c, "twin_median_us")});
            }
            if (std::isfinite(dbl(c, "peer_median_us"))) {
                peer_by_vocab[kv].label = kv + " llama.cpp";
                peer_by_vocab[kv].dashed = true;
                peer_by_vocab[kv].points.push_back({v, dbl(c, "peer_median_us")});
            }
            if (std::isfinite(dbl(c, "floor_us"))) {
                floor_by_vocab[kv].label = kv + " floor";
                floor_by_vocab[kv].dashed = true;
                floor_by_vocab[kv].points.push_back({v, dbl(c, "floor_us")});
            }
        }
        const std::string kr = chain + "/" + shape + "/v" + num(v, 0);
        if (rows_of[kr].size() >= 2) {
            by_rows[kr].label = kr;
            by_rows[kr].points.push_back({b, med / b});
            if (std::isfinite(dbl(c, "floor_us"))) {
                floor_by_rows[kr].label = kr + " floor";
                floor_by_rows[kr].dashed = true;
                floor_by_rows[kr].points.push_back({b, dbl(c, "floor_us") / b});
            }
        }
    }
    // Device lines first; the twin's and the floors only while the plot stays readable.
    std::vector<Series> vocab_series;
    for (auto& [k, s] : by_vocab) vocab_series.push_back(s);
    if (by_vocab.size() * 4 <= kMaxSeries)
        for (auto* m : {&twin_by_vocab, &floor_by_vocab, &peer_by_vocab})
            for (auto& [k, s] : *m) vocab_series.push_back(s);
    std::vector<Series> rows_series;
    for (auto& [k, s] : by_rows) rows_series.push_back(s);
    if (by_rows.size() * 2 <= kMaxSeries)
        for (auto& [k, s] : floor_by_rows) rows_series.push_back(s);
    o << "<h2>Latency vs vocabulary</h2>\n"
      << line_plot("median latency per token vs vocabulary (solid: device; dashed: CPU twin, floor, llama.cpp)", "vocabulary (log scale)",
                   "us per token", vocab_series);
    o << "<h2>Per-row cost vs batch</h2>\n"
      << line_plot("median latency per token / rows vs rows per call (dashed: floor / rows)", "rows per call (log scale)",
                   "us per row", rows_series);
    o << "<h2>Stage breakdown</h2>\n" << stage_plot(cases);

    o << "<h2>Cases</h2>\n<table><tr><th>case</th><th>status</th><th>median us</th><th>p10</th><th>p90</th><th>twin us</th>"
         "<th>twin/dev</th><th>dispatches</th><th>row passes</th><th>MB read</th><th>floor us</th><th>efficiency</th>"
      << (peer ? "<th>llama us</th><th>llama/dev</th>" : "") << "</tr>\n";
    for (const Json& c : cases) {
        o << "<tr><td>" << esc(str(c, "name")) << "</td><td>" << esc(str(c, "status")) << "</td>";
        if (!ok(c)) {
            o << "<td colspan='" << (peer ? 12 : 10) << "' style='text-align:left'>" << esc(str(c, "message")) << "</td></tr>\n";
            continue;
        }
        auto cell = [&](const char* key, int d, double scale = 1) {
            const double v = dbl(c, key);
            o << "<td>" << (std::isfinite(v) ? num(v * scale, d) : std::string("-")) << "</td>";
        };
        cell("median_us", 1);
        cell("p10_us", 1);
        cell("p90_us", 1);
        cell("twin_median_us", 1);
        cell("ratio", 2);
        cell("dispatches", 0);
        cell("row_passes", 0);
        cell("bytes_read", 2, 1e-6);
        cell("floor_us", 1);
        cell("efficiency", 2);
        if (peer) {
            if (str(c, "peer_status") == "ok") {
                cell("peer_median_us", 1);
                cell("peer_ratio", 2);
            } else {
                o << "<td colspan='2' style='text-align:left'>" << esc(str(c, "peer_status")) << ": "
                  << esc(str(c, "peer_message")) << "</td>";
            }
        }
        o << "</tr>\n";
    }
    o << "</table>\n</body></html>\n";
    return o.str();
}

} // namespace sieve_cli
