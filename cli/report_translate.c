// report_translate.c: see report_translate.h.
#include "cli/report_translate.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/html.h"
#include "cli/report_common.h"
#include "core/safetensors.h"
#include "core/text_escape.h"

#define SHOWN_PICTURES 4

typedef struct {
    const char *run, *out, *eval_name, *score_name, *show_name;
    char out_name[1024];  // the page, relative to run
    SafetensorsFile model;
    cJSON *run_json, *eval, *score;
} TranslateReport;

static const char *meta(const TranslateReport *r, const char *key) { return report_meta(&r->model, key); }

static const char *meta_float(const TranslateReport *r, const char *key, char *buf, size_t n) {
    return report_meta_float(&r->model, key, buf, n);
}

// The page's name inside the run folder: --out must name a file there.
static int page_name(TranslateReport *r, Error *err) {
    if (!r->out) {
        snprintf(r->out_name, sizeof r->out_name, "report.html");
        return 0;
    }
    const char *slash = strrchr(r->out, '/');
    const char *base = slash ? slash + 1 : r->out;
    char dir[1024], a[PATH_MAX], b[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - r->out) : 1, slash ? r->out : ".");
    if (!*base) return error_set(err, "--out %s: names a folder, not a page", r->out);
    if (!realpath(slash == r->out ? "/" : dir, a) || !realpath(r->run, b) || strcmp(a, b))
        return error_set(err, "--out %s: the page must be in the run folder %s (it links the run's files)",
                         r->out, r->run);
    snprintf(r->out_name, sizeof r->out_name, "%s", base);
    return 0;
}

static int load_inputs(TranslateReport *r, Error *err) {
    if (report_load_model(&r->model, &r->run_json, r->run, "attend-text-translate-1",
                          "text translate train", "a text translate checkpoint", err))
        return -1;
    char path[1200];
    report_path(path, sizeof path, r->run, r->eval_name);
    if (report_read_json(&r->eval, path, err)) return -1;
    report_path(path, sizeof path, r->run, r->score_name);
    return report_read_json(&r->score, path, err);
}

static bool have(const TranslateReport *r, char *rel, size_t n, const char *dir, const char *name) {
    char path[2400];
    if (dir) snprintf(rel, n, "%s/%s", dir, name);
    else snprintf(rel, n, "%s", name);
    report_path(path, sizeof path, r->run, rel);
    return file_exists(path);
}

// "bin/text translate COMMAND --model RUN/model.safetensors TAIL RUN/NAME" as a missing
// input's note.
static void missing(FILE *fp, const TranslateReport *r, const char *what, const char *command,
                    const char *tail, const char *name) {
    char program[64];
    snprintf(program, sizeof program, "bin/text translate %s", command);
    report_missing_run(fp, what, program, r->run, tail, name);
}

static void eval_table(FILE *fp, const cJSON *e) {
    fputs("<table class=\"metrics\"><tr><th>split</th><th>pairs</th><th>decoding</th>"
          "<th>exact match (%)</th><th>alignment accuracy (%)</th><th>BLEU</th><th>chrF</th></tr>\n<tr><td>", fp);
    const char *split = report_json_string(e, "split");
    html_text(fp, split ? split : "?");
    fprintf(fp, "</td><td>%.0f</td><td>greedy</td>", report_json_number(e, "pairs"));
    html_metric_cell(fp, "exact_match", 100.0 * report_json_number(e, "exact_match"), 2);
    html_metric_cell(fp, "alignment_accuracy", 100.0 * report_json_number(e, "alignment_accuracy"), 2);
    html_metric_cell(fp, "bleu", report_json_number(e, "bleu"), 2);
    html_metric_cell(fp, "chrf", report_json_number(e, "chrf"), 2);
    fputs("</tr></table>\n", fp);
}

