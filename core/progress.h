// progress.h: a progress bar with rate and ETA on a terminal; plain periodic lines
// (every few seconds) when stderr is not a terminal. Writes to stderr only.
#ifndef CORE_PROGRESS_H
#define CORE_PROGRESS_H

typedef struct {
    char label[32];
    long total;        // 0 if unknown (e.g. a time budget): then no ETA by count
    double start, last_print, budget_s;  // budget_s > 0: ETA from the time budget
    int tty;
} Progress;

void progress_start(Progress *p, const char *label, long total, double budget_s);
// done: units finished so far; status: a short text shown after the bar ("bound 92.1").
void progress_update(Progress *p, long done, const char *status);
void progress_end(Progress *p, long done, const char *status);

#endif
