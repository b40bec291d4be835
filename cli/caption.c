// caption.c: bin/caption, the Show-Attend-Tell captioner's command line.
//
//   caption train   --data scenes|flickr8k:DIR|coco:JSON:IMAGES|karpathy:JSON:IMAGES|tsv:FILE:IMAGES
//                   --attention KIND --out DIR [--epochs N | --steps N | --minutes M] [--resume]
//                   [--checkpoint-every N] [--encoder ARCH:FILE --fine-tune conv5|layer4]
//                   (cli/caption_train.h; fine-tuning: cli/caption_finetune.h)
//   caption eval    --model M --data ... --split test [--beam 3] [--json] [--results FILE]
//                   [--per-image FILE] [--attention-out DIR] (cli/caption_per_image.h)
//   caption predict --model M --images DIR [--beam 3] [--attention-out DIR] [--results FILE]
//   caption scenes  --out DIR --count N [--seed S]
//   caption features, score, report: cli/caption_features.h, caption_score.h,
//                   report_caption.h
//
// The files a training run writes: cli/caption_train.h. Decoding and scoring a split, and
// how eval splits it over mpirun's ranks: cli/caption_evaluate.h. No math here: models/sat
// does it.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/caption_data.h"
#include "cli/caption_evaluate.h"
#include "cli/caption_features.h"
#include "cli/caption_finetune.h"
#include "cli/caption_model.h"
#include "cli/caption_objects.h"
#include "cli/caption_per_image.h"
#include "cli/caption_predict.h"
#include "cli/caption_score.h"
#include "cli/caption_train.h"
#include "cli/report_caption.h"
#include "cli/threads.h"
#include "cli/train_dist.h"
#include "core/dist.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/text_escape.h"
#include "datasets/scenes.h"
#include "datasets/scenes_folder.h"
#include "datasets/split.h"
#include "models/sat.h"
#include "models/sat_decode.h"
#include "models/sat_transformer.h"
#include "seq/vocab.h"

// ---------------------------------------------------------------------------------------
// caption eval

// caption eval's failures: one process prints the message after the command's name; a
// rank prints it with its number and ends the job (cli/train_dist.h).
static int eval_fail(const Dist *dist, const Error *err) {
    return train_dist_fail(dist, "caption eval", err);
}

typedef struct {
    const char *model, *split, *results, *encoder;
    int beam, threads, count, batch;
    int map_layer, map_head;  // a Transformer's maps: decoder layer (-1 the last), head (-1 the mean)
    float length_alpha;
    bool json, quiet, map_layer_given, map_head_given;
    CaptionEvalOutputs outputs;  // --per-image, --attention-out, --attention-count
    CaptionDataFlags data;
} EvalFlags;

