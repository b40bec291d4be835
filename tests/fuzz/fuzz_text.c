// fuzz_text.c: libFuzzer target for the checkpoint reader of `text classify`
// (cli/text_checkpoint.h: text_checkpoint_read_state, text_model_load).
//
// Returns 1 when the reader accepted the input (the model loaded), 0 when it refused it.
// Input: the file's bytes, written to a temporary file and loaded with text_model_load.
// Properties: a failure has a one-line message naming the file; an accepted model has a
// configuration text_config_check accepts, a word index of vocab - 1 distinct non-empty
// words, strictly ascending class values, batch >= 1 and step >= 0, and the file's tensors
// bit for bit; a small one runs a forward pass over every word (ids in range, lengths
// 0..T) to probabilities in [0, 1]; and saved again with text_checkpoint_save it loads back
// to the same words, classes and parameters.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/text_checkpoint.h"
#include "core/check.h"
#include "core/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

static void fuzz_text_check_state(const TextState *s) {
    Error e = {{0}};
    const TextConfig *c = &s->cfg;
    fuzz_require(text_config_check(c, &e) == 0, "accepted a configuration: %s", e.msg);
    fuzz_require(s->tok.n_words == c->vocab - 1, "%d words for %d rows", s->tok.n_words, c->vocab);
    for (int i = 1; i <= s->tok.n_words; i++)
        fuzz_require(s->tok.word[i][0] && keras_tokenizer_index(&s->tok, s->tok.word[i]) == i,
                     "word %d", i);
    for (int k = 1; k < c->classes; k++)
        fuzz_require(s->class_values[k - 1] < s->class_values[k], "class values not ascending");
    fuzz_require(s->optim.batch >= 1 && s->step >= 0, "batch %d step %ld", s->optim.batch, s->step);
    fuzz_require(s->padding == KERAS_PRE || s->padding == KERAS_POST, "padding %d", s->padding);
}

// A forward pass over a batch that uses every word, when the model is small.
static void fuzz_text_forward(const TextModel *m) {
    const TextConfig *c = &m->state.cfg;
    if ((double)c->T * c->hidden * (c->embed + c->hidden) > 2e5 || c->T > 16 || c->classes > 64) return;
    enum { NB = 3 };
    TextActs a;
    text_acts_alloc(&a, c, NB);
    int *ids = xmalloc((size_t)NB * c->T * sizeof *ids), lengths[NB];
    for (int b = 0; b < NB; b++) {
        lengths[b] = b == 0 ? c->T : b == 1 ? 0 : (c->T + 1) / 2;
        for (int t = 0; t < c->T; t++) ids[b * c->T + t] = t < lengths[b] ? (b * c->T + t) % c->vocab : 0;
    }
    text_forward(&a, &m->p, c, ids, lengths, NULL, NB, NULL, NULL);
    int O = text_outputs(c);
    for (int i = 0; i < NB * O; i++)
        fuzz_require(!(a.probs[i] < 0.0f) && !(a.probs[i] > 1.0f), "probability %g", a.probs[i]);
    free(ids);
    text_acts_free(&a);
}

static void fuzz_text_check_model(const TextModel *m, const SafetensorsFile *f) {
    fuzz_require_block_is_file(&m->params, f);
    fuzz_text_forward(m);
    const char *again = fuzz_tmp_path("fuzz_text_again.safetensors");
    Error e = {{0}};
    fuzz_require(text_checkpoint_save(again, &m->state, &m->params, NULL, NULL, &e) == 0,
                 "saving a loaded model failed: %s", e.msg);
    TextModel back;
    fuzz_require(text_model_load(&back, again, &e) == 0, "a saved model did not load: %s", e.msg);
    const TextState *x = &m->state, *y = &back.state;
    fuzz_require(x->tok.n_words == y->tok.n_words && x->cfg.classes == y->cfg.classes &&
                     x->step == y->step && x->cfg.pool == y->cfg.pool && x->cfg.T == y->cfg.T,
                 "the state changed in a save and load");
    for (int i = 1; i <= x->tok.n_words; i++)
        fuzz_require(strcmp(x->tok.word[i], y->tok.word[i]) == 0, "word %d changed", i);
    fuzz_require(memcmp(x->class_values, y->class_values, (size_t)x->cfg.classes * sizeof(int)) == 0,
                 "class values changed");
    fuzz_require(back.params.numel == m->params.numel &&
                     memcmp(back.params.data, m->params.data, m->params.numel * sizeof(float)) == 0,
                 "the parameters changed in a save and load");
    text_model_free(&back);
}

int fuzz_text_one(const uint8_t *data, size_t size) {
    const char *path = fuzz_tmp_path("fuzz_text.safetensors");
    fuzz_write_file(path, data, size);
    TextModel m;
    Error err = {{0}};
    if (text_model_load(&m, path, &err) != 0) {
        fuzz_require_error(&err, path);
        return 0;
    }
    fuzz_text_check_state(&m.state);
    SafetensorsFile f;
    Error e2 = {{0}};
    fuzz_require(safetensors_load(&f, path, &e2) == 0, "the file loaded once, not twice: %s", e2.msg);
    fuzz_text_check_model(&m, &f);
    safetensors_free(&f);
    text_model_free(&m);
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_text_one(data, size);
    return 0;
}
#endif
