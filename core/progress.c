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

static void draw(Progress *p, long done, const char *status, double now, int final) {
    double elapsed = now - p->start;
    double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
    double fraction = -1.0;
    if (p->total > 0)
        fraction = (double)done / (double)p->total;
    else if (p->budget_s > 0)
        fraction = elapsed / p->budget_s;
    if (fraction > 1.0) fraction = 1.0;
    double eta = NAN;
    if (p->total > 0 && rate > 0)
        eta = (double)(p->total - done) / rate;
    else if (p->budget_s > 0)
        eta = p->budget_s - elapsed;
    char count[64], eta_s[32], took[32];
    if (p->total > 0)
        snprintf(count, sizeof count, "%ld/%ld", done, p->total);
    else
        snprintf(count, sizeof count, "%ld", done);
    format_duration(eta_s, sizeof eta_s, eta < 0 ? 0 : eta);
    format_duration(took, sizeof took, elapsed);
    const char *st = status ? status : "";
    if (p->tty) {
        char bar[BAR_WIDTH + 1];
        int filled = fraction >= 0 ? (int)(fraction * BAR_WIDTH) : 0;
        for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : (fraction >= 0 ? '-' : ' ');
        bar[BAR_WIDTH] = 0;
        if (final)
            fprintf(stderr, "\r%s [%s] %s %.3g/s in %s %s\033[K\n", p->label, bar, count, rate, took, st);
        else
            fprintf(stderr, "\r%s [%s] %s %.3g/s ETA %s %s\033[K", p->label, bar, count, rate, eta_s, st);
    } else {
        if (final)
            fprintf(stderr, "%s: %s done in %s (%.3g/s) %s\n", p->label, count, took, rate, st);
        else if (fraction >= 0)
            fprintf(stderr, "%s: %s (%.1f%%) %.3g/s ETA %s %s\n", p->label, count, 100.0 * fraction,
                    rate, eta_s, st);
        else
            fprintf(stderr, "%s: %s %.3g/s %s\n", p->label, count, rate, st);
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
