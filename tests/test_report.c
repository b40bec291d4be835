// test_report.c: `caption report` and `draw report` on short runs of each model. Each page
// must pass the strict checker (tests/support/html_check.h), every file it links must exist
// under the run folder and every PNG or GIF decode, and the numbers it shows must be those
// of the run's eval JSON. Also: the per-image file of `caption eval --per-image` against the
// corpus scores (object F1's counts pooled over the images), the strips it chose, run.json across --resume, file names that need
// escaping, missing inputs (notes, not failures) and broken ones (one-line errors).
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/run_info.h"
#include "tests/support/html_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch cap, drw;  // bin/caption and bin/draw, each with its scratch folder

#define CAP_SMALL                                                                        \
    " --image-size 64 --channels 4,8,16 --embed 16 --hidden 32 --attn-dim 16 --batch 8"   \
    " --train-count 64 --val-count-scenes 16 --test-count 16 --threads 1 --quiet"
#define CAP_DATA " --data scenes --train-count 64 --val-count-scenes 16 --test-count 16 --threads 1 --quiet"
#define DRAW_SMALL " --T 6 --read 3 --write 3 --hidden 24 --z 6 --batch 50 --valid-every 20 --valid-images 200"

// A run folder and a strips folder whose names need escaping in text and in links.
#define CAP_RUN "cap run & <1> 'q'"
#define STRIPS "strips #2 & 50%"

static char *read_text(const char *dir, const char *name) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return scratch_read_text(path, NULL);
}

static cJSON *read_json(const char *dir, const char *name) {
    char *t = read_text(dir, name);
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    free(t);
    return j;
}

// Moves the last run's stdout to DIR/NAME (scratch_run sends stdout to its own file).
static void keep_stdout(const Scratch *s, const char *dir, const char *name) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    EXPECT(rename(s->out_path, path) == 0, "cannot move %s to %s", s->out_path, path);
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

// Checks the page RUN/report.html: well formed, its links resolve to good files. Returns
// the page text (malloc'd) or NULL.
static char *check_page(const char *run, int min_images) {
    char *page = read_text(run, "report.html");
    EXPECT(page != NULL, "%s/report.html not written", run);
    if (!page) return NULL;
    HtmlCheck c;
    int r = html_check(&c, page);
    EXPECT(r == 0, "%s/report.html: %s", run, c.msg);
    char msg[1024];
    int bad = html_check_links(&c, run, msg, sizeof msg);
    EXPECT(bad == 0, "%d bad links, the first: %s", bad, msg);
    EXPECT(c.n_images >= min_images, "%d images on the page, expected at least %d", c.n_images, min_images);
    EXPECT(strlen(page) < 2000000, "page is %zu bytes", strlen(page));
    EXPECT(!strstr(page, "http://") && !strstr(page, "https://"), "the page refers to the network");
    html_check_free(&c);
    return page;
}

static char cap_run[600];  // the trained captioner's folder

static void train_and_eval_captioner(void) {
    snprintf(cap_run, sizeof cap_run, "%s/" CAP_RUN, cap.dir);
    int st = scratch_run(&cap, "train --out \"%s\" --steps 24 --seed 2" CAP_SMALL, cap_run);
    EXPECT(st == 0, "caption train failed");
    st = scratch_run(&cap, "eval --model \"%s/model.safetensors\" --split test --beam 2 --json --per-image \"%s/per_image.json\" "
                     "--attention-out \"%s/%s\" --attention-count 3" CAP_DATA,
                     cap_run, cap_run, cap_run, STRIPS);
    keep_stdout(&cap, cap_run, "eval.json");
    char *err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 0, "caption eval failed: %s", err);
    free(err);
}

