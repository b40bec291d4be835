#include "core/progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/timer.h"

#define TTY_INTERVAL_S 0.1    // a terminal bar is redrawn at most 10 times a second
#define PLAIN_INTERVAL_S 5.0  // a log file gets one line every 5 seconds
#define BAR_WIDTH 24

void progress_start(Progress *p, const char *label, long total, double budget_s) {
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    p->total = total > 0 ? total : 0;
    p->budget_s = budget_s > 0 ? budget_s : 0;
    p->start = timer_now();
    p->tty = isatty(STDERR_FILENO);
    // A terminal draws at the first update; a log gets its first line after an interval.
    p->last_print = p->tty ? -1e300 : p->start;
}

void progress_name(Progress *p, const char *unit, const char *item) {
    snprintf(p->unit, sizeof p->unit, "%s", unit ? unit : "");
    snprintf(p->item, sizeof p->item, "%s", item ? item : "");
}

void progress_items(Progress *p, double items) { p->items = items; }

// "1:02:03" or "2:03"; "?" when unknown.
static void format_duration(char *buf, size_t cap, double s) {
    if (!isfinite(s) || s < 0 || s > 1e8) {
        snprintf(buf, cap, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

// Three significant digits below 1000 ("0.998", "18.2", "576"), whole numbers above
// ("5940", not "5.94e+03").
static const char *format_rate(char buf[32], double r) {
    snprintf(buf, 32, r < 1000 ? "%.3g" : "%.0f", r);
    return buf;
}

// The fraction done and the seconds left, from the count or the budget, whichever ends
// sooner; fraction < 0 and left NAN when neither is known.
static void estimate(const Progress *p, long done, double elapsed, double *fraction, double *left) {
    double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
    *fraction = -1.0;
    *left = NAN;
    if (p->total > 0) {
        *fraction = (double)done / (double)p->total;
        if (rate > 0) *left = (double)(p->total - done) / rate;
    }
    if (p->budget_s > 0) {
        double f = elapsed / p->budget_s, l = p->budget_s - elapsed;
        if (f > *fraction) *fraction = f;
        if (!(*left <= l)) *left = l;
    }
    if (*fraction > 1.0) *fraction = 1.0;
    if (*left < 0) *left = 0;
}

static void draw(Progress *p, long done, const char *status, double now, int final) {
    double elapsed = now - p->start;
    double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
    double fraction, left;
    estimate(p, done, elapsed, &fraction, &left);
    const char *sp = p->unit[0] ? " " : "";
    char count[80], rates[96], left_s[32], took[32];
    if (p->total > 0)
        snprintf(count, sizeof count, "%ld/%ld%s%s", done, p->total, sp, p->unit);
    else
        snprintf(count, sizeof count, "%ld%s%s", done, sp, p->unit);
    char r1[32], r2[32];
    int w = snprintf(rates, sizeof rates, "%s%s%s/s", format_rate(r1, rate), sp, p->unit);
    if (p->item[0] && w > 0 && (size_t)w < sizeof rates)
        snprintf(rates + w, sizeof rates - (size_t)w, ", %s %s/s",
                 format_rate(r2, elapsed > 0 ? p->items / elapsed : 0.0), p->item);
    format_duration(left_s, sizeof left_s, left);
    format_duration(took, sizeof took, elapsed);
    const char *st = status ? status : "";
    if (final) {
        fprintf(stderr, "%s%s: %s done in %s (%s) %s%s\n", p->tty ? "\r" : "", p->label, count,
                took, rates, st, p->tty ? "\033[K" : "");
    } else if (p->tty) {
        char bar[BAR_WIDTH + 1];
        int filled = fraction >= 0 ? (int)(fraction * BAR_WIDTH) : 0;
        for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : (fraction >= 0 ? '-' : ' ');
        bar[BAR_WIDTH] = 0;
        fprintf(stderr, "\r%s [%s] %s %s, %s left %s\033[K", p->label, bar, count, rates,
                left_s, st);
    } else if (fraction >= 0) {
        fprintf(stderr, "%s: %s (%.1f%%) %s, %s left %s\n", p->label, count, 100.0 * fraction,
                rates, left_s, st);
    } else {
        fprintf(stderr, "%s: %s %s %s\n", p->label, count, rates, st);
    }
    fflush(stderr);
    p->last_print = now;
}

void progress_update(Progress *p, long done, const char *status) {
    double now = timer_now();
    double interval = p->tty ? TTY_INTERVAL_S : PLAIN_INTERVAL_S;
    if (now - p->last_print < interval) return;
    draw(p, done, status, now, 0);
}

void progress_end(Progress *p, long done, const char *status) {
    draw(p, done, status, timer_now(), 1);
}
