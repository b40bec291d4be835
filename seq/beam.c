// beam.c: batched beam search, see beam.h.
//
// Each step, for every image still searching, the candidates are all one-token
// extensions of its live rows, ranked by raw log-probability sum (ties: lower row, then
// lower token id, so the search is deterministic). Following the usual practice of
// sequence-to-sequence toolkits (e.g. fairseq), an <end> extension ranked within the top
// K finishes (it leaves the beam; the best finished one per image is kept, compared by
// the normalised score sum / len^alpha, len counting <end>), and the next live beam is
// the top K extensions that are not <end>. An image stops searching when it has K
// finished hypotheses (so K = 1 is exactly greedy decoding: stop at the first argmax
// <end>), or when no live row can still beat its best finished one: log-probabilities
// are <= 0, so a live sum s can reach at most s / max_len^alpha. At max_len the best
// live hypothesis (len = max_len) is returned when none finished or when it scores
// strictly better under the same normalisation.
// Outputs past lens[b] are padded: tokens with end_id, rows with -1. The model must
// give log-probabilities (-inf is fine for tokens it forbids, e.g. <pad> and <start>).
#include "seq/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

typedef struct {
    double score;  // raw log-probability sum
    int row;       // row in the step call
    int token;
} Cand;

// Higher score first (NaN last), then lower row, then lower token.
static int cand_before(const Cand *a, const Cand *b) {
    int an = isnan(a->score), bn = isnan(b->score);
    if (an != bn) return bn;
    if (!an && a->score != b->score) return a->score > b->score;
    if (a->row != b->row) return a->row < b->row;
    return a->token < b->token;
}

static int cmp_cand(const void *x, const void *y) {
    const Cand *a = x, *b = y;
    if (cand_before(a, b)) return -1;
    if (cand_before(b, a)) return 1;
    return 0;
}

static double normalised(double sum, int len, float alpha) {
    if (alpha == 0.0f || len <= 0) return sum;
    return sum / pow((double)len, (double)alpha);
}

typedef struct {
    int n_finished;    // finished hypotheses seen (ranked within the top K)
    int has_finished;
    double fin_norm;   // best finished: normalised score
    int fin_level;     // its history level (the step call that produced <end>)
    int fin_row;       // its row in that call
} ImageState;

// Walks the history back from row r at level `level` (rows of hist level l are the rows
// of step call l; level l >= 1 records, for each row, its parent in call l-1 and the token
// that parent produced). Writes level tokens and the producing rows.
static void backtrack(int *tok, int *rowtrace, const int *hist_parent, const int *hist_token,
                      int level, int r, int stride) {
    for (int k = level - 1; k >= 0; k--) {
        int p = hist_parent[(size_t)(k + 1) * stride + r];
        tok[k] = hist_token[(size_t)(k + 1) * stride + r];
        if (rowtrace) rowtrace[k] = p;
        r = p;
    }
}