static void test_caption_per_image_file(void) {
    cJSON *eval = read_json(cap_run, "eval.json"), *per = read_json(cap_run, "per_image.json");
    EXPECT(eval && per, "eval.json or per_image.json missing or not JSON");
    if (!eval || !per) goto done;
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(per, "items");
    int n = cJSON_GetArraySize(items);
    EXPECT(n == 16 && num(per, "images") == 16 && num(eval, "images") == 16, "%d items", n);
    // The corpus CIDEr-D is the mean of the per-image ones; the corpus grounding pools the
    // per-image counts.
    double cider = 0, words = 0, hits = 0, cid[16];
    double named = 0, truth = 0, right = 0;  // object F1's counts
    int strips = 0;
    for (int i = 0; i < n && i < 16; i++) {
        const cJSON *it = cJSON_GetArrayItem(items, i);
        EXPECT(num(it, "index") == i, "item %d has index %g", i, num(it, "index"));
        cid[i] = num(it, "cider_d");
        cider += cid[i];
        double b = num(it, "bleu4");
        EXPECT(b >= 0 && b <= 1, "item %d bleu4 %g", i, b);
        words += num(it, "object_words");
        hits += num(it, "grounded");
        EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(it, "references")) == 5, "item %d: references", i);
        // The scene's objects: each has a colour of its own, and every reference names each
        // once or twice, so they are the distinct colour words of the first reference.
        const cJSON *ref0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(it, "references"), 0);
        static const char *const colours[] = {"red", "green", "blue", "yellow", "purple", "cyan", "white"};
        int in_scene = 0;
        for (int c = 0; c < 7; c++) {
            char word[16];
            snprintf(word, sizeof word, " %s ", colours[c]);
            char padded[200];
            snprintf(padded, sizeof padded, " %s ", cJSON_IsString(ref0) ? ref0->valuestring : "");
            in_scene += strstr(padded, word) != NULL;
        }
        double on = num(it, "objects_named"), ot = num(it, "objects_true"), orr = num(it, "objects_right");
        EXPECT(ot == in_scene && in_scene >= 1, "item %d: objects_true %g, the scene has %d", i, ot, in_scene);
        EXPECT(orr >= 0 && orr <= on && orr <= ot, "item %d: objects named %g, right %g", i, on, orr);
        named += on, truth += ot, right += orr;
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "strip");
        if (cJSON_IsString(s)) {
            strips++;
            char want[32], path[1200];
            snprintf(want, sizeof want, "%05d.png", i);
            EXPECT(!strcmp(s->valuestring, want), "item %d strip %s", i, s->valuestring);
            snprintf(path, sizeof path, "%s/%s/%s", cap_run, STRIPS, want);
            struct stat sb;
            EXPECT(stat(path, &sb) == 0, "%s missing", path);
        }
    }
    EXPECT(fabs(cider / n - num(eval, "cider")) < 2e-6, "mean per-image CIDEr-D %.7f, corpus %.7f", cider / n, num(eval, "cider"));
    EXPECT(num(eval, "object_words") == words, "object words %g vs %g", words, num(eval, "object_words"));
    if (words > 0) EXPECT(fabs(hits / words - num(eval, "grounding")) < 2e-6, "grounding %g vs %g", hits / words, num(eval, "grounding"));
    // Object F1 pools the per-image counts (micro-averaged).
    EXPECT(num(eval, "objects_named") == named && num(eval, "objects_true") == truth &&
               num(eval, "objects_right") == right,
           "object counts %g %g %g vs %g %g %g", named, truth, right, num(eval, "objects_named"),
           num(eval, "objects_true"), num(eval, "objects_right"));
    double p = named > 0 ? right / named : 0, rc = right / truth, f1 = p + rc > 0 ? 2 * p * rc / (p + rc) : 0;
    EXPECT(fabs(num(eval, "object_precision") - p) < 2e-6 && fabs(num(eval, "object_recall") - rc) < 2e-6 &&
               fabs(num(eval, "object_f1") - f1) < 2e-6,
           "object P %g R %g F1 %g, from the counts %g %g %g", num(eval, "object_precision"),
           num(eval, "object_recall"), num(eval, "object_f1"), p, rc, f1);
    // Strips: the first 3, the best 3 and the worst 3 by CIDEr-D (ties by index).
    unsigned char want[16] = {0};
    int order[16];
    for (int i = 0; i < 16; i++) order[i] = i;
    for (int i = 0; i < 16; i++)
        for (int j = i + 1; j < 16; j++)
            if (cid[order[j]] > cid[order[i]] || (cid[order[j]] == cid[order[i]] && order[j] < order[i])) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    for (int k = 0; k < 3; k++) want[k] = want[order[k]] = want[order[15 - k]] = 1;
    int expected = 0;
    for (int i = 0; i < 16; i++) {
        expected += want[i];
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(items, i), "strip");
        EXPECT(cJSON_IsString(s) == want[i], "image %d: strip %s", i, want[i] ? "missing" : "not chosen");
    }
    EXPECT(strips == expected, "%d strips, expected %d", strips, expected);
done:
    cJSON_Delete(eval);
    cJSON_Delete(per);
}

