// test_sacrebleu.c: sacreBLEU's BLEU, 13a tokenizer, chrF, bootstrap and length buckets
// (seq/sacrebleu.h) on a table of cases.
//
// Expected scores come from sacreBLEU's own tests (github.com/mjpost/sacrebleu, commit
// f615c72): test/test_bleu.py (test_corpus_bleu_cases, test_bleu_max_order,
// test_case_statistics, test_case_scoring, test_raw_bleu_cases, test_case_effective_order,
// test_case_offset, test_case_degenerate_stats) and test/test_chrf.py (test_cases,
// test_cases_effective_order, test_cases_keep_whitespace, test_sentence_level_chrf). The
// 13a cases were run once through tokenizer_13a.py's regular expressions in Python's re;
// the brevity-penalty and bucket figures are worked by hand in the comments. No Python
// runs here. Cross-checked once by hand (2026-12-01) against sacreBLEU's own source at that
// commit, run from a checkout: tokenize_13a gave the same tokens on all 55,681 verses of
// both sides of data/bible/train.tsv, and bleu_corpus and chrf_corpus the same BLEU and chrF
// to 10 digits on the validation split (1,527 verses, perturbed hypotheses, one reference
// and two with some absent), Spanish and English.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seq/sacrebleu.h"
#include "tests/support/test.h"

// --- 13a ---------------------------------------------------------------------------------

static void expect_13a(const char *in, const char *want) {
    char *got = tokenize_13a(in);
    EXPECT(strcmp(got, want) == 0, "13a '%s' -> '%s', expected '%s'", in, got, want);
    free(got);
}

static void test_tokenize_13a(void) {
    expect_13a("Hello, world!", "Hello , world !");
    expect_13a("3.5 and 1,000.", "3.5 and 1,000 .");        // . and , stay between digits
    expect_13a("1990-91 well-known", "1990 - 91 well-known");  // - splits after a digit only
    expect_13a("don't", "don't");
    expect_13a("It wasn't surprising.", "It wasn't surprising .");
    expect_13a("U.S.A.", "U . S . A .");
    expect_13a("a..b", "a . . b");
    expect_13a("...", ". . .");
    expect_13a(",5", ", 5");
    expect_13a("e.g., 5,a 5.a a.5", "e . g . , 5 , a 5 . a a . 5");
    expect_13a("$5.00", "$ 5.00");
    expect_13a("(hi) [x]{y}", "( hi ) [ x ] { y }");
    expect_13a("&quot;Hi&quot; &amp; bye", "\" Hi \" & bye");
    expect_13a("&amp;lt;", "<");               // one pass per entity, &quot; first
    expect_13a("&amp;quot;", "& quot ;");
    expect_13a("&lt;b&gt;", "< b >");
    expect_13a("well-\nknown", "wellknown");
    expect_13a("a\nb", "a b");
    expect_13a("x-\n", "x-");                  // right-stripped before "-\n" goes
    expect_13a("<skipped>x", "x");
    expect_13a("\xc3\xa9.", "\xc3\xa9 .");     // é.
    expect_13a("a\xc2\xa0" "b\xe3\x80\x80" "c", "a b c");  // U+00A0, U+3000 are whitespace
    expect_13a("a\xe2\x80\xa8" "b\x1c" "c", "a b c");      // U+2028, 0x1c
    expect_13a("", "");
    expect_13a("   \t ", "");
}

// --- BLEU --------------------------------------------------------------------------------

static const char *const hyps3[] = {"The dog bit the man.", "It wasn't surprising.",
                                    "The man had just bitten him."};
// refs[i * 2 + r]: test_bleu.py's _refs, two reference streams.
static const char *const refs3[] = {
    "The dog bit the man.",   "The dog had bit the man.",
    "It was not unexpected.", "No one was surprised.",
    "The man bit him first.", "The man had bitten the dog.",
};

