// test_cli_errors.c: every failure bin/draw and bin/caption can meet on bad input prints
// exactly one line on stderr naming the file or flag and the reason, exits non-zero, and
// leaves no output (nor a temporary) under a final name (issue 7, errors a person can act
// on). Cases: a missing file, an unreadable or corrupt image (predict), a wrong format (a
// PNG as draw --data, text as a checkpoint or a caption file), a checkpoint of the other
// model (for eval and for --resume), a checkpoint of an older layout (its format / version
// key edited with core/safetensors.h), a checkpoint whose metadata claims a model far
// larger than its tensors (refused before any allocation), training metadata --resume
// cannot carry on from (optimiser settings out of range, a run's data gone), bad flag
// values, an unknown subcommand, a missing required flag, an output folder that cannot be
// made, flags each in range whose products pass what the kernels index (issue 56), a FIFO
// given as an input file (refused at once as "not a regular file"; each such run is under
// `timeout`, so a reader that blocks on it fails instead of hanging).
// Binaries come from $ATTEND_BIN (default "bin"); the tiny models are trained here.
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/block.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/safetensors.h"
#include "tests/support/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/png.h"

#define CAPTION_DATA " --train-count 16 --val-count-scenes 8 --test-count 8 --threads 1"

static char tmp[256];
static char bin[512];
static char draw_model[600], caption_model[600], caption_state[600];
static int have_models;

#define DRAW_TINY "--data mnist --T 2 --read 2 --write 2 --hidden 8 --z 2 --batch 8 " \
                  "--valid-every 2 --valid-images 16 --threads 1"
#define CAPTION_TINY                                                                        \
    " --image-size 64 --channels 4,8,16 --embed 8 --hidden 16 --attn-dim 8 --batch 8"      \
    " --train-count 16 --val-count-scenes 8 --test-count 8 --threads 1 --quiet"

// Runs "BIN/PROG ARGS" with stdout and stderr into TMP/out.txt and TMP/err.txt; the exit
// status, -1 if it did not exit normally.
static int run(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run(const char *prog, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/%s %s > %s/out.txt 2> %s/err.txt", bin, prog, args, tmp, tmp);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static char *read_tmp(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    unsigned char *d = NULL;
    size_t n = 0;
    if (file_read_all(path, &d, &n, 0, NULL)) return calloc(1, 1);
    return (char *)d;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; s && *s; s++) n += *s == '\n';
    return n;
}

static int exists_tmp(const char *name) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return file_exists(path);
}

// Temporaries of atomic writes anywhere under dir (one level of folders).
static int temporaries_under(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        if (strstr(e->d_name, ".tmp.")) n++;
        char sub[1200];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *s = opendir(sub);
            for (struct dirent *f; s && (f = readdir(s)) != NULL;) n += strstr(f->d_name, ".tmp.") != NULL;
            if (s) closedir(s);
        }
    }
    closedir(d);
    return n;
}

// The last command failed: non-zero status, exactly one line on stderr holding every
// string of want (NULL-terminated), and no output (TMP/NAME) left for each name in absent.
static void expect_failure(int status, const char *what, const char *const *want,
                           const char *const *absent) {
    char *err = read_tmp("err.txt");
    EXPECT(status > 0, "%s: exit status %d", what, status);
    EXPECT(count_lines(err) == 1 && err[strlen(err) - 1] == '\n',
           "%s: stderr should be one line, got %d: %s", what, count_lines(err), err);
    for (int i = 0; want && want[i]; i++)
        EXPECT(strstr(err, want[i]) != NULL, "%s: stderr does not mention '%s': %s", what, want[i], err);
    for (int i = 0; absent && absent[i]; i++)
        EXPECT(!exists_tmp(absent[i]), "%s: %s was written", what, absent[i]);
    EXPECT(temporaries_under(tmp) == 0, "%s: a temporary file was left behind", what);
    free(err);
}

#define WANT(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE NULL

// Copies checkpoint src to dst with metadata key set to value (added if absent).
static int rewrite_meta(const char *src, const char *dst, const char *key, const char *value) {
    return checkpoint_rewrite_meta(src, dst, key, value);
}

static void write_text(const char *name, const char *text) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    scratch_write_text(path, text);
}

static void copy_file(const char *src, const char *dst) {
    unsigned char *d;
    size_t n;
    Error err;
    if (file_read_all(src, &d, &n, 0, &err) == 0) {
        if (file_write_atomic(dst, d, n, &err)) EXPECT(0, "%s", err.msg);
        free(d);
    }
}

