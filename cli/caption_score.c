// caption_score.c: `caption score` (see caption_score.h).
#include "cli/caption_score.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/caption_objects.h"
#include "core/check.h"
#include "core/error.h"
#include "core/fileio.h"
#include "datasets/captions.h"
#include "datasets/captions_json.h"
#include "seq/metrics.h"
#include "seq/tokenizer.h"
#include "core/text_escape.h"

#define RESULTS_MAX_BYTES ((size_t)1 << 30)

typedef struct {
    long long image_id;
    const char *caption;  // borrowed from the cJSON tree
    int index;            // position in the file's array
} ResultEntry;

typedef struct {
    cJSON *root;
    ResultEntry *entries;  // (n) in file order
    int n;
} Results;

static void results_free(Results *r) {
    cJSON_Delete(r->root);
    free(r->entries);
    memset(r, 0, sizeof *r);
}

// A JSON number that is a whole number in [0, 2^53]; -1 otherwise.
static long long whole_id(const cJSON *v) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || floor(d) != d) return -1;
    return (long long)d;
}

static int cmp_entry_id(const void *a, const void *b) {
    const ResultEntry *x = a, *y = b;
    if (x->image_id != y->image_id) return x->image_id < y->image_id ? -1 : 1;
    return x->index - y->index;
}

// Reads RESULTS: [{"image_id": N, "caption": "..."}, ...], non-empty, one per image.
static int results_read(Results *r, const char *path, Error *err) {
    memset(r, 0, sizeof *r);
    unsigned char *data;
    size_t len;
    if (file_read_all(path, &data, &len, RESULTS_MAX_BYTES, err)) return -1;
    size_t k = 0;
    while (k < len && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r')) k++;
    if (k == len) {
        free(data);
        return error_set(err, "%s: empty file: expected a COCO results JSON array", path);
    }
    r->root = cJSON_ParseWithLength((const char *)data, len);
    free(data);
    if (!r->root) return error_set(err, "%s: not valid JSON", path);
    if (!cJSON_IsArray(r->root)) {
        results_free(r);
        return error_set(err, "%s: expected a JSON array of {\"image_id\", \"caption\"}", path);
    }
    r->n = cJSON_GetArraySize(r->root);
    if (r->n == 0) {
        results_free(r);
        return error_set(err, "%s: no results (an empty array)", path);
    }
    r->entries = xmalloc((size_t)r->n * sizeof *r->entries);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, r->root) {
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(it, "caption");
        long long id = cJSON_IsObject(it) ? whole_id(cJSON_GetObjectItemCaseSensitive(it, "image_id")) : -1;
        const char *why = !cJSON_IsObject(it)                    ? "not an object"
                          : id < 0                               ? "\"image_id\" is not a whole number >= 0"
                          : !cJSON_IsString(cap) || !cap->valuestring ? "\"caption\" is not a string"
                                                                 : NULL;
        if (why) {
            results_free(r);
            return error_set(err, "%s: [%d]: %s", path, i, why);
        }
        // A caption may be as long as a reference may (datasets/captions.h): a bound on
        // the tokenizer's time whatever the text (seq/ptb_lexer.h).
        size_t bytes = strlen(cap->valuestring);
        if (bytes > CAPTION_MAX_BYTES) {
            results_free(r);
            return error_set(err, "%s: [%d]: \"caption\" of %zu bytes is longer than the limit "
                                  "of %d", path, i, bytes, CAPTION_MAX_BYTES);
        }
        r->entries[i] = (ResultEntry){id, cap->valuestring, i};
        i++;
    }
    // Duplicates: sorted by id, neighbours.
    ResultEntry *sorted = xmalloc((size_t)r->n * sizeof *sorted);
    memcpy(sorted, r->entries, (size_t)r->n * sizeof *sorted);
    qsort(sorted, (size_t)r->n, sizeof *sorted, cmp_entry_id);
    for (int j = 1; j < r->n; j++)
        if (sorted[j].image_id == sorted[j - 1].image_id) {
            error_set(err, "%s: [%d]: duplicate image_id %lld (also at [%d]); coco-caption scores one caption per image",
                      path, sorted[j].index, sorted[j].image_id, sorted[j - 1].index);
            free(sorted);
            results_free(r);
            return -1;
        }
    free(sorted);
    return 0;
}

