// report_caption.h: `caption report RUN`, one self-contained page about a captioner run:
// RUN/report.html, with its curves in RUN/report_files/.
//
// It reads, all under RUN (names relative to RUN can be changed with flags):
//   model.safetensors   the configuration, vocabulary size, parameters, best step (required)
//   run.json            the command line, commit, date, machine, wall time (cli/run_info.h)
//   log.csv             training loss, validation BLEU-4 and grounding per step
//   eval.json           `caption eval --json` of the test split: the metrics table (on the
//                       scenes with grounding and object F1, cli/caption_evaluate.h)
//   per_image.json      `caption eval --per-image`: captions, references, per-image scores
//   strips/             `caption eval --attention-out`: attention strips (cli/caption_per_image.h)
// and writes report.html linking only files under RUN. The page shows the test metrics, the
// curves, a grid of test images (first K of the split, sortable by per-image score with a
// few lines of plain JavaScript), the best and worst images by CIDEr-D, the configuration,
// the data and the run. Missing inputs other than the model become notes naming the
// command that makes them. A file that exists but is not what it should be fails the
// command with "PATH: reason", and the previous report stays.
#ifndef CLI_REPORT_CAPTION_H
#define CLI_REPORT_CAPTION_H

// argv[0] is "report"; RUN is the first argument or --run.
int caption_report_main(int argc, char **argv);

#endif
