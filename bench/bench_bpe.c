// bench_bpe.c [FILE [MERGES [COLUMN]]]: BPE learning and segmenting speed (seq/bpe.h).
//
// FILE: text, one sentence per line; a TSV line counts its COLUMN (1 or 2, default 2, the
// Spanish side of data/bible/train.tsv). Without FILE, a built-in generated corpus of
// 30,000 lines. Learns MERGES merges (default 8000) with min_count 2, timed once (the
// incremental pair counts; bpe_learn_words_reference, which recounts every pair with a
// plain list search for each merge, is sized for the tests only), then segments every
// line, repeated for at least a second after a warm-up.
// Figures on stdout: lines, distinct words, merges made, learning seconds and merges/s,
// segmenting lines/s and words/s. BPE_MERGES_OUT=PATH also writes the merges text there.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/timer.h"
#include "seq/bpe.h"

static char **read_lines(const char *path, int column, int *n) {
    FILE *fp = fopen(path, "rb");
    CHECK(fp, "cannot open %s", path);
    static char line[1 << 16];
    int cap = 1024;
    char **out = xmalloc((size_t)cap * sizeof *out);
    *n = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = 0;
        char *text = line, *tab = strchr(line, '\t');
        if (tab && column == 2) text = tab + 1;
        else if (tab) *tab = 0;
        text[strcspn(text, "\t")] = 0;
        if (*n == cap) out = xrealloc(out, (size_t)(cap *= 2) * sizeof *out);
        out[(*n)++] = xstrdup(text);
    }
    fclose(fp);
    return out;
}

// 30,000 lines of 20 words built from Spanish-like stems and endings.
static char **generated(int *n) {
    static const char *stems[] = {"am", "habl", "com", "viv", "dij", "estab", "pued", "ten", "hij",
                                  "dios", "tierr", "cas", "pueb", "rey", "hombr", "muj", "sacerdot",
                                  "jerusal", "israel", "palabr", "sant", "gent", "cielo", "agu"};
    static const char *ends[] = {"o", "as", "a", "amos", "aron", "aba", "ar\xc3\xa1", "\xc3\xad",
                                 "ieron", "es", "e", "os", "ados", "ando", "ido", "emos"};
    Rng r;
    rng_seed(&r, 1);
    *n = 30000;
    char **out = xmalloc((size_t)*n * sizeof *out);
    for (int i = 0; i < *n; i++) {
        char buf[1024];
        size_t at = 0;
        for (int w = 0; w < 20; w++)
            at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s%s%s", w ? " " : "",
                                   stems[rng_below(&r, 24)], ends[rng_below(&r, 16)],
                                   rng_below(&r, 4) == 0 ? ends[rng_below(&r, 16)] : "");
        out[i] = xstrdup(buf);
    }
    return out;
}

int main(int argc, char **argv) {
    int n, merges = argc > 2 ? atoi(argv[2]) : 8000, column = argc > 3 ? atoi(argv[3]) : 2;
    char **lines = argc > 1 ? read_lines(argv[1], column, &n) : generated(&n);
    Bpe b;
    Error err = {{0}};
    double t0 = timer_now();
    CHECK(bpe_learn(&b, (const char *const *)lines, n, merges, 2, argc > 1 ? argv[1] : "built-in", &err) == 0,
          "%s", err.msg);
    double learn_s = timer_now() - t0;
    const char *out = getenv("BPE_MERGES_OUT");
    if (out) {
        char *text = bpe_to_text(&b);
        FILE *fp = fopen(out, "wb");
        CHECK(fp && fputs(text, fp) >= 0 && fclose(fp) == 0, "cannot write %s", out);
        free(text);
    }
    long words = 0;
    for (int pass = 0; pass < 2; pass++) {  // the first pass is the warm-up
        long passes = 0, pieces = 0;
        words = 0;
        t0 = timer_now();
        double dt;
        do {
            for (int i = 0; i < n; i++) {
                int *ids, m;
                bpe_encode(&b, lines[i], &ids, &m);
                pieces += m;
                free(ids);
                for (const char *p = lines[i]; *p;) {
                    while (*p == ' ') p++;
                    if (!*p) break;
                    words++;
                    while (*p && *p != ' ') p++;
                }
            }
            passes++;
            dt = timer_now() - t0;
        } while (pass == 1 && dt < 1.0);
        if (pass == 1)
            printf("bpe: %d lines (%s), %d merges in %.2f s (%.0f merges/s), vocabulary %d; "
                   "segmenting %.0f lines/s, %.0f words/s, %.2f pieces/word (%ld passes, %.2f s)\n",
                   n, argc > 1 ? argv[1] : "built-in", b.n_merges, learn_s, b.n_merges / learn_s,
                   b.n_vocab, passes * n / dt, words / dt, (double)pieces / words, passes, dt);
    }
    bpe_free(&b);
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines);
    return 0;
}