// REFS's images by numeric id, for lookups.
typedef struct {
    long long id;
    int image;  // index into the CaptionSet
} IdIndex;

static int cmp_id_index(const void *a, const void *b) {
    const IdIndex *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

// The CaptionSet image with this numeric id, or -1.
static int find_image(const IdIndex *ids, int n, long long id) {
    IdIndex key = {id, 0};
    const IdIndex *hit = bsearch(&key, ids, (size_t)n, sizeof *ids, cmp_id_index);
    return hit ? hit->image : -1;
}

// Tokenised candidates and references of the scored images.
typedef struct {
    int n;
    Tokens *cand;      // (n)
    Tokens **refs;     // (n)(n_refs[i])
    int *n_refs;       // (n)
    CaptionPair *items;
} ScoreInput;

static void score_input_free(ScoreInput *s) {
    for (int i = 0; i < s->n; i++) {
        tokens_free(&s->cand[i]);
        for (int r = 0; s->refs[i] && r < s->n_refs[i]; r++) tokens_free(&s->refs[i][r]);
        free(s->refs[i]);
    }
    free(s->cand);
    free(s->refs);
    free(s->n_refs);
    free(s->items);
    memset(s, 0, sizeof *s);
}

// Pairs each result with its image's references and tokenises both sides (no cap on the
// number of tokens: coco-caption has none).
static int score_input_build(ScoreInput *s, const Results *res, const CaptionSet *set,
                             const char *results_path, const char *refs_path, Error *err) {
    s->n = res->n;
    s->cand = xcalloc((size_t)s->n, sizeof *s->cand);
    s->refs = xcalloc((size_t)s->n, sizeof *s->refs);
    s->n_refs = xcalloc((size_t)s->n, sizeof *s->n_refs);
    s->items = xcalloc((size_t)s->n, sizeof *s->items);
    IdIndex *ids = xmalloc((size_t)set->n_images * sizeof *ids);
    for (int i = 0; i < set->n_images; i++) ids[i] = (IdIndex){set->images[i].numeric_id, i};
    qsort(ids, (size_t)set->n_images, sizeof *ids, cmp_id_index);
    int rc = 0;
    for (int i = 0; i < s->n && rc == 0; i++) {
        const ResultEntry *e = &res->entries[i];
        int img = find_image(ids, set->n_images, e->image_id);
        if (img < 0) {
            rc = error_set(err, "%s: [%d]: image_id %lld has no reference caption in %s", results_path,
                           e->index, e->image_id, refs_path);
            break;
        }
        if (tokenize(&s->cand[i], e->caption, INT_MAX, err)) {
            rc = error_prefix(err, "%s: [%d]: caption", results_path, e->index);
            break;
        }
        int nr = set->images[img].n_captions;
        s->refs[i] = xcalloc((size_t)nr, sizeof **s->refs);
        for (int r = 0; r < nr && rc == 0; r++, s->n_refs[i]++)
            if (tokenize(&s->refs[i][r], caption_set_caption(set, img, r), INT_MAX, err))
                rc = error_prefix(err, "%s: image %lld caption %d", refs_path, e->image_id, r);
        s->items[i] = (CaptionPair){&s->cand[i], s->refs[i], nr};
    }
    free(ids);
    return rc;
}

// The scores of n images, and their object F1 when objects is not NULL: one JSON object
// (--json) or one line.
static void print_scores(const CaptionScores *sc, const ObjectF1 *objects, int n, bool json) {
    if (json) {
        printf("{\"images\": %d, \"bleu1\": %.9f, \"bleu2\": %.9f, \"bleu3\": %.9f, \"bleu4\": %.9f, "
               "\"cider\": %.9f, \"rougeL\": %.9f",
               n, sc->bleu[0], sc->bleu[1], sc->bleu[2], sc->bleu[3], sc->cider_d, sc->rouge_l);
        if (objects) caption_objects_print_json(objects, 9);
        printf("}\n");
        return;
    }
    printf("%d images: BLEU-1 %.4f BLEU-2 %.4f BLEU-3 %.4f BLEU-4 %.4f CIDEr-D %.4f ROUGE-L %.4f",
           n, sc->bleu[0], sc->bleu[1], sc->bleu[2], sc->bleu[3], sc->cider_d, sc->rouge_l);
    if (objects) caption_objects_print_line(objects);
    printf("\n");
}

// --object-f1: each result against the colour+class objects its image's references name
// (the scenes' captions name every object of the scene). Fails when no reference of the
// scored images names one: those are not scenes captions, and an F1 of 0 would say nothing.
static int score_objects(ObjectF1 *f, const ScoreInput *in, const char *refs_path, Error *err) {
    ObjectCounts *per = xmalloc((size_t)in->n * sizeof *per);
    caption_objects_from_references(per, in->items, in->n);
    object_f1(f, per, in->n);
    free(per);
    if (f->truth == 0)
        return error_set(err, "%s: --object-f1: no reference caption of the scored images names a "
                              "colour+class object (\"a red seven\"): not captions of the scenes",
                         refs_path);
    return 0;
}

// On stderr: the reference records skipped, and the images of refs_path with no result
// (`scored` of them were scored).
static void note_references(const CaptionSet *set, int scored, const char *refs_path) {
    if (set->n_warnings > 0) {  // escaped here; the warning is in the field form already (core/text_escape.h)
        fputs("warning: ", stderr);
        text_write_field(stderr, refs_path);
        fprintf(stderr, ": %d reference records skipped, e.g. %s\n",
                set->captions_skipped + set->images_skipped, set->warnings[0]);
    }
    if (set->n_images > scored)
        text_write_linef(stderr, "note: %d of the %d images in %s have no result and are not scored",
                         set->n_images - scored, set->n_images, refs_path);
}

int cmd_score(int argc, char **argv) {
    const char *refs_path = NULL, *results_path = NULL;
    bool json = false, objects = false;
    ArgSpec specs[] = {
        ARG("refs", ARG_STRING, &refs_path,
            "COCO captions JSON: its annotations [{image_id, caption}] (images is not read)",
            .metavar = "PATH", .required = true),
        ARG("results", ARG_STRING, &results_path,
            "COCO results JSON: [{image_id, caption}], one per image, captions up to 4096 bytes",
            .metavar = "PATH", .required = true),
        ARG("object-f1", ARG_FLAG, &objects,
            "also object F1 (synthetic scenes): the colour+class objects each result names against "
            "those its references name"),
        ARG("json", ARG_FLAG, &json, "print the metrics as one JSON object"),
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                               "caption score --refs PATH --results PATH [--object-f1] [--json]\n"
                               "  BLEU-1..4, CIDEr-D and ROUGE-L of the results as coco-caption computes them\n"
                               "  (PTB tokens, its scorers); the images scored are those of --results",
                               "caption score", &code))
        return code;
    Error err;
    Results res;
    if (results_read(&res, results_path, &err)) {
        fprintf(stderr, "caption score: %s\n", err.msg);
        return 1;
    }
    CaptionSet set;
    if (caption_read_coco_references(&set, refs_path, NULL, &err)) {
        fprintf(stderr, "caption score: %s\n", err.msg);
        results_free(&res);
        return 1;
    }
    ScoreInput in = {0};
    int rc = 1;
    if (score_input_build(&in, &res, &set, results_path, refs_path, &err)) {
        fprintf(stderr, "caption score: %s\n", err.msg);
        goto done;
    }
    ObjectF1 f;
    if (objects && score_objects(&f, &in, refs_path, &err)) {
        fprintf(stderr, "caption score: %s\n", err.msg);
        goto done;
    }
    CaptionScores sc;
    caption_scores(&sc, in.items, in.n);
    print_scores(&sc, objects ? &f : NULL, in.n, json);
    note_references(&set, in.n, refs_path);
    rc = 0;
done:
    score_input_free(&in);
    caption_set_free(&set);
    results_free(&res);
    return rc;
}