static void test_setup_models(void) {
    int rc = run("draw", "train " DRAW_TINY " --steps 2 --out %s/draw", tmp);
    EXPECT(rc == 0, "draw train exited %d", rc);
    rc = run("caption", "train --out %s/cap --steps 2" CAPTION_TINY, tmp);
    EXPECT(rc == 0, "caption train exited %d", rc);
    snprintf(draw_model, sizeof draw_model, "%s/draw/model.safetensors", tmp);
    snprintf(caption_model, sizeof caption_model, "%s/cap/model.safetensors", tmp);
    snprintf(caption_state, sizeof caption_state, "%s/cap/state.safetensors", tmp);
    have_models = file_exists(draw_model) && file_exists(caption_model) && file_exists(caption_state);
    // Inputs of the wrong kind.
    unsigned char pix[16 * 16 * 3];
    for (int i = 0; i < (int)sizeof pix; i++) pix[i] = (unsigned char)(i * 7);
    char path[700];
    Error err;
    snprintf(path, sizeof path, "%s/picture.png", tmp);
    EXPECT(write_png_u8(path, pix, 16, 16, 3, &err) == 0, "%s", err.msg);
    write_text("notes.txt", "these are notes, not a checkpoint\n");
}

// Bad subcommands and flags, and --help without the required ones.
static void test_draw_flag_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    int rc;
    rc = run("draw", "paint --out %s/o", tmp);
    expect_failure(rc, "unknown subcommand", WANT("paint"), NONE);
    rc = run("draw", "");
    expect_failure(rc, "no subcommand", WANT("command"), NONE);
    rc = run("draw", "train " DRAW_TINY " --steps 1");
    expect_failure(rc, "train without --out", WANT("--out: missing (required)"), NONE);
    rc = run("draw", "generate --model %s", draw_model);
    expect_failure(rc, "generate without --out", WANT("--out: missing (required)"), NONE);
    rc = run("draw", "reconstruct --out %s/rc", tmp);
    expect_failure(rc, "reconstruct without --model", WANT("--model: missing (required)"), WANT("rc/input.png"));
    // --help still works without the required flags and marks them.
    rc = run("draw", "generate --help");
    char *help = read_tmp("out.txt");
    const char *line = strstr(help, "\n  --model PATH"), *eol = line ? strchr(line + 1, '\n') : NULL;
    const char *req = line ? strstr(line, "(required)") : NULL;
    EXPECT(rc == 0 && req && eol && req < eol, "generate --help (status %d) does not mark --model: %s", rc, help);
    free(help);
    rc = run("draw", "train " DRAW_TINY " --T 0 --out %s/t0", tmp);
    expect_failure(rc, "--T 0", WANT("--T"), WANT("t0/model.safetensors"));
    rc = run("draw", "train " DRAW_TINY " --lr fast --out %s/t1", tmp);
    expect_failure(rc, "--lr fast", WANT("--lr", "fast"), WANT("t1/model.safetensors"));
    rc = run("draw", "eval --model %s --samples 0", draw_model);
    expect_failure(rc, "--samples 0", WANT("--samples"), NONE);
    rc = run("draw", "eval --model %s --split sideways", draw_model);
    expect_failure(rc, "--split sideways", WANT("--split", "sideways"), NONE);
}

// Missing files, files of the wrong kind, an output folder that cannot be made.
static void test_draw_file_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    int rc;
    rc = run("draw", "train " DRAW_TINY " --data %s/none-images.idx --steps 1 --out %s/t2", tmp, tmp);
    expect_failure(rc, "missing --data file", WANT("none-images.idx"), WANT("t2/model.safetensors"));
    rc = run("draw", "eval --model %s/none.safetensors", tmp);
    expect_failure(rc, "missing model", WANT("draw: ", "none.safetensors"), NONE);
    rc = run("draw", "train " DRAW_TINY " --data %s/picture.png --steps 1 --out %s/t3", tmp, tmp);
    expect_failure(rc, "PNG as --data", WANT("picture.png"), WANT("t3/model.safetensors"));
    rc = run("draw", "eval --model %s --data %s/picture.png", draw_model, tmp);
    expect_failure(rc, "PNG as eval --data", WANT("picture.png"), NONE);
    rc = run("draw", "eval --model %s/notes.txt", tmp);
    expect_failure(rc, "text as checkpoint", WANT("notes.txt"), NONE);
    rc = run("draw", "generate --model %s/notes.txt --out %s/g1", tmp, tmp);
    expect_failure(rc, "text as checkpoint (generate)", WANT("notes.txt"), WANT("g1/final.png"));
    // A file stands where the output folder would be made.
    rc = run("draw", "generate --model %s --out %s/notes.txt/frames", draw_model, tmp);
    expect_failure(rc, "output under a file", WANT("notes.txt"), NONE);
}

