// Tests of core/dist: the one-process stand-in, the shares, the fixed-order sum, and, under
// mpirun, the fixed-order allreduce of 2 and 3 ranks (this program starts itself as the
// ranks: `test_core_dist --ranks` is the rank side).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dist.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static void test_dist_alone_is_rank_zero_of_one(void) {
    unsetenv("OMPI_COMM_WORLD_SIZE");
    Dist d;
    Error err;
    EXPECT(dist_init(&d, &err) == 0, "%s", err.msg);
    EXPECT(d.rank == 0 && d.size == 1 && d.mpi == 0, "rank %d size %d mpi %d", d.rank, d.size,
           d.mpi);
    float x[3] = {1.5f, -2.0f, 3.25f};
    EXPECT(dist_allreduce_sum(&d, x, 3, &err) == 0, "%s", err.msg);
    EXPECT(x[0] == 1.5f && x[1] == -2.0f && x[2] == 3.25f, "one rank changed the buffer");
    double y[2] = {4.0, 5.0};
    EXPECT(dist_allreduce_sum_f64(&d, y, 2, &err) == 0 && y[0] == 4.0 && y[1] == 5.0);
    EXPECT(dist_any_failed(&d, 0) == 0 && dist_any_failed(&d, -1) == -1);
    EXPECT(dist_is_root(&d));
    dist_finalize(&d);
}

static void test_dist_shares_cover_in_order(void) {
    for (int size = 1; size <= 7; size++)
        for (int n = 0; n <= 23; n++) {
            int next = 0;
            for (int r = 0; r < size; r++) {
                int b, c;
                dist_share_of(r, size, n, &b, &c);
                EXPECT(b == next, "size %d n %d rank %d begins at %d, expected %d", size, n, r, b,
                       next);
                EXPECT(c == n / size || c == n / size + 1, "size %d n %d rank %d count %d", size,
                       n, r, c);
                next = b + c;
            }
            EXPECT(next == n, "size %d: shares cover %d of %d", size, next, n);
        }
}

// The sum is (((p0 + p1) + p2) + p3): values chosen so another order gives other bits.
static void test_dist_sum_is_in_rank_order(void) {
    const float p0[2] = {1e8f, 1.0f}, p1[2] = {1.0f, 1e8f}, p2[2] = {-1e8f, -1e8f},
                p3[2] = {0.5f, 0.5f};
    const float *parts[4] = {p0, p1, p2, p3};
    float out[2];
    dist_sum_in_rank_order(out, parts, 4, 2);
    for (int i = 0; i < 2; i++) {
        float want = ((parts[0][i] + parts[1][i]) + parts[2][i]) + parts[3][i];
        EXPECT(out[i] == want, "element %d: %.9g, rank order gives %.9g", i, out[i], want);
    }
    EXPECT(out[0] == 0.5f && out[1] == 0.5f, "out = %g %g", out[0], out[1]);
}

