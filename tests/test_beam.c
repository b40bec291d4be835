// test_beam.c: beam search (seq/beam.h) on toy Markov-chain models: greedy against beam,
// the length limit, an exhaustive-width beam against enumeration, the rows trace, and the
// stopping rule against the same search run to max_len without stopping early.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/beam.h"
#include "tests/support/test.h"

// A toy model: a Markov chain over V tokens whose next-token distribution depends on the
// image and the previous token, P[(b * V + prev) * V + next]. It also records each row's
// prefix at each call, to check the rows trace.
#define TOY_MAXR 400
#define TOY_MAXT 8
typedef struct {
    int V;
    const double *P;
    int calls;
    int img[TOY_MAXR], last[TOY_MAXR], len[TOY_MAXR];
    int prefix[TOY_MAXT][TOY_MAXR][TOY_MAXT];  // [call][row][k]
    int img_at[TOY_MAXT][TOY_MAXR];             // [call][row]
    int n_at[TOY_MAXT];
} Toy;

static void toy_step(void *model, int n, const int *parent, const int *token, float *logprobs) {
    Toy *m = model;
    CHECK(n <= TOY_MAXR && m->calls < TOY_MAXT);
    int img[TOY_MAXR], len[TOY_MAXR];
    int c = m->calls;
    for (int r = 0; r < n; r++) {
        if (c == 0) {
            img[r] = parent[r];
            len[r] = 0;
        } else {
            CHECK(parent[r] >= 0 && parent[r] < m->n_at[c - 1]);
            img[r] = m->img[parent[r]];
            len[r] = m->len[parent[r]] + 1;
            memcpy(m->prefix[c][r], m->prefix[c - 1][parent[r]], sizeof m->prefix[c][r]);
            m->prefix[c][r][len[r] - 1] = token[r];
        }
        CHECK(r == 0 || img[r] >= img[r - 1], "rows not image-major");
    }
    for (int r = 0; r < n; r++) {
        m->img[r] = img[r];
        m->len[r] = len[r];
        m->last[r] = token[r];
        m->img_at[c][r] = img[r];
        const double *p = m->P + ((size_t)img[r] * m->V + token[r]) * m->V;
        for (int v = 0; v < m->V; v++) logprobs[r * m->V + v] = (float)log(p[v]);
    }
    m->n_at[c] = n;
    m->calls++;
}

enum { T_PAD, T_START, T_END, T_A, T_B, T_C, TOY_V };

static void test_beam_beats_greedy(void) {
    // From <start>: A 0.55, B 0.4, <end> 0.05. From A: <end> 0.4, A 0.3, B 0.3.
    // From B: <end> 0.95, A 0.025, B 0.025. (pad, start and C never: probability 0.)
    // Greedy: A (0.55) then <end> (0.4): "A", p = 0.22.
    // Beam 3 keeps B: "B" <end> has p = 0.4 * 0.95 = 0.38.
    double P[TOY_V * TOY_V] = {0};
    double *s = P + T_START * TOY_V, *a = P + T_A * TOY_V, *b = P + T_B * TOY_V;
    s[T_A] = 0.55, s[T_B] = 0.4, s[T_END] = 0.05;
    a[T_END] = 0.4, a[T_A] = 0.3, a[T_B] = 0.3;
    b[T_END] = 0.95, b[T_A] = 0.025, b[T_B] = 0.025;
    BeamConfig cfg = {.beam = 1, .max_len = 5, .length_alpha = 0, .start_id = T_START,
                      .end_id = T_END, .V = TOY_V};
    int tok[5], len, rows[5];
    float score;
    Toy m = {.V = TOY_V, .P = P};
    beam_search(tok, &len, &score, rows, 1, &m, toy_step, &cfg);
    EXPECT(len == 1 && tok[0] == T_A, "greedy len %d tok %d", len, tok[0]);
    EXPECT_NEAR(score, log(0.22), 1e-5, 0);
    EXPECT(tok[1] == T_END, "padding after the caption is <end>");
    EXPECT(m.calls == 2, "greedy stops at its <end>: %d calls", m.calls);

    // K = 1 stays greedy under length normalisation too (it must not wander past the
    // first argmax <end> looking for a better mean).
    cfg.length_alpha = 1;
    m = (Toy){.V = TOY_V, .P = P};
    beam_search(tok, &len, &score, rows, 1, &m, toy_step, &cfg);
    EXPECT(len == 1 && tok[0] == T_A && m.calls == 2, "greedy alpha 1: len %d", len);
    EXPECT_NEAR(score, log(0.22) / 2, 1e-5, 0);
    cfg.length_alpha = 0;

    cfg.beam = 3;
    m = (Toy){.V = TOY_V, .P = P};
    beam_search(tok, &len, &score, rows, 1, &m, toy_step, &cfg);
    EXPECT(len == 1 && tok[0] == T_B, "beam len %d tok %d", len, tok[0]);
    EXPECT_NEAR(score, log(0.38), 1e-5, 0);

    // Length normalisation (alpha = 1: mean log-probability per token, <end> counted).
    // Beam 3 now prefers "B" (mean log(0.38)/2) over "" (log 0.05)... both finish; check.
    cfg.length_alpha = 1;
    m = (Toy){.V = TOY_V, .P = P};
    beam_search(tok, &len, &score, rows, 1, &m, toy_step, &cfg);
    EXPECT(len == 1 && tok[0] == T_B);
    EXPECT_NEAR(score, log(0.38) / 2, 1e-5, 0);
}

