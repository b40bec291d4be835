// report_draw.c: see report_draw.h.
#include "cli/report_draw.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/html.h"
#include "cli/report_common.h"
#include "core/check.h"
#include "core/safetensors.h"
#include "core/text_escape.h"

typedef struct {
    const char *run, *eval_name, *samples_name, *recon_name, *film_name, *out_name;
    SafetensorsFile model;
    cJSON *run_json, *eval;
    int has_curve;
    int has_norms;  // log.csv has grad_norm rows (runs logged before it have none)
    int attention;  // the model's draw.attention
    int classes;    // the model's draw.classes (0: unconditional; absent before --conditional)
    char **film;    // step_NN.png names of the film folder, sorted
    int n_film;
} DrawReport;

static const char *meta(const DrawReport *r, const char *key) { return report_meta(&r->model, key); }

static const char *meta_float(const DrawReport *r, const char *key, char *buf, size_t n) {
    return report_meta_float(&r->model, key, buf, n);
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The step_*.png files of RUN/FILM (none when the folder is missing).
static void list_film(DrawReport *r) {
    char dir[1200];
    report_path(dir, sizeof dir, r->run, r->film_name);
    DIR *d = opendir(dir);
    if (!d) return;
    int cap = 16;
    r->film = xmalloc((size_t)cap * sizeof(char *));
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "step_", 5) || len < 10 || strcmp(e->d_name + len - 4, ".png")) continue;
        if (r->n_film == cap) r->film = xrealloc(r->film, (size_t)(cap *= 2) * sizeof(char *));
        r->film[r->n_film] = xmalloc(len + 1);
        memcpy(r->film[r->n_film++], e->d_name, len + 1);
    }
    closedir(d);
    qsort(r->film, (size_t)r->n_film, sizeof(char *), cmp_names);
}

static int load_inputs(DrawReport *r, Error *err) {
    char path[1200];
    report_path(path, sizeof path, r->run, "model.safetensors");
    if (!file_exists(path))
        return error_set(err, "%s: no model.safetensors here (draw train --out %s writes one)", r->run, r->run);
    if (safetensors_load(&r->model, path, err)) return -1;
    const char *fmt = safetensors_meta(&r->model, "format");
    if (!fmt || strcmp(fmt, "attend-draw-1"))
        return error_set(err, "%s: not a DRAW model (format '%s'%s)", path, fmt ? fmt : "missing",
                         fmt && !strcmp(fmt, "attend-sat") ? "; use caption report" : "");
    r->attention = atoi(meta(r, "draw.attention")) != 0;
    r->classes = safetensors_meta(&r->model, "draw.classes") ? atoi(meta(r, "draw.classes")) : 0;
    report_path(path, sizeof path, r->run, "run.json");
    if (report_read_json(&r->run_json, path, err)) return -1;
    report_path(path, sizeof path, r->run, r->eval_name);
    if (report_read_json(&r->eval, path, err)) return -1;
    list_film(r);
    return 0;
}

// Columns i and i + 1 of c as two series on a log scale, into RUN/report_files/FILE.
static int plot_pair(const DrawReport *r, const ReportColumns *c, int i, const char *file,
                     const char *title, const char *ylabel, const char *name1, const char *name2,
                     Error *err) {
    ReportPlot p = {.file = file, .title = title, .xlabel = "step", .ylabel = ylabel,
                    .name1 = name1, .name2 = name2, .x1 = c->x[i], .y1 = c->y[i], .n1 = c->n[i],
                    .x2 = c->x[i + 1], .y2 = c->y[i + 1], .n2 = c->n[i + 1], .log_y = 1};
    return report_plot(r->run, &p, err);
}

