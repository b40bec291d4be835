#include "core/binomial.h"

#include <math.h>

#include "core/check.h"

BinomialInterval binomial_wilson95(long k, long n) {
    CHECK(n >= 1 && k >= 0 && k <= n, "binomial_wilson95: k = %ld of n = %ld", k, n);
    const double z = 1.959963984540054, z2 = z * z, nn = (double)n, p = (double)k / nn;
    const double centre = (p + z2 / (2.0 * nn)) / (1.0 + z2 / nn);
    const double half = z / (1.0 + z2 / nn) * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
    BinomialInterval ci = {centre - half, centre + half};
    // At k = 0 (k = n) the lower (upper) root is 0 (1) exactly; rounding may miss it.
    if (k == 0) ci.low = 0.0;
    if (k == n) ci.high = 1.0;
    return ci;
}
