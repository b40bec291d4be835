// bible_pairs.c: `make data`'s maker of the English-Spanish verse pairs (datasets/bible.h).
//
//   bible_pairs EN.imp ES.imp OUTDIR
//
// EN.imp and ES.imp are `mod2imp engWEB2015eb` and `mod2imp spaRV1909eb` (raw OSIS). Writes,
// each atomically, OUTDIR/{train,valid,test}.tsv (ENGLISH<TAB>SPANISH, one verse a line,
// in the English module's order), OUTDIR/{train,valid,test}.keys (the verse of each line),
// OUTDIR/unpaired.tsv (KEY<TAB>why, for every verse with text on one side only) and
// OUTDIR/stats.txt (what it prints on stdout: counts per split, words per verse, vocabulary).
// Words are the space-separated tokens of a verse; the vocabulary counts them lower-cased
// (ASCII and Latin-1 letters) with the punctuation around them removed.
// A module export that is missing, damaged or truncated (fewer than 30,000 verses) is one
// line "bible_pairs: FILE: REASON" on stderr and exit status 1, with nothing written.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "datasets/bible.h"

#define MIN_VERSES 30000

static const char *const SPLITS[3] = {"train", "valid", "test"};

typedef struct {
    char *s;
    size_t n, cap;
} Text;

static void text_add(Text *t, const char *s) {
    size_t n = strlen(s);
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->s = xrealloc(t->s, t->cap);
    }
    memcpy(t->s + t->n, s, n + 1);
    t->n += n;
}

static int count_words(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++) n += *p != ' ' && (p == s || p[-1] == ' ');
    return n;
}

static int cmp_int(const void *a, const void *b) {
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// A word for the vocabulary: lower-cased, punctuation around it removed ("" if none left).
static void vocab_word(char *w) {
    static const char *const PUNCT[] = {"\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x98",
                                        "\xe2\x80\x99", "\xc2\xbf", "\xc2\xa1", "\xc2\xab",
                                        "\xc2\xbb", "\xe2\x80\x94", "\xe2\x80\xa6", NULL};
    for (int again = 1; again;) {
        again = 0;
        size_t n = strlen(w);
        if (n && strchr(",.;:!?()[]\"'-*", w[n - 1])) w[n - 1] = 0, again = 1;
        else if (n && strchr(",.;:!?()[]\"'-*", w[0])) memmove(w, w + 1, n), again = 1;
        for (int k = 0; PUNCT[k] && !again; k++) {
            size_t l = strlen(PUNCT[k]);
            if (n >= l && memcmp(w + n - l, PUNCT[k], l) == 0) w[n - l] = 0, again = 1;
            else if (n >= l && memcmp(w, PUNCT[k], l) == 0) memmove(w, w + l, n - l + 1), again = 1;
        }
    }
    for (unsigned char *p = (unsigned char *)w; *p; p++) {
        if (*p >= 'A' && *p <= 'Z') *p += 32;
        else if (*p == 0xC3 && p[1] >= 0x80 && p[1] <= 0x9E && p[1] != 0x97) p[1] += 32, p++;
    }
}

// Distinct vocabulary words of texts[0..n).
static int vocab_size(char *const *texts, int n) {
    int cap = 1024, m = 0;
    char **w = xmalloc((size_t)cap * sizeof *w);
    for (int i = 0; i < n; i++) {
        char *copy = xstrdup(texts[i]);
        for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
            vocab_word(tok);
            if (!*tok) continue;
            if (m == cap) w = xrealloc(w, (size_t)(cap *= 2) * sizeof *w);
            w[m++] = xstrdup(tok);
        }
        free(copy);
    }
    qsort(w, (size_t)m, sizeof *w, cmp_str);
    int distinct = 0;
    for (int i = 0; i < m; i++) distinct += i == 0 || strcmp(w[i - 1], w[i]) != 0;
    for (int i = 0; i < m; i++) free(w[i]);
    free(w);
    return distinct;
}

// "mean M, median D, max X" of the word counts of texts[0..n) into buf.
static void lengths(char *buf, size_t cap, char *const *texts, int n) {
    int *c = xmalloc((size_t)(n ? n : 1) * sizeof *c);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += c[i] = count_words(texts[i]);
    qsort(c, (size_t)n, sizeof *c, cmp_int);
    double median = n == 0 ? 0 : n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    snprintf(buf, cap, "mean %.1f, median %.1f, max %d", n ? sum / n : 0., median, n ? c[n - 1] : 0);
    free(c);
}

