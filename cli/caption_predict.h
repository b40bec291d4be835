// caption_predict.h: `caption predict`, captions for a folder of images.
//
//   caption predict --model M --images DIR [--beam 3] [--attention-out DIR] [--results FILE]
//
// One line per image on stdout (NAME<TAB>CAPTION, both escaped as core/text_escape.h
// says), an attention strip per image with --attention-out (STEM.png, or NAME.png where
// two images' stems meet, as a.png and a.jpg do; DIR/strips.tsv lists NAME<TAB>STRIP),
// COCO results JSON with --results. A model trained on features runs its pretrained encoder on each image
// (cli/caption_features.h, CaptionAnnotator). A file that cannot be read is named on
// stderr, skipped, and makes the exit status 1.
#ifndef CLI_CAPTION_PREDICT_H
#define CLI_CAPTION_PREDICT_H

// argv[0] is "predict"; returns the exit status.
int caption_predict_main(int argc, char **argv);

#endif
