// fuzz_encoder.c: libFuzzer target for the encoder weights loader (vision/encoder.h,
// encoder_load), which reads a safetensors file by torchvision's names and folds batch norm.
//
// Returns 1 when the loader accepted the input, 0 when it refused it.
// Input: one byte choosing the architecture (FUZZ_ENCODER_SPECS below, modulo their count),
// then the weights file's bytes (written to a temporary file: encoder_load reads a path).
// Properties: a failure has a one-line message starting with the path and leaves no encoder;
// a success has the asked architecture, a feature size D >= 1, parameters, a 64-digit
// lower-case hex SHA-256, a one-line description, and the grid side the header documents
// for 32 x 32 images (VGG: S / 16, ResNet: ceil(S / 32) or ceil(S / 16) at layer3); when the
// network is small (at most 2^16 parameters) one 32 x 32 image goes through the plain-loop
// forward pass, so AddressSanitizer checks that the loaded shapes agree with the layers.
// Seeds (tests/fuzz/make_seeds.c) are width-1 networks: whole files, ~3-20 KB.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "tests/fuzz/fuzz_util.h"
#include "vision/encoder.h"

static const char *const FUZZ_ENCODER_SPECS[] = {"vgg16",    "vgg19",           "resnet18",
                                                 "resnet18@layer3", "resnet34", "resnet50@layer3",
                                                 "resnet50", "resnet101@layer3"};
#define FUZZ_ENCODER_N_SPECS ((int)(sizeof FUZZ_ENCODER_SPECS / sizeof FUZZ_ENCODER_SPECS[0]))

static void fuzz_encoder_check_loaded(const Encoder *enc, const char *spec_text) {
    EncoderSpec want;
    Error err = {{0}};
    fuzz_require(encoder_spec_parse(&want, spec_text, &err) == 0, "spec %s", spec_text);
    const EncoderSpec *got = encoder_spec(enc);
    fuzz_require(got->arch == want.arch && got->cut == want.cut, "loaded another architecture");
    const int D = encoder_dim(enc);
    fuzz_require(D >= 1 && D <= 65536, "D = %d", D);
    const size_t params = encoder_param_count(enc);
    fuzz_require(params >= 1, "no parameters");
    const char *sha = encoder_weights_sha256(enc);
    fuzz_require(strlen(sha) == 64 && strspn(sha, "0123456789abcdef") == 64, "sha256 '%s'", sha);
    const char *desc = encoder_description(enc);
    fuzz_require(desc[0] && !strchr(desc, '\n'), "description '%s'", desc);
    const int S = 32;
    const int vgg = want.arch == ENCODER_VGG16 || want.arch == ENCODER_VGG19;
    const int G = encoder_grid_size(enc, S);
    const int want_G = vgg ? S / 16 : want.cut == 3 ? (S + 15) / 16 : (S + 31) / 32;
    fuzz_require(G == want_G, "grid %d for %d px, expected %d", G, S, want_G);
    if (params > (1u << 16)) return;
    float *image = xmalloc(3 * (size_t)S * S * sizeof(float));
    for (int i = 0; i < 3 * S * S; i++) image[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    float *annot = xmalloc((size_t)G * G * D * sizeof(float));
    encoder_forward_ref(enc, annot, image, 1, S);
    volatile float acc = 0.0f;  // touch every output: AddressSanitizer checks the bounds
    for (size_t i = 0; i < (size_t)G * G * D; i++) acc += annot[i];
    (void)acc;
    free(annot);
    free(image);
}

int fuzz_encoder_one(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *spec_text = FUZZ_ENCODER_SPECS[data[0] % FUZZ_ENCODER_N_SPECS];
    const char *path = fuzz_tmp_path("weights.safetensors");
    fuzz_write_file(path, data + 1, size - 1);
    Encoder *enc = (Encoder *)1;
    Error err = {{0}};
    int rc = encoder_load(&enc, spec_text, path, &err);
    if (rc != 0) {
        fuzz_require(rc == -1, "encoder_load returned %d", rc);
        fuzz_require(enc == NULL, "failed load left an encoder behind");
        fuzz_require_error(&err, path);
        return 0;
    }
    fuzz_require(enc != NULL, "success without an encoder");
    fuzz_encoder_check_loaded(enc, spec_text);
    encoder_free(enc);
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_encoder_one(data, size);
    return 0;
}
#endif