static int draw_curve(DrawReport *r, Error *err) {
    char path[1200];
    report_path(path, sizeof path, r->run, "log.csv");
    if (!file_exists(path)) return 0;
    static const char *const cols[4] = {"train_bound", "valid_bound", "grad_norm", "grad_norm_max"};
    ReportColumns c;
    if (report_read_columns(&c, path, "step", cols, 4, err)) return -1;
    int rc = 0;
    if (c.n[0] > 0 || c.n[1] > 0) {
        rc = plot_pair(r, &c, 0, "bound.png", "negative log-likelihood bound", "nats per image",
                       "train", "validation", err);
        r->has_curve = rc == 0;
    }
    if (rc == 0 && c.n[2] > 0) {
        rc = plot_pair(r, &c, 2, "grad_norm.png", "gradient norm before clipping", "global norm",
                       "mean", "largest", err);
        r->has_norms = rc == 0;
    }
    report_columns_free(&c);
    return rc;
}

// RUN/DIR/NAME exists: writes its relative path into rel.
static int have(const DrawReport *r, char *rel, size_t n, const char *dir, const char *name) {
    char path[2400];
    snprintf(rel, n, "%s/%s", dir, name);
    report_path(path, sizeof path, r->run, rel);
    return file_exists(path);
}

static void quoted_run(char *buf, size_t n, const DrawReport *r, const char *name) {
    report_quoted_path(buf, n, r->run, name);
}

// --- page sections ------------------------------------------------------------------------

static void section_results(FILE *fp, const DrawReport *r) {
    html_section(fp, "results", "Test results");
    if (!r->eval) {
        char cmd[2600], model[1200], out[1200];
        quoted_run(model, sizeof model, r, "model.safetensors");
        quoted_run(out, sizeof out, r, r->eval_name);
        snprintf(cmd, sizeof cmd, "bin/draw eval --model %s --data %s --split test --samples 10 --json > %s",
                 model, meta(r, "train.data"), out);
        report_missing(fp, r->eval_name, cmd);
        html_section_end(fp);
        return;
    }
    double K = report_json_number(r->eval, "samples");
    fputs("<table>\n<thead><tr><th class=\"num\">bound (nats)</th><th class=\"num\">reconstruction</th>"
          "<th class=\"num\">KL</th>", fp);
    if (K > 1) fprintf(fp, "<th class=\"num\">IW NLL (K = %.0f)</th>", K);
    fputs("<th class=\"num\">images</th></tr></thead>\n<tbody><tr>", fp);
    html_metric_cell(fp, "nll_bound", report_json_number(r->eval, "nll_bound"), 2);
    html_metric_cell(fp, "recon", report_json_number(r->eval, "recon"), 2);
    html_metric_cell(fp, "kl", report_json_number(r->eval, "kl"), 2);
    if (K > 1) html_metric_cell(fp, "nll_iw", report_json_number(r->eval, "nll_iw"), 2);
    html_metric_cell(fp, "images", report_json_number(r->eval, "images"), 0);
    fputs("</tr></tbody>\n</table>\n<p class=\"note\">", fp);
    const char *split = report_json_string(r->eval, "split"), *data = report_json_string(r->eval, "data");
    const char *bin = report_json_string(r->eval, "binarization");
    html_textf(fp, "%s %s split, %s, at step %.0f. Bound = reconstruction + KL, nats per image; "
               "the importance-weighted estimate uses K posterior samples per image.",
               data ? data : "?", split ? split : "?", bin ? bin : "?", report_json_number(r->eval, "step"));
    double per_dim = report_json_number(r->eval, "nll_bound_per_dim");
    if (isfinite(per_dim))
        html_textf(fp, " Per dimension (pixel and channel): %.5f nats.", per_dim);
    fputs("</p>\n", fp);
    if (r->classes)
        fprintf(fp, "<p class=\"note\">The model is class-conditional (%d classes): its bound is "
                "-log p(x | label)'s, each test image run on its own label, and is not comparable with "
                "the unconditional bounds below.</p>\n", r->classes);
    const char *trained_on = meta(r, "train.data");
    if (strcmp(trained_on, "mnist") != 0) {
        // The paper prints bounds for binarized MNIST only; its two-digit MNIST, SVHN and
        // CIFAR-10 results are pictures.
        fputs("<p class=\"note\">Gregor et al. 2015 report no bound for this kind of data (their "
              "two-digit MNIST, SVHN and CIFAR-10 results are samples); colour bounds here are the "
              "Bernoulli cross-entropy on intensities, comparable between runs on the same data "
              "only.</p>\n", fp);
        html_section_end(fp);
        return;
    }
    fputs("<div class=\"paper\"><p>Gregor et al. 2015, binarized MNIST test NLL (nats):</p>\n"
          "<table><tbody>\n", fp);
    fprintf(fp, "<tr><td>DRAW with attention (T 64, read 2&times;2, write 5&times;5)%s</td><td class=\"num\">&le; 80.97</td></tr>\n",
            r->attention ? " &larr; this model's kind" : "");
    fprintf(fp, "<tr><td>DRAW without attention (unverified)%s</td><td class=\"num\">&le; 87.40</td></tr>\n",
            r->attention ? "" : " &larr; this model's kind");
    fputs("<tr><td>DARN / DLGM / EoNADE-5 / NADE / DBN</td><td class=\"num\">84.13 / 85.51 / 84.68 / 88.33 / 84.55</td></tr>\n"
          "</tbody></table>\n<p class=\"note\">The paper used Larochelle's fixed binarisation; this "
          "toolkit trains on dynamically binarised MNIST and tests on a binarisation with a fixed "
          "seed, so the figures are close to, not the same as, the paper's.</p></div>\n", fp);
    html_section_end(fp);
}

