#include "cli/draw_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "datasets/mnist2.h"
#include "datasets/scenes.h"

int draw_data_binarizable(const char *data) { return !data || strcmp(data, "scenes") != 0; }

static int load_mnist2(ImageSet *out[SPLIT_COUNT], const char *root, Error *err) {
    Mnist2 m;
    if (mnist2_open(&m, root, MNIST2_DEFAULT_SEED, err)) return -1;
    for (int s = 0; s < SPLIT_COUNT; s++)
        if (out[s]) mnist2_load(out[s], &m, (Split)s, 0);
    mnist2_close(&m);
    return 0;
}

static int load_scenes(ImageSet *out[SPLIT_COUNT], const char *root, Error *err) {
    ScenesConfig cfg;
    scenes_config_default(&cfg);
    cfg.root = root;
    cfg.counts[SPLIT_TRAIN] = DRAW_SCENES_TRAIN;
    Scenes sc;
    if (scenes_open(&sc, &cfg, err)) return -1;
    const int S = cfg.size, dim = 3 * S * S;
    float *chw = xmalloc(sizeof(float) * dim);
    for (int s = 0; s < SPLIT_COUNT; s++) {
        if (!out[s]) continue;
        int n = scenes_count(&sc, (Split)s);
        imageset_alloc(out[s], n, 3, S, S, (Split)s, 0, "scenes");
        for (int i = 0; i < n; i++) {
            scenes_render(chw, NULL, &sc, (Split)s, i);
            uint8_t *px = out[s]->pixels + (size_t)i * dim;
            for (int k = 0; k < dim; k++) {
                float v = chw[k] < 0.0f ? 0.0f : chw[k] > 1.0f ? 1.0f : chw[k];
                px[k] = (uint8_t)lrintf(v * 255.0f);
            }
        }
        imageset_finish(out[s]);
    }
    free(chw);
    scenes_close(&sc);
    return 0;
}

int draw_data_load_splits(ImageSet *train, ImageSet *valid, ImageSet *test, const char *data,
                          const char *root, Error *err) {
    ImageSet *out[SPLIT_COUNT] = {train, valid, test};
    for (int s = 0; s < SPLIT_COUNT; s++)
        if (out[s]) memset(out[s], 0, sizeof *out[s]);
    if (data && !strcmp(data, "mnist2")) return load_mnist2(out, root, err);
    if (data && !strcmp(data, "scenes")) return load_scenes(out, root, err);
    return mnist_load_splits(train, valid, test, data, root, err);
}

int draw_data_load(ImageSet *set, const char *data, const char *root, Split split, Error *err) {
    return draw_data_load_splits(split == SPLIT_TRAIN ? set : NULL, split == SPLIT_VALID ? set : NULL,
                                 split == SPLIT_TEST ? set : NULL, data, root, err);
}
