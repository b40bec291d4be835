// caption_predict.c: `caption predict` (cli/caption_predict.h): the flags, the model and
// images opened, the folder captioned a batch at a time, then the results file and the
// closing lines.
#include "cli/caption_predict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/caption_data.h"
#include "cli/caption_features.h"
#include "cli/caption_model.h"
#include "cli/caption_per_image.h"
#include "cli/threads.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/text_escape.h"
#include "datasets/imagefolder.h"
#include "models/sat.h"
#include "models/sat_decode.h"
#include "seq/tokenizer.h"
#include "seq/vocab.h"

// How predict writes file names (core/text_escape.h), printed after its --help.
static const char PREDICT_HELP_NOTES[] =
    "output: one line per image on stdout, NAME<TAB>CAPTION. Both fields are escaped so\n"
    "  that a line is one record whatever a file name holds: \\\\ is a backslash, \\t a tab,\n"
    "  \\n a newline, \\r a carriage return, \\xNN any other control byte or a byte that is\n"
    "  not UTF-8 (two hex digits). Messages on stderr name files the same way. The output\n"
    "  reads back as a captions file, --data tsv:FILE:IMAGES (names that are UTF-8).\n"
    "--results: COCO results JSON, [{\"image_id\": NAME, \"caption\": TEXT}, ...], always\n"
    "  valid UTF-8. A name that is valid UTF-8 is written as it is (JSON escapes carry its\n"
    "  newlines and tabs); any other is written with \\\\ and \\xNN as above, and\n"
    "  \"image_id_hex\" beside it holds the name's bytes in hex.\n"
    "--attention-out DIR: a strip per image, STEM.png (its name less the extension), or\n"
    "  NAME.png where strips would share a name (a.png, a.jpg: a.png.png, a.jpg.png);\n"
    "  DIR/strips.tsv has a line NAME<TAB>STRIP per image captioned, escaped as above.\n"
    "skipped: a file that does not decode, a broken symbolic link, a link loop, and a\n"
    "  folder, FIFO or device named like an image each get one line on stderr with the\n"
    "  reason (FIFOs and devices are never opened); any skipped file makes the exit status 1.\n"
    "  Links to images are followed.\n";

typedef struct {
    const char *model, *images, *attention_out, *results, *encoder;
    int beam, threads, batch;
    float length_alpha;
} PredictFlags;

// 0: parsed; otherwise *code is the exit status (0 after --help).
static int parse_flags(PredictFlags *f, int argc, char **argv, int *code) {
    *f = (PredictFlags){.beam = 3, .threads = threads_available(), .batch = 16, .length_alpha = 0.7f};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "model file", .metavar = "PATH", .required = true},
        {"images", ARG_STRING, &f->images, "folder of images", .metavar = "DIR", .required = true},
        {"beam", ARG_INT, &f->beam, "beam width (1 = greedy)", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"length-alpha", ARG_FLOAT, &f->length_alpha, "beam length normalisation exponent", .has_min = true, .min = 0},
        {"attention-out", ARG_STRING, &f->attention_out, "write one attention strip PNG per image here", .metavar = "DIR", .given = NULL},
        {"results", ARG_STRING, &f->results, "write COCO results JSON here", .metavar = "PATH", .given = NULL},
        {"batch", ARG_INT, &f->batch, "images decoded at once", .has_min = true, .min = 1, .has_max = true, .max = 4096},
        {"threads", ARG_INT, &f->threads, "BLAS threads", .has_min = true, .min = 1, .has_max = true, .max = 256, .default_note = THREADS_DEFAULT_NOTE},
        {"encoder", ARG_STRING, &f->encoder, "a model trained on features: its pretrained encoder, if not at the path it records (the weights must be the same)", .metavar = "ARCH:FILE", .given = NULL},
    };
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                               "caption predict --model PATH --images DIR [flags]", "caption predict", code)) {
        if (*code == 0) fputs(PREDICT_HELP_NOTES, stdout);  // after --help's flag list
        return 1;
    }
    return 0;
}

