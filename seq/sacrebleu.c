// sacrebleu.c: sacreBLEU's BLEU (13a), chrF, bootstrap intervals and length buckets.
#include "seq/sacrebleu.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/strbuf.h"

// --- text helpers ------------------------------------------------------------------------

// Bytes of the whitespace character (as Python's str.isspace) at p, or 0.
static int space_len(const unsigned char *p) {
    if ((*p >= 0x09 && *p <= 0x0d) || (*p >= 0x1c && *p <= 0x20)) return 1;
    if (p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0)) return 2;
    if (p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) return 3;  // U+1680
    if (p[0] == 0xe2 && p[1] == 0x80 && ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 ||
                                         p[2] == 0xa9 || p[2] == 0xaf))
        return 3;                                                  // U+2000-200A, 2028, 2029, 202F
    if (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) return 3;  // U+205F
    if (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80) return 3;  // U+3000
    return 0;
}

// s with every non-overlapping `from` (left to right, as str.replace) replaced; frees s.
static char *replace_all(char *s, const char *from, const char *to) {
    if (!strstr(s, from)) return s;
    StrBuf b = {0};
    size_t fl = strlen(from), tl = strlen(to);
    strbuf_put(&b, "", 0);
    for (const char *p = s;;) {
        const char *q = strstr(p, from);
        if (!q) {
            strbuf_put(&b, p, strlen(p));
            break;
        }
        strbuf_put(&b, p, (size_t)(q - p));
        strbuf_put(&b, to, tl);
        p = q + fl;
    }
    free(s);
    return b.s;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

// The first rule's class: ASCII punctuation but ' , - . (and the space).
static int is_13a_punct(char c) {
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// re.sub of a two-character pattern (a)(b) by the replacement pre a mid b post, scanning
// left to right without overlap; frees s.
static char *sub_pair(char *s, int (*a)(char), int (*b)(char), const char *pre,
                      const char *mid, const char *post) {
    StrBuf o = {0};
    strbuf_put(&o, "", 0);
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && a(s[i]) && b(s[i + 1])) {
            strbuf_put(&o, pre, strlen(pre));
            strbuf_ch(&o, s[i]);
            strbuf_put(&o, mid, strlen(mid));
            strbuf_ch(&o, s[i + 1]);
            strbuf_put(&o, post, strlen(post));
            i += 2;
        } else {
            strbuf_ch(&o, s[i++]);
        }
    }
    free(s);
    return o.s;
}
static int not_digit(char c) { return !is_digit(c); }
static int dot_comma(char c) { return c == '.' || c == ','; }
static int dash(char c) { return c == '-'; }
static int digit(char c) { return is_digit(c); }

// ' '.join(s.split()); frees s.
static char *squeeze(char *s) {
    StrBuf o = {0};
    strbuf_put(&o, "", 0);
    const unsigned char *p = (const unsigned char *)s;
    int pending = 0;
    while (*p) {
        int k = space_len(p);
        if (k) {
            p += k;
            pending = o.n > 0;
            continue;
        }
        if (pending) strbuf_ch(&o, ' ');
        pending = 0;
        strbuf_ch(&o, (char)*p++);
    }
    free(s);
    return o.s;
}

// Length of s without its trailing whitespace (str.rstrip()).
static size_t rstrip_len(const char *s) {
    size_t end = 0;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, n = strlen(s);
    while (i < n) {
        int k = space_len(p + i);
        if (k) {
            i += (size_t)k;
        } else {
            i++;
            end = i;
        }
    }
    return end;
}

char *tokenize_13a(const char *line) {
    size_t n = rstrip_len(line);
    char *s = xmalloc(n + 1);
    memcpy(s, line, n);
    s[n] = 0;
    s = replace_all(s, "<skipped>", "");
    s = replace_all(s, "-\n", "");
    s = replace_all(s, "\n", " ");
    if (strchr(s, '&')) {
        s = replace_all(s, "&quot;", "\"");
        s = replace_all(s, "&amp;", "&");
        s = replace_all(s, "&lt;", "<");
        s = replace_all(s, "&gt;", ">");
    }
    StrBuf o = {0};
    strbuf_put(&o, " ", 1);
    for (const char *p = s; *p; p++) {
        if (is_13a_punct(*p)) {
            strbuf_ch(&o, ' ');
            strbuf_ch(&o, *p);
            strbuf_ch(&o, ' ');
        } else {
            strbuf_ch(&o, *p);
        }
    }
    strbuf_ch(&o, ' ');
    free(s);
    s = o.s;
    s = sub_pair(s, not_digit, dot_comma, "", " ", " ");
    s = sub_pair(s, dot_comma, not_digit, " ", " ", "");
    s = sub_pair(s, digit, dash, "", " ", " ");
    return squeeze(s);
}

