// test_text.c: tokeniser, vocabulary, caption metrics and grounding (beam search: test_beam.c).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/metrics.h"
#include "seq/tokenizer.h"
#include "seq/vocab.h"
#include "tests/support/hand_corpus.h"
#include "tests/support/test.h"

// 1 if t holds exactly the space-separated words of expect.
static int tokens_are(const Tokens *t, const char *expect) {
    char *joined = tokens_join(t);
    int same = strcmp(joined, expect) == 0;
    if (!same) fprintf(stderr, "    got \"%s\", expected \"%s\"\n", joined, expect);
    free(joined);
    return same;
}

// --- tokeniser ------------------------------------------------------------------------------

static void test_tokenize_punctuation_and_case(void) {
    static const char *const cases[][2] = {
        {"A man, riding a Horse.", "a man riding a horse"},
        {"  Two\tdogs\nplay!!  ", "two dogs play !!"},  // only a single ! is dropped
        {"The dog's ball isn't RED?", "the dog 's ball is n't red"},
        {"They're here; we'll see: I'd go, I'm in, you've won", "they 're here we 'll see i 'd go i 'm in you 've won"},
        // PTB's bracket tokens, lower-cased, are not in coco-caption's filter list
        {"a black-and-white photo -- (old) [x] {y}",
         "a black-and-white photo -lrb- old -rrb- -lsb- x -rsb- -lcb- y -rcb-"},
        {"costs 3.50 dollars, 1,000 times.", "costs 3.50 dollars 1,000 times"},
        {"\"Quoted\" 'word' `tick` dogs' ...", "quoted word tick dogs"},
        {"it's 5 o'clock - really", "it 's 5 o'clock really"},
        {"Caf\xc3\xa9 na\xc3\xafve", "caf\xc3\xa9 na\xc3\xafve"},
        {"", ""},
        {" . , ! ? ", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Tokens t = tokens_of(cases[i][0]);
        EXPECT(tokens_are(&t, cases[i][1]), "case %zu: \"%s\"", i, cases[i][0]);
        EXPECT(t.dropped == 0);
        tokens_free(&t);
    }
    // Punctuation never survives as a token of its own.
    Tokens t = tokens_of("Hello , world ; ok : yes ! - -- ...");
    for (int i = 0; i < t.n; i++) EXPECT(strspn(t.tok[i], ".,;:!-") == 0, "token %s", t.tok[i]);
    EXPECT(t.n == 4, "n = %d", t.n);
    tokens_free(&t);
}

static void test_tokenize_invalid_utf8(void) {
    static const struct {
        const char *text;
        long offset;
    } bad[] = {
        {"abc\xff", 3},               // never valid
        {"ok \xc3\x28 no", 3},         // bad continuation
        {"\xc0\xaf", 0},              // overlong '/'
        {"xy\xe0\x80\xaf", 2},        // overlong 3-byte
        {"a \xed\xa0\x80", 2},        // UTF-16 surrogate
        {"z\xf4\x90\x80\x80", 1},     // past U+10FFFF
        {"end \xe2\x82", 4},          // truncated
        {"\x80 lone", 0},             // lone continuation
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Tokens t;
        Error err = {{0}};
        int rc = tokenize(&t, bad[i].text, 10, &err);
        EXPECT(rc == -1, "case %zu accepted", i);
        EXPECT(t.n == 0 && t.tok == NULL);
        char want[64];
        snprintf(want, sizeof want, "at byte %ld", bad[i].offset);
        EXPECT(strstr(err.msg, "invalid UTF-8") && strstr(err.msg, want), "case %zu: %s", i,
               err.msg);
        tokens_free(&t);
    }
    // Valid multi-byte text of every length passes: e-acute, the euro sign (PTB writes
    // "$"), and a dog face past U+FFFF (PTB deletes it).
    Tokens t;
    EXPECT(tokenize(&t, "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xb6", 10, NULL) == 0);
    EXPECT(t.n == 2 && strcmp(t.tok[0], "\xc3\xa9") == 0 && strcmp(t.tok[1], "$") == 0);
    tokens_free(&t);
}

static void test_tokenize_overlong_caption(void) {
    // 300 words: "w0 w1 ... w299"
    char *text = xmalloc(300 * 6 + 1), *q = text;
    for (int i = 0; i < 300; i++) q += sprintf(q, "w%d ", i);
    Tokens t;
    Error err;
    EXPECT(tokenize(&t, text, 256, &err) == 0);
    EXPECT(t.n == 256 && t.dropped == 44, "n = %d dropped = %d", t.n, t.dropped);
    EXPECT(strcmp(t.tok[255], "w255") == 0, "last kept %s", t.tok[255]);
    tokens_free(&t);
    EXPECT(tokenize(&t, text, 0, &err) == 0);
    EXPECT(t.n == 0 && t.dropped == 300);
    tokens_free(&t);
    free(text);
}

// --- vocabulary -----------------------------------------------------------------------------

static void build_test_vocab(Vocab *v, int min_count) {
    // counts: a 6, dog 3, cat 3, sits 2, runs 1; the "<end>" token is not a word
    const char *caps[] = {"a dog a cat", "a dog sits", "a cat runs", "a cat sits dog",
                          "a <end>"};
    Tokens t[5];
    for (int i = 0; i < 5; i++) t[i] = tokens_of(caps[i]);
    vocab_build(v, t, 5, min_count);
    for (int i = 0; i < 5; i++) tokens_free(&t[i]);
}

static void test_vocab_ids_and_min_count(void) {
    Vocab v;
    build_test_vocab(&v, 2);
    EXPECT(v.size == 8, "size %d", v.size);
    const char *order[] = {"<pad>", "<start>", "<end>", "<unk>", "a", "cat", "dog", "sits"};
    for (int i = 0; i < 8 && i < v.size; i++)
        EXPECT(strcmp(v.words[i], order[i]) == 0, "id %d = %s, expected %s", i, v.words[i],
               order[i]);
    EXPECT(vocab_id(&v, "dog") == 6);
    EXPECT(vocab_id(&v, "runs") == VOCAB_UNK);  // count 1 < 2
    EXPECT(vocab_id(&v, "zebra") == VOCAB_UNK);
    EXPECT(vocab_id(&v, "<end>") == VOCAB_END);
    vocab_free(&v);

    build_test_vocab(&v, 1);
    EXPECT(v.size == 9 && vocab_id(&v, "runs") == 8, "size %d", v.size);
    vocab_free(&v);
    build_test_vocab(&v, 6);  // the threshold is inclusive
    EXPECT(v.size == 5 && vocab_id(&v, "a") == 4 && vocab_id(&v, "dog") == VOCAB_UNK);
    vocab_free(&v);
    build_test_vocab(&v, 7);
    EXPECT(v.size == VOCAB_NSPECIAL);
    vocab_free(&v);
}

static void test_vocab_encode_decode(void) {
    Vocab v;
    build_test_vocab(&v, 2);
    Tokens t = tokens_of("A zebra sits by a dog");
    int ids[8];
    int n = vocab_encode(ids, &v, &t, 8);
    int want[] = {4, VOCAB_UNK, 7, VOCAB_UNK, 4, 6};
    EXPECT(n == 6);
    for (int i = 0; i < 6; i++) EXPECT(ids[i] == want[i], "ids[%d] = %d", i, ids[i]);
    EXPECT(vocab_encode(ids, &v, &t, 3) == 3);
    tokens_free(&t);

    int seq[] = {VOCAB_START, 4, 6, VOCAB_UNK, VOCAB_PAD, 7, VOCAB_END, 5, 5};
    char *s = vocab_decode(&v, seq, 9, 1);
    EXPECT(strcmp(s, "a dog <unk> sits") == 0, "%s", s);
    free(s);
    s = vocab_decode(&v, seq, 9, 0);
    EXPECT(strcmp(s, "a dog sits") == 0, "%s", s);
    free(s);
    Tokens d;
    vocab_decode_tokens(&d, &v, seq, 3, 0);
    EXPECT(tokens_are(&d, "a dog"));
    tokens_free(&d);
    vocab_free(&v);
}

// The streaming counter: the vocabulary of build_test_vocab's captions counted one at a
// time, for several thresholds.
static void test_vocab_counter_matches_build(void) {
    const char *caps[] = {"a dog a cat", "a dog sits", "a cat runs", "a cat sits dog",
                          "a <end>"};
    for (int min_count = 1; min_count <= 7; min_count++) {
        Vocab want, got;
        build_test_vocab(&want, min_count);
        VocabCounter c = {0};
        for (int i = 0; i < 5; i++) {
            Tokens t = tokens_of(caps[i]);
            vocab_counter_add(&c, &t);
            tokens_free(&t);
        }
        EXPECT(c.n == 6, "%d distinct tokens, expected 6 (<end> kept, not counted)", c.n);
        vocab_from_counter(&got, &c, min_count);
        EXPECT(got.size == want.size, "min_count %d: size %d, expected %d", min_count, got.size,
               want.size);
        for (int id = 0; id < got.size && id < want.size; id++)
            EXPECT(strcmp(got.words[id], want.words[id]) == 0, "min_count %d: id %d = %s, expected %s",
                   min_count, id, got.words[id], want.words[id]);
        vocab_counter_free(&c);
        vocab_free(&want);
        vocab_free(&got);
    }
}

static void test_vocab_json_round_trip(void) {
    Vocab v, w;
    build_test_vocab(&v, 2);
    char *json = vocab_to_json(&v);
    Error err;
    EXPECT(vocab_from_json(&w, json, &err) == 0, "%s", err.msg);
    EXPECT(w.size == v.size && w.min_count == 2);
    for (int i = 0; i < v.size && i < w.size; i++) {
        EXPECT(strcmp(v.words[i], w.words[i]) == 0);
        EXPECT(vocab_id(&w, v.words[i]) == i);
    }
    char *again = vocab_to_json(&w);
    EXPECT(strcmp(json, again) == 0, "%s vs %s", json, again);
    free(json);
    free(again);
    vocab_free(&v);
    vocab_free(&w);
}

static void test_vocab_json_rejects_malformed(void) {
#define HEAD "{\"format\":\"attend-vocab\",\"version\":1,\"min_count\":2,"
#define SPECIALS "\"<pad>\",\"<start>\",\"<end>\",\"<unk>\""
    static const char *const bad[] = {
        "",
        "{",
        "[]",
        "{} trailing",
        "{\"version\":1,\"min_count\":2,\"words\":[" SPECIALS "]}",
        "{\"format\":\"other\",\"version\":1,\"min_count\":2,\"words\":[" SPECIALS "]}",
        "{\"format\":\"attend-vocab\",\"version\":2,\"min_count\":2,\"words\":[" SPECIALS "]}",
        "{\"format\":\"attend-vocab\",\"version\":1,\"min_count\":0,\"words\":[" SPECIALS "]}",
        "{\"format\":\"attend-vocab\",\"version\":1,\"min_count\":1.5,\"words\":[" SPECIALS "]}",
        HEAD "\"words\":{}}",
        HEAD "\"words\":[\"<pad>\",\"<start>\",\"<end>\"]}",
        HEAD "\"words\":[\"<start>\",\"<pad>\",\"<end>\",\"<unk>\"]}",
        HEAD "\"words\":[" SPECIALS ",\"dog\",\"cat\",\"dog\"]}",
        HEAD "\"words\":[" SPECIALS ",\"dog\",7]}",
        HEAD "\"words\":[" SPECIALS ",\"\"]}",
        HEAD "\"words\":[" SPECIALS ",\"two words\"]}",
        HEAD "\"words\":[" SPECIALS ",\"<unk>\"]}",
        HEAD "\"words\":[" SPECIALS ",\"bad\xff\"]}",
        HEAD "\"words\":[" SPECIALS ",\"dog\"",
    };
#undef HEAD
#undef SPECIALS
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Vocab v;
        Error err = {{0}};
        int rc = vocab_from_json(&v, bad[i], &err);
        EXPECT(rc == -1, "case %zu accepted: %s", i, bad[i]);
        EXPECT(v.size == 0 && v.words == NULL && v.table == NULL, "case %zu", i);
        EXPECT(strncmp(err.msg, "vocabulary: ", 12) == 0 && !strchr(err.msg, '\n'),
               "case %zu: %s", i, err.msg);
        if (rc == 0) vocab_free(&v);
    }
}

