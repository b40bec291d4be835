// End-to-end tests of bin/draw on its generated data sets (cli/draw_data.h), on real MNIST
// and Fashion-MNIST (`make data`): two-digit MNIST (--data mnist2, 60 x 60 grey) and the
// colour scenes (--data scenes, 64 x 64 x 3) with the paper's SVHN preset: train, eval
// (bound per image and per dimension; the importance-weighted estimate never above the
// bound of the same samples), generate and reconstruct frames of the right size and
// colour kind, resume bit for bit, and one-line refusals of a model used on the wrong data.
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tests/support/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/image.h"

static Scratch sc;
static const char *tmpdir;

#define run_draw(...) scratch_run(&sc, __VA_ARGS__)

// Tiny models: seconds on one core.
#define MNIST2 "--data mnist2 --T 3 --read 2 --write 3 --hidden 16 --z 4 --batch 8 " \
               "--valid-every 3 --valid-images 24 --threads 2"
// The SVHN preset's read and write grids (12 x 12) with a short, small recurrence.
#define SCENES "--data scenes --preset svhn --T 2 --hidden 16 --z 4 --batch 6 " \
               "--valid-every 2 --valid-images 12 --threads 2"

static cJSON *stdout_json(void) {
    char *out = scratch_read(&sc, "stdout.txt", NULL);
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "not JSON: %s", out ? out : "(none)");
    free(out);
    return j;
}

static double num(const cJSON *j, const char *key) {
    const cJSON *it = cJSON_GetObjectItem(j, key);
    EXPECT(cJSON_IsNumber(it), "key %s missing", key);
    return cJSON_IsNumber(it) ? it->valuedouble : NAN;
}

// The picture at DIR/NAME: its channels and size; 0 when it cannot be read.
static int picture(const char *name, int *c, int *h, int *w) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    Image img = {0};
    Error err;
    if (image_load(path, &img, 0, &err)) return 0;
    *c = img.c, *h = img.h, *w = img.w;
    image_free(&img);
    return 1;
}

// count tiles in a square grid of side S px at scale 2, margin 2.
static int grid_side(int count, int S) {
    int cols = (int)ceil(sqrt((double)count));
    return cols * S * 2 + (cols + 1) * 2;
}

static void expect_stderr_has(const char *what, const char *text) {
    char *err = scratch_read(&sc, "stderr.txt", NULL);
    EXPECT(err && strstr(err, text), "%s: stderr lacks '%s': %s", what, text, err ? err : "");
    EXPECT(scratch_count_lines(err) == 1, "%s: %d lines on stderr", what, scratch_count_lines(err));
    free(err);
}

