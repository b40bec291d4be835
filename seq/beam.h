// beam.h: beam search (and greedy decoding, beam = 1) over a batch of images.
//
// The model is a callback. At each step the search holds up to K hypotheses per image
// ("rows", image-major: image b's rows come before image b+1's). It calls
//     step(model, n, parent, token, logprobs)
// with n rows: row r extends row parent[r] of the previous call (at the first call,
// parent[r] is the image index and there is one row per image) by token[r]; the model
// gathers its recurrent state from the parents, advances one step, and writes
// log-probabilities logprobs (n, V). Finished hypotheses (that emitted end_id) leave
// the beam. Beam 1 is greedy decoding (it stops at the first argmax end_id); a wider beam
// searches until no live hypothesis can beat the best finished one (beam.c says how), and
// at max_len the best live hypothesis is returned even without end_id.
#ifndef SEQ_BEAM_H
#define SEQ_BEAM_H

typedef void (*BeamStepFn)(void *model, int n, const int *parent, const int *token,
                           float *logprobs);

typedef struct {
    int beam;            // K >= 1 (1 = greedy)
    int max_len;         // tokens generated at most, <end> included
    float length_alpha;  // score = sum logp / len^alpha (0: raw sum; 1: mean)
    int start_id, end_id;
    int V;
} BeamConfig;

// tokens (B, max_len): the best hypothesis per image without <start>/<end>, lens (B) its
// length, scores (B) its normalised score. rows (B, max_len) or NULL: for each output token,
// the row index it had in the step call that produced it (so a caller that kept per-row
// attention weights can recover those of the best hypothesis).
void beam_search(int *tokens, int *lens, float *scores, int *rows, int B, void *model,
                 BeamStepFn step, const BeamConfig *cfg);

// The next word's scores for a step function: logprobs (n, V) = the log-softmax of each row
// of logits (V words, the sum in double), then the n_banned ids of banned (words that never
// follow: <pad>, <start>, ...) at -1e9.
void beam_word_logprobs(float *logprobs, const float *logits, int n, int V, const int *banned,
                        int n_banned);

#endif
