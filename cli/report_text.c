// report_text.c: see report_text.h.
#include "cli/report_text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/html.h"
#include "cli/report_common.h"
#include "core/safetensors.h"
#include "core/text_escape.h"

typedef struct {
    const char *run, *eval_name, *show_name, *out_name;
    SafetensorsFile model;
    cJSON *run_json, *eval;
    int has_accuracy, has_loss;
} TextReport;

static const char *meta(const TextReport *r, const char *key) { return report_meta(&r->model, key); }

static const char *meta_float(const TextReport *r, const char *key, char *buf, size_t n) {
    return report_meta_float(&r->model, key, buf, n);
}

static int load_inputs(TextReport *r, Error *err) {
    if (report_load_model(&r->model, &r->run_json, r->run, "attend-text-classify-1",
                          "text classify train", "a text classifier", err))
        return -1;
    char path[1200];
    report_path(path, sizeof path, r->run, r->eval_name);
    return report_read_json(&r->eval, path, err);
}

static int draw_curves(TextReport *r, Error *err) {
    char path[1200];
    report_path(path, sizeof path, r->run, "log.csv");
    if (!file_exists(path)) return 0;
    static const char *const cols[4] = {"train_accuracy", "valid_accuracy", "train_loss", "valid_loss"};
    ReportColumns c;
    if (report_read_columns(&c, path, "step", cols, 4, err)) return -1;
    int rc = 0;
    for (int k = 0; k < c.n[0]; k++) c.y[0][k] *= 100.0f;
    for (int k = 0; k < c.n[1]; k++) c.y[1][k] *= 100.0f;
    if (c.n[0] > 0 || c.n[1] > 0) {
        ReportPlot p = {.file = "accuracy.png", .title = "sentence classification", .xlabel = "step",
                        .ylabel = "accuracy (%)", .name1 = "train", .name2 = "validation",
                        .x1 = c.x[0], .y1 = c.y[0], .n1 = c.n[0], .x2 = c.x[1], .y2 = c.y[1],
                        .n2 = c.n[1], .nonnegative = 1};
        rc = report_plot(r->run, &p, err);
        r->has_accuracy = rc == 0;
    }
    if (rc == 0 && (c.n[2] > 0 || c.n[3] > 0)) {
        ReportPlot p = {.file = "loss.png", .title = "loss", .xlabel = "step",
                        .ylabel = "cross-entropy (training: + L2 penalty)", .name1 = "train",
                        .name2 = "validation", .x1 = c.x[2], .y1 = c.y[2], .n1 = c.n[2],
                        .x2 = c.x[3], .y2 = c.y[3], .n2 = c.n[3], .log_y = 1};
        rc = report_plot(r->run, &p, err);
        r->has_loss = rc == 0;
    }
    report_columns_free(&c);
    return rc;
}

static void section_results(FILE *fp, const TextReport *r) {
    html_section(fp, "results", "Validation results");
    if (!r->eval) {
        report_missing_run(fp, r->eval_name, "bin/text classify eval", r->run, " --json > ",
                           r->eval_name);
    } else {
        fputs("<table class=\"metrics\"><tr><th>split</th><th>sentences</th><th>accuracy (%)</th>"
              "<th>loss</th></tr>\n<tr><td>", fp);
        const char *split = report_json_string(r->eval, "split");
        html_text(fp, split ? split : "?");
        fprintf(fp, "</td><td>%.0f</td>", report_json_number(r->eval, "sentences"));
        html_metric_cell(fp, "accuracy", 100.0 * report_json_number(r->eval, "accuracy"), 2);
        html_metric_cell(fp, "loss", report_json_number(r->eval, "loss"), 4);
        fputs("</tr></table>\n<p>", fp);
        double n = report_json_number(r->eval, "sentences"), p = report_json_number(r->eval, "accuracy");
        if (n > 0 && isfinite(p))
            html_textf(fp, "One run: the binomial standard error of an accuracy of %.1f%% on %.0f "
                           "sentences is %.1f points; compare runs over seeds, not single runs.",
                       100.0 * p, n, 100.0 * sqrt(p * (1 - p) / n));
        fputs("</p>\n", fp);
    }
    html_section_end(fp);
}