// A conditional model's confusion (eval.json's rows of counts, asked x predicted) as the
// share of each asked class labelled as each class, in %; nothing where it is missing
// (an eval.json from before the matrix).
static void quality_confusion_table(FILE *fp, const cJSON *conf) {
    const int K = cJSON_GetArraySize(conf);
    if (K < 2) return;
    fputs("<table>\n<thead><tr><th>asked \\ labelled (%)</th>", fp);
    for (int j = 0; j < K; j++) fprintf(fp, "<th class=\"num\">%d</th>", j);
    fputs("</tr></thead>\n<tbody>\n", fp);
    for (int k = 0; k < K; k++) {
        const cJSON *row = cJSON_GetArrayItem(conf, k);
        double asked = 0;
        for (int j = 0; j < cJSON_GetArraySize(row); j++) asked += cJSON_GetArrayItem(row, j)->valuedouble;
        fprintf(fp, "<tr><td>%d</td>", k);
        for (int j = 0; j < K; j++) {
            const cJSON *v = cJSON_GetArrayItem(row, j);
            html_metric_cell(fp, "confusion", cJSON_IsNumber(v) && asked > 0 ? 100.0 * v->valuedouble / asked : NAN, 1);
        }
        fputs("</tr>\n", fp);
    }
    fputs("</tbody>\n</table>\n", fp);
}