// Makes the run folder TMP/NAME and puts the path of the checkpoint --resume continues
// from, TMP/NAME/FILE, into path.
static void resume_folder(char *path, size_t n, const char *name, const char *file) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    Error err;
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    snprintf(path, n, "%s/%s", dir, file);
}

// Checkpoints draw cannot use: the other model's, an older layout, a size the tensors
// do not have; for eval and as the checkpoint --resume continues from.
static void test_draw_checkpoint_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    int rc;
    rc = run("draw", "eval --model %s", caption_model);
    expect_failure(rc, "captioner model", WANT("cap/model.safetensors", "not a DRAW checkpoint"), NONE);
    char path[800];
    resume_folder(path, sizeof path, "r1", "model.safetensors");
    copy_file(caption_model, path);
    rc = run("draw", "train " DRAW_TINY " --steps 4 --resume --out %s/r1", tmp);
    expect_failure(rc, "--resume from a captioner", WANT("r1/model.safetensors", "not a DRAW checkpoint"),
                   WANT("r1/log.csv"));
    snprintf(path, sizeof path, "%s/old_draw.safetensors", tmp);
    rewrite_meta(draw_model, path, "format", "attend-draw-0");
    rc = run("draw", "eval --model %s", path);
    expect_failure(rc, "older layout", WANT("old_draw.safetensors", "attend-draw-0", "not supported"), NONE);
    // Metadata that claims a model of 68 GB (--hidden 65536) over the tiny model's tensors:
    // refused by the tensors, for eval and for --resume, before anything is allocated.
    snprintf(path, sizeof path, "%s/huge_draw.safetensors", tmp);
    rewrite_meta(draw_model, path, "draw.enc", "65536");
    rc = run("draw", "eval --model %s", path);
    expect_failure(rc, "a huge model claimed", WANT("huge_draw.safetensors", "enc.W", "the model expects"), NONE);
    resume_folder(path, sizeof path, "rhuge", "model.safetensors");
    rewrite_meta(draw_model, path, "draw.enc", "65536");
    rc = run("draw", "train " DRAW_TINY " --steps 4 --resume --out %s/rhuge", tmp);
    expect_failure(rc, "--resume from a huge model claimed", WANT("rhuge/model.safetensors", "enc.W"),
                   WANT("rhuge/log.csv"));
}

// A checkpoint holding a value that is not a number: a NaN weight for eval, an infinite
// Adam moment for --resume; refused naming the file and the tensor, nothing written.
static void test_draw_nonfinite_checkpoint(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    char path[800];
    snprintf(path, sizeof path, "%s/nan_draw.safetensors", tmp);
    checkpoint_set_value(draw_model, path, "enc.W", NAN);
    int rc = run("draw", "eval --model %s", path);
    expect_failure(rc, "a NaN weight", WANT("nan_draw.safetensors", "'enc.W'", "NaN or inf"),
                   NONE);
    rc = run("draw", "generate --model %s --count 2 --out %s/nan_frames", path, tmp);
    expect_failure(rc, "generate from a NaN weight", WANT("nan_draw.safetensors", "'enc.W'"),
                   WANT("nan_frames"));
    resume_folder(path, sizeof path, "rinf", "model.safetensors");
    checkpoint_set_value(draw_model, path, "adam.m/q.W", INFINITY);
    rc = run("draw", "train " DRAW_TINY " --steps 4 --resume --out %s/rinf", tmp);
    expect_failure(rc, "--resume from an infinite moment",
                   WANT("rinf/model.safetensors", "'adam.m/q.W'", "NaN or inf"), WANT("rinf/log.csv"));
}