void beam_search(int *tokens, int *lens, float *scores, int *rows, int B, void *model,
                 BeamStepFn step, const BeamConfig *cfg) {
    const int K = cfg->beam, T = cfg->max_len, V = cfg->V;
    CHECK(B >= 1 && K >= 1 && T >= 1 && V >= 1 && step && tokens && lens && scores);
    CHECK(cfg->end_id >= 0 && cfg->end_id < V, "end_id %d outside V = %d", cfg->end_id, V);
    const int stride = B * K;  // most rows a step call can have

    // hist_* level l (0..T), row r: parent row in call l-1 and the token fed to call l.
    int *hist_parent = xmalloc((size_t)(T + 1) * stride * sizeof *hist_parent);
    int *hist_token = xmalloc((size_t)(T + 1) * stride * sizeof *hist_token);
    int *row_image = xmalloc((size_t)stride * sizeof *row_image);
    int *next_image = xmalloc((size_t)stride * sizeof *next_image);
    double *row_sum = xmalloc((size_t)stride * sizeof *row_sum);
    double *next_sum = xmalloc((size_t)stride * sizeof *next_sum);
    float *logprobs = xmalloc((size_t)stride * V * sizeof *logprobs);
    Cand *cands = xmalloc((size_t)K * (K + 1) * sizeof *cands);
    ImageState *st = xcalloc((size_t)B, sizeof *st);

    int n = B;  // rows of the coming call
    for (int b = 0; b < B; b++) {
        hist_parent[b] = b;
        hist_token[b] = cfg->start_id;
        row_image[b] = b;
        row_sum[b] = 0.0;
    }
    int level = 0;  // the step call about to be made
    for (; level < T && n > 0; level++) {
        const int *parent = hist_parent + (size_t)level * stride;
        const int *token = hist_token + (size_t)level * stride;
        step(model, n, parent, token, logprobs);

        int *new_parent = hist_parent + (size_t)(level + 1) * stride;
        int *new_token = hist_token + (size_t)(level + 1) * stride;
        int m = 0;  // rows of the next call
        for (int r0 = 0; r0 < n;) {
            const int b = row_image[r0];
            int r1 = r0;
            while (r1 < n && row_image[r1] == b) r1++;

            // Each row's best K + 1 tokens hold its best K non-<end> ones and all of the
            // image's top-K candidates that come from it.
            int nc = 0;
            for (int r = r0; r < r1; r++) {
                const float *lp = logprobs + (size_t)r * V;
                int start = nc, keep = K + 1 < V ? K + 1 : V;
                for (int v = 0; v < V; v++) {
                    Cand c = {row_sum[r] + (double)lp[v], r, v};
                    int cnt = nc - start;
                    if (cnt == keep && !cand_before(&c, &cands[nc - 1])) continue;
                    int pos = cnt == keep ? nc - 1 : nc++;
                    while (pos > start && cand_before(&c, &cands[pos - 1])) {
                        cands[pos] = cands[pos - 1];
                        pos--;
                    }
                    cands[pos] = c;
                }
            }
            qsort(cands, (size_t)nc, sizeof *cands, cmp_cand);

            ImageState *s = &st[b];
            int live0 = m;
            for (int i = 0; i < nc && m - live0 < K; i++) {
                const Cand *c = &cands[i];
                if (c->token == cfg->end_id) {
                    if (i >= K) continue;
                    s->n_finished++;
                    double norm = normalised(c->score, level + 1, cfg->length_alpha);
                    if (!s->has_finished || norm > s->fin_norm) {
                        s->has_finished = 1;
                        s->fin_norm = norm;
                        s->fin_level = level;
                        s->fin_row = c->row;
                    }
                } else {
                    new_parent[m] = c->row;
                    new_token[m] = c->token;
                    next_image[m] = b;
                    next_sum[m] = c->score;
                    m++;
                }
            }

            // Stop rules (see the top of the file).
            int stop = m == live0 || s->n_finished >= K;
            if (!stop && s->has_finished) {
                double best_live = next_sum[live0];  // rows are in rank order
                if (best_live <= 0.0 &&
                    s->fin_norm >= normalised(best_live, T, cfg->length_alpha))
                    stop = 1;
            }
            if (stop) m = live0;  // drop its live rows: it is done
            r0 = r1;
        }
        // The next call's rows: swap in the new bookkeeping.
        int *ti = row_image;
        row_image = next_image;
        next_image = ti;
        double *td = row_sum;
        row_sum = next_sum;
        next_sum = td;
        n = m;
    }

    // Results. After the loop, level rows (n of them) are the hypotheses still live at
    // max_len (level == T then); images that stopped have none.
    for (int b = 0; b < B; b++) {
        int *tok = tokens + (size_t)b * T;
        int *rt = rows ? rows + (size_t)b * T : NULL;
        for (int k = 0; k < T; k++) {
            tok[k] = cfg->end_id;
            if (rt) rt[k] = -1;
        }
        int best_live = -1;
        for (int r = 0; r < n; r++)
            if (row_image[r] == b && (best_live < 0 || row_sum[r] > row_sum[best_live]))
                best_live = r;
        double live_norm = best_live >= 0 ? normalised(row_sum[best_live], level, cfg->length_alpha)
                                          : 0.0;
        const ImageState *s = &st[b];
        if (best_live >= 0 && (!s->has_finished || live_norm > s->fin_norm)) {
            backtrack(tok, rt, hist_parent, hist_token, level, best_live, stride);
            lens[b] = level;
            scores[b] = (float)live_norm;
        } else {
            CHECK(s->has_finished, "image %d ended without a hypothesis", b);
            // fin_row is a row of call fin_level: the fin_level tokens before <end> are
            // its history.
            backtrack(tok, rt, hist_parent, hist_token, s->fin_level, s->fin_row, stride);
            lens[b] = s->fin_level;
            scores[b] = (float)s->fin_norm;
        }
    }

    free(hist_parent);
    free(hist_token);
    free(row_image);
    free(next_image);
    free(row_sum);
    free(next_sum);
    free(logprobs);
    free(cands);
    free(st);
}
