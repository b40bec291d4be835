// text_show.h: `text classify show`: the words a model reads.
//
//   text classify show --model M --out DIR [--data SPEC] [--split valid] [--count 40]
//
// Runs the model on a split (as `eval` picks it) and writes, for the first --count
// sentences with the misclassified ones first (most confident mistakes first, then the
// right ones in data order):
//   DIR/attention.html  each sentence's words (as the tokenizer sees them: lower case,
//                       punctuation gone) shaded by their pooling weight alpha, scaled to
//                       the sentence's largest; the label, the prediction and its
//                       probability; and the share of the weight that fell on the padding
//                       (an unmasked pooling, as the demo's, gives the padding weight too)
//   DIR/attention.png   the same rows drawn with the built-in font (characters outside
//                       ASCII as '?'), each word on a box of the heat colour of its weight
// The weights are models/textclass.h's alpha: the attention's, 1 / length for mean and 1 on
// the last word for last.
#ifndef CLI_TEXT_SHOW_H
#define CLI_TEXT_SHOW_H

// argv[0] is "show"; returns the exit status.
int text_show_main(int argc, char **argv);

#endif
