// report_caption.c: see report_caption.h.
#include "cli/report_caption.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/caption_data.h"
#include "cli/html.h"
#include "cli/report_common.h"
#include "core/check.h"
#include "core/safetensors.h"
#include "core/text_escape.h"

// One entry of per_image.json (strings point into the parsed document).
typedef struct {
    int index;
    char id[256];
    const char *caption, *strip;
    const cJSON *refs;
    double bleu4, cider, grounding;
    int object_words, grounded;
    int objects_named, objects_true, objects_right;  // -1 when the file has none
} ImageItem;

typedef struct {
    const char *run, *eval_name, *per_image_name, *strips_name, *out_name;
    int ranked;               // best and worst shown
    SafetensorsFile model;
    cJSON *run_json, *eval, *per_image;
    ImageItem *items;
    int n_items;
    int has_loss, has_bleu, has_grounding, has_norms;  // curves drawn
    int n_val;                              // validations in log.csv
    double one_val[3];                      // step, BLEU-4, grounding of the only one
} CaptionReport;

static int is_space_free(const char *s) { return s && *s && !strpbrk(s, " \t\n'\"\\$`"); }

// The command that makes RUN/NAME (for a missing input), with RUN quoted when needed.
static void command_for(char *buf, size_t n, const CaptionReport *r, const char *what) {
    const char *q = is_space_free(r->run) ? "" : "'";
    if (!strcmp(what, "eval"))
        snprintf(buf, n,
                 "bin/caption eval --model %s%s/model.safetensors%s --data DATA --split test --beam 3 --json "
                 "--per-image %s%s/%s%s --attention-out %s%s/%s%s > %s%s/%s%s",
                 q, r->run, q, q, r->run, r->per_image_name, q, q, r->run, r->strips_name, q, q, r->run,
                 r->eval_name, q);
}

static int load_inputs(CaptionReport *r, Error *err) {
    char path[1200];
    report_path(path, sizeof path, r->run, "model.safetensors");
    if (!file_exists(path))
        return error_set(err, "%s: no model.safetensors here (caption train --out %s writes one)", r->run, r->run);
    if (safetensors_load(&r->model, path, err)) return -1;
    const char *fmt = safetensors_meta(&r->model, "format");
    if (!fmt || strcmp(fmt, "attend-sat") || !safetensors_meta(&r->model, "sat.config"))
        return error_set(err, "%s: not a captioner model (format '%s'%s)", path, fmt ? fmt : "missing",
                         fmt && !strncmp(fmt, "attend-draw", 11) ? "; use draw report" : "");
    const char *names[3] = {"run.json", r->eval_name, r->per_image_name};
    cJSON **docs[3] = {&r->run_json, &r->eval, &r->per_image};
    for (int k = 0; k < 3; k++) {
        report_path(path, sizeof path, r->run, names[k]);
        if (report_read_json(docs[k], path, err)) return -1;
    }
    if (r->per_image) {
        report_path(path, sizeof path, r->run, r->per_image_name);
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(r->per_image, "items");
        if (!cJSON_IsArray(items)) return error_set(err, "%s: no \"items\" array", path);
        r->n_items = cJSON_GetArraySize(items);
        r->items = xcalloc((size_t)(r->n_items ? r->n_items : 1), sizeof(ImageItem));
        int i = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, items) {
            ImageItem *m = &r->items[i];
            double index = report_json_number(it, "index");
            m->caption = report_json_string(it, "caption");
            m->refs = cJSON_GetObjectItemCaseSensitive(it, "references");
            if (!isfinite(index) || index < 0 || !m->caption || !cJSON_IsArray(m->refs))
                return error_set(err, "%s: item %d lacks an index, caption or references", path, i);
            m->index = (int)index;
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "image_id");
            if (cJSON_IsString(id)) snprintf(m->id, sizeof m->id, "%s", id->valuestring);
            else if (cJSON_IsNumber(id)) snprintf(m->id, sizeof m->id, "%.0f", id->valuedouble);
            m->strip = report_json_string(it, "strip");
            m->bleu4 = report_json_number(it, "bleu4");
            m->cider = report_json_number(it, "cider_d");
            m->grounding = report_json_number(it, "grounding");
            double ow = report_json_number(it, "object_words"), gr = report_json_number(it, "grounded");
            m->object_words = isfinite(ow) ? (int)ow : -1;
            m->grounded = isfinite(gr) ? (int)gr : -1;
            double on = report_json_number(it, "objects_named"), ot = report_json_number(it, "objects_true"),
                   orr = report_json_number(it, "objects_right");
            bool has_objects = isfinite(on) && isfinite(ot) && isfinite(orr);
            m->objects_named = has_objects ? (int)on : -1;
            m->objects_true = has_objects ? (int)ot : -1;
            m->objects_right = has_objects ? (int)orr : -1;
            i++;
        }
    }
    return 0;
}

