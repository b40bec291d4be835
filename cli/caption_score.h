// caption_score.h: `caption score`, the scores coco-caption gives a COCO results file, with
// no Python or Java.
//
//   caption score --refs REFS --results RESULTS [--object-f1] [--json]
//
// REFS: COCO captions JSON, of which only "annotations" [{image_id, caption}] is read, as
// coco-caption's evaluation reads it: "images" may lack "file_name" or be absent
// (caption_read_coco_references in datasets/captions_json.h; records it cannot use are
// skipped; the first skip and the count go to stderr as one warning line). RESULTS: a
// COCO results JSON, [{"image_id": N, "caption": "..."}, ...]. Both sides are tokenised
// as coco-caption does (seq/tokenizer.h) and scored with seq/metrics.h: BLEU-1..4,
// CIDEr-D, ROUGE-L, printed as a line, or with --json as one object with the keys of
// `caption eval --json` ("images", "bleu1".."bleu4", "cider", "rougeL").
// --object-f1 (captions of the synthetic scenes, datasets/scenes.h): also the object F1 of
// the results (seq/object_f1.h), each image's true objects being the colour+class objects
// its references name together (every caption of a scene names every object of it), with
// the keys of `caption eval --json` ("object_f1", "object_precision", "object_recall",
// "objects_named", "objects_true", "objects_right"); an error when no reference of the
// scored images names such an object.
//
// The images scored are those of RESULTS, as coco-caption's demo evaluates them
// (COCOEvalCap with params['image_id'] = cocoRes.getImgIds()): images of REFS without a
// result are left out, and stderr says how many. Errors (one line, "caption score: FILE:
// ...", exit status 1): a RESULTS file that is empty, not JSON, not an array of such
// objects, or an empty array; a result for an image with no reference caption in REFS
// (coco-caption's loadRes refuses it too); two results for one image (its scorers assert
// one caption per image); a caption that is not valid UTF-8, or longer than 4096 bytes
// (CAPTION_MAX_BYTES, the references' limit; coco-caption has none: a bound on the
// tokenizer's time whatever the text, seq/ptb_lexer.h).
// Differences from coco-caption, all rare in real caption files:
//   - the REFS reader skips a reference caption that is empty (or only white space), has a
//     control character or is longer than 4096 bytes (coco-caption scores it), and turns
//     tabs into spaces, which changes PTB's tokens only where a tab stands inside a
//     "2 1/2"-style fraction, a phone number or an <...> tag;
//   - coco-caption tokenises all captions of a side as lines of one file, and two PTB rules
//     look across a line end (seq/tokenizer.h); here each caption is tokenised alone.
// bench/reference/coco_caption_check.py runs coco-caption's scorers beside this command.
#ifndef CLI_CAPTION_SCORE_H
#define CLI_CAPTION_SCORE_H

// argv[0] is "score"; returns the exit status (0, 1 on bad input, 2 on bad flags).
int cmd_score(int argc, char **argv);

#endif
