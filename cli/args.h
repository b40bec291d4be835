// args.h: the command-line flag parser shared by bin/draw and bin/caption.
//
// A program describes its flags in a table of ArgSpec and calls args_parse. Each flag is
// "--name value" or "--name=value"; a bool flag is "--name" alone (or "--name=true|false|1|0").
// Destinations hold the defaults beforehand; the parser only overwrites the ones given.
// Bad input never exits: args_parse returns ARGS_ERROR with ONE line in err, naming the flag:
//     --T: expected an integer, got 'abc'
//     --lr: must be > 0
//     unknown flag --foo (see --help)
//     --out: missing value
//     --out: missing (required)         (a flag with .required = true not given)
//     unexpected argument 'extra' (flags start with --)
// "--help" or "-h" anywhere prints the usage (synopsis, then one line per flag with its
// default and range, or "(required)") to stdout and returns ARGS_HELP: the caller then
// exits 0. Under mpirun with several ranks, rank 0 alone prints usage and flag errors
// (args_reporting_process); every rank returns the same. Required flags are checked after
// every given flag parsed: a bad value is reported before a missing required flag; of
// several missing, the first in the table.
//
// Example:
//     int T = 64; float lr = 1e-3f; const char *out = "runs/draw"; bool resume = false;
//     int split = 0; static const char *const splits[] = {"train", "test", NULL};
//     ArgSpec specs[] = {
//         ARG("T", ARG_INT, &T, "number of glimpses", .has_min = true, .min = 1),
//         ARG("lr", ARG_FLOAT, &lr, "learning rate", .has_min = true, .min = 0, .min_exclusive = true),
//         ARG("out", ARG_STRING, &out, "output folder", .metavar = "DIR", .required = true),
//         ARG("resume", ARG_FLAG, &resume, "continue from OUT/model.safetensors"),
//         ARG("split", ARG_CHOICE, &split, "which split", .choices = splits),
//     };
//     int r = args_parse(argc - 1, argv + 1, specs, ARGS_LEN(specs), "bin/draw train [flags]", &err);
//     if (r == ARGS_HELP) return 0;
//     if (r == ARGS_ERROR) { fprintf(stderr, "%s\n", err.msg); return 2; }
//
// Limits: no short flags other than -h, no flag bundling, no repeated-value lists (the last
// occurrence of a flag wins). argv[0] is the program or subcommand name and is skipped.
// Strings are not copied: a string destination points into argv.
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#include "core/error.h"

typedef enum {
    ARG_INT,     // dest: int *
    ARG_LONG,    // dest: long *
    ARG_FLOAT,   // dest: float *   (finite values only)
    ARG_DOUBLE,  // dest: double *  (finite values only)
    ARG_STRING,  // dest: const char **  (points into argv)
    ARG_FLAG,    // dest: bool *  ("--name" sets true)
    ARG_CHOICE,  // dest: int *, the index into .choices of the chosen string
} ArgType;

typedef struct {
    const char *name;  // without the leading "--", e.g. "lr"
    ArgType type;
    void *dest;        // see ArgType; holds the default on entry
    const char *help;  // one line, no trailing period needed
    // Numeric bounds (ARG_INT, ARG_LONG, ARG_FLOAT, ARG_DOUBLE), checked when has_* is set.
    bool has_min, has_max;
    double min, max;
    bool min_exclusive, max_exclusive;  // "> min" / "< max" instead of ">=" / "<="
    const char *const *choices;         // ARG_CHOICE: NULL-terminated list of names
    const char *metavar;                // shown in usage ("N", "PATH"); NULL: from the type
    bool *given;                        // optional: set true when the flag appears
    bool required;                      // args_parse fails with "--NAME: missing (required)"
                                        // unless the flag appears; usage says "(required)"
    const char *default_note;           // optional: what a default computed at run time
                                        // stands for; usage says "(default 2 = NOTE, ...)"
} ArgSpec;

// One table entry: name, type, destination, help, then optional designated fields
// (.has_min = true, .min = 1, .choices = list, ...). Expands to designated initializers, so
// leaving fields out does not trip -Wmissing-field-initializers.
#define ARG(name_, type_, dest_, help_, ...) \
    {.name = (name_), .type = (type_), .dest = (dest_), .help = (help_), __VA_ARGS__}

enum { ARGS_ERROR = -1, ARGS_OK = 0, ARGS_HELP = 1 };

#define ARGS_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

// Parses argv[1..argc) against specs[0..n). Returns ARGS_OK, ARGS_HELP (usage printed to
// stdout) or ARGS_ERROR (err filled with one line). Destinations of flags given before an
// error may already be overwritten.
int args_parse(int argc, char **argv, const ArgSpec *specs, int n, const char *synopsis,
               Error *err);

// args_parse as a subcommand's first step: returns 1 when the subcommand should return
// *exit_code right away (0 after --help; 2 after a bad flag, whose line went to stderr as
// "PREFIX: line", or the line alone when prefix is NULL), 0 when it should go on.
int args_parse_for_command(int argc, char **argv, const ArgSpec *specs, int n,
                           const char *synopsis, const char *prefix, int *exit_code);

// 1 when this process prints usage and flag errors: always, except under mpirun with
// several ranks, where rank 0 alone does. Every rank parses the same command line and fails
// the same way, with the same exit status, so one line says it (a rank given other flags
// through mpirun's `:` form, and failing alone, is named by mpirun's own line instead).
// Reads the launcher's environment only (core/dist.h: dist_launched).
bool args_reporting_process(void);

// A command's flags that a run may not use: one row per flag and reason, in a table the
// command fills from its settings once it knows them (a model kind, a switch, a resumed
// checkpoint's configuration). A flag given that the run does not use is warned of, so
// that a typo or a misunderstanding is not taken silently:
//     ArgUse uses[] = {
//         {"T", given.T, glimpse, "a cnn model takes no glimpses"},
//         {"loc-std", given.loc_std, hard, "only --hard samples where to look"},
//     };
//     args_warn_unused(stderr, "draw classify train", uses, ARGS_LEN(uses));
typedef struct {
    const char *flag;  // without the leading "--"
    bool given;        // the flag was on the command line
    bool used;         // the run uses its value
    const char *why;   // why it is not used (when !used)
} ArgUse;

// One line on out per reason, for the rows given and not used, their flags in table order:
//     "draw classify train: --T, --hidden have no effect: a cnn model takes no glimpses"
// Returns how many flags it named.
int args_warn_unused(FILE *out, const char *command, const ArgUse *rows, int n);

// Prints "usage: SYNOPSIS" and one line per flag, with its current value as the default.
void args_print_usage(FILE *f, const char *synopsis, const ArgSpec *specs, int n);

// Recognises the subcommand argv[1] among names[0..n). Returns ARGS_OK with *which set,
// ARGS_HELP when argv[1] is --help or -h (nothing printed: the caller prints its overview),
// or ARGS_ERROR with one line: "missing command (expected one of: train, eval, generate)"
// or "unknown command 'foo' (expected one of: ...)".
int args_subcommand(int argc, char **argv, const char *const *names, int n, int *which,
                    Error *err);

#endif