static void test_bleu_corpus_cases(void) {
    BleuOptions o;
    bleu_options_default(&o);
    BleuScore s;
    EXPECT_NEAR(bleu_corpus(&s, NULL, hyps3, refs3, 3, 2, &o), 48.530827, 1e-6, 0);
    const char *empty[] = {"", "", ""};
    EXPECT(bleu_corpus(&s, NULL, empty, refs3, 3, 2, &o) == 0.0);
    EXPECT(s.sys_len == 0 && s.ref_len > 0 && s.bp == 0.0);
    o.tokenize = 0;
    EXPECT_NEAR(bleu_corpus(NULL, NULL, hyps3, refs3, 3, 2, &o), 49.1919566, 1e-6, 0);
    bleu_options_default(&o);
    o.smooth = BLEU_SMOOTH_NONE;
    EXPECT_NEAR(bleu_corpus(NULL, NULL, hyps3, refs3, 3, 2, &o), 48.530827, 1e-6, 0);
    const double by_order[] = {77.65, 60.50, 53.93, 48.53, 46.14, 43.28};
    for (int k = 1; k <= 6; k++) {
        bleu_options_default(&o);
        o.max_order = k;
        double b = bleu_corpus(NULL, NULL, hyps3, refs3, 3, 2, &o);
        EXPECT(fabs(b - by_order[k - 1]) <= 0.005, "max order %d: %.4f, expected %.2f", k, b,
               by_order[k - 1]);
    }
}

static void test_bleu_statistics_and_scoring(void) {
    BleuOptions o;
    bleu_options_default(&o);
    o.tokenize = 0;
    const char *ref = "I am a symbol string sequence a a";
    BleuStats st;
    bleu_sentence_stats(&st, "am I am a character sequence", &ref, 1, &o);
    const int64_t correct[] = {4, 2, 1, 0}, total[] = {6, 5, 4, 3};
    for (int n = 0; n < 4; n++)
        EXPECT(st.correct[n] == correct[n] && st.total[n] == total[n], "order %d: %lld/%lld",
               n + 1, (long long)st.correct[n], (long long)st.total[n]);
    EXPECT(st.hyp_len == 6 && st.ref_len == 8);
    // compute_bleu's own default smoothing is "none".
    BleuStats sum = {.hyp_len = 11, .ref_len = 11, .correct = {9, 7, 5, 3}, .total = {10, 8, 6, 4}};
    o.smooth = BLEU_SMOOTH_NONE;
    EXPECT_NEAR(bleu_from_stats(NULL, &sum, &o), 83.75922397, 1e-6, 0);
    // test_case_offset: floor smoothing 0.1 (default) and 0.0, effective order.
    o.smooth = BLEU_SMOOTH_FLOOR;
    o.effective_order = 1;
    o.smooth_value = -1;
    EXPECT_NEAR(bleu_from_stats(NULL, &st, &o), 15.55722182, 1e-6, 0);
    o.smooth_value = 0.0;
    EXPECT(bleu_from_stats(NULL, &st, &o) == 0.0);
    // test_case_degenerate_stats (floor smoothing): all 0.
    const BleuStats degenerate[] = {
        {.hyp_len = 0, .ref_len = 1, .total = {4, 4, 2, 1}},
        {.hyp_len = 14, .ref_len = 10, .total = {10, 11, 12, 0}},
        {.hyp_len = 0, .ref_len = 0},
        {.hyp_len = 6, .ref_len = 6, .correct = {6, 5, 4, 0}, .total = {6, 5, 4, 3}},
        {.hyp_len = 1, .ref_len = 5},
    };
    const double offset[] = {0.0, 0.0, 0.1, 0.0, 0.01};
    for (int i = 0; i < 5; i++) {
        o.smooth_value = offset[i];
        EXPECT(bleu_from_stats(NULL, &degenerate[i], &o) == 0.0, "degenerate case %d", i);
    }
}

// raw_corpus_bleu: floor 0.01, effective order, tokenize none.
static double raw_bleu(const char *const *hyps, const char *const *refs, int n) {
    BleuOptions o;
    bleu_options_default(&o);
    o.tokenize = 0;
    o.smooth = BLEU_SMOOTH_FLOOR;
    o.smooth_value = 0.01;
    o.effective_order = 1;
    return bleu_corpus(NULL, NULL, hyps, refs, n, 1, &o);
}