// Words of s (split at whitespace), pointers into a copy; *copy to free with *words.
static int split_words(char ***words, char **copy, const char *s) {
    char *c = xstrdup(s);
    int cap = 16, n = 0;
    char **w = xmalloc((size_t)cap * sizeof *w);
    unsigned char *p = (unsigned char *)c;
    while (*p) {
        int k;
        while ((k = space_len(p))) {
            memset(p, 0, (size_t)k);
            p += k;
        }
        if (!*p) break;
        if (n == cap) w = xrealloc(w, (size_t)(cap *= 2) * sizeof *w);
        w[n++] = (char *)p;
        while (*p && !space_len(p)) p++;
    }
    *words = w;
    *copy = c;
    return n;
}

int sacre_word_count(const char *text) {
    char **w, *c;
    int n = split_words(&w, &c, text);
    free(w);
    free(c);
    return n;
}

// --- n-gram counting over int sequences ---------------------------------------------------

typedef struct {
    const int32_t *p;
    int n;
} Gram;

static int gram_cmp(const void *a, const void *b) {
    const Gram *x = a, *y = b;
    for (int i = 0; i < x->n; i++)
        if (x->p[i] != y->p[i]) return x->p[i] < y->p[i] ? -1 : 1;
    return 0;
}

// The (len - n + 1) n-grams of s, sorted; returns their number (>= 0).
static int grams_sorted(Gram *g, const int32_t *s, int len, int n) {
    int m = len - n + 1;
    if (m < 0) m = 0;
    for (int i = 0; i < m; i++) g[i] = (Gram){s + i, n};
    qsort(g, (size_t)m, sizeof *g, gram_cmp);
    return m;
}

// Occurrences of key in sorted g (m).
static int64_t gram_count(const Gram *g, int m, const Gram *key) {
    int lo = 0, hi = m;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (gram_cmp(&g[mid], key) < 0) lo = mid + 1; else hi = mid;
    }
    int64_t c = 0;
    while (lo < m && gram_cmp(&g[lo], key) == 0) lo++, c++;
    return c;
}

// --- BLEU --------------------------------------------------------------------------------

void bleu_options_default(BleuOptions *o) {
    *o = (BleuOptions){.max_order = 4, .smooth = BLEU_SMOOTH_EXP, .smooth_value = -1,
                       .effective_order = 0, .tokenize = 1};
}

typedef struct {
    const char *s;
    int idx;
} Tok;

