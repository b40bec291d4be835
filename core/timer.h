// timer.h: wall-clock time from CLOCK_MONOTONIC (never clock(), which counts CPU time).
#ifndef CORE_TIMER_H
#define CORE_TIMER_H

// Seconds since an arbitrary fixed point; only differences mean anything.
double timer_now(void);

#endif