static void test_mnist2(void) {
    int rc = run_draw("train " MNIST2 " --steps 3 --out %s/m2", tmpdir);
    EXPECT(rc == 0, "train exited %d", rc);
    if (rc) return;
    rc = run_draw("eval --model %s/m2/model.safetensors --data mnist2 --limit 16 --samples 4 "
                  "--batch 8 --json", tmpdir);
    EXPECT(rc == 0, "eval exited %d", rc);
    cJSON *j = stdout_json();
    double bound = num(j, "nll_bound"), iw = num(j, "nll_iw"), dims = num(j, "dims");
    EXPECT(dims == 3600, "dims %g", dims);
    EXPECT_NEAR(num(j, "nll_bound_per_dim"), bound / 3600, 1e-7, 1e-5);
    // An untrained model on binary 60 x 60 images: near 3600 ln 2 = 2495 nats or below.
    EXPECT(bound > 300 && bound < 4000, "bound %g", bound);
    // log-mean-exp of the same samples' log-weights is at least their mean: the
    // importance-weighted NLL never exceeds the bound of the samples it averages.
    EXPECT(iw <= bound + 1e-3 && iw > bound - 200, "IW %g, bound %g", iw, bound);
    cJSON_Delete(j);
    rc = run_draw("generate --model %s/m2/model.safetensors --count 4 --out %s/m2gen", tmpdir,
                  tmpdir);
    EXPECT(rc == 0, "generate exited %d", rc);
    int c = 0, h = 0, w = 0;
    EXPECT(picture("m2gen/step_03.png", &c, &h, &w) && c == 1 && w == grid_side(4, 60) &&
               h == w,
           "step_03.png is %dx%dx%d", c, h, w);
    EXPECT(picture("m2gen/draw.gif", &c, &h, &w) && w == grid_side(4, 60), "draw.gif");
    // --sample-quality with a 28 x 28 CNN: each sample and each test image cut into its two
    // digits, judged one by one (2 N digits), both_legible the pairs' share, at most the
    // digits' legible share allows; the text says so on a line for each.
    rc = run_draw("classify train --model cnn --size 28 --fragments 0 --steps 3 --batch 16 "
                  "--valid-images 16 --out %s/cnn28", tmpdir);
    EXPECT(rc == 0, "classify train --size 28 exited %d", rc);
    rc = run_draw("eval --model %s/m2/model.safetensors --data mnist2 --limit 8 --batch 8 "
                  "--sample-quality %s/cnn28/model.safetensors --quality-samples 12 --json", tmpdir, tmpdir);
    j = stdout_json();
    const char *keys[2] = {"sample_quality", "data_quality"};
    for (int k = 0; k < 2; k++) {
        const cJSON *q = cJSON_GetObjectItem(j, keys[k]);
        EXPECT(rc == 0 && q, "eval --sample-quality: no %s", keys[k]);
        if (!q) continue;
        double legible = num(q, "legible"), both = num(q, "both_legible");
        EXPECT(num(q, "samples") == 12 && num(q, "digits") == 2 && num(q, "digits_judged") == 24,
               "%s: samples %g, digits %g, judged %g", keys[k], num(q, "samples"), num(q, "digits"),
               num(q, "digits_judged"));
        // a pair both legible is two legible digits, another at most one: with l the digits'
        // share, 2 l - 1 <= both <= l
        EXPECT(both >= 0 && both <= legible + 1e-9 && both >= 2 * legible - 1 - 1e-9,
               "%s: both %g, legible %g", keys[k], both, legible);
        EXPECT(num(q, "entropy") <= num(q, "entropy_max") + 1e-9, "%s: entropy", keys[k]);
        // both_legible's Wilson interval over the 12 images holds it and is wide at n = 12
        const double lo = num(q, "both_legible_low95"), hi = num(q, "both_legible_high95");
        EXPECT(lo <= both + 1e-9 && both <= hi + 1e-9 && hi - lo > 0.1, "%s: both %g in [%g, %g]",
               keys[k], both, lo, hi);
    }
    cJSON_Delete(j);
    // draw report shows both rows (samples, test images) with the pairs' figure
    char *json = scratch_read(&sc, "stdout.txt", NULL), path[1200];
    snprintf(path, sizeof path, "%s/m2/eval.json", tmpdir);
    FILE *fp = fopen(path, "w");
    if (fp) fputs(json ? json : "", fp), fclose(fp);
    free(json);
    rc = run_draw("report %s/m2", tmpdir);
    char *page = scratch_read(&sc, "m2/report.html", NULL);
    EXPECT(rc == 0 && page && strstr(page, "data-key=\"both_legible\"") &&
               strstr(page, "data-key=\"both_legible_data\"") && strstr(page, "both digits legible"),
           "report: exit %d, %s", rc, page ? "the page lacks the two-digit figures" : "no page");
    free(page);
    rc = run_draw("eval --model %s/m2/model.safetensors --data mnist2 --limit 8 --batch 8 "
                  "--sample-quality %s/cnn28/model.safetensors --quality-samples 12", tmpdir, tmpdir);
    char *text = scratch_read(&sc, "stdout.txt", NULL);
    EXPECT(rc == 0 && text && strstr(text, "sample quality (12 samples from the prior, each cut into its two digits") &&
               strstr(text, "image quality (the first 12 test images, each cut into its two digits") &&
               strstr(text, "of the 24 digits"),
           "eval --sample-quality text: %s", text ? text : "");
    free(text);
    // The two-digit model on one-digit data is refused in one line.
    rc = run_draw("eval --model %s/m2/model.safetensors --data mnist --limit 4", tmpdir);
    EXPECT(rc != 0, "eval on mnist exited 0");
    expect_stderr_has("mnist2 model on mnist", "60x60x1");
}

