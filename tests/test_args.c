// test_args.c: the flag parser: values, forms, bounds, one-line errors, --help, subcommands.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "tests/support/test.h"

typedef struct {
    int T;
    long steps;
    float lr;
    double beta;
    const char *out;
    bool resume;
    int split;
    bool T_given;
} Opts;

static const char *const splits[] = {"train", "val", "test", NULL};

// Fills the table for o; defaults are set by the caller.
static int parse(Opts *o, int argc, char **argv, Error *err) {
    ArgSpec specs[] = {
        ARG("T", ARG_INT, &o->T, "glimpses", .has_min = true, .min = 1, .has_max = true, .max = 256,
            .given = &o->T_given),
        ARG("steps", ARG_LONG, &o->steps, "training steps", .has_min = true, .min = 0),
        ARG("lr", ARG_FLOAT, &o->lr, "learning rate", .has_min = true, .min = 0, .min_exclusive = true),
        ARG("beta", ARG_DOUBLE, &o->beta, "a fraction", .has_min = true, .min = 0, .has_max = true,
            .max = 1, .max_exclusive = true),
        ARG("out", ARG_STRING, &o->out, "output folder", .metavar = "DIR"),
        ARG("resume", ARG_FLAG, &o->resume, "continue training"),
        ARG("split", ARG_CHOICE, &o->split, "which split", .choices = splits),
    };
    return args_parse(argc, argv, specs, ARGS_LEN(specs), "prog train [flags]", err);
}

static Opts defaults(void) {
    return (Opts){.T = 64, .steps = 100, .lr = 1e-3f, .beta = 0.5, .out = "runs/x", .split = 0};
}

static void test_args_defaults_kept(void) {
    Opts o = defaults();
    char *argv[] = {"train"};
    Error err = {{0}};
    EXPECT(parse(&o, 1, argv, &err) == ARGS_OK, "%s", err.msg);
    EXPECT(o.T == 64 && o.steps == 100 && o.lr == 1e-3f && o.beta == 0.5);
    EXPECT(strcmp(o.out, "runs/x") == 0 && !o.resume && o.split == 0 && !o.T_given);
}

static void test_args_both_forms(void) {
    Opts o = defaults();
    char *argv[] = {"train", "--T", "7", "--steps=123456789012", "--lr", "2.5e-4", "--beta=0.25",
                    "--out", "dir/a=b", "--resume", "--split=test"};
    Error err = {{0}};
    EXPECT(parse(&o, ARGS_LEN(argv), argv, &err) == ARGS_OK, "%s", err.msg);
    EXPECT(o.T == 7, "T = %d", o.T);
    EXPECT(o.steps == 123456789012L, "steps = %ld", o.steps);
    EXPECT(o.lr == 2.5e-4f, "lr = %g", (double)o.lr);
    EXPECT(o.beta == 0.25, "beta = %g", o.beta);
    EXPECT(strcmp(o.out, "dir/a=b") == 0, "out = %s", o.out);
    EXPECT(o.resume);
    EXPECT(o.split == 2, "split = %d", o.split);
    EXPECT(o.T_given);
}

static void test_args_flag_explicit_value_and_last_wins(void) {
    Opts o = defaults();
    o.resume = true;
    char *argv[] = {"train", "--resume=false", "--T", "3", "--T=5"};
    Error err = {{0}};
    EXPECT(parse(&o, ARGS_LEN(argv), argv, &err) == ARGS_OK, "%s", err.msg);
    EXPECT(!o.resume);
    EXPECT(o.T == 5, "T = %d", o.T);
}

// Each bad command line must give exactly the expected one-line message.
static void expect_error(int argc, char **argv, const char *want) {
    Opts o = defaults();
    Error err = {{0}};
    int r = parse(&o, argc, argv, &err);
    EXPECT(r == ARGS_ERROR, "'%s' accepted (r = %d)", want, r);
    EXPECT(strcmp(err.msg, want) == 0, "got '%s', want '%s'", err.msg, want);
    EXPECT(strchr(err.msg, '\n') == NULL, "message has a newline: %s", err.msg);
}

