// test_cli_names.c: bin/caption on file names a folder can hold but tidy tests never use
// (issue 23), through core/text_escape.h's documented forms.
//   - predict on a folder of images named with a byte that is not UTF-8, a newline, a tab,
//     spaces, a leading dash, a backslash and a link to an image, beside a broken link, a
//     link loop, a folder named x.png, a FIFO named like an image and a corrupt PNG: the
//     TSV on stdout has one line per good image with exactly one tab, and its fields
//     unescape to the names; the results JSON is valid UTF-8 (tests/support/utf8_check.h)
//     that cJSON parses, each image_id the name or, with image_id_hex, its escaped form;
//     each bad entry gets one stderr line naming it (escaped) with its reason, the count
//     line says 5 of 12 skipped, and the status is non-zero. The FIFO is never opened (the
//     run would block).
//   - train into a folder whose name is not UTF-8: run.json stays valid UTF-8 with argv in
//     the name form, argv_hex with the bytes, and a command line in bash's $'...' quoting
//     (which bash reads back to the same bytes);
//     the report page made from that run is valid UTF-8.
//   - predict's TSV reads back as a tsv: captions file (every UTF-8 name byte for byte).
//   - messages: caption train/eval/predict and draw train/eval/generate on paths holding a
//     newline, a Latin-1 byte and a backslash (a run folder, a missing model, a missing
//     captions file or data folder, a corrupt model whose message core/safetensors.c makes):
//     each names the path in the field form exactly once escaped, on one line.
//   - the validation line for a score that is not finite before any best (fault
//     injection) and for captions with no object word to ground.
// Finds the binary in $ATTEND_BIN (default "bin").
#define _GNU_SOURCE  // memmem
#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/text_escape.h"
#include "datasets/captions.h"
#include "datasets/captions_text.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "tests/support/utf8_check.h"
#include "vision/png.h"

static Scratch sc;
static const char *tmp;

#define SMALL                                                                            \
    " --image-size 64 --channels 4,8,16 --embed 16 --hidden 32 --attn-dim 16 --batch 8" \
    " --train-count 32 --val-count-scenes 8 --test-count 8 --threads 1 --quiet"

#define run(...) scratch_run(&sc, __VA_ARGS__)

static char *slurp(const char *name, size_t *len) {
    char *text = scratch_read(&sc, name, len);
    return text ? text : calloc(1, 1);
}

// The run folder: not UTF-8 (Latin-1 e-acute) and a space; passed to the shell through the
// environment so that its bytes reach bin/caption as they are.
static char run_dir[512];

// The images that decode, named awkwardly; the last is a link to the first.
static const char *const GOOD[] = {
    "caf\xe9.png", "new\nline.png", "tab\there.png", "with  spaces.png",
    "-leading-dash.png", "back\\slash.png", "link-to-good.png",
};
#define N_GOOD ((int)(sizeof GOOD / sizeof GOOD[0]))

// Entries that must be skipped, each with a word its reason must hold.
static const struct {
    const char *name, *reason;
} BAD[] = {
    {"broken-link.png", "broken symbolic link"},
    {"loop.png", "symbolic link loop"},
    {"x.png", "a folder"},
    {"fifo.png", "FIFO"},
    {"corrupt.png", "corrupt.png"},  // the decoder's own message names it
};
#define N_BAD ((int)(sizeof BAD / sizeof BAD[0]))