static void section_curves(FILE *fp, const TextReport *r) {
    html_section(fp, "curve", "Training curves");
    if (!r->has_accuracy && !r->has_loss) fputs("<p class=\"missing\">No log.csv rows to draw.</p>\n", fp);
    if (r->has_accuracy)
        report_figure(fp, "report_files/accuracy.png", "training and validation accuracy against the step", "plot",
               "Accuracy: training (each logging window's batches, with dropout) and validation.");
    if (r->has_loss)
        report_figure(fp, "report_files/loss.png", "training and validation loss against the step", "plot",
               "Loss, log scale: training (with the embedding's L2 penalty, as Keras reports it) and "
               "validation (the cross-entropy alone).");
    html_section_end(fp);
}

static void section_words(FILE *fp, const TextReport *r) {
    html_section(fp, "words", "The words the model reads");
    char rel[1300], path[2600];
    snprintf(rel, sizeof rel, "%s/attention.png", r->show_name);
    report_path(path, sizeof path, r->run, rel);
    if (!file_exists(path)) {
        report_missing_run(fp, "the word shading", "bin/text classify show", r->run, " --out ",
                           r->show_name);
    } else {
        report_figure(fp, rel, "validation sentences with each word shaded by its weight", "plot",
               "Validation sentences, the misclassified first; each word on the heat colour of its "
               "pooling weight, scaled to the sentence's largest.");
        snprintf(rel, sizeof rel, "%s/attention.html", r->show_name);
        report_path(path, sizeof path, r->run, rel);
        if (file_exists(path)) {
            fputs("<p>", fp);
            html_link(fp, rel, "The same sentences as a page");
            fputs(" (each word's weight on hovering).</p>\n", fp);
        }
    }
    html_section_end(fp);
}

static void section_model(FILE *fp, const TextReport *r) {
    html_section(fp, "model", "Model and training settings");
    fputs("<table class=\"facts\">\n", fp);
    char buf[512], a[32], b[32], c[32];
    report_format_count(buf, sizeof buf, report_parameter_count(&r->model));
    html_fact(fp, "parameters", buf);
    html_fact(fp, "data", meta(r, "train.data"));
    if (atoi(meta(r, "split.folds")) >= 2)
        snprintf(buf, sizeof buf, "stratified %s-fold (seed %s), fold %s validates", meta(r, "split.folds"),
                 meta(r, "split.fold_seed"), meta(r, "split.fold"));
    else
        snprintf(buf, sizeof buf, "the last %s of the sentences in file order validate (Keras's validation_split)",
                 meta_float(r, "split.valid_share", a, sizeof a));
    html_fact(fp, "split", buf);
    snprintf(buf, sizeof buf, "%d words (Keras Tokenizer, fitted on every sentence); %s per sentence, "
             "padding %s, truncating %s", atoi(meta(r, "text.vocab")) - 1, meta(r, "text.T"),
             meta(r, "text.padding"), meta(r, "text.truncating"));
    html_fact(fp, "words", buf);
    snprintf(buf, sizeof buf, "%s, L2 penalty %s", meta(r, "text.embed"), meta_float(r, "text.embed_l2", a, sizeof a));
    html_fact(fp, "embedding", buf);
    snprintf(buf, sizeof buf, "%s units%s, dropout %s, recurrent dropout %s", meta(r, "text.hidden"),
             atoi(meta(r, "text.bidirectional")) ? " per direction, bidirectional" : "",
             meta_float(r, "text.dropout", b, sizeof b), meta_float(r, "text.rec_dropout", c, sizeof c));
    html_fact(fp, "LSTM", buf);
    const char *pool = meta(r, "text.pool");
    snprintf(buf, sizeof buf, "%s%s%s; padding %s", pool, strcmp(pool, "query") == 0 ? ", kernel " : "",
             strcmp(pool, "query") == 0 ? meta(r, "text.attn_kind") : "",
             atoi(meta(r, "text.masked")) ? "masked" : "not masked (as the demo)");
    html_fact(fp, "pooling", buf);
    snprintf(buf, sizeof buf, "%s (labels %s)", meta(r, "text.classes"), meta(r, "text.class_values"));
    html_fact(fp, "classes", buf);
    snprintf(buf, sizeof buf, "Adam, learning rate %s, beta1 %s, eps 1e-7; gradient norm clipped at %s (0: off)",
             meta_float(r, "train.lr", a, sizeof a), meta_float(r, "train.beta1", b, sizeof b),
             meta_float(r, "train.clip", c, sizeof c));
    html_fact(fp, "optimiser", buf);
    html_fact(fp, "batch", meta(r, "train.batch"));
    html_fact(fp, "seed", meta(r, "train.seed"));
    html_fact(fp, "steps trained", meta(r, "train.step"));
    fputs("</table>\n", fp);
    html_section_end(fp);
}

