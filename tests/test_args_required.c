// test_args_required.c: required flags in the flag parser (cli/args.h, .required): a
// missing one is reported by args_parse itself as "--NAME: missing (required)", in table
// order; both flag forms satisfy it; a bad value given earlier wins over a missing flag;
// --help still works without it and the usage marks it "(required)" instead of a default.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "tests/support/test.h"

typedef struct {
    const char *model, *out;
    int count;
    bool quiet;
} Opts;

static int parse(Opts *o, int argc, char **argv, Error *err) {
    ArgSpec specs[] = {
        ARG("model", ARG_STRING, &o->model, "checkpoint", .metavar = "PATH", .required = true),
        ARG("count", ARG_INT, &o->count, "samples", .has_min = true, .min = 1),
        ARG("out", ARG_STRING, &o->out, "output folder", .metavar = "DIR", .required = true),
        ARG("quiet", ARG_FLAG, &o->quiet, "no progress bar"),
    };
    return args_parse(argc, argv, specs, ARGS_LEN(specs), "prog generate [flags]", err);
}

static void test_required_given(void) {
    Opts o = {.count = 4};
    char *argv[] = {"generate", "--out=dir", "--quiet", "--model", "m.safetensors"};
    Error err = {{0}};
    EXPECT(parse(&o, ARGS_LEN(argv), argv, &err) == ARGS_OK, "%s", err.msg);
    EXPECT(o.model && strcmp(o.model, "m.safetensors") == 0 && o.out && strcmp(o.out, "dir") == 0);
    EXPECT(o.count == 4 && o.quiet);
}

static void test_required_missing(void) {
    Opts o = {.count = 4};
    Error err = {{0}};
    char *a1[] = {"generate", "--model", "m"};
    EXPECT(parse(&o, ARGS_LEN(a1), a1, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "--out: missing (required)") == 0, "%s", err.msg);
    // Both missing: the first in the table is named.
    o = (Opts){.count = 4};
    char *a2[] = {"generate", "--count", "2"};
    EXPECT(parse(&o, ARGS_LEN(a2), a2, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "--model: missing (required)") == 0, "%s", err.msg);
    char *a3[] = {"generate"};
    EXPECT(parse(&o, 1, a3, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "--model: missing (required)") == 0, "%s", err.msg);
    // A default in the destination does not count as given.
    o = (Opts){.model = "default.safetensors", .out = "runs/x", .count = 4};
    char *a4[] = {"generate", "--out", "o"};
    EXPECT(parse(&o, ARGS_LEN(a4), a4, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "--model: missing (required)") == 0, "%s", err.msg);
}

static void test_bad_value_before_missing(void) {
    Opts o = {.count = 4};
    Error err = {{0}};
    char *a1[] = {"generate", "--count", "0"};
    EXPECT(parse(&o, ARGS_LEN(a1), a1, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "--count: must be >= 1") == 0, "%s", err.msg);
    char *a2[] = {"generate", "--out"};
    EXPECT(parse(&o, ARGS_LEN(a2), a2, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "--out: missing value") == 0, "%s", err.msg);
    char *a3[] = {"generate", "--bogus", "1"};
    EXPECT(parse(&o, ARGS_LEN(a3), a3, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "unknown flag --bogus (see --help)") == 0, "%s", err.msg);
}

// The usage line of NAME (from "  --NAME" to the end of its line) in text, or "".
static void usage_line(char *dst, size_t cap, const char *text, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "  --%s ", name);
    const char *p = strstr(text, key);
    dst[0] = 0;
    if (!p) return;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= cap) n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = 0;
}

static void test_help_marks_required(void) {
    // --help without the required flags: usage on stdout, ARGS_HELP.
    Opts o = {.count = 4};
    Error err = {{0}};
    char *argv[] = {"generate", "--help"};
    fflush(stdout);
    int saved = dup(1);
    FILE *sink = tmpfile();
    EXPECT(sink != NULL);
    if (!sink) return;
    dup2(fileno(sink), 1);
    int r = parse(&o, 2, argv, &err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    EXPECT(r == ARGS_HELP, "r = %d (%s)", r, err.msg);
    char text[4096] = {0};
    rewind(sink);
    size_t got = fread(text, 1, sizeof text - 1, sink);
    fclose(sink);
    EXPECT(got > 0);
    char line[256];
    usage_line(line, sizeof line, text, "model");
    EXPECT(strstr(line, "--model PATH") && strstr(line, "checkpoint (required)") && !strstr(line, "default"),
           "model line: '%s' in %s", line, text);
    usage_line(line, sizeof line, text, "out");
    EXPECT(strstr(line, "(required)") && !strstr(line, "default"), "out line: '%s'", line);
    usage_line(line, sizeof line, text, "count");
    EXPECT(strstr(line, "(default 4, >= 1)") && !strstr(line, "required"), "count line: '%s'", line);
}

int main(void) {
    RUN(test_required_given);
    RUN(test_required_missing);
    RUN(test_bad_value_before_missing);
    RUN(test_help_marks_required);
    return test_summary();
}