// --- BLEU -----------------------------------------------------------------------------------

// BLEU and ROUGE-L by hand on the first two images of tests/support/hand_corpus.h.

static void test_bleu_by_hand(void) {
    // Image 0, clipped counts (max count over the references):
    //   1-grams: the 2 (ref1 has 2), cat 1, sat 0, on 1, mat 1      -> 5 of 6
    //   2-grams: "the cat" 1, "cat sat" 0, "sat on" 0, "on the" 1, "the mat" 1 -> 3 of 5
    //   3-grams: only "on the mat"                                  -> 1 of 4
    //   4-grams: none                                               -> 0 of 3
    //   length 6, closest reference length 6.
    // Image 1 ("a dog a dog"): 1-grams a 2 -> clipped 1, dog 2 -> 1 -> 2 of 4;
    //   2-grams "a dog" x2 -> clipped 1, "dog a" 0 -> 1 of 3; 3-grams 0 of 2; 4-grams 0 of 1;
    //   length 4, references 5 and 6: closest 5.
    // Corpus: matches 7, 4, 1, 0 of 10, 8, 6, 4; c = 10, r = 11: BP = exp(1 - 11/10).
    // BLEU-n = BP * (prod_k (m_k + 1e-15) / (g_k + 1e-9))^(1/n) (coco-caption's smoothing),
    // so BLEU-4 is tiny but not zero.
    HandCorpus h;
    hand_corpus(&h);
    double bleu[4];
    metric_bleu(bleu, h.items, 2);
    const double tiny = 1e-15, small = 1e-9;
    double bp = exp(1.0 - 1.0 / ((10 + tiny) / (11 + small)));
    double m[4] = {7, 4, 1, 0}, g[4] = {10, 8, 6, 4}, prod = 1;
    for (int k = 0; k < 4; k++) {
        prod *= (m[k] + tiny) / (g[k] + small);
        double want = bp * pow(prod, 1.0 / (k + 1));
        EXPECT_NEAR(bleu[k], want, 0.0, 1e-9);
    }
    // The same in plain words, without the smoothing: BLEU-1 = 0.7 e^-0.1.
    EXPECT_NEAR(bleu[0], 0.7 * exp(-0.1), 0.0, 1e-8);
    EXPECT_NEAR(bleu[1], sqrt(0.7 * 0.5) * exp(-0.1), 0.0, 1e-8);
    EXPECT(bleu[3] > 0 && bleu[3] < 1e-4, "BLEU-4 = %g", bleu[3]);
    hand_corpus_free(&h);
}

