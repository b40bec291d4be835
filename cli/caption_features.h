// caption_features.h: bin/caption on a frozen pretrained encoder (vision/encoder.h).
//
//   caption features --encoder ARCH:FILE --data SPEC --out FEATURES [--dtype f16|f32]
//                    [--image-size N] [--threads N] [--batch N]
// runs the encoder once over every image of every split of a caption set on disk and
// writes the feature cache (datasets/featcache.h); an interrupted run continues where it
// stopped when started again with the same arguments.
//
// A model trained on a cache (caption train --features) records the encoder in its
// checkpoint (EncoderRecord below, in __metadata__): eval and train --resume refuse a
// cache made by another encoder, weights, preprocessing or image size, and predict runs
// that encoder itself on new images (CaptionAnnotator).
#ifndef CLI_CAPTION_FEATURES_H
#define CLI_CAPTION_FEATURES_H

#include "cli/caption_data.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "datasets/featcache.h"
#include "models/sat.h"
#include "vision/encoder.h"

int caption_features_main(int argc, char **argv);

// The encoder a model's annotations come from ("" spec: the model's own CNN).
typedef struct {
    char spec[64];          // canonical, e.g. "vgg19"
    char sha256[SHA256_HEX_CHARS + 1];
    char weights[1024];     // the weights file as named when the cache was made
    char preprocess[512];
    int image_size;
    char image_size_text[16];
    char finetune[16];      // caption train --fine-tune: the stage trained ("" for none;
    char finetune_lr[32];   // cli/caption_finetune.h), and its learning rate
} EncoderRecord;

void encoder_record_from_cache(EncoderRecord *r, const FeatCache *c);
// From a checkpoint's metadata (header only); spec "" when it records none.
int encoder_record_read(EncoderRecord *r, const char *model_path, Error *err);
// The checkpoint metadata entries for r (5, or 7 with fine-tuning, pointing into r); 0 when
// spec is "".
int encoder_record_meta(const EncoderRecord *r, SafetensorsMeta *meta);
// One line naming the first field where the other record differs from the model's. other
// is a feature cache's (is_cache: "CACHE: made with another encoder weights (SHA-256) than
// MODEL (cache: '...', model: '...')") or that of encoder weights given to run the model
// (predict, eval --encoder: "FILE: another encoder weights (SHA-256) than MODEL was trained
// on (these weights: '...', the model's: '...')").
int encoder_record_check(const EncoderRecord *model, const EncoderRecord *other,
                         const char *model_path, const char *other_path, int is_cache, Error *err);

// caption train with data d: with --features, cfg becomes a decoder-only configuration
// (feat_L, feat_D and image_size from the cache) and rec the cache's encoder; on --resume
// (saved: the checkpoint's configuration, saved_path its file) the checkpoint must record
// the same encoder and annotation shape. Without --features a checkpoint trained on
// features is refused (it has no CNN). One line on failure.
int caption_features_setup_train(SatConfig *cfg, EncoderRecord *rec, const CaptionData *d,
                                 const char *features_path, const SatConfig *saved,
                                 const char *saved_path, Error *err);
// caption eval: the model m (from model_path) against the data's cache, as above. A model
// that fine-tuned its encoder (cli/caption_finetune.h) needs no cache and refuses one.
int caption_features_check_eval(const SatConfig *m, const char *model_path, const CaptionData *d,
                                const char *features_path, Error *err);

// caption predict on a decoder-only model: the recorded encoder (or encoder_arg,
// "ARCH:FILE", whose weights must hash to the recorded SHA-256) and its workspace.
typedef struct {
    Encoder *enc;
    EncoderWorkspace ws;
    EncoderRecord rec;
    int S, L, D, resize;
    float *input;  // (3, S, S)
} CaptionAnnotator;

// "ARCH:FILE" (--encoder) into its parts: arch (64 bytes), file pointing into arg.
int caption_encoder_arg_split(char *arch, const char **file, const char *arg, Error *err);

// A model that fine-tuned its encoder's last stage gets that stage from its checkpoint and
// its images preprocessed as in its training (CAPTION_FINETUNE_PREPROCESS).
int caption_annotator_open(CaptionAnnotator *a, const SatConfig *cfg, const char *model_path,
                           const char *encoder_arg, Error *err);
// annot (L, D) of the image file at path; "PATH: reason" when it cannot be read.
int caption_annotator_run(CaptionAnnotator *a, float *annot, const char *path, Error *err);
void caption_annotator_close(CaptionAnnotator *a);

#endif
