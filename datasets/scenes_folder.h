// scenes_folder.h: writes synthetic scenes (datasets/scenes.h) to a folder of PNG files
// plus a captions TSV, the input of `caption train --data tsv:DIR/captions.tsv:DIR` and
// of `caption predict --images DIR` (`caption scenes --out DIR --count N --seed S`).
//
// Layout: DIR/SPLIT_NNNNNN.png (SPLIT train | valid | test, NNNNNN the scene index
// within its split, 6 digits), 8-bit RGB, size x size; DIR/captions.tsv with one line
// per caption, "FILE<TAB>CAPTION<TAB>SPLIT", the SCENES_CAPTIONS captions of each scene
// in order, scenes in split order then index order. The folder is created (mkdir -p);
// every file is written atomically (core/fileio.h). Scene i of a split is the same
// scene the in-memory dataset renders (a pure function of seed, split, i).
// Cost: one PNG of a 64 x 64 scene is about 5-10 KB.
#ifndef DATASETS_SCENES_FOLDER_H
#define DATASETS_SCENES_FOLDER_H

#include "core/error.h"
#include "datasets/scenes.h"
#include "datasets/split.h"

#define SCENES_FOLDER_TSV "captions.tsv"

// counts[split] scenes of each split (each 0 <= counts <= scenes_count(s, split), at
// least one in all). Fails naming the file that could not be written.
int scenes_write_folder(const Scenes *s, const char *dir, const int counts[SPLIT_COUNT],
                        Error *err);
// The split of a --count N request: 80 % train, 10 % valid, 10 % test (rounded down,
// the rest to train; N < 10 puts everything in train).
void scenes_folder_counts(int total, int counts[SPLIT_COUNT]);

#endif