static void test_bleu_closest_length_ties_to_shorter(void) {
    // cand 4 words; references of 3 and 5 words are equally close: r = 3 (no penalty, c > r).
    // Were the tie broken to 5, BP = exp(1 - 5/4) would apply.
    Tokens c = tokens_of("a b c d"), r[2] = {tokens_of("a b c"), tokens_of("a b c d e")};
    CaptionPair it = {&c, r, 2};
    double bleu[4];
    metric_bleu(bleu, &it, 1);
    // 1-grams 4/4, 2-grams 3/3, 3-grams 2/2 (abc, bcd), 4-grams 1/1 (abcd in ref 2)
    EXPECT_NEAR(bleu[0], 1.0, 1e-8, 0);
    EXPECT_NEAR(bleu[3], 1.0, 1e-8, 0);
    tokens_free(&c);
    tokens_free(&r[0]);
    tokens_free(&r[1]);
}

static void test_identical_gives_one(void) {
    Tokens c = tokens_of("a man rides a brown horse on the beach"), r = tokens_of("a man rides a brown horse on the beach");
    CaptionPair it = {&c, &r, 1};
    double bleu[4];
    metric_bleu(bleu, &it, 1);
    for (int k = 0; k < 4; k++) EXPECT_NEAR(bleu[k], 1.0, 1e-8, 0);
    EXPECT_NEAR(metric_rouge_l(NULL, &it, 1), 1.0, 1e-12, 0);
    tokens_free(&c);
    tokens_free(&r);
}