static int write_text(const char *dir, const char *name, const Text *t, Error *err) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return file_write_atomic(path, t->s ? t->s : "", t->n, err);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: bible_pairs EN.imp ES.imp OUTDIR\n");
        return 2;
    }
    Error err = {{0}};
    BibleVerses en, es;
    if (bible_read_imp(&en, argv[1], MIN_VERSES, &err)) {
        fprintf(stderr, "bible_pairs: %s\n", err.msg);
        return 1;
    }
    if (bible_read_imp(&es, argv[2], MIN_VERSES, &err)) {
        fprintf(stderr, "bible_pairs: %s\n", err.msg);
        bible_verses_free(&en);
        return 1;
    }
    BiblePairs p;
    bible_pair(&p, &en, &es);
    unsigned char *shifted = xmalloc((size_t)(p.n ? p.n : 1));
    int n_shifted = bible_flag_shifted(&p, shifted);
    Text tsv[3] = {{0}}, keys[3] = {{0}}, unpaired = {0}, stats = {0};
    char **side[3][2];
    int count[3] = {0};
    for (int s = 0; s < 3; s++) {
        side[s][0] = xmalloc((size_t)(p.n ? p.n : 1) * sizeof(char *));
        side[s][1] = xmalloc((size_t)(p.n ? p.n : 1) * sizeof(char *));
    }
    Text chapters = {0};
    for (int i = 0; i < p.n; i++) {
        if (shifted[i]) {  // left out: its chapter is numbered differently on the two sides
            text_add(&unpaired, p.key[i]);
            text_add(&unpaired, "\tchapter numbered differently (datasets/bible.h)\n");
            if (i == 0 || !shifted[i - 1]) {
                char ch[128];
                snprintf(ch, sizeof ch, "%s%.*s", chapters.n ? ", " : "", (int)(strrchr(p.key[i], ':') - p.key[i]),
                         p.key[i]);
                text_add(&chapters, ch);
            }
            continue;
        }
        int s = bible_split_of(p.key[i], BIBLE_SPLIT_SEED);
        CHECK(!strchr(p.src[i], '\t') && !strchr(p.tgt[i], '\t') && !strchr(p.src[i], '\n') &&
              !strchr(p.tgt[i], '\n'), "%s", p.key[i]);
        text_add(&tsv[s], p.src[i]), text_add(&tsv[s], "\t"), text_add(&tsv[s], p.tgt[i]);
        text_add(&tsv[s], "\n");
        text_add(&keys[s], p.key[i]), text_add(&keys[s], "\n");
        side[s][0][count[s]] = p.src[i], side[s][1][count[s]] = p.tgt[i];
        count[s]++;
    }
    for (int i = 0; i < p.n_src_only; i++) {
        text_add(&unpaired, p.src_only[i]);
        text_add(&unpaired, "\tEnglish only (no Spanish text)\n");
    }
    for (int i = 0; i < p.n_tgt_only; i++) {
        text_add(&unpaired, p.tgt_only[i]);
        text_add(&unpaired, "\tSpanish only (no English text)\n");
    }
    char line[512], le[96], ls[96];
    snprintf(line, sizeof line,
             "verses: %d English (engWEB2015eb), %d Spanish (spaRV1909eb); %d paired by reference, %d "
             "kept\n",
             en.n, es.n, p.n, p.n - n_shifted);
    text_add(&stats, line);
    snprintf(line, sizeof line, "left out: %d verses of chapters numbered differently: ", n_shifted);
    text_add(&stats, line);
    text_add(&stats, chapters.s ? chapters.s : "none");
    text_add(&stats, "\n");
    snprintf(line, sizeof line,
             "unpaired: %d with English text only (%d of them empty in Spanish), %d with Spanish "
             "text only (%d of them empty in English), %d with no text on either side\n",
             p.n_src_only, p.n_empty_tgt, p.n_tgt_only, p.n_empty_src, p.n_no_text);
    text_add(&stats, line);
    for (int s = 0; s < 3; s++) {
        lengths(le, sizeof le, side[s][0], count[s]);
        lengths(ls, sizeof ls, side[s][1], count[s]);
        snprintf(line, sizeof line,
                 "%s: %d pairs; words per verse: English %s; Spanish %s; vocabulary: English %d, "
                 "Spanish %d\n",
                 SPLITS[s], count[s], le, ls, vocab_size(side[s][0], count[s]),
                 vocab_size(side[s][1], count[s]));
        text_add(&stats, line);
    }
    snprintf(line, sizeof line, "all paired by reference: vocabulary English %d, Spanish %d\n",
             vocab_size(p.src, p.n),
             vocab_size(p.tgt, p.n));
    text_add(&stats, line);
    int rc = make_dirs(argv[3], &err);
    char name[32];
    for (int s = 0; s < 3 && rc == 0; s++) {
        snprintf(name, sizeof name, "%s.tsv", SPLITS[s]);
        rc = write_text(argv[3], name, &tsv[s], &err);
        snprintf(name, sizeof name, "%s.keys", SPLITS[s]);
        if (rc == 0) rc = write_text(argv[3], name, &keys[s], &err);
    }
    if (rc == 0) rc = write_text(argv[3], "unpaired.tsv", &unpaired, &err);
    if (rc == 0) rc = write_text(argv[3], "stats.txt", &stats, &err);
    if (rc) fprintf(stderr, "bible_pairs: %s\n", err.msg);
    else fputs(stats.s, stdout);
    for (int s = 0; s < 3; s++) {
        free(tsv[s].s), free(keys[s].s), free(side[s][0]), free(side[s][1]);
    }
    free(unpaired.s), free(stats.s), free(chapters.s), free(shifted);
    bible_pairs_free(&p);
    bible_verses_free(&en);
    bible_verses_free(&es);
    return rc ? 1 : 0;
}
