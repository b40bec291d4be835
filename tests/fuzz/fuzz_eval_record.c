// fuzz_eval_record.c: libFuzzer target for the reader of `draw eval --per-image` files
// (cli/draw_eval_record.h: draw_eval_record_open), which an evaluation cut off reads to go
// on from its finished images.
//
// Returns 1 when the reader accepted the input, 0 when it refused it. Input: the file's
// bytes, read as the record of one fixed evaluation (FUZZ_RECORD_ID in
// tests/fuzz/eval_record_id.h: 5 images in batches of 2, K 3, seed 1; the seeds are records
// of it). Properties: a refusal has a one-line message naming the file and leaves every
// figure zero; an accepted file has whole batches done (0, 2, 4 or 5 images), finite
// figures for them and zeros after; saved again with
// draw_eval_record_save, it reads back to the same count and the same bits (what the
// reader accepts, the writer can write).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cli/draw_eval_record.h"
#include "tests/fuzz/eval_record_id.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_eval_record_one(const uint8_t *data, size_t size) {
    const char *path = fuzz_tmp_path("fuzz_eval_record.txt");
    fuzz_write_file(path, data, size);
    const DrawEvalIdentity id = FUZZ_RECORD_ID;
    DrawEvalRecord r;
    Error err = {{0}};
    const int ok = draw_eval_record_open(&r, path, &id, 1, &err) == 0;
    if (!ok) fuzz_require_error(&err, path);
    fuzz_require(!ok || r.done == 0 || r.done == 2 || r.done == 4 || r.done == 5,
                 "accepted %d images done: not whole batches of 2 of 5", r.done);
    for (int i = 0; i < id.images * 3; i++) {
        const double v = r.fig[i];
        fuzz_require(i < 3 * r.done ? isfinite(v) : v == 0.0, "figure %d is %g (done %d, %s)", i,
                     v, r.done, ok ? "accepted" : "refused");
    }
    if (ok) {
        DrawEvalRecord again;
        const char *copy = fuzz_tmp_path("fuzz_eval_record_again.txt");
        fuzz_require(draw_eval_record_open(&again, copy, &id, 0, &err) == 0, "%s", err.msg);
        memcpy(again.fig, r.fig, sizeof *r.fig * (size_t)id.images * 3);
        fuzz_require(draw_eval_record_save(&again, r.done, &err) == 0, "saving: %s", err.msg);
        draw_eval_record_free(&again);
        fuzz_require(draw_eval_record_open(&again, copy, &id, 1, &err) == 0,
                     "a saved record did not read back: %s", err.msg);
        fuzz_require(again.done == r.done &&
                         memcmp(again.fig, r.fig, sizeof *r.fig * (size_t)id.images * 3) == 0,
                     "a saved record read back to other figures");
        draw_eval_record_free(&again);
    }
    draw_eval_record_free(&r);
    return ok;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_eval_record_one(data, size);
    return 0;
}
#endif
