// beam.c: batched beam search, see beam.h.
//
// Each step, for every image still searching, the candidates are all one-token
// extensions of its live rows, ranked by raw log-probability sum (ties: lower row, then
// lower token id, so the search is deterministic). As in fairseq's sequence_generator and
// Hugging Face's BeamSearchScorer, an <end> extension ranked within the top K finishes (it
// leaves the beam; the best finished one per image is kept, compared by the normalised
// score sum / len^alpha, len counting <end>), and the next live beam is the top K
// extensions that are not <end>.
// When an image stops: K = 1 is greedy decoding, which stops at the first argmax <end>.
// For K > 1 the search goes on until no live row can still beat the best finished
// hypothesis (Hugging Face's early_stopping="never", "the canonical beam search", with its
// max-length bound; against the best, not the K-th best, because one hypothesis is
// returned): log-probabilities are <= 0, so a
// live sum s can reach at most s / max_len^alpha (s itself when alpha = 0), so the answer
// is the one the same search without early stopping would give. Stopping once K
// hypotheses have finished (fairseq's rule, Hugging Face's early_stopping=True; this
// file's until issue 61) can return a hypothesis worse than a live one would have become,
// even worse than greedy decoding's (tests/test_beam.c holds such a model). At max_len
// the best live hypothesis (len = max_len) is returned when
// none finished or when it scores strictly better under the same normalisation.
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

// The search's state: the history of every step call, the live rows' images and sums
// (this call's and the next's, swapped each step), and per-image bookkeeping.
typedef struct {
    int K, T, V, stride;         // beam, max_len, vocabulary, most rows a call can have (B K)
    int *hist_parent, *hist_token;  // (T + 1, stride): level l, row r: parent row in call
                                    // l - 1 and the token fed to call l
    int *row_image, *next_image;    // (stride)
    double *row_sum, *next_sum;     // (stride)
    float *logprobs;                // (stride, V): a step call's output
    Cand *cands;                    // (K (K + 1)): one image's candidates
    ImageState *st;                 // (B)
} Search;

static void search_alloc(Search *s, int B, const BeamConfig *cfg) {
    s->K = cfg->beam, s->T = cfg->max_len, s->V = cfg->V, s->stride = B * cfg->beam;
    const size_t rows = (size_t)s->stride, levels = (size_t)s->T + 1;
    s->hist_parent = xmalloc(levels * rows * sizeof *s->hist_parent);
    s->hist_token = xmalloc(levels * rows * sizeof *s->hist_token);
    s->row_image = xmalloc(rows * sizeof *s->row_image);
    s->next_image = xmalloc(rows * sizeof *s->next_image);
    s->row_sum = xmalloc(rows * sizeof *s->row_sum);
    s->next_sum = xmalloc(rows * sizeof *s->next_sum);
    s->logprobs = xmalloc(rows * s->V * sizeof *s->logprobs);
    s->cands = xmalloc((size_t)s->K * (s->K + 1) * sizeof *s->cands);
    s->st = xcalloc((size_t)B, sizeof *s->st);
}

static void search_free(Search *s) {
    free(s->hist_parent), free(s->hist_token), free(s->row_image), free(s->next_image);
    free(s->row_sum), free(s->next_sum), free(s->logprobs), free(s->cands), free(s->st);
}