static void test_args_errors_name_the_flag(void) {
    char *a1[] = {"train", "--T", "abc"};
    expect_error(3, a1, "--T: expected an integer, got 'abc'");
    char *a2[] = {"train", "--T", "12x"};
    expect_error(3, a2, "--T: expected an integer, got '12x'");
    char *a3[] = {"train", "--lr", "0"};
    expect_error(3, a3, "--lr: must be > 0");
    char *a4[] = {"train", "--lr=-1e-3"};
    expect_error(2, a4, "--lr: must be > 0");
    char *a5[] = {"train", "--foo", "1"};
    expect_error(3, a5, "unknown flag --foo (see --help)");
    char *a6[] = {"train", "--out"};
    expect_error(2, a6, "--out: missing value");
    char *a7[] = {"train", "--out", "--resume"};
    expect_error(3, a7, "--out: missing value");
    char *a8[] = {"train", "extra"};
    expect_error(2, a8, "unexpected argument 'extra' (flags start with --)");
    char *a9[] = {"train", "--T", "0"};
    expect_error(3, a9, "--T: must be >= 1");
    char *a10[] = {"train", "--T", "257"};
    expect_error(3, a10, "--T: must be <= 256");
    char *a11[] = {"train", "--T", "99999999999999999999"};
    expect_error(3, a11, "--T: integer out of range, got '99999999999999999999'");
    char *a12[] = {"train", "--lr", "nan"};
    expect_error(3, a12, "--lr: expected a number, got 'nan'");
    char *a13[] = {"train", "--beta", "1"};
    expect_error(3, a13, "--beta: must be < 1");
    char *a14[] = {"train", "--split", "dev"};
    expect_error(3, a14, "--split: expected one of train, val, test, got 'dev'");
    char *a15[] = {"train", "--resume=maybe"};
    expect_error(2, a15, "--resume: expected true or false, got 'maybe'");
    char *a16[] = {"train", "--lr", "1e999"};
    expect_error(3, a16, "--lr: expected a number, got '1e999'");
    char *a17[] = {"train", "-x"};
    expect_error(2, a17, "unexpected argument '-x' (flags start with --)");
    char *a18[] = {"train", "--T="};
    expect_error(2, a18, "--T: expected an integer, got ''");
}

static void test_args_negative_number_is_a_value(void) {
    Opts o = defaults();
    char *argv[] = {"train", "--steps", "-1"};
    Error err = {{0}};
    EXPECT(parse(&o, 3, argv, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "--steps: must be >= 0") == 0, "%s", err.msg);
}

// --help prints to stdout: capture it through a pipe-free temporary file.
// A default computed at run time (--threads: every core) is shown with what it stands for,
// once: "(default 3 = every core this process may use, 1 <= x <= 256)".
static void test_args_help_default_note(void) {
    int threads = 3, T = 64;
    ArgSpec specs[] = {
        ARG("threads", ARG_INT, &threads, "workers", .has_min = true, .min = 1, .has_max = true,
            .max = 256, .default_note = "every core this process may use"),
        ARG("T", ARG_INT, &T, "glimpses"),
    };
    FILE *tmp = tmpfile();
    EXPECT(tmp != NULL);
    if (!tmp) return;
    args_print_usage(tmp, "prog", specs, ARGS_LEN(specs));
    char text[2048] = {0};
    rewind(tmp);
    size_t got = fread(text, 1, sizeof text - 1, tmp);
    fclose(tmp);
    EXPECT(got > 0);
    const char *line = strstr(text, "--threads N");
    EXPECT(line && strstr(line, "workers (default 3 = every core this process may use, 1 <= x <= 256)\n"),
           "%s", text);
    int defaults = 0;  // "default" on the --threads line: once
    for (const char *p = line; p && *p && *p != '\n'; p++) defaults += strncmp(p, "default", 7) == 0;
    EXPECT(defaults == 1, "%d defaults: %s", defaults, text);
    EXPECT(strstr(text, "--T N") && strstr(text, "glimpses (default 64)\n"), "%s", text);
}