static void test_caption_report(void) {
    int st = scratch_run(&cap, "report \"%s\" --strips \"%s\" --ranked 5", cap_run, STRIPS);
    char *err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 0, "caption report failed: %s", err);
    free(err);
    char *page = check_page(cap_run, 3 + 5);
    cJSON *eval = read_json(cap_run, "eval.json");
    if (!page || !eval) goto done;
    static const char *const keys[] = {"bleu1", "bleu2", "bleu3", "bleu4", "cider", "rougeL", "grounding",
                                       "object_f1", "object_precision", "object_recall"};
    for (int k = 0; k < 10; k++) {
        double shown = html_data_value(page, keys[k]), want = num(eval, keys[k]);
        EXPECT(shown == want, "%s on the page %.9g, eval.json %.9g", keys[k], shown, want);
        char text[64];
        snprintf(text, sizeof text, "data-value=\"%.10g\">%.4f</td>", want, want);
        EXPECT(strstr(page, text) != NULL, "%s: no cell \"%s\"", keys[k], text);
    }
    // Each card's object counts, as per_image.json has them (image 0 has a strip).
    cJSON *per = read_json(cap_run, "per_image.json");
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(per, "items"), 0);
    char objects[128];
    snprintf(objects, sizeof objects, "%.0f of %.0f objects named right, %.0f in the scene",
             num(first, "objects_right"), num(first, "objects_named"), num(first, "objects_true"));
    EXPECT(first && strstr(page, objects), "no \"%s\" on the page", objects);
    cJSON_Delete(per);
    // Names escaped in text, percent-encoded in links.
    EXPECT(strstr(page, "cap run &amp; &lt;1&gt; &#39;q&#39;") || strstr(page, "cap run &amp; &lt;1&gt; 'q'"),
           "the run's name is not escaped in the page");
    EXPECT(!strstr(page, "<1>"), "a raw '<1>' in the page");
    EXPECT(strstr(page, "<h1>Captioner run cap run &amp;") && strstr(page, ". Trained for "),
           "the header's title and training sentence");
    EXPECT(strstr(page, "src=\"strips%20%232%20%26%2050%25/00000.png\""), "strip link not percent-encoded");
    // The sections, the run's record and the curves.
    static const char *const parts[] = {"id=\"results\"", "id=\"curves\"", "id=\"images\"", "id=\"best\"",
                                        "id=\"worst\"", "id=\"model\"", "id=\"data\"", "id=\"run\"",
                                        "report_files/loss.png", "report_files/val_bleu4.png",
                                        "report_files/grad_norm.png",
                                        "<select id=\"sort\">", "The best 5 by CIDEr-D", "The worst 5 by CIDEr-D"};
    for (int k = 0; k < (int)(sizeof parts / sizeof *parts); k++)
        EXPECT(strstr(page, parts[k]) != NULL, "no %s on the page", parts[k]);
    // The commit and CPU as run.json has them (the test program may be built from another
    // commit than bin/caption).
    cJSON *info = read_json(cap_run, "run.json");
    const cJSON *inv = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(info, "invocations"), 0);
    const cJSON *commit = cJSON_GetObjectItemCaseSensitive(inv, "commit");
    EXPECT(cJSON_IsString(commit) && commit->valuestring[0] && strstr(page, commit->valuestring),
           "the commit of run.json is not on the page");
    cJSON_Delete(info);
    char cpu[256];
    run_info_cpu_model(cpu, sizeof cpu);
    EXPECT(strstr(page, cpu) != NULL || strpbrk(cpu, "&<>\"'"), "the CPU model is not on the page");
    EXPECT(strstr(page, "--steps 24") != NULL, "the command line is not on the page");
done:
    free(page);
    cJSON_Delete(eval);
}