static int tok_cmp(const void *a, const void *b) {
    const Tok *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

void bleu_sentence_stats(BleuStats *st, const char *hyp, const char *const *refs, int n_refs,
                         const BleuOptions *o) {
    assert(o->max_order >= 1 && o->max_order <= SACRE_MAX_ORDER);
    int nseg = 1 + n_refs;
    char **text = xcalloc((size_t)nseg, sizeof *text);
    char **copy = xcalloc((size_t)nseg, sizeof *copy);
    char ***words = xcalloc((size_t)nseg, sizeof *words);
    int *len = xcalloc((size_t)nseg, sizeof *len);
    int total_words = 0, present = 0;
    for (int k = 0; k < nseg; k++) {
        const char *src = k == 0 ? hyp : refs[k - 1];
        if (!src) { len[k] = -1; continue; }
        if (k) present++;
        text[k] = o->tokenize ? tokenize_13a(src) : xstrdup(src);
        len[k] = split_words(&words[k], &copy[k], text[k]);
        total_words += len[k];
    }
    assert(present >= 1 && "every sentence needs a reference");
    // Interned ids: equal strings, equal ids.
    Tok *all = xmalloc((size_t)(total_words + 1) * sizeof *all);
    int32_t *ids = xmalloc((size_t)(total_words + 1) * sizeof *ids);
    int at = 0;
    for (int k = 0; k < nseg; k++)
        for (int i = 0; i < len[k]; i++, at++) all[at] = (Tok){words[k][i], at};
    qsort(all, (size_t)total_words, sizeof *all, tok_cmp);
    for (int i = 0, id = -1; i < total_words; i++) {
        if (i == 0 || strcmp(all[i].s, all[i - 1].s)) id++;
        ids[all[i].idx] = id;
    }
    memset(st, 0, sizeof *st);
    st->hyp_len = len[0];
    int best = -1;
    for (int k = 1; k < nseg; k++) {
        if (len[k] < 0) continue;
        int d = abs(len[0] - len[k]), bd = abs(len[0] - best);
        if (best < 0 || d < bd || (d == bd && len[k] < best)) best = len[k];
    }
    st->ref_len = best;
    Gram *hg = xmalloc((size_t)(len[0] + 1) * sizeof *hg);
    Gram **rg = xcalloc((size_t)nseg, sizeof *rg);
    int *rm = xcalloc((size_t)nseg, sizeof *rm);
    for (int k = 1; k < nseg; k++)
        if (len[k] >= 0) rg[k] = xmalloc((size_t)(len[k] + 1) * sizeof **rg);
    for (int n = 1; n <= o->max_order; n++) {
        int off = 0;
        int m = grams_sorted(hg, ids, len[0], n);
        off = len[0];
        for (int k = 1; k < nseg; k++) {
            if (len[k] < 0) continue;
            rm[k] = grams_sorted(rg[k], ids + off, len[k], n);
            off += len[k];
        }
        st->total[n - 1] = m;
        for (int i = 0; i < m;) {
            int j = i;
            while (j < m && gram_cmp(&hg[i], &hg[j]) == 0) j++;
            int64_t hc = j - i, rmax = 0;
            for (int k = 1; k < nseg; k++) {
                if (len[k] < 0) continue;
                int64_t c = gram_count(rg[k], rm[k], &hg[i]);
                if (c > rmax) rmax = c;
            }
            st->correct[n - 1] += hc < rmax ? hc : rmax;
            i = j;
        }
    }
    for (int k = 0; k < nseg; k++) {
        free(text[k]);
        free(copy[k]);
        free(words[k]);
        free(rg[k]);
    }
    free(rg);
    free(rm);
    free(hg);
    free(all);
    free(ids);
    free(text);
    free(copy);
    free(words);
    free(len);
}

static double my_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

double bleu_from_stats(BleuScore *s, const BleuStats *sum, const BleuOptions *o) {
    int N = o->max_order;
    assert(N >= 1 && N <= SACRE_MAX_ORDER);
    double sv = o->smooth_value;
    if (sv < 0) sv = o->smooth == BLEU_SMOOTH_FLOOR ? 0.1 : 1.0;
    BleuScore r = {0};
    r.sys_len = sum->hyp_len;
    r.ref_len = sum->ref_len;
    r.bp = 1.0;
    if (sum->hyp_len < sum->ref_len)
        r.bp = sum->hyp_len > 0 ? exp(1.0 - (double)sum->ref_len / (double)sum->hyp_len) : 0.0;
    int any = 0;
    for (int n = 0; n < N; n++) any |= sum->correct[n] != 0;
    if (any) {
        double smooth_mteval = 1.0;
        int eff = N;
        for (int n = 1; n <= N; n++) {
            double correct = (double)sum->correct[n - 1], total = (double)sum->total[n - 1];
            if (o->smooth == BLEU_SMOOTH_ADD_K && n > 1) {
                correct += sv;
                total += sv;
            }
            if (total == 0) break;
            if (o->effective_order) eff = n;
            if (correct == 0) {
                if (o->smooth == BLEU_SMOOTH_EXP) {
                    smooth_mteval *= 2;
                    r.precisions[n - 1] = 100.0 / (smooth_mteval * total);
                } else if (o->smooth == BLEU_SMOOTH_FLOOR) {
                    r.precisions[n - 1] = 100.0 * sv / total;
                }
            } else {
                r.precisions[n - 1] = 100.0 * correct / total;
            }
        }
        double acc = 0;
        for (int n = 0; n < eff; n++) acc += my_log(r.precisions[n]);
        r.score = r.bp * exp(acc / eff);
    }
    if (s) *s = r;
    return r.score;
}

static void bleu_add(BleuStats *acc, const BleuStats *x) {
    acc->hyp_len += x->hyp_len;
    acc->ref_len += x->ref_len;
    for (int n = 0; n < SACRE_MAX_ORDER; n++) {
        acc->correct[n] += x->correct[n];
        acc->total[n] += x->total[n];
    }
}

double bleu_corpus(BleuScore *s, BleuStats *per_sentence, const char *const *hyps,
                   const char *const *refs, int n, int n_refs, const BleuOptions *o) {
    BleuStats sum = {0};
    for (int i = 0; i < n; i++) {
        BleuStats st;
        bleu_sentence_stats(&st, hyps[i], refs + (size_t)i * n_refs, n_refs, o);
        if (per_sentence) per_sentence[i] = st;
        bleu_add(&sum, &st);
    }
    return bleu_from_stats(s, &sum, o);
}

// --- chrF --------------------------------------------------------------------------------

void chrf_options_default(ChrfOptions *o) {
    *o = (ChrfOptions){.char_order = 6, .beta = 2, .eps_smoothing = 0, .whitespace = 0};
}

// Code points of s (whitespace dropped unless keep_space); an invalid byte b becomes
// 0x110000 + b. Returns the count; *out malloc'd.
static int code_points(int32_t **out, const char *s, int keep_space) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    int32_t *cp = xmalloc((n + 1) * sizeof *cp);
    int m = 0;
    for (size_t i = 0; i < n;) {
        int k = space_len(p + i);
        if (k && !keep_space) {
            i += (size_t)k;
            continue;
        }
        unsigned c = p[i];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len > 0 && i + (size_t)len <= n;
        uint32_t v = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        for (int j = 1; ok && j < len; j++) {
            if ((p[i + j] & 0xc0) != 0x80) ok = 0;
            else v = (v << 6) | (p[i + j] & 0x3f);
        }
        if (ok && ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) ||
                   (len == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff)))
            ok = 0;
        if (ok) {
            cp[m++] = (int32_t)v;
            i += (size_t)len;
        } else {
            cp[m++] = (int32_t)(0x110000 + c);
            i++;
        }
    }
    *out = cp;
    return m;
}