// A checkpoint whose training metadata --resume cannot carry on from: refused before
// anything is written, naming the checkpoint.
static void test_draw_resume_metadata_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    int rc;
    char path[800];
    // Optimiser settings no flag would give (cli/train_run.h train_optim_read), the key named.
    static const struct {
        const char *key, *value;
    } bad_optim[] = {{"train.lr", "-1"},      {"train.beta1", "2"}, {"train.clip", "-3"},
                     {"train.batch", "0"},    {"train.seed", "99999999999999999999999"},
                     {"train.lr", NULL},      {"train.ema", "1.5"}};
    for (size_t i = 0; i < sizeof bad_optim / sizeof bad_optim[0]; i++) {
        char name[32], what[96], log[48];
        snprintf(name, sizeof name, "ropt%zu", i);
        resume_folder(path, sizeof path, name, "model.safetensors");
        rewrite_meta(draw_model, path, bad_optim[i].key, bad_optim[i].value);
        rc = run("draw", "train " DRAW_TINY " --steps 4 --resume --out %s/%s", tmp, name);
        snprintf(what, sizeof what, "--resume with %s = %s", bad_optim[i].key,
                 bad_optim[i].value ? bad_optim[i].value : "(none)");
        snprintf(log, sizeof log, "%s/log.csv", name);
        expect_failure(rc, what, WANT("model.safetensors", bad_optim[i].key), WANT(log));
    }
    // A weight average claimed (train.ema) and not there: the missing tensor named, for
    // --resume and for eval.
    resume_folder(path, sizeof path, "rema", "model.safetensors");
    rewrite_meta(draw_model, path, "train.ema", "0.9");
    rc = run("draw", "train " DRAW_TINY " --steps 4 --resume --out %s/rema", tmp);
    expect_failure(rc, "--resume with train.ema and no average", WANT("rema/model.safetensors", "ema/"),
                   WANT("rema/log.csv"));
    rc = run("draw", "eval --model %s", path);
    expect_failure(rc, "eval with train.ema and no average", WANT("rema/model.safetensors", "ema/"), NONE);
    // A run whose data cannot be loaded now (an IDX file since moved): the checkpoint is
    // named as where the data's name came from.
    resume_folder(path, sizeof path, "rdata", "model.safetensors");
    rewrite_meta(draw_model, path, "train.data", "moved/digits-images.idx");
    rc = run("draw", "train --steps 4 --resume --out %s/rdata", tmp);
    expect_failure(rc, "--resume with its data gone",
                   WANT("rdata/model.safetensors: the run's data", "moved/digits-images.idx"),
                   WANT("rdata/log.csv"));
}

// Bad subcommands and flags.
static void test_caption_flag_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    int rc;
    rc = run("caption", "paint");
    expect_failure(rc, "unknown subcommand", WANT("paint"), NONE);
    rc = run("caption", "train --steps 1" CAPTION_TINY);
    expect_failure(rc, "train without --out", WANT("--out: missing (required)"), NONE);
    rc = run("caption", "eval --quiet");
    expect_failure(rc, "eval without --model", WANT("--model: missing (required)"), NONE);
    rc = run("caption", "predict --model %s", caption_model);
    expect_failure(rc, "predict without --images", WANT("--images: missing (required)"), NONE);
    rc = run("caption", "train --out %s/c0 --steps 1 --batch 0" CAPTION_TINY, tmp);
    expect_failure(rc, "--batch 0", WANT("--batch"), WANT("c0/model.safetensors"));
    rc = run("caption", "train --out %s/c1 --steps 1 --lr fast" CAPTION_TINY, tmp);
    expect_failure(rc, "--lr fast", WANT("--lr", "fast"), WANT("c1/model.safetensors"));
    rc = run("caption", "eval --model %s --beam 0 --quiet", caption_model);
    expect_failure(rc, "--beam 0", WANT("--beam"), NONE);
    rc = run("caption", "eval --model %s --split sideways --quiet", caption_model);
    expect_failure(rc, "--split sideways", WANT("--split", "sideways"), NONE);
    // Local attention needs a window of at least one (it aborted in seq/attention.c).
    rc = run("caption", "train --out %s/c3 --steps 1 --attention local-monotonic --window 0" CAPTION_TINY, tmp);
    expect_failure(rc, "--window 0", WANT("--window: must be >= 1 with --attention local-monotonic"),
                   WANT("c3/model.safetensors"));
    rc = run("caption", "train --out %s/c2 --steps 1 --data nowhere:%s" CAPTION_TINY, tmp, tmp);
    expect_failure(rc, "--data nowhere:", WANT("caption train: --data"), WANT("c2/model.safetensors"));
}

