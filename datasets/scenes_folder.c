// scenes_folder.c: see scenes_folder.h.
#include "datasets/scenes_folder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/text_escape.h"
#include "vision/image.h"
#include "vision/png.h"

void scenes_folder_counts(int total, int counts[SPLIT_COUNT]) {
    CHECK(total >= 0, "total = %d", total);
    counts[SPLIT_VALID] = total / 10;
    counts[SPLIT_TEST] = total / 10;
    counts[SPLIT_TRAIN] = total - counts[SPLIT_VALID] - counts[SPLIT_TEST];
}

int scenes_write_folder(const Scenes *s, const char *dir, const int counts[SPLIT_COUNT],
                        Error *err) {
    int total = 0;
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        int have = scenes_count(s, (Split)sp);
        if (counts[sp] < 0 || counts[sp] > have)
            return error_set(err, "%s: %d %s scenes asked for, the dataset has %d", dir, counts[sp],
                             split_name((Split)sp), have);
        total += counts[sp];
    }
    if (total == 0) return error_set(err, "%s: no scenes to write (count 0)", dir);
    if (make_dirs(dir, err)) return -1;
    size_t dlen = strlen(dir);
    const char *sep = (dlen > 0 && dir[dlen - 1] == '/') ? "" : "/";
    size_t plen = dlen + 64;
    char *path = xmalloc(plen);
    snprintf(path, plen, "%s%s%s", dir, sep, SCENES_FOLDER_TSV);
    AtomicFile tsv;
    if (atomic_open(&tsv, path, err)) {
        free(path);
        return -1;
    }
    int side = s->cfg.size;
    float *chw = xmalloc((size_t)3 * side * side * sizeof *chw);
    unsigned char *hwc = xmalloc((size_t)3 * side * side);
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        for (int i = 0; i < counts[sp]; i++) {
            SceneInfo info;
            scenes_render(chw, &info, s, (Split)sp, i);
            Image img = {3, side, side, chw};  // a view: not freed
            image_to_u8(hwc, &img);
            char name[48];
            snprintf(name, sizeof name, "%s_%06d.png", split_name((Split)sp), i);
            snprintf(path, plen, "%s%s%s", dir, sep, name);
            if (write_png_u8(path, hwc, side, side, 3, err)) goto fail;
            for (int k = 0; k < SCENES_CAPTIONS; k++) {  // fields escaped (core/text_escape.h)
                text_write_field(tsv.fp, name);
                fputc('\t', tsv.fp);
                text_write_field(tsv.fp, info.captions[k]);
                fprintf(tsv.fp, "\t%s\n", split_name((Split)sp));
            }
        }
    }
    free(chw);
    free(hwc);
    free(path);
    return atomic_commit(&tsv, err);
fail:
    atomic_abort(&tsv);
    free(chw);
    free(hwc);
    free(path);
    return -1;
}