// 0: parsed; otherwise *code is the exit status (0 after --help).
static int parse_eval_flags(EvalFlags *f, int argc, char **argv, int *code) {
    *f = (EvalFlags){.split = "test", .beam = 3, .threads = threads_available(), .batch = 32,
                     .length_alpha = 0.7f, .map_layer = -1, .map_head = -1,
                     .outputs = {.per_image = NULL, .strips = NULL, .strips_each = 20}};  // (report)
    CaptionDataFlags *df = &f->data;
    caption_data_flags_default(df);
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "model file", .metavar = "PATH", .required = true},
        {"data", ARG_STRING, &df->data, "scenes | flickr8k:DIR | coco:JSON:IMAGES | karpathy:JSON:IMAGES | tsv:FILE:IMAGES", .given = NULL},
        {"held-out", ARG_DOUBLE, &df->held_out, HELD_OUT_HELP " (as in training)", .metavar = "F", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 0.5, .max_exclusive = true},
        {"features", ARG_STRING, &df->features, FEATURES_HELP, .metavar = "FEATURES", .given = NULL},
        {"verify-features", ARG_FLAG, &df->verify_features, VERIFY_FEATURES_HELP, .given = NULL},
        {"split", ARG_STRING, &f->split, "train | valid | test", .given = NULL},
        {"encoder", ARG_STRING, &f->encoder, "a model that fine-tuned its encoder (train --fine-tune): the pretrained encoder, if not at the path it records (the weights must be the same)", .metavar = "ARCH:FILE", .given = NULL},
        {"beam", ARG_INT, &f->beam, "beam width (1 = greedy)", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"length-alpha", ARG_FLOAT, &f->length_alpha, "beam length normalisation exponent", .has_min = true, .min = 0},
        {"count", ARG_INT, &f->count, "evaluate the first N images only (0 = all)", .has_min = true, .min = 0},
        {"batch", ARG_INT, &f->batch, "images decoded at once", .has_min = true, .min = 1, .has_max = true, .max = 4096},
        {"map-layer", ARG_INT, &f->map_layer, "a Transformer decoder: the layer whose cross-attention makes the maps that grounding, strips and --per-image read (-1: the last; default: the model's --map-layer)", .has_min = true, .min = -1, .has_max = true, .max = 31, .given = &f->map_layer_given},
        {"map-head", ARG_INT, &f->map_head, "a Transformer decoder: the maps from this cross-attention head alone (0 .. heads - 1) instead of the mean over heads (-1); the captions stay the same", .has_min = true, .min = -1, .has_max = true, .max = 255, .given = &f->map_head_given},
        {"results", ARG_STRING, &f->results, "COCO results JSON (default: next to the model)", .metavar = "PATH", .given = NULL},
        {"per-image", ARG_STRING, &f->outputs.per_image, "write each image's caption, references, BLEU-4, CIDEr-D, grounding and objects named here (JSON)", .metavar = "FILE", .given = NULL},
        {"attention-out", ARG_STRING, &f->outputs.strips, "write attention strips of the first, best and worst images here", .metavar = "DIR", .given = NULL},
        {"attention-count", ARG_INT, &f->outputs.strips_each, "--attention-out: how many of each (first, best, worst by CIDEr-D)", .has_min = true, .min = 0, .has_max = true, .max = 100000},
        {"threads", ARG_INT, &f->threads, "BLAS threads", .has_min = true, .min = 1, .has_max = true, .max = 256, .default_note = THREADS_DEFAULT_NOTE},
        SCENES_AND_CACHE_SPECS(df),
        {"json", ARG_FLAG, &f->json, "print the metrics as one JSON object", .given = NULL},
        {"quiet", ARG_FLAG, &f->quiet, "no progress bar", .given = NULL},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "caption eval --model PATH [flags]", NULL, code);
}

// --results' default: results_SPLIT.json next to the model.
static void default_results_path(char *buf, size_t cap, const char *model_path, Split split) {
    const char *slash = strrchr(model_path, '/');
    int dl = slash ? (int)(slash - model_path) : 0;
    snprintf(buf, cap, "%.*s%sresults_%s.json", dl, model_path, slash ? "/" : "", split_name(split));
}

// The scores of n images of split as one JSON object (--json) or one line.
static void print_scores(const CaptionEvalResult *er, const SatConfig *c, Split split, int n, int beam,
                         int map_head, bool json) {
    const CaptionScores *s = &er->scores;
    if (json) {
        printf("{\"split\": \"%s\", \"images\": %d, \"beam\": %d, \"attention\": \"%s\", "
               "\"bleu1\": %.6f, \"bleu2\": %.6f, \"bleu3\": %.6f, \"bleu4\": %.6f, "
               "\"cider\": %.6f, \"rougeL\": %.6f",
               split_name(split), n, beam, caption_attention_name(c), s->bleu[0], s->bleu[1],
               s->bleu[2], s->bleu[3], s->cider_d, s->rouge_l);
        if (er->has_grounding)
            printf(", \"grounding\": %.6f, \"object_words\": %d", er->grounding.accuracy,
                   er->grounding.object_words);
        if (er->has_objects) caption_objects_print_json(&er->objects, 6);
        if (c->decoder == SAT_DECODER_TRANSFORMER)  // whose maps were read (-1: the mean)
            printf(", \"map_layer\": %d, \"map_head\": %d",
                   c->tf.map_layer >= 0 ? c->tf.map_layer : c->tf.layers - 1, map_head);
        printf("}\n");
        return;
    }
    printf("%s split, %d images, beam %d: BLEU-1 %.4f BLEU-2 %.4f BLEU-3 %.4f BLEU-4 %.4f "
           "CIDEr-D %.4f ROUGE-L %.4f",
           split_name(split), n, beam, s->bleu[0], s->bleu[1], s->bleu[2], s->bleu[3], s->cider_d,
           s->rouge_l);
    if (er->has_grounding && er->grounding.object_words > 0)
        printf(" grounding %.4f", er->grounding.accuracy);
    else if (er->has_grounding)
        printf(" grounding n/a (no object words in the captions)");
    if (er->has_objects) caption_objects_print_line(&er->objects);
    printf("\n");
}