static void make_awkward_folder(const char *dir) {
    EXPECT(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
    unsigned char pix[48 * 40 * 3];
    for (size_t i = 0; i < sizeof pix; i++) pix[i] = (unsigned char)((i * 37) & 255);
    char path[1024], target[1024];
    Error e;
    for (int i = 0; i < N_GOOD - 1; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, GOOD[i]);
        EXPECT(write_png_u8(path, pix, 48, 40, i % 2 ? 1 : 3, &e) == 0, "%s", e.msg);
    }
    snprintf(path, sizeof path, "%s/link-to-good.png", dir);
    EXPECT(symlink("with  spaces.png", path) == 0, "symlink: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/broken-link.png", dir);
    EXPECT(symlink("no-such-file.png", path) == 0, "symlink: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/loop.png", dir);
    snprintf(target, sizeof target, "loop.png");
    EXPECT(symlink(target, path) == 0, "symlink: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/x.png", dir);
    EXPECT(mkdir(path, 0755) == 0, "mkdir x.png");
    snprintf(path, sizeof path, "%s/fifo.png", dir);
    EXPECT(mkfifo(path, 0644) == 0, "mkfifo: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/corrupt.png", dir);
    FILE *fp = fopen(path, "wb");
    fputs("\x89PNG\r\n\x1a\n not a png at all", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/notes.txt", dir);  // not an image: ignored, not skipped
    fp = fopen(path, "wb");
    fputs("hello\n", fp);
    fclose(fp);
}

static int good_index(const char *name, size_t len) {
    for (int i = 0; i < N_GOOD; i++)
        if (strlen(GOOD[i]) == len && memcmp(GOOD[i], name, len) == 0) return i;
    return -1;
}

// stdout: NAME<TAB>CAPTION per good image, fields in the field form.
static void check_tsv(const char *out, size_t len) {
    EXPECT(utf8_check((const unsigned char *)out, len, NULL), "stdout is not valid UTF-8");
    int seen[N_GOOD] = {0}, lines = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        char *copy = strndup(line, (size_t)(end - line));
        char *tab = strchr(copy, '\t');
        EXPECT(tab && !strchr(tab + 1, '\t'), "not two fields: %s", copy);
        if (tab) {
            *tab = 0;
            char *name, *caption;
            size_t nlen, clen;
            EXPECT(text_unescape(copy, &name, &nlen) == 0, "bad escape in name field %s", copy);
            EXPECT(text_unescape(tab + 1, &caption, &clen) == 0 && clen > 0, "caption field %s", tab + 1);
            int k = name ? good_index(name, nlen) : -1;
            EXPECT(k >= 0, "stdout names '%s', not one of the images", copy);
            if (k >= 0) seen[k]++;
            free(name);
            free(caption);
        }
        free(copy);
        lines++;
        line = *end ? end + 1 : end;
    }
    EXPECT(lines == N_GOOD, "%d lines on stdout, expected %d", lines, N_GOOD);
    for (int i = 0; i < N_GOOD; i++) EXPECT(seen[i] == 1, "image %d seen %d times", i, seen[i]);
}

// --results: a JSON array, valid UTF-8, one item per good image.
static void check_results_json(const char *js, size_t len) {
    size_t bad = 0;
    EXPECT(utf8_check((const unsigned char *)js, len, &bad), "results JSON: invalid UTF-8 at byte %zu", bad);
    cJSON *doc = cJSON_ParseWithLength(js, len);
    EXPECT(cJSON_IsArray(doc), "results JSON does not parse: %.300s", js);
    int seen[N_GOOD] = {0}, escaped = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, doc) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "image_id");
        const cJSON *hex = cJSON_GetObjectItemCaseSensitive(it, "image_id_hex");
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(it, "caption");
        EXPECT(cJSON_IsString(id) && cJSON_IsString(cap), "item without image_id or caption");
        if (!cJSON_IsString(id)) continue;
        char *name = NULL;
        size_t nlen = 0;
        if (hex) {  // escaped: the hex gives the bytes, and the text unescapes to the same
            escaped++;
            EXPECT(cJSON_IsString(hex) && strlen(hex->valuestring) % 2 == 0, "image_id_hex");
            nlen = strlen(hex->valuestring) / 2;
            name = calloc(nlen + 1, 1);
            for (size_t k = 0; k < nlen; k++) {
                unsigned v;
                EXPECT(sscanf(hex->valuestring + 2 * k, "%2x", &v) == 1, "hex digit");
                name[k] = (char)v;
            }
            char *back;
            size_t blen;
            EXPECT(text_unescape(id->valuestring, &back, &blen) == 0 && blen == nlen &&
                       memcmp(back, name, nlen) == 0,
                   "image_id '%s' does not unescape to image_id_hex", id->valuestring);
            free(back);
        } else {
            name = strdup(id->valuestring);
            nlen = strlen(name);
        }
        int k = good_index(name, nlen);
        EXPECT(k >= 0, "results name '%s' is not one of the images", id->valuestring);
        if (k >= 0) seen[k]++;
        free(name);
    }
    for (int i = 0; i < N_GOOD; i++) EXPECT(seen[i] == 1, "image %d in the results %d times", i, seen[i]);
    EXPECT(escaped == 1, "%d escaped names, expected 1 (the Latin-1 one)", escaped);
    cJSON_Delete(doc);
}

