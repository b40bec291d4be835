// test_core_csvlog.c: core/csvlog.h on a resumed run (issue 56): the rows an interrupted run
// wrote after its last checkpoint, and a row cut short by a kill or a full disk, are
// dropped before the resumed run appends, so that no step appears twice.
// (The header and append basics are in tests/test_core_fileio.c.)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csvlog.h"
#include "core/error.h"
#include "core/fileio.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char dir[256];

static void expect_file(const char *path, const char *want) {
    char *got = scratch_read_text(path, NULL);
    EXPECT(got && strcmp(got, want) == 0, "got:\n%s\nwant:\n%s", got ? got : "(unreadable)", want);
    free(got);
}

// A log of steps 1..5 resumed from a checkpoint of step 3: rows 4 and 5 go, the new rows
// follow row 3.
static void test_resume_drops_rows_past_the_checkpoint(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/past.csv", dir);
    EXPECT(scratch_write_text(path, "step,loss\n1,0.5\n2,0.4\n3,0.3\n4,0.2\n5,0.1\n") == 0);
    CsvLog log;
    Error err = {{0}};
    EXPECT(csvlog_open_resume(&log, path, "step,loss", 3, &err) == 0, "%s", err.msg);
    csvlog_row(&log, (const double[]){4, 0.25}, 2);
    csvlog_close(&log);
    expect_file(path, "step,loss\n1,0.5\n2,0.4\n3,0.3\n4,0.25\n");
}

// Two rows of one step (a training row and a validation row) at the checkpoint's step
// both stay; a log with nothing past the step is left as it is.
static void test_resume_keeps_the_checkpoint_step(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/same.csv", dir);
    const char *text = "step,loss,bleu\n2,0.4,\n2,,0.1\n";
    EXPECT(scratch_write_text(path, text) == 0);
    CsvLog log;
    Error err = {{0}};
    EXPECT(csvlog_open_resume(&log, path, "step,loss,bleu", 2, &err) == 0, "%s", err.msg);
    csvlog_close(&log);
    expect_file(path, text);
}

// A last row without its newline (cut short) is dropped, as are the rows past the step,
// in a log under an older header too (moved under the new one).
static void test_resume_drops_a_torn_row(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/torn.csv", dir);
    EXPECT(scratch_write_text(path, "step,loss\n1,0.5\n2,0.4\n3,0.") == 0);
    CsvLog log;
    Error err = {{0}};
    EXPECT(csvlog_open_resume(&log, path, "step,loss", 5, &err) == 0, "%s", err.msg);
    csvlog_row(&log, (const double[]){3, 0.3}, 2);
    csvlog_close(&log);
    expect_file(path, "step,loss\n1,0.5\n2,0.4\n3,0.3\n");
    EXPECT(scratch_write_text(path, "step,loss\n1,0.5\n2,0.4\n3,0.3\n") == 0);
    EXPECT(csvlog_open_resume(&log, path, "step,loss,grad_norm", 2, &err) == 0, "%s", err.msg);
    csvlog_close(&log);
    expect_file(path, "step,loss,grad_norm\n1,0.5,\n2,0.4,\n");
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_core_csvlog")) return 1;
    RUN(test_resume_drops_rows_past_the_checkpoint);
    RUN(test_resume_keeps_the_checkpoint_step);
    RUN(test_resume_drops_a_torn_row);
    int rc = test_summary();
    if (rc == 0) scratch_remove(dir);
    return rc;
}
