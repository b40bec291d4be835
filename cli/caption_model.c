// caption_model.c: the captioner's checkpoint files (cli/caption_model.h).
#include "cli/caption_model.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

int caption_attention_parse(SatConfig *c, const char *name, Error *err) {
    if (!strcmp(name, "hard")) {
        c->hard = 1;
        c->attn.kind = ATTN_ADDITIVE;
        return 0;
    }
    c->hard = 0;
    if (attn_kind_parse(name, &c->attn.kind))
        return error_set(err, "--attention: unknown kind '%s' (additive, dot, scaled-dot, "
                              "multiplicative, multi-head, local-monotonic, local-predictive, "
                              "hard, none)", name);
    return 0;
}

const char *caption_attention_name(const SatConfig *c) {
    if (c->decoder == SAT_DECODER_TRANSFORMER) return "transformer";  // its cross-attention
    return c->hard ? "hard" : attn_kind_name(c->attn.kind);
}

// A state's optimiser settings (cli/train_run.h TrainOptim, train_optim_meta) in its
// metadata, and the weight average's decay, train.ema (0: off). Caption train has no
// --beta1 (Adam's default): it is not stored.
static const unsigned OPTIM_STORED = TRAIN_OPTIM_LR_DECAY;

// The weight average's decay caption_model_save wrote: *stored false (and ema untouched) for a
// state written before it was stored.
static int read_ema_meta(const SafetensorsFile *f, const char *path, float *ema, bool *stored,
                         Error *err) {
    *stored = safetensors_meta(f, "train.ema") != NULL;
    if (!*stored) return 0;
    if (safetensors_meta_float(f, path, "train.ema", ema, err)) return -1;
    if (!(*ema >= 0 && *ema < 1))
        return error_set(err, "%s: metadata train.ema = %g out of range [0, 1)", path, (double)*ema);
    return 0;
}

// The optimiser's settings caption_model_save wrote (train_optim_read). *stored false (and
// o untouched) when the state has none of them: a state written before they were stored.
static int read_optim_meta(const SafetensorsFile *f, const char *path, TrainOptim *o,
                           bool *stored, Error *err) {
    *stored = safetensors_meta(f, "train.batch") || safetensors_meta(f, "train.lr") ||
              safetensors_meta(f, "train.lr_decay") || safetensors_meta(f, "train.clip") ||
              safetensors_meta(f, "train.seed");
    if (!*stored) return 0;
    return train_optim_read(f, path, OPTIM_STORED, CAPTION_BATCH_MAX, o, err);
}

int caption_model_save(const char *path, const SatModel *m, const Vocab *vocab, int with_state,
                       const TrainOptim *optim, const TrainEma *ema, const CaptionCounters *tc,
                       const EncoderRecord *enc, const CaptionFineTune *ft,
                       const char *data, Error *err) {
    char cfg[2048], st[64], bst[64], bb[64], base[64], bset[16], ema_decay[32], cpu[32];
    sat_config_format(&m->cfg, cfg, sizeof cfg);
    char *vj = vocab_to_json(vocab);
    snprintf(st, sizeof st, "%ld", tc->step);
    snprintf(bst, sizeof bst, "%ld", tc->best_step);
    snprintf(bb, sizeof bb, "%.17g", tc->best_bleu);
    snprintf(base, sizeof base, "%a", (double)m->baseline);
    snprintf(bset, sizeof bset, "%d", m->baseline_set);
    SafetensorsMeta meta[28] = {{"format", "attend-sat"}, {"version", "1"}, {"sat.config", cfg},
                                {"vocab", vj},           {"step", st},     {"best_step", bst},
                                {"best_val_bleu4", bb},  {"baseline", base}, {"baseline_set", bset}};
    int n_meta = 9 + encoder_record_meta(enc, meta + 9);  // the pretrained encoder, if any
    if (data) meta[n_meta++] = (SafetensorsMeta){"train.data", data};
    TrainOptimMeta om;  // its text is the metadata's until the save
    if (with_state) {
        train_optim_meta(&om, optim, OPTIM_STORED);
        for (int i = 0; i < om.n; i++) meta[n_meta++] = om.meta[i];
        snprintf(ema_decay, sizeof ema_decay, "%.9g", (double)ema->decay);
        meta[n_meta++] = (SafetensorsMeta){"train.ema", ema_decay};
        snprintf(cpu, sizeof cpu, "%.17g", tc->cpu_seconds);
        if (tc->cpu_seconds > 0) meta[n_meta++] = (SafetensorsMeta){"train.cpu_seconds", cpu};
    }
    const bool with_ema = with_state && train_ema_on(ema);
    const Block *blocks[7] = {&m->params, &m->adam_m, &m->adam_v, with_ema ? &ema->avg : NULL};
    const char *prefixes[7] = {"", TRAIN_ADAM_M_PREFIX, TRAIN_ADAM_V_PREFIX, TRAIN_EMA_PREFIX};
    int n_blocks = with_state ? (with_ema ? 4 : 3) : 1;
    Block ftb[3];  // --fine-tune: the stage (and its moments) (cli/caption_finetune.h)
    BlockTensor ftt[3];
    int n_ft = caption_finetune_blocks(ft, ftb, ftt, with_state);
    for (int i = 0; i < n_ft; i++) blocks[n_blocks + i] = &ftb[i], prefixes[n_blocks + i] = "";
    int r = safetensors_save(path, blocks, prefixes, n_blocks + n_ft, meta, n_meta, err);
    free(vj);
    return r;
}

