// run_info.c: see run_info.h. JSON through cJSON, written atomically (core/fileio.h).
#include "cli/run_info.h"

#include <cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/text_escape.h"
#include "core/timer.h"

#ifndef ATTEND_COMMIT
#define ATTEND_COMMIT "unknown"  // the Makefile passes the real one
#endif

const char *run_info_commit(void) { return ATTEND_COMMIT; }

void run_info_cpu_model(char *buf, int n) { cpu_model_name(buf, n); }

// Appends word to s (cap bytes, 0-terminated) as one shell word: bare when it holds only
// characters no shell treats specially, else in single quotes ('\'' for a quote).
// A word holding control characters or bytes that are not UTF-8 is written in bash's
// $'...' quoting with core/text_escape.h's field escapes (\\ \t \n \r \xNN, and \' for a
// quote), which bash reads back to the same bytes; the command line stays valid UTF-8.
static int append_ansi_c_word(char *s, size_t cap, const char *word) {
    int plain = text_is_utf8(word);
    for (const unsigned char *p = (const unsigned char *)word; plain && *p; p++)
        if (*p < 0x20 || *p == 0x7F) plain = 0;
    if (plain) return 0;
    char *field = text_field(word);
    size_t k = strlen(s);
    if (k && k + 1 < cap) s[k++] = ' ';
    if (k + 2 < cap) s[k++] = '$', s[k++] = '\'';
    for (const char *p = field; *p && k + 3 < cap; p++) {
        if (*p == '\'') s[k++] = '\\';
        s[k++] = *p;
    }
    if (k + 1 < cap) s[k++] = '\'';
    s[k < cap ? k : cap - 1] = 0;
    free(field);
    return 1;
}

static void append_shell_word(char *s, size_t cap, const char *word) {
    if (append_ansi_c_word(s, cap, word)) return;
    size_t k = strlen(s);
    int bare = word[0] != 0;
    for (const char *p = word; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+-@%", *p))
            bare = 0;
    if (k && k + 1 < cap) s[k++] = ' ';
    if (!bare && k + 1 < cap) s[k++] = '\'';
    for (const char *p = word; *p && k + 4 < cap; p++) {
        if (!bare && *p == '\'') {
            memcpy(s + k, "'\\''", 4);
            k += 4;
        } else {
            s[k++] = *p;
        }
    }
    if (!bare && k + 1 < cap) s[k++] = '\'';
    s[k < cap ? k : cap - 1] = 0;
}

static void warn(const RunInfo *ri, const char *reason) {
    // reason is an Error's message, in the field form already; the path is escaped here
    fprintf(stderr, "%s train: warning: ", ri->program);
    text_write_field(stderr, ri->path);
    fprintf(stderr, ": %s (the run's record for reports is not written)\n", reason);
}

// The invocation list of an existing DIR/run.json of the same program; NULL when there is
// none or it cannot be read (a new list starts).
static cJSON *read_invocations(const RunInfo *ri) {
    unsigned char *text;
    size_t len;
    if (!file_exists(ri->path) || file_read_all(ri->path, &text, &len, 1 << 24, NULL)) return NULL;
    cJSON *doc = cJSON_Parse((const char *)text);
    free(text);
    const cJSON *prog = cJSON_GetObjectItemCaseSensitive(doc, "program");
    // Builds before 2026-11-26 recorded `draw classify train` runs as program "draw".
    const bool same = cJSON_IsString(prog) &&
                      (!strcmp(prog->valuestring, ri->program) ||
                       (!strcmp(ri->program, "draw classify") && !strcmp(prog->valuestring, "draw")));
    cJSON *list = cJSON_DetachItemFromObjectCaseSensitive(doc, "invocations");
    cJSON_Delete(doc);  // prog goes with it
    if (!cJSON_IsArray(list) || !same) {
        cJSON_Delete(list);
        return NULL;
    }
    return list;
}

static int write_doc(RunInfo *ri, cJSON *list) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "program", ri->program);
    cJSON_AddItemToObject(doc, "invocations", list);
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    Error err;
    int r = text ? file_write_atomic(ri->path, text, strlen(text), &err) : error_set(&err, "out of memory");
    free(text);
    if (r) {
        warn(ri, err.msg);
        ri->ok = 0;
    }
    return r;
}