static int draw_curves(CaptionReport *r, Error *err) {
    char path[1200];
    report_path(path, sizeof path, r->run, "log.csv");
    if (!file_exists(path)) return 0;
    static const char *const cols[5] = {"loss", "val_bleu4", "val_grounding", "grad_norm", "grad_norm_max"};
    ReportColumns c;
    if (report_read_columns(&c, path, "step", cols, 5, err)) return -1;
    int rc = 0;
    if (c.n[0] > 0) {
        ReportPlot p = {.file = "loss.png", .title = "training loss", .xlabel = "step",
                        .ylabel = "per image", .name1 = "loss", .x1 = c.x[0], .y1 = c.y[0], .n1 = c.n[0]};
        rc = report_plot(r->run, &p, err);
        r->has_loss = rc == 0;
    }
    r->n_val = c.n[1];
    if (c.n[1] == 1) {  // one point is no curve: the page states it instead
        r->one_val[0] = c.x[1][0];
        r->one_val[1] = c.y[1][0];
        r->one_val[2] = c.n[2] == 1 ? c.y[2][0] : NAN;
    }
    if (!rc && c.n[1] > 1) {
        ReportPlot p = {.file = "val_bleu4.png", .title = "validation BLEU-4", .xlabel = "step",
                        .name1 = "BLEU-4", .x1 = c.x[1], .y1 = c.y[1], .n1 = c.n[1],
                        .nonnegative = 1};
        rc = report_plot(r->run, &p, err);
        r->has_bleu = rc == 0;
    }
    if (!rc && c.n[2] > 1) {
        ReportPlot p = {.file = "val_grounding.png", .title = "validation grounding", .xlabel = "step",
                        .name1 = "grounding", .x1 = c.x[2], .y1 = c.y[2], .n1 = c.n[2],
                        .nonnegative = 1};
        rc = report_plot(r->run, &p, err);
        r->has_grounding = rc == 0;
    }
    if (!rc && c.n[3] > 0) {  // logs written before grad_norm_max have the mean alone
        ReportPlot p = {.file = "grad_norm.png", .title = "gradient norm before clipping", .xlabel = "step",
                        .ylabel = "global norm", .name1 = "mean", .x1 = c.x[3], .y1 = c.y[3], .n1 = c.n[3],
                        .name2 = c.n[4] > 0 ? "largest" : NULL, .x2 = c.x[4], .y2 = c.y[4], .n2 = c.n[4],
                        .log_y = 1};
        rc = report_plot(r->run, &p, err);
        r->has_norms = rc == 0;
    }
    report_columns_free(&c);
    return rc;
}

// --- page sections ------------------------------------------------------------------------