static void score_tables(FILE *fp, const cJSON *s) {
    fputs("<table class=\"metrics\"><tr><th>split</th><th>pairs</th><th>decoding</th><th>BLEU</th>"
          "<th>bootstrap mean</th><th>95 % interval +-</th><th>chrF</th><th>bootstrap mean</th>"
          "<th>95 % interval +-</th></tr>\n<tr><td>", fp);
    const char *split = report_json_string(s, "split"), *dec = report_json_string(s, "decoding");
    html_text(fp, split ? split : "?");
    fprintf(fp, "</td><td>%.0f</td><td>", report_json_number(s, "pairs"));
    html_text(fp, dec ? dec : "?");
    fputs("</td>", fp);
    static const char *const keys[] = {"bleu", "bleu_mean", "bleu_ci", "chrf", "chrf_mean", "chrf_ci"};
    for (int k = 0; k < 6; k++) html_metric_cell(fp, keys[k], report_json_number(s, keys[k]), 2);
    fputs("</tr></table>\n<p>", fp);
    html_textf(fp, "sacreBLEU's rules (BLEU 13a, chrF2); the interval is the bootstrap's over %.0f "
               "resamples of the sentences (sacreBLEU's --confidence).", report_json_number(s, "samples"));
    fputs("</p>\n", fp);
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(s, "by_length");
    if (!cJSON_IsArray(by) || cJSON_GetArraySize(by) == 0) return;
    fputs("<h3>BLEU by source length</h3>\n<table class=\"metrics\"><tr><th>source words</th>"
          "<th>sentences</th><th>BLEU</th></tr>\n", fp);
    const cJSON *b;
    cJSON_ArrayForEach(b, by) {
        const double lo = report_json_number(b, "lo"), hi = report_json_number(b, "hi");
        char range[64], key[80];
        if (hi < 0) snprintf(range, sizeof range, "%.0f+", lo);
        else snprintf(range, sizeof range, "%.0f-%.0f", lo, hi);
        snprintf(key, sizeof key, "bleu_%s", range);
        fputs("<tr><td>", fp);
        html_text(fp, range);
        fprintf(fp, "</td><td>%.0f</td>", report_json_number(b, "sentences"));
        html_metric_cell(fp, key, report_json_number(b, "sentences") > 0 ? report_json_number(b, "bleu") : NAN, 2);
        fputs("</tr>\n", fp);
    }
    fputs("</table>\n<p>Buckets of Bahdanau et al. 2015's figure 2 (words of the source as "
          "str.split() counts them); a bucket of few sentences says little.</p>\n", fp);
}

static void section_results(FILE *fp, const TranslateReport *r) {
    html_section(fp, "results", "Results");
    if (r->eval) eval_table(fp, r->eval);
    else missing(fp, r, r->eval_name, "eval", " --json > ", r->eval_name);
    if (r->score) score_tables(fp, r->score);
    else if (strcmp(meta(r, "train.data"), "dates") != 0)
        missing(fp, r, r->score_name, "score", " --json > ", r->score_name);
    html_section_end(fp);
}

static void section_curve(FILE *fp, const TranslateReport *r) {
    html_section(fp, "curve", "Training curve");
    char rel[1300];
    if (have(r, rel, sizeof rel, NULL, "loss.png"))
        report_figure(fp, rel, "training and validation loss against the step", "plot",
                      "Cross-entropy per pair (summed over its target tokens): training (each logging "
                      "window's batches) and validation (teacher forcing).");
    else fputs("<p class=\"missing\">loss.png is missing: text translate train draws it when a run ends.</p>\n", fp);
    html_section_end(fp);
}

