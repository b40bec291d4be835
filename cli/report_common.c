// report_common.c: see report_common.h.
#include "cli/report_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/html.h"
#include "core/check.h"
#include "core/text_escape.h"
#include "core/fileio.h"
#include "vision/plot.h"

int report_parse_args(int argc, char **argv, const ArgSpec *specs, int n, const char *synopsis,
                      const char *prefix, const char **run, int *code) {
    char **args = xcalloc((size_t)argc + 1, sizeof(char *));
    int m = 0;
    for (int i = 0; i < argc; i++)
        if (!(i == 1 && argv[1][0] != '-')) args[m++] = argv[i];
    const char *positional = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    int stop = args_parse_for_command(m, args, specs, n, synopsis, prefix, code);
    free(args);
    if (stop) return 1;
    const char *pre = prefix ? prefix : "", *sep = prefix ? ": " : "";
    if (positional && *run && strcmp(positional, *run)) {  // --run stored into *run
        fprintf(stderr, "%s%sRUN: two run folders, ", pre, sep);
        text_write_field(stderr, positional);
        fputs(" and --run ", stderr);
        text_write_field(stderr, *run);
        fputs(": give one\n", stderr);
        *code = 2;
        return 1;
    }
    if (positional) *run = positional;
    if (!*run) {
        fprintf(stderr, "%s%sRUN: missing (give the run folder first, or --run DIR)\n", pre, sep);
        *code = 2;
        return 1;
    }
    return 0;
}

void report_path(char *buf, size_t n, const char *run, const char *name) {
    snprintf(buf, n, "%s/%s", run, name);
}

int report_read_json(cJSON **doc, const char *path, Error *err) {
    *doc = NULL;
    if (!file_exists(path)) return 0;
    unsigned char *text;
    size_t len;
    if (file_read_all(path, &text, &len, (size_t)1 << 28, err)) return -1;
    const char *end = NULL;
    cJSON *d = cJSON_ParseWithLengthOpts((const char *)text, len, &end, 0);
    if (!d) {
        long at = end ? (long)(end - (const char *)text) : 0;
        free(text);
        return error_set(err, "%s: not valid JSON (near byte %ld)", path, at);
    }
    free(text);
    if (!cJSON_IsObject(d)) {
        cJSON_Delete(d);
        return error_set(err, "%s: expected a JSON object", path);
    }
    *doc = d;
    return 0;
}