// A predict run: the images, the model (and the encoder of one trained on features), and
// the buffers of one batch.
typedef struct {
    const PredictFlags *f;
    ImageFolder folder;
    SatModel m;
    Vocab vocab;
    CaptionAnnotator ann;  // a model trained on features: its encoder runs here
    bool opened_folder, opened_model, features;
    float *inputs;    // (batch, per): images, or their annotations
    float *pictures;  // (batch, 3, S, S) for the strips: inputs itself, or images beside annotations
    int *which, *tokens, *lens;  // the folder index of each batch entry; (batch, ML); (batch)
    float *alphas;               // (batch, ML, L)
    char **captions;             // (folder.n): each image's caption, NULL when skipped
    char **strips;               // (folder.n) strip names in --attention-out, or NULL
    int skipped, captioned;
} Predict;

static void close_predict(Predict *p) {
    if (p->captions)
        for (int i = 0; i < p->folder.n; i++) free(p->captions[i]);
    free(p->captions);
    if (p->strips)
        for (int i = 0; i < p->folder.n; i++) free(p->strips[i]);
    free(p->strips);
    if (p->pictures != p->inputs) free(p->pictures);
    free(p->inputs), free(p->which), free(p->tokens), free(p->lens), free(p->alphas);
    caption_annotator_close(&p->ann);
    if (p->opened_model) sat_free(&p->m), vocab_free(&p->vocab);
    if (p->opened_folder) image_folder_free(&p->folder);
}

// The strip name of each image: STEM.png (the name less its extension), or NAME.png when
// another image's strip would have the same name (a.png, a.jpg and a.PNG share "a.png";
// an image named a.png.jpg and one named a.png, both "a.png.png"). Names of the second
// kind never meet each other (names in one folder differ), so marking every image that
// shares a strip name until none does ends with unique names.
typedef struct {
    const char *strip;
    int image;
} StripName;

static int strip_name_cmp(const void *a, const void *b) {
    return strcmp(((const StripName *)a)->strip, ((const StripName *)b)->strip);
}

static char **strip_names(const ImageFolder *folder) {
    const int n = folder->n;
    char **out = xcalloc((size_t)(n ? n : 1), sizeof(char *));
    unsigned char *whole = xcalloc((size_t)(n ? n : 1), 1);
    StripName *sorted = xmalloc((size_t)(n ? n : 1) * sizeof *sorted);
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < n; i++) {
            free(out[i]);
            const char *name = folder->names[i], *dot = strrchr(name, '.');
            size_t keep = whole[i] || !dot || dot == name ? strlen(name) : (size_t)(dot - name);
            out[i] = xmalloc(keep + 5);
            memcpy(out[i], name, keep);
            memcpy(out[i] + keep, ".png", 5);
            sorted[i] = (StripName){out[i], i};
        }
        // Sorted names need not give sorted strip names ("a.b" < "a0" but "a.png" >
        // "a.b.png"): sort the strip names, equal ones are then neighbours.
        qsort(sorted, (size_t)n, sizeof *sorted, strip_name_cmp);
        for (int k = 0; k + 1 < n; k++) {
            const int i = sorted[k].image, j = sorted[k + 1].image;
            if ((!whole[i] || !whole[j]) && !strcmp(sorted[k].strip, sorted[k + 1].strip)) {
                whole[i] = whole[j] = 1;
                changed = true;
            }
        }
    }
    free(sorted);
    free(whole);
    return out;
}