// --- ROUGE-L --------------------------------------------------------------------------------

static void test_rouge_l_by_hand(void) {
    // Image 0: LCS with ref 1 "the cat [is] on the mat" = 5 -> P 5/6, R 5/6;
    //          with ref 2 "cat on the mat" = 4 -> P 4/6, R 4/7. P_max = R_max = 5/6 -> F = 5/6.
    // Image 1: "a dog" with ref 1 -> LCS 2: P 2/4, R 2/5; "dog" with ref 2 -> P 1/4, R 1/6.
    //          F = (1 + 1.44) 0.5 * 0.4 / (0.4 + 1.44 * 0.5) = 0.488 / 1.12.
    HandCorpus h;
    hand_corpus(&h);
    double per[2];
    double mean = metric_rouge_l(per, h.items, 2);
    EXPECT_NEAR(per[0], 5.0 / 6.0, 1e-12, 0);
    EXPECT_NEAR(per[1], 0.488 / 1.12, 1e-12, 0);
    EXPECT_NEAR(mean, (5.0 / 6.0 + 0.488 / 1.12) / 2, 1e-12, 0);
    EXPECT(lcs_length(h.refs[0][0].tok, h.refs[0][0].n, h.refs[0][1].tok, h.refs[0][1].n) == 4);
    hand_corpus_free(&h);

    // coco-caption takes the best precision and the best recall over references
    // separately: "a b c" vs "a b" (P 2/3, R 1) and "a b c d e f" (P 1, R 1/2) gives
    // P_max = R_max = 1, F = 1 (a per-reference best F would be 0.83).
    Tokens c = tokens_of("a b c"), r[2] = {tokens_of("a b"), tokens_of("a b c d e f")};
    CaptionPair it = {&c, r, 2};
    EXPECT_NEAR(metric_rouge_l(NULL, &it, 1), 1.0, 1e-12, 0);
    Tokens empty = tokens_of("");
    it.cand = &empty;
    EXPECT(metric_rouge_l(NULL, &it, 1) == 0.0);
    tokens_free(&empty);
    tokens_free(&c);
    tokens_free(&r[0]);
    tokens_free(&r[1]);
}