static void test_caption_report_missing_and_broken_inputs(void) {
    // Without eval outputs: notes saying what to run, still a valid page.
    char run[700];
    snprintf(run, sizeof run, "%s/bare", cap.dir);
    int st = scratch_run(&cap, "train --out %s --steps 8" CAP_SMALL, run);
    EXPECT(st == 0, "train failed");
    st = scratch_run(&cap, "report %s", run);
    EXPECT(st == 0, "report without eval.json failed");
    char *page = check_page(run, 1);
    EXPECT(page && strstr(page, "eval.json is missing") && strstr(page, "per_image.json is missing"),
           "no notes for the missing inputs");
    // Eight steps are one epoch: one validation, stated in words rather than drawn.
    EXPECT(page && strstr(page, "One validation, at step 8: BLEU-4 ") && !strstr(page, "val_bleu4.png"),
           "a single validation is drawn as a curve");
    free(page);
    // A broken eval.json: one line naming the file, status 1, the old page kept.
    char *before = read_text(run, "report.html");
    char path[800];
    snprintf(path, sizeof path, "%s/eval.json", run);
    scratch_write_text(path, "{\"bleu4\": 0.5,");
    st = scratch_run(&cap, "report --run %s", run);
    char *err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 1 && scratch_count_lines(err) == 1 && strstr(err, "eval.json: not valid JSON"), "status %d: %s", st, err);
    EXPECT(!strncmp(err, "caption report: ", 16), "the error does not name the program: %s", err);
    char *after = read_text(run, "report.html");
    EXPECT(before && after && !strcmp(before, after), "the previous report was not kept");
    free(err), free(before), free(after);
    // Not a run folder, and the other program's run.
    st = scratch_run(&cap, "report %s/nowhere", cap.dir);
    err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 1 && scratch_count_lines(err) == 1 && strstr(err, "no model.safetensors"), "%s", err);
    free(err);
    st = scratch_run(&cap, "report");
    err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 2 && scratch_count_lines(err) == 1 && strstr(err, "RUN: missing"), "%s", err);
    free(err);
    // Issue 56: RUN and --run naming two folders: --run won silently; now refused, nothing
    // written. The same folder twice is one.
    char *page_before = read_text(run, "report.html");
    st = scratch_run(&cap, "report %s --run %s/nowhere", run, cap.dir);
    err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 2 && scratch_count_lines(err) == 1 && !strncmp(err, "caption report: RUN: two run folders, ", 38) &&
               strstr(err, "and --run ") && strstr(err, "nowhere: give one"),
           "status %d: %s", st, err);
    free(err);
    st = scratch_run(&cap, "report %s/nowhere --run %s", cap.dir, run);
    err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 2 && strstr(err, "two run folders"), "the other order: status %d: %s", st, err);
    free(err);
    remove(path);  // eval.json, broken above
    char *page_after = read_text(run, "report.html");
    EXPECT(page_before && page_after && !strcmp(page_before, page_after), "a refused report wrote its page");
    free(page_before), free(page_after);
    st = scratch_run(&cap, "report %s --run %s", run, run);
    EXPECT(st == 0, "the same folder as RUN and --run refused (%d)", st);
    // An eval.json written before object F1: its columns are left out, not shown empty.
    scratch_write_text(path, "{\"split\": \"test\", \"images\": 16, \"beam\": 3, \"bleu1\": 0.5, \"bleu2\": 0.4, "
                             "\"bleu3\": 0.3, \"bleu4\": 0.2, \"cider\": 1.5, \"rougeL\": 0.6, \"grounding\": 0.25}\n");
    st = scratch_run(&cap, "report %s", run);
    page = check_page(run, 1);
    EXPECT(st == 0 && page && strstr(page, "<th class=\"num\">grounding</th></tr>") && !strstr(page, "object F1"),
           "status %d; the page of an eval.json without object F1 shows its column", st);
    free(page);
    remove(path);
}

static char draw_run[600];

