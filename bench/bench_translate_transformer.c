// bench_translate_transformer.c: training and beam-decoding throughput of the Transformer
// translator (models/translator_transformer.h) at `text translate train --model transformer`'s
// default sizes on the date task, the toolkit's side of
// bench/reference/bench_translate_transformer.py (whose PyTorch side is
// translator_transformer_ref.py bench: the same model on nn.TransformerEncoder / Decoder).
//
// The model: source vocabulary 42, S 40; target vocabulary 15, max_len 10; d_model 128,
// 4 heads, d_ff 256, 2 encoder and 2 decoder layers, pre-LN, dropout 0, no label smoothing.
// Batches of BATCH pairs of random ids with bench_translate.c's lengths (sources over
// [S/2, S], targets over [max_len/2, max_len], descending): the cost of a step does not
// depend on the ids. A training step is what cli/text_translate.c's train_step does:
// tt_forward, block_zero, tt_backward, clip_global_norm (5), adam_update (lr 1e-3). One
// warm-up step, then STEPS timed; then beam decoding (tt_decode, beam BEAM_K = 5, length
// alpha 0.7, `text translate eval --beam 5`'s defaults) of one warm-up batch and BEAM timed
// ones. Wall time CLOCK_MONOTONIC, CPU time CLOCK_PROCESS_CPUTIME_ID. Prints one JSON object:
//     {"model": "translator_transformer", "impl": "toolkit", "threads", "batch", "steps",
//      "pairs_per_s", "pairs_per_cpu_s", "final_loss", "beam", "length_alpha",
//      "beam_sentences_per_s", "beam_sentences_per_cpu_s", "beam_mean_words", "peak_rss_mib"}
// (beam_mean_words: the words per sentence of the timed beam results; a model that ends its
// sentences sooner decodes faster, so the two sides' are printed beside their rates).
// With DUMP, after the timing, the source embedding and the decoder's cross-attention output
// projections x8 and the output layer x3 (the bench's model, trained a few steps on random
// ids, writes nearly the same words for every sentence, which checks little) decode one more
// batch; the weights (param/NAME), that batch (check/src (B, S), check/src_len (B)) and its
// result (check/beam_words (B, max_len), 0 past each end, check/beam_len (B),
// check/beam_score (B)) go to that safetensors file, for bench_translate_transformer.py's
// beam check.
// Usage: bench_translate_transformer [THREADS=1] [STEPS=20] [BATCH=64] [BEAM=4] [DUMP]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/support/translate_bench.h"
#include "core/adam.h"
#include "core/block.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "models/translator_transformer.h"
#include "seq/vocab.h"

enum { BEAM_K = 5 };
#define BEAM_ALPHA 0.7f
// DUMP's weight scales (see the top): 33 distinct beam results of 64 sentences, against 3
// with the output layer alone x3.
#define DUMP_SRC 8.0f
#define DUMP_CROSS 8.0f
#define DUMP_OUT 3.0f

// The weights whose scale DUMP changes (see the top), by name prefix and substring.
static void scale_params(TtModel *m) {
    static const struct {
        const char *prefix, *part;
        float f;
    } scales[] = {{"src.embed", "", DUMP_SRC}, {"decoder.", "multihead_attn.out_proj.weight", DUMP_CROSS},
                  {"out.weight", "", DUMP_OUT}};
    for (int k = 0; k < m->params.count; k++) {
        const BlockTensor *t = &m->params.tensors[k];
        for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
            if (strncmp(t->name, scales[i].prefix, strlen(scales[i].prefix)) == 0 &&
                strstr(t->name, scales[i].part))
                for (size_t j = 0; j < t->numel; j++) m->params.data[t->offset + j] *= scales[i].f;
    }
}

// Beam-decodes src with the weights scaled and writes the weights, the batch and its result
// to path; words, lens (B, max_len), (B) and score (B) are scratch.
static int dump_beam(const char *path, TtModel *m, const int *src, const int *src_len,
                     int *words, int *lens, float *score, int B) {
    const TtConfig *c = &m->cfg;
    scale_params(m);
    tt_decode(m, src, src_len, B, BEAM_K, BEAM_ALPHA, words, lens, score, NULL);
    return translate_bench_save_check(path, "bench_translate_transformer", &m->params, src,
                                      src_len, B, c->S, words, lens, score, c->max_len,
                                      (TranslateBenchBeam){BEAM_K, BEAM_ALPHA});
}

