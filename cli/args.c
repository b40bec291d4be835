#include "cli/args.h"

#include "core/check.h"
#include "core/dist.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ArgSpec *find_spec(const ArgSpec *specs, int n, const char *name, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(specs[i].name) == len && strncmp(specs[i].name, name, len) == 0)
            return &specs[i];
    return NULL;
}

static bool is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

// "> 0", ">= 1", "<= 100": the bound that failed, as the user reads it.
static int bound_error(const ArgSpec *s, double v, Error *err) {
    if (s->has_min && (s->min_exclusive ? !(v > s->min) : !(v >= s->min)))
        return error_set(err, "--%s: must be %s %.15g", s->name, s->min_exclusive ? ">" : ">=", s->min);
    if (s->has_max && (s->max_exclusive ? !(v < s->max) : !(v <= s->max)))
        return error_set(err, "--%s: must be %s %.15g", s->name, s->max_exclusive ? "<" : "<=", s->max);
    return 0;
}

static int parse_integer(const ArgSpec *s, const char *val, long *out, long lo, long hi,
                         Error *err) {
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (end == val || *end != 0 || val[0] == ' ' || val[0] == '\t')
        return error_set(err, "--%s: expected an integer, got '%s'", s->name, val);
    if (errno == ERANGE || v < lo || v > hi)
        return error_set(err, "--%s: integer out of range, got '%s'", s->name, val);
    if (bound_error(s, (double)v, err)) return -1;
    *out = v;
    return 0;
}

static int parse_real(const ArgSpec *s, const char *val, double *out, bool single, Error *err) {
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (end == val || *end != 0 || val[0] == ' ' || val[0] == '\t' || !isfinite(v))
        return error_set(err, "--%s: expected a number, got '%s'", s->name, val);
    if (errno == ERANGE && fabs(v) > 1)
        return error_set(err, "--%s: number out of range, got '%s'", s->name, val);
    if (single && fabs(v) > 3.4028234663852886e38)
        return error_set(err, "--%s: number out of range for a float, got '%s'", s->name, val);
    if (bound_error(s, v, err)) return -1;
    *out = v;
    return 0;
}

static void list_choices(char *buf, size_t cap, const char *const *choices) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; choices[i]; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", choices[i]);
        if (w < 0 || (size_t)w >= cap - len) break;
        len += (size_t)w;
    }
}

static int set_value(const ArgSpec *s, const char *val, Error *err) {
    switch (s->type) {
    case ARG_INT: {
        long v;
        if (parse_integer(s, val, &v, INT_MIN, INT_MAX, err)) return -1;
        *(int *)s->dest = (int)v;
        return 0;
    }
    case ARG_LONG: {
        long v;
        if (parse_integer(s, val, &v, LONG_MIN, LONG_MAX, err)) return -1;
        *(long *)s->dest = v;
        return 0;
    }
    case ARG_FLOAT: {
        double v;
        if (parse_real(s, val, &v, true, err)) return -1;
        *(float *)s->dest = (float)v;
        return 0;
    }
    case ARG_DOUBLE: {
        double v;
        if (parse_real(s, val, &v, false, err)) return -1;
        *(double *)s->dest = v;
        return 0;
    }
    case ARG_STRING:
        if (val[0] == 0) return error_set(err, "--%s: empty value", s->name);
        *(const char **)s->dest = val;
        return 0;
    case ARG_FLAG:
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0 || strcmp(val, "yes") == 0) {
            *(bool *)s->dest = true;
        } else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0 || strcmp(val, "no") == 0) {
            *(bool *)s->dest = false;
        } else {
            return error_set(err, "--%s: expected true or false, got '%s'", s->name, val);
        }
        return 0;
    case ARG_CHOICE: {
        CHECK(s->choices, "--%s: ARG_CHOICE needs .choices", s->name);
        for (int i = 0; s->choices[i]; i++) {
            if (strcmp(s->choices[i], val) == 0) {
                *(int *)s->dest = i;
                return 0;
            }
        }
        char list[256];
        list_choices(list, sizeof list, s->choices);
        return error_set(err, "--%s: expected one of %s, got '%s'", s->name, list, val);
    }
    }
    CHECK(0, "--%s: unknown ArgType %d", s->name, (int)s->type);
    return -1;
}

