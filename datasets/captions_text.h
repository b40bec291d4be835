// captions_text.h: the caption sets held in text files, read into a CaptionSet with the
// contract of datasets/captions.h (which describes both formats and the held-out hash):
// Flickr8k (its token file and split lists) and TSV (file<TAB>caption[<TAB>split]).
// caption_set_read reaches them through a spec string; these are for a caller that knows
// the format. opts may be NULL for the defaults; on failure set is left empty.
#ifndef DATASETS_CAPTIONS_TEXT_H
#define DATASETS_CAPTIONS_TEXT_H

#include "core/error.h"
#include "datasets/captions.h"

int caption_read_flickr8k(CaptionSet *set, const char *dir, const CaptionOptions *opts, Error *err);
int caption_read_tsv(CaptionSet *set, const char *tsv_path, const char *images_dir,
                     const CaptionOptions *opts, Error *err);

#endif