static int write_page(const TextReport *r, Error *err) {
    AtomicFile af;
    if (report_open(&af, r->run, r->out_name, err)) return -1;
    FILE *fp = af.fp;
    char title[1200];
    snprintf(title, sizeof title, "Sentence classifier run %s", r->run);
    html_page_begin(fp, title);
    report_page_header_begin(fp, "Sentence classifier run", r->run);
    html_textf(fp, "Pooling %s. ", meta(r, "text.pool"));
    if (r->eval) html_textf(fp, "Validation accuracy %.2f%%. ", 100.0 * report_json_number(r->eval, "accuracy"));
    report_page_trained(fp, r->run_json, meta(r, "train.step"), "", "sentences");
    fputs("</p>\n</header>\n<nav class=\"toc\"><a href=\"#results\">Results</a><a href=\"#curve\">Curves</a>"
          "<a href=\"#words\">Words</a><a href=\"#model\">Model</a><a href=\"#run\">Run</a></nav>\n", fp);
    section_results(fp, r);
    section_curves(fp, r);
    section_words(fp, r);
    section_model(fp, r);
    report_section_run(fp, r->run_json, "text classify", "sentences");
    html_page_end(fp, NULL);
    return atomic_commit(&af, err);
}

int text_report_main(int argc, char **argv) {
    TextReport r;
    memset(&r, 0, sizeof r);
    r.eval_name = "eval.json";
    r.show_name = "show";
    r.out_name = "report.html";
    ArgSpec specs[] = {
        {"run", ARG_STRING, &r.run, "the run folder (text classify train --out)", .metavar = "DIR", .given = NULL},
        {"eval", ARG_STRING, &r.eval_name, "text classify eval --json output, relative to RUN", .metavar = "NAME", .given = NULL},
        {"show", ARG_STRING, &r.show_name, "text classify show folder, relative to RUN", .metavar = "NAME", .given = NULL},
        {"out", ARG_STRING, &r.out_name, "the page, relative to RUN", .metavar = "NAME", .given = NULL},
    };
    int code;
    if (report_parse_args(argc, argv, specs, ARGS_LEN(specs), "text classify report RUN [flags]",
                          "text classify", &r.run, &code))
        return code;
    Error err;
    int rc = load_inputs(&r, &err) || draw_curves(&r, &err) || write_page(&r, &err);
    if (rc) fprintf(stderr, "text classify: %s\n", err.msg);
    else text_write_linef(stderr, "text classify report: wrote %s/%s", r.run, r.out_name);
    cJSON_Delete(r.run_json);
    cJSON_Delete(r.eval);
    if (r.model.buffer_) safetensors_free(&r.model);
    return rc ? 1 : 0;
}
