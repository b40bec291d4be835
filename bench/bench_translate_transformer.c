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

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
    Block mom1 = {0}, mom2 = {0};
    block_layout_like(&mom1, &m.params);
    block_layout_like(&mom2, &m.params);
    block_alloc(&mom1);
    block_alloc(&mom2);
    const AdamConfig adam = adam_defaults(1e-3f);
    int *src = xmalloc((size_t)B * c.S * sizeof(int)), *words = xmalloc((size_t)B * c.max_len * sizeof(int));
    int *src_len = xmalloc((size_t)B * sizeof(int)), *lens = xmalloc((size_t)B * sizeof(int));
    int *out = xmalloc((size_t)B * c.max_len * sizeof(int)), *out_len = xmalloc((size_t)B * sizeof(int));
    float *score = xmalloc((size_t)B * sizeof(float));
    translate_bench_lengths(src_len, lens, B, c.S, c.max_len);
    Rng drop;  // tt_forward's training mode; dropout 0 draws nothing
    rng_seed(&drop, 2);
    double wall = 0, cpu = 0, loss = 0;
    for (int it = 0; it <= steps; it++) {
        translate_bench_batch(src, words, src_len, B, c.S, c.Vs, c.max_len, c.V, &rng);
        const double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        loss = tt_forward(&m, src, src_len, words, lens, B, &drop);
        block_zero(&m.grads);
        tt_backward(&m);
        clip_global_norm(m.grads.data, m.grads.numel, 5.0f);
        adam_update(m.params.data, m.grads.data, mom1.data, mom2.data, m.params.numel, &adam,
                    it + 1, adam.lr);
        if (it > 0) {  // step 0 warms up
            wall += clock_s(CLOCK_MONOTONIC) - t0;
            cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
    }
    double bwall = 0, bcpu = 0, words_out = 0;  // words of the timed batches' results
    for (int it = 0; it <= beam_batches; it++) {
        translate_bench_batch(src, words, src_len, B, c.S, c.Vs, c.max_len, c.V, &rng);
        const double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        tt_decode(&m, src, src_len, B, BEAM_K, BEAM_ALPHA, out, out_len, score, NULL);
        if (it > 0) {
            bwall += clock_s(CLOCK_MONOTONIC) - t0;
            bcpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            for (int b = 0; b < B; b++) words_out += out_len[b];
        }
    }
    const int status = dump ? dump_beam(dump, &m, src, src_len, out, out_len, score, B) : 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"model\": \"translator_transformer\", \"impl\": \"toolkit\", \"threads\": %d, "
           "\"batch\": %d, \"steps\": %d, \"pairs_per_s\": %.3f, \"pairs_per_cpu_s\": %.3f, "
           "\"final_loss\": %.4f, \"beam\": %d, \"length_alpha\": %.2f, "
           "\"beam_sentences_per_s\": %.3f, \"beam_sentences_per_cpu_s\": %.3f, "
           "\"beam_mean_words\": %.2f, \"peak_rss_mib\": %.1f}\n",
           threads, B, steps, B * steps / wall, B * steps / cpu, loss, BEAM_K, BEAM_ALPHA,
           B * beam_batches / bwall, B * beam_batches / bcpu, words_out / (B * beam_batches),
           ru.ru_maxrss / 1024.0);
    free(src), free(words), free(src_len), free(lens), free(out), free(out_len), free(score);
    block_free(&mom1);
    block_free(&mom2);
    tt_free(&m);
    return status == 0 ? 0 : 1;
}
