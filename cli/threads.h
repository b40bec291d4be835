// threads.h: how many threads bin/draw and bin/caption use when --threads is not given.
//
// Every core this process may run on: the CPUs in its affinity mask (sched_getaffinity,
// so `taskset -c 0,1 bin/draw ...` or a container's cpuset gives 2), or the online CPU
// count where the mask cannot be read; at least 1, at most THREADS_MAX (the largest
// --threads accepts). A run is bit-identical only for the same thread count: each
// program's header line says how many threads it uses.
#ifndef CLI_THREADS_H
#define CLI_THREADS_H

#define THREADS_MAX 256
// What the default stands for, in --threads' usage line (ArgSpec.default_note).
#define THREADS_DEFAULT_NOTE "every core this process may use"

int threads_available(void);

#endif