static void test_args_help(void) {
    Opts o = defaults();
    char *argv[] = {"train", "--T", "bad", "--help"};
    Error err = {{0}};
    fflush(stdout);
    int saved = dup(1);
    FILE *tmp = tmpfile();
    EXPECT(tmp != NULL);
    if (!tmp) return;
    dup2(fileno(tmp), 1);
    int r = parse(&o, 4, argv, &err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    EXPECT(r == ARGS_HELP, "r = %d", r);
    char text[4096] = {0};
    rewind(tmp);
    size_t got = fread(text, 1, sizeof text - 1, tmp);
    fclose(tmp);
    EXPECT(got > 0);
    EXPECT(strstr(text, "usage: prog train [flags]") != NULL, "%s", text);
    EXPECT(strstr(text, "--T N") && strstr(text, "(default 64, 1 <= x <= 256)"), "%s", text);
    EXPECT(strstr(text, "--lr X") && strstr(text, "(default 0.001, > 0)"), "%s", text);
    EXPECT(strstr(text, "--out DIR") && strstr(text, "(default runs/x)"), "%s", text);
    EXPECT(strstr(text, "--split {train,val,test}") && strstr(text, "(default train)"), "%s", text);
    EXPECT(strstr(text, "--resume ") && strstr(text, "(default off)"), "%s", text);
    char *argv2[] = {"train", "-h"};
    fflush(stdout);
    saved = dup(1);
    FILE *sink = tmpfile();
    if (sink) dup2(fileno(sink), 1);
    r = parse(&o, 2, argv2, &err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    if (sink) fclose(sink);
    EXPECT(r == ARGS_HELP, "-h: r = %d", r);
}

static void test_args_subcommand(void) {
    static const char *const cmds[] = {"train", "eval", "generate"};
    int which = -1;
    Error err = {{0}};
    char *a1[] = {"draw", "eval", "--model", "m"};
    EXPECT(args_subcommand(4, a1, cmds, 3, &which, &err) == ARGS_OK && which == 1);
    char *a2[] = {"draw", "fit"};
    EXPECT(args_subcommand(2, a2, cmds, 3, &which, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "unknown command 'fit' (expected one of: train, eval, generate)") == 0,
           "%s", err.msg);
    char *a3[] = {"draw"};
    EXPECT(args_subcommand(1, a3, cmds, 3, &which, &err) == ARGS_ERROR);
    EXPECT(strcmp(err.msg, "missing command (expected one of: train, eval, generate)") == 0, "%s",
           err.msg);
    char *a4[] = {"draw", "--help"};
    EXPECT(args_subcommand(2, a4, cmds, 3, &which, &err) == ARGS_HELP);
}

// args_warn_unused: a line per reason for the flags given and not used, flags of one
// reason together in table order; flags not given, or used, are not named.
static void test_args_warn_unused(void) {
    const ArgUse rows[] = {
        {"T", true, false, "a cnn model takes no glimpses"},
        {"read", false, false, "a cnn model takes no glimpses"},
        {"lr", true, true, "never said"},
        {"loc-std", true, false, "only --hard samples where to look"},
        {"hidden", true, false, "a cnn model takes no glimpses"},
    };
    FILE *tmp = tmpfile();
    EXPECT(tmp != NULL);
    if (!tmp) return;
    int named = args_warn_unused(tmp, "prog train", rows, ARGS_LEN(rows));
    char text[1024] = {0};
    rewind(tmp);
    size_t got = fread(text, 1, sizeof text - 1, tmp);
    fclose(tmp);
    EXPECT(got > 0 && named == 3, "%d named", named);
    EXPECT(!strcmp(text, "prog train: --T, --hidden have no effect: a cnn model takes no glimpses\n"
                         "prog train: --loc-std has no effect: only --hard samples where to look\n"),
           "%s", text);
    tmp = tmpfile();
    EXPECT(tmp != NULL);
    if (!tmp) return;
    EXPECT(args_warn_unused(tmp, "prog train", rows + 2, 1) == 0 && ftell(tmp) == 0, "a used flag warned");
    fclose(tmp);
}

int main(void) {
    RUN(test_args_defaults_kept);
    RUN(test_args_both_forms);
    RUN(test_args_flag_explicit_value_and_last_wins);
    RUN(test_args_errors_name_the_flag);
    RUN(test_args_negative_number_is_a_value);
    RUN(test_args_help);
    RUN(test_args_help_default_note);
    RUN(test_args_subcommand);
    RUN(test_args_warn_unused);
    return test_summary();
}