// One image's candidates from its live rows r0 .. r1 - 1, in rank order in s->cands; their
// count. Each row's best K + 1 tokens hold its best K non-<end> ones and all of the image's
// top-K candidates that come from it.
static int image_candidates(Search *s, int r0, int r1) {
    const int K = s->K, V = s->V;
    Cand *cands = s->cands;
    int nc = 0;
    for (int r = r0; r < r1; r++) {
        const float *lp = s->logprobs + (size_t)r * V;
        int start = nc, keep = K + 1 < V ? K + 1 : V;
        for (int v = 0; v < V; v++) {
            Cand c = {s->row_sum[r] + (double)lp[v], r, v};
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
    return nc;
}

// Image b's step at `level` from its nc ranked candidates: <end> extensions within the top
// K finish, the top K others become rows m, m + 1, ... of the next call (history level
// level + 1), unless a stop rule (see the top of the file) ends the image. Returns the
// next call's row count.
static int advance_image(Search *s, const BeamConfig *cfg, int b, int nc, int level, int m) {
    int *new_parent = s->hist_parent + (size_t)(level + 1) * s->stride;
    int *new_token = s->hist_token + (size_t)(level + 1) * s->stride;
    ImageState *st = &s->st[b];
    const int live0 = m;
    for (int i = 0; i < nc && m - live0 < s->K; i++) {
        const Cand *c = &s->cands[i];
        if (c->token == cfg->end_id) {
            if (i >= s->K) continue;
            double norm = normalised(c->score, level + 1, cfg->length_alpha);
            if (!st->has_finished || norm > st->fin_norm) {
                st->has_finished = 1;
                st->fin_norm = norm;
                st->fin_level = level;
                st->fin_row = c->row;
            }
        } else {
            new_parent[m] = c->row;
            new_token[m] = c->token;
            s->next_image[m] = b;
            s->next_sum[m] = c->score;
            m++;
        }
    }
    int stop = m == live0 || (s->K == 1 && st->has_finished);  // greedy: its first <end>
    if (!stop && st->has_finished) {
        double best_live = s->next_sum[live0];  // rows are in rank order
        if (best_live <= 0.0 && st->fin_norm >= normalised(best_live, s->T, cfg->length_alpha))
            stop = 1;
    }
    return stop ? live0 : m;  // a stopped image's live rows are dropped: it is done
}

// Image b's answer once the search ended at `level` with n live rows: its best live
// hypothesis when none finished or it scores strictly better, else its best finished one.
static void write_result(const Search *s, const BeamConfig *cfg, int b, int n, int level,
                         int *tokens, int *lens, float *scores, int *rows) {
    const int T = s->T;
    int *tok = tokens + (size_t)b * T;
    int *rt = rows ? rows + (size_t)b * T : NULL;
    for (int k = 0; k < T; k++) {
        tok[k] = cfg->end_id;
        if (rt) rt[k] = -1;
    }
    int best_live = -1;
    for (int r = 0; r < n; r++)
        if (s->row_image[r] == b && (best_live < 0 || s->row_sum[r] > s->row_sum[best_live]))
            best_live = r;
    double live_norm = best_live >= 0 ? normalised(s->row_sum[best_live], level, cfg->length_alpha)
                                      : 0.0;
    const ImageState *st = &s->st[b];
    if (best_live >= 0 && (!st->has_finished || live_norm > st->fin_norm)) {
        backtrack(tok, rt, s->hist_parent, s->hist_token, level, best_live, s->stride);
        lens[b] = level;
        scores[b] = (float)live_norm;
    } else {
        CHECK(st->has_finished, "image %d ended without a hypothesis", b);
        // fin_row is a row of call fin_level: the fin_level tokens before <end> are its
        // history.
        backtrack(tok, rt, s->hist_parent, s->hist_token, st->fin_level, st->fin_row, s->stride);
        lens[b] = st->fin_level;
        scores[b] = (float)st->fin_norm;
    }
}

void beam_search(int *tokens, int *lens, float *scores, int *rows, int B, void *model,
                 BeamStepFn step, const BeamConfig *cfg) {
    CHECK(B >= 1 && cfg->beam >= 1 && cfg->max_len >= 1 && cfg->V >= 1 && step && tokens &&
          lens && scores);
    CHECK(cfg->end_id >= 0 && cfg->end_id < cfg->V, "end_id %d outside V = %d", cfg->end_id,
          cfg->V);
    Search s;
    search_alloc(&s, B, cfg);
    int n = B;  // rows of the coming call
    for (int b = 0; b < B; b++) {
        s.hist_parent[b] = b;
        s.hist_token[b] = cfg->start_id;
        s.row_image[b] = b;
        s.row_sum[b] = 0.0;
    }
    int level = 0;  // the step call about to be made
    for (; level < s.T && n > 0; level++) {
        step(model, n, s.hist_parent + (size_t)level * s.stride,
             s.hist_token + (size_t)level * s.stride, s.logprobs);
        int m = 0;  // rows of the next call
        for (int r0 = 0; r0 < n;) {  // each image's run of rows
            const int b = s.row_image[r0];
            int r1 = r0;
            while (r1 < n && s.row_image[r1] == b) r1++;
            m = advance_image(&s, cfg, b, image_candidates(&s, r0, r1), level, m);
            r0 = r1;
        }
        // The next call's rows: swap in the new bookkeeping.
        int *ti = s.row_image;
        s.row_image = s.next_image;
        s.next_image = ti;
        double *td = s.row_sum;
        s.row_sum = s.next_sum;
        s.next_sum = td;
        n = m;
    }
    // After the loop, level rows (n of them) are the hypotheses still live at max_len
    // (level == T then); images that stopped have none.
    for (int b = 0; b < B; b++) write_result(&s, cfg, b, n, level, tokens, lens, scores, rows);
    search_free(&s);
}

void beam_word_logprobs(float *logprobs, const float *logits, int n, int V, const int *banned,
                        int n_banned) {
    for (int r = 0; r < n; r++) {
        const float *z = logits + (size_t)r * V;
        float *lp = logprobs + (size_t)r * V;
        float mx = z[0];
        for (int i = 1; i < V; i++) mx = z[i] > mx ? z[i] : mx;
        double s = 0.0;
        for (int i = 0; i < V; i++) s += exp((double)(z[i] - mx));
        const float lse = mx + (float)log(s);
        for (int i = 0; i < V; i++) lp[i] = z[i] - lse;
        for (int k = 0; k < n_banned; k++) lp[banned[k]] = -1e9f;
    }
}