static int open_predict(Predict *p, const PredictFlags *f, Error *err) {
    memset(p, 0, sizeof *p);
    p->f = f;
    if (image_folder_list(&p->folder, f->images, err)) return -1;
    p->opened_folder = true;
    CaptionCounters tc;
    if (caption_model_load(f->model, &p->m, &p->vocab, 0, NULL, &tc, NULL, err)) return -1;
    p->opened_model = true;
    if (sat_check_sizes(&p->m.cfg, f->batch, err) ||
        sat_check_decode_sizes(&p->m.cfg, f->batch, f->beam, "--beam", err))
        return error_prefix(err, "%s", f->model);
    sat_alloc_acts(&p->m, f->batch);
    p->features = p->m.cfg.feat_L > 0;
    if ((p->features && caption_annotator_open(&p->ann, &p->m.cfg, f->model, f->encoder, err)) ||
        (f->attention_out && make_dirs(f->attention_out, err)))
        return -1;
    const SatConfig *c = &p->m.cfg;
    const size_t B = (size_t)f->batch, S = (size_t)c->image_size, ML = (size_t)c->max_len;
    p->inputs = xmalloc(B * sat_input_floats(c) * sizeof(float));
    p->pictures = !p->features ? p->inputs
                  : f->attention_out ? xmalloc(B * 3 * S * S * sizeof(float)) : NULL;
    p->which = xmalloc(B * sizeof(int));
    p->tokens = xmalloc(B * ML * sizeof(int));
    p->lens = xmalloc(B * sizeof(int));
    p->alphas = xmalloc(B * ML * (size_t)sat_L(c) * sizeof(float));
    p->captions = xcalloc((size_t)(p->folder.n ? p->folder.n : 1), sizeof(char *));
    if (f->attention_out) p->strips = strip_names(&p->folder);
    return 0;
}

// One line per entry the folder listing skipped (a broken link, a loop, a folder or FIFO
// named like an image), names in core/text_escape.h's field form; returns their count.
static int report_listing_skips(const ImageFolder *folder, const char *dir) {
    for (int i = 0; i < folder->n_skipped; i++) {
        size_t dlen = strlen(dir);
        const char *sep = dlen > 0 && dir[dlen - 1] == '/' ? "" : "/";
        fputs("caption predict: ", stderr);
        text_write_field(stderr, dir);
        fputs(sep, stderr);
        text_write_field(stderr, folder->skipped[i].name);
        fprintf(stderr, ": skipped: %s\n", folder->skipped[i].reason);
    }
    return folder->n_skipped;
}

// Reads the folder's images from *next on into the batch, up to its size; an image that
// cannot be read is named on stderr and skipped. Returns how many were read.
static int read_batch(Predict *p, int *next) {
    const int S = p->m.cfg.image_size;
    const size_t per = sat_input_floats(&p->m.cfg);
    Error err;
    int k = 0;
    for (; k < p->f->batch && *next < p->folder.n; (*next)++) {
        const char *path = p->folder.paths[*next];
        int bad = p->features ? caption_annotator_run(&p->ann, p->inputs + (size_t)k * per, path, &err)
                              : caption_load_image(p->inputs + (size_t)k * per, path, S, &err);
        if (!bad && p->features && p->pictures &&
            caption_load_image(p->pictures + (size_t)k * 3 * S * S, path, S, &err))
            bad = 1;
        if (bad) {
            fprintf(stderr, "caption predict: %s\n", err.msg);  // one line already (core/error.h)
            p->skipped++;
        } else {
            p->which[k++] = *next;
        }
    }
    return k;
}

// "DIR/NAME", malloc'd.
static char *in_dir(const char *dir, const char *name) {
    size_t d = strlen(dir), n = strlen(name);
    char *path = xmalloc(d + n + 2);
    memcpy(path, dir, d);
    path[d] = '/';
    memcpy(path + d + 1, name, n + 1);
    return path;
}

// The attention strip of batch entry j (image i, caption t) as OUT/p->strips[i].
static int write_strip(const Predict *p, int j, int i, const Tokens *t, Error *err) {
    const SatConfig *c = &p->m.cfg;
    const int S = c->image_size, ML = c->max_len;
    char *path = in_dir(p->f->attention_out, p->strips[i]);
    int r = caption_write_strip(path, p->pictures + (size_t)j * 3 * S * S, S,
                                p->alphas + (size_t)j * ML * sat_L(c), sat_grid(c), t->tok, t->n, err);
    free(path);
    return r;
}