// draw eval --sample-quality's figures (eval.json's sample_quality), where eval ran with it.
static void section_quality(FILE *fp, const DrawReport *r) {
    const cJSON *q = r->eval ? cJSON_GetObjectItem(r->eval, "sample_quality") : NULL;
    if (!cJSON_IsObject(q)) return;
    html_section(fp, "quality", "Sample quality");
    const int cond = cJSON_IsTrue(cJSON_GetObjectItem(q, "conditional"));
    // two-digit samples (cut into their two digits): the pairs' figure, and the test images'
    const int two = report_json_number(q, "digits") == 2;
    const cJSON *dq = two ? cJSON_GetObjectItem(r->eval, "data_quality") : NULL;
    fprintf(fp, "<table>\n<thead><tr>%s<th class=\"num\">samples</th>%s<th class=\"num\">%s (%%)</th>"
            "<th class=\"num\">class entropy (nats)</th><th class=\"num\">log K</th>",
            two ? "<th>images</th>" : "", two ? "<th class=\"num\">both digits legible (%)</th>" : "",
            two ? "digits legible" : "legible");
    if (cond) fputs("<th class=\"num\">labelled as asked (%)</th>", fp);
    fputs("</tr></thead>\n<tbody>", fp);
    for (int row = 0; row < (cJSON_IsObject(dq) ? 2 : 1); row++) {
        const cJSON *o = row ? dq : q;
        const char *suffix = row ? "_data" : "";
        char key[32];
        fputs("<tr>", fp);
        if (two) fprintf(fp, "<td>%s</td>", row ? "test images" : "samples");
        snprintf(key, sizeof key, "samples%s", suffix);
        html_metric_cell(fp, key, report_json_number(o, "samples"), 0);
        snprintf(key, sizeof key, "both_legible%s", suffix);
        if (two) html_metric_cell(fp, key, 100.0 * report_json_number(o, "both_legible"), 2);
        snprintf(key, sizeof key, "legible%s", suffix);
        html_metric_cell(fp, key, 100.0 * report_json_number(o, "legible"), 2);
        snprintf(key, sizeof key, "entropy%s", suffix);
        html_metric_cell(fp, key, report_json_number(o, "entropy"), 4);
        snprintf(key, sizeof key, "entropy_max%s", suffix);
        html_metric_cell(fp, key, report_json_number(o, "entropy_max"), 4);
        if (cond) html_metric_cell(fp, "match", 100.0 * report_json_number(o, "match"), 2);
        fputs("</tr>\n", fp);
    }
    fputs("</tbody>\n</table>\n", fp);
    const cJSON *per = cJSON_GetObjectItem(q, "match_per_class");
    if (cond && cJSON_GetArraySize(per) > 0) {
        fputs("<table>\n<thead><tr><th>class asked for</th>", fp);
        for (int k = 0; k < cJSON_GetArraySize(per); k++) fprintf(fp, "<th class=\"num\">%d</th>", k);
        fputs("</tr></thead>\n<tbody><tr><td>labelled as asked (%)</td>", fp);
        for (int k = 0; k < cJSON_GetArraySize(per); k++) {
            const cJSON *v = cJSON_GetArrayItem(per, k);
            html_metric_cell(fp, "match_class", cJSON_IsNumber(v) ? 100.0 * v->valuedouble : NAN, 1);
        }
        fputs("</tr></tbody>\n</table>\n", fp);
    }
    if (cond) quality_confusion_table(fp, cJSON_GetObjectItem(q, "confusion"));
    fputs("<p class=\"note\">", fp);
    html_textf(fp, "Samples from the prior%s, each judged by a CNN trained on plain "
               "28 x 28 MNIST (draw classify train --model cnn --size 28 --fragments 0; its own test "
               "error bounds how far these figures can be trusted). Legible: the classifier's top "
               "probability is at least %.1f. Class entropy: of the histogram of predicted classes, "
               "against log K for every class equally often.%s%s",
               cond ? ", each class asked for in turn" : "", report_json_number(q, "confidence"),
               two ? " Each 60 x 60 sample, and each test image of the second row, is cut into its "
                     "two digits' 28 x 28 views (2-means of the ink; cli/draw_quality.h) and each "
                     "view judged: both digits legible is the share of images whose two views are "
                     "both legible; the other figures are over the cut digits." : "",
               cond ? " Labelled as asked: the predicted class is the class the sample was drawn "
                      "for; the model is conditional on the label. The square table: of the samples "
                      "asked for each class (rows), the share labelled as each class (columns)." : "");
    fputs("</p>\n", fp);
    html_section_end(fp);
}