// coco-caption's rouge.py splits a caption on " ", so an empty caption is [""]: one empty
// word that matches only another empty caption. Its scores (run on the Python):
// "" vs [""] 1.0, "" vs ["a b"] 0.0, "a b" vs [""] 0.0, "" vs ["a b", ""] 1.0,
// "a b" vs ["", "a c"] 0.5.
static void test_rouge_l_empty_like_coco(void) {
    static const struct {
        const char *cand, *refs[2];
        int n_refs;
        double want;
    } cases[] = {{"", {""}, 1, 1.0},         {"", {"a b"}, 1, 0.0},      {"a b", {""}, 1, 0.0},
                 {"", {"a b", ""}, 2, 1.0}, {"a b", {"", "a c"}, 2, 0.5}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        Tokens c = tokens_of(cases[k].cand), r[2];
        for (int j = 0; j < cases[k].n_refs; j++) r[j] = tokens_of(cases[k].refs[j]);
        CaptionPair it = {&c, r, cases[k].n_refs};
        EXPECT_NEAR(metric_rouge_l(NULL, &it, 1), cases[k].want, 1e-12, 0);
        tokens_free(&c);
        for (int j = 0; j < cases[k].n_refs; j++) tokens_free(&r[j]);
    }
}

// --- CIDEr-D --------------------------------------------------------------------------------