static void section_results(FILE *fp, const CaptionReport *r) {
    html_section(fp, "results", "Test results");
    if (!r->eval) {
        char cmd[2048];
        command_for(cmd, sizeof cmd, r, "eval");
        report_missing(fp, r->eval_name, cmd);
        html_section_end(fp);
        return;
    }
    // The scenes' columns (from SCENES_COLUMN on) only where eval.json has them: other data
    // have no boxes or objects, and an eval.json written before object F1 has no such key.
    enum { COLUMNS = 10, SCENES_COLUMN = 6 };
    static const char *const keys[COLUMNS] = {"bleu1", "bleu2", "bleu3", "bleu4", "cider", "rougeL",
                                              "grounding", "object_f1", "object_precision", "object_recall"};
    static const char *const heads[COLUMNS] = {"BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "CIDEr-D", "ROUGE-L",
                                               "grounding", "object F1", "object precision", "object recall"};
    bool shown[COLUMNS];
    for (int k = 0; k < COLUMNS; k++)
        shown[k] = k < SCENES_COLUMN || isfinite(report_json_number(r->eval, keys[k]));
    fputs("<table>\n<thead><tr>", fp);
    for (int k = 0; k < COLUMNS; k++)
        if (shown[k]) fprintf(fp, "<th class=\"num\">%s</th>", heads[k]);
    fputs("</tr></thead>\n<tbody><tr>", fp);
    for (int k = 0; k < COLUMNS; k++)
        if (shown[k]) html_metric_cell(fp, keys[k], report_json_number(r->eval, keys[k]), 4);
    fputs("</tr></tbody>\n</table>\n<p class=\"note\">", fp);
    const char *split = report_json_string(r->eval, "split");
    double images = report_json_number(r->eval, "images"), beam = report_json_number(r->eval, "beam");
    html_textf(fp, "%s split, %.0f images, beam %.0f, %s attention. ", split ? split : "?", images,
               beam, report_json_string(r->eval, "attention") ? report_json_string(r->eval, "attention") : "?");
    fputs("Scores as the coco-caption toolkit computes them, 0..1 (CIDEr-D unscaled, up to 10); "
          "grounding is the share of object words whose attention peak lies inside a box of "
          "that object.", fp);
    double ow = report_json_number(r->eval, "object_words");
    if (isfinite(ow)) html_textf(fp, " (%.0f object words.)", ow);
    if (shown[7])
        html_textf(fp, " Object F1: the colour+class objects the captions name (\"a red seven\") "
                       "against the scenes' objects, counts summed over the split before the ratios: "
                       "%.0f named, %.0f of them right, %.0f in the scenes.",
                   report_json_number(r->eval, "objects_named"), report_json_number(r->eval, "objects_right"),
                   report_json_number(r->eval, "objects_true"));
    fputs("</p>\n<p class=\"paper\">Xu et al. 2015 report BLEU-4 0.195 (Flickr8k), 0.191 "
          "(Flickr30k) and 0.243 (COCO) with soft attention on real photographs, with a VGG "
          "encoder pretrained on ImageNet; scores on the synthetic scenes are not comparable "
          "with them.</p>\n", fp);
    html_section_end(fp);
}

