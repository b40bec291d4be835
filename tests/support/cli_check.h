// cli_check.h: checks of what a program run through tests/support/scratch.h left in its
// captured output, shared by the tests of bin/caption. A failed check is recorded
// (tests/support/test.h) at the caller's file and line.
//
//     int st = scratch_run(&sc, "train --data %s --out %s/bad --fine-tune conv5", data, sc.dir);
//     EXPECT_ONE_LINE_ERROR(&sc, st, "--encoder ARCH:FILE");
//     char *out = cli_slurp(&sc, "stdout.txt");   // "" when it cannot be read; free it
#ifndef TESTS_SUPPORT_CLI_CHECK_H
#define TESTS_SUPPORT_CLI_CHECK_H

#include "tests/support/scratch.h"

// The run's captured file NAME (stdout.txt, stderr.txt) as a malloc'd string; an empty one
// when it cannot be read, so that strstr and friends need no NULL check.
char *cli_slurp(const Scratch *s, const char *name);

// The last run failed (status non-zero) with one line on stderr that contains want.
#define EXPECT_ONE_LINE_ERROR(s, status, want) \
    cli_expect_one_line_error_((s), (status), (want), __FILE__, __LINE__)
void cli_expect_one_line_error_(const Scratch *s, int status, const char *want, const char *file,
                                int line);

#endif
