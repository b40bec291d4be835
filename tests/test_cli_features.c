// test_cli_features.c: bin/caption on a frozen pretrained encoder, end to end on a folder
// of scenes with the reduced-width random-weight VGG-19 of tests/fixtures/encoders:
// `caption features` (progress line, an unreadable image named and skipped, a complete
// cache left alone, another setting refused, an interrupted extraction resumed to the same
// bytes), `caption train --features` and `eval --features` (decoder only; the checkpoint
// records the encoder), `predict` running the recorded encoder on new images, and the
// one-line refusals of a cache that does not match the data or the model; where the
// checksum is checked, and --data naming the same files another way.
// Issue 59: the same train, eval and predict with --decoder transformer.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "datasets/featcache.h"
#include "tests/support/cli_check.h"
#include "tests/support/fixture.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;
static const char *tmp;
static char vgg19[600], vgg16[600], data[1200];

#define run(...) scratch_run(&sc, __VA_ARGS__)
#define DECODER " --embed 16 --hidden 32 --attn-dim 16 --batch 8 --threads 1 --quiet"

#define slurp(name) cli_slurp(&sc, (name))
#define expect_one_line_error(status, want) EXPECT_ONE_LINE_ERROR(&sc, (status), (want))

// The bytes of file NAME in tmp; NULL when it cannot be read.
static unsigned char *read_all(const char *name, size_t *len) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return (unsigned char *)scratch_read_text(path, len);
}

static void test_features_extract(void) {
    int st = run("scenes --out %s/scenes --count 40 --image-size 64", tmp);
    EXPECT(st == 0, "scenes: %d", st);
    // One image that cannot be decoded.
    char bad[1200];
    snprintf(bad, sizeof bad, "%s/scenes/train_000003.png", tmp);
    FILE *fp = fopen(bad, "wb");
    if (fp) fputs("not a png", fp), fclose(fp);
    st = run("features --encoder vgg19:%s --data %s --out %s/f.safetensors --image-size 64 "
             "--threads 1 --batch 8", vgg19, data, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "features: %d %s", st, err);
    EXPECT(strstr(err, "train_000003.png") && strstr(err, "skipped"), "the unreadable image is not named: %s", err);
    EXPECT(strstr(err, "images/s") && strstr(err, "1 skipped in all"), "no rate or skip count: %s", err);
    free(err);
    // Run again: complete, nothing to do, file unchanged.
    size_t l1, l2;
    unsigned char *a = read_all("f.safetensors", &l1);
    st = run("features --encoder vgg19:%s --data %s --out %s/f.safetensors --image-size 64 "
             "--threads 1 --batch 8", vgg19, data, tmp);
    err = slurp("stderr.txt");
    EXPECT(st == 0 && strstr(err, "nothing to do"), "second run: %d %s", st, err);
    free(err);
    unsigned char *b = read_all("f.safetensors", &l2);
    EXPECT(a && b && l1 == l2 && !memcmp(a, b, l1), "a complete cache was rewritten");
    free(b);
    // Other settings into the same file: refused, naming the setting.
    st = run("features --encoder vgg19:%s --data %s --out %s/f.safetensors --image-size 96 "
             "--threads 1 --batch 8", vgg19, data, tmp);
    expect_one_line_error(st, "image_size");
    st = run("features --encoder vgg19:%s --data %s --out %s/f.safetensors --image-size 64 "
             "--threads 1 --batch 8 --dtype f32", vgg19, data, tmp);
    expect_one_line_error(st, "dtype");
    st = run("features --encoder vgg19:%s --data scenes --out %s/g.safetensors", vgg19, tmp);
    expect_one_line_error(st, "scenes");
    st = run("features --encoder vgg19 --data %s --out %s/g.safetensors", data, tmp);
    expect_one_line_error(st, "ARCH:FILE");
    // An interrupted extraction: the cache made partial again (complete flag and checksum
    // reset, the status of images 16.. cleared) resumes at image 16 and ends identical.
    if (a) {
        unsigned char *p = malloc(l1);
        memcpy(p, a, l1);
        const char *keys[2] = {"\"complete\":\"", "\"annotations.sha256\":\""};
        for (int k = 0; k < 2; k++)
            for (size_t q = 0; q + strlen(keys[k]) < l1; q++)
                if (!memcmp(p + q, keys[k], strlen(keys[k]))) {
                    unsigned char *v = p + q + strlen(keys[k]);
                    if (k == 0) v[0] = '0';
                    else memset(v, '0', 64);
                    break;
                }
        memset(p + l1 - 24, 0, 24);  // 40 images: status bytes 16..39
        char path[1200];
        snprintf(path, sizeof path, "%s/r.safetensors.partial", tmp);
        Error e;
        EXPECT(file_write_atomic(path, p, l1, &e) == 0, "%s", e.msg);
        // --data naming the same files another way resumes the same partial cache.
        char same[1200];
        snprintf(same, sizeof same, "tsv:./%s/scenes/captions.tsv:%s/scenes/", tmp, tmp);
        if (tmp[0] == '/') snprintf(same, sizeof same, "tsv:%s/./scenes/captions.tsv:%s/scenes/", tmp, tmp);
        st = run("features --encoder vgg19:%s --data %s --out %s/r.safetensors --image-size 64 "
                 "--threads 2 --batch 4", vgg19, same, tmp);
        err = slurp("stderr.txt");
        EXPECT(st == 0 && strstr(err, "resuming") && strstr(err, "at image 16"), "resume: %d %s", st, err);
        EXPECT(strstr(err, "with the 1 thread the extraction started with"), "thread count: %s", err);
        free(err);
        unsigned char *r = read_all("r.safetensors", &l2);
        EXPECT(r && l2 == l1 && !memcmp(r, a, l1), "the resumed cache differs from the uninterrupted one");
        free(r);
        free(p);
    }
    free(a);
}

