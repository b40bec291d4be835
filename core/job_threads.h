// job_threads.h: one function run over a batch's shares at once, each share a job.
//
//     Job jobs[n];                       // filled by the caller, one per share
//     job_threads_run(job_run, jobs, sizeof jobs[0], n);
//
// Job 0 runs on the caller's thread and jobs 1 .. n - 1 on threads of their own; it returns
// when every job is done. A thread that cannot be created leaves its job to the caller's
// thread, after job 0: the jobs must not depend on one another, so the results are the same.
#ifndef CORE_JOB_THREADS_H
#define CORE_JOB_THREADS_H

#include <stddef.h>

#define JOB_THREADS_MAX 64  // the most jobs one call runs

// fn on each of the n (1 .. JOB_THREADS_MAX) jobs, the elements of job_size bytes at jobs.
void job_threads_run(void *(*fn)(void *), void *jobs, size_t job_size, int n);

#endif