static void test_bleu_raw_and_effective_order(void) {
    const char *h1[] = {"this is a test", "another test"}, *r1[] = {"ref1", "ref2"};
    EXPECT(raw_bleu(h1, r1, 2) == 0.0, "no match at all gives 0");
    const char *h2[] = {"this is a test"}, *r2[] = {"this is a test"};
    EXPECT_NEAR(raw_bleu(h2, r2, 1), 100.0, 1e-6, 0);
    const char *h3[] = {"this is a fest"};
    EXPECT_NEAR(raw_bleu(h3, r2, 1), 22.3606797749979, 1e-6, 0);
    const char *r4[] = {"a test"};
    const char *h4[] = {"test"}, *h5[] = {"a test"}, *h6[] = {"a little test"};
    EXPECT_NEAR(raw_bleu(h4, r4, 1), 36.78794411714425, 1e-6, 0);
    EXPECT_NEAR(raw_bleu(h5, r4, 1), 100.0, 1e-6, 0);
    EXPECT_NEAR(raw_bleu(h6, r4, 1), 3.218297948685433, 1e-6, 0);
}

static void test_bleu_brevity_and_references(void) {
    BleuOptions o;
    bleu_options_default(&o);
    // Every n-gram matches; 4 words against 8: BP = exp(1 - 8/4) = e^-1.
    const char *h[] = {"a b c d"}, *r[] = {"a b c d e f g h"};
    BleuScore s;
    EXPECT_NEAR(bleu_corpus(&s, NULL, h, r, 1, 1, &o), 36.787944117144233, 1e-9, 0);
    EXPECT_NEAR(s.bp, 0.36787944117144233, 1e-12, 0);
    EXPECT(s.sys_len == 4 && s.ref_len == 8);
    // Longer than the reference: no penalty.
    const char *r2[] = {"a b c"};
    const char *h2[] = {"a b c d"};
    bleu_corpus(&s, NULL, h2, r2, 1, 1, &o);
    EXPECT(s.bp == 1.0 && s.ref_len == 3);
    // Closest reference length, ties to the shorter: 4 words vs 3 and 5 -> 3.
    const char *r3[] = {"a b c d e", "a b c"};
    BleuStats st;
    bleu_sentence_stats(&st, "a b c d", r3, 2, &o);
    EXPECT(st.ref_len == 3, "ref_len %lld", (long long)st.ref_len);
    // Clipping by the largest count in one reference: "the the the" vs "the cat", "the the".
    const char *r4[] = {"the cat", "the the"};
    bleu_sentence_stats(&st, "the the the", r4, 2, &o);
    EXPECT(st.correct[0] == 2 && st.total[0] == 3 && st.correct[1] == 1 && st.total[1] == 2);
    // An absent (NULL) reference is skipped.
    const char *r5[] = {NULL, "a b c d"};
    bleu_sentence_stats(&st, "a b c d", r5, 2, &o);
    EXPECT(st.ref_len == 4 && st.correct[3] == 1);
    // exp smoothing: "a b c x" vs "a b c d": 3/4, 2/3, 1/2, 0/1 -> p4 = 100 / (2 * 1).
    const char *r6[] = {"a b c d"}, *h6[] = {"a b c x"};
    bleu_corpus(&s, NULL, h6, r6, 1, 1, &o);
    EXPECT_NEAR(s.precisions[3], 50.0, 1e-12, 0);
    EXPECT_NEAR(s.score, 100.0 * pow(0.75 * (2.0 / 3) * 0.5 * 0.5, 0.25), 1e-9, 0);
    // A hypothesis too short for 4-grams: total_4 = 0 ends the loop, BLEU = 0.
    const char *h7[] = {"a b c"};
    EXPECT(bleu_corpus(&s, NULL, h7, r6, 1, 1, &o) == 0.0);
}

// --- chrF --------------------------------------------------------------------------------

static double chrf1(const char *hyp, const char *ref, double beta, int eps, int space) {
    ChrfOptions o;
    chrf_options_default(&o);
    o.beta = beta;
    o.eps_smoothing = eps;
    o.whitespace = space;
    return chrf_corpus(NULL, &hyp, &ref, 1, 1, &o);
}