// OUT/strips.tsv: NAME<TAB>STRIP for each image captioned, in the folder's order, both
// fields escaped as the captions on stdout are.
static int write_strip_index(const Predict *p, Error *err) {
    char *path = in_dir(p->f->attention_out, "strips.tsv");
    AtomicFile af;
    int r = atomic_open(&af, path, err);
    free(path);
    if (r) return -1;
    for (int i = 0; i < p->folder.n; i++) {
        if (!p->captions[i]) continue;
        text_write_field(af.fp, p->folder.names[i]);
        fputc('\t', af.fp);
        text_write_field(af.fp, p->strips[i]);
        fputc('\n', af.fp);
    }
    return atomic_commit(&af, err);
}

// Decodes the k images read, prints a line for each and writes their strips; non-zero
// when a strip could not be written (named on stderr).
static int caption_batch(Predict *p, int k) {
    const int ML = p->m.cfg.max_len;
    int rc = 0;
    sat_decode(&p->m, p->tokens, p->lens, p->alphas, p->inputs, k, p->f->beam, p->f->length_alpha);
    for (int j = 0; j < k; j++) {
        const int i = p->which[j];
        Tokens t;
        vocab_decode_tokens(&t, &p->vocab, p->tokens + (size_t)j * ML, p->lens[j], 1);
        p->captions[i] = tokens_join(&t);
        p->captioned++;
        text_write_field(stdout, p->folder.names[i]);
        putchar('\t');
        text_write_field(stdout, p->captions[i]);
        putchar('\n');
        Error err;
        if (p->f->attention_out && write_strip(p, j, i, &t, &err)) {
            fprintf(stderr, "caption predict: %s\n", err.msg);
            rc = 1;
        }
        tokens_free(&t);
    }
    fflush(stdout);
    return rc;
}

// COCO results JSON of the images captioned, in the folder's order.
static int write_results(const Predict *p, const char *path, Error *err) {
    AtomicFile af;
    if (atomic_open(&af, path, err)) return -1;
    fputc('[', af.fp);
    int first = 1;
    for (int i = 0; i < p->folder.n; i++) {
        if (!p->captions[i]) continue;
        fprintf(af.fp, "%s\n{", first ? "" : ",");
        text_json_name(af.fp, "image_id", p->folder.names[i]);
        fprintf(af.fp, ", \"caption\": ");
        text_json_string(af.fp, p->captions[i]);
        fputc('}', af.fp);
        first = 0;
    }
    fprintf(af.fp, "\n]\n");
    return atomic_commit(&af, err);
}

int caption_predict_main(int argc, char **argv) {
    PredictFlags f;
    int code;
    if (parse_flags(&f, argc, argv, &code)) return code;
    gemm_set_threads(f.threads);
    Predict p;
    Error err;
    if (open_predict(&p, &f, &err)) {
        fprintf(stderr, "caption predict: %s\n", err.msg);
        close_predict(&p);
        return 1;
    }
    int rc = 0;
    p.skipped = report_listing_skips(&p.folder, f.images);
    for (int next = 0; next < p.folder.n;) {
        int k = read_batch(&p, &next);
        if (k > 0 && caption_batch(&p, k)) rc = 1;
    }
    if (f.results && write_results(&p, f.results, &err)) {
        fprintf(stderr, "caption predict: %s\n", err.msg);
        rc = 1;
    }
    if (p.skipped) {
        // Each skipped file already has its line; a count only adds to several.
        if (p.skipped > 1)
            fprintf(stderr, "caption predict: %d of %d files skipped\n", p.skipped,
                    p.folder.n + p.folder.n_skipped);
        rc = 1;
    }
    if (f.attention_out && p.captioned > 0 && write_strip_index(&p, &err)) {
        fprintf(stderr, "caption predict: %s\n", err.msg);
        rc = 1;
    } else if (f.attention_out && p.captioned > 0) {
        fputs("attention strips: ", stderr);
        text_write_line(stderr, f.attention_out);
    }
    close_predict(&p);
    return rc;
}
