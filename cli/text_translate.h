// text_translate.h: `text translate` (issue 58): the encoder-decoder translator
// (models/translator.h) on the date task, the English-Spanish Bible verses or a pair file.
//
//   text translate train --out DIR [--data dates | bible-en-es | pairs:FILE]
//                        [--attention bahdanau | luong-dot | luong-general | luong-concat |
//                         local-m | local-p | none] [--input-feeding] [--dropout P]
//                        [--label-smoothing EPS] [--resume] [--json] ...
//   text translate eval  --model DIR/model.safetensors [--split test] [--beam K]
//                        [--length-alpha X] [--json]
//   text translate translate --model M [--beam K] [--input FILE]   (standard input without
//                        --input)
//
// train: teacher forcing, Adam, the global gradient norm clipped (--clip, default 5), on
// cli/train_run (the budget, cadence, progress, log.csv, loss.png, run.json; --resume
// continues bit for bit). Data, vocabularies and checkpoints: cli/text_translate_state.h.
// --input-feeding, --dropout and --label-smoothing (models/translator.h) ride in the
// checkpoint; a step's dropout masks are drawn from (seed, step).
// eval: greedy decoding (--beam 1: models/translator.h translator_greedy) or beam search
// (models/translator_beam.h, scored by log p / length^--length-alpha): exact match for every
// task, also by source length (buckets of 10 tokens: 1-10, 11-20, ...); for the date task alignment accuracy (the share of target digits whose attention
// peak, over the source characters, falls in their source span: datasets/dates.h; null
// without attention); for pairs corpus BLEU and chrF (seq/sacrebleu.h, sacreBLEU's
// defaults: 13a tokens; chrF's character 6-grams, beta 2) against the targets as written.
// --json: {"split", "pairs", "attention", "exact_match", "alignment_accuracy", "bleu",
// "chrf", "model", "beam", "length_alpha", "by_source_length": [{"from", "to", "pairs",
// "exact_match"}, ...] (the buckets that hold pairs)}; exact match and alignment accuracy
// are shares (0..1), BLEU and chrF 0..100, null where they do not apply.
// translate: each line (a trailing CR dropped) decoded (--beam as eval's), one output line each
// (a blank line for a blank line), flushed as it comes; a line that cannot be encoded (a
// character the date task does not write, a NUL byte) stops with one line naming the input and the line, the
// translations before it already printed.
#ifndef CLI_TEXT_TRANSLATE_H
#define CLI_TEXT_TRANSLATE_H

int text_translate_main(int argc, char **argv);
int text_translate_eval_main(int argc, char **argv);
int text_translate_translate_main(int argc, char **argv);

#endif