// The checkpoint's kind (a captioner's, with its configuration and vocabulary) and layout
// version: 0, or -1 with err naming path and what is wrong.
static int check_format(const SafetensorsFile *f, const char *path, Error *err) {
    const char *fmt = safetensors_meta(f, "format");
    if (!fmt || strcmp(fmt, "attend-sat") || !safetensors_meta(f, "sat.config") ||
        !safetensors_meta(f, "vocab"))
        return error_set(err, "%s: not a captioner checkpoint (format '%s', expected attend-sat%s)",
                         path, fmt ? fmt : "missing",
                         fmt && !strncmp(fmt, "attend-draw", 11) ? "; this is a DRAW model" : "");
    const char *ver = safetensors_meta(f, "version");
    if (!ver || strcmp(ver, "1"))
        return error_set(err, "%s: captioner checkpoint layout version '%s' is not supported (this build reads version 1)",
                         path, ver ? ver : "missing");
    return 0;
}

// The training state beside the weights: the weight average (into ema, when given, if the
// file holds one), the counters and the REINFORCE baseline, each checked (one line naming
// path and key for a missing or malformed value; best_val_bleu4 is -1 until a validation
// sets it), and the stored optimiser and average options (optim, when given).
static int read_train_state(const SafetensorsFile *f, const char *path, SatModel *m, Block *ema,
                            CaptionCounters *tc, StoredOptim *optim, Error *err) {
    int r = 0;
    if (ema) {
        char first[BLOCK_NAME_LEN + 8];
        snprintf(first, sizeof first, TRAIN_EMA_PREFIX "%s", m->params.tensors[0].name);
        block_clone(ema, &m->params);
        if (safetensors_find(f, first)) r = safetensors_read_block(ema, TRAIN_EMA_PREFIX, f, path, err);
    }
    long bset = 0;
    if (!r && (safetensors_meta_long(f, path, "step", NULL, 0, LONG_MAX, &tc->step, err) ||
               safetensors_meta_long(f, path, "best_step", NULL, 0, LONG_MAX, &tc->best_step, err) ||
               safetensors_meta_double(f, path, "best_val_bleu4", &tc->best_bleu, err) ||
               safetensors_meta_float(f, path, "baseline", &m->baseline, err) ||
               safetensors_meta_long(f, path, "baseline_set", NULL, 0, 1, &bset, err)))
        r = -1;
    m->baseline_set = (int)bset;
    tc->cpu_seconds = 0;  // a state written before train.cpu_seconds was stored: none spent
    if (!r && safetensors_meta(f, "train.cpu_seconds") &&
        safetensors_meta_double(f, path, "train.cpu_seconds", &tc->cpu_seconds, err))
        r = -1;
    if (!r && !(tc->cpu_seconds >= 0))
        r = error_set(err, "%s: metadata train.cpu_seconds is %g, not a CPU time >= 0", path, tc->cpu_seconds);
    if (!r && optim) r = read_optim_meta(f, path, &optim->optim, &optim->stored, err);
    if (!r && optim) r = read_ema_meta(f, path, &optim->ema, &optim->ema_stored, err);
    if (!r && optim) {  // a state written before train.data was stored: none to check
        const char *data = safetensors_meta(f, "train.data");
        optim->data_stored = data != NULL;
        if (data && strlen(data) >= sizeof optim->data)
            r = error_set(err, "%s: metadata train.data is longer than %zu bytes", path, sizeof optim->data - 1);
        else if (data)
            snprintf(optim->data, sizeof optim->data, "%s", data);
    }
    return r;
}

int caption_model_load(const char *path, SatModel *m, Vocab *vocab, int with_state, Block *ema,
                       CaptionCounters *tc, StoredOptim *optim, Error *err) {
    SafetensorsFile f;
    if (safetensors_load(&f, path, err)) return -1;
    if (check_format(&f, path, err)) {
        safetensors_free(&f);
        return -1;
    }
    SatConfig c;
    if (sat_config_parse(&c, safetensors_meta(&f, "sat.config"), err)) {
        safetensors_free(&f);
        return error_prefix(err, "%s", path);
    }
    if (vocab_from_json(vocab, safetensors_meta(&f, "vocab"), err)) {
        safetensors_free(&f);
        return error_prefix(err, "%s", path);  // its messages begin "vocabulary: "
    }
    if (vocab->size != c.V) {
        error_set(err, "%s: vocabulary has %d words, model expects %d", path, vocab->size, c.V);
        safetensors_free(&f);
        vocab_free(vocab);
        return -1;
    }
    Rng rng;
    rng_seed(&rng, 0);
    sat_init(m, &c, &rng);
    int r = train_checkpoint_read(&m->params, with_state ? &m->adam_m : NULL, &m->adam_v, &f,
                                  path, err);
    if (!r && with_state) r = read_train_state(&f, path, m, ema, tc, optim, err);
    safetensors_free(&f);
    if (r) {
        sat_free(m);
        vocab_free(vocab);
        if (ema) block_free(ema);
    }
    return r;
}