double report_json_number(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *report_json_string(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

// Splits line (modified) at commas into cells (at most max); returns how many.
static int split_csv(char *line, char **cells, int max) {
    int n = 0;
    cells[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == ',') {
            *p = 0;
            cells[n++] = p + 1;
        }
    return n;
}

int report_read_columns(ReportColumns *c, const char *path, const char *xcol,
                        const char *const *ycols, int count, Error *err) {
    CHECK(count >= 1 && count <= 8);
    memset(c, 0, sizeof *c);
    c->count = count;
    FILE *fp;
    size_t size;
    if (file_open_regular(&fp, &size, path, err)) return -1;  // never a FIFO: it would block
    char line[4096];
    char *cells[64];
    int xi = -1, yi[8], cap = 256;
    for (int k = 0; k < count; k++) {
        yi[k] = -1;
        c->x[k] = xmalloc((size_t)cap * sizeof(float));
        c->y[k] = xmalloc((size_t)cap * sizeof(float));
    }
    if (!fgets(line, sizeof line, fp)) {
        fclose(fp);
        report_columns_free(c);
        return error_set(err, "%s: empty (no header row)", path);
    }
    line[strcspn(line, "\r\n")] = 0;
    int nh = split_csv(line, cells, 64);
    for (int i = 0; i < nh; i++) {
        if (!strcmp(cells[i], xcol)) xi = i;
        for (int k = 0; k < count; k++)
            if (!strcmp(cells[i], ycols[k])) yi[k] = i;
    }
    if (xi < 0) {
        fclose(fp);
        report_columns_free(c);
        return error_set(err, "%s: no column '%s' in the header", path, xcol);
    }
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = 0;
        int nc = split_csv(line, cells, 64);
        char *end;
        if (xi >= nc) continue;
        double x = strtod(cells[xi], &end);
        if (end == cells[xi]) continue;
        for (int k = 0; k < count; k++) {
            if (yi[k] < 0 || yi[k] >= nc || !cells[yi[k]][0]) continue;
            double y = strtod(cells[yi[k]], &end);
            if (end == cells[yi[k]] || !isfinite(y)) continue;
            if (c->n[k] == cap) {
                cap *= 2;
                for (int j = 0; j < count; j++) {
                    c->x[j] = xrealloc(c->x[j], (size_t)cap * sizeof(float));
                    c->y[j] = xrealloc(c->y[j], (size_t)cap * sizeof(float));
                }
            }
            c->x[k][c->n[k]] = (float)x;
            c->y[k][c->n[k]++] = (float)y;
        }
    }
    fclose(fp);
    return 0;
}

void report_columns_free(ReportColumns *c) {
    for (int k = 0; k < c->count; k++) {
        free(c->x[k]);
        free(c->y[k]);
    }
    memset(c, 0, sizeof *c);
}

int report_plot(const char *run, const ReportPlot *p, Error *err) {
    char dir[1100], path[1200];
    report_path(dir, sizeof dir, run, "report_files");
    if (make_dirs(dir, err)) return -1;
    snprintf(path, sizeof path, "%s/%s", dir, p->file);
    PlotSeries s[2] = {{p->name1, p->x1, p->y1, p->n1}, {p->name2, p->x2, p->y2, p->n2}};
    PlotOptions o = {.title = p->title, .xlabel = p->xlabel, .ylabel = p->ylabel, .width = 560,
                     .height = 340, .log_y = p->log_y, .nonnegative = p->nonnegative};
    return plot_write_png(path, s, p->name2 ? 2 : 1, &o, err);
}

int report_plot_log(const char *csv, const char *png, const ReportLogPlot *p, Error *err) {
    ReportColumns c;
    if (report_read_columns(&c, csv, "step", p->cols, 2, err)) return -1;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c.n[k]; i++) c.y[k][i] *= p->scale;
    PlotSeries s[2] = {{p->names[0], c.x[0], c.y[0], c.n[0]}, {p->names[1], c.x[1], c.y[1], c.n[1]}};
    PlotOptions o = {.title = p->title, .xlabel = "step", .ylabel = p->ylabel};
    int rc = plot_write_png(png, s, 2, &o, err);
    report_columns_free(&c);
    return rc;
}

void report_format_seconds(char *buf, size_t n, double s) {
    if (!isfinite(s)) snprintf(buf, n, "n/a");
    else if (s < 60) snprintf(buf, n, "%.1f s", s);
    else if (s < 3600) snprintf(buf, n, "%d min %02d s", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%d h %02d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void report_format_count(char *buf, size_t n, long v) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%ld", v < 0 ? -v : v);
    size_t k = 0;
    if (v < 0 && k + 1 < n) buf[k++] = '-';
    for (int i = 0; i < len && k + 1 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0 && k + 1 < n) buf[k++] = ',';
        if (k + 1 < n) buf[k++] = digits[i];
    }
    buf[k] = 0;
}

static const cJSON *invocations(const cJSON *run_json) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(run_json, "invocations");
    return cJSON_IsArray(list) ? list : NULL;
}

double report_total_wall(const cJSON *run_json) {
    const cJSON *inv;
    double total = 0;
    int any = 0;
    cJSON_ArrayForEach(inv, invocations(run_json)) {
        double w = report_json_number(inv, "wall_seconds");
        if (isfinite(w)) total += w, any = 1;
    }
    return any ? total : NAN;
}

double report_last_images_per_s(const cJSON *run_json) {
    const cJSON *inv;
    double last = NAN;
    cJSON_ArrayForEach(inv, invocations(run_json)) {
        double v = report_json_number(inv, "images_per_s");
        if (isfinite(v) && v > 0) last = v;
    }
    return last;
}