static void test_cider_d_by_hand(void) {
    // Image A: refs "x y z", "x y"; cand "x y y".  Image B: ref "x w"; cand "w".
    // N = 2 images. Document frequencies: x is in both images' references (df 2, idf
    // log 2 - log 2 = 0); every other n-gram has df 1 or 0, idf log 2 =: L.
    // Cand A vectors: 1-gram y = 2L (x weighs 0), norm 2L; 2-grams xy = L, yy = L, norm L sqrt2;
    //   3-gram xyy = L, norm L; no 4-grams. Length (bigram count) 2.
    // vs "x y z" (y L, z L: norm L sqrt2; xy L, yz L: norm L sqrt2; xyz L; length 2):
    //   n=1: min(2L, L) L / (2L * L sqrt2) = 1/(2 sqrt2)    (the clipped numerator)
    //   n=2: L^2 / (L sqrt2 * L sqrt2) = 1/2;  n=3: xyy not in ref: 0;  penalty e^0 = 1.
    // vs "x y" (y L norm L; xy L norm L; no 3-grams; length 1):
    //   n=1: L^2 / (2L * L) = 1/2; n=2: L^2 / (L sqrt2 * L) = 1/sqrt2; n=3: ref norm 0: 0;
    //   penalty exp(-(2-1)^2 / (2 * 36)) = e^(-1/72).
    // score A = 10 * (sum over refs of (sum over n) / 4) / 2 refs.
    // Cand B "w": w = L, norm L, length 0; ref "x w": w L, norm L; xw L; length 1.
    //   n=1: 1; others 0 (cand has no 2-grams); penalty e^(-1/72). score B = 10 / 4 e^(-1/72).
    Tokens ca = tokens_of("x y y"), ra[2] = {tokens_of("x y z"), tokens_of("x y")};
    Tokens cb = tokens_of("w"), rb = tokens_of("x w");
    CaptionPair items[2] = {{&ca, ra, 2}, {&cb, &rb, 1}};
    double per[2];
    double mean = metric_cider_d(per, items, 2);
    double pen = exp(-1.0 / 72.0);
    double want_a = 10.0 / 2.0 * ((1 / (2 * sqrt(2.0)) + 0.5) / 4 + (0.5 + 1 / sqrt(2.0)) * pen / 4);
    double want_b = 10.0 / 4.0 * pen;
    EXPECT_NEAR(per[0], want_a, 0, 1e-9);
    EXPECT_NEAR(per[1], want_b, 0, 1e-9);
    EXPECT_NEAR(mean, (want_a + want_b) / 2, 0, 1e-9);
    tokens_free(&ca);
    tokens_free(&ra[0]);
    tokens_free(&ra[1]);
    tokens_free(&cb);
    tokens_free(&rb);
}

static void test_cider_d_properties(void) {
    // Three images so that most n-grams have a positive idf.
    const char *refs[3][2] = {{"a dog runs on the grass", "a brown dog running on grass"},
                              {"two cats sleep on a sofa", "cats sleeping on the couch"},
                              {"a man rides a red bike", "a person riding a bicycle"}};
    const char *cands[4] = {"a dog runs on the grass",              // identical to a reference
                            "a dog sleeps on a sofa",               // partial
                            "a dog runs on the grass a dog runs on the grass",  // too long
                            "two cats sleep on a sofa"};            // wrong image
    Tokens r[3][2], c[4];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) r[i][j] = tokens_of(refs[i][j]);
    for (int i = 0; i < 4; i++) c[i] = tokens_of(cands[i]);
    double s[4];
    for (int k = 0; k < 4; k++) {
        CaptionPair items[3] = {{&c[k], r[0], 2}, {&c[k], r[1], 2}, {&c[k], r[2], 2}};
        double per[3];
        metric_cider_d(per, items, 3);
        s[k] = per[0];  // the candidate scored against image 0's references
    }
    EXPECT(s[0] > s[1] && s[1] > 0, "identical %g, partial %g", s[0], s[1]);
    EXPECT(s[2] < s[0] * 0.5, "doubled %g vs identical %g", s[2], s[0]);  // e^(-25/72) ~ 0.71 plus tf
    EXPECT(s[3] < s[1], "wrong image %g vs partial %g", s[3], s[1]);
    // Scores do not depend on the order of the images.
    CaptionPair fwd[3] = {{&c[0], r[0], 2}, {&c[1], r[1], 2}, {&c[3], r[2], 2}};
    CaptionPair rev[3] = {fwd[2], fwd[1], fwd[0]};
    double pf[3], pr[3];
    metric_cider_d(pf, fwd, 3);
    metric_cider_d(pr, rev, 3);
    for (int i = 0; i < 3; i++) EXPECT_NEAR(pf[i], pr[2 - i], 1e-12, 0);
    // One image: every n-gram is in every reference set, idf = 0, the score is 0.
    CaptionPair one = {&c[0], r[0], 2};
    EXPECT(metric_cider_d(NULL, &one, 1) == 0.0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) tokens_free(&r[i][j]);
    for (int i = 0; i < 4; i++) tokens_free(&c[i]);
}