static void test_beam_without_end_returns_max_len(void) {
    // <end> has probability 0 everywhere; from every token A 0.5, B 0.3, C 0.2.
    double P[TOY_V * TOY_V] = {0};
    for (int prev = 0; prev < TOY_V; prev++) {
        P[prev * TOY_V + T_A] = 0.5;
        P[prev * TOY_V + T_B] = 0.3;
        P[prev * TOY_V + T_C] = 0.2;
    }
    for (int K = 1; K <= 4; K++)
        for (int alpha = 0; alpha <= 1; alpha++) {
            BeamConfig cfg = {.beam = K, .max_len = 6, .length_alpha = (float)alpha,
                              .start_id = T_START, .end_id = T_END, .V = TOY_V};
            int tok[6], len, rows[6];
            float score;
            Toy m = {.V = TOY_V, .P = P};
            beam_search(tok, &len, &score, rows, 1, &m, toy_step, &cfg);
            EXPECT(len == 6, "K %d: len %d", K, len);
            for (int k = 0; k < 6; k++) EXPECT(tok[k] == T_A, "K %d tok[%d] = %d", K, k, tok[k]);
            EXPECT_NEAR(score, alpha ? log(0.5) : 6 * log(0.5), 1e-5, 0);
            EXPECT(m.calls == 6, "calls %d", m.calls);
        }
}

// Best normalised score over every sequence, by enumeration: words from {A, B, C}, either
// ended by <end> (len counts it, at most max_len) or max_len words without <end>.
static double brute_best(int *best_tok, int *best_len, const double *P, int b, int T,
                         float alpha) {
    double best = -INFINITY;
    int seq[TOY_MAXT];
    for (int L = 0; L <= T; L++) {
        int total = 1;
        for (int k = 0; k < L; k++) total *= 3;
        for (int code = 0; code < total; code++) {
            int x = code;
            for (int k = 0; k < L; k++) seq[k] = T_A + x % 3, x /= 3;
            double sum = 0;
            int prev = T_START;
            for (int k = 0; k < L; k++) {
                sum += (double)(float)log(P[((size_t)b * TOY_V + prev) * TOY_V + seq[k]]);
                prev = seq[k];
            }
            int n = L;
            if (L < T) {  // ends with <end>
                sum += (double)(float)log(P[((size_t)b * TOY_V + prev) * TOY_V + T_END]);
                n = L + 1;
            }
            double norm = alpha == 0 ? sum : sum / pow(n, alpha);
            if (norm > best) {
                best = norm;
                *best_len = L;
                memcpy(best_tok, seq, sizeof seq);
            }
        }
    }
    return best;
}