static void section_curve(FILE *fp, const DrawReport *r) {
    html_section(fp, "curve", "Training curve");
    if (!r->has_curve) fputs("<p class=\"missing\">No log.csv rows to draw.</p>\n", fp);
    else
        report_figure(fp, "report_files/bound.png", "training and validation bound against the step", "plot",
               "The bound per image: training (mean of each logging window, on freshly binarised batches) "
               "and validation (the fixed binarisation), log scale.");
    if (r->has_norms) {
        char clip[32], caption[256];
        snprintf(caption, sizeof caption,
                 "The global gradient norm before clipping: mean and largest of each logging window, "
                 "log scale. Training clips it at %s (0: no clipping).",
                 meta_float(r, "train.clip", clip, sizeof clip));
        report_figure(fp, "report_files/grad_norm.png", "gradient norm against the step", "plot", caption);
    }
    html_section_end(fp);
}

// Samples from the prior: the final canvases and their animation (draw generate).
static void section_samples(FILE *fp, const DrawReport *r) {
    char rel[1300], cmd[2600], model[1200], out[1200];
    quoted_run(model, sizeof model, r, "model.safetensors");
    html_section(fp, "samples", "Generated images");
    if (have(r, rel, sizeof rel, r->samples_name, "final.png")) {
        fputs("<div class=\"figs\">\n", fp);
        report_figure(fp, rel, "generated digits, the final canvases", "pixel", "The final canvases of samples from the prior.");
        if (have(r, rel, sizeof rel, r->samples_name, "draw.gif"))
            report_figure(fp, rel, "generated digits drawn step by step (animation)", "pixel",
                   r->attention ? "The same, step by step; the write window in red." : "The same, step by step.");
        fputs("</div>\n", fp);
    } else {
        quoted_run(out, sizeof out, r, r->samples_name);
        snprintf(cmd, sizeof cmd, "bin/draw generate --model %s --count 16 --show-attention --scale 4 --out %s", model, out);
        report_missing(fp, "The samples", cmd);
    }
    html_section_end(fp);
}

// One sample's canvas after each step (draw generate --count 1).
static void section_film(FILE *fp, const DrawReport *r) {
    char rel[1300], cmd[2600], model[1200], out[1200];
    quoted_run(model, sizeof model, r, "model.safetensors");
    html_section(fp, "film", "One sample, step by step");
    if (r->n_film > 0) {
        fputs("<div class=\"film\">\n", fp);
        for (int i = 0; i < r->n_film; i++) {
            char alt[96], label[64];
            const char *num = r->film[i] + 5;
            snprintf(label, sizeof label, "%.*s", (int)(strlen(num) - 4), num);
            snprintf(alt, sizeof alt, "canvas after step %s", label);
            snprintf(rel, sizeof rel, "%s/%s", r->film_name, r->film[i]);
            fputs("<figure>", fp);
            html_img(fp, rel, alt, NULL);
            fputs("<figcaption>", fp);
            html_text(fp, label);
            fputs("</figcaption></figure>\n", fp);
        }
        fputs("</div>\n", fp);
        fprintf(fp, "<p class=\"note\">The canvas after each step%s.</p>\n",
                r->attention ? "; the red rectangle is the step's write window" : "");
    } else {
        quoted_run(out, sizeof out, r, r->film_name);
        snprintf(cmd, sizeof cmd, "bin/draw generate --model %s --count 1 --show-attention --scale 3 --out %s", model, out);
        report_missing(fp, "The film strip", cmd);
    }
    html_section_end(fp);
}

