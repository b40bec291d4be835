// report_translate.h: `text translate report --model RUN [--out FILE]`: one page for a run
// of `text translate train` (RUN/report.html unless --out names another page in RUN):
//   - the headline: the attention, the test figures, the training time and throughput
//     (RUN/run.json);
//   - the results: RUN/eval.json (`text translate eval --model RUN/model.safetensors
//     --json > RUN/eval.json`: exact match, alignment accuracy for dates, BLEU and chrF)
//     and RUN/score.json (`text translate score --model RUN --json > RUN/score.json`:
//     BLEU and chrF with their 95 % bootstrap intervals, and BLEU by source length);
//   - the loss curve RUN/loss.png (text translate train writes it);
//   - the alignments: the first pictures of RUN/show (`text translate show --model RUN
//     --out RUN/show`) and a link to its page;
//   - the model and training settings from the checkpoint's metadata;
//   - the run's record (run.json: command lines, commit, machine).
// A missing input becomes a note naming the command that makes it; the page links only
// files under RUN. argv[0] is "report".
#ifndef CLI_REPORT_TRANSLATE_H
#define CLI_REPORT_TRANSLATE_H

int text_translate_report_main(int argc, char **argv);

#endif