static void test_draw_report(void) {
    snprintf(draw_run, sizeof draw_run, "%s/draw run", drw.dir);
    const char *r = draw_run;
    int st = scratch_run(&drw, "train --data mnist --out \"%s\" --steps 20" DRAW_SMALL, r);
    EXPECT(st == 0, "draw train failed");
    st = scratch_run(&drw, "train --data mnist --out \"%s\" --steps 40 --resume" DRAW_SMALL, r);
    EXPECT(st == 0, "draw train --resume failed");
    st = scratch_run(&drw, "eval --model \"%s/model.safetensors\" --split test --samples 2 --limit 300 --json", r);
    EXPECT(st == 0, "draw eval failed");
    keep_stdout(&drw, r, "eval.json");
    st = scratch_run(&drw, "generate --model \"%s/model.safetensors\" --count 4 --show-attention --out \"%s/samples\"", r, r);
    EXPECT(st == 0, "draw generate failed");
    st = scratch_run(&drw, "reconstruct --model \"%s/model.safetensors\" --count 4 --out \"%s/reconstructions\"", r, r);
    EXPECT(st == 0, "draw reconstruct failed");
    st = scratch_run(&drw, "generate --model \"%s/model.safetensors\" --count 1 --show-attention --out \"%s/film\"", r, r);
    EXPECT(st == 0, "draw generate --count 1 failed");
    st = scratch_run(&drw, "report \"%s\"", r);
    char *err = scratch_read(&drw, "stderr.txt", NULL);
    EXPECT(st == 0, "draw report failed: %s", err);
    free(err);
    // bound and gradient-norm curves + 2 samples + 3 reconstructions + 6 film frames
    char *page = check_page(r, 2 + 2 + 3 + 6);
    cJSON *eval = read_json(r, "eval.json"), *info = read_json(r, "run.json");
    if (!page || !eval || !info) goto done;
    static const char *const keys[] = {"nll_bound", "recon", "kl", "nll_iw", "images"};
    for (int k = 0; k < 5; k++) {
        double shown = html_data_value(page, keys[k]), want = num(eval, keys[k]);
        EXPECT(isfinite(want) && shown == want, "%s on the page %.9g, eval.json %.9g", keys[k], shown, want);
    }
    for (int t = 1; t <= 6; t++) {
        char want[64];
        snprintf(want, sizeof want, "src=\"film/step_%02d.png\"", t);
        EXPECT(strstr(page, want) != NULL, "film frame %d not on the page", t);
    }
    EXPECT(strstr(page, "80.97") && strstr(page, "87.40"), "the paper's numbers are not beside the bound");
    EXPECT(!strstr(page, "peephole"), "a model without peepholes is said to have them");
    EXPECT(strstr(page, "samples/draw.gif") && strstr(page, "reconstructions/draw.gif"), "the GIFs are not on the page");
    EXPECT(strstr(page, "report_files/grad_norm.png") && strstr(page, "clips it at 10 "),
           "no gradient-norm curve with the clip beside it");
    // run.json: the first run and its resumption, both finished, the step counts totals.
    const cJSON *inv = cJSON_GetObjectItemCaseSensitive(info, "invocations");
    EXPECT(cJSON_GetArraySize(inv) == 2, "%d invocations in run.json", cJSON_GetArraySize(inv));
    for (int i = 0; i < 2 && i < cJSON_GetArraySize(inv); i++) {
        const cJSON *one = cJSON_GetArrayItem(inv, i);
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(one, "status");
        EXPECT(cJSON_IsString(status) && !strcmp(status->valuestring, "finished"), "invocation %d not finished", i);
        EXPECT(num(one, "steps") == 20 * (i + 1), "invocation %d: steps %g", i, num(one, "steps"));
        EXPECT(num(one, "images_per_s") > 0 && num(one, "wall_seconds") >= 0, "invocation %d: throughput", i);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(one, "command");
        EXPECT(cJSON_IsString(c) && !strncmp(c->valuestring, "draw train --data mnist --out '", 31) &&
                   strstr(c->valuestring, "/draw run' --steps"), "command %s", cJSON_IsString(c) ? c->valuestring : "?");
    }
    EXPECT(strstr(page, "Command 2:") != NULL, "the resumed invocation is not on the page");
    // Each invocation names its matrix multiply's kernels, as the page does.
    for (int i = 0; i < cJSON_GetArraySize(inv); i++) {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(inv, i), "gemm");
        EXPECT(cJSON_IsString(g) && strstr(g->valuestring, "OPENBLAS_CORETYPE="), "invocation %d: gemm %s", i,
               cJSON_IsString(g) ? g->valuestring : "(none)");
        if (cJSON_IsString(g) && !strpbrk(g->valuestring, "&<>\"'"))
            EXPECT(strstr(page, g->valuestring) != NULL, "invocation %d's gemm is not on the page", i);
    }
    EXPECT(strstr(page, "<h1>DRAW run draw run</h1>") && strstr(page, "Trained 40 steps in "),
           "the header's title and training sentence");
done:
    free(page);
    cJSON_Delete(eval);
    cJSON_Delete(info);
}

static void test_reports_refuse_the_other_model(void) {
    int st = scratch_run(&drw, "report \"%s\"", cap_run);
    char *err = scratch_read(&drw, "stderr.txt", NULL);
    EXPECT(st == 1 && scratch_count_lines(err) == 1 && strstr(err, "not a DRAW model"), "%s", err);
    free(err);
    // Issue 56: draw report refuses RUN and --run naming two folders too.
    st = scratch_run(&drw, "report \"%s\" --run \"%s\"", draw_run, cap_run);
    err = scratch_read(&drw, "stderr.txt", NULL);
    EXPECT(st == 2 && scratch_count_lines(err) == 1 && strstr(err, "draw: RUN: two run folders, "),
           "status %d: %s", st, err);
    free(err);
    st = scratch_run(&cap, "report \"%s\"", draw_run);
    err = scratch_read(&cap, "stderr.txt", NULL);
    EXPECT(st == 1 && scratch_count_lines(err) == 1 && strstr(err, "not a captioner model"), "%s", err);
    free(err);
}

int main(void) {
    if (scratch_open(&cap, "test_report", "caption") || scratch_open(&drw, "test_report", "draw")) return 1;
    train_and_eval_captioner();
    RUN(test_caption_per_image_file);
    RUN(test_caption_report);
    RUN(test_caption_report_missing_and_broken_inputs);
    RUN(test_draw_report);
    RUN(test_reports_refuse_the_other_model);
    scratch_remove(cap.dir);
    scratch_remove(drw.dir);
    return test_summary();
}