// What the timed rounds run on: the model, its optimiser, tt_forward's training-mode rng
// (dropout 0 draws nothing), the last training loss and the words of the timed beam
// results.
typedef struct {
    TtModel *m;
    TranslateBenchAdam *adam;
    Rng drop;
    double loss, words_out;
} Run;

// A training step as cli/text_translate.c's train_step.
static void train_step(void *ctx, TranslateBenchBatch *b, int timed) {
    (void)timed;
    Run *r = ctx;
    r->loss = tt_forward(r->m, b->src, b->src_len, b->words, b->lens, b->B, &r->drop);
    block_zero(&r->m->grads);
    tt_backward(r->m);
    translate_bench_adam_step(r->adam, &r->m->params, &r->m->grads);
}

static void beam(void *ctx, TranslateBenchBatch *b, int timed) {
    Run *r = ctx;
    tt_decode(r->m, b->src, b->src_len, b->B, BEAM_K, BEAM_ALPHA, b->out, b->out_len, b->score,
              NULL);
    for (int i = 0; timed && i < b->B; i++) r->words_out += b->out_len[i];
}

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 1, steps = argc > 2 ? atoi(argv[2]) : 20;
    const int B = argc > 3 ? atoi(argv[3]) : 64, beam_batches = argc > 4 ? atoi(argv[4]) : 4;
    const char *dump = argc > 5 ? argv[5] : NULL;
    if (argc > 6 || threads < 1 || steps < 1 || B < 1 || beam_batches < 1) {
        fprintf(stderr, "usage: bench_translate_transformer [THREADS=1] [STEPS=20] [BATCH=64] "
                        "[BEAM=4] [DUMP] (each number >= 1)\n");
        return 2;
    }
    gemm_set_threads(threads);
    const TtConfig c = {.Vs = 42, .V = 15, .S = 40, .max_len = 10, .d_model = 128, .heads = 4,
                        .d_ff = 256, .enc_layers = 2, .dec_layers = 2, .map_layer = -1};
    Error err;
    CHECK(tt_config_check(&c, &err) == 0, "bench config: %s", err.msg);
    Rng rng;
    rng_seed(&rng, 1);
    TtModel m;
    tt_init(&m, &c, B, &rng);
    TranslateBenchAdam adam;
    translate_bench_adam_init(&adam, &m.params);
    TranslateBenchBatch bt;
    translate_bench_batch_alloc(&bt, B, c.S, c.max_len, c.Vs, c.V);
    Run run = {.m = &m, .adam = &adam};
    rng_seed(&run.drop, 2);
    double wall = 0, cpu = 0, bwall = 0, bcpu = 0;
    translate_bench_time(&bt, steps, &rng, train_step, &run, &wall, &cpu);
    translate_bench_time(&bt, beam_batches, &rng, beam, &run, &bwall, &bcpu);
    const int status =
        dump ? dump_beam(dump, &m, bt.src, bt.src_len, bt.out, bt.out_len, bt.score, B) : 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"model\": \"translator_transformer\", \"impl\": \"toolkit\", \"threads\": %d, "
           "\"batch\": %d, \"steps\": %d, \"pairs_per_s\": %.3f, \"pairs_per_cpu_s\": %.3f, "
           "\"final_loss\": %.4f, \"beam\": %d, \"length_alpha\": %.2f, "
           "\"beam_sentences_per_s\": %.3f, \"beam_sentences_per_cpu_s\": %.3f, "
           "\"beam_mean_words\": %.2f, \"peak_rss_mib\": %.1f}\n",
           threads, B, steps, B * steps / wall, B * steps / cpu, run.loss, BEAM_K, BEAM_ALPHA,
           B * beam_batches / bwall, B * beam_batches / bcpu, run.words_out / (B * beam_batches),
           ru.ru_maxrss / 1024.0);
    translate_bench_batch_free(&bt);
    translate_bench_adam_free(&adam);
    tt_free(&m);
    return status == 0 ? 0 : 1;
}
