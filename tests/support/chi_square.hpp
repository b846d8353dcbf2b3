// Chi-square goodness of fit for the statistical tests: observed counts
// against a distribution, cells expecting few draws pooled, compared with the
// upper 0.001 critical value.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace sieve_test {

// Upper 0.001 critical value of chi-square with k degrees of freedom
// (Wilson-Hilferty; z = 3.0902 is the standard normal's 0.999 quantile).
inline double chi_square_critical_0001(int k) {
    const double z = 3.090232306167813;
    const double a = 2.0 / (9.0 * k);
    return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

struct ChiSquareFit {
    double statistic = 0.0;
    double critical = 0.0;
    int df = 0;
    double outside = 0.0;  // draws of ids the distribution gives no mass
};

// `expected` maps ids to probabilities (zero-probability ids may be listed);
// `observed` maps ids to counts out of n draws. Cells expecting fewer than
// 20 draws are pooled into one.
inline ChiSquareFit chi_square_fit(const std::map<int32_t, double>& expected, const std::map<int32_t, double>& observed,
                                   double n) {
    ChiSquareFit fit;
    double pooled_expected = 0.0, pooled_observed = 0.0;
    int cells = 0;
    const auto add = [&](double e, double o) {
        fit.statistic += (o - e) * (o - e) / e;
        ++cells;
    };
    for (const auto& [id, p] : expected) {
        const auto it = observed.find(id);
        const double o = it == observed.end() ? 0.0 : it->second;
        if (p <= 0.0) {
            fit.outside += o;
            continue;
        }
        if (p * n < 20.0) {
            pooled_expected += p * n;
            pooled_observed += o;
        } else {
            add(p * n, o);
        }
    }
    for (const auto& [id, o] : observed)
        if (!expected.count(id)) fit.outside += o;
    if (pooled_expected >= 5.0) add(pooled_expected, pooled_observed);
    fit.df = cells - 1;
    fit.critical = fit.df > 0 ? chi_square_critical_0001(fit.df) : 0.0;
    return fit;
}

} // namespace sieve_test
