// text_translate_show.c: `text translate show` (cli/text_translate_show.h).
#include "cli/text_translate_show.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/html.h"
#include "cli/text_translate_decode.h"
#include "cli/threads.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/text_escape.h"
#include "seq/vocab.h"
#include "vision/alignment.h"
#include "vision/png.h"

#define SHOW_SCALE 2

static int fail(const Error *err) {
    fprintf(stderr, "text translate show: %s\n", err->msg);
    return 1;
}

typedef struct {
    const char *model, *out, *data, *root, *input;
    int split, count, batch, threads;
} ShowFlags;

static int parse_flags(ShowFlags *f, int argc, char **argv, int *code) {
    *f = (ShowFlags){.root = "data", .split = TRANSLATE_TEST, .count = 20, .batch = 100, .threads = 1};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "a run folder of text translate train (its model.safetensors) or a checkpoint", .metavar = "PATH", .required = true},
        {"out", ARG_STRING, &f->out, "output folder (alignments.html, align_NNN.png)", .metavar = "DIR", .required = true},
        {"split", ARG_CHOICE, &f->split, "the split of the data to decode", .choices = TRANSLATE_SPLITS},
        {"data", ARG_STRING, &f->data, "pairs to decode instead of the model's own (a BPE model: pairs:FILE or bible-en-es)", .metavar = "SPEC"},
        {"data-root", ARG_STRING, &f->root, "folder holding bible/", .metavar = "DIR"},
        {"input", ARG_STRING, &f->input, "sentences, one a line, instead of a split (-: standard input)", .metavar = "FILE"},
        {"count", ARG_INT, &f->count, "sentences shown, the wrong outputs first", .has_min = true, .min = 1, .has_max = true, .max = 100000},
        {"batch", ARG_INT, &f->batch, "sentences decoded together", .has_min = true, .min = 1, .has_max = true, .max = TRANSLATE_BATCH_MAX},
        {"threads", ARG_INT, &f->threads, "threads of the matrix products", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                                  "text translate show --model PATH --out DIR [flags]", "text translate", code);
}

// The sentences: a split (with references) or --input's lines (without).
static int read_sentences(TranslateData *d, TranslateState *st, const ShowFlags *f, Error *err) {
    if (f->input) {
        if (f->data) return error_set(err, "--input and --data: give one");
        return translate_read_sources(d, st, f->input, err);
    }
    if (f->data) {
        const bool model_dates = strcmp(st->data, "dates") == 0, data_dates = strcmp(f->data, "dates") == 0;
        if (model_dates != data_dates)
            return error_set(err, "--data %s: the model was trained on %s, another kind of data",
                             f->data, st->data);
        snprintf(st->data, sizeof st->data, "%s", f->data);
    }
    return translate_open_split(d, st, f->root, (TranslateSplit)f->split,
                                f->data ? "--data" : "the model's data", err);
}

// One sentence of the page.
typedef struct {
    int index;  // in the data
    bool wrong; // the output differs from the reference (never, without one)
} Shown;

static int cmp_shown(const void *pa, const void *pb) {
    const Shown *a = pa, *b = pb;
    if (a->wrong != b->wrong) return a->wrong ? -1 : 1;
    return a->index - b->index;
}

static bool output_wrong(const TranslateData *d, const TranslateDecoded *r, int i) {
    if (!d->tgt_text) return false;
    const int *o = r->out + (size_t)i * r->max_len, *t = d->tgt + (size_t)i * d->max_len;
    return r->out_len[i] != d->tgt_len[i] || memcmp(o, t, (size_t)r->out_len[i] * sizeof(int)) != 0;
}

