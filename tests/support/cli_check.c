// cli_check.c: see cli_check.h.
#include "tests/support/cli_check.h"

#include <stdlib.h>
#include <string.h>

#include "tests/support/test.h"

char *cli_slurp(const Scratch *s, const char *name) {
    char *text = scratch_read(s, name, NULL);
    return text ? text : calloc(1, 1);
}

void cli_expect_one_line_error_(const Scratch *s, int status, const char *want, const char *file,
                                int line) {
    char *err = cli_slurp(s, "stderr.txt");
    if (status == 0) test_fail_(file, line, "exit status 0 for a bad command");
    if (scratch_count_lines(err) != 1) test_fail_(file, line, "stderr should be one line, got: %s", err);
    if (!strstr(err, want)) test_fail_(file, line, "stderr '%s' does not mention '%s'", err, want);
    free(err);
}
