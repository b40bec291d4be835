// text_eval.c: `text classify eval` and `text classify predict` (cli/text_eval.h).
#include "cli/text_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/text_checkpoint.h"
#include "cli/train_run.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/text_escape.h"
#include "core/timer.h"

static int fail(const Error *err) {
    fprintf(stderr, "text classify: %s\n", err->msg);
    return 1;
}

TextEval text_evaluate(TextActs *a, const TextParams *p, const TextConfig *c,
                       const TextEncoded *e) {
    TextEval r = {.n = e->n, .accuracy = NAN, .loss = NAN};
    double loss = 0.0;
    TextConfig nc = *c;
    nc.embed_l2 = 0.0f;  // the data loss alone
    for (int start = 0; start < e->n; start += a->B) {
        int nb = e->n - start < a->B ? e->n - start : a->B, right = 0;
        loss += nb * text_forward(a, p, &nc, e->ids + (size_t)start * e->T, e->lengths + start,
                                  e->labels + start, nb, NULL, &right);
        r.correct += right;
    }
    if (e->n) r.accuracy = (double)r.correct / e->n, r.loss = loss / e->n;
    return r;
}

// --- eval ----------------------------------------------------------------------------------

const char *const TEXT_SPLITS[] = {"valid", "train", "all", NULL};

typedef struct {
    const char *model, *data, *root;
    int split, batch;
    bool json;
} EvalFlags;

static int parse_eval_flags(EvalFlags *f, int argc, char **argv, int *code) {
    *f = (EvalFlags){.root = "data", .batch = 100};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"data", ARG_STRING, &f->data, "sentences to score (default: the model's own data spec)", .metavar = "SPEC"},
        {"data-root", ARG_STRING, &f->root, "folder holding sentiment/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &f->split, "valid: the model's validation sentences (its split of its data); train; all", .choices = TEXT_SPLITS},
        {"batch", ARG_INT, &f->batch, "sentences per forward pass", .has_min = true, .min = 1, .has_max = true, .max = TEXT_BATCH_MAX},
        {"json", ARG_FLAG, &f->json, "print the figures as one JSON object", .given = NULL},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                                  "text classify eval --model PATH [flags]", "text classify", code);
}

// The data's labels must be the model's classes.
static int check_classes(const SentenceSet *set, const TextState *st, const char *spec, Error *err) {
    if (set->n_classes == st->cfg.classes &&
        memcmp(set->class_value, st->class_values, (size_t)set->n_classes * sizeof(int)) == 0)
        return 0;
    return error_set(err, "%s: its %d labels are not the %d classes the model was trained on", spec,
                     set->n_classes, st->cfg.classes);
}

int text_open_split(TextSplitData *d, const char *model, const char *data, const char *root,
                    int split, Error *err) {
    memset(d, 0, sizeof *d);
    if (text_model_load(&d->m, model, err)) return -1;
    const TextState *st = &d->m.state;
    d->spec = data ? data : st->data;
    int rc = text_data_read(&d->set, d->spec, root, err) || check_classes(&d->set, st, d->spec, err);
    unsigned char *in_valid = rc ? NULL : xmalloc((size_t)d->set.n);
    d->idx = xmalloc((size_t)(d->set.n ? d->set.n : 1) * sizeof *d->idx);
    if (rc == 0) rc = text_split_mark(in_valid, &d->set, &st->split, err);
    int n = 0;
    for (int i = 0; i < d->set.n && rc == 0; i++)
        if (split == 2 || in_valid[i] == (split == 0 ? TEXT_SPLIT_VALID : TEXT_SPLIT_TRAIN))
            d->idx[n++] = i;
    free(in_valid);
    if (rc == 0)
        rc = text_encode(&d->e, &d->set, d->idx, n, &st->tok, st->cfg.T, st->padding, st->truncating, err);
    if (rc == 0 && n == 0) rc = error_set(err, "%s: no %s sentences", d->spec, TEXT_SPLITS[split]);
    if (rc) {
        text_split_data_free(d);
        return -1;
    }
    return 0;
}

void text_split_data_free(TextSplitData *d) {
    text_encoded_free(&d->e);
    free(d->idx);
    sentences_free(&d->set);
    text_model_free(&d->m);
    memset(d, 0, sizeof *d);
}

int text_eval_main(int argc, char **argv) {
    EvalFlags f;
    int code;
    if (parse_eval_flags(&f, argc, argv, &code)) return code;
    Error err;
    TextSplitData d;
    if (text_open_split(&d, f.model, f.data, f.root, f.split, &err)) return fail(&err);
    const TextState *st = &d.m.state;
    int n = d.e.n;
    TextActs a;
    text_acts_alloc(&a, &st->cfg, f.batch < n ? f.batch : n);
    double t0 = timer_now();
    TextEval r = text_evaluate(&a, &d.m.p, &st->cfg, &d.e);
    double secs = timer_now() - t0;
    text_acts_free(&a);
    fprintf(stderr, "text classify eval: %s accuracy %.2f%% (%d of %d sentences), loss %.4f\n",
            TEXT_SPLITS[f.split], 100.0 * r.accuracy, r.correct, r.n, r.loss);
    if (f.json) {
        char a1[32], a2[32];
        printf("{\"split\": \"%s\", \"sentences\": %d, \"correct\": %d, \"accuracy\": %s, "
               "\"loss\": %s, \"seconds\": %.6g, \"model\": ",
               TEXT_SPLITS[f.split], r.n, r.correct, json_number(a1, r.accuracy),
               json_number(a2, r.loss), secs);
        text_json_string(stdout, f.model);
        printf(", \"data\": ");
        text_json_string(stdout, d.spec);
        printf("}\n");
    }
    text_split_data_free(&d);
    return 0;
}