// Parses every flag in argv[1..argc), marking seen[k] for each specs[k] given.
static int parse_flags(int argc, char **argv, const ArgSpec *specs, int n, bool *seen,
                       Error *err) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (strcmp(a, "--") == 0 && i + 1 < argc)
                return error_set(err, "unexpected argument '%s' (flags start with --)", argv[i + 1]);
            if (strcmp(a, "--") == 0) continue;
            return error_set(err, "unexpected argument '%s' (flags start with --)", a);
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const ArgSpec *s = find_spec(specs, n, name, len);
        if (!s) return error_set(err, "unknown flag --%.*s (see --help)", (int)len, name);
        const char *val;
        if (eq) {
            val = eq + 1;
        } else if (s->type == ARG_FLAG) {
            val = "true";
        } else {
            // A following "--flag" is not a value; "-1" is (numbers may be negative).
            if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)
                return error_set(err, "--%s: missing value", s->name);
            val = argv[++i];
        }
        if (set_value(s, val, err)) return ARGS_ERROR;
        if (s->given) *s->given = true;
        seen[s - specs] = true;
    }
    return ARGS_OK;
}

int args_parse(int argc, char **argv, const ArgSpec *specs, int n, const char *synopsis,
               Error *err) {
    CHECK(argc >= 0 && n >= 0 && (n == 0 || specs));
    for (int i = 0; i < n; i++) CHECK(specs[i].name && specs[i].dest, "flag table entry %d", i);
    // --help wins wherever it is, even after a bad flag: the user asked how to call us.
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (is_help(argv[i])) {
            if (args_reporting_process()) args_print_usage(stdout, synopsis, specs, n);
            return ARGS_HELP;
        }
    }
    bool *seen = xcalloc((size_t)(n > 0 ? n : 1), sizeof *seen);
    int r = parse_flags(argc, argv, specs, n, seen, err);
    for (int k = 0; k < n && r == ARGS_OK; k++)
        if (specs[k].required && !seen[k]) r = error_set(err, "--%s: missing (required)", specs[k].name);
    free(seen);
    return r;
}

static void format_value(char *buf, size_t cap, const ArgSpec *s) {
    switch (s->type) {
    case ARG_INT: snprintf(buf, cap, "%d", *(const int *)s->dest); return;
    case ARG_LONG: snprintf(buf, cap, "%ld", *(const long *)s->dest); return;
    case ARG_FLOAT: snprintf(buf, cap, "%g", (double)*(const float *)s->dest); return;
    case ARG_DOUBLE: snprintf(buf, cap, "%g", *(const double *)s->dest); return;
    case ARG_STRING: {
        const char *v = *(const char *const *)s->dest;
        snprintf(buf, cap, "%s", v ? v : "none");
        return;
    }
    case ARG_FLAG: snprintf(buf, cap, "%s", *(const bool *)s->dest ? "on" : "off"); return;
    case ARG_CHOICE: {
        int k = *(const int *)s->dest, count = 0;
        while (s->choices && s->choices[count]) count++;
        snprintf(buf, cap, "%s", k >= 0 && k < count ? s->choices[k] : "none");
        return;
    }
    }
    snprintf(buf, cap, "?");
}

static const char *metavar(const ArgSpec *s) {
    if (s->metavar) return s->metavar;
    switch (s->type) {
    case ARG_INT:
    case ARG_LONG: return "N";
    case ARG_FLOAT:
    case ARG_DOUBLE: return "X";
    case ARG_STRING: return "S";
    case ARG_FLAG: return "";
    case ARG_CHOICE: return NULL;  // shown as {a,b,c}
    }
    return "";
}