static void test_chrf_cases(void) {
    // test_cases: char order 6, beta 3, eps smoothing; corpus ["a", "b"] vs ["a", "c"].
    struct { const char *h, *r; double want; } eps[] = {
        {"abcdefg", "hijklmnop", 0.0}, {"a", "b", 0.0}, {"", "b", 0.0}, {"", "ref", 0.0},
        {"", "reference", 0.0}, {"aa", "ab", 8.3333}, {"a", "a", 16.6667},
        {"a b c", "a b c", 50.0}, {"a b c", "abc", 50.0},
        {" risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .",
         "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .",
         63.361730},
        {" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. ",
         "Das Verh\xc3\xa4ltnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.",
         64.1302698},
        {"Niemand hat die Absicht, eine Mauer zu errichten",
         "Niemand hat die Absicht, eine Mauer zu errichten", 100.0},
    };
    for (size_t i = 0; i < sizeof eps / sizeof *eps; i++) {
        double got = chrf1(eps[i].h, eps[i].r, 3, 1, 0);
        EXPECT(fabs(got - eps[i].want) < 1e-4, "eps case %zu: %.6f, expected %.6f", i, got,
               eps[i].want);
    }
    ChrfOptions o;
    chrf_options_default(&o);
    o.beta = 3;
    o.eps_smoothing = 1;
    const char *h2[] = {"a", "b"}, *r2[] = {"a", "c"};
    EXPECT(fabs(chrf_corpus(NULL, h2, r2, 2, 1, &o) - 8.3333) < 1e-4);
    // test_cases_effective_order: beta 3, no eps smoothing.
    struct { const char *h, *r; double want; } eff[] = {
        {"a", "a", 100.0}, {"", "reference", 0.0}, {"a b c", "a b c", 100.0},
        {"a b c", "abc", 100.0}, {"", "c", 0.0}, {"aa", "ab", 25.0},
    };
    for (size_t i = 0; i < sizeof eff / sizeof *eff; i++) {
        double got = chrf1(eff[i].h, eff[i].r, 3, 0, 0);
        EXPECT(fabs(got - eff[i].want) < 1e-4, "effective-order case %zu: %.6f", i, got);
    }
    o.eps_smoothing = 0;
    EXPECT(fabs(chrf_corpus(NULL, h2, r2, 2, 1, &o) - 50.0) < 1e-4);
    // test_cases_keep_whitespace: beta 3, whitespace kept.
    EXPECT(fabs(chrf1("Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich.",
                      "Das Verh\xc3\xa4ltnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.",
                      3, 0, 1) - 67.3481606) < 1e-4);
    EXPECT(fabs(chrf1("risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .",
                      "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .",
                      3, 0, 1) - 65.2414427) < 1e-4);
    // test_sentence_level_chrf: chrF2 with eps smoothing (sentence_chrf's arguments).
    struct { const char *h, *r; double want; } cs[] = {
        {"Co n\xc3\xa1s nejv\xc3\xad" "c tr\xc3\xa1p\xc3\xad, proto\xc5\xbe" "e l\xc3\xa9ka\xc5\x99i si vyb\xc3\xadraj\xc3\xad, kdo bude \xc5\xbe\xc3\xadt a kdo zem\xc5\x99" "e.",
         "Nejv\xc3\xad" "ce smutn\xc3\xad jsme z toho, \xc5\xbe" "e mus\xc3\xadme rozhodovat o tom, kdo bude \xc5\xbe\xc3\xadt a kdo zem\xc5\x99" "e.",
         39.14078509},
        {"Nebo prost\xc4\x9b nemaj\xc3\xad vybaven\xc3\xad, kter\xc3\xa9 by jim pomohlo, uvedli l\xc3\xa9ka\xc5\x99i.",
         "A n\xc4\x9bkdy nem\xc3\xa1me ani pot\xc5\x99" "ebn\xc3\xbd materi\xc3\xa1l, abychom jim pomohli, popsali l\xc3\xa9ka\xc5\x99i.",
         31.22557079},
        {"Lapali po dechu, jejich \xc5\xbeivoty skon\xc4\x8dily d\xc5\x99\xc3\xadv, ne\xc5\xbe skute\xc4\x8dn\xc4\x9b za\xc4\x8d" "aly.",
         "Lapali po dechu a pak jejich \xc5\xbeivot skon\xc4\x8dil - d\xc5\x99\xc3\xadv, ne\xc5\xbe skute\xc4\x8dn\xc4\x9b mohl za\xc4\x8d\xc3\xadt, p\xc5\x99ipomn\xc4\x9bli.",
         57.15704367},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        double got = chrf1(cs[i].h, cs[i].r, 2, 1, 0);
        EXPECT(fabs(got - cs[i].want) < 1e-4, "sentence case %zu: %.8f, expected %.8f", i, got,
               cs[i].want);
    }
}

