// text_translate_show.h: `text translate show`: the alignments a translator makes.
//
//   text translate show --model RUN --out DIR [--split test] [--data SPEC] [--count 20]
//   text translate show --model RUN --out DIR --input FILE|-
//
// Decodes greedily (as `eval`) every sentence of a split of the model's data (or of --data,
// another spec of the same kind: a pair file or bible-en-es for a BPE model), or each
// non-blank line of --input (- for standard input), and writes for the first --count, the
// wrong outputs first (those not equal to their reference, in data order, then the right
// ones; --input's in input order):
//   DIR/align_NNN.png     the sentence's alignment matrix (vision/alignment.h, after
//                         Bahdanau et al. 2015's figure 3): the source tokens across the top,
//                         the output tokens and <end> down the left, each cell grey 1 - the
//                         weight (white 0, black 1); so the grid has output length + 1 rows
//                         and source length columns. Tokens: the date task's characters
//                         (a space as '_'); BPE pieces, a piece inside a word followed by
//                         "@@" (Sennrich et al.'s notation), characters outside ASCII as '?'.
//                         NNN counts from 001 in page order. No pictures for --attention
//                         none (one fixed context, no alignment).
//   DIR/alignments.html   each shown sentence: its source, reference and output (the text
//                         as it is, UTF-8), right or wrong, and its picture.
// --model is a run folder (its model.safetensors) or a checkpoint.
#ifndef CLI_TEXT_TRANSLATE_SHOW_H
#define CLI_TEXT_TRANSLATE_SHOW_H

// argv[0] is "show"; returns the exit status.
int text_translate_show_main(int argc, char **argv);

#endif
