// classify_tools.h: `draw classify eval | show | export` (cli/classify.h). Each takes the
// subcommand's argv (argv[0] is its name) and returns the exit status.
#ifndef CLI_CLASSIFY_TOOLS_H
#define CLI_CLASSIFY_TOOLS_H

// The error rate (and mean cross-entropy) on the test split's 10,000 cluttered images (or
// the validation split's 5,000, or the first --limit), clutter seed CLUTTER_TEST_SEED.
int classify_eval_main(int argc, char **argv);
// OUT/glimpses.png: for the first --count test images, one row each: the image with the
// read window of each step drawn on it (green: the box through the outer filter centres),
// captioned with the step, then the prediction; OUT/patches.png: the N x N glimpses the
// LSTM read, one row per image.
int classify_show_main(int argc, char **argv);
// DIR/00000.png ... and DIR/labels.txt: the first --count images of a split.
int classify_export_main(int argc, char **argv);

#endif