static void test_features_train_eval_predict(void) {
    int st = run("train --data %s --features %s/f.safetensors --out %s/run --steps 12" DECODER,
                 data, tmp, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "train: %d %s", st, err);
    EXPECT(strstr(err, "train_000003.png") && strstr(err, "skipped"), "the skipped image is not named: %s", err);
    free(err);
    char path[1200];
    snprintf(path, sizeof path, "%s/run/model.safetensors", tmp);
    SafetensorsFile f;
    Error e;
    if (safetensors_open(&f, path, &e) == 0) {
        const char *enc = safetensors_meta(&f, "encoder"), *cfg = safetensors_meta(&f, "sat.config");
        EXPECT(enc && !strcmp(enc, "vgg19") && safetensors_meta(&f, "encoder.sha256") &&
                   cfg && strstr(cfg, "features=16x16"),
               "the checkpoint does not record the encoder: %s / %s", enc ? enc : "-", cfg ? cfg : "-");
        EXPECT(safetensors_find(&f, "enc.conv0.weight") == NULL, "a CNN in a decoder-only model");
        safetensors_free(&f);
    } else {
        EXPECT(0, "%s", e.msg);
    }
    st = run("eval --model %s/run/model.safetensors --data %s --features %s/f.safetensors "
             "--split test --json --quiet", tmp, data, tmp);
    char *out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"bleu4\""), "eval: %d %s", st, out);
    free(out);
    // predict decodes the images itself through the recorded encoder.
    st = run("predict --model %s/run/model.safetensors --images %s/scenes --threads 1 "
             "--attention-out %s/strips", tmp, tmp, tmp);
    out = slurp("stdout.txt");
    err = slurp("stderr.txt");
    EXPECT(scratch_count_lines(out) == 39 && strstr(out, "test_000000.png\t"), "predict: %s", out);
    EXPECT(st != 0 && strstr(err, "train_000003.png"), "the broken file is named: %d %s", st, err);
    free(out);
    free(err);
    st = run("predict --model %s/run/model.safetensors --images %s/scenes --encoder vgg16:%s", tmp,
             tmp, vgg16);
    expect_one_line_error(st, "encoder");
    // Issue 56: the weights given are not a cache, and the line names the program.
    err = slurp("stderr.txt");
    EXPECT(!strncmp(err, "caption predict: ", 17) && strstr(err, "vgg16.safetensors: another encoder than ") &&
               strstr(err, "was trained on (these weights: 'vgg16'") && !strstr(err, "cache"),
           "predict with other weights: %s", err);
    free(err);
    // The model without its cache, a cache of another encoder, of another image list.
    st = run("eval --model %s/run/model.safetensors --data %s --split test --quiet", tmp, data);
    expect_one_line_error(st, "give --features");
    st = run("features --encoder vgg16:%s --data %s --out %s/v16.safetensors --image-size 64 "
             "--threads 1 --quiet", vgg16, data, tmp);
    EXPECT(st == 0, "features vgg16: %d", st);
    st = run("eval --model %s/run/model.safetensors --data %s --features %s/v16.safetensors "
             "--split test --quiet", tmp, data, tmp);
    err = slurp("stderr.txt");
    EXPECT(st != 0 && strstr(err, "another encoder"), "eval on a VGG-16 cache: %s", err);
    free(err);
    st = run("train --data %s --features %s/v16.safetensors --out %s/run --steps 14 --resume" DECODER,
             data, tmp, tmp);
    err = slurp("stderr.txt");
    EXPECT(st != 0 && strstr(err, "another encoder"), "resume on a VGG-16 cache: %s", err);
    free(err);
    // Another image list: the TSV without its last scene's lines.
    char tsv[1200];
    snprintf(tsv, sizeof tsv, "%s/scenes/captions.tsv", tmp);
    char *text = scratch_read_text(tsv, NULL);
    if (text) {
        char *last = strstr(text, "test_000003.png");
        if (last) *last = 0;
        snprintf(tsv, sizeof tsv, "%s/fewer.tsv", tmp);
        scratch_write_text(tsv, text);
        free(text);
    }
    st = run("eval --model %s/run/model.safetensors --data tsv:%s:%s/scenes --features "
             "%s/f.safetensors --split test --quiet", tmp, tsv, tmp, tmp);
    err = slurp("stderr.txt");
    EXPECT(st != 0 && strstr(err, "another image list"), "eval on another image list: %s", err);
    free(err);
}