static void section_curves(FILE *fp, const CaptionReport *r) {
    html_section(fp, "curves", "Training curves");
    if (!r->has_loss && !r->has_bleu) {
        fputs("<p class=\"missing\">No log.csv rows to draw.</p>\n", fp);
        html_section_end(fp);
        return;
    }
    fputs("<div class=\"figs\">\n", fp);
    // The Transformer decoder's loss has no attention regulariser (sat.config names the kind).
    const char *cfg = safetensors_meta(&r->model, "sat.config");
    const bool tf = cfg && strstr(cfg, "decoder=transformer");
    if (r->has_loss)
        report_figure(fp, "report_files/loss.png", "training loss against the step", "plot",
                      tf ? "Training loss per image (cross-entropy; the Transformer decoder has no "
                           "attention regulariser), the mean of each logging window."
                         : "Training loss per image (cross-entropy plus the attention regulariser), "
                           "the mean of each logging window.");
    if (r->has_bleu)
        report_figure(fp, "report_files/val_bleu4.png", "validation BLEU-4 against the step", "plot",
               "Validation BLEU-4 at each epoch's end (of the weight average with --ema).");
    if (r->has_grounding)
        report_figure(fp, "report_files/val_grounding.png", "validation grounding against the step", "plot",
               "Validation grounding accuracy.");
    if (r->has_norms)
        report_figure(fp, "report_files/grad_norm.png", "gradient norm against the step", "plot",
               "The global gradient norm before clipping: mean and largest of each logging window, log scale. "
               "Training clips it at the command's --clip (default 5; 0: no clipping).");
    fputs("</div>\n", fp);
    if (r->n_val == 1) {
        fputs("<p class=\"note\">", fp);
        html_textf(fp, "One validation, at step %.0f: BLEU-4 %.4f", r->one_val[0], r->one_val[1]);
        if (isfinite(r->one_val[2])) html_textf(fp, ", grounding %.4f", r->one_val[2]);
        fputs(".</p>\n", fp);
    }
    html_section_end(fp);
}

static void write_number_attr(FILE *fp, const char *name, double v) {
    if (isfinite(v)) fprintf(fp, " data-%s=\"%.6g\"", name, v);
    else fprintf(fp, " data-%s=\"\"", name);
}

static void card(FILE *fp, const CaptionReport *r, const ImageItem *m, int rank) {
    fprintf(fp, "<article class=\"card\" data-index=\"%d\"", m->index);
    write_number_attr(fp, "cider", m->cider);
    write_number_attr(fp, "bleu4", m->bleu4);
    write_number_attr(fp, "grounding", m->grounding);
    fputs(">\n", fp);
    char rel[1100], path[2400];
    if (m->strip) {
        snprintf(rel, sizeof rel, "%s/%s", r->strips_name, m->strip);
        report_path(path, sizeof path, r->run, rel);
    }
    if (m->strip && file_exists(path)) {
        char alt[400];
        snprintf(alt, sizeof alt, "attention strip of image %d: the image, then its attention for each word", m->index);
        html_img(fp, rel, alt, "strip");
        fputc('\n', fp);
    }
    fputs("<p class=\"cap\">", fp);
    html_text(fp, m->caption);
    fputs("</p>\n<ul>", fp);
    const cJSON *ref;
    cJSON_ArrayForEach(ref, m->refs) {
        if (!cJSON_IsString(ref)) continue;
        fputs("<li>", fp);
        html_text(fp, ref->valuestring);
        fputs("</li>", fp);
    }
    fputs("</ul>\n<p class=\"scores\">", fp);
    html_textf(fp, "BLEU-4 %.4f", m->bleu4);
    fputs(" &middot; ", fp);
    html_textf(fp, "CIDEr-D %.3f", m->cider);
    if (m->object_words >= 0) {
        fputs(" &middot; ", fp);
        html_textf(fp, "grounded %d of %d object words", m->grounded, m->object_words);
    }
    if (m->objects_named >= 0) {
        fputs(" &middot; ", fp);
        html_textf(fp, "%d of %d objects named right, %d in the scene", m->objects_right, m->objects_named,
                   m->objects_true);
    }
    fputs("</p>\n<p class=\"id\">", fp);
    if (rank > 0) html_textf(fp, "rank %d \xC2\xB7 ", rank);
    html_textf(fp, "image %d \xC2\xB7 %s", m->index, m->id);
    fputs("</p>\n</article>\n", fp);
}