// A token's label (buf, n bytes): the date task's character, or the BPE piece.
static void token_label(char *buf, size_t n, const TranslateState *s, int id, bool source) {
    if (s->has_bpe) {
        const char *p = id >= 0 && id < s->bpe.n_vocab ? s->bpe.vocab[id] : "?";
        const size_t len = strlen(p), eow = strlen(BPE_EOW);
        if (len >= eow && strcmp(p + len - eow, BPE_EOW) == 0) snprintf(buf, n, "%.*s", (int)(len - eow), p);
        else if (id < BPE_N_SPECIAL) snprintf(buf, n, "%s", p);
        else snprintf(buf, n, "%s@@", p);
        return;
    }
    const char *alphabet = source ? DATES_SOURCE_ALPHABET : DATES_TARGET_ALPHABET;
    const int k = source ? id - 1 : id - VOCAB_NSPECIAL;
    const char c = k >= 0 && k < (int)strlen(alphabet) ? alphabet[k] : '?';
    snprintf(buf, n, "%c", c == ' ' ? '_' : c);
}

typedef char Label[64];

static int write_picture(const char *path, const TranslateState *st, const TranslateData *d,
                         const TranslateDecoded *r, int i, Error *err) {
    const int cols = d->src_len[i], rows = r->out_len[i] + 1, T = r->max_len + 1;
    Label *lab = xcalloc((size_t)(cols + rows), sizeof(Label));
    const char **src = xcalloc((size_t)cols, sizeof(char *)), **tgt = xcalloc((size_t)rows, sizeof(char *));
    for (int j = 0; j < cols; j++) {
        token_label(lab[j], sizeof lab[j], st, d->src[(size_t)i * d->S + j], true);
        src[j] = lab[j];
    }
    for (int t = 0; t < rows; t++) {
        if (t < rows - 1) token_label(lab[cols + t], sizeof lab[0], st, r->out[(size_t)i * r->max_len + t], false);
        else snprintf(lab[cols + t], sizeof lab[0], "<end>");
        tgt[t] = lab[cols + t];
    }
    Image img = alignment_picture(r->alpha + (size_t)i * T * r->L, r->L, src, cols, tgt, rows, SHOW_SCALE);
    int rc = write_png_image(path, &img, err);
    image_free(&img);
    free(lab), free(src), free(tgt);
    return rc;
}

static void text_row(FILE *fp, const char *key, const char *text) {
    fputs("<tr><th>", fp);
    html_text(fp, key);
    fputs("</th><td>", fp);
    html_text(fp, text);
    fputs("</td></tr>\n", fp);
}

typedef struct {
    const ShowFlags *f;
    const TranslateState *st;
    const TranslateData *d;
    const TranslateDecoded *r;
    const Shown *shown;
    int n, wrong;
    bool pictures;
} Page;

static void write_sentence(FILE *fp, const Page *p, int k, const char *hyp) {
    const Shown *s = &p->shown[k];
    fprintf(fp, "<figure class=\"align\" data-index=\"%d\" data-wrong=\"%d\">\n", s->index, s->wrong);
    fprintf(fp, "<figcaption>%d. ", k + 1);
    if (p->d->tgt_text) html_textf(fp, "%s #%d: %s", TRANSLATE_SPLITS[p->f->split], s->index + 1,
                                    s->wrong ? "wrong" : "right");
    else html_textf(fp, "line %d", s->index + 1);
    fputs("</figcaption>\n<table class=\"facts\">\n", fp);
    text_row(fp, "source", p->d->src_text[s->index]);
    if (p->d->tgt_text) text_row(fp, "reference", p->d->tgt_text[s->index]);
    text_row(fp, "output", hyp);
    fputs("</table>\n", fp);
    if (p->pictures) {
        char name[32], alt[96];
        snprintf(name, sizeof name, "align_%03d.png", k + 1);
        snprintf(alt, sizeof alt, "alignment of sentence %d: %d source tokens, %d output tokens and <end>",
                 k + 1, p->d->src_len[s->index], p->r->out_len[s->index]);
        html_img(fp, name, alt, "align");
    }
    fputs("</figure>\n", fp);
}

