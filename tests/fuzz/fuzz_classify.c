// fuzz_classify.c: libFuzzer target for the classifier checkpoint reader of `draw classify`
// (cli/classify_common.h: classify_read_state, classify_load_model).
//
// Returns 1 when the reader accepted the input (the model loaded), 0 when it refused it.
// Input: the file's bytes. A file that safetensors_load_memory reads goes through
// classify_read_state; written to a temporary file, every input goes through
// classify_load_model (state, layout, parameters), which must refuse whatever the state
// reader refused. Properties: a failure has a one-line message naming the file; an accepted
// state has a configuration classifier_config_check accepts, clutter of the model's image
// size, batch >= 1 and step >= 0, and a digits' source; a loaded model holds the file's
// tensors bit for bit; and a loaded model saved again with classify_save loads back to the
// same state and the same parameters (what the reader accepts, the writer can write).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/classify_common.h"
#include "core/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

static void fuzz_classify_check_state(const ClassifyState *s) {
    Error e = {{0}};
    fuzz_require(s->cfg.kind == CLASSIFIER_GLIMPSE || s->cfg.kind == CLASSIFIER_CNN, "kind %d",
                 (int)s->cfg.kind);
    fuzz_require(classifier_config_check(&s->cfg, &e) == 0, "accepted a configuration: %s", e.msg);
    fuzz_require(s->clutter.W == classifier_width(&s->cfg) &&
                     s->clutter.H == classifier_height(&s->cfg),
                 "clutter %dx%d for a model of %dx%d", s->clutter.W, s->clutter.H,
                 classifier_width(&s->cfg), classifier_height(&s->cfg));
    fuzz_require(s->optim.batch >= 1 && s->step >= 0, "batch %d step %ld", s->optim.batch, s->step);
    fuzz_require(s->data[0] && memchr(s->data, 0, sizeof s->data), "no digits' source");
}

// The same state, field by field (the struct has padding).
static int fuzz_classify_same_state(const ClassifyState *a, const ClassifyState *b) {
    const ClassifierConfig *x = &a->cfg, *y = &b->cfg;
    int same_cfg = x->kind == y->kind;
    if (same_cfg && x->kind == CLASSIFIER_GLIMPSE) {
        const GlimpseConfig *g = &x->glimpse, *h = &y->glimpse;
        same_cfg = g->W == h->W && g->H == h->H && g->T == h->T && g->read_n == h->read_n &&
                   g->hidden == h->hidden && g->classes == h->classes &&
                   g->attention == h->attention && g->hard == h->hard && g->loc_std == h->loc_std &&
                   g->scales == h->scales;
    } else if (same_cfg) {
        const ConvnetConfig *g = &x->cnn, *h = &y->cnn;
        same_cfg = g->S == h->S && g->layers == h->layers && g->channels[0] == h->channels[0] &&
                   (g->layers < 2 || g->channels[1] == h->channels[1]) && g->fc == h->fc &&
                   g->classes == h->classes;
    }
    return same_cfg && a->clutter.W == b->clutter.W && a->clutter.H == b->clutter.H &&
           a->clutter.fragments == b->clutter.fragments &&
           a->clutter.fragment == b->clutter.fragment && a->step == b->step &&
           a->optim.seed == b->optim.seed && a->optim.batch == b->optim.batch &&
           a->optim.lr == b->optim.lr && a->optim.beta1 == b->optim.beta1 &&
           a->optim.clip == b->optim.clip &&
           strcmp(a->data, b->data) == 0;
}

// A loaded model: its tensors are the file's, and saving it gives a file that loads back
// to the same state and parameters.
static void fuzz_classify_check_model(const ClassifyModel *m, const SafetensorsFile *f) {
    const Block *b = &m->params;
    fuzz_require_block_is_file(b, f);
    const char *again = fuzz_tmp_path("fuzz_classify_again.safetensors");
    Error e = {{0}};
    fuzz_require(classify_save(again, &m->state, &m->params, NULL, NULL, &e) == 0,
                 "saving a loaded model failed: %s", e.msg);
    ClassifyModel back;
    fuzz_require(classify_load_model(&back, again, &e) == 0, "a saved model did not load: %s",
                 e.msg);
    fuzz_require(fuzz_classify_same_state(&m->state, &back.state),
                 "the state changed in a save and load");
    fuzz_require(back.params.numel == b->numel &&
                     memcmp(back.params.data, b->data, b->numel * sizeof(float)) == 0,
                 "the parameters changed in a save and load");
    classify_model_free(&back);
}

int fuzz_classify_one(const uint8_t *data, size_t size) {
    const char *name = "fuzz.safetensors";
    SafetensorsFile f;
    Error err = {{0}};
    int loaded = safetensors_load_memory(&f, data, size, name, &err) == 0;
    int state_ok = 0;
    ClassifyState state;
    if (loaded) {
        state_ok = classify_read_state(&f, name, &state, &err) == 0;
        if (state_ok) fuzz_classify_check_state(&state);
        else fuzz_require_error(&err, name);
    }
    const char *path = fuzz_tmp_path("fuzz_classify.safetensors");
    fuzz_write_file(path, data, size);
    ClassifyModel m;
    Error em = {{0}};
    int model_ok = classify_load_model(&m, path, &em) == 0;
    if (!model_ok) {
        fuzz_require_error(&em, path);
    } else {
        fuzz_require(state_ok, "the model loaded from the file, its state not from memory");
        fuzz_require(fuzz_classify_same_state(&m.state, &state),
                     "the file's state differs from the memory copy's");
        fuzz_classify_check_model(&m, &f);
        classify_model_free(&m);
    }
    if (loaded) safetensors_free(&f);
    return model_ok;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_classify_one(data, size);
    return 0;
}
#endif