// stderr: one line per bad entry naming it with its reason, then the count.
static void check_stderr(const char *err, size_t len, const char *dir) {
    EXPECT(utf8_check((const unsigned char *)err, len, NULL), "stderr is not valid UTF-8");
    for (int i = 0; i < N_BAD; i++) {
        char want[1200];
        snprintf(want, sizeof want, "%s/%s", dir, BAD[i].name);
        const char *at = strstr(err, want);
        EXPECT(at != NULL, "%s not named on stderr: %s", BAD[i].name, err);
        if (!at) continue;
        const char *eol = strchr(at, '\n');
        size_t n = eol ? (size_t)(eol - at) : strlen(at);
        char *line = strndup(at, n);
        EXPECT(strstr(line + strlen(want), BAD[i].reason) || strstr(line, "corrupt.png:"),
               "line for %s gives no reason '%s': %s", BAD[i].name, BAD[i].reason, line);
        free(line);
    }
    char count[64];
    snprintf(count, sizeof count, "%d of %d files skipped", N_BAD, N_BAD + N_GOOD);
    EXPECT(strstr(err, count) != NULL, "no '%s' on stderr: %s", count, err);
    EXPECT(scratch_count_lines(err) == N_BAD + 2, "%d stderr lines, expected %d (skips, count, strips): %s",
           scratch_count_lines(err), N_BAD + 2, err);
    EXPECT(strstr(err, "notes.txt") == NULL, "a text file was reported: %s", err);
}

// The $'...' word of run.json's command, given to bash, prints the original bytes.
static void check_command_word_reads_back(const char *command, const char *want) {
    const char *w = strstr(command, "$'");
    if (!w || system("bash -c true 2>/dev/null") != 0) return;  // no bash: nothing to ask
    const char *end = w + 2;
    while (*end && *end != '\'') end += end[0] == '\\' && end[1] ? 2 : 1;
    char script[2048], out[1100];
    snprintf(script, sizeof script, "printf %%s %.*s > \"$NAMES_WORD_OUT\"", (int)(end + 1 - w), w);
    snprintf(out, sizeof out, "%s/word.bin", tmp);
    setenv("NAMES_WORD_OUT", out, 1);
    setenv("NAMES_WORD_SCRIPT", script, 1);
    EXPECT(system("bash -c \"$NAMES_WORD_SCRIPT\"") == 0, "bash failed on %s", script);
    size_t len;
    char *got = scratch_read_text(out, &len);
    EXPECT(got && len == strlen(want) && memcmp(got, want, len) == 0,
           "bash reads %s back as other bytes", script);
    free(got);
}

