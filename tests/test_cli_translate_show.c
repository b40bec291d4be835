// test_cli_translate_show.c: the translator's alignment pictures and scores: vision/alignment
// (the layout's size from the labels, each cell's grey 1 - w, weights clamped, the labels
// drawn in the margins), `text translate show` on a tiny date model (one PNG per sentence of
// output length + 1 rows by source length columns, each cell the weight the model gives, as
// recomputed here through translator_greedy; the page valid HTML whose links resolve, the
// wrong outputs first; --input lines; no pictures without attention), `text translate
// score` (BLEU as eval computes it, the bootstrap interval, the length buckets covering
// every pair, --hyps of the wrong length refused; --write-hyps and the paired bootstrap of
// --baseline-hyps against itself and against empty outputs), `text translate report` (notes naming the
// commands of missing inputs, the page valid with its pictures, eval's and score's figures on
// it, a page outside the run refused), and bad input refused in one line (a
// missing model, a sentence classifier's checkpoint, a line the date task cannot read).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli/text_translate_state.h"
#include "core/check.h"
#include "tests/support/cli_check.h"
#include "tests/support/html_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/alignment.h"
#include "vision/image.h"

static Scratch sc;
static const char *tmpdir;

#define TINY "--train-size 64 --batch 16 --embed 4 --hidden 6 --dec-embed 4 --attn-size 5 --log-every 1"
#define run_text(...) scratch_run(&sc, __VA_ARGS__)

static char *read_text(const char *name) { return scratch_read(&sc, name, NULL); }

static void test_picture_layout_and_shades(void) {
    const char *src[3] = {"le", "chat", "\xc3\xa9t\xc3\xa9"}, *tgt[2] = {"the", "<end>"};
    const float w[2 * 4] = {0.0f, 0.5f, 1.0f, 9.0f, 0.25f, 0.75f, -1.0f, 9.0f};  // stride 4
    AlignLayout l;
    alignment_layout(&l, src, 3, tgt, 2, 2);
    // Widest target label "<end>": 5 characters of 12 px; widest source "chat": 4 of 12.
    EXPECT(l.cell == ALIGN_CELL_PX(2) && l.left == 5 * 12 + 12 && l.top == 4 * 12 + 12,
           "layout cell %d left %d top %d", l.cell, l.left, l.top);
    EXPECT(l.w == l.left + 3 * l.cell && l.h == l.top + 2 * l.cell, "size %d x %d", l.h, l.w);
    Image img = alignment_picture(w, 4, src, 3, tgt, 2, 2);
    EXPECT(img.c == 1 && img.h == l.h && img.w == l.w, "picture %d x %d x %d", img.c, img.h, img.w);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            float want = 1.0f - fminf(1.0f, fmaxf(0.0f, w[i * 4 + j]));
            for (int dy = 0; dy < l.cell; dy += l.cell - 1)  // the cell's corners and centre
                for (int dx = 0; dx < l.cell; dx += l.cell - 1) {
                    float got = *image_at(&img, 0, l.top + i * l.cell + dy, l.left + j * l.cell + dx);
                    EXPECT(got == want, "cell (%d, %d) pixel (+%d, +%d): %g, want %g", i, j, dy, dx, got, want);
                }
        }
    // Ink in both margins (the labels), none in the top-left corner.
    int ink_left = 0, ink_top = 0, ink_corner = 0;
    for (int y = 0; y < img.h; y++)
        for (int x = 0; x < img.w; x++) {
            const bool dark = *image_at(&img, 0, y, x) < 0.5f;
            if (!dark) continue;
            if (x < l.left && y >= l.top) ink_left++;
            else if (y < l.top && x >= l.left) ink_top++;
            else if (x < l.left && y < l.top) ink_corner++;
        }
    EXPECT(ink_left > 0 && ink_top > 0 && ink_corner == 0, "ink: left %d top %d corner %d", ink_left,
           ink_top, ink_corner);
    image_free(&img);
    char b[64];
    alignment_label(b, sizeof b, "\xc3\xa9t\xc3\xa9 and a very long label");
    EXPECT(strcmp(b, "?t? and a very l") == 0, "label '%s'", b);
}

// The page's figures in order: data-wrong of each, and the src of its picture.
static int page_figures(const char *html, int *wrong, int max) {
    int n = 0;
    for (const char *p = html; p && (p = strstr(p, "<figure class=\"align\"")) && n < max; p++) {
        const char *q = strstr(p, "data-wrong=\"");
        wrong[n++] = q ? q[12] - '0' : -1;
    }
    return n;
}