static double chrf_f(const ChrfStats *st, const ChrfOptions *o) {
    const double eps = 1e-16;
    double factor = o->beta * o->beta, score = 0, avg_p = 0, avg_r = 0;
    int eff = 0;
    for (int i = 0; i < o->char_order; i++) {
        double nh = (double)st->hyp[i], nr = (double)st->ref[i], nm = (double)st->match[i];
        double prec = nh > 0 ? nm / nh : eps;
        double rec = nr > 0 ? nm / nr : eps;
        double denom = factor * prec + rec;
        score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
        if (nh > 0 && nr > 0) {
            avg_p += prec;
            avg_r += rec;
            eff++;
        }
    }
    if (o->eps_smoothing) return 100 * score / o->char_order;
    if (eff == 0) {
        avg_p = avg_r = 0;
    } else {
        avg_p /= eff;
        avg_r /= eff;
    }
    if (avg_p + avg_r != 0) return 100 * (1 + factor) * avg_p * avg_r / (factor * avg_p + avg_r);
    return 0.0;
}

double chrf_from_stats(const ChrfStats *sum, const ChrfOptions *o) {
    assert(o->char_order >= 1 && o->char_order <= SACRE_MAX_ORDER);
    return chrf_f(sum, o);
}

void chrf_sentence_stats(ChrfStats *st, const char *hyp, const char *const *refs, int n_refs,
                         const ChrfOptions *o) {
    assert(o->char_order >= 1 && o->char_order <= SACRE_MAX_ORDER);
    int32_t *h;
    int hl = code_points(&h, hyp, o->whitespace);
    Gram *hg = xmalloc((size_t)(hl + 1) * sizeof *hg);
    double best_f = -1.0;
    int present = 0;
    memset(st, 0, sizeof *st);
    for (int r = 0; r < n_refs; r++) {
        if (!refs[r]) continue;
        present++;
        int32_t *c;
        int rl = code_points(&c, refs[r], o->whitespace);
        Gram *rg = xmalloc((size_t)(rl + 1) * sizeof *rg);
        ChrfStats cur;
        memset(&cur, 0, sizeof cur);
        for (int n = 1; n <= o->char_order; n++) {
            int hm = grams_sorted(hg, h, hl, n), rm = grams_sorted(rg, c, rl, n);
            int64_t match = 0;
            for (int i = 0; i < hm;) {
                int j = i;
                while (j < hm && gram_cmp(&hg[i], &hg[j]) == 0) j++;
                int64_t hc = j - i, rc = gram_count(rg, rm, &hg[i]);
                match += hc < rc ? hc : rc;
                i = j;
            }
            cur.hyp[n - 1] = rm > 0 ? hm : 0;
            cur.ref[n - 1] = rm;
            cur.match[n - 1] = match;
        }
        double f = chrf_f(&cur, o);
        if (f > best_f) {
            best_f = f;
            *st = cur;
        }
        free(rg);
        free(c);
    }
    assert(present >= 1 && "every sentence needs a reference");
    free(hg);
    free(h);
}