// Where the checksum is checked (caption features on a complete cache; train and eval with
// --verify-features) a damaged cache is refused with one line naming it; train without the
// flag opens it on its header and sizes (no pass over the file), which still refuse a
// truncated cache. --image-size and --channels are refused beside --features. A --data
// naming the same files another way finds the cache (complete, and partial when resumed).
static void test_features_checks(void) {
    size_t len = 0;
    unsigned char *a = read_all("f.safetensors", &len);
    EXPECT(a != NULL && len > 4096, "no cache to damage");
    if (!a) return;
    char path[1200];
    Error e;
    a[len / 2] ^= 0x40;  // one bit of an annotation
    snprintf(path, sizeof path, "%s/d.safetensors", tmp);
    EXPECT(file_write_atomic(path, a, len, &e) == 0, "%s", e.msg);
    snprintf(path, sizeof path, "%s/t.safetensors", tmp);
    EXPECT(file_write_atomic(path, a, len - 100, &e) == 0, "%s", e.msg);
    free(a);
    int st = run("features --encoder vgg19:%s --data %s --out %s/d.safetensors --image-size 64 "
                 "--threads 1 --batch 8", vgg19, data, tmp);
    expect_one_line_error(st, "d.safetensors: checksum mismatch");
    st = run("train --data %s --features %s/d.safetensors --out %s/run_d --steps 1 --verify-features" DECODER,
             data, tmp, tmp);
    expect_one_line_error(st, "d.safetensors: checksum mismatch");
    st = run("eval --model %s/run/model.safetensors --data %s --features %s/d.safetensors "
             "--split test --quiet --verify-features", tmp, data, tmp);
    expect_one_line_error(st, "d.safetensors: checksum mismatch");
    st = run("train --data %s --features %s/d.safetensors --out %s/run_d --steps 1" DECODER, data,
             tmp, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0 && !strstr(err, "checksum"), "train without --verify-features: %d %s", st, err);
    free(err);
    st = run("train --data %s --features %s/t.safetensors --out %s/run_t --steps 1" DECODER, data,
             tmp, tmp);
    expect_one_line_error(st, "t.safetensors");
    // The cache sets the annotations' size: --image-size and --channels are refused.
    st = run("train --data %s --features %s/f.safetensors --out %s/run_s --steps 1 --image-size 32"
             DECODER, data, tmp, tmp);
    expect_one_line_error(st, "--image-size: not with --features");
    st = run("train --data %s --features %s/f.safetensors --out %s/run_s --steps 1 --channels 8,8"
             DECODER, data, tmp, tmp);
    expect_one_line_error(st, "--channels: not with --features");
    // The same files named another way: the complete cache is found (nothing to do).
    char same[1200];
    snprintf(same, sizeof same, "tsv:%s/scenes/../scenes/captions.tsv:%s/./scenes", tmp, tmp);
    st = run("features --encoder vgg19:%s --data %s --out %s/f.safetensors --image-size 64 "
             "--threads 1 --batch 8", vgg19, same, tmp);
    err = slurp("stderr.txt");
    EXPECT(st == 0 && strstr(err, "nothing to do"), "the same data named another way: %d %s", st, err);
    free(err);
}