// The page NAME (under the scratch folder) is valid HTML whose links resolve under DIR.
static void check_page_file(const char *name, const char *dir) {
    char *html = read_text(name);
    EXPECT(html != NULL, "no %s", name);
    if (!html) html = xstrdup("");
    HtmlCheck c;
    EXPECT(html_check(&c, html) == 0, "%s: %s", name, c.msg);
    char path[1200], msg[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, dir);
    EXPECT(html_check_links(&c, path, msg, sizeof msg) == 0, "%s: %s", name, msg);
    html_check_free(&c);
    free(html);
}

static void check_page(const char *dir) {
    char name[600];
    snprintf(name, sizeof name, "%s/alignments.html", dir);
    check_page_file(name, dir);
}

static void test_show_split(void) {
    int rc = run_text("translate train " TINY " --steps 3 --out %s/run", tmpdir);
    EXPECT(rc == 0, "train exited %d", rc);
    rc = run_text("translate show --model %s/run --count 4 --out %s/run/show", tmpdir, tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && strstr(err, "text translate show: 4 of 1000 sentences ("), "show: %d, %s", rc,
           err ? err : "");
    free(err);
    for (int k = 1; k <= 4; k++) EXPECT(scratch_exists(&sc, "run/show/align_%03d.png", k), "no align_%03d.png", k);
    EXPECT(!scratch_exists(&sc, "run/show/align_005.png"), "a fifth picture");
    check_page("run/show");
    char *html = read_text("run/show/alignments.html");
    int wrong[8], n = page_figures(html, wrong, 8), seen_right = 0, order_ok = 1;
    for (int i = 0; i < n; i++) {
        if (wrong[i] == 0) seen_right = 1;
        else if (seen_right) order_ok = 0;
    }
    EXPECT(n == 4 && order_ok, "%d figures, wrong first: %d", n, order_ok);
    EXPECT(html && strstr(html, "reference") && strstr(html, "bahdanau attention"), "the page's text");
    free(html);
}

// The picture of one sentence given on --input against the weights recomputed here.
static void test_show_input_shades(void) {
    char path[1200];
    snprintf(path, sizeof path, "%s/in.txt", tmpdir);
    CHECK(scratch_write_text(path, "\n3 Mar 87\n") == 0);
    int rc = run_text("translate show --model %s/run/model.safetensors --input %s --out %s/in", tmpdir, path, tmpdir);
    EXPECT(rc == 0, "show --input exited %d", rc);
    check_page("in");
    Error err;
    TranslateModel tm;
    snprintf(path, sizeof path, "%s/run/model.safetensors", tmpdir);
    CHECK(translate_model_load(&tm, path, 1, &err) == 0);
    const TranslatorConfig *c = &tm.state.cfg;
    int *ids = xmalloc((size_t)c->S * sizeof(int)), *out = xmalloc((size_t)c->max_len * sizeof(int)), len, n;
    float *alpha = xmalloc((size_t)(c->max_len + 1) * c->dec.L * sizeof(float));
    CHECK(translate_encode_source(&tm.state, "3 Mar 87", ids, &len, &err) == 0);
    translator_greedy(&tm.m, ids, &len, 1, out, &n, alpha);
    EXPECT(len == 8, "source length %d", len);
    snprintf(path, sizeof path, "%s/in/align_001.png", tmpdir);
    Image img;
    EXPECT(image_load(path, &img, 1, &err) == 0, "%s", err.msg);
    // Labels: one character each, "<end>" the widest target label.
    const char *src[64], *tgt[64];
    for (int j = 0; j < len; j++) src[j] = "x";
    for (int t = 0; t < n; t++) tgt[t] = "x";
    tgt[n] = "<end>";
    AlignLayout l;
    alignment_layout(&l, src, len, tgt, n + 1, 2);
    EXPECT(img.h == l.h && img.w == l.w, "align_001.png is %d x %d, want %d x %d (%d + 1 rows, %d columns)",
           img.h, img.w, l.h, l.w, n, len);
    double worst = 0;
    for (int t = 0; img.h == l.h && img.w == l.w && t <= n; t++)
        for (int j = 0; j < len; j++) {
            const float got = *image_at(&img, 0, l.top + t * l.cell + l.cell / 2, l.left + j * l.cell + l.cell / 2);
            const double d = fabs(got - (1.0 - alpha[(size_t)t * c->dec.L + j]));
            if (d > worst) worst = d;
        }
    EXPECT(worst <= 0.5 / 255 + 1e-6, "a cell's grey is %g from 1 - its weight", worst);
    image_free(&img);
    free(ids), free(out), free(alpha);
    translate_model_free(&tm);
    char *html = read_text("in/alignments.html");
    EXPECT(html && strstr(html, "3 Mar 87") && !strstr(html, "reference"), "the --input page");
    free(html);
    // The same from standard input: the same picture.
    snprintf(path, sizeof path, "%s/in.txt", tmpdir);
    rc = run_text("translate show --model %s/run --input - --out %s/stdin < %s", tmpdir, tmpdir, path);
    char *a = read_text("in/align_001.png"), *b = read_text("stdin/align_001.png");
    size_t na = 0, nb = 0;
    free(scratch_read(&sc, "in/align_001.png", &na));
    free(scratch_read(&sc, "stdin/align_001.png", &nb));
    EXPECT(rc == 0 && a && b && na == nb && memcmp(a, b, na) == 0, "--input - gave another picture (%d)", rc);
    free(a), free(b);
    html = read_text("stdin/alignments.html");
    EXPECT(html && strstr(html, "standard input"), "the page names standard input");
    free(html);
}

