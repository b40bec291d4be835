// report_draw.h: `draw report RUN`, one self-contained page about a DRAW run:
// RUN/report.html, with its curve in RUN/report_files/.
//
// It reads, all under RUN (names relative to RUN can be changed with flags):
//   model.safetensors   the configuration and training settings (required)
//   run.json            the command line, commit, date, machine, wall time (cli/run_info.h)
//   log.csv             training and validation bound per step
//   eval.json           `draw eval --json --samples K` of the test split
//   samples/            `draw generate --show-attention --out RUN/samples`: final.png, draw.gif
//   reconstructions/    `draw reconstruct --out RUN/reconstructions`: input.png, final.png,
//                       draw.gif with the read (green) and write (red) windows
//   film/               `draw generate --count 1 --show-attention --out RUN/film`: one
//                       sample's step_NN.png frames, shown in a row
// and writes report.html linking only files under RUN. The test bound stands beside the
// paper's numbers (Gregor et al. 2015). Missing inputs other than the model become notes
// naming the command that makes them; a file that exists but is not what it should be
// fails the command with "PATH: reason", and the previous report stays.
#ifndef CLI_REPORT_DRAW_H
#define CLI_REPORT_DRAW_H

// argv[0] is "report"; RUN is the first argument or --run.
int draw_report_main(int argc, char **argv);

#endif
