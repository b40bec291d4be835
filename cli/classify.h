// classify.h: `draw classify`, the recurrent attention classifier of DRAW's first experiment
// (models/glimpse.h) on cluttered translated MNIST (datasets/cluttered.h):
//
//   draw classify train   --out DIR [--T 8] [--read 12] [--hidden 256] [--no-attention]
//                         [--steps N | --epochs N | --minutes M] [--resume] [--json]
//   draw classify eval    --model DIR/model.safetensors [--split test] [--json]
//   draw classify show    --model M --out DIR [--count 8]   (glimpses.png: the read windows
//                         drawn on each image, step by step)
//   draw classify export  --out DIR [--split test] [--count N]  (PNGs and labels.txt)
//
// Checkpoints, resume, progress, log.csv and --json follow `draw train` (cli/train_run.h).
// Determinism: step s trains on the images of positions [s B, s B + B) of its epoch's
// order (a permutation of the training digits shuffled by a stream seeded with (seed,
// epoch)); the image at position i of epoch e is cluttered image e n + perm[i] of the
// training split with the clutter seed derived from the run's seed, i.e. every digit once
// an epoch, in fresh clutter at a fresh place. --resume continues bit for bit.
#ifndef CLI_CLASSIFY_H
#define CLI_CLASSIFY_H

// argv[0] is "classify"; returns the exit status.
int classify_main(int argc, char **argv);

#endif
