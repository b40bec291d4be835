// text_classify.h: `text classify`, the sentence classifier (models/textclass.h) on
// labelled sentences (cli/text_data.h), by default the Keras attention demo's recipe:
//
//   text classify train   --out DIR [--data sentiment | sentiment:NAME | FILE] [--pool keras]
//                         [--steps N | --epochs N | --minutes M] [--resume | --force] [--json]
//   text classify eval    --model DIR/model.safetensors [--data SPEC] [--split valid] [--json]
//   text classify predict --model M [--input FILE]   (standard input without --input)
//   text classify show    --model M --out DIR [--split valid] [--count 40]
//                         (attention.html, attention.png: cli/text_show.h)
//   text classify report  RUN      (RUN/report.html: cli/report_text.h)
//
// Training writes DIR/model.safetensors (cli/text_checkpoint.h), log.csv, loss.png and
// run.json, shows the progress line, and prints its final figures as one JSON object with
// --json. The demo's defaults: Keras tokenizer fitted on every sentence, post-padded to 32
// (truncating pre), embedding 32 with L2 1e-3, LSTM 100 with dropout 0.3 and recurrent
// dropout 0.2, the keras attention pooling, one sigmoid output, binary cross-entropy, Adam
// (lr 1e-3, betas 0.9 / 0.999, eps 1e-7), batch 100, 10 epochs, the last 20 % validation.
// Determinism: step s trains on positions [i B, i B + B) (i = s mod steps an epoch) of its
// epoch's order, shuffled by a stream seeded with (seed, epoch); its dropout masks come
// from a stream seeded with (seed, s). --resume continues bit for bit.
#ifndef CLI_TEXT_CLASSIFY_H
#define CLI_TEXT_CLASSIFY_H

// argv[0] is "classify"; returns the exit status.
int text_classify_main(int argc, char **argv);

#endif