static void test_caption_scores_agree(void) {
    HandCorpus h;
    hand_corpus(&h);
    CaptionScores s;
    caption_scores(&s, h.items, 2);
    double bleu[4];
    metric_bleu(bleu, h.items, 2);
    for (int k = 0; k < 4; k++) EXPECT(s.bleu[k] == bleu[k]);
    EXPECT(s.rouge_l == metric_rouge_l(NULL, h.items, 2));
    EXPECT(s.cider_d == metric_cider_d(NULL, h.items, 2));
    hand_corpus_free(&h);
}

// --- grounding ------------------------------------------------------------------------------

static void test_grounding_counts(void) {
    GroundingBox boxes1[] = {{"dog", 10, 10, 50, 40}, {"frisbee", 60, 5, 70, 15}};
    GroundingWord words1[] = {
        {"a", 0, 0, 0},          // not an object: ignored
        {"dog", 1, 30, 20},      // inside the dog box: hit
        {"frisbee", 1, 30, 20},  // inside the dog box only: miss
    };
    GroundingBox boxes2[] = {{"cat", 0, 0, 8, 8}, {"man", 0, 0, 4, 4}, {"man", 20, 20, 30, 30}};
    GroundingWord words2[] = {
        {"cat", 1, 8, 8},     // on the border: inside, hit
        {"sofa", 1, 2, 2},    // no sofa box: miss
        {"man", 1, 25, 21},   // inside the second man box: hit
        {"cat", 1, 8.5f, 2},  // just outside: miss
    };
    GroundingImage im[2] = {{words1, 3, boxes1, 2}, {words2, 4, boxes2, 3}};
    GroundingResult r;
    grounding_accuracy(&r, im, 2);
    EXPECT(r.object_words == 6 && r.hits == 3, "%d of %d", r.hits, r.object_words);
    EXPECT_NEAR(r.accuracy, 0.5, 1e-12, 0);
    grounding_accuracy(&r, im, 0);
    EXPECT(r.object_words == 0 && r.accuracy == 0.0);

    // Peak of a 2 x 3 map over a 90 x 40 image: the max (first of two equal) at row 1, col 1.
    float alpha[6] = {0.1f, 0.1f, 0.05f, 0.2f, 0.3f, 0.3f};
    float px, py;
    attention_peak(&px, &py, alpha, 2, 3, 90, 40);
    EXPECT_NEAR(px, 45.0, 1e-5, 0);
    EXPECT_NEAR(py, 30.0, 1e-5, 0);
}

int main(void) {
    RUN(test_tokenize_punctuation_and_case);
    RUN(test_tokenize_invalid_utf8);
    RUN(test_tokenize_overlong_caption);
    RUN(test_vocab_ids_and_min_count);
    RUN(test_vocab_encode_decode);
    RUN(test_vocab_counter_matches_build);
    RUN(test_vocab_json_round_trip);
    RUN(test_vocab_json_rejects_malformed);
    RUN(test_bleu_by_hand);
    RUN(test_bleu_closest_length_ties_to_shorter);
    RUN(test_identical_gives_one);
    RUN(test_rouge_l_by_hand);
    RUN(test_rouge_l_empty_like_coco);
    RUN(test_cider_d_by_hand);
    RUN(test_cider_d_properties);
    RUN(test_caption_scores_agree);
    RUN(test_grounding_counts);
    return test_summary();
}