// --- predict -------------------------------------------------------------------------------

typedef struct {
    const char *model, *input;
    int batch;
} PredictFlags;

static int parse_predict_flags(PredictFlags *f, int argc, char **argv, int *code) {
    *f = (PredictFlags){.input = "-", .batch = 100};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"input", ARG_STRING, &f->input, "sentences, one a line (UTF-8); - for standard input", .metavar = "FILE"},
        {"batch", ARG_INT, &f->batch, "sentences per forward pass", .has_min = true, .min = 1, .has_max = true, .max = TEXT_BATCH_MAX},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                                  "text classify predict --model PATH [--input FILE]\n"
                                  "  prints LABEL<TAB>PROBABILITY for each line, in order",
                                  "text classify", code);
}

// The whole of standard input or a file (at most SENTENCES_MAX_FILE_BYTES).
static int read_input(const char *path, char **data, size_t *len, Error *err) {
    if (strcmp(path, "-") != 0) return file_read_all(path, (unsigned char **)data, len, SENTENCES_MAX_FILE_BYTES, err);
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap) {
            if (cap >= SENTENCES_MAX_FILE_BYTES) {
                free(buf);
                return error_set(err, "standard input: more than %u bytes", SENTENCES_MAX_FILE_BYTES);
            }
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
    }
    if (ferror(stdin)) {
        free(buf);
        return error_set(err, "standard input: read error");
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

typedef struct {
    TextModel *m;
    TextActs a;
    int *ids, *lengths, n;
} Predictor;

static void predict_flush(Predictor *p) {
    if (p->n == 0) return;
    const TextState *st = &p->m->state;
    text_forward(&p->a, &p->m->p, &st->cfg, p->ids, p->lengths, NULL, p->n, NULL, NULL);
    for (int b = 0; b < p->n; b++) {
        float prob;
        int k = text_predicted(&p->a, &st->cfg, b, &prob);
        printf("%d\t%.6f\n", st->class_values[k], prob);
    }
    fflush(stdout);
    p->n = 0;
}

// One line: its checks, then its ids join the batch.
static int predict_line(Predictor *p, const char *line, size_t len, const char *name, int lineno,
                        Error *err) {
    const TextState *st = &p->m->state;
    if (memchr(line, 0, len)) return error_set(err, "%s: line %d: a NUL byte", name, lineno);
    if (len > SENTENCE_MAX_BYTES)
        return error_set(err, "%s: line %d: a sentence of %zu bytes (at most %d)", name, lineno, len,
                         SENTENCE_MAX_BYTES);
    char *s = xmalloc(len + 1);
    memcpy(s, line, len);
    s[len] = 0;
    int *ids, n;
    Error e2;
    int rc = keras_tokenizer_sequence(&st->tok, s, 0, &ids, &n, &e2);
    free(s);
    if (rc) return error_wrap(err, &e2, "%s: line %d", name, lineno);
    keras_pad(p->ids + (size_t)p->n * st->cfg.T, ids, n, st->cfg.T, st->padding, st->truncating,
              &p->lengths[p->n]);
    free(ids);
    if (++p->n == p->a.B) predict_flush(p);
    return 0;
}

int text_predict_main(int argc, char **argv) {
    PredictFlags f;
    int code;
    if (parse_predict_flags(&f, argc, argv, &code)) return code;
    Error err;
    TextModel m;
    if (text_model_load(&m, f.model, &err)) return fail(&err);
    char *data;
    size_t len;
    if (read_input(f.input, &data, &len, &err)) {
        text_model_free(&m);
        return fail(&err);
    }
    const char *name = strcmp(f.input, "-") == 0 ? "standard input" : f.input;
    Predictor p = {.m = &m};
    text_acts_alloc(&p.a, &m.state.cfg, f.batch);
    p.ids = xmalloc((size_t)f.batch * m.state.cfg.T * sizeof *p.ids);
    p.lengths = xmalloc((size_t)f.batch * sizeof *p.lengths);
    int rc = 0, lineno = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        const char *line = data + at, *nl = memchr(line, '\n', len - at);
        size_t l = nl ? (size_t)(nl - line) : len - at;
        at += l + (nl != NULL);
        if (l && line[l - 1] == '\r') l--;
        rc = predict_line(&p, line, l, name, ++lineno, &err);
    }
    predict_flush(&p);  // what came before a bad line is still printed
    free(p.ids);
    free(p.lengths);
    text_acts_free(&p.a);
    free(data);
    text_model_free(&m);
    return rc ? fail(&err) : 0;
}
