#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT
#include "cli/threads.h"

#include <sched.h>
#include <unistd.h>

int threads_available(void) {
    long n = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > THREADS_MAX ? THREADS_MAX : (int)n;
}