// Runs "ulimit -v KB; BIN/PROG ARGS" as run() does: a command that should be refused at
// set-up cannot allocate its way into swap (or OpenBLAS into its retry loop) instead. The
// sanitizers' shadow memory and valgrind need an unlimited address space: there (build-san,
// make valgrind) the command runs without the limit, its refusal checked all the same.
static int run_limited(long kb, const char *prog, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run_limited(long kb, const char *prog, const char *fmt, ...) {
    char args[4096], cmd[8192], limit[64] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
#if !defined(__SANITIZE_ADDRESS__)
    const char *vg = getenv("ATTEND_VALGRIND");
    if (!(vg && *vg)) snprintf(limit, sizeof limit, "ulimit -v %ld; ", kb);
#endif
    snprintf(cmd, sizeof cmd, "%s%s/%s %s > %s/out.txt 2> %s/err.txt", limit, bin, prog, args, tmp,
             tmp);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

// Issue 56: flags each in range whose products pass 2^31 floats (B L A wrapped an int into
// a short buffer, and attn_prepare wrote past it) are refused at set-up with one line naming
// the flags, exit status 2, under a 1 GiB address-space limit (nothing big is allocated),
// and the output folder never made.
static void test_caption_size_overflow_refused(void) {
    struct {
        const char *name, *flags;
        const char *const *want;
    } cases[] = {
        {"attention keys (the issue's command)",
         "--image-size 1024 --channels 8 --attn-dim 8192 --embed 8 --hidden 8 --batch 1",
         WANT("caption train: --batch 1 x 262144 annotation positions", "--attn-dim 8192",
              "= 2147483648 floats (the attention's precomputed keys) exceeds 2147483647")},
        {"multi-head keys and values",
         "--image-size 1024 --channels 8 --attention multi-head --attn-dim 4096 --embed 8 --hidden 8 --batch 1",
         WANT("--batch 1 x 262144", "keys and values", "exceeds 2147483647")},
        {"LSTM inputs", "--batch 4096 --max-len 256 --embed 8192 --hidden 8192",
         WANT("steps (--max-len 256 + 1) x --batch 4096", "the LSTM inputs", "exceeds")},
        {"validation beam rows", "--batch 4096 --val-beam 64 --image-size 128 --max-len 64",
         WANT("65 steps (--max-len 64 + 1) x --batch 4096 x --val-beam 64 x 256 annotation positions",
              "(the beam rows' attention history) exceeds")},
        {"CNN column matrix", "--image-size 1024 --channels 8,4096,8 --batch 1",
         WANT("layer 2's Winograd product", "--channels entry 2", "--image-size 1024", "exceeds")},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        int rc = run_limited(1L << 20, "caption", "train %s --steps 1 --threads 1 --quiet --out %s/big%d",
                             cases[i].flags, tmp, i);
        EXPECT(rc == 2, "%s: exit status %d, want 2", cases[i].name, rc);
        expect_failure(rc, cases[i].name, cases[i].want, NONE);
        char dir[300];
        snprintf(dir, sizeof dir, "big%d", i);
        EXPECT(!exists_tmp(dir), "%s: the output folder was made", cases[i].name);
    }
}

// The same for draw train, whose sizes are the flags' and the images' (known once the data
// is read), and draw classify train: refused before the output folder is made.
static void test_draw_size_overflow_refused(void) {
    int rc = run_limited(1L << 20, "draw", "train --data mnist --T 1000 --batch 10000 --hidden 8192 "
                                           "--steps 1 --threads 1 --out %s/dbig", tmp);
    expect_failure(rc, "draw train canvases",
                   WANT("draw: --T 1000 x --batch 10000 x 784 image floats (1 x 28 x 28, from --data)",
                        "(the canvases) exceeds 2147483647"),
                   NONE);
    EXPECT(!exists_tmp("dbig"), "draw train: the output folder was made");
    rc = run_limited(1L << 20, "draw", "classify train --T 1000 --batch 1024 --hidden 8192 "
                                       "--steps 1 --threads 1 --out %s/gbig", tmp);
    expect_failure(rc, "draw classify train LSTM inputs",
                   WANT("draw classify: --T 1000 x --batch 1024 x 8336 read and state floats",
                        "(the LSTM inputs) exceeds 2147483647"),
                   NONE);
    EXPECT(!exists_tmp("gbig"), "draw classify train: the output folder was made");
}

// Missing files, files of the wrong kind, images that do not decode, results that cannot
// be written.
static void test_caption_file_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    int rc;
    rc = run("caption", "eval --model %s/none.safetensors --quiet", tmp);
    expect_failure(rc, "missing model", WANT("caption eval: ", "none.safetensors"), NONE);
    rc = run("caption", "train --out %s/c3 --steps 1 --data tsv:%s/none.tsv:%s" CAPTION_TINY, tmp, tmp, tmp);
    expect_failure(rc, "missing caption file", WANT("none.tsv"), WANT("c3/model.safetensors"));
    rc = run("caption", "predict --model %s --images %s/no-such-folder", caption_model, tmp);
    expect_failure(rc, "missing image folder", WANT("no-such-folder"), NONE);
    // Wrong formats.
    rc = run("caption", "eval --model %s/notes.txt --quiet", tmp);
    expect_failure(rc, "text as checkpoint", WANT("notes.txt"), NONE);
    rc = run("caption", "train --out %s/c4 --steps 1 --data karpathy:%s/notes.txt:%s" CAPTION_TINY, tmp, tmp, tmp);
    expect_failure(rc, "text as Karpathy JSON", WANT("notes.txt"), WANT("c4/model.safetensors"));
    // A caption file whose only image does not decode (and one that is missing).
    write_text("one.tsv", "notes.txt\ta caption\nmissing.png\tanother caption\n");
    rc = run("caption", "train --out %s/c5 --steps 1 --data tsv:%s/one.tsv:%s" CAPTION_TINY, tmp, tmp, tmp);
    expect_failure(rc, "caption file of undecodable images", WANT("notes.txt"), WANT("c5/model.safetensors"));
    // Unreadable images: a PNG signature with nothing behind it, a truncated real PNG.
    char dir[700], path[800];
    Error err;
    snprintf(dir, sizeof dir, "%s/bad_images", tmp);
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    write_text("bad_images/broken.png", "\x89PNG\r\n\x1a\n not a png at all");
    rc = run("caption", "predict --model %s --images %s --beam 1 --threads 1 --attention-out %s/strips1",
             caption_model, dir, tmp);
    expect_failure(rc, "corrupt image", WANT("broken.png"), WANT("strips1/broken.png"));
    snprintf(path, sizeof path, "%s/bad_images/broken.png", tmp);
    unlink(path);
    char *png = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/picture.png", tmp);
    if (file_read_all(path, (unsigned char **)&png, &n, 0, &err) == 0) {
        snprintf(path, sizeof path, "%s/bad_images/cut.png", tmp);
        EXPECT(file_write_atomic(path, png, n / 2, &err) == 0, "%s", err.msg);
        free(png);
    }
    rc = run("caption", "predict --model %s --images %s --beam 1 --threads 1", caption_model, dir);
    expect_failure(rc, "truncated image", WANT("cut.png"), NONE);
    // Results that cannot be written: nothing under the final name.
    rc = run("caption", "eval --model %s --quiet --count 2 --beam 1 --results %s/no-folder/results.json" CAPTION_DATA,
             caption_model, tmp);
    expect_failure(rc, "results in a missing folder", WANT("results.json"), WANT("no-folder/results.json"));
}

// Checkpoints caption cannot use: the other model's, older and newer layouts; for eval and
// as the state --resume continues from.
static void test_caption_checkpoint_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    int rc;
    char path[800];
    rc = run("caption", "eval --model %s --quiet", draw_model);
    expect_failure(rc, "DRAW model", WANT("draw/model.safetensors", "not a captioner checkpoint"), NONE);
    resume_folder(path, sizeof path, "r2", "state.safetensors");
    copy_file(draw_model, path);
    rc = run("caption", "train --out %s/r2 --steps 4 --resume" CAPTION_TINY, tmp);
    expect_failure(rc, "--resume from a DRAW model", WANT("r2/state.safetensors", "not a captioner checkpoint"),
                   WANT("r2/model.safetensors"));
    // An older layout, for eval and for --resume.
    snprintf(path, sizeof path, "%s/old_cap.safetensors", tmp);
    rewrite_meta(caption_model, path, "version", "0");
    rc = run("caption", "eval --model %s --quiet", path);
    expect_failure(rc, "older layout", WANT("old_cap.safetensors", "version", "not supported"), NONE);
    resume_folder(path, sizeof path, "r3", "state.safetensors");
    rewrite_meta(caption_state, path, "version", "2");
    rc = run("caption", "train --out %s/r3 --steps 4 --resume" CAPTION_TINY, tmp);
    expect_failure(rc, "--resume from a newer layout", WANT("r3/state.safetensors", "version"),
                   WANT("r3/model.safetensors"));
}