void run_info_begin(RunInfo *ri, const char *dir, const char *program, int argc, char **argv,
                    int threads, int ranks, int append) {
    memset(ri, 0, sizeof *ri);
    snprintf(ri->path, sizeof ri->path, "%s/run.json", dir);
    snprintf(ri->program, sizeof ri->program, "%s", program);
    ri->t0 = timer_now();
    ri->ok = 1;
    cJSON *list = append ? read_invocations(ri) : NULL;
    if (!list) list = cJSON_CreateArray();
    cJSON *inv = cJSON_CreateObject();
    size_t cap = 64 + strlen(program);
    for (int i = 0; i < argc; i++) cap += 4 * strlen(argv[i]) + 4;
    char *command = xcalloc(cap, 1);
    snprintf(command, cap, "%s", program);
    // argv in core/text_escape.h's name form (cJSON would copy bytes that are not UTF-8 into
    // the file); when one was escaped, "argv_hex" gives every argument's bytes.
    cJSON *args = cJSON_CreateArray(), *args_hex = cJSON_CreateArray();
    int any_escaped = 0;
    for (int i = 0; i < argc; i++) {
        append_shell_word(command, cap, argv[i]);
        int escaped;
        char *form = text_name(argv[i], &escaped), *hex = text_hex(argv[i]);
        any_escaped |= escaped;
        cJSON_AddItemToArray(args, cJSON_CreateString(form));
        cJSON_AddItemToArray(args_hex, cJSON_CreateString(hex));
        free(form);
        free(hex);
    }
    cJSON_AddStringToObject(inv, "command", command);
    free(command);
    cJSON_AddItemToObject(inv, "argv", args);
    if (any_escaped) cJSON_AddItemToObject(inv, "argv_hex", args_hex);
    else cJSON_Delete(args_hex);
    cJSON_AddStringToObject(inv, "commit", run_info_commit());
    char date[32], cpu[256];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(inv, "date", date);
    run_info_cpu_model(cpu, sizeof cpu);
    cJSON_AddStringToObject(inv, "cpu", cpu);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cJSON_AddNumberToObject(inv, "cpus_online", (double)(online > 0 ? online : 1));
    cJSON_AddNumberToObject(inv, "threads", threads);
    cJSON_AddStringToObject(inv, "gemm", gemm_backend());
    char kernels[160];
    gemm_kernels(kernels, sizeof kernels);
    cJSON_AddStringToObject(inv, "gemm_kernels", kernels);
    if (ranks > 1) cJSON_AddNumberToObject(inv, "ranks", ranks);
    cJSON_AddStringToObject(inv, "status", "running");
    cJSON_AddItemToArray(list, inv);
    write_doc(ri, list);
}

void run_info_end(RunInfo *ri, int status, long steps, double images_per_s) {
    if (!ri->ok) return;
    cJSON *list = read_invocations(ri);
    cJSON *inv = list ? cJSON_GetArrayItem(list, cJSON_GetArraySize(list) - 1) : NULL;
    if (!inv) {
        cJSON_Delete(list);
        warn(ri, "the record written at the start is gone or unreadable");
        return;
    }
    const char *word = status == 0                      ? "finished"
                       : status == RUN_INFO_INTERRUPTED ? "interrupted"
                                                        : "failed";
    cJSON_ReplaceItemInObjectCaseSensitive(inv, "status", cJSON_CreateString(word));
    cJSON_AddNumberToObject(inv, "wall_seconds", round((timer_now() - ri->t0) * 100) / 100);
    cJSON_AddNumberToObject(inv, "steps", (double)steps);
    cJSON_AddNumberToObject(inv, "images_per_s", round(images_per_s * 100) / 100);
    if (ri->cpu_seconds > 0)
        cJSON_AddNumberToObject(inv, "cpu_seconds", round(ri->cpu_seconds * 100) / 100);
    if (ri->cpu_budget > 0) cJSON_AddNumberToObject(inv, "cpu_budget", ri->cpu_budget);
    write_doc(ri, list);
}
