// test_core_job_threads.c: job_threads_run (core/job_threads.h) runs every job once, job 0 on
// the caller's thread, the others on threads of their own, and returns after all of them.
#include <pthread.h>
#include <stdbool.h>

#include "core/job_threads.h"
#include "tests/support/test.h"

typedef struct {
    int index, runs;
    pthread_t thread;
    double sum;  // some work, so that the threads overlap
} Job;

static void *job_run(void *arg) {
    Job *j = arg;
    j->thread = pthread_self();
    for (int i = 1; i <= 20000; i++) j->sum += (double)j->index / i;
    j->runs++;
    return NULL;
}

static void check_jobs(int n) {
    Job jobs[JOB_THREADS_MAX] = {{0}};
    for (int k = 0; k < n; k++) jobs[k].index = k;
    job_threads_run(job_run, jobs, sizeof jobs[0], n);
    int once = 0, own = 0;
    for (int k = 0; k < n; k++) {
        once += jobs[k].runs == 1;
        own += k > 0 && !pthread_equal(jobs[k].thread, pthread_self());
    }
    EXPECT(once == n, "%d jobs: %d ran exactly once", n, once);
    EXPECT(pthread_equal(jobs[0].thread, pthread_self()), "%d jobs: job 0 not on the caller's thread", n);
    EXPECT(own == n - 1, "%d jobs: %d of jobs 1 .. %d on threads of their own", n, own, n - 1);
    for (int k = n; k < JOB_THREADS_MAX; k++)
        EXPECT(jobs[k].runs == 0, "%d jobs: job %d beyond them ran", n, k);
}

static void test_every_job_once(void) {
    check_jobs(1);
    check_jobs(2);
    check_jobs(7);
    check_jobs(JOB_THREADS_MAX);
}

int main(void) {
    RUN(test_every_job_once);
    return test_summary();
}