// A captioner checkpoint whose metadata no model can be made from (a configuration that
// does not parse, a vocabulary that does not parse, a vocabulary of another size than the
// model's), or that holds a NaN weight (eval) or an infinite Adam moment (--resume):
// refused naming the file and the reason, nothing written.
static void test_caption_checkpoint_content_errors(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    static const struct {
        const char *key, *value, *want;
    } bad[] = {
        {"sat.config", "hidden=many", "meta_0.safetensors: model config: bad value 'many' for hidden"},
        {"vocab", "{\"format\": \"attend-vocab\"", "meta_1.safetensors: vocabulary: malformed JSON"},
        {"vocab",
         "{\"format\": \"attend-vocab\", \"version\": 1, \"min_count\": 1, \"words\": "
         "[\"<pad>\", \"<start>\", \"<end>\", \"<unk>\", \"a\"]}",
         "meta_2.safetensors: vocabulary has 5 words, model expects"},
        // Issue 56: named by its key in the checkpoint, not as the flag --max-len nobody gave.
        {"sat.config", "max_len=300", "meta_3.safetensors: sat.config max_len: must be in [1, 256], got 300"},
    };
    char path[800], what[64];
    int rc;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s/meta_%zu.safetensors", tmp, i);
        rewrite_meta(caption_model, path, bad[i].key, bad[i].value);
        rc = run("caption", "eval --model %s --quiet", path);
        snprintf(what, sizeof what, "bad %s (%zu)", bad[i].key, i);
        expect_failure(rc, what, WANT(bad[i].want), NONE);
        char *err = read_tmp("err.txt");
        EXPECT(!strstr(err, "--"), "%s: a flag named for a checkpoint's metadata: %s", what, err);
        free(err);
    }
    snprintf(path, sizeof path, "%s/nan_cap.safetensors", tmp);
    checkpoint_set_value(caption_model, path, "embed", NAN);
    rc = run("caption", "eval --model %s --quiet", path);
    expect_failure(rc, "a NaN weight", WANT("nan_cap.safetensors", "'embed'", "NaN or inf"), NONE);
    resume_folder(path, sizeof path, "r4", "state.safetensors");
    checkpoint_set_value(caption_state, path, "adam.v/embed", INFINITY);
    rc = run("caption", "train --out %s/r4 --steps 4 --resume" CAPTION_TINY, tmp);
    expect_failure(rc, "--resume from an infinite moment",
                   WANT("r4/state.safetensors", "'adam.v/embed'", "NaN or inf"),
                   WANT("r4/model.safetensors"));
}