static void test_scenes_colour(void) {
    int rc = run_draw("train " SCENES " --steps 2 --seed 4 --out %s/sc", tmpdir);
    EXPECT(rc == 0, "train exited %d", rc);
    if (rc) return;
    char *err = scratch_read(&sc, "stderr.txt", NULL);
    EXPECT(err && strstr(err, "64x64") && strstr(err, "colour intensities") &&
               strstr(err, "read 12x12, write 12x12"),
           "header: %s", err ? err : "");
    free(err);
    rc = run_draw("eval --model %s/sc/model.safetensors --data scenes --limit 6 --batch 6 "
                  "--json", tmpdir);
    EXPECT(rc == 0, "eval exited %d", rc);
    cJSON *j = stdout_json();
    double bound = num(j, "nll_bound");
    EXPECT(num(j, "dims") == 12288, "dims");
    EXPECT_NEAR(num(j, "nll_bound_per_dim"), bound / 12288, 1e-7, 1e-5);
    const cJSON *bin = cJSON_GetObjectItem(j, "binarization");
    EXPECT(cJSON_IsString(bin) && !strcmp(bin->valuestring, "colour intensities"), "binarization");
    // Cross-entropy of dark intensities under sigmoid(0) = 0.5: about 12288 ln 2 = 8517.
    EXPECT(bound > 2000 && bound < 12000, "bound %g", bound);
    cJSON_Delete(j);
    rc = run_draw("generate --model %s/sc/model.safetensors --count 4 --out %s/scgen "
                  "--show-attention", tmpdir, tmpdir);
    EXPECT(rc == 0, "generate exited %d", rc);
    int c = 0, h = 0, w = 0;
    EXPECT(picture("scgen/step_02.png", &c, &h, &w) && c == 3 && w == grid_side(4, 64),
           "step_02.png is %dx%dx%d", c, h, w);
    EXPECT(picture("scgen/final.png", &c, &h, &w) && c == 3, "final.png is %d-channel", c);
    rc = run_draw("reconstruct --model %s/sc/model.safetensors --data scenes --count 4 "
                  "--out %s/screc", tmpdir, tmpdir);
    EXPECT(rc == 0 && picture("screc/input.png", &c, &h, &w) && c == 3,
           "reconstruct exited %d, input.png %d-channel", rc, c);
    // Resume: 2 + 2 steps equal 4 in one go.
    rc = run_draw("train " SCENES " --steps 4 --seed 4 --out %s/sc4", tmpdir);
    EXPECT(rc == 0, "4-step run exited %d", rc);
    rc = run_draw("train --steps 4 --resume --valid-every 2 --valid-images 12 --threads 2 "
                  "--out %s/sc", tmpdir);
    EXPECT(rc == 0, "resumed run exited %d", rc);
    char a[600], b[600], why[700] = "";
    snprintf(a, sizeof a, "%s/sc/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/sc4/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, NULL, why, sizeof why), "colour resume differs: %s", why);
    // Refusals, one line each: a colour model on grey data, colour data for a grey run's
    // resume, an unknown preset.
    rc = run_draw("eval --model %s/sc/model.safetensors --data mnist2 --limit 4", tmpdir);
    EXPECT(rc != 0, "colour model on mnist2 exited 0");
    expect_stderr_has("colour model on mnist2", "64x64x3");
    rc = run_draw("train --resume --data mnist2 --steps 6 --out %s/sc", tmpdir);
    EXPECT(rc != 0, "resume with other data exited 0");
    expect_stderr_has("resume with other data", "data");
    rc = run_draw("train --preset cifar --out %s/x", tmpdir);
    EXPECT(rc != 0, "--preset cifar exited 0");
    expect_stderr_has("unknown preset", "preset");
}

int main(void) {
    if (scratch_open(&sc, "test_cli_draw_data", "draw")) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    tmpdir = sc.dir;
    RUN(test_mnist2);
    RUN(test_scenes_colour);
    int rc = test_summary();
    if (rc == 0) scratch_remove(tmpdir);
    return rc;
}
