// report_text.h: `text classify report RUN`: RUN/report.html, one page for a run of
// `text classify train`:
//   - the headline: the pooling, the validation accuracy (RUN/eval.json, written by
//     `text classify eval --model RUN/model.safetensors --json > RUN/eval.json`), the
//     training time and throughput (RUN/run.json);
//   - the curves of log.csv: accuracy (training windows and validation) and loss;
//   - the words the model reads: RUN/show/attention.png with a link to attention.html
//     (`text classify show --model RUN/model.safetensors --out RUN/show`);
//   - the model and training settings from the checkpoint's metadata;
//   - the run's record (run.json: command lines, commit, machine).
// A missing input becomes a note naming the command that makes it. argv[0] is "report".
#ifndef CLI_REPORT_TEXT_H
#define CLI_REPORT_TEXT_H

int text_report_main(int argc, char **argv);

#endif