double chrf_corpus(ChrfStats *per_sentence, const char *const *hyps, const char *const *refs,
                   int n, int n_refs, const ChrfOptions *o) {
    ChrfStats sum;
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < n; i++) {
        ChrfStats st;
        chrf_sentence_stats(&st, hyps[i], refs + (size_t)i * n_refs, n_refs, o);
        if (per_sentence) per_sentence[i] = st;
        for (int k = 0; k < SACRE_MAX_ORDER; k++) {
            sum.hyp[k] += st.hyp[k];
            sum.ref[k] += st.ref[k];
            sum.match[k] += st.match[k];
        }
    }
    return chrf_from_stats(&sum, o);
}

// --- bootstrap ---------------------------------------------------------------------------

// Statistics as rows of int64 words: BleuStats and ChrfStats hold int64_t only.
typedef double (*ScoreFn)(const int64_t *sum, const void *opt);
static double bleu_score_words(const int64_t *sum, const void *opt) {
    BleuStats s;
    memcpy(&s, sum, sizeof s);
    return bleu_from_stats(NULL, &s, opt);
}
static double chrf_score_words(const int64_t *sum, const void *opt) {
    ChrfStats s;
    memcpy(&s, sum, sizeof s);
    return chrf_from_stats(&s, opt);
}

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// sacreBLEU's estimate_ci on scores (n), sorted in place.
static void estimate_ci(BootstrapResult *r, double *scores, int n) {
    double mean = 0;
    for (int i = 0; i < n; i++) mean += scores[i];
    mean /= n;
    qsort(scores, (size_t)n, sizeof *scores, dcmp);
    int lo = n / 40, hi = n - lo - 1;
    r->mean = mean;
    r->lower = scores[lo];
    r->upper = scores[hi];
    r->ci = 0.5 * (scores[hi] - scores[lo]);
}

// out's diff fields: the difference on all sentences and estimate_ci of the resamples'
// differences sys[s] - base[s] (before either is sorted).
static void paired_difference(BootstrapResult *out, const double *sys, const double *base,
                              double diff, int n_samples) {
    double *d = xmalloc((size_t)n_samples * sizeof *d);
    for (int s = 0; s < n_samples; s++) d[s] = sys[s] - base[s];
    BootstrapResult r;
    estimate_ci(&r, d, n_samples);
    out->diff = diff;
    out->diff_mean = r.mean;
    out->diff_ci = r.ci;
    out->diff_lower = r.lower;
    out->diff_upper = r.upper;
    free(d);
}