const char *report_run_flag(const cJSON *run_json, const char *name) {
    const cJSON *first = cJSON_GetArrayItem(invocations(run_json), 0);
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(first, "argv");
    size_t len = strlen(name);
    const char *found = NULL;
    for (int i = 0; i < cJSON_GetArraySize(argv); i++) {
        const cJSON *a = cJSON_GetArrayItem(argv, i);
        if (!cJSON_IsString(a) || strncmp(a->valuestring, "--", 2) || strncmp(a->valuestring + 2, name, len))
            continue;
        const char *rest = a->valuestring + 2 + len;
        if (*rest == '=') found = rest + 1;  // the last occurrence wins, as in cli/args.h
        else if (!*rest) {
            const cJSON *v = cJSON_GetArrayItem(argv, i + 1);
            found = cJSON_IsString(v) ? v->valuestring : "";
        }
    }
    return found;
}

void report_section_run(FILE *fp, const cJSON *run_json, const char *program, const char *unit) {
    html_section(fp, "run", "Run");
    const cJSON *list = invocations(run_json);
    if (!list || cJSON_GetArraySize(list) == 0) {
        fprintf(fp, "<p class=\"note\">No run record (run.json): the run was trained by a build of "
                    "%s that did not write one.</p>\n", program);
        html_section_end(fp);
        return;
    }
    fputs("<table class=\"wide\">\n<thead><tr><th>#</th><th>started (UTC)</th><th>commit</th>"
          "<th>status</th><th class=\"num\">steps</th><th class=\"num\">wall time</th>"
          "<th class=\"num\">", fp);
    html_text(fp, unit);
    fputs("/s</th><th class=\"num\">threads</th><th>CPU</th></tr></thead>\n<tbody>\n", fp);
    int k = 0;
    const cJSON *inv;
    cJSON_ArrayForEach(inv, list) {
        char wall[64], steps[32] = "", ips[32] = "", threads[48] = "";
        report_format_seconds(wall, sizeof wall, report_json_number(inv, "wall_seconds"));
        double st = report_json_number(inv, "steps"), v = report_json_number(inv, "images_per_s");
        double th = report_json_number(inv, "threads"), cpus = report_json_number(inv, "cpus_online");
        if (isfinite(st)) report_format_count(steps, sizeof steps, (long)st);
        if (isfinite(v)) snprintf(ips, sizeof ips, "%.1f", v);
        if (isfinite(th)) snprintf(threads, sizeof threads, isfinite(cpus) ? "%.0f of %.0f" : "%.0f", th, cpus);
        const char *status = report_json_string(inv, "status");
        if (status && !strcmp(status, "running")) status = "running or interrupted";
        fprintf(fp, "<tr><td>%d</td><td>", ++k);
        html_text(fp, report_json_string(inv, "date"));
        fputs("</td><td class=\"mono\">", fp);
        html_text(fp, report_json_string(inv, "commit"));
        fputs("</td><td>", fp);
        html_text(fp, status);
        fputs("</td><td class=\"num\">", fp);
        html_text(fp, steps);
        fputs("</td><td class=\"num\">", fp);
        html_text(fp, wall);
        fputs("</td><td class=\"num\">", fp);
        html_text(fp, ips);
        fputs("</td><td class=\"num\">", fp);
        html_text(fp, threads);
        fputs("</td><td>", fp);
        html_text(fp, report_json_string(inv, "cpu"));
        fputs("</td></tr>\n", fp);
    }
    fputs("</tbody>\n</table>\n", fp);
    k = 0;
    cJSON_ArrayForEach(inv, list) {
        fprintf(fp, "<p class=\"note\">Command %d:</p>\n<pre>", ++k);
        html_text(fp, report_json_string(inv, "command"));
        fputs("</pre>\n", fp);
        const char *gemm = report_json_string(inv, "gemm");
        if (gemm) {
            fputs("<p class=\"note\">Its matrix products: ", fp);
            html_text(fp, gemm);
            fputs("</p>\n", fp);
        }
    }
    html_section_end(fp);
}

