// test_binomial.c: the Wilson interval (core/binomial.h) against the four-decimal values
// Newcombe (1998, "Two-sided confidence intervals for the single proportion", table I)
// prints for it, and against its definition: each end a root of the score equation
// (k/n - p)^2 = z^2 p (1 - p) / n.
#include "core/binomial.h"
#include "tests/support/test.h"

static const double Z = 1.959963984540054;

static void test_published_values(void) {
    const struct {
        long k, n;
        double low, high;
    } cases[] = {{81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}, {0, 20, 0.0, 0.1611},
                 {1, 29, 0.0061, 0.1718}, {29, 29, 0.8830, 1.0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        BinomialInterval ci = binomial_wilson95(cases[i].k, cases[i].n);
        EXPECT(fabs(ci.low - cases[i].low) < 5e-5 && fabs(ci.high - cases[i].high) < 5e-5,
               "%ld of %ld: [%.5f, %.5f], published [%.4f, %.4f]", cases[i].k, cases[i].n,
               ci.low, ci.high, cases[i].low, cases[i].high);
    }
}

static void test_ends_solve_the_score_equation(void) {
    const long ks[] = {0, 1, 7, 350, 4999, 9999, 10000};
    const long n = 10000;
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        BinomialInterval ci = binomial_wilson95(ks[i], n);
        const double phat = (double)ks[i] / n, ends[2] = {ci.low, ci.high};
        EXPECT(0.0 <= ci.low && ci.low <= phat && phat <= ci.high && ci.high <= 1.0,
               "%ld of %ld: [%g, %g] does not hold %g inside [0, 1]", ks[i], n, ci.low, ci.high, phat);
        for (int e = 0; e < 2; e++) {
            const double p = ends[e], lhs = (phat - p) * (phat - p), rhs = Z * Z * p * (1 - p) / n;
            EXPECT(fabs(lhs - rhs) <= 1e-9 * rhs + 1e-18, "%ld of %ld, end %.17g: %.17g against %.17g",
                   ks[i], n, p, lhs, rhs);
        }
    }
}

static void test_the_cluttered_test_set(void) {
    // 350 wrong of 10,000 (3.50 %): the paper's 3.36 % lies inside.
    BinomialInterval ci = binomial_wilson95(350, 10000);
    EXPECT(ci.low < 0.0336 && 0.0336 < ci.high, "[%g, %g]", ci.low, ci.high);
    EXPECT(fabs(ci.low - 0.031573) < 1e-6 && fabs(ci.high - 0.038784) < 1e-6, "[%.6f, %.6f]",
           ci.low, ci.high);
}

int main(void) {
    RUN(test_published_values);
    RUN(test_ends_solve_the_score_equation);
    RUN(test_the_cluttered_test_set);
    return test_summary();
}