static void test_train_into_a_folder_not_utf8(void) {
    snprintf(run_dir, sizeof run_dir, "%s/run caf\xe9", tmp);
    setenv("NAMES_RUN", run_dir, 1);
    int st = run("train --out \"$NAMES_RUN\" --steps 2 --seed 4" SMALL);
    size_t len;
    char *err = slurp("stderr.txt", &len);
    EXPECT(st == 0, "train failed (%d): %s", st, err);
    free(err);
    char path[1024];
    snprintf(path, sizeof path, "%s/run.json", run_dir);
    char *js = scratch_read_text(path, &len);
    EXPECT(js && utf8_check((const unsigned char *)js, len, NULL), "run.json missing or not UTF-8");
    cJSON *doc = js ? cJSON_Parse(js) : NULL;
    const cJSON *inv = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "invocations"), 0);
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(inv, "argv");
    const cJSON *hex = cJSON_GetObjectItemCaseSensitive(inv, "argv_hex");
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(inv, "command");
    EXPECT(cJSON_IsArray(argv) && cJSON_IsArray(hex) && cJSON_GetArraySize(argv) == cJSON_GetArraySize(hex),
           "argv and argv_hex: %.400s", js ? js : "");
    char *want_form = text_name(run_dir, NULL), *want_hex = text_hex(run_dir);
    int found = 0;
    for (int i = 0; i < cJSON_GetArraySize(argv); i++) {
        const cJSON *a = cJSON_GetArrayItem(argv, i), *h = cJSON_GetArrayItem(hex, i);
        if (cJSON_IsString(a) && !strcmp(a->valuestring, want_form))
            found = cJSON_IsString(h) && !strcmp(h->valuestring, want_hex);
    }
    EXPECT(found, "the --out argument is not in argv (name form) with its hex: %.400s", js ? js : "");
    EXPECT(cJSON_IsString(cmd) && strstr(cmd->valuestring, "$'") && strstr(cmd->valuestring, "caf\\xe9'"),
           "command: %s", cJSON_IsString(cmd) ? cmd->valuestring : "?");
    if (cJSON_IsString(cmd)) check_command_word_reads_back(cmd->valuestring, run_dir);
    free(want_form);
    free(want_hex);
    cJSON_Delete(doc);
    free(js);

    st = run("report \"$NAMES_RUN\"");
    snprintf(path, sizeof path, "%s/report.html", run_dir);
    char *html = scratch_read_text(path, &len);
    EXPECT(st == 0 && html, "report failed (%d)", st);
    size_t bad = 0;
    EXPECT(html && utf8_check((const unsigned char *)html, len, &bad), "report.html: invalid UTF-8 at %zu", bad);
    EXPECT(html && strstr(html, "caf\\xe9"), "report.html does not show the run's name escaped");
    free(html);
}

static void test_predict_on_awkward_names(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/awkward", tmp);
    make_awkward_folder(dir);
    setenv("NAMES_DIR", dir, 1);
    int st = run("predict --model \"$NAMES_RUN/model.safetensors\" --images \"$NAMES_DIR\" --beam 1 "
                 "--results \"$NAMES_DIR.json\" --attention-out \"$NAMES_DIR.strips\" --threads 1");
    size_t out_len, err_len, js_len;
    char *out = slurp("stdout.txt", &out_len), *err = slurp("stderr.txt", &err_len);
    EXPECT(st == 1, "exit status %d with skipped files (expected 1): %s", st, err);
    check_tsv(out, out_len);
    check_stderr(err, err_len, dir);
    char kept[700];  // for test_predict_tsv_reads_back
    snprintf(kept, sizeof kept, "%s/predict.tsv", tmp);
    FILE *kf = fopen(kept, "wb");
    if (kf) fwrite(out, 1, out_len, kf), fclose(kf);
    char path[700];
    snprintf(path, sizeof path, "%s.json", dir);
    char *js = scratch_read_text(path, &js_len);
    EXPECT(js != NULL, "no results JSON");
    if (js) check_results_json(js, js_len);
    snprintf(path, sizeof path, "%s.strips/new\nline.png", dir);
    struct stat sb;
    EXPECT(stat(path, &sb) == 0 && sb.st_size > 0, "no strip for the name with a newline");
    snprintf(path, sizeof path, "%s.strips/caf\xe9.png", dir);
    EXPECT(stat(path, &sb) == 0 && sb.st_size > 0, "no strip for the Latin-1 name");
    free(js);
    free(out);
    free(err);
}

// Only bad entries: nothing to caption, each named, status 1 (not "no image files").
static void test_predict_only_bad_entries(void) {
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/only-bad", tmp);
    EXPECT(mkdir(dir, 0755) == 0, "mkdir");
    snprintf(path, sizeof path, "%s/gone.jpg", dir);
    EXPECT(symlink("gone-for-good.jpg", path) == 0, "symlink");
    setenv("NAMES_DIR", dir, 1);
    int st = run("predict --model \"$NAMES_RUN/model.safetensors\" --images \"$NAMES_DIR\" --threads 1");
    size_t len;
    char *err = slurp("stderr.txt", &len), *out = slurp("stdout.txt", NULL);
    EXPECT(st == 1 && strstr(err, "gone.jpg: skipped: broken symbolic link") && !out[0],
           "status %d, stderr: %s", st, err);
    free(err);
    free(out);
}