// Issue 56: a cache whose annotations turned into NaN on disk made eval print empty
// captions and scores of 0 with status 0; now it stops at the first image read, one line
// naming the cache and the image.
static void test_nonfinite_cache_stops_eval(void) {
    size_t len = 0;
    unsigned char *a = read_all("f.safetensors", &len);
    char path[1200];
    snprintf(path, sizeof path, "%s/f.safetensors", tmp);
    FeatCache c;
    Error e;
    EXPECT(a && featcache_open(&c, path, &e) == 0, "no cache to damage");
    if (!a) return;
    const size_t at = (size_t)(c.annot - c.base), values = (size_t)c.n * c.L * c.D;
    EXPECT(c.dtype == FEAT_F16 && at + values * 2 <= len, "cache layout");
    featcache_close(&c);
    for (size_t q = 0; q < values && at + 2 * q + 1 < len; q++) a[at + 2 * q] = 0x00, a[at + 2 * q + 1] = 0x7E;
    snprintf(path, sizeof path, "%s/nan.safetensors", tmp);
    EXPECT(file_write_atomic(path, a, len, &e) == 0, "%s", e.msg);
    free(a);
    int st = run("eval --model %s/run/model.safetensors --data %s --features %s/nan.safetensors "
                 "--split test --json --quiet --results %s/nan_results.json", tmp, data, tmp, tmp);
    char *err = slurp("stderr.txt");  // the warning about the image skipped at extraction, then the error
    const char *line = strstr(err, "caption eval: ");
    EXPECT(st != 0 && line && !strstr(line + 1, "caption eval: ") &&
               strchr(line, '\n') && strchr(line, '\n')[1] == 0,
           "status %d, not one error line: %s", st, err);
    EXPECT(line && strstr(line, "nan.safetensors: image test_") && strstr(line, "NaN or infinite"),
           "the image is not named: %s", err);
    free(err);
    EXPECT(!scratch_exists(&sc, "nan_results.json"), "results written from NaN annotations");
}

// Issue 59: the Transformer decoder on the cache's annotations: train, eval, and predict
// through the recorded encoder with attention strips.
static void test_features_transformer(void) {
    int st = run("train --data %s --features %s/f.safetensors --out %s/tf --steps 4 --decoder "
                 "transformer --d-model 16 --heads 2 --d-ff 32 --layers 1 --batch 8 --threads 1 "
                 "--quiet", data, tmp, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "train: %d %s", st, err);
    free(err);
    st = run("eval --model %s/tf/model.safetensors --data %s --features %s/f.safetensors "
             "--split test --json --quiet", tmp, data, tmp);
    char *out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"bleu4\"") && strstr(out, "\"transformer\""), "eval: %d %s", st, out);
    free(out);
    st = run("predict --model %s/tf/model.safetensors --images %s/scenes --threads 1 "
             "--attention-out %s/tf_strips", tmp, tmp, tmp);
    out = slurp("stdout.txt");
    EXPECT(scratch_count_lines(out) == 39 && strstr(out, "test_000000.png\t"), "predict: %s", out);
    EXPECT(scratch_exists(&sc, "tf_strips/test_000000.png"), "no strip");
    free(out);
}

int main(void) {
    if (scratch_open(&sc, "test_cli_features", "caption")) return 1;
    tmp = sc.dir;
    fixture_path(vgg19, sizeof vgg19, "encoders/vgg19.safetensors");
    fixture_path(vgg16, sizeof vgg16, "encoders/vgg16.safetensors");
    snprintf(data, sizeof data, "tsv:%s/scenes/captions.tsv:%s/scenes", tmp, tmp);
    RUN(test_features_extract);
    RUN(test_features_train_eval_predict);
    RUN(test_features_transformer);
    RUN(test_features_checks);
    RUN(test_nonfinite_cache_stops_eval);
    scratch_remove(tmp);
    return test_summary();
}