static const char GRID_SCRIPT[] =
    "(function () {\n"
    "  var grid = document.getElementById('grid');\n"
    "  if (!grid) return;\n"
    "  var sort = document.getElementById('sort'), text = document.getElementById('text');\n"
    "  var below = document.getElementById('below');\n"
    "  var cards = Array.prototype.slice.call(grid.children);\n"
    "  function num(c, k) { var v = parseFloat(c.getAttribute('data-' + k)); return isNaN(v) ? -1 : v; }\n"
    "  function apply() {\n"
    "    var how = sort.value.split(' '), key = how[0], dir = how[1] === 'asc' ? 1 : -1;\n"
    "    cards.sort(function (a, b) {\n"
    "      return dir * (num(a, key) - num(b, key)) || num(a, 'index') - num(b, 'index');\n"
    "    });\n"
    "    var t = text.value.toLowerCase(), max = parseFloat(below.value);\n"
    "    cards.forEach(function (c) {\n"
    "      c.hidden = (t && c.textContent.toLowerCase().indexOf(t) < 0) ||\n"
    "                 (!isNaN(max) && num(c, 'cider') >= max);\n"
    "      grid.appendChild(c);\n"
    "    });\n"
    "  }\n"
    "  sort.addEventListener('change', apply);\n"
    "  text.addEventListener('input', apply);\n"
    "  below.addEventListener('input', apply);\n"
    "})();\n";

static int cmp_by_cider(const void *a, const void *b) {
    const ImageItem *x = *(const ImageItem *const *)a, *y = *(const ImageItem *const *)b;
    double cx = isfinite(x->cider) ? x->cider : -1, cy = isfinite(y->cider) ? y->cider : -1;
    if (cx != cy) return cx > cy ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static void section_images(FILE *fp, const CaptionReport *r) {
    html_section(fp, "images", "Test images");
    if (!r->per_image) {
        char cmd[2048];
        command_for(cmd, sizeof cmd, r, "eval");
        report_missing(fp, r->per_image_name, cmd);
        html_section_end(fp);
        return;
    }
    int shown = 0;
    for (int i = 0; i < r->n_items; i++) shown += r->items[i].strip != NULL;
    fputs("<p class=\"note\">The test images that have attention strips (the first of the split "
          "and the best and worst by CIDEr-D): each strip is the image, then where the model looked "
          "for each generated word. Under it the generated caption, the references and the "
          "image's own scores (coco-caption's per-image BLEU-4 and CIDEr-D).</p>\n", fp);
    if (shown == 0) {
        fputs("<p class=\"missing\">No image has a strip: run caption eval with --attention-out.</p>\n", fp);
    } else {
        fputs("<div class=\"controls\"><label>Order <select id=\"sort\">"
              "<option value=\"index asc\">split order</option>"
              "<option value=\"cider desc\">CIDEr-D, highest first</option>"
              "<option value=\"cider asc\">CIDEr-D, lowest first</option>"
              "<option value=\"bleu4 desc\">BLEU-4, highest first</option>"
              "<option value=\"bleu4 asc\">BLEU-4, lowest first</option>"
              "<option value=\"grounding asc\">grounding, lowest first</option>"
              "</select></label>"
              "<label>Words <input id=\"text\" type=\"search\" placeholder=\"e.g. red\"></label>"
              "<label>CIDEr-D below <input id=\"below\" type=\"number\" step=\"0.5\" min=\"0\"></label>"
              "</div>\n<div class=\"cards\" id=\"grid\">\n", fp);
        for (int i = 0; i < r->n_items; i++)
            if (r->items[i].strip) card(fp, r, &r->items[i], 0);
        fputs("</div>\n", fp);
    }
    html_section_end(fp);

    const ImageItem **order = xmalloc((size_t)(r->n_items ? r->n_items : 1) * sizeof *order);
    for (int i = 0; i < r->n_items; i++) order[i] = &r->items[i];
    qsort(order, (size_t)r->n_items, sizeof *order, cmp_by_cider);
    int k = r->ranked < r->n_items ? r->ranked : r->n_items;
    char title[64];
    snprintf(title, sizeof title, "The best %d by CIDEr-D", k);
    html_section(fp, "best", title);
    fputs("<div class=\"cards\">\n", fp);
    for (int i = 0; i < k; i++) card(fp, r, order[i], i + 1);
    fputs("</div>\n", fp);
    html_section_end(fp);
    snprintf(title, sizeof title, "The worst %d by CIDEr-D", k);
    html_section(fp, "worst", title);
    fputs("<div class=\"cards\">\n", fp);
    for (int i = 0; i < k; i++) card(fp, r, order[r->n_items - 1 - i], r->n_items - i);
    fputs("</div>\n", fp);
    html_section_end(fp);
    free(order);
}

static void section_model(FILE *fp, const CaptionReport *r) {
    html_section(fp, "model", "Model");
    const char *cfg = safetensors_meta(&r->model, "sat.config");
    fputs("<table class=\"facts\">\n", fp);
    char buf[256], key[128], value[256];
    report_format_count(buf, sizeof buf, report_parameter_count(&r->model));
    html_fact(fp, "parameters", buf);
    const char *bs = safetensors_meta(&r->model, "best_step"), *bb = safetensors_meta(&r->model, "best_val_bleu4");
    if (bs && bb) {
        snprintf(buf, sizeof buf, "step %s (validation BLEU-4 %.4f)", bs, strtod(bb, NULL));
        html_fact(fp, "model kept", buf);
    }
    // The configuration string is "key=value key=value ...".
    for (const char *p = cfg; p && *p;) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, " ");
        const char *eq = memchr(p, '=', len);
        if (eq) {
            snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
            snprintf(value, sizeof value, "%.*s", (int)(len - (size_t)(eq - p) - 1), eq + 1);
            if (!strcmp(key, "vocab")) snprintf(key, sizeof key, "vocabulary (words, with 4 special)");
            char *end;
            double v = strtod(value, &end);
            if (end != value && !*end && strchr(value, '.')) snprintf(value, sizeof value, "%g", v);
            html_fact(fp, key, value);
        }
        p += len;
    }
    fputs("</table>\n", fp);
    html_section_end(fp);
}

