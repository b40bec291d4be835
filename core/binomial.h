// binomial.h: how far an error rate measured on n images can be from the model's true one.
//
// The Wilson score interval (Wilson 1927) for a proportion k / n at 95 %: the rates p for
// which the normal score test of k successes in n trials does not reject p, i.e. the roots
// of (k/n - p)^2 = z^2 p (1 - p) / n with z = 1.959964 (the normal's 97.5 % quantile).
// Unlike k/n +- z sqrt(p(1-p)/n) it stays inside [0, 1] and is not empty at k = 0, which
// matters for the small error rates of a classifier. With 350 wrong of 10,000:
//     BinomialInterval ci = binomial_wilson95(350, 10000);   // [0.03157, 0.03878]
#ifndef CORE_BINOMIAL_H
#define CORE_BINOMIAL_H

typedef struct {
    double low, high;  // in [0, 1]; low <= k / n <= high
} BinomialInterval;

// k of n (0 <= k <= n, n >= 1).
BinomialInterval binomial_wilson95(long k, long n);

#endif