static void test_beam_wide_equals_exhaustive_and_rows_trace(void) {
    // Three images with random transition tables. With T = 4 a call sees at most
    // 27 rows x 4 finite extensions = 108 candidates, so a beam of 108 keeps every prefix
    // and finishes every <end>: it is an exhaustive search and must find the enumeration's
    // best (the stop rules may end it early only when nothing live can win).
    enum { B = 3, T = 4 };
    double P[B * TOY_V * TOY_V] = {0};
    unsigned s = 12345;
    for (int b = 0; b < B; b++)
        for (int prev = 0; prev < TOY_V; prev++) {
            double *p = P + ((size_t)b * TOY_V + prev) * TOY_V, z = 0;
            for (int v = T_END; v < TOY_V; v++) {
                s = s * 1103515245u + 12345u;
                p[v] = 0.05 + (s >> 8) / 16777216.0;
                z += p[v];
            }
            for (int v = T_END; v < TOY_V; v++) p[v] /= z;
        }
    for (int ai = 0; ai < 3; ai++) {
        float alpha = ai == 0 ? 0.0f : ai == 1 ? 0.7f : 1.0f;
        BeamConfig cfg = {.beam = 108, .max_len = T, .length_alpha = alpha, .start_id = T_START,
                          .end_id = T_END, .V = TOY_V};
        int tok[B * T], len[B], rows[B * T];
        float score[B];
        Toy *m = xcalloc(1, sizeof *m);
        m->V = TOY_V;
        m->P = P;
        beam_search(tok, len, score, rows, B, m, toy_step, &cfg);
        for (int b = 0; b < B; b++) {
            int want[TOY_MAXT], wl = -1;
            double best = brute_best(want, &wl, P, b, T, alpha);
            EXPECT_NEAR(score[b], best, 1e-5, 1e-6);
            EXPECT(len[b] == wl, "alpha %g image %d: len %d, want %d", alpha, b, len[b], wl);
            for (int k = 0; k < wl && k < len[b]; k++) EXPECT(tok[b * T + k] == want[k]);
            // rows trace: the row that produced token k, at call k, held exactly the first
            // k tokens of the answer, and belonged to image b.
            for (int k = 0; k < len[b]; k++) {
                int r = rows[b * T + k];
                EXPECT(r >= 0 && r < m->n_at[k], "rows[%d][%d] = %d", b, k, r);
                if (r < 0 || r >= m->n_at[k]) continue;
                EXPECT(m->img_at[k][r] == b, "row of another image");
                for (int j = 0; j < k; j++)
                    EXPECT(m->prefix[k][r][j] == tok[b * T + j], "image %d token %d", b, k);
            }
            for (int k = len[b]; k < T; k++) EXPECT(rows[b * T + k] == -1);
        }
        free(m);
    }
    // K = 1 on the same tables is the argmax path, whatever alpha.
    for (int ai = 0; ai < 2; ai++) {
        BeamConfig cfg = {.beam = 1, .max_len = T, .length_alpha = (float)ai,
                          .start_id = T_START, .end_id = T_END, .V = TOY_V};
        int tok[B * T], len[B];
        float score[B];
        Toy *m = xcalloc(1, sizeof *m);
        m->V = TOY_V;
        m->P = P;
        beam_search(tok, len, score, NULL, B, m, toy_step, &cfg);
        for (int b = 0; b < B; b++) {
            int prev = T_START, k = 0;
            for (; k < T; k++) {
                const double *p = P + ((size_t)b * TOY_V + prev) * TOY_V;
                int arg = 0;
                for (int v = 1; v < TOY_V; v++)
                    if ((float)log(p[v]) > (float)log(p[arg])) arg = v;
                if (arg == T_END) break;
                EXPECT(k < len[b] && tok[b * T + k] == arg, "image %d step %d", b, k);
                prev = arg;
            }
            EXPECT(len[b] == k, "image %d: len %d, argmax path %d", b, len[b], k);
        }
        free(m);
    }
    // A narrower beam on the same batch: the trace still holds, and the reported score is
    // the returned sequence's own normalised score under its image's table.
    BeamConfig cfg = {.beam = 2, .max_len = T, .length_alpha = 0.5f, .start_id = T_START,
                      .end_id = T_END, .V = TOY_V};
    int tok[B * T], len[B], rows[B * T];
    float score[B];
    Toy *m = xcalloc(1, sizeof *m);
    m->V = TOY_V;
    m->P = P;
    beam_search(tok, len, score, rows, B, m, toy_step, &cfg);
    for (int b = 0; b < B; b++) {
        double sum = 0;
        int prev = T_START;
        for (int k = 0; k < len[b]; k++) {
            int r = rows[b * T + k];
            EXPECT(r >= 0 && r < m->n_at[k]);
            if (r < 0 || r >= m->n_at[k]) continue;
            EXPECT(m->img_at[k][r] == b, "row of another image");
            for (int j = 0; j < k; j++) EXPECT(m->prefix[k][r][j] == tok[b * T + j]);
            sum += (double)(float)log(P[((size_t)b * TOY_V + prev) * TOY_V + tok[b * T + k]]);
            prev = tok[b * T + k];
        }
        int n = len[b];
        if (len[b] < T) {
            sum += (double)(float)log(P[((size_t)b * TOY_V + prev) * TOY_V + T_END]);
            n++;
        }
        // the reported score is the returned sequence's own normalised score
        EXPECT_NEAR(score[b], sum / pow(n, 0.5), 1e-5, 1e-6);
    }
    free(m);
}