static void test_show_without_attention(void) {
    int rc = run_text("translate train " TINY " --attention none --steps 2 --out %s/none", tmpdir);
    EXPECT(rc == 0, "train exited %d", rc);
    rc = run_text("translate show --model %s/none --count 2 --out %s/none/show", tmpdir, tmpdir);
    EXPECT(rc == 0 && !scratch_exists(&sc, "none/show/align_001.png"), "show of none: %d", rc);
    check_page("none/show");
    char *html = read_text("none/show/alignments.html");
    EXPECT(html && strstr(html, "no alignment to draw"), "the page says why there are no pictures");
    free(html);
}

static double json_num(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

// 120 English-Spanish pairs of a small word-for-word language, as test_cli_translate's.
static void write_pairs(const char *path) {
    static const char *en[] = {"the", "cat", "dog", "sees", "a", "house", "big", "runs"};
    static const char *es[] = {"el", "gato", "perro", "ve", "una", "casa", "grande", "corre"};
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < 120; i++) {
        const int n = 2 + i % 4;
        for (int side = 0; side < 2; side++)
            for (int k = 0; k < n; k++)
                fprintf(f, "%s%s", k ? " " : (side ? "\t" : ""), (side ? es : en)[(i * 7 + k * 3) % 8]);
        fputc('\n', f);
    }
    fclose(f);
}

// --write-hyps and --baseline-hyps on the pairs run whose unpaired score is s: the outputs
// written one line a pair and scored again the same; paired against themselves a difference
// of 0 with sacreBLEU's p = 1/(samples + 1); against empty outputs (BLEU and chrF 0) a
// difference of exactly the system's scores, the system's own interval unchanged (the same
// resamples).
static void test_score_paired(const cJSON *s) {
    int rc = run_text("translate score --model %s/pairs --samples 50 --write-hyps %s/pairs/test.hyps",
                      tmpdir, tmpdir);
    char *hyps = read_text("pairs/test.hyps");
    int lines = 0;
    for (const char *p = hyps ? hyps : ""; *p; p++) lines += *p == '\n';
    const int pairs = (int)json_num(s, "pairs");
    EXPECT(rc == 0 && lines == pairs, "--write-hyps: %d lines for %d pairs", lines, pairs);
    rc = run_text("translate score --model %s/pairs --samples 50 --hyps %s/pairs/test.hyps "
                  "--baseline-hyps %s/pairs/test.hyps --json", tmpdir, tmpdir, tmpdir);
    char *out = read_text("stdout.txt");
    cJSON *same = cJSON_Parse(out ? out : "");
    free(out);
    EXPECT(rc == 0 && same, "paired against itself: %d", rc);
    if (same)
        EXPECT(json_num(same, "bleu") == json_num(s, "bleu") && json_num(same, "bleu_diff") == 0 &&
                   json_num(same, "chrf_diff_lower") == 0 && json_num(same, "chrf_diff_upper") == 0 &&
                   fabs(json_num(same, "bleu_p") - 1.0 / 51) < 1e-6,  // %.6g in the JSON
               "BLEU %g, difference %g, p %g", json_num(same, "bleu"), json_num(same, "bleu_diff"),
               json_num(same, "bleu_p"));
    cJSON_Delete(same);
    char path[1200];
    snprintf(path, sizeof path, "%s/empty.hyps", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < pairs; i++) fputc('\n', f);
    fclose(f);
    rc = run_text("translate score --model %s/pairs --samples 50 --baseline-hyps %s --json", tmpdir, path);
    out = read_text("stdout.txt");
    cJSON *p = cJSON_Parse(out ? out : "");
    free(out);
    EXPECT(rc == 0 && p, "paired against empty outputs: %d", rc);
    if (p) {
        EXPECT(json_num(p, "baseline_bleu") == 0 && json_num(p, "baseline_chrf") == 0 &&
                   fabs(json_num(p, "bleu_diff") - json_num(s, "bleu")) < 1e-9 &&
                   fabs(json_num(p, "chrf_diff") - json_num(s, "chrf")) < 1e-9,
               "differences %g %g, scores %g %g", json_num(p, "bleu_diff"), json_num(p, "chrf_diff"),
               json_num(s, "bleu"), json_num(s, "chrf"));
        EXPECT(json_num(p, "chrf_ci") == json_num(s, "chrf_ci") &&
                   fabs(json_num(p, "chrf_diff_ci") - json_num(s, "chrf_ci")) < 1e-9 &&
                   json_num(p, "chrf_diff_lower") > 0,
               "the same resamples: chrF +- %g, difference +- %g [%g, ...]", json_num(p, "chrf_ci"),
               json_num(p, "chrf_diff_ci"), json_num(p, "chrf_diff_lower"));
    }
    cJSON_Delete(p);
    free(hyps);
}

