// job_threads.c: see job_threads.h.
#include "core/job_threads.h"

#include <pthread.h>
#include <stdbool.h>

#include "core/check.h"

void job_threads_run(void *(*fn)(void *), void *jobs, size_t job_size, int n) {
    CHECK(n >= 1 && n <= JOB_THREADS_MAX, "%d jobs", n);
    char *job = jobs;
    pthread_t th[JOB_THREADS_MAX];
    bool started[JOB_THREADS_MAX] = {false};
    for (int k = 1; k < n; k++) started[k] = pthread_create(&th[k], NULL, fn, job + (size_t)k * job_size) == 0;
    fn(job);
    for (int k = 1; k < n; k++) {
        if (started[k]) pthread_join(th[k], NULL);
        else fn(job + (size_t)k * job_size);
    }
}
