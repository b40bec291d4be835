// text_translate_score.h: `text translate score`: sacreBLEU's figures for a split, with
// their uncertainty.
//
//   text translate score --model RUN [--split test] [--hyps FILE] [--write-hyps FILE]
//                        [--baseline-hyps FILE] [--json]
//
// The split's outputs (greedy decoding, as `eval`, or --hyps: one line per pair of the
// split, in its order, from any decoder) against its references, scored as sacreBLEU 2.x
// scores them (seq/sacrebleu.h): corpus BLEU (13a) and chrF, each with the 95 %
// bootstrap interval over the sentences (--samples resamples, sacreBLEU's 1,000 by default,
// seed --seed), and BLEU by the source's length in words (Bahdanau et al. 2015's figure 2
// buckets: 0-10, 11-20, 21-30, 31-40, 41-50, 51+). --json prints one object:
//   {"split", "pairs", "attention", "decoding" ("greedy" or "hyps"), "bleu", "bleu_mean",
//    "bleu_ci", "chrf", "chrf_mean", "chrf_ci", "samples",
//    "by_length": [{"lo", "hi" (-1: no bound), "sentences", "bleu"}, ...], "model"}
// where a figure reads "bleu (bleu_mean +- bleu_ci)" as sacreBLEU prints it. --write-hyps
// saves the outputs scored, one line a pair, so that another call can pair with them without
// decoding again. --baseline-hyps (another system's outputs on the split) adds sacreBLEU's
// paired bootstrap (--paired-bs) against that baseline on the same resamples: for M in bleu,
// chrf, "baseline_M" (its score), "M_diff" (this system's minus the baseline's), "M_diff_mean",
// "M_diff_lower", "M_diff_upper", "M_diff_ci" (the 95 % interval of the resampled
// differences, seq/sacrebleu.h) and "M_p" (sacreBLEU's two-sided p-value), after
// "by_length", with "baseline_hyps" (the file).
#ifndef CLI_TEXT_TRANSLATE_SCORE_H
#define CLI_TEXT_TRANSLATE_SCORE_H

// argv[0] is "score"; returns the exit status.
int text_translate_score_main(int argc, char **argv);

#endif