static void test_score(void) {
    char path[1200];
    snprintf(path, sizeof path, "%s/p.tsv", tmpdir);
    write_pairs(path);
    int rc = run_text("translate train --bpe-merges 30 --max-src 12 --max-len 12 --batch 8 --embed 4 "
                      "--hidden 6 --dec-embed 4 --attn-size 5 --data pairs:%s --steps 20 --out %s/pairs",
                      path, tmpdir);
    EXPECT(rc == 0, "train on pairs exited %d", rc);
    rc = run_text("translate eval --model %s/pairs/model.safetensors --json", tmpdir);
    char *out = read_text("stdout.txt");
    cJSON *e = cJSON_Parse(out ? out : "");
    free(out);
    rc |= run_text("translate score --model %s/pairs --samples 50 --json", tmpdir);
    out = read_text("stdout.txt");
    cJSON *s = cJSON_Parse(out ? out : "");
    EXPECT(rc == 0 && e && s, "eval and score: %d, %s", rc, out ? out : "");
    free(out);
    if (e && s) {
        EXPECT(fabs(json_num(s, "bleu") - json_num(e, "bleu")) < 1e-9 &&
                   fabs(json_num(s, "chrf") - json_num(e, "chrf")) < 1e-9,
               "score's BLEU %g chrF %g, eval's %g %g", json_num(s, "bleu"), json_num(s, "chrf"),
               json_num(e, "bleu"), json_num(e, "chrf"));
        EXPECT(json_num(s, "bleu_ci") >= 0 && json_num(s, "chrf_ci") > 0 && json_num(s, "samples") == 50,
               "intervals: %g %g", json_num(s, "bleu_ci"), json_num(s, "chrf_ci"));
        const cJSON *b = cJSON_GetObjectItem(s, "by_length");
        int total = 0, buckets = cJSON_GetArraySize(b);
        for (int k = 0; k < buckets; k++) total += (int)json_num(cJSON_GetArrayItem(b, k), "sentences");
        EXPECT(buckets == 6 && total == (int)json_num(e, "pairs") && total > 0, "%d buckets hold %d sentences",
               buckets, total);
    }
    test_score_paired(s);
    cJSON_Delete(e), cJSON_Delete(s);
    snprintf(path, sizeof path, "%s/hyps.txt", tmpdir);
    CHECK(scratch_write_text(path, "1987-03-03\n") == 0);
    rc = run_text("translate score --model %s/run --hyps %s", tmpdir, path);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "hyps.txt: 1 lines, but the split holds 1000 pairs");
    rc = run_text("translate score --model %s/run --baseline-hyps %s", tmpdir, path);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "hyps.txt: 1 lines, but the split holds 1000 pairs");
}