static void test_chrf_defaults_and_references(void) {
    ChrfOptions o;
    chrf_options_default(&o);
    EXPECT(o.char_order == 6 && o.beta == 2 && !o.eps_smoothing && !o.whitespace);
    // "ab" vs "abc" (chrF2): order 1: P 2/2, R 2/3; order 2: P 1/1, R 1/2; orders 3..6 have
    // no hypothesis n-grams and leave the average. P = 1, R = 7/12:
    // 5 * 7/12 / (4 + 7/12) = 35/55 -> 63.636...
    const char *h = "ab", *r = "abc";
    EXPECT_NEAR(chrf_corpus(NULL, &h, &r, 1, 1, &o), 100.0 * 35.0 / 55.0, 1e-9, 0);
    // The best of two references, not their union: "ab" is exact against the second.
    const char *r2[] = {"xyz", "ab"};
    EXPECT_NEAR(chrf_corpus(NULL, &h, r2, 1, 2, &o), 100.0, 1e-9, 0);
    const char *r3[] = {NULL, "ab"};
    EXPECT_NEAR(chrf_corpus(NULL, &h, r3, 1, 2, &o), 100.0, 1e-9, 0);
    // Code points, not bytes: "é" vs "e" share no character (and no byte n-gram counts).
    const char *he = "\xc3\xa9", *re = "\xc3\xa9";
    ChrfStats st;
    chrf_sentence_stats(&st, he, &re, 1, &o);
    EXPECT(st.hyp[0] == 1 && st.ref[0] == 1 && st.match[0] == 1 && st.hyp[1] == 0);
    const char *empty = "";
    EXPECT(chrf_corpus(NULL, &empty, &r, 1, 1, &o) == 0.0);
}

// --- bootstrap and buckets -------------------------------------------------------------

static void test_bootstrap(void) {
    BleuOptions o;
    bleu_options_default(&o);
    const char *hyp[] = {"the cat sat on the mat", "a dog ran in the park", "it is raining today",
                         "he reads a book", "we went to the sea", "the sun is hot",
                         "birds fly south now", "she plays the piano well"};
    const char *good[] = {"the cat sat on the mat", "a dog ran in the park", "it is raining today",
                          "he reads a good book", "we went to the sea", "the sun is very hot",
                          "birds fly south in winter", "she plays the piano well"};
    const char *bad[] = {"cat mat", "dog", "rain", "book he", "sea", "hot sun", "birds", "piano"};
    int n = 8;
    BleuStats sg[8], sb[8];
    double score = bleu_corpus(NULL, sg, good, hyp, n, 1, &o);
    bleu_corpus(NULL, sb, bad, hyp, n, 1, &o);
    BootstrapResult a, b, base;
    bleu_bootstrap(&a, NULL, sg, NULL, n, &o, 1000, 12345);
    bleu_bootstrap(&b, NULL, sg, NULL, n, &o, 1000, 12345);
    EXPECT(memcmp(&a, &b, sizeof a) == 0, "the same seed, the same interval");
    EXPECT(a.score == score && a.p_value == -1);
    EXPECT(a.lower <= a.mean && a.mean <= a.upper && a.lower < a.upper);
    EXPECT_NEAR(a.ci, 0.5 * (a.upper - a.lower), 1e-12, 0);
    bleu_bootstrap(&b, NULL, sg, NULL, n, &o, 1000, 999);
    EXPECT(b.lower != a.lower || b.upper != a.upper || b.mean != a.mean, "another seed, other draws");
    // Paired against the bad system: far apart, p = 1/1001 (no resample's centred gap beats it).
    bleu_bootstrap(&a, &base, sg, sb, n, &o, 1000, 12345);
    EXPECT(a.p_value > 0 && a.p_value < 0.01, "p = %g", a.p_value);
    EXPECT(base.score < a.score && base.upper < a.lower, "%g..%g vs %g..%g", base.lower, base.upper,
           a.lower, a.upper);
    // The same system against itself: p = (0 + 1) / (1000 + 1).
    bleu_bootstrap(&a, NULL, sg, sg, n, &o, 1000, 1);
    EXPECT_NEAR(a.p_value, 1.0 / 1001.0, 1e-15, 0);
    // One sentence: every resample is the corpus; interval of width 0.
    bleu_bootstrap(&a, NULL, sg, NULL, 1, &o, 40, 3);
    EXPECT(a.ci == 0 && a.lower == a.score && a.upper == a.score);
    EXPECT_NEAR(a.mean, a.score, 1e-9, 0);
    // chrF through the same resampler.
    ChrfOptions co;
    chrf_options_default(&co);
    ChrfStats cg[8], cb[8];
    double cscore = chrf_corpus(cg, good, hyp, n, 1, &co);
    chrf_corpus(cb, bad, hyp, n, 1, &co);
    BootstrapResult c, cbase;
    chrf_bootstrap(&c, &cbase, cg, cb, n, &co, 1000, 12345);
    EXPECT(c.score == cscore && c.lower <= c.score && c.score <= c.upper + 1e-9);
    EXPECT(cbase.upper < c.lower && c.p_value < 0.01);
}

