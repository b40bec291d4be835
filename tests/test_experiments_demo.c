// test_experiments_demo.c: experiments/demo.sh (`make demo`) run at DEMO_SCALE=tiny, its
// stand-in size: the demo's own steps with the real programs ($ATTEND_BIN), on tiny models
// and a few hundred images, in seconds. Each model's report page must be complete (no
// "missing" section: the demo writes every file the report looks for), pass the strict
// checker with every link a good file under its run folder, and show the numbers of the
// eval JSON the demo wrote beside it. The demo's last lines name the three report pages
// first, then the folders. A DEMO_SCALE it does not know is refused with one line before
// OUT is touched. Run from the repository root (as tests/run.sh is).
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/support/html_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char dir[256];
static int demo_status = -1;  // the tiny demo's exit status (run once, in main)

static char *read_in(const char *sub, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    return scratch_read_text(path, NULL);
}

// Runs the demo with ENV into DIR/OUT_NAME, stdout and stderr into DIR/out.txt, err.txt.
static int run_demo(const char *env, const char *out_name) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s OUT=%s/%s THREADS=1 sh experiments/demo.sh > %s/out.txt 2> %s/err.txt", env,
             dir, out_name, dir, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

// demo/RUN/report.html: complete, well formed, its links good, at least min_images
// images, one of them `src` (an attribute as the page writes it), and each of keys shown as
// eval.json has it.
static void check_report(const char *run, const char *const *keys, int n_keys, int min_images, const char *src) {
    char sub[300];
    snprintf(sub, sizeof sub, "demo/%s", run);
    EXPECT(demo_status == 0, "the demo failed (status %d)", demo_status);
    char *page = read_in(sub, "report.html"), *eval_text = read_in(sub, "eval.json");
    cJSON *eval = eval_text ? cJSON_Parse(eval_text) : NULL;
    EXPECT(page && eval, "%s: report.html or eval.json missing or not JSON", run);
    if (!page || !eval) goto done;
    EXPECT(!strstr(page, "class=\"missing\"") && !strstr(page, " is missing"),
           "%s/report.html has a missing section: %s", run,
           strstr(page, "class=\"missing\"") ? strstr(page, "class=\"missing\"") : strstr(page, " is missing"));
    HtmlCheck c;
    int r = html_check(&c, page);
    EXPECT(r == 0, "%s/report.html: %s", run, c.msg);
    char run_dir[600], msg[1024];
    snprintf(run_dir, sizeof run_dir, "%s/%s", dir, sub);
    int bad = html_check_links(&c, run_dir, msg, sizeof msg);
    EXPECT(bad == 0, "%s: %d bad links, the first: %s", run, bad, msg);
    EXPECT(c.n_images >= min_images, "%s: %d images on the page, expected at least %d", run, c.n_images, min_images);
    html_check_free(&c);
    EXPECT(strstr(page, src), "%s: no %s on the page", run, src);
    for (int k = 0; k < n_keys; k++) {
        double shown = html_data_value(page, keys[k]), want = num(eval, keys[k]);
        EXPECT(isfinite(want) && shown == want, "%s: %s on the page %.9g, eval.json %.9g", run, keys[k], shown, want);
    }
done:
    cJSON_Delete(eval);
    free(page), free(eval_text);
}

// The DRAW page: the test figures, the curves, 16 samples (final canvases and the GIF),
// the film (4 steps at this size), the input, reconstructions and their GIF.
static void test_draw_report_is_complete(void) {
    static const char *const keys[] = {"nll_bound", "recon", "kl", "images"};
    check_report("draw-model", keys, 4, 2 + 2 + 4 + 3, "src=\"film/step_04.png\"");
}

// The captioner's page: the test scores, the curves and the held-out scenes' strips.
static void test_caption_report_is_complete(void) {
    static const char *const keys[] = {"bleu1", "bleu2", "bleu3", "bleu4", "cider", "rougeL", "grounding"};
    check_report("caption-model", keys, 7, 2, "src=\"strips/00000.png\"");
}