// ---------------------------------------------------------------------------------------
// Messages naming awkward paths: every line names a path in the field form, once.

// err (a program's stderr or stdout, len bytes) names path in the field form, never raw
// (the raw path holds a newline: printed raw, it would split the line), and never escaped
// twice; it is valid UTF-8 and has want_lines lines (-1: any number).
static void expect_names(const char *what, const char *err, size_t len, const char *path,
                         int want_lines) {
    char *once = text_field(path), *twice = text_field(once);
    EXPECT(utf8_check((const unsigned char *)err, len, NULL), "%s: output not valid UTF-8: %s", what, err);
    EXPECT(strstr(err, once) != NULL, "%s: does not name %s: %s", what, once, err);
    EXPECT(strstr(err, twice) == NULL, "%s: escaped twice (%s): %s", what, twice, err);
    EXPECT(memmem(err, len, path, strlen(path)) == NULL, "%s: the path printed raw: %s", what, err);
    if (want_lines >= 0)
        EXPECT(scratch_count_lines(err) == want_lines, "%s: %d lines, expected %d: %s", what,
               scratch_count_lines(err), want_lines, err);
    free(once);
    free(twice);
}

// A folder holding a newline, a Latin-1 byte and a backslash; its name reaches the programs
// through $NAMES_ODD.
static char odd_dir[512];

static void test_caption_messages_name_paths_once(void) {
    snprintf(odd_dir, sizeof odd_dir, "%s/odd\nrun caf\xe9 back\\slash", tmp);
    setenv("NAMES_ODD", odd_dir, 1);
    int st = run("train --out \"$NAMES_ODD\" --steps 2 --seed 4" SMALL);
    size_t len;
    char *err = slurp("stderr.txt", &len), path[800];
    EXPECT(st == 0, "train failed (%d): %s", st, err);
    snprintf(path, sizeof path, "%s/model.safetensors", odd_dir);
    expect_names("caption train's summary", err, len, path, -1);
    free(err);

    st = run("eval --model \"$NAMES_ODD/model.safetensors\" --count 4 --beam 1 --threads 1 --quiet"
             " --train-count 32 --val-count-scenes 8 --test-count 8");
    err = slurp("stderr.txt", &len);
    EXPECT(st == 0, "eval failed (%d): %s", st, err);
    expect_names("caption eval's results line", err, len, odd_dir, 1);
    free(err);

    // Errors: a missing model, a missing captions file (the reader's message), and a model
    // file that is no safetensors (the message made in core/safetensors.c).
    st = run("eval --model \"$NAMES_ODD/gone\nmodel.safetensors\" --quiet");
    err = slurp("stderr.txt", &len);
    snprintf(path, sizeof path, "%s/gone\nmodel.safetensors", odd_dir);
    EXPECT(st != 0, "eval of a missing model succeeded");
    expect_names("caption eval, missing model", err, len, path, 1);
    free(err);
    st = run("train --out \"$NAMES_ODD/t2\" --steps 1 --data \"tsv:$NAMES_ODD/caps\n.tsv:$NAMES_ODD\"");
    err = slurp("stderr.txt", &len);
    snprintf(path, sizeof path, "%s/caps\n.tsv", odd_dir);
    EXPECT(st != 0, "train on a missing captions file succeeded");
    expect_names("caption train, missing captions file", err, len, path, 1);
    free(err);
    snprintf(path, sizeof path, "%s/not a\\model\n.safetensors", odd_dir);
    FILE *fp = fopen(path, "wb");
    EXPECT(fp != NULL, "cannot write %s", path);
    if (fp) fputs("not a safetensors file at all, just words", fp), fclose(fp);
    setenv("NAMES_BAD_MODEL", path, 1);
    st = run("predict --model \"$NAMES_BAD_MODEL\" --images \"$NAMES_ODD\" --threads 1");
    err = slurp("stderr.txt", &len);
    EXPECT(st != 0, "predict with a corrupt model succeeded");
    expect_names("caption predict, corrupt model", err, len, path, 1);
    free(err);
    st = run("eval --model \"$NAMES_BAD_MODEL\" --quiet");
    err = slurp("stderr.txt", &len);
    EXPECT(st != 0, "eval with a corrupt model succeeded");
    expect_names("caption eval, corrupt model", err, len, path, 1);
    free(err);
}