static void section_alignments(FILE *fp, const TranslateReport *r) {
    html_section(fp, "alignments", "Alignments");
    char rel[1300];
    if (!have(r, rel, sizeof rel, r->show_name, "alignments.html")) {
        missing(fp, r, "the alignment pictures", "show", " --out ", r->show_name);
        html_section_end(fp);
        return;
    }
    if (!have(r, rel, sizeof rel, r->show_name, "align_001.png"))
        fputs("<p>No pictures: a model without attention reads one fixed context.</p>\n", fp);
    for (int k = 1; k <= SHOWN_PICTURES; k++) {
        char name[32], caption[160];
        snprintf(name, sizeof name, "align_%03d.png", k);
        if (!have(r, rel, sizeof rel, r->show_name, name)) break;
        snprintf(caption, sizeof caption, "Sentence %d of the show page: source tokens across the top, "
                 "output tokens down the left, each cell its weight (white 0, black 1).", k);
        report_figure(fp, rel, "an alignment matrix", "pixel", caption);
    }
    have(r, rel, sizeof rel, r->show_name, "alignments.html");
    fputs("<p>", fp);
    html_link(fp, rel, "Every shown sentence with its source, reference and output");
    fputs(" (the wrong outputs first).</p>\n", fp);
    html_section_end(fp);
}

// A Transformer's checkpoint ("translate.model"; older ones are LSTMs').
static bool is_transformer(const TranslateReport *r) {
    const char *kind = safetensors_meta(&r->model, "translate.model");
    return kind && strcmp(kind, "transformer") == 0;
}

// What attends: the LSTM's attention kind, or the Transformer.
static const char *attention_name(const TranslateReport *r) {
    return is_transformer(r) ? "transformer" : meta(r, "translate.attention");
}

static void model_transformer_facts(FILE *fp, const TranslateReport *r) {
    char buf[512];
    snprintf(buf, sizeof buf, "Transformer, d_model %s, %s heads, d_ff %s; %s encoder and %s decoder "
             "layers, post-LN %s (0: pre-LN); sinusoidal positions (%s); alignments from decoder "
             "layer %s (-1: the last)", meta(r, "translate.d_model"), meta(r, "translate.heads"),
             meta(r, "translate.d_ff"), meta(r, "translate.enc_layers"), meta(r, "translate.dec_layers"),
             meta(r, "translate.post_ln"), meta(r, "translate.positions"), meta(r, "translate.map_layer"));
    html_fact(fp, "model", buf);
    snprintf(buf, sizeof buf, "dropout %s, label smoothing %s, warm-up %s steps (0: constant rate)",
             meta(r, "translate.dropout"), meta(r, "translate.label_smoothing"), meta(r, "translate.warmup"));
    html_fact(fp, "training", buf);
}

static void section_model(FILE *fp, const TranslateReport *r) {
    html_section(fp, "model", "Model and training settings");
    fputs("<table class=\"facts\">\n", fp);
    char buf[512], a[32], b[32];
    report_format_count(buf, sizeof buf, report_parameter_count(&r->model));
    html_fact(fp, "parameters", buf);
    html_fact(fp, "data", meta(r, "train.data"));
    if (safetensors_meta(&r->model, "translate.bpe"))
        snprintf(buf, sizeof buf, "one joint BPE of %s merges asked for (vocabulary %s), sources cut at %s "
                 "pieces, targets at %s", meta(r, "translate.bpe_merges"), meta(r, "translate.src_vocab"),
                 meta(r, "translate.max_src"), meta(r, "translate.max_len"));
    else
        snprintf(buf, sizeof buf, "characters (vocabularies %s and %s); %s training examples",
                 meta(r, "translate.src_vocab"), meta(r, "translate.tgt_vocab"), meta(r, "translate.train_size"));
    html_fact(fp, "tokens", buf);
    if (is_transformer(r)) model_transformer_facts(fp, r);
    else {
        snprintf(buf, sizeof buf, "embedding %s, bidirectional LSTM of %s units per direction",
                 meta(r, "translate.embed"), meta(r, "translate.hidden"));
        html_fact(fp, "encoder", buf);
        snprintf(buf, sizeof buf, "embedding %s, LSTM of %s units; attention %s (size %s, window %s)",
                 meta(r, "translate.dec_embed"), meta(r, "translate.dec_hidden"), meta(r, "translate.attention"),
                 meta(r, "translate.attn_size"), meta(r, "translate.window"));
        html_fact(fp, "decoder", buf);
    }
    snprintf(buf, sizeof buf, "Adam, learning rate %s, beta1 %s; gradient norm clipped at %s (0: off)",
             meta_float(r, "train.lr", a, sizeof a), meta_float(r, "train.beta1", b, sizeof b),
             meta(r, "train.clip"));
    html_fact(fp, "optimiser", buf);
    html_fact(fp, "batch", meta(r, "train.batch"));
    html_fact(fp, "seed", meta(r, "train.seed"));
    html_fact(fp, "steps trained", meta(r, "train.step"));
    fputs("</table>\n", fp);
    html_section_end(fp);
}