// The paired difference on hypotheses whose difference is known: a system equal to the
// references (BLEU and chrF 100 on every resample) against empty outputs (0 on every one)
// differs by exactly 100, with an interval of width 0; against itself by 0; and a baseline
// right on half the sentences gives a gap whose mean over the resamples is the two
// systems' means apart, whose interval lies in [0, 100], and whose sign flips with the roles.
static void test_paired_difference(void) {
    const char *ref[] = {"in the beginning god created the heavens", "and the earth was empty",
                         "darkness was on the surface", "god said let there be light",
                         "and there was light", "god saw the light and saw that it was good"};
    const char *empty[] = {"", "", "", "", "", ""};
    const char *half[] = {"in the beginning god created the heavens", "", "darkness was on the surface",
                          "", "and there was light", ""};
    enum { N = 6 };
    BleuOptions o;
    bleu_options_default(&o);
    BleuStats perfect[N], none[N], some[N];
    EXPECT_NEAR(bleu_corpus(NULL, perfect, ref, ref, N, 1, &o), 100.0, 1e-9, 0);
    EXPECT(bleu_corpus(NULL, none, empty, ref, N, 1, &o) == 0.0);
    double some_score = bleu_corpus(NULL, some, half, ref, N, 1, &o);
    BootstrapResult a, b;
    bleu_bootstrap(&a, &b, perfect, none, N, &o, 1000, 12345);
    EXPECT_NEAR(a.diff, 100.0, 1e-9, 0);
    EXPECT_NEAR(a.diff_mean, 100.0, 1e-9, 0);
    EXPECT(a.diff_ci < 1e-9 && fabs(a.diff_lower - 100) < 1e-9 && fabs(a.diff_upper - 100) < 1e-9,
           "%g..%g", a.diff_lower, a.diff_upper);
    EXPECT_NEAR(a.p_value, 1.0 / 1001.0, 1e-15, 0);
    EXPECT(b.diff == 0 && b.diff_ci == 0, "the baseline's result carries no difference");
    bleu_bootstrap(&a, NULL, perfect, perfect, N, &o, 1000, 12345);
    EXPECT(a.diff == 0 && a.diff_mean == 0 && a.diff_lower == 0 && a.diff_upper == 0);
    bleu_bootstrap(&a, NULL, perfect, NULL, N, &o, 1000, 12345);
    EXPECT(a.diff == 0 && a.diff_ci == 0 && a.p_value == -1, "unpaired: no difference");
    bleu_bootstrap(&a, &b, perfect, some, N, &o, 1000, 12345);
    EXPECT_NEAR(a.diff, 100.0 - some_score, 1e-9, 0);
    EXPECT_NEAR(a.diff_mean, a.mean - b.mean, 1e-9, 0);
    EXPECT(a.diff_lower >= 0 && a.diff_lower < a.diff_upper && a.diff_upper <= 100 + 1e-9,
           "%g..%g", a.diff_lower, a.diff_upper);
    EXPECT_NEAR(a.diff_ci, 0.5 * (a.diff_upper - a.diff_lower), 1e-12, 0);
    BootstrapResult r;
    bleu_bootstrap(&r, NULL, some, perfect, N, &o, 1000, 12345);
    EXPECT_NEAR(r.diff, -a.diff, 1e-9, 0);
    EXPECT_NEAR(r.diff_lower, -a.diff_upper, 1e-9, 0);
    EXPECT_NEAR(r.diff_upper, -a.diff_lower, 1e-9, 0);
    EXPECT(r.p_value == a.p_value, "the p-value is two-sided: %g vs %g", r.p_value, a.p_value);
    // chrF: the same, its difference on all sentences 100 - chrF(half).
    ChrfOptions co;
    chrf_options_default(&co);
    ChrfStats cp[N], cs[N];
    chrf_corpus(cp, ref, ref, N, 1, &co);
    double chrf_some = chrf_corpus(cs, half, ref, N, 1, &co);
    chrf_bootstrap(&a, &b, cp, cs, N, &co, 1000, 12345);
    EXPECT_NEAR(a.diff, 100.0 - chrf_some, 1e-9, 0);
    EXPECT_NEAR(a.diff_mean, a.mean - b.mean, 1e-9, 0);
    EXPECT(a.diff_lower >= 0 && a.diff_lower < a.diff_upper, "%g..%g", a.diff_lower, a.diff_upper);
}

