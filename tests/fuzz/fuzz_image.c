// fuzz_image.c: libFuzzer target for the image loader, through image_load_memory
// (vision/image.h), the function image_load and so the CLIs end in.
//
// Returns 1 when the loader accepted the input, 0 when it refused it.
// Input: one byte choosing the channel request (0 keep, 1 grey, 3 RGB), then the file's
// bytes. Properties: a failure has a one-line message naming the input; a success has
// 1 or 3 channels as asked, sides within IMAGE_MAX_SIDE, pixels within IMAGE_MAX_PIXELS,
// and every value in [0, 1] (8-bit sources).
// The fuzz build compiles stb_image (the same Debian header) with the sanitizers and
// coverage, so the decoder itself is explored too (tests/fuzz/stb_image_impl.c); there,
// stb_image refuses sides over 1024 so that a 500-byte file legally claiming 6000 x 6000
// (seconds to decode under the sanitizers, nothing new to explore) does not stall the
// fuzzer. The loader's own limits are checked by tests/test_fuzz_regressions.c.
#include <stdint.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_util.h"
#include "vision/image.h"

int fuzz_image_one(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int channel_choice[3] = {0, 1, 3};
    int channels = channel_choice[data[0] % 3];
    Image img;
    Error err = {{0}};
    int rc = image_load_memory(data + 1, size - 1, "fuzz.img", &img, channels, &err);
    if (rc != 0) {
        fuzz_require(rc == -1, "image_load_memory returned %d", rc);
        fuzz_require_error(&err, "fuzz.img");
        fuzz_require(img.data == NULL && img.c == 0, "failed load left an image behind");
        return 0;
    }
    fuzz_require(img.c == 1 || img.c == 3, "%d channels", img.c);
    fuzz_require(channels == 0 || img.c == channels, "asked %d channels, got %d", channels, img.c);
    fuzz_require(img.h >= 1 && img.w >= 1 && img.h <= IMAGE_MAX_SIDE && img.w <= IMAGE_MAX_SIDE &&
                     (long)img.h * img.w <= IMAGE_MAX_PIXELS,
                 "size %d x %d out of bounds", img.h, img.w);
    size_t n = (size_t)img.c * img.h * img.w;
    for (size_t i = 0; i < n; i++)
        fuzz_require(img.data[i] >= 0.0f && img.data[i] <= 1.0f, "value %g at %zu", img.data[i], i);
    image_free(&img);
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_image_one(data, size);
    return 0;
}
#endif