static void test_report(void) {
    // Before eval and show: notes naming the commands that make them.
    int rc = run_text("translate report --model %s/run", tmpdir);
    EXPECT(rc == 0, "report exited %d", rc);
    char *html = read_text("run/report.html");
    EXPECT(html && strstr(html, "eval.json is missing") && strstr(html, "bin/text translate eval --model ") &&
               !strstr(html, "score.json is missing"),
           "the notes of a dates run without eval.json");
    EXPECT(html && strstr(html, "pairs/s</th>") && !strstr(html, "images/s"), "the run table counts pairs");
    free(html);
    rc = run_text("translate eval --model %s/run/model.safetensors --json", tmpdir);
    char *eval = read_text("stdout.txt"), path[1200];
    cJSON *e = cJSON_Parse(eval ? eval : "");
    snprintf(path, sizeof path, "%s/run/eval.json", tmpdir);
    CHECK(scratch_write_text(path, eval ? eval : "") == 0);
    free(eval);
    rc |= run_text("translate report --model %s/run --out %s/run/page.html", tmpdir, tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && e, "eval and report: %d, %s", rc, err ? err : "");
    free(err);
    check_page_file("run/page.html", "run");
    html = read_text("run/page.html");
    if (!html) html = xstrdup("");
    EXPECT(!strstr(html, "class=\"missing\"") && strstr(html, "show/align_001.png") &&
               strstr(html, "show/alignments.html") && strstr(html, "src=\"loss.png\""),
           "the page's pictures and links");
    EXPECT(e && fabs(html_data_value(html, "exact_match") - 100.0 * json_num(e, "exact_match")) < 1e-6 &&
               fabs(html_data_value(html, "alignment_accuracy") - 100.0 * json_num(e, "alignment_accuracy")) < 1e-6,
           "exact match %g and alignment %g on the page", html_data_value(html, "exact_match"),
           html_data_value(html, "alignment_accuracy"));
    free(html);
    cJSON_Delete(e);
    // A pairs run with its score: BLEU, its interval and the length buckets.
    rc = run_text("translate score --model %s/pairs --samples 50 --json", tmpdir);
    char *score = read_text("stdout.txt");
    cJSON *s = cJSON_Parse(score ? score : "");
    snprintf(path, sizeof path, "%s/pairs/score.json", tmpdir);
    CHECK(scratch_write_text(path, score ? score : "") == 0);
    free(score);
    rc |= run_text("translate report --model %s/pairs", tmpdir);
    EXPECT(rc == 0 && s, "score and report of pairs: %d", rc);
    check_page_file("pairs/report.html", "pairs");
    html = read_text("pairs/report.html");
    if (!html) html = xstrdup("");
    EXPECT(s && fabs(html_data_value(html, "bleu_ci") - json_num(s, "bleu_ci")) < 1e-6 &&
               !isnan(html_data_value(html, "bleu_0-10")),
           "BLEU's interval %g and the 0-10 bucket on the page", html_data_value(html, "bleu_ci"));
    EXPECT(html && strstr(html, "the alignment pictures is missing") && strstr(html, "bin/text translate show --model "),
           "the note of the missing alignments");
    free(html);
    cJSON_Delete(s);
    // Refused in one line: a page outside the run folder, a classifier's run, no run.
    rc = run_text("translate report --model %s/run --out %s/elsewhere.html", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "the page must be in the run folder");
    rc = run_text("translate report --model %s/cls", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text translate checkpoint (format 'attend-text-classify-1')");
    rc = run_text("translate report --model %s/nothing", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "no model.safetensors here");
}

static void test_bad_input(void) {
    int rc = run_text("translate show --model %s/nothing --out %s/x", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "text translate show: ");
    EXPECT(!scratch_exists(&sc, "x"), "an output folder for a missing model");
    char path[1200];
    snprintf(path, sizeof path, "%s/s.tsv", tmpdir);
    CHECK(scratch_write_text(path, "1\tgood\n0\tbad\n1\tgreat\n0\tawful\n1\tnice\n0\tpoor\n") == 0);
    rc = run_text("classify train --T 4 --embed 4 --hidden 4 --batch 2 --valid-share 0.34 "
                  "--data %s --steps 1 --out %s/cls", path, tmpdir);
    EXPECT(rc == 0, "classify train exited %d", rc);
    rc = run_text("translate show --model %s/cls --out %s/x", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text translate checkpoint (format 'attend-text-classify-1'");
    rc = run_text("translate score --model %s/cls", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "text translate score: ");
    snprintf(path, sizeof path, "%s/bad.txt", tmpdir);
    CHECK(scratch_write_text(path, "3 mar 87\n3 M\xc3\xa4r 87\n") == 0);
    rc = run_text("translate show --model %s/run --input %s --out %s/x", tmpdir, path, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "bad.txt: line 2: byte 4");
    rc = run_text("translate show --model %s/run --data pairs:%s --out %s/x", tmpdir, path, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "another kind of data");
}

int main(void) {
    if (scratch_open(&sc, "test_cli_translate_show", "text")) return 1;
    tmpdir = sc.dir;
    RUN(test_picture_layout_and_shades);
    RUN(test_show_split);
    RUN(test_show_input_shades);
    RUN(test_show_without_attention);
    RUN(test_score);
    RUN(test_bad_input);
    RUN(test_report);
    scratch_remove(sc.dir);
    return test_summary();
}