// Test digits and their reconstructions (draw reconstruct).
static void section_reconstructions(FILE *fp, const DrawReport *r) {
    char rel[1300], cmd[2600], model[1200], out[1200];
    quoted_run(model, sizeof model, r, "model.safetensors");
    html_section(fp, "reconstructions", "Reconstructions");
    if (have(r, rel, sizeof rel, r->recon_name, "final.png")) {
        fputs("<div class=\"figs\">\n", fp);
        if (have(r, rel, sizeof rel, r->recon_name, "input.png"))
            report_figure(fp, rel, "test digits, the input", "pixel", "Test digits.");
        have(r, rel, sizeof rel, r->recon_name, "final.png");
        report_figure(fp, rel, "their reconstructions", "pixel", "Their reconstructions (final canvases).");
        if (have(r, rel, sizeof rel, r->recon_name, "draw.gif"))
            report_figure(fp, rel, "the reconstructions step by step with read and write windows (animation)", "pixel",
                   r->attention ? "Step by step: read window green, write window red." : "Step by step.");
        fputs("</div>\n", fp);
    } else {
        quoted_run(out, sizeof out, r, r->recon_name);
        snprintf(cmd, sizeof cmd, "bin/draw reconstruct --model %s --data %s --count 16 --scale 4 --out %s", model,
                 meta(r, "train.data"), out);
        report_missing(fp, "The reconstructions", cmd);
    }
    html_section_end(fp);
}

static void section_model(FILE *fp, const DrawReport *r) {
    html_section(fp, "model", "Model and training settings");
    fputs("<table class=\"facts\">\n", fp);
    char buf[256];
    report_format_count(buf, sizeof buf, report_parameter_count(&r->model));
    html_fact(fp, "parameters", buf);
    int colour = atoi(meta(r, "draw.channels")) > 1;  // absent (grey): "?"
    snprintf(buf, sizeof buf, "%s x %s%s", meta(r, "draw.W"), meta(r, "draw.H"),
             colour ? ", colour (3 channels through shared filters)" : "");
    html_fact(fp, "image (columns x rows)", buf);
    html_fact(fp, "glimpses T", meta(r, "draw.T"));
    if (r->attention) {
        snprintf(buf, sizeof buf, "read %s x %s, write %s x %s (Gaussian filterbanks)", meta(r, "draw.read_n"),
                 meta(r, "draw.read_n"), meta(r, "draw.write_n"), meta(r, "draw.write_n"));
        html_fact(fp, "attention", buf);
    } else {
        html_fact(fp, "attention", "none: reads the whole image, writes the whole canvas");
    }
    // draw.peepholes is absent from models without them
    snprintf(buf, sizeof buf, "encoder %s, decoder %s%s", meta(r, "draw.enc"), meta(r, "draw.dec"),
             atoi(meta(r, "draw.peepholes")) ? ", with peephole connections" : "");
    html_fact(fp, "LSTM units", buf);
    html_fact(fp, "latent size per step", meta(r, "draw.z"));
    if (r->classes) {
        snprintf(buf, sizeof buf, "class-conditional: the label (%d classes), one-hot, into both LSTMs at every step", r->classes);
        html_fact(fp, "conditioning", buf);
    }
    html_fact(fp, "training data", meta(r, "train.data"));
    html_fact(fp, "binarisation", atoi(meta(r, "train.binarize")) ? "dynamic (a fresh sample per batch)"
                                  : colour ? "none (colour intensities)" : "none (grey levels)");
    html_fact(fp, "batch", meta(r, "train.batch"));
    char lr[32], beta1[32], clip[32];
    snprintf(buf, sizeof buf, "Adam, learning rate %s, beta1 %s; gradient norm clipped at %s",
             meta_float(r, "train.lr", lr, sizeof lr), meta_float(r, "train.beta1", beta1, sizeof beta1),
             meta_float(r, "train.clip", clip, sizeof clip));
    html_fact(fp, "optimiser", buf);
    html_fact(fp, "seed", meta(r, "train.seed"));
    html_fact(fp, "steps trained", meta(r, "train.step"));
    fputs("</table>\n", fp);
    html_section_end(fp);
}