// The sentence classifier's page: the validation figures (accuracy in percent, as eval.json's
// share times 100), the curves and the word shading.
static void test_text_report_is_complete(void) {
    static const char *const keys[] = {"loss"};
    check_report("text-model", keys, 1, 3, "src=\"show/attention.png\"");
    char *page = read_in("demo/text-model", "report.html"), *eval_text = read_in("demo/text-model", "eval.json");
    cJSON *eval = eval_text ? cJSON_Parse(eval_text) : NULL;
    double shown = page ? html_data_value(page, "accuracy") : NAN, want = 100.0 * num(eval, "accuracy");
    EXPECT(isfinite(want) && fabs(shown - want) < 1e-9, "text-model: accuracy on the page %.9g, eval.json %.9g %%",
           shown, want);
    cJSON_Delete(eval);
    free(page), free(eval_text);
}

// Line N (0: the first) of text, copied into buf (cap bytes); "" past the end.
static const char *line_of(const char *text, int n, char *buf, size_t cap) {
    const char *p = text;
    for (int i = 0; i < n && p; i++) p = (p = strchr(p, '\n')) ? p + 1 : NULL;
    size_t len = p ? strcspn(p, "\n") : 0;
    if (len >= cap) len = cap - 1;
    memcpy(buf, p ? p : "", len);
    buf[len] = 0;
    return buf;
}

// The lines after "Done.": the two report pages, then the folders (the DRAW samples'
// first of them).
static void test_ends_with_the_reports_then_the_folders(void) {
    char *out = read_in(".", "out.txt");
    const char *done = out ? strstr(out, "\nDone.") : NULL;
    EXPECT(done, "no 'Done.' in the demo's output: %s", out ? out : "(none)");
    if (!done) goto end;
    char l1[600], l2[600], l3[600], l4[600], l5[600];
    line_of(done + 1, 1, l1, sizeof l1), line_of(done + 1, 2, l2, sizeof l2);
    line_of(done + 1, 3, l3, sizeof l3), line_of(done + 1, 4, l4, sizeof l4);
    line_of(done + 1, 5, l5, sizeof l5);
    EXPECT(strstr(l1, "/demo/draw-model/report.html ") && strstr(l2, "/demo/caption-model/report.html ") &&
               strstr(l3, "/demo/text-model/report.html "),
           "the first lines after 'Done.' are not the three pages: %s", done);
    EXPECT(!strstr(l4, "report.html") && strstr(l5, "/demo/draw-model/samples/"),
           "the folders do not follow the pages: %s", done);
end:
    free(out);
}

// An unknown DEMO_SCALE: one line on stderr naming the script and the value, exit 2, and
// OUT (which the demo empties first) left as it was.
static void test_unknown_scale_refused_before_out_is_touched(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/kept", dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && echo keep > %s/note.txt", path, path);
    EXPECT(system(cmd) == 0, "set-up");
    int st = run_demo("DEMO_SCALE=huge", "kept");
    char *err = read_in(".", "err.txt"), *note = read_in("kept", "note.txt");
    EXPECT(st == 2, "exit status %d", st);
    EXPECT(err && strstr(err, "demo.sh: DEMO_SCALE must be full or tiny, not 'huge'") &&
               scratch_count_lines(err) == 1,
           "stderr is not the one line: %s", err ? err : "(none)");
    EXPECT(note && !strcmp(note, "keep\n"), "OUT was touched");
    free(err), free(note);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_demo")) return 1;
    demo_status = run_demo("DEMO_SCALE=tiny", "demo");
    if (demo_status != 0) {
        char *err = read_in(".", "err.txt");
        fprintf(stderr, "the tiny demo failed (status %d): %s\n", demo_status, err ? err : "");
        free(err);
    }
    RUN(test_draw_report_is_complete);
    RUN(test_caption_report_is_complete);
    RUN(test_text_report_is_complete);
    RUN(test_ends_with_the_reports_then_the_folders);
    RUN(test_unknown_scale_refused_before_out_is_touched);
    scratch_remove(dir);
    return test_summary();
}