void args_print_usage(FILE *f, const char *synopsis, const ArgSpec *specs, int n) {
    fprintf(f, "usage: %s\n", synopsis ? synopsis : "[flags]");
    if (n > 0) fprintf(f, "\nflags:\n");
    for (int i = 0; i < n; i++) {
        const ArgSpec *s = &specs[i];
        char left[160], def[128], range[96] = "";
        const char *mv = metavar(s);
        if (s->type == ARG_CHOICE) {
            char list[128];
            list_choices(list, sizeof list, s->choices);
            for (char *c = list; *c; c++) if (*c == ' ') memmove(c, c + 1, strlen(c));
            snprintf(left, sizeof left, "--%s {%s}", s->name, list);
        } else {
            snprintf(left, sizeof left, "--%s%s%s", s->name, mv[0] ? " " : "", mv);
        }
        format_value(def, sizeof def, s);
        if (s->has_min && s->has_max)
            snprintf(range, sizeof range, ", %g %s x %s %g", s->min, s->min_exclusive ? "<" : "<=",
                     s->max_exclusive ? "<" : "<=", s->max);
        else if (s->has_min)
            snprintf(range, sizeof range, ", %s %g", s->min_exclusive ? ">" : ">=", s->min);
        else if (s->has_max)
            snprintf(range, sizeof range, ", %s %g", s->max_exclusive ? "<" : "<=", s->max);
        if (s->required)
            fprintf(f, "  %-24s %s (required%s)\n", left, s->help ? s->help : "", range);
        else
            fprintf(f, "  %-24s %s (default %s%s%s%s)\n", left, s->help ? s->help : "", def,
                    s->default_note ? " = " : "", s->default_note ? s->default_note : "", range);
    }
    fprintf(f, "  %-24s %s\n", "--help, -h", "show this text");
}

int args_subcommand(int argc, char **argv, const char *const *names, int n, int *which,
                    Error *err) {
    CHECK(names && n > 0 && which);
    char list[256];
    size_t len = 0;
    list[0] = 0;
    for (int i = 0; i < n; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
    }
    if (argc < 2) return error_set(err, "missing command (expected one of: %s)", list);
    if (is_help(argv[1])) return ARGS_HELP;
    for (int i = 0; i < n; i++) {
        if (strcmp(argv[1], names[i]) == 0) {
            *which = i;
            return ARGS_OK;
        }
    }
    return error_set(err, "unknown command '%s' (expected one of: %s)", argv[1], list);
}

int args_parse_for_command(int argc, char **argv, const ArgSpec *specs, int n,
                           const char *synopsis, const char *prefix, int *exit_code) {
    Error err;
    int r = args_parse(argc, argv, specs, n, synopsis, &err);
    if (r == ARGS_HELP) {
        *exit_code = 0;
        return 1;
    }
    if (r == ARGS_ERROR) {
        if (!args_reporting_process())
            ;  // rank 0 says it
        else if (prefix)
            fprintf(stderr, "%s: %s\n", prefix, err.msg);
        else
            fprintf(stderr, "%s\n", err.msg);
        *exit_code = 2;
        return 1;
    }
    return 0;
}

bool args_reporting_process(void) {
    int rank, size = dist_launched(&rank);
    return size <= 1 || rank == 0;
}

int args_warn_unused(FILE *out, const char *command, const ArgUse *rows, int n) {
    int named = 0;
    for (int i = 0; i < n; i++) {
        if (!rows[i].given || rows[i].used) continue;
        bool said = false;  // an earlier row of the same reason had the line
        for (int j = 0; j < i && !said; j++)
            said = rows[j].given && !rows[j].used && !strcmp(rows[j].why, rows[i].why);
        if (said) continue;
        int k = 0;
        fprintf(out, "%s: ", command);
        for (int j = i; j < n; j++)
            if (rows[j].given && !rows[j].used && !strcmp(rows[j].why, rows[i].why))
                fprintf(out, "%s--%s", k++ ? ", " : "", rows[j].flag);
        fprintf(out, " %s no effect: %s\n", k > 1 ? "have" : "has", rows[i].why);
        named += k;
    }
    return named;
}