// Issue 56: every error of caption predict, score, features and report names the program
// first ("caption predict: ..."): flags, missing and broken inputs, outputs that cannot be
// written. One line each, as expect_failure checks.
static void expect_named(int status, const char *what, const char *program) {
    expect_failure(status, what, WANT(program), NONE);
    char *err = read_tmp("err.txt");
    EXPECT(!strncmp(err, program, strlen(program)), "%s: the line does not start with '%s': %s", what,
           program, err);
    free(err);
}

static void test_caption_errors_name_the_program(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    const char *P = "caption predict: ", *S = "caption score: ", *F = "caption features: ",
               *R = "caption report: ";
    char dir[700];
    Error err;
    snprintf(dir, sizeof dir, "%s/named_images", tmp);
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    write_text("named_images/broken.png", "\x89PNG\r\n\x1a\n not a png at all");
    expect_named(run("caption", "predict --model %s --images %s --bogus", caption_model, dir), "predict --bogus", P);
    expect_named(run("caption", "predict --model %s/none.safetensors --images %s", tmp, dir), "predict, no model", P);
    expect_named(run("caption", "predict --model %s --images %s/none", caption_model, tmp), "predict, no folder", P);
    expect_named(run("caption", "predict --model %s --images %s --beam 1 --threads 1", caption_model, dir),
                 "predict, a broken image", P);
    write_text("named_refs.json", "{\"images\": [{\"id\": 1, \"file_name\": \"a.png\"}], "
                                  "\"annotations\": [{\"image_id\": 1, \"caption\": \"a red square\"}]}");
    write_text("named_results.json", "[{\"image_id\": 1, \"caption\": \"a red square\"}]");
    expect_named(run("caption", "score --refs %s/named_refs.json", tmp), "score without --results", S);
    expect_named(run("caption", "score --refs %s/none.json --results %s/named_results.json", tmp, tmp),
                 "score, no references", S);
    expect_named(run("caption", "score --refs %s/named_refs.json --results %s/none.json", tmp, tmp),
                 "score, no results", S);
    expect_named(run("caption", "score --refs %s/notes.txt --results %s/named_results.json", tmp, tmp),
                 "score, text as references", S);
    expect_named(run("caption", "features --encoder vgg19:x --data scenes"), "features without --out", F);
    write_text("named.tsv", "picture.png\ta caption\n");
    expect_named(run("caption", "features --encoder vgg19:%s/none.safetensors --data tsv:%s/named.tsv:%s "
                                "--out %s/named.features", tmp, tmp, tmp, tmp),
                 "features, no weights", F);
    expect_named(run("caption", "report --ranked many %s", tmp), "report --ranked many", R);
    expect_named(run("caption", "report"), "report without RUN", R);
    expect_named(run("caption", "report %s/none", tmp), "report, no run", R);
}

