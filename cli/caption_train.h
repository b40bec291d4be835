// caption_train.h: `caption train`, the Show-Attend-Tell captioner (models/sat.h) trained
// on the scenes or a caption set on disk (cli/caption_data.h), or on a feature cache of one
// (cli/caption_features.h), optionally fine-tuning a pretrained encoder's last stage
// (cli/caption_finetune.h).
//
// Files a run writes in OUT: model.safetensors (best on validation BLEU-4, the
// configuration and vocabulary in __metadata__; cli/caption_model.h), state.safetensors
// (the latest training state: parameters, Adam moments, step, the optimiser settings
// --batch, --lr, --lr-decay, --clip and --seed; what --resume continues from), log.csv and
// curves.png, and run.json (cli/run_info.h). Every file is written atomically.
// Under `mpirun -np N` (cli/train_dist.h) the steps and the validation split their work
// over the ranks and rank 0 alone writes; each image's dropout masks and hard-attention
// samples come from a stream of its own, seeded with (seed, step, its place in the batch),
// so N ranks of one thread compute what one process of N threads computes, bit for bit,
// and what one process of one thread computes up to float summation order.
#ifndef CLI_CAPTION_TRAIN_H
#define CLI_CAPTION_TRAIN_H

// argv[0] is "train". Returns the exit status: 0, 1 (a failure, printed) or 2 (bad flags).
int caption_train_main(int argc, char **argv);

#endif
