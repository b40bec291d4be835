// captions_json.h: the caption sets held in JSON, read into a CaptionSet with the contract
// of datasets/captions.h (which describes both formats, the held-out hash and the nesting
// limit): COCO captions JSON and Karpathy's split JSON (dataset_*.json).
// caption_set_read reaches them through a spec string; these are for a caller that knows
// the format. opts may be NULL for the defaults; on failure set is left empty.
#ifndef DATASETS_CAPTIONS_JSON_H
#define DATASETS_CAPTIONS_JSON_H

#include "core/error.h"
#include "datasets/captions.h"

int caption_read_coco(CaptionSet *set, const char *json_path, const char *images_dir,
                      const CaptionOptions *opts, Error *err);
// The references of a COCO captions JSON as coco-caption's evaluation reads them: only
// "annotations" [{image_id, caption}], grouped by image_id in first-seen order; "images"
// may lack "file_name" or be absent, and is not read. Each image's id, path and
// numeric_id are its image_id (no image file is looked for); every split is test.
int caption_read_coco_references(CaptionSet *set, const char *json_path,
                                 const CaptionOptions *opts, Error *err);
int caption_read_karpathy(CaptionSet *set, const char *json_path, const char *images_dir,
                          const CaptionOptions *opts, Error *err);

#endif
