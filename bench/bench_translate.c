// bench_translate.c: training, greedy- and beam-decoding throughput of the translator
// (models/translator.h) at `text translate train`'s default sizes on the date task, the
// toolkit's side of bench/reference/bench_translate.py (whose PyTorch side is
// translator_ref.py bench, the same model, sizes and lengths).
//
// The model: source vocabulary 42, embedding 32, encoder 64 per direction, S 40; decoder
// embedding 32, hidden 128, vocabulary 15, max_len 10, additive attention of size 64 with
// the previous state as query (--attention bahdanau). Batches of BATCH pairs of random ids
// with the lengths translator_ref.py's bench_lengths() gives (sources spread over [S/2, S],
// targets over [max_len/2, max_len], descending): the cost of a step does not depend on the
// ids. A training step is what cli/text_translate.c's train_step does: translator_forward,
// block_zero, translator_backward, clip_global_norm (5), adam_update (lr 1e-3). One warm-up
// step, then STEPS timed; then greedy decoding (translator_greedy) of one warm-up batch and
// DECODE timed ones; then beam decoding (translator_beam, models/translator_beam.h: beam
// BEAM_K = 5, length alpha 0.7, `text translate eval --beam 5`'s defaults) of one warm-up
// batch and BEAM timed ones, batches drawn as for greedy. Wall time CLOCK_MONOTONIC, CPU time
// CLOCK_PROCESS_CPUTIME_ID. Prints one JSON object on stdout:
//     {"model": "translator", "impl": "toolkit", "attention", "threads", "batch", "steps",
//      "pairs_per_s", "pairs_per_cpu_s", "final_loss", "sentences_per_s",
//      "sentences_per_cpu_s", "beam", "length_alpha", "beam_sentences_per_s",
//      "beam_sentences_per_cpu_s", "peak_rss_mib"}
// With DUMP, after the timing, weights drawn again uniform in +-0.5 (the source embedding and
// the encoder's x1.5, the attention's x2, the word embeddings and the output layer's L_z and
// L_o x3, its bias 0, after translator_ref.py's init_params and decode_params: the bench's
// model, trained a few steps on random ids, writes the same words for every sentence, which
// checks little; at init_params's x3 and x4 the encoder is so ill-conditioned that float32
// and float64 sums of log-probabilities differ by 0.1) decode one more batch; those weights (param/NAME), that
// batch (check/src (B, S), check/src_len (B)) and its result (check/beam_words (B, max_len), 0 past each end,
// check/beam_len (B), check/beam_score (B)) go to that safetensors file, for
// translator_ref.py beamcheck (bench_translate.py compares PyTorch's beam search with it).
// Usage: bench_translate [THREADS=1] [STEPS=20] [DECODE=8] [BATCH=64] [BEAM=4] [DUMP]
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <time.h>

#include "bench/support/translate_bench.h"
#include "core/adam.h"
#include "core/block.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "models/translator.h"
#include "models/translator_beam.h"
#include "seq/vocab.h"

enum { BEAM_K = 5 };
#define BEAM_ALPHA 0.7f

// Every weight drawn again uniform in +-0.5 times its scale (see the top).
static void redraw_params(Translator *m, Rng *rng) {
    static const struct {
        const char *prefix;
        float f;
    } scales[] = {{"src.", 1.5f}, {"enc.", 1.5f}, {"attn.", 2.0f}, {"embed", 3.0f},
                  {"out.L_z", 3.0f}, {"out.L_o", 3.0f}, {"out.b_o", 0.0f}};
    for (int k = 0; k < m->params.count; k++) {
        const BlockTensor *t = &m->params.tensors[k];
        float f = 1.0f;
        for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
            if (strncmp(t->name, scales[i].prefix, strlen(scales[i].prefix)) == 0) f = scales[i].f;
        for (size_t i = 0; i < t->numel; i++)
            m->params.data[t->offset + i] = (rng_uniform(rng) - 0.5f) * f;
    }
}

// Draws the weights again (see the top), beam-decodes src and writes the weights, the batch
// and its result to path; words, lens (B, max_len), (B) and score (B) are scratch.
static int dump_beam(const char *path, Translator *m, Rng *rng, const int *src,
                     const int *src_len, int *words, int *lens, float *score, int B) {
    const TranslatorConfig *c = &m->cfg;
    redraw_params(m, rng);
    translator_beam(m, src, src_len, B, BEAM_K, BEAM_ALPHA, words, lens, score, NULL);
    return translate_bench_save_check(path, "bench_translate", &m->params, src, src_len, B,
                                      c->S, words, lens, score, c->max_len,
                                      (TranslateBenchBeam){BEAM_K, BEAM_ALPHA});
}