static void page_header(FILE *fp, const DrawReport *r) {
    report_page_header_begin(fp, "DRAW run", r->run);
    html_textf(fp, "%s, T %s%s. ", r->attention ? "With attention" : "Without attention", meta(r, "draw.T"),
               r->classes ? ", class-conditional" : "");
    if (r->eval) {
        html_textf(fp, "Test bound %.2f nats%s", report_json_number(r->eval, "nll_bound"),
                   r->classes ? " given the label" : "");
        double iw = report_json_number(r->eval, "nll_iw");
        if (isfinite(iw)) html_textf(fp, ", importance-weighted NLL %.2f", iw);
        fputs(". ", fp);
    }
    report_page_trained(fp, r->run_json, meta(r, "train.step"), "", "images");
    fputs("</p>\n</header>\n<nav class=\"toc\"><a href=\"#results\">Results</a>", fp);
    if (r->eval && cJSON_IsObject(cJSON_GetObjectItem(r->eval, "sample_quality")))
        fputs("<a href=\"#quality\">Sample quality</a>", fp);
    fputs("<a href=\"#curve\">Curve</a>"
          "<a href=\"#samples\">Samples</a><a href=\"#film\">Step by step</a>"
          "<a href=\"#reconstructions\">Reconstructions</a><a href=\"#model\">Model</a>"
          "<a href=\"#run\">Run</a></nav>\n", fp);
}

static int write_page(const DrawReport *r, Error *err) {
    AtomicFile af;
    if (report_open(&af, r->run, r->out_name, err)) return -1;
    FILE *fp = af.fp;
    char title[1200];
    snprintf(title, sizeof title, "DRAW run %s", r->run);
    html_page_begin(fp, title);
    page_header(fp, r);
    section_results(fp, r);
    section_quality(fp, r);
    section_curve(fp, r);
    section_samples(fp, r);
    section_film(fp, r);
    section_reconstructions(fp, r);
    section_model(fp, r);
    report_section_run(fp, r->run_json, "draw", "images");
    html_page_end(fp, NULL);
    return atomic_commit(&af, err);
}

int draw_report_main(int argc, char **argv) {
    DrawReport r;
    memset(&r, 0, sizeof r);
    r.eval_name = "eval.json";
    r.samples_name = "samples";
    r.recon_name = "reconstructions";
    r.film_name = "film";
    r.out_name = "report.html";
    ArgSpec specs[] = {
        {"run", ARG_STRING, &r.run, "the run folder (draw train --out), in RUN's place (not beside another RUN)", .metavar = "DIR", .given = NULL},
        {"eval", ARG_STRING, &r.eval_name, "draw eval --json output, relative to RUN", .metavar = "NAME", .given = NULL},
        {"samples", ARG_STRING, &r.samples_name, "draw generate folder, relative to RUN", .metavar = "NAME", .given = NULL},
        {"reconstructions", ARG_STRING, &r.recon_name, "draw reconstruct folder, relative to RUN", .metavar = "NAME", .given = NULL},
        {"film", ARG_STRING, &r.film_name, "draw generate --count 1 folder, relative to RUN", .metavar = "NAME", .given = NULL},
        {"out", ARG_STRING, &r.out_name, "the page, relative to RUN", .metavar = "NAME", .given = NULL},
    };
    int code;
    if (report_parse_args(argc, argv, specs, ARGS_LEN(specs), "draw report RUN [flags]", "draw", &r.run, &code))
        return code;
    Error err;
    int rc = load_inputs(&r, &err) || draw_curve(&r, &err) || write_page(&r, &err);
    if (rc) fprintf(stderr, "draw: %s\n", err.msg);
    else text_write_linef(stderr, "draw report: wrote %s/%s", r.run, r.out_name);
    for (int i = 0; i < r.n_film; i++) free(r.film[i]);
    free(r.film);
    cJSON_Delete(r.run_json);
    cJSON_Delete(r.eval);
    if (r.model.buffer_) safetensors_free(&r.model);
    return rc ? 1 : 0;
}
