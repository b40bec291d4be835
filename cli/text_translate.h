// text_translate.h: `text translate` (issue 58): the encoder-decoder translator
// (models/translator.h) on the date task, the English-Spanish Bible verses or a pair file.
//
//   text translate train --out DIR [--data dates | bible-en-es | pairs:FILE]
//                        [--attention bahdanau | luong-dot | luong-general | luong-concat |
//                         local-m | local-p | none] [--resume] [--json] ...
//
// train: teacher forcing, Adam, the global gradient norm clipped (--clip, default 5), on
// cli/train_run (the budget, cadence, progress, log.csv, loss.png, run.json; --resume
// continues bit for bit). Data, vocabularies and checkpoints: cli/text_translate_state.h.
// No dropout or label smoothing yet (the translator's forward has none).
#ifndef CLI_TEXT_TRANSLATE_H
#define CLI_TEXT_TRANSLATE_H

int text_translate_main(int argc, char **argv);

#endif