// A model where stopping once K hypotheses have finished (seq/beam.c's rule before issue
// 61, fairseq's) returns a worse hypothesis than greedy decoding. Greedy: A B C <end>,
// p = 0.6 * 0.9 * 0.9 * 0.8 = 0.3888. Beam 2: call 0 keeps A (0.6) and C (0.3); call 1
// ranks A B (0.54) then C <end> (0.24, finished, worse than greedy's) and keeps C C (0.03);
// call 2 ranks A B C (0.486) then C C <end> (0.024): the second finished hypothesis, so the
// old rule stopped and returned "C" (0.24) while A B C was live and would end at 0.3888.
static void test_beam_searches_past_k_finished(void) {
    double P[TOY_V * TOY_V] = {0};
    double *s = P + T_START * TOY_V, *a = P + T_A * TOY_V, *b = P + T_B * TOY_V;
    double *c = P + T_C * TOY_V;
    s[T_A] = 0.6, s[T_C] = 0.3, s[T_B] = 0.1;
    a[T_B] = 0.9, a[T_END] = 0.1 / 3, a[T_A] = 0.1 / 3, a[T_C] = 0.1 / 3;
    b[T_C] = 0.9, b[T_END] = 0.04, b[T_A] = 0.03, b[T_B] = 0.03;
    c[T_END] = 0.8, c[T_C] = 0.1, c[T_A] = 0.05, c[T_B] = 0.05;
    const int want[3] = {T_A, T_B, T_C};
    for (int ai = 0; ai < 3; ai++) {
        const float alpha = ai == 0 ? 0.0f : ai == 1 ? 0.7f : 1.0f;
        float greedy = 0;
        for (int K = 1; K <= 3; K++) {
            BeamConfig cfg = {.beam = K, .max_len = 6, .length_alpha = alpha,
                              .start_id = T_START, .end_id = T_END, .V = TOY_V};
            int tok[6], len, rows[6];
            float score;
            Toy m = {.V = TOY_V, .P = P};
            beam_search(tok, &len, &score, rows, 1, &m, toy_step, &cfg);
            EXPECT(len == 3, "alpha %g K %d: len %d (tok[0] %d)", alpha, K, len, tok[0]);
            for (int k = 0; k < 3 && k < len; k++) EXPECT(tok[k] == want[k], "tok[%d]", k);
            double want_score = log(0.3888);
            if (alpha > 0) want_score /= pow(4.0, alpha);
            EXPECT_NEAR(score, want_score, 1e-5, 0);
            if (K == 1) greedy = score;
            EXPECT(score >= greedy, "alpha %g: beam %d scores %g below greedy's %g", alpha, K,
                   score, greedy);
        }
    }
}

// The plain reference the stopping rule must agree with: the same ranking (raw sums; ties
// to the lower row, then the lower token), <end> finishing only within the top K, the top
// K others live, but every one of T calls made (no early stop), one image of the toy's
// tables at a time, candidates fully sorted. Returns the normalised score of the answer.
typedef struct {
    double score;
    int row, token;
} RefCand;

static int ref_cand_cmp(const void *x, const void *y) {
    const RefCand *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->row != b->row) return a->row < b->row ? -1 : 1;
    return a->token < b->token ? -1 : a->token > b->token;
}