// What caption eval reads: the model with its vocabulary (and encoder, when it fine-tuned
// one), the data and the split's references.
typedef struct {
    SatModel m;
    Vocab vocab;
    CaptionFineTune ft;  // a model that fine-tuned its encoder: the encoder runs here
    CaptionData *data;
    CaptionRefs refs;
    int n;  // images of the split to decode
    bool loaded, ft_open;
} EvalInputs;

// Opens in for f's model, data and split (0), or sets err (-1); close_eval_inputs frees
// what it opened either way.
static int open_eval_inputs(EvalInputs *in, const EvalFlags *f, Split split, Error *err) {
    memset(in, 0, sizeof *in);
    CaptionCounters tc;
    if (caption_model_load(f->model, &in->m, &in->vocab, 0, NULL, &tc, NULL, err)) return -1;
    in->loaded = true;
    if (f->map_layer_given || f->map_head_given) {  // the maps read from a layer, a head
        const SatConfig *c = &in->m.cfg;
        const char *flag = f->map_layer_given ? "--map-layer" : "--map-head";
        if (c->decoder != SAT_DECODER_TRANSFORMER)
            return error_set(err, "%s: %s has the LSTM decoder, whose maps are its one attention's; "
                                  "the flag is for a Transformer decoder's", flag, f->model);
        if (f->map_layer >= c->tf.layers)
            return error_set(err, "--map-layer %d: %s has %d decoder layer%s (0 .. %d, or -1 the last)",
                             f->map_layer, f->model, c->tf.layers, c->tf.layers == 1 ? "" : "s",
                             c->tf.layers - 1);
        if (f->map_head >= c->tf.heads)
            return error_set(err, "--map-head %d: %s has %d heads (0 .. %d, or -1 the mean)",
                             f->map_head, f->model, c->tf.heads, c->tf.heads - 1);
        sat_tf_set_maps(&in->m, f->map_layer_given ? f->map_layer : c->tf.map_layer, f->map_head);
    }
    if (sat_check_sizes(&in->m.cfg, f->batch, err) ||
        sat_check_decode_sizes(&in->m.cfg, f->batch, f->beam, "--beam", err))
        return error_prefix(err, "%s", f->model);
    sat_alloc_acts(&in->m, f->batch);
    const CaptionDataFlags *df = &f->data;
    int rc = caption_finetune_open_eval(&in->ft, &in->m.cfg, f->model, df->features, f->encoder,
                                        f->batch, err);
    in->ft_open = true;
    // A model on cached features without --features: said before any image is decoded.
    if (rc || (!df->features && caption_features_check_eval(&in->m.cfg, f->model, NULL, NULL, err)) ||
        caption_data_open(&in->data, df, in->m.cfg.image_size, f->quiet, err) ||
        caption_features_check_eval(&in->m.cfg, f->model, in->data, df->features, err) ||
        gemm_check_address_space(f->threads, err))  // not a hang in OpenBLAS
        return -1;
    in->n = caption_data_count(in->data, split);
    if (f->count > 0 && f->count < in->n) in->n = f->count;
    if (in->n < 1) return error_set(err, "%s: split %s has no images", df->data, split_name(split));
    return caption_refs_encode(&in->refs, in->data, split, err);
}

static void close_eval_inputs(EvalInputs *in) {
    caption_refs_free(&in->refs);
    caption_data_close(in->data);
    if (in->ft_open) caption_finetune_close(&in->ft);
    if (in->loaded) {
        sat_free(&in->m);
        vocab_free(&in->vocab);
    }
}

static int cmd_eval(int argc, char **argv) {
    Error err;
    EvalFlags f;
    int code;
    if (parse_eval_flags(&f, argc, argv, &code)) return code;
    Split split;
    if (split_parse(f.split, &split, &err)) {
        if (args_reporting_process()) fprintf(stderr, "--split: %s\n", err.msg);
        return 2;
    }
    gemm_set_threads(f.threads);
    Dist dist;  // under mpirun, the ranks decode shares of the split (decode_split)
    if (dist_init(&dist, &err)) {
        fprintf(stderr, "caption eval: %s\n", err.msg);
        return 1;
    }
    EvalInputs in;
    int rc = 1;
    if (open_eval_inputs(&in, &f, split, &err)) {
        eval_fail(&dist, &err);
        goto done;
    }
    char rpath[1200];
    if (!f.results) {
        default_results_path(rpath, sizeof rpath, f.model, split);
        f.results = rpath;
    }
    CaptionEvalResult er;
    f.outputs.beam = f.beam;
    if (caption_evaluate_with_outputs(&er, &dist, &in.m, in.ft.on ? &in.ft : NULL, &in.vocab,
                                      in.data, split, &in.refs, in.n, f.beam, f.length_alpha,
                                      f.results, &f.outputs, !f.quiet, &err)) {
        eval_fail(&dist, &err);
        goto done;
    }
    if (dist_is_root(&dist)) {  // rank 0 prints
        print_scores(&er, &in.m.cfg, split, in.n, f.beam, f.map_head, f.json);
        text_write_linef(stderr, "results: %s", f.results);
    }
    rc = 0;
done:
    close_eval_inputs(&in);
    if (rc == 0) dist_finalize(&dist);  // a failed rank exits without: mpirun ends the job
    return rc;
}