static void test_draw_messages_name_paths_once(void) {
    Scratch sd;
    if (scratch_open(&sd, "test_cli_names_draw", "draw")) {
        EXPECT(0, "cannot make a temporary folder");
        return;
    }
    char dir[700], path[800];
    snprintf(dir, sizeof dir, "%s/draw\nrun caf\xe9 back\\slash", sd.dir);
    setenv("NAMES_DRAW", dir, 1);
    int st = scratch_run(&sd, "train --out \"$NAMES_DRAW\" --steps 2 --data mnist --T 4 --read 2 "
                              "--write 3 --hidden 24 --z 6 --batch 16 --valid-images 32 --threads 1");
    size_t len;
    char *err = scratch_read(&sd, "stderr.txt", &len);
    EXPECT(st == 0, "draw train failed (%d): %s", st, err ? err : "");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (err) expect_names("draw train's summary", err, len, path, -1);
    free(err);

    st = scratch_run(&sd, "eval --model \"$NAMES_DRAW/model.safetensors\" --limit 32 --threads 1");
    err = scratch_read(&sd, "stderr.txt", &len);
    char *out = scratch_read(&sd, "stdout.txt", NULL);
    EXPECT(st == 0 && out && strstr(out, "nats per image"), "draw eval failed (%d): %s", st, err ? err : "");
    EXPECT(err && memmem(err, len, dir, strlen(dir)) == NULL, "draw eval printed the path raw");
    free(err);
    free(out);

    st = scratch_run(&sd, "generate --model \"$NAMES_DRAW/model.safetensors\" --out \"$NAMES_DRAW/gen\" "
                          "--count 4 --threads 1");
    err = scratch_read(&sd, "stderr.txt", &len);
    snprintf(path, sizeof path, "%s/gen", dir);
    EXPECT(st == 0, "draw generate failed (%d): %s", st, err ? err : "");
    if (err) expect_names("draw generate's status line", err, len, path, 1);
    free(err);

    st = scratch_run(&sd, "eval --model \"$NAMES_DRAW/gone\nmodel.safetensors\" --threads 1");
    err = scratch_read(&sd, "stderr.txt", &len);
    snprintf(path, sizeof path, "%s/gone\nmodel.safetensors", dir);
    EXPECT(st != 0, "draw eval of a missing model succeeded");
    if (err) expect_names("draw eval, missing model", err, len, path, 1);
    free(err);

    st = scratch_run(&sd, "train --out \"$NAMES_DRAW/t2\" --steps 1 --data mnist --data-root "
                          "\"$NAMES_DRAW/no\ndata\" --threads 1");
    err = scratch_read(&sd, "stderr.txt", &len);
    snprintf(path, sizeof path, "%s/no\ndata", dir);
    EXPECT(st != 0, "draw train without data succeeded");
    if (err) expect_names("draw train, missing data", err, len, path, 1);
    free(err);
    scratch_remove(sd.dir);
}