static int write_page(const char *path, const Page *p, Error *err) {
    AtomicFile af;
    if (atomic_open(&af, path, err)) return -1;
    FILE *fp = af.fp;
    html_page_begin(fp, "text translate show");
    fputs("<style>figure.align{margin:1.2em 0}img.align{max-width:100%;image-rendering:pixelated}</style>\n", fp);
    html_section(fp, "alignments", "Alignments");
    fputs("<p>", fp);
    html_textf(fp, "Model %s (%s attention, greedy decoding), ", p->f->model,
               translate_attention_name(p->st));
    if (p->d->tgt_text)
        html_textf(fp, "data %s, split %s: %d sentences, %d wrong (not equal to the reference); the "
                   "first %d below, the wrong first.", p->st->data, TRANSLATE_SPLITS[p->f->split],
                   p->d->n, p->wrong, p->n);
    else html_textf(fp, "%d sentences of %s; the first %d below.", p->d->n,
                    !p->f->input || strcmp(p->f->input, "-") == 0 ? "standard input" : p->f->input, p->n);
    if (p->pictures)
        html_textf(fp, " Each picture: the source tokens across the top, the output tokens down the "
                   "left, each cell the weight the output token gave the source token (white 0, black 1).");
    else html_textf(fp, " No attention: the decoder reads one fixed context, so there is no alignment to draw.");
    fputs("</p>\n", fp);
    for (int k = 0; k < p->n; k++) {
        char *hyp = translate_decoded_text(p->r, p->st, p->shown[k].index);
        write_sentence(fp, p, k, hyp);
        free(hyp);
    }
    html_section_end(fp);
    html_page_end(fp, NULL);
    return atomic_commit(&af, err);
}

static int write_outputs(const ShowFlags *f, const TranslateState *st, const TranslateData *d,
                         const TranslateDecoded *r, Error *err) {
    Shown *shown = xcalloc((size_t)d->n, sizeof *shown);
    int wrong = 0;
    for (int i = 0; i < d->n; i++) {
        shown[i] = (Shown){.index = i, .wrong = output_wrong(d, r, i)};
        wrong += shown[i].wrong;
    }
    if (d->tgt_text) qsort(shown, (size_t)d->n, sizeof *shown, cmp_shown);
    const Page p = {.f = f, .st = st, .d = d, .r = r, .shown = shown, .wrong = wrong,
                    .n = f->count < d->n ? f->count : d->n,
                    .pictures = st->cfg.dec.attn.kind != ATTN_NONE};
    int rc = make_dirs(f->out, err);
    char path[1100];
    for (int k = 0; rc == 0 && p.pictures && k < p.n; k++) {
        snprintf(path, sizeof path, "%s/align_%03d.png", f->out, k + 1);
        rc = write_picture(path, st, d, r, shown[k].index, err);
    }
    snprintf(path, sizeof path, "%s/alignments.html", f->out);
    if (rc == 0) rc = write_page(path, &p, err);
    if (rc == 0)
        text_write_linef(stderr, "text translate show: %d of %d sentences (%d wrong); wrote %s%s", p.n,
                         d->n, wrong, path, p.pictures ? " and its pictures" : " (no attention: no pictures)");
    free(shown);
    return rc;
}

int text_translate_show_main(int argc, char **argv) {
    ShowFlags f;
    int code;
    if (parse_flags(&f, argc, argv, &code)) return code;
    char path[1100];
    Error err;
    TranslateModel tm;
    if (translate_open_model(&tm, path, sizeof path, f.model, f.batch, f.threads, &err))
        return fail(&err);
    TranslateData d;
    int rc = read_sentences(&d, &tm.state, &f, &err);
    if (rc == 0) {
        TranslateDecoded r;
        translate_decode_all(&r, &tm, d.src, d.src_len, d.n, f.batch, true);
        rc = write_outputs(&f, &tm.state, &d, &r, &err);
        translate_decoded_free(&r);
        translate_data_free(&d);
    }
    translate_model_free(&tm);
    return rc ? fail(&err) : 0;
}