static double ref_beam_no_early_stop(int *out, int *out_len, const double *P, int b, int K,
                                     int T, float alpha) {
    enum { MAXK = 8 };
    CHECK(K <= MAXK && T <= TOY_MAXT);
    int prefix[MAXK][TOY_MAXT], nprefix[MAXK][TOY_MAXT];
    double sum[MAXK] = {0}, nsum[MAXK];
    int last[MAXK] = {T_START}, nlast[MAXK], n = 1;
    double best = -INFINITY;
    *out_len = -1;
    RefCand cands[MAXK * TOY_V];
    for (int level = 0; level < T; level++) {
        int nc = 0;
        for (int r = 0; r < n; r++)
            for (int v = 0; v < TOY_V; v++) {
                const double lp = (double)(float)log(P[((size_t)b * TOY_V + last[r]) * TOY_V + v]);
                cands[nc++] = (RefCand){sum[r] + lp, r, v};
            }
        qsort(cands, (size_t)nc, sizeof *cands, ref_cand_cmp);
        int m = 0;
        for (int i = 0; i < nc && m < K; i++) {
            const RefCand *c = &cands[i];
            if (c->token == T_END) {
                const double norm = alpha == 0 ? c->score : c->score / pow(level + 1, (double)alpha);
                if (i < K && norm > best) {
                    best = norm;
                    *out_len = level;
                    memcpy(out, prefix[c->row], (size_t)level * sizeof *out);
                }
                continue;
            }
            memcpy(nprefix[m], prefix[c->row], (size_t)level * sizeof(int));
            nprefix[m][level] = c->token;
            nsum[m] = c->score;
            nlast[m] = c->token;
            m++;
        }
        memcpy(prefix, nprefix, sizeof prefix);
        memcpy(sum, nsum, (size_t)m * sizeof *sum);
        memcpy(last, nlast, (size_t)m * sizeof *last);
        n = m;
    }
    // At the limit the best live row (row 0: rank order) against the best finished.
    const double live = alpha == 0 ? sum[0] : sum[0] / pow(T, (double)alpha);
    if (n > 0 && (*out_len < 0 || live > best)) {
        best = live;
        *out_len = T;
        memcpy(out, prefix[0], (size_t)T * sizeof *out);
    }
    return best;
}

static void test_beam_stops_only_when_nothing_live_can_win(void) {
    // Many random tables (several images a batch, so images stop at different calls):
    // beam_search's answer is the reference's, which never stops early.
    enum { B = 5, T = 6, TABLES = 40 };
    double P[B * TOY_V * TOY_V];
    unsigned seed = 777;
    for (int tab = 0; tab < TABLES; tab++) {
        memset(P, 0, sizeof P);
        for (int b = 0; b < B; b++)
            for (int prev = 0; prev < TOY_V; prev++) {
                double *p = P + ((size_t)b * TOY_V + prev) * TOY_V, z = 0;
                for (int v = T_END; v < TOY_V; v++) {
                    seed = seed * 1103515245u + 12345u;
                    const double u = (seed >> 8) / 16777216.0;
                    p[v] = u * u * u + 1e-3;  // peaked: some rows end early, some late
                    z += p[v];
                }
                for (int v = T_END; v < TOY_V; v++) p[v] /= z;
            }
        for (int K = 2; K <= 3; K++)
            for (int ai = 0; ai < 3; ai++) {
                const float alpha = ai == 0 ? 0.0f : ai == 1 ? 0.7f : 1.0f;
                BeamConfig cfg = {.beam = K, .max_len = T, .length_alpha = alpha,
                                  .start_id = T_START, .end_id = T_END, .V = TOY_V};
                int tok[B * T], len[B];
                float score[B];
                Toy *m = xcalloc(1, sizeof *m);
                m->V = TOY_V;
                m->P = P;
                beam_search(tok, len, score, NULL, B, m, toy_step, &cfg);
                free(m);
                for (int b = 0; b < B; b++) {
                    int want[TOY_MAXT], wl;
                    const double best = ref_beam_no_early_stop(want, &wl, P, b, K, T, alpha);
                    EXPECT(len[b] == wl, "table %d K %d alpha %g image %d: len %d, want %d", tab,
                           K, alpha, b, len[b], wl);
                    for (int k = 0; k < wl && k < len[b]; k++)
                        EXPECT(tok[b * T + k] == want[k], "table %d image %d token %d", tab, b, k);
                    EXPECT_NEAR(score[b], best, 1e-5, 1e-6);
                }
            }
    }
}

int main(void) {
    RUN(test_beam_beats_greedy);
    RUN(test_beam_without_end_returns_max_len);
    RUN(test_beam_wide_equals_exhaustive_and_rows_trace);
    RUN(test_beam_searches_past_k_finished);
    RUN(test_beam_stops_only_when_nothing_live_can_win);
    return test_summary();
}
