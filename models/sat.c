// sat.c: the captioner through its decoder's operations (models/sat.h).
#include "models/sat.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "models/sat_lstm.h"
#include "models/sat_transformer.h"

const SatDecoderOps *sat_decoder_ops(SatDecoderKind kind) {
    switch (kind) {
    case SAT_DECODER_LSTM: return &sat_lstm_ops;
    case SAT_DECODER_TRANSFORMER: return &sat_tf_ops;
    }
    CHECK(0, "decoder kind %d", (int)kind);
    return NULL;
}

void sat_init(SatModel *m, const SatConfig *cfg, Rng *rng) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->ops = sat_decoder_ops(cfg->decoder);
    m->ops->init(m, rng);
}

void sat_replica_init(SatModel *r, const SatModel *m) {
    memset(r, 0, sizeof *r);
    r->cfg = m->cfg;
    r->ops = m->ops;
    r->baseline = m->baseline;
    r->baseline_set = m->baseline_set;
    m->ops->replica_init(r, m);
}

int sat_check_sizes(const SatConfig *c, int B, Error *err) {
    return sat_decoder_ops(c->decoder)->check_sizes(c, B, err);
}

void sat_alloc_acts(SatModel *m, int B) {
    m->ops->alloc_acts(m, B);
    m->acts_batch = B;
}

void sat_free(SatModel *m) {
    if (m->ops) m->ops->free(m);
    free(m->sorted_images);  // the training step's sorted copies (models/sat_parallel.c)
    free(m->sorted_ints);
    memset(m, 0, sizeof *m);
}

void sat_forward(SatModel *m, SatLoss *out, const float *images, const int *words,
                 const int *lens, int B, int train, uint64_t seed, int first) {
    m->ops->forward(m, out, images, words, lens, B, train, seed, first);
    m->Bb = B;
}

void sat_backward_decoder(SatModel *m) { m->ops->backward_decoder(m); }

void sat_backward_encoder(SatModel *m) { m->ops->backward_encoder(m); }

void sat_backward(SatModel *m) {
    m->ops->backward_decoder(m);
    m->ops->backward_encoder(m);
}

const float *sat_annotation_grads(const SatModel *m) { return m->ops->annotation_grads(m); }