// Rank side: rank r's buffer holds values whose sum depends on the order of addition; every
// rank checks it got the rank-order sum (bit for bit) and prints one line.
static int ranks_main(void) {
    Dist d;
    Error err;
    if (dist_init(&d, &err)) {
        printf("rank ?: %s\n", err.msg);
        return 1;
    }
    const size_t n = 1001;  // not a multiple of the rank count: unequal chunks
    float *buf = malloc(n * sizeof *buf);
    float **parts = malloc((size_t)d.size * sizeof *parts);
    for (int r = 0; r < d.size; r++) {
        parts[r] = malloc(n * sizeof **parts);
        for (size_t i = 0; i < n; i++)
            parts[r][i] = (float)((r % 2 ? -1.0 : 1.0) * (1.0 + (double)i * 1e-3) *
                                  (r == 0 ? 1e7 : 1.0 + 0.37 * r));
    }
    memcpy(buf, parts[d.rank], n * sizeof *buf);
    int bad = -1;
    if (dist_allreduce_sum(&d, buf, n, &err)) {
        printf("rank %d: %s\n", d.rank, err.msg);
    } else {
        float *want = malloc(n * sizeof *want);
        dist_sum_in_rank_order(want, (const float *const *)parts, d.size, n);
        bad = 0;
        for (size_t i = 0; i < n; i++) bad += memcmp(&want[i], &buf[i], sizeof(float)) != 0;
        free(want);
        double loss[2] = {d.rank + 1.0, 0.5};
        dist_allreduce_sum_f64(&d, loss, 2, &err);
        double want_loss = d.size * (d.size + 1) / 2.0;
        printf("rank %d of %d: %d elements differ; loss %g (want %g) %g\n", d.rank, d.size, bad,
               loss[0], want_loss, loss[1]);
        if (loss[0] != want_loss || loss[1] != 0.5 * d.size) bad++;
        // Gather of ranges: rank r owns items [3r, 3r + r + 1) of pairs of ints (unequal
        // lengths, one gap-free run), fills them with (r, i) and gets everyone's.
        int begins[8], counts[8], total = 0;
        for (int r = 0; r < d.size && r < 8; r++) {
            begins[r] = total;
            counts[r] = r + 1;
            total += r + 1;
        }
        int *items = calloc((size_t)total * 2, sizeof *items);
        for (int i = begins[d.rank]; i < begins[d.rank] + counts[d.rank]; i++)
            items[2 * i] = d.rank, items[2 * i + 1] = i;
        int gather_bad = dist_allgather_ranges(&d, items, 2 * sizeof *items, begins, counts, &err);
        for (int r = 0; r < d.size && !gather_bad; r++)
            for (int i = begins[r]; i < begins[r] + counts[r]; i++)
                gather_bad += items[2 * i] != r || items[2 * i + 1] != i;
        printf("rank %d of %d: gather %s\n", d.rank, d.size, gather_bad ? "wrong" : "right");
        bad += gather_bad != 0;
        free(items);
        // Outcomes: none failed; all failed alike; all failed, the messages differ; one failed.
        char own[32];
        snprintf(own, sizeof own, "rank %d's reason", d.rank);
        const int last = d.rank == d.size - 1;
        int outcome_bad = (dist_compare_outcomes(&d, 0, NULL) != DIST_ALL_OK) +
                          (dist_compare_outcomes(&d, -1, "same") != DIST_SAME_FAILURE) +
                          (dist_compare_outcomes(&d, -1, own) != DIST_SOME_FAILED) +
                          (dist_compare_outcomes(&d, last ? -1 : 0, "same") != DIST_SOME_FAILED);
        printf("rank %d of %d: outcomes %s\n", d.rank, d.size, outcome_bad ? "wrong" : "right");
        bad += outcome_bad != 0;
    }
    for (int r = 0; r < d.size; r++) free(parts[r]);
    free(parts);
    free(buf);
    int failed = dist_any_failed(&d, bad == 0 ? 0 : -1);
    dist_finalize(&d);
    return failed ? 1 : 0;
}

static char self_path[512];  // fits Scratch.program (600)

static void run_ranks(int np) {
    Scratch sc;
    if (scratch_open(&sc, "test_core_dist", "unused")) {
        EXPECT(0, "no scratch folder");
        return;
    }
    snprintf(sc.program, sizeof sc.program, "%s", self_path);
    int status = scratch_run_mpi(&sc, np, "--ranks");
    char *out = scratch_read(&sc, "stdout.txt", NULL);
    char *err = scratch_read(&sc, "stderr.txt", NULL);
    EXPECT(status == 0, "%d ranks: status %d; stdout: %s; stderr: %s", np, status,
           out ? out : "", err ? err : "");
    EXPECT(scratch_count_lines(out) == 3 * np, "%d ranks printed: %s", np, out ? out : "");
    for (int r = 0; r < np && out; r++) {
        char want[128];
        snprintf(want, sizeof want, "rank %d of %d: 0 elements differ", r, np);
        EXPECT(strstr(out, want), "missing \"%s\" in: %s", want, out);
        snprintf(want, sizeof want, "rank %d of %d: gather right", r, np);
        EXPECT(strstr(out, want), "missing \"%s\" in: %s", want, out);
        snprintf(want, sizeof want, "rank %d of %d: outcomes right", r, np);
        EXPECT(strstr(out, want), "missing \"%s\" in: %s", want, out);
    }
    free(out);
    free(err);
    scratch_remove(sc.dir);
}

// One process: its own outcome.
static void test_dist_outcome_alone(void) {
    Dist d = {.rank = 0, .size = 1};
    EXPECT(dist_compare_outcomes(&d, 0, NULL) == DIST_ALL_OK, "success read as a failure");
    EXPECT(dist_compare_outcomes(&d, -1, "x") == DIST_SAME_FAILURE, "failure not seen");
}

static void test_dist_build_has_mpi(void) {
    EXPECT(dist_available(), "this build has no MPI support: run `make deps` and rebuild");
}

static void test_dist_two_ranks_sum_in_rank_order(void) { run_ranks(2); }
static void test_dist_three_ranks_sum_in_rank_order(void) { run_ranks(3); }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--ranks") == 0) return ranks_main();
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) snprintf(self_path, sizeof self_path, "%s", argv[0]);
    RUN(test_dist_alone_is_rank_zero_of_one);
    RUN(test_dist_shares_cover_in_order);
    RUN(test_dist_sum_is_in_rank_order);
    RUN(test_dist_outcome_alone);
    RUN(test_dist_build_has_mpi);
    RUN(test_dist_two_ranks_sum_in_rank_order);
    RUN(test_dist_three_ranks_sum_in_rank_order);
    return test_summary();
}
