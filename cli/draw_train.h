// draw_train.h: `draw train`, DRAW (models/draw.h) trained on MNIST-family IDX data,
// two-digit MNIST or the colour scenes (cli/draw_data.h) with Adam, writing
// OUT/model.safetensors (cli/draw_checkpoint.h), OUT/log.csv, OUT/loss.png and
// OUT/run.json.
//
// Determinism: step s (0-based) draws its batch from the epoch's permutation, which is
// shuffled by a stream seeded with (seed, epoch), and each image's binarisation and noise
// from streams of its own, seeded with (seed, s, its place in the batch). A run is
// therefore a pure function of (seed, step, weights, Adam moments), and --resume from a
// checkpoint gives the same weights, bit for bit, as a run that was never interrupted
// (same machine and thread count).
// Under `mpirun -np N` (cli/train_dist.h) every batch is split over the ranks; a rank
// draws only its images' randomness, the same that one process draws for them, so N
// ranks of one thread compute what one process of N threads computes, bit for bit, and a
// checkpoint of N ranks resumes with any other number.
#ifndef CLI_DRAW_TRAIN_H
#define CLI_DRAW_TRAIN_H

// argv[0] is "train". Returns the exit status: 0, 1 (a failure, printed) or 2 (bad flags).
int draw_train_main(int argc, char **argv);

#endif