static void section_data(FILE *fp, const CaptionReport *r) {
    html_section(fp, "data", "Data");
    fputs("<table class=\"facts\">\n", fp);
    CaptionDataFlags df;
    caption_data_flags_default(&df);
    const char *spec = report_run_flag(r->run_json, "data");
    char buf[512];
    if (!r->run_json) {
        html_fact(fp, "training data", "unknown (no run.json)");
    } else if (!spec || !strcmp(spec, "scenes")) {
        const char *tc = report_run_flag(r->run_json, "train-count"), *vc = report_run_flag(r->run_json, "val-count-scenes");
        const char *sc = report_run_flag(r->run_json, "test-count"), *seed = report_run_flag(r->run_json, "scenes-seed");
        char a[32], b[32], c[32];
        report_format_count(a, sizeof a, tc ? atol(tc) : df.train_count);
        report_format_count(b, sizeof b, vc ? atol(vc) : df.val_count);
        report_format_count(c, sizeof c, sc ? atol(sc) : df.test_count);
        snprintf(buf, sizeof buf, "synthetic scenes (MNIST digits and Fashion-MNIST objects on a canvas, captioned by colour and class)");
        html_fact(fp, "training data", buf);
        snprintf(buf, sizeof buf, "%s training, %s validation, %s test scenes%s", a, b, c,
                 tc || vc || sc ? "" : " (the defaults of this build)");
        html_fact(fp, "splits", buf);
        snprintf(buf, sizeof buf, "%s", seed ? seed : "the default");
        html_fact(fp, "generator seed", buf);
    } else {
        html_fact(fp, "training data", spec);
    }
    if (r->eval) {
        const char *split = report_json_string(r->eval, "split");
        snprintf(buf, sizeof buf, "%s split, %.0f images", split ? split : "?", report_json_number(r->eval, "images"));
        html_fact(fp, "scored", buf);
    }
    fputs("</table>\n", fp);
    html_section_end(fp);
}

