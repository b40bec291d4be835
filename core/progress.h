// progress.h: a progress bar with rate and time left on a terminal; plain periodic lines
// (every few seconds) when stderr is not a terminal. Writes to stderr only.
//
// What is counted are units ("steps", or nothing named); a second rate in items ("images")
// can ride along. The end is a count (total), a time budget (budget_s), or both (the sooner
// one), or unknown; the fraction done and the time left come from whichever ends first:
//     train: 250/1000 steps (25.0%) 25 steps/s, 800 images/s, 0:30 left loss 0.512
//     train: 236 steps (98.5%) 18 steps/s, 576 images/s, 0:04 left loss 0.998   (--minutes 4)
//     train: 1000 steps done in 0:40 (25 steps/s, 800 images/s) loss 0.101      (the end)
//     decode: 250/1000 (25.0%) 25/s, 0:30 left                                  (no names)
// Rates are over the wall time since progress_start.
//
//     Progress p;
//     progress_start(&p, "train", steps, 0);
//     progress_name(&p, "steps", "images");
//     for (...) { ...; progress_items(&p, images_so_far); progress_update(&p, step, "loss 0.5"); }
//     progress_end(&p, step, "loss 0.5");
#ifndef CORE_PROGRESS_H
#define CORE_PROGRESS_H

typedef struct {
    char label[32];
    char unit[16];     // what done counts ("steps"); "" for unnamed units
    char item[16];     // what items counts ("images"); "" for no second rate
    long total;        // units to do, 0 if unknown: then no fraction or time left by count
    double budget_s;   // > 0: a time budget, ending the count at start + budget_s
    double items;      // items so far (progress_items)
    double start, last_print;
    int tty;
} Progress;

void progress_start(Progress *p, const char *label, long total, double budget_s);
// Names the units (e.g. "steps") and the items of the second rate (e.g. "images"); either
// may be NULL or "" for none. Call after progress_start.
void progress_name(Progress *p, const char *unit, const char *item);
// Items done so far (for the items rate).
void progress_items(Progress *p, double items);
// done: units finished so far; status: a short text shown after the bar ("bound 92.1").
void progress_update(Progress *p, long done, const char *status);
void progress_end(Progress *p, long done, const char *status);

#endif