static void test_bleu_by_length(void) {
    BleuOptions o;
    bleu_options_default(&o);
    const char *hyp[] = {"a b c d", "a b c x", "a b c d", "x y"};
    const char *ref[] = {"a b c d", "a b c d", "a b c d e f g h", "a b c d"};
    const char *src[] = {"one two three", "w w w w w w w w w w w w w w w",
                         "1 2 3 4 5 6 7 8 9 10", "a b c d e f g h i j k l m n o p q r s t u v w x y z "
                         "a b c d e f g h i j k l m n o p q r s t u v w x y z"};
    int words[4];
    for (int i = 0; i < 4; i++) words[i] = sacre_word_count(src[i]);
    EXPECT(words[0] == 3 && words[1] == 15 && words[2] == 10 && words[3] == 52);
    BleuStats st[4];
    bleu_corpus(NULL, st, hyp, ref, 4, 1, &o);
    const int edges[] = {10, 20, 30, 40, 50};
    LengthBucket b[6];
    bleu_by_length(b, edges, 5, words, st, 4, &o);
    EXPECT(b[0].lo == 0 && b[0].hi == 10 && b[1].lo == 11 && b[1].hi == 20 && b[5].lo == 51 &&
           b[5].hi == -1);
    EXPECT(b[0].n == 2 && b[1].n == 1 && b[2].n == 0 && b[3].n == 0 && b[4].n == 0 && b[5].n == 1);
    // Bucket 0 = sentences 0 and 2: 8 words, all n-grams match, ref 4 + 8 = 12: BP e^(1-12/8).
    EXPECT_NEAR(b[0].bleu, 100.0 * exp(1.0 - 12.0 / 8.0), 1e-9, 0);
    EXPECT_NEAR(b[1].bleu, 100.0 * pow(0.75 * (2.0 / 3) * 0.5 * 0.5, 0.25), 1e-9, 0);
    EXPECT(b[2].bleu == 0 && b[5].bleu == 0);
}

int main(void) {
    RUN(test_tokenize_13a);
    RUN(test_bleu_corpus_cases);
    RUN(test_bleu_statistics_and_scoring);
    RUN(test_bleu_raw_and_effective_order);
    RUN(test_bleu_brevity_and_references);
    RUN(test_chrf_cases);
    RUN(test_chrf_defaults_and_references);
    RUN(test_bootstrap);
    RUN(test_paired_difference);
    RUN(test_bleu_by_length);
    return test_summary();
}