// The two validation branches no tidy run reaches: a score that is not finite before any
// best (ATTEND_FAULT_NAN_VALID_STEP, cli/train_run.h), and scenes whose vocabulary holds no
// object word (--min-count 100 keeps only the grammar words of 32 scenes' captions), so
// nothing can be grounded whatever the model says.
static void test_validation_messages_without_a_score(void) {
    setenv("ATTEND_FAULT_NAN_VALID_STEP", "2", 1);
    int st = run("train --out %s/nan-valid --steps 2 --seed 4 --image-size 64 --channels 4,8,16 "
                 "--embed 16 --hidden 32 --attn-dim 16 --batch 8 --train-count 32 "
                 "--val-count-scenes 8 --test-count 8 --threads 1", tmp);
    unsetenv("ATTEND_FAULT_NAN_VALID_STEP");
    char *err = slurp("stderr.txt", NULL);
    EXPECT(st == 0, "train failed (%d): %s", st, err);
    EXPECT(strstr(err, "step 2 (epoch 0.50): validation BLEU-4 not finite") &&
               strstr(err, " (no best model kept yet)\n"),
           "stderr: %s", err);
    EXPECT(strstr(err, "caption train: 2 steps in ") && strstr(err, " s wall; ") &&
               strstr(err, " images/s of step time; at step 2, final loss ") &&
               strstr(err, "; no best model kept yet\n"),
           "summary: %s", err);
    EXPECT(!strstr(err, "nan") && !strstr(err, "-1.0"), "a placeholder in: %s", err);
    free(err);

    st = run("train --out %s/no-objects --steps 2 --seed 4 --min-count 100 --image-size 64 "
             "--channels 4,8,16 --embed 16 --hidden 32 --attn-dim 16 --batch 8 --train-count 32 "
             "--val-count-scenes 8 --test-count 8 --threads 1", tmp);
    err = slurp("stderr.txt", NULL);
    EXPECT(st == 0, "train failed (%d): %s", st, err);
    EXPECT(strstr(err, "validation BLEU-4 0.0000, grounding n/a (no object words) (the best so far)\n"),
           "stderr: %s", err);
    free(err);
}

// predict's TSV (stdout of test_predict_on_awkward_names, kept in predict.tsv) read back as a
// captions file: every name that is valid UTF-8 comes back byte for byte; the Latin-1 one
// (\xe9 once unescaped) is skipped with a warning naming its line.
static void test_predict_tsv_reads_back(void) {
    char tsv[700], dir[600];
    snprintf(tsv, sizeof tsv, "%s/predict.tsv", tmp);
    snprintf(dir, sizeof dir, "%s/awkward", tmp);
    CaptionSet set;
    Error e;
    EXPECT(caption_read_tsv(&set, tsv, dir, NULL, &e) == 0, "%s", e.msg);
    int seen[N_GOOD] = {0};
    for (int i = 0; i < set.n_images; i++) {
        int k = good_index(set.images[i].id, strlen(set.images[i].id));
        EXPECT(k > 0, "read back '%s', not one of the UTF-8 names", set.images[i].id);
        if (k > 0) seen[k]++;
    }
    for (int k = 1; k < N_GOOD; k++) EXPECT(seen[k] == 1, "name %d read back %d times", k, seen[k]);
    EXPECT(set.n_warnings == 1 && strstr(set.warnings[0], "file name: not valid UTF-8 text once unescaped"),
           "%d warnings: %s", set.n_warnings, set.n_warnings ? set.warnings[0] : "");
    caption_set_free(&set);

    // A backslash that starts no escape skips its line; a line without one reads as it is.
    snprintf(tsv, sizeof tsv, "%s/hand.tsv", tmp);
    FILE *fp = fopen(tsv, "wb");
    fputs("with  spaces.png\ta photo\nback\\slash.png\ta second\nback\\\\slash.png\ta third\n", fp);
    fclose(fp);
    EXPECT(caption_read_tsv(&set, tsv, dir, NULL, &e) == 0, "%s", e.msg);
    EXPECT(set.n_images == 2 && !strcmp(set.images[0].id, "with  spaces.png") &&
               !strcmp(set.images[1].id, "back\\slash.png"),
           "%d images", set.n_images);
    EXPECT(set.n_warnings == 1 && strstr(set.warnings[0], "hand.tsv:2") &&
               strstr(set.warnings[0], "a backslash that starts no escape"),
           "warning: %s", set.n_warnings ? set.warnings[0] : "");
    caption_set_free(&set);
}

int main(void) {
    if (scratch_open(&sc, "test_cli_names", "caption")) {
        printf("FAIL main: cannot make a temporary folder\n");
        return 1;
    }
    tmp = sc.dir;
    RUN(test_train_into_a_folder_not_utf8);
    RUN(test_predict_on_awkward_names);
    RUN(test_predict_only_bad_entries);
    RUN(test_predict_tsv_reads_back);
    RUN(test_caption_messages_name_paths_once);
    RUN(test_draw_messages_name_paths_once);
    RUN(test_validation_messages_without_a_score);
    scratch_remove(tmp);
    return test_summary();
}
