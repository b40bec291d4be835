// run_info.h: the record of a training run that reports show beside its results:
// DIR/run.json, written by `caption train`, `draw train` and `draw classify train` (two
// calls each).
//
//     {"program": "draw",
//      "invocations": [                      one per train command on DIR (a --resume adds one)
//        {"command": "draw train --data mnist --out 'runs/my run'",   shell-quoted
//         "argv": ["train", "--data", "mnist", "--out", "runs/my run"],
//         "commit": "11c4fe4a1b2c",          what the program was built from ("-modified":
//                                            the work tree had changes; "unknown": no git)
//         "date": "2026-11-25T09:30:00Z",    UTC, when the invocation started training
//         "cpu": "AMD EPYC 9R14 96-Core Processor",   /proc/cpuinfo's model name
//         "cpus_online": 2, "threads": 2,   threads per rank; "ranks": N under mpirun
//                                            (cli/train_dist.h), absent for one process
//         "gemm": "OpenBLAS 0.3.21 ... (OPENBLAS_CORETYPE=SKYLAKEX); kernels ...",   the
//                                            matrix multiply's library and kernels, and
//                                            where the choice came from (core/gemm.h)
//         "gemm_kernels": "small=openblas-skylakex,rows=...,step=packed-avx512",   the
//                                            same choice as ATTEND_GEMM takes it, to rerun
//                                            the invocation bit for bit
//         "status": "finished",              "running" until it ends: a killed run stays
//                                            "running"; "failed" when it stopped on an error;
//                                            "interrupted" when SIGINT or SIGTERM stopped it
//                                            (cli/train_run.h: train_process_begin)
//         "wall_seconds": 61.2,              begin to end of this invocation
//         "steps": 1200,                     the step count at its end (a total)
//         "images_per_s": 412.5,             its training throughput (train's own figure)
//         "cpu_seconds": 301.2,              caption train: CPU seconds of training so far,
//         "cpu_budget": 300}]}               over the invocations; its --cpu-budget
//
// The record is an aid, not a result: a failure to write it prints one warning line to
// stderr and training goes on (the run's own files are written as ever).
#ifndef CLI_RUN_INFO_H
#define CLI_RUN_INFO_H

typedef struct {
    char path[1100];  // DIR/run.json
    char program[32];
    double t0;        // timer_now() at begin
    int ok;           // 0 once a write failed: run_info_end then does nothing
    // Set before run_info_end (caption train): the CPU seconds the run's training has spent
    // over its invocations ("cpu_seconds", written when > 0) and its --cpu-budget
    // ("cpu_budget", written when > 0).
    double cpu_seconds, cpu_budget;
} RunInfo;

// Starts the record of one invocation: program "caption", "draw" or "draw classify" (the
// words before argv in the command line), argv[0..argc) the subcommand's arguments
// (argv[0] = "train"), threads the --threads value, ranks the MPI ranks (1 without
// mpirun; rank 0 writes the record). With append (a resumed run) the invocation joins
// those already in DIR/run.json when the same program wrote it; otherwise the file is
// replaced.
void run_info_begin(RunInfo *ri, const char *dir, const char *program, int argc, char **argv,
                    int threads, int ranks, int append);

// Ends it: status 0 (finished), RUN_INFO_INTERRUPTED (interrupted) or another (failed), the
// step count, the training throughput.
#define RUN_INFO_INTERRUPTED 130
void run_info_end(RunInfo *ri, int status, long steps, double images_per_s);

// The CPU model name from /proc/cpuinfo into buf (n bytes); "unknown" when there is none.
void run_info_cpu_model(char *buf, int n);

// The commit the program was built from (see above).
const char *run_info_commit(void);

#endif