void report_page_header_begin(FILE *fp, const char *what, const char *run) {
    const char *name = strrchr(run, '/');
    name = name && name[1] ? name + 1 : run;
    fputs("<header class=\"page\">\n<h1>", fp);
    html_text(fp, what);
    fputc(' ', fp);
    html_text(fp, name);
    fputs("</h1>\n<p>", fp);
}

void report_page_trained(FILE *fp, const cJSON *run_json, const char *steps, const char *lead,
                         const char *unit) {
    double wall = report_total_wall(run_json), ips = report_last_images_per_s(run_json);
    if (!isfinite(wall)) return;
    char w[64];
    report_format_seconds(w, sizeof w, wall);
    html_text(fp, lead);
    if (steps)
        html_textf(fp, "Trained %s steps in %s at %.0f %s/s.", steps, w, ips, unit);
    else
        html_textf(fp, "Trained for %s at %.0f %s/s.", w, ips, unit);
}

void report_missing(FILE *fp, const char *what, const char *command) {
    fputs("<p class=\"missing\">", fp);
    html_text(fp, what);
    fputs(" is missing; make it with:</p>\n<pre>", fp);
    html_text(fp, command);
    fputs("</pre>\n", fp);
}

void report_missing_run(FILE *fp, const char *what, const char *program, const char *run,
                        const char *tail, const char *name) {
    char model[1300], out[1300], cmd[3000];
    report_quoted_path(model, sizeof model, run, "model.safetensors");
    report_quoted_path(out, sizeof out, run, name);
    snprintf(cmd, sizeof cmd, "%s --model %s%s%s", program, model, tail, out);
    report_missing(fp, what, cmd);
}

int report_load_model(SafetensorsFile *model, cJSON **run_json, const char *run,
                      const char *format, const char *train, const char *what, Error *err) {
    char path[1200];
    report_path(path, sizeof path, run, "model.safetensors");
    if (!file_exists(path))
        return error_set(err, "%s: no model.safetensors here (%s --out %s writes one)", run, train,
                         run);
    if (safetensors_load(model, path, err)) return -1;
    const char *fmt = safetensors_meta(model, "format");
    if (!fmt || strcmp(fmt, format))
        return error_set(err, "%s: not %s (format '%s')", path, what, fmt ? fmt : "missing");
    report_path(path, sizeof path, run, "run.json");
    return report_read_json(run_json, path, err);
}

long report_parameter_count(const SafetensorsFile *f) {
    long n = 0;
    for (int i = 0; i < f->count; i++)
        if (!strchr(f->tensors[i].name, '/')) n += (long)f->tensors[i].numel;
    return n;
}

int report_open(AtomicFile *af, const char *run, const char *name, Error *err) {
    char path[1200];
    report_path(path, sizeof path, run, name);
    return atomic_open(af, path, err);
}

void report_figure(FILE *fp, const char *relpath, const char *alt, const char *cls, const char *caption) {
    fputs("<figure>", fp);
    html_img(fp, relpath, alt, cls);
    fputs("<figcaption>", fp);
    html_text(fp, caption);
    fputs("</figcaption></figure>\n", fp);
}

void report_quoted_path(char *buf, size_t n, const char *run, const char *name) {
    static const char shell[] = " \t'\"\\$`";
    const int plain = !strpbrk(run, shell) && !strpbrk(name, shell);
    snprintf(buf, n, plain ? "%s/%s" : "'%s/%s'", run, name);
}

const char *report_meta(const SafetensorsFile *f, const char *key) {
    const char *v = safetensors_meta(f, key);
    return v ? v : "?";
}

const char *report_meta_float(const SafetensorsFile *f, const char *key, char *buf, size_t n) {
    const char *v = report_meta(f, key);
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end) return v;
    snprintf(buf, n, "%g", x);
    return buf;
}