static void headline(FILE *fp, const TranslateReport *r) {
    report_page_header_begin(fp, "Translator run", r->run);
    html_textf(fp, "Attention %s, data %s. ", attention_name(r), meta(r, "train.data"));
    if (r->score)
        html_textf(fp, "Test BLEU %.2f (+- %.2f), chrF %.2f. ", report_json_number(r->score, "bleu"),
                   report_json_number(r->score, "bleu_ci"), report_json_number(r->score, "chrf"));
    else if (r->eval) {
        const double em = report_json_number(r->eval, "exact_match"), al = report_json_number(r->eval, "alignment_accuracy");
        html_textf(fp, "Exact match %.2f%%", 100.0 * em);
        if (isfinite(al)) html_textf(fp, ", alignment accuracy %.2f%%", 100.0 * al);
        html_textf(fp, ". ");
    }
    report_page_trained(fp, r->run_json, meta(r, "train.step"), "", "pairs");
    fputs("</p>\n</header>\n<nav class=\"toc\"><a href=\"#results\">Results</a><a href=\"#curve\">Curve</a>"
          "<a href=\"#alignments\">Alignments</a><a href=\"#model\">Model</a><a href=\"#run\">Run</a></nav>\n", fp);
}

static int write_page(const TranslateReport *r, Error *err) {
    AtomicFile af;
    if (report_open(&af, r->run, r->out_name, err)) return -1;
    FILE *fp = af.fp;
    char title[1200];
    snprintf(title, sizeof title, "Translator run %s", r->run);
    html_page_begin(fp, title);
    headline(fp, r);
    section_results(fp, r);
    section_curve(fp, r);
    section_alignments(fp, r);
    section_model(fp, r);
    report_section_run(fp, r->run_json, "text translate", "pairs");
    html_page_end(fp, NULL);
    return atomic_commit(&af, err);
}

int text_translate_report_main(int argc, char **argv) {
    TranslateReport r;
    memset(&r, 0, sizeof r);
    r.eval_name = "eval.json";
    r.score_name = "score.json";
    r.show_name = "show";
    ArgSpec specs[] = {
        {"model", ARG_STRING, &r.run, "the run folder (text translate train --out)", .metavar = "DIR", .required = true},
        {"out", ARG_STRING, &r.out, "the page, a file in the run folder (none: DIR/report.html)", .metavar = "FILE"},
        {"eval", ARG_STRING, &r.eval_name, "text translate eval --json output, relative to DIR", .metavar = "NAME"},
        {"score", ARG_STRING, &r.score_name, "text translate score --json output, relative to DIR", .metavar = "NAME"},
        {"show", ARG_STRING, &r.show_name, "text translate show folder, relative to DIR", .metavar = "NAME"},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                               "text translate report --model DIR [--out FILE] [flags]", "text translate", &code))
        return code;
    Error err;
    int rc = page_name(&r, &err) || load_inputs(&r, &err) || write_page(&r, &err);
    if (rc) fprintf(stderr, "text translate report: %s\n", err.msg);
    else text_write_linef(stderr, "text translate report: wrote %s/%s", r.run, r.out_name);
    cJSON_Delete(r.run_json);
    cJSON_Delete(r.eval);
    cJSON_Delete(r.score);
    if (r.model.buffer_) safetensors_free(&r.model);
    return rc ? 1 : 0;
}
