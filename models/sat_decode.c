// sat_decode.c: decoding through the model's decoder (models/sat_decode.h).
#include "models/sat_decode.h"

void sat_decode(SatModel *m, int *tokens, int *lens, float *alphas, const float *images, int B,
                int beam, float length_alpha) {
    m->ops->decode(m, tokens, lens, alphas, images, B, beam, length_alpha);
}

int sat_check_decode_sizes(const SatConfig *c, int B, int beam, const char *beam_flag, Error *err) {
    return sat_decoder_ops(c->decoder)->check_decode_sizes(c, B, beam, beam_flag, err);
}