// ---------------------------------------------------------------------------------------
// caption scenes

static int cmd_scenes(int argc, char **argv) {
    Error err;
    const char *out = NULL;
    int count = 100, size = 64;
    CaptionDataFlags df;
    caption_data_flags_default(&df);
    ArgSpec specs[] = {
        {"out", ARG_STRING, &out, "output folder", .metavar = "DIR", .required = true},
        {"count", ARG_INT, &count, "scenes in all (80% train, 10% valid, 10% test)", .has_min = true, .min = 1, .has_max = true, .max = 20000},
        {"seed", ARG_LONG, &df.scenes_seed, "scenes generator seed", .given = NULL},
        {"image-size", ARG_INT, &size, "canvas side in pixels (the objects are 20..32 px)", .has_min = true, .min = 64, .has_max = true, .max = 1024},
        {"data-root", ARG_STRING, &df.root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR", .given = NULL},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "caption scenes --out DIR [--count N] [--seed S]", NULL, &code))
        return code;
    int counts[SPLIT_COUNT];
    scenes_folder_counts(count, counts);
    df.train_count = counts[SPLIT_TRAIN] > 0 ? counts[SPLIT_TRAIN] : 1;
    df.val_count = counts[SPLIT_VALID] > 0 ? counts[SPLIT_VALID] : 1;
    df.test_count = counts[SPLIT_TEST] > 0 ? counts[SPLIT_TEST] : 1;
    CaptionData *data = NULL;
    if (caption_data_open(&data, &df, size, 1, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int r = scenes_write_folder(caption_data_scenes(data), out, counts, &err);
    caption_data_close(data);
    if (r) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    text_write_linef(stderr, "wrote %d scenes (%d train, %d valid, %d test) to %s", count,
                     counts[SPLIT_TRAIN], counts[SPLIT_VALID], counts[SPLIT_TEST], out);
    return 0;
}

// ---------------------------------------------------------------------------------------

static void overview(FILE *fp) {
    fprintf(fp,
            "usage: caption COMMAND [flags]   (caption COMMAND --help for its flags)\n"
            "  train    train a Show-Attend-Tell captioner (--data scenes by default)\n"
            "  eval     score a model on a split: BLEU-1..4, CIDEr-D, ROUGE-L, grounding, object F1\n"
            "  predict  caption every image of a folder, optionally with attention strips\n"
            "  scenes   write synthetic scenes as PNG files plus captions.tsv\n"
            "  features run a pretrained encoder once over a caption set: a feature cache\n"
            "  score    score a COCO results file against references as coco-caption does\n"
            "  report   write RUN/report.html: a run's configuration, curves, scores, images\n");
}

int main(int argc, char **argv) {
    static const char *const names[] = {"train", "eval", "predict", "scenes", "score", "report",
                                        "features"};
    int which;
    Error err;
    int r = args_subcommand(argc, argv, names, 7, &which, &err);
    if (r == ARGS_HELP) {
        if (args_reporting_process()) overview(stdout);
        return 0;
    }
    if (r == ARGS_ERROR) {
        if (args_reporting_process()) fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    if (which > 1 && train_dist_one_process_only("caption", names[which], TRAIN_DIST_RANKED)) return 2;
    switch (which) {
    case 0: return caption_train_main(argc - 1, argv + 1);
    case 1: return cmd_eval(argc - 1, argv + 1);
    case 2: return caption_predict_main(argc - 1, argv + 1);
    case 4: return cmd_score(argc - 1, argv + 1);
    case 5: return caption_report_main(argc - 1, argv + 1);
    case 6: return caption_features_main(argc - 1, argv + 1);
    default: return cmd_scenes(argc - 1, argv + 1);
    }
}