static void bootstrap(BootstrapResult *out, BootstrapResult *base_out, const int64_t *sys,
                      const int64_t *base, int width, int n, ScoreFn score, const void *opt,
                      int n_samples, uint64_t seed) {
    assert(n >= 1 && n_samples >= 1);
    int64_t *sum = xmalloc((size_t)width * sizeof *sum), *bsum = xmalloc((size_t)width * sizeof *bsum);
    double *ss = xmalloc((size_t)n_samples * sizeof *ss);
    double *bs = xmalloc((size_t)n_samples * sizeof *bs);
    memset(sum, 0, (size_t)width * sizeof *sum);
    memset(bsum, 0, (size_t)width * sizeof *bsum);
    for (int i = 0; i < n; i++)
        for (int w = 0; w < width; w++) {
            sum[w] += sys[(size_t)i * width + w];
            if (base) bsum[w] += base[(size_t)i * width + w];
        }
    double sys_score = score(sum, opt), base_score = base ? score(bsum, opt) : 0;
    Rng rng;
    rng_seed(&rng, seed);
    for (int s = 0; s < n_samples; s++) {
        memset(sum, 0, (size_t)width * sizeof *sum);
        memset(bsum, 0, (size_t)width * sizeof *bsum);
        for (int i = 0; i < n; i++) {
            size_t k = rng_below(&rng, (uint32_t)n);
            for (int w = 0; w < width; w++) {
                sum[w] += sys[k * width + w];
                if (base) bsum[w] += base[k * width + w];
            }
        }
        ss[s] = score(sum, opt);
        bs[s] = base ? score(bsum, opt) : 0;
    }
    out->score = sys_score;
    out->p_value = -1;
    out->diff = out->diff_mean = out->diff_ci = out->diff_lower = out->diff_upper = 0;
    if (base) {
        double real = fabs(base_score - sys_score), mean = 0;
        for (int s = 0; s < n_samples; s++) mean += fabs(ss[s] - bs[s]);
        mean /= n_samples;
        int c = 0;
        for (int s = 0; s < n_samples; s++) c += fabs(ss[s] - bs[s]) - mean > real;
        out->p_value = (c + 1.0) / (n_samples + 1.0);
        paired_difference(out, ss, bs, sys_score - base_score, n_samples);
    }
    estimate_ci(out, ss, n_samples);
    if (base && base_out) {
        base_out->score = base_score;
        base_out->p_value = -1;
        base_out->diff = base_out->diff_mean = base_out->diff_ci = 0;
        base_out->diff_lower = base_out->diff_upper = 0;
        estimate_ci(base_out, bs, n_samples);
    }
    free(sum);
    free(bsum);
    free(ss);
    free(bs);
}

void bleu_bootstrap(BootstrapResult *out, BootstrapResult *base_out, const BleuStats *sys,
                    const BleuStats *base, int n, const BleuOptions *o, int n_samples,
                    uint64_t seed) {
    bootstrap(out, base_out, (const int64_t *)sys, (const int64_t *)base,
              (int)(sizeof *sys / sizeof(int64_t)), n, bleu_score_words, o, n_samples, seed);
}

void chrf_bootstrap(BootstrapResult *out, BootstrapResult *base_out, const ChrfStats *sys,
                    const ChrfStats *base, int n, const ChrfOptions *o, int n_samples,
                    uint64_t seed) {
    bootstrap(out, base_out, (const int64_t *)sys, (const int64_t *)base,
              (int)(sizeof *sys / sizeof(int64_t)), n, chrf_score_words, o, n_samples, seed);
}

// --- BLEU by source length ---------------------------------------------------------------

void bleu_by_length(LengthBucket *out, const int *edges, int n_edges, const int *src_words,
                    const BleuStats *stats, int n, const BleuOptions *o) {
    BleuStats *sum = xcalloc((size_t)n_edges + 1, sizeof *sum);
    for (int k = 0; k <= n_edges; k++) {
        out[k].lo = k == 0 ? 0 : edges[k - 1] + 1;
        out[k].hi = k == n_edges ? -1 : edges[k];
        out[k].n = 0;
        out[k].bleu = 0;
    }
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < n_edges && src_words[i] > edges[k]) k++;
        out[k].n++;
        bleu_add(&sum[k], &stats[i]);
    }
    for (int k = 0; k <= n_edges; k++)
        if (out[k].n) out[k].bleu = bleu_from_stats(NULL, &sum[k], o);
    free(sum);
}