// A named FIFO with no writer as each kind of input file: refused at once, never opened
// (opening it to read would block until a writer came). Each run is killed after 60 s.
static void test_fifo_inputs(void) {
    if (!have_models) return test_fail_(__FILE__, __LINE__, "no models (setup failed)");
    char fifo[700], saved[512];
    snprintf(fifo, sizeof fifo, "%s/pipe", tmp);
    EXPECT(mkfifo(fifo, 0644) == 0, "mkfifo failed");
    snprintf(saved, sizeof saved, "%s", bin);
    snprintf(bin, sizeof bin, "timeout -s KILL 60 %.400s", saved);
    write_text("ok_results.json", "[{\"image_id\": 1, \"caption\": \"a cat\"}]");
    write_text("picture.tsv", "picture.png\ta caption\n");
    write_text("ok_refs.json", "{\"annotations\": [{\"image_id\": 1, \"caption\": \"a cat\"}]}");
    int rc;
    rc = run("draw", "eval --model %s", fifo);
    expect_failure(rc, "FIFO as draw --model", WANT("pipe: not a regular file"), NONE);
    rc = run("draw", "train " DRAW_TINY " --data %s --steps 1 --out %s/ff1", fifo, tmp);
    expect_failure(rc, "FIFO as draw --data", WANT("pipe: not a regular file"), WANT("ff1/model.safetensors"));
    rc = run("caption", "eval --model %s --quiet", fifo);
    expect_failure(rc, "FIFO as caption --model", WANT("pipe: not a regular file"), NONE);
    rc = run("caption", "train --out %s/ff2 --steps 1 --data tsv:%s:%s" CAPTION_TINY, tmp, fifo, tmp);
    expect_failure(rc, "FIFO as a tsv: spec", WANT("pipe: not a regular file"), WANT("ff2/model.safetensors"));
    rc = run("caption", "train --out %s/ff3 --steps 1 --data tsv:%s/picture.tsv:%s --features %s --quiet", tmp,
             tmp, tmp, fifo);
    expect_failure(rc, "FIFO as --features", WANT("pipe: not a regular file"), WANT("ff3/model.safetensors"));
    rc = run("caption", "features --encoder vgg16:%s --data tsv:%s/picture.tsv:%s --out %s/ff4.safetensors",
             fifo, tmp, tmp, tmp);
    expect_failure(rc, "FIFO as --encoder", WANT("pipe: not a regular file"), WANT("ff4.safetensors"));
    rc = run("caption", "score --refs %s --results %s/ok_results.json", fifo, tmp);
    expect_failure(rc, "FIFO as --refs", WANT("pipe: not a regular file"), NONE);
    rc = run("caption", "score --refs %s/ok_refs.json --results %s", tmp, fifo);
    expect_failure(rc, "FIFO as --results", WANT("pipe: not a regular file"), NONE);
    snprintf(bin, sizeof bin, "%s", saved);
    unlink(fifo);
}

int main(void) {
    const char *b = getenv("ATTEND_BIN");
    snprintf(bin, sizeof bin, "%s", b && b[0] ? b : "bin");
    const char *td = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/test_cli_errors_XXXXXX", td && td[0] ? td : "/tmp");
    if (!mkdtemp(tmp)) {
        printf("FAIL main: cannot make a temporary folder\n");
        return 1;
    }
    RUN(test_setup_models);
    RUN(test_draw_flag_errors);
    RUN(test_draw_file_errors);
    RUN(test_draw_checkpoint_errors);
    RUN(test_draw_nonfinite_checkpoint);
    RUN(test_draw_resume_metadata_errors);
    RUN(test_caption_flag_errors);
    RUN(test_caption_size_overflow_refused);
    RUN(test_draw_size_overflow_refused);
    RUN(test_caption_file_errors);
    RUN(test_caption_checkpoint_errors);
    RUN(test_caption_checkpoint_content_errors);
    RUN(test_caption_errors_name_the_program);
    RUN(test_fifo_inputs);
    int rc = test_summary();
    if (rc == 0)
        scratch_remove(tmp);
    else
        printf("  kept %s\n", tmp);
    return rc;
}