static void page_header(FILE *fp, const CaptionReport *r) {
    report_page_header_begin(fp, "Captioner run", r->run);
    if (r->eval)
        html_textf(fp, "Test BLEU-4 %.4f, CIDEr-D %.3f", report_json_number(r->eval, "bleu4"),
                   report_json_number(r->eval, "cider"));
    if (r->eval && isfinite(report_json_number(r->eval, "grounding")))
        html_textf(fp, ", grounding %.3f", report_json_number(r->eval, "grounding"));
    if (r->eval && isfinite(report_json_number(r->eval, "object_f1")))
        html_textf(fp, ", object F1 %.3f", report_json_number(r->eval, "object_f1"));
    report_page_trained(fp, r->run_json, NULL, r->eval ? ". " : "", "images");
    fputs("</p>\n</header>\n<nav class=\"toc\"><a href=\"#results\">Results</a><a href=\"#curves\">Curves</a>"
          "<a href=\"#images\">Images</a>", fp);
    if (r->per_image) fputs("<a href=\"#best\">Best</a><a href=\"#worst\">Worst</a>", fp);
    fputs("<a href=\"#model\">Model</a><a href=\"#data\">Data</a><a href=\"#run\">Run</a></nav>\n", fp);
}

static int write_page(const CaptionReport *r, Error *err) {
    AtomicFile af;
    if (report_open(&af, r->run, r->out_name, err)) return -1;
    FILE *fp = af.fp;
    char title[1200];
    snprintf(title, sizeof title, "Captioner run %s", r->run);
    html_page_begin(fp, title);
    page_header(fp, r);
    section_results(fp, r);
    section_curves(fp, r);
    section_images(fp, r);
    section_model(fp, r);
    section_data(fp, r);
    report_section_run(fp, r->run_json, "caption", "images");
    html_page_end(fp, r->per_image ? GRID_SCRIPT : NULL);
    return atomic_commit(&af, err);
}

int caption_report_main(int argc, char **argv) {
    CaptionReport r;
    memset(&r, 0, sizeof r);
    r.eval_name = "eval.json";
    r.per_image_name = "per_image.json";
    r.strips_name = "strips";
    r.out_name = "report.html";
    r.ranked = 20;
    ArgSpec specs[] = {
        {"run", ARG_STRING, &r.run, "the run folder (caption train --out), in RUN's place (not beside another RUN)", .metavar = "DIR", .given = NULL},
        {"eval", ARG_STRING, &r.eval_name, "caption eval --json output, relative to RUN", .metavar = "NAME", .given = NULL},
        {"per-image", ARG_STRING, &r.per_image_name, "caption eval --per-image output, relative to RUN", .metavar = "NAME", .given = NULL},
        {"strips", ARG_STRING, &r.strips_name, "caption eval --attention-out folder, relative to RUN", .metavar = "NAME", .given = NULL},
        {"out", ARG_STRING, &r.out_name, "the page, relative to RUN", .metavar = "NAME", .given = NULL},
        {"ranked", ARG_INT, &r.ranked, "images in the best and worst lists", .has_min = true, .min = 0, .has_max = true, .max = 1000},
    };
    int code;
    if (report_parse_args(argc, argv, specs, ARGS_LEN(specs), "caption report RUN [flags]", "caption report", &r.run, &code))
        return code;
    Error err;
    int rc = load_inputs(&r, &err) || draw_curves(&r, &err) || write_page(&r, &err);
    if (rc) fprintf(stderr, "caption report: %s\n", err.msg);
    else text_write_linef(stderr, "caption report: wrote %s/%s", r.run, r.out_name);
    free(r.items);
    cJSON_Delete(r.run_json);
    cJSON_Delete(r.eval);
    cJSON_Delete(r.per_image);
    if (r.model.buffer_) safetensors_free(&r.model);
    return rc ? 1 : 0;
}
