// fuzz_draw.c: libFuzzer target for bin/draw's checkpoint reader (cli/draw_checkpoint.h:
// draw_checkpoint_read_state, draw_checkpoint_load) and for the Adam moments that
// `draw train --resume` reads beside the weights (train_checkpoint_read).
//
// Returns 1 when the reader accepted the input (the model loaded), 0 when it refused it.
// Input: the file's bytes. A file that safetensors_load_memory reads goes through
// draw_checkpoint_read_state; written to a temporary file, every input goes through
// draw_checkpoint_load (state, layout, parameters), which must refuse whatever the state
// reader refused. Properties: a failure has a one-line message naming the file; an accepted
// state has a configuration draw_config_check accepts, batch >= 1 and step >= 0; a loaded
// model holds the file's tensors bit for bit; the weights and Adam moments read as --resume
// reads them are the model's weights (or are refused by name); and a loaded model saved again with
// draw_checkpoint_write loads back to the same state, parameters and weight average (what
// the reader accepts, the writer can write).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/draw_checkpoint.h"
#include "cli/train_run.h"
#include "core/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

static void fuzz_draw_check_state(const DrawTrainState *s) {
    Error e = {{0}};
    fuzz_require(draw_config_check(&s->cfg, &e) == 0, "accepted a configuration: %s", e.msg);
    fuzz_require(s->optim.batch >= 1 && s->step >= 0, "batch %d step %ld", s->optim.batch, s->step);
    fuzz_require(s->ema >= 0 && s->ema < 1, "weight average decay %g", (double)s->ema);
    fuzz_require(memchr(s->data, 0, sizeof s->data) != NULL, "data not terminated");
}

// The same state, field by field (the struct has padding). Channels as the model sees them:
// a grey checkpoint may say 1 or nothing.
static int fuzz_draw_same_state(const DrawTrainState *a, const DrawTrainState *b) {
    const DrawConfig *x = &a->cfg, *y = &b->cfg;
    return x->W == y->W && x->H == y->H && draw_channels(x) == draw_channels(y) &&
           x->T == y->T && x->read_n == y->read_n && x->write_n == y->write_n &&
           x->enc == y->enc && x->dec == y->dec && x->z == y->z &&
           x->attention == y->attention && a->step == b->step && a->binarize == b->binarize &&
           a->optim.seed == b->optim.seed && a->optim.batch == b->optim.batch &&
           a->optim.lr == b->optim.lr && a->optim.beta1 == b->optim.beta1 &&
           a->optim.clip == b->optim.clip && a->ema == b->ema && strcmp(a->data, b->data) == 0;
}

// Weights and moments as `draw train --resume` reads them: into blocks of the model's
// layout (the weights then the model's), or refused with a message naming the file (a
// model file of the weights alone has no moments to resume from).
static void fuzz_draw_check_moments(const DrawCheckpoint *m, const SafetensorsFile *f,
                                    const char *name) {
    Block params = {0}, mom1 = {0}, mom2 = {0};
    DrawParams p;
    draw_layout(&params, &p, &m->state.cfg);
    draw_layout(&mom1, &p, &m->state.cfg);
    draw_layout(&mom2, &p, &m->state.cfg);
    block_alloc(&params), block_alloc(&mom1), block_alloc(&mom2);
    Error e = {{0}};
    if (train_checkpoint_read(&params, &mom1, &mom2, f, name, &e) == 0)
        fuzz_require(memcmp(params.data, m->params.data, params.numel * sizeof(float)) == 0,
                     "the weights read with the moments differ from the model's");
    else
        fuzz_require_error(&e, name);
    block_free(&params), block_free(&mom1), block_free(&mom2);
}

// A loaded model: its tensors are the file's, and saving it gives a file that loads back
// to the same state and parameters.
static void fuzz_draw_check_model(const DrawCheckpoint *m, const SafetensorsFile *f) {
    const Block *b = &m->params;
    fuzz_require_block_is_file(b, f);
    const char *again = fuzz_tmp_path("fuzz_draw_again.safetensors");
    Error e = {{0}};
    const Block *avg = m->average.data ? &m->average : NULL;
    fuzz_require(draw_checkpoint_write(again, &m->state, &m->params, NULL, NULL, avg, &e) == 0,
                 "saving a loaded model failed: %s", e.msg);
    DrawCheckpoint back;
    fuzz_require(draw_checkpoint_load(&back, again, &e) == 0, "a saved model did not load: %s",
                 e.msg);
    fuzz_require(fuzz_draw_same_state(&m->state, &back.state),
                 "the state changed in a save and load");
    fuzz_require(back.params.numel == b->numel &&
                     memcmp(back.params.data, b->data, b->numel * sizeof(float)) == 0,
                 "the parameters changed in a save and load");
    fuzz_require(back.average.numel == m->average.numel &&
                     (!avg || memcmp(back.average.data, avg->data, avg->numel * sizeof(float)) == 0),
                 "the weight average changed in a save and load");
    draw_checkpoint_free(&back);
}

int fuzz_draw_one(const uint8_t *data, size_t size) {
    const char *name = "fuzz.safetensors";
    SafetensorsFile f;
    Error err = {{0}};
    int loaded = safetensors_load_memory(&f, data, size, name, &err) == 0;
    int state_ok = 0;
    DrawTrainState state;
    if (loaded) {
        state_ok = draw_checkpoint_read_state(&f, name, &state, &err) == 0;
        if (state_ok) fuzz_draw_check_state(&state);
        else fuzz_require_error(&err, name);
    }
    const char *path = fuzz_tmp_path("fuzz_draw.safetensors");
    fuzz_write_file(path, data, size);
    DrawCheckpoint m;
    Error em = {{0}};
    int model_ok = draw_checkpoint_load(&m, path, &em) == 0;
    if (!model_ok) {
        fuzz_require_error(&em, path);
    } else {
        fuzz_require(state_ok, "the model loaded from the file, its state not from memory");
        fuzz_require(fuzz_draw_same_state(&m.state, &state),
                     "the file's state differs from the memory copy's");
        fuzz_draw_check_model(&m, &f);
        fuzz_draw_check_moments(&m, &f, name);
        draw_checkpoint_free(&m);
    }
    if (loaded) safetensors_free(&f);
    return model_ok;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_draw_one(data, size);
    return 0;
}
#endif