// What the timed rounds run on: the model, its optimiser, the last training loss.
typedef struct {
    Translator *m;
    TranslateBenchAdam *adam;
    double loss;
} Run;

// A training step as cli/text_translate.c's train_step.
static void train_step(void *ctx, TranslateBenchBatch *b, int timed) {
    (void)timed;
    Run *r = ctx;
    r->loss = translator_forward(r->m, b->src, b->src_len, b->words, b->lens, b->B);
    block_zero(&r->m->grads);
    translator_backward(r->m);
    translate_bench_adam_step(r->adam, &r->m->params, &r->m->grads);
}

static void greedy(void *ctx, TranslateBenchBatch *b, int timed) {
    (void)timed;
    Run *r = ctx;
    translator_greedy(r->m, b->src, b->src_len, b->B, b->out, b->out_len, NULL);
}

static void beam(void *ctx, TranslateBenchBatch *b, int timed) {
    (void)timed;
    Run *r = ctx;
    translator_beam(r->m, b->src, b->src_len, b->B, BEAM_K, BEAM_ALPHA, b->out, b->out_len,
                    b->score, NULL);
}

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 1, steps = argc > 2 ? atoi(argv[2]) : 20;
    const int decode = argc > 3 ? atoi(argv[3]) : 8, B = argc > 4 ? atoi(argv[4]) : 64;
    const int beam_batches = argc > 5 ? atoi(argv[5]) : 4;
    const char *dump = argc > 6 ? argv[6] : NULL;
    if (threads < 1 || steps < 1 || decode < 1 || B < 1 || beam_batches < 1) {
        fprintf(stderr, "usage: bench_translate [THREADS=1] [STEPS=20] [DECODE=8] [BATCH=64] "
                        "[BEAM=4] [DUMP] (each number >= 1)\n");
        return 2;
    }
    gemm_set_threads(threads);
    TranslatorConfig c = {.Vs = 42, .Es = 32, .He = 64, .S = 40, .max_len = 10,
                          .dec = {.E = 32, .H = 128, .V = 15, .nb = 1,
                                  .query = DECODER_QUERY_PREVIOUS,
                                  .attn = {.kind = ATTN_ADDITIVE, .A = 64, .window = 5}}};
    Rng rng;
    rng_seed(&rng, 1);
    Translator m;
    translator_init(&m, &c, B, &rng);
    TranslateBenchAdam adam;
    translate_bench_adam_init(&adam, &m.params);
    TranslateBenchBatch bt;
    translate_bench_batch_alloc(&bt, B, c.S, c.max_len, c.Vs, c.dec.V);
    Run run = {&m, &adam, 0};
    double wall = 0, cpu = 0, dwall = 0, dcpu = 0, bwall = 0, bcpu = 0;
    translate_bench_time(&bt, steps, &rng, train_step, &run, &wall, &cpu);
    translate_bench_time(&bt, decode, &rng, greedy, &run, &dwall, &dcpu);
    translate_bench_time(&bt, beam_batches, &rng, beam, &run, &bwall, &bcpu);
    int status = dump ? dump_beam(dump, &m, &rng, bt.src, bt.src_len, bt.out, bt.out_len,
                                  bt.score, B)
                      : 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"model\": \"translator\", \"impl\": \"toolkit\", \"attention\": \"bahdanau\", "
           "\"threads\": %d, \"batch\": %d, \"steps\": %d, \"pairs_per_s\": %.3f, "
           "\"pairs_per_cpu_s\": %.3f, \"final_loss\": %.4f, \"sentences_per_s\": %.3f, "
           "\"sentences_per_cpu_s\": %.3f, \"beam\": %d, \"length_alpha\": %.2f, "
           "\"beam_sentences_per_s\": %.3f, \"beam_sentences_per_cpu_s\": %.3f, "
           "\"peak_rss_mib\": %.1f}\n",
           threads, B, steps, B * steps / wall, B * steps / cpu, run.loss, B * decode / dwall,
           B * decode / dcpu, BEAM_K, BEAM_ALPHA, B * beam_batches / bwall,
           B * beam_batches / bcpu, ru.ru_maxrss / 1024.0);
    translate_bench_batch_free(&bt);
    translate_bench_adam_free(&adam);
    translator_free(&m);
    return status == 0 ? 0 : 1;
}
