// test_bpe.c: byte-pair encoding (seq/bpe.h): Sennrich et al.'s examples give the paper's
// merges, the incremental learner agrees with the plain-loop one merge for merge on a
// generated corpus, segmenting replays the merges, round trips, unknown characters, the
// text form of the merges (and its errors), determinism.
//
// The expected merges of the paper's Algorithm 1 dictionary are what its Python code prints
// (Python 3.7+, where a dict keeps insertion order), run once by hand.
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "seq/bpe.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

// "left right|left right|..." of b's merges.
static char *merges_str(const Bpe *b) {
    size_t total = 1;
    for (int k = 0; k < b->n_merges; k++)
        total += strlen(b->vocab[b->merge_left[k] + BPE_N_SPECIAL]) +
                 strlen(b->vocab[b->merge_right[k] + BPE_N_SPECIAL]) + 2;
    char *s = calloc(total, 1);
    for (int k = 0; k < b->n_merges; k++) {
        if (k) strcat(s, "|");
        strcat(s, b->vocab[b->merge_left[k] + BPE_N_SPECIAL]);
        strcat(s, " ");
        strcat(s, b->vocab[b->merge_right[k] + BPE_N_SPECIAL]);
    }
    return s;
}

// Pieces of text joined by '|'.
static char *pieces_str(const Bpe *b, const char *text) {
    char **p;
    int n;
    bpe_segment(b, text, &p, &n);
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(p[i]) + 1;
    char *s = calloc(total, 1);
    for (int i = 0; i < n; i++) {
        if (i) strcat(s, "|");
        strcat(s, p[i]);
    }
    bpe_pieces_free(p, n);
    return s;
}

static void expect_pieces(const Bpe *b, const char *text, const char *want) {
    char *got = pieces_str(b, text);
    EXPECT(strcmp(got, want) == 0, "'%s' -> '%s', expected '%s'", text, got, want);
    free(got);
}

static void test_paper_algorithm_1(void) {
    const char *words[] = {"low", "lower", "newest", "widest"};
    const int64_t freq[] = {5, 2, 6, 3};
    Bpe b;
    Error err = {{0}};
    EXPECT(bpe_learn_words(&b, words, freq, 4, 10, 1, "toy", &err) == 0, "%s", err.msg);
    char *got = merges_str(&b);
    const char *want = "e s|es t|est </w>|l o|lo w|n e|ne w|new est</w>|low </w>|w i";
    EXPECT(strcmp(got, want) == 0, "merges %s", got);
    free(got);
    // Segmenting the training words replays the merges: what learning left.
    expect_pieces(&b, "low lower newest widest", "low</w>|low|e|r|</w>|newest</w>|wi|d|est</w>");
    EXPECT(b.n_alphabet == 10 && b.n_vocab == BPE_N_SPECIAL + 1 + 10 + 10, "%d symbols", b.n_vocab);
    EXPECT(strcmp(b.vocab[BPE_UNK], "<unk>") == 0 && strcmp(b.vocab[BPE_N_SPECIAL], "</w>") == 0 &&
           strcmp(b.vocab[BPE_N_SPECIAL + 1], "l") == 0);
    // The same from running text.
    const char *texts[] = {"low low low low low lower lower", "newest newest newest newest newest",
                           "newest widest widest widest"};
    Bpe t;
    EXPECT(bpe_learn(&t, texts, 3, 10, 1, "toy", &err) == 0, "%s", err.msg);
    got = merges_str(&t);
    EXPECT(strcmp(got, want) == 0, "from text: %s", got);
    free(got);
    bpe_free(&t);
    // min_count stops early: the 10th merge (w i) occurs 3 times.
    EXPECT(bpe_learn_words(&t, words, freq, 4, 100, 4, "toy", &err) == 0);
    EXPECT(t.n_merges == 9, "%d merges at min_count 4", t.n_merges);
    bpe_free(&t);
    bpe_free(&b);
}

// Figure 1: {low, lowest, newer, wider}, four merges. The paper lists r </w>, l o, lo w,
// e r</w>: its ties (every pair here occurs once or twice) fell in Python 2's dict order.
// With ties to the first occurrence the same symbols come as l o, lo w, e r, er </w>, and
// every word is segmented as in the figure.
static void test_paper_figure_1(void) {
    const char *words[] = {"low", "lowest", "newer", "wider"};
    const int64_t freq[] = {1, 1, 1, 1};
    Bpe b;
    Error err = {{0}};
    EXPECT(bpe_learn_words(&b, words, freq, 4, 4, 1, "fig1", &err) == 0, "%s", err.msg);
    char *got = merges_str(&b);
    EXPECT(strcmp(got, "l o|lo w|e r|er </w>") == 0, "merges %s", got);
    free(got);
    expect_pieces(&b, "low lowest newer wider",
                  "low|</w>|low|e|s|t|</w>|n|e|w|er</w>|w|i|d|er</w>");
    // A new word: the paper's "lower" -> low er</w>.
    expect_pieces(&b, "lower", "low|er</w>");
    bpe_free(&b);
}

// A generated corpus: words from a small alphabet, Zipf-like counts.
static void make_corpus(char ***words, int64_t **freq, int n, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    const char *stems[] = {"am", "habl", "com", "viv", "dij", "estab", "pued", "ten", "hij", "dios"};
    const char *ends[] = {"o", "as", "a", "amos", "aron", "aba", "ar\xc3\xa1", "\xc3\xad", "ieron", "es"};
    *words = malloc((size_t)n * sizeof **words);
    *freq = malloc((size_t)n * sizeof **freq);
    for (int i = 0; i < n; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s%s%s%d", stems[rng_below(&r, 10)], ends[rng_below(&r, 10)],
                 ends[rng_below(&r, 10)], i);  // the index keeps words distinct
        (*words)[i] = strdup(buf);
        (*freq)[i] = 1 + (int64_t)(200 / (1 + i % 50)) + rng_below(&r, 3);
    }
}

static void test_incremental_matches_reference(void) {
    char **words;
    int64_t *freq;
    int n = 300;
    make_corpus(&words, &freq, n, 42);
    Bpe fast, ref;
    Error err = {{0}};
    EXPECT(bpe_learn_words(&fast, (const char *const *)words, freq, n, 400, 1, "gen", &err) == 0);
    EXPECT(bpe_learn_words_reference(&ref, (const char *const *)words, freq, n, 400, 1, "gen", &err) == 0);
    EXPECT(fast.n_merges == ref.n_merges && fast.n_merges > 100, "%d vs %d merges", fast.n_merges,
           ref.n_merges);
    int first_diff = -1;
    for (int k = 0; k < fast.n_merges && k < ref.n_merges && first_diff < 0; k++)
        if (strcmp(fast.vocab[fast.merge_left[k] + BPE_N_SPECIAL], ref.vocab[ref.merge_left[k] + BPE_N_SPECIAL]) ||
            strcmp(fast.vocab[fast.merge_right[k] + BPE_N_SPECIAL], ref.vocab[ref.merge_right[k] + BPE_N_SPECIAL]))
            first_diff = k;
    EXPECT(first_diff < 0, "merge %d differs", first_diff);
    // Segmenting each training word gives the reference's final segmentation: the pieces of
    // a word re-join to it, and encoding never yields <unk>.
    for (int i = 0; i < n; i++) {
        int *ids, m;
        bpe_encode(&fast, words[i], &ids, &m);
        for (int j = 0; j < m; j++) EXPECT(ids[j] != BPE_UNK, "word %d piece %d unknown", i, j);
        char *back = bpe_decode(&fast, ids, m);
        EXPECT(strcmp(back, words[i]) == 0, "'%s' decoded as '%s'", words[i], back);
        free(back);
        free(ids);
    }
    bpe_free(&fast);
    bpe_free(&ref);
    for (int i = 0; i < n; i++) free(words[i]);
    free(words);
    free(freq);
}

static void test_round_trips_and_unknown(void) {
    const char *texts[] = {"el principio cre\xc3\xb3 Dios los cielos y la tierra .",
                           "y la tierra estaba desordenada y vac\xc3\xad" "a ,",
                           "y dijo Dios : Sea la luz : y fue la luz ."};
    Bpe b;
    Error err = {{0}};
    EXPECT(bpe_learn(&b, texts, 3, 60, 1, "gen", &err) == 0, "%s", err.msg);
    for (int i = 0; i < 3; i++) {
        char **p;
        int n;
        bpe_segment(&b, texts[i], &p, &n);
        char *back = bpe_join(p, n);
        EXPECT(strcmp(back, texts[i]) == 0, "'%s' joined as '%s'", texts[i], back);
        free(back);
        bpe_pieces_free(p, n);
        int *ids;
        bpe_encode(&b, texts[i], &ids, &n);
        back = bpe_decode(&b, ids, n);
        EXPECT(strcmp(back, texts[i]) == 0, "'%s' decoded as '%s'", texts[i], back);
        free(back);
        free(ids);
    }
    // Whitespace runs and ends fold to single spaces.
    char **p;
    int n;
    bpe_segment(&b, "  la\tluz \n", &p, &n);
    char *back = bpe_join(p, n);
    EXPECT(strcmp(back, "la luz") == 0, "'%s'", back);
    free(back);
    bpe_pieces_free(p, n);
    // Unknown characters: their own pieces (text kept), <unk> as ids.
    expect_pieces(&b, "luz\xe2\x82\xac", "luz|\xe2\x82\xac|</w>");
    int *ids;
    bpe_encode(&b, "luz\xe2\x82\xac q", &ids, &n);
    EXPECT(n == 5 && ids[1] == BPE_UNK && ids[3] == BPE_UNK && ids[2] == bpe_piece_id(&b, "</w>"),
           "%d ids", n);
    EXPECT(ids[0] == bpe_piece_id(&b, "luz") && ids[0] != BPE_UNK);
    back = bpe_decode(&b, ids, n);
    EXPECT(strcmp(back, "luz<unk> <unk>") == 0, "'%s'", back);
    free(back);
    free(ids);
    // An invalid byte is a character of its own.
    expect_pieces(&b, "l\xff", "l|\xff|</w>");
    // Specials: <pad>, <bos>, <eos> skipped when decoding.
    int seq[] = {BPE_BOS, bpe_piece_id(&b, "la</w>"), BPE_EOS, BPE_PAD};
    EXPECT(seq[1] != BPE_UNK);
    back = bpe_decode(&b, seq, 4);
    EXPECT(strcmp(back, "la") == 0, "'%s'", back);
    free(back);
    bpe_segment(&b, "", &p, &n);
    EXPECT(n == 0);
    bpe_pieces_free(p, n);
    bpe_free(&b);
}

static void test_text_form_and_determinism(void) {
    char **words;
    int64_t *freq;
    make_corpus(&words, &freq, 200, 7);
    Bpe a, b, c;
    Error err = {{0}};
    EXPECT(bpe_learn_words(&a, (const char *const *)words, freq, 200, 250, 2, "gen", &err) == 0);
    EXPECT(bpe_learn_words(&b, (const char *const *)words, freq, 200, 250, 2, "gen", &err) == 0);
    char *ta = bpe_to_text(&a), *tb = bpe_to_text(&b);
    EXPECT(strcmp(ta, tb) == 0, "two learnings differ");
    EXPECT(strncmp(ta, "#attend-bpe 1\nalphabet ", 23) == 0);
    EXPECT(bpe_from_text(&c, ta, strlen(ta), "m.txt", &err) == 0, "%s", err.msg);
    char *tc = bpe_to_text(&c);
    EXPECT(strcmp(ta, tc) == 0, "text form does not round-trip");
    EXPECT(c.n_vocab == a.n_vocab && c.n_merges == a.n_merges && c.n_alphabet == a.n_alphabet);
    for (int i = 0; i < a.n_vocab && i < c.n_vocab; i++)
        EXPECT(strcmp(a.vocab[i], c.vocab[i]) == 0, "vocab %d", i);
    for (int i = 0; i < 200; i++) {
        int *x, *y, nx, ny;
        bpe_encode(&a, words[i], &x, &nx);
        bpe_encode(&c, words[i], &y, &ny);
        EXPECT(nx == ny && memcmp(x, y, (size_t)nx * sizeof *x) == 0, "word %d", i);
        free(x);
        free(y);
    }
    free(ta);
    free(tb);
    free(tc);
    bpe_free(&a);
    bpe_free(&b);
    bpe_free(&c);
    for (int i = 0; i < 200; i++) free(words[i]);
    free(words);
    free(freq);
    // An empty model.
    EXPECT(bpe_learn(&a, NULL, 0, 10, 1, "empty", &err) == 0);
    ta = bpe_to_text(&a);
    EXPECT(strcmp(ta, "#attend-bpe 1\nalphabet\n") == 0, "'%s'", ta);
    EXPECT(bpe_from_text(&c, ta, strlen(ta), "e.txt", &err) == 0, "%s", err.msg);
    EXPECT(c.n_vocab == BPE_N_SPECIAL + 1);
    free(ta);
    bpe_free(&a);
    bpe_free(&c);
}

// The merges ride in a checkpoint's metadata as a string (JSON-escaped there: quotes,
// backslashes, newlines, non-ASCII) and come back the same.
static void test_text_form_in_safetensors_metadata(void) {
    const char *texts[] = {"\"Dios\" dijo: \\ luz, luz \xe2\x80\x9cluz\xe2\x80\x9d \xc2\xbfs\xc3\xad? s\xc3\xad."};
    Bpe b, c;
    Error err = {{0}};
    EXPECT(bpe_learn(&b, texts, 1, 20, 1, "q", &err) == 0, "%s", err.msg);
    char *text = bpe_to_text(&b);
    char dir[256], path[300];
    if (scratch_make(dir, sizeof dir, "test_bpe")) {
        EXPECT(0, "no scratch folder");
        return;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    Block blk;
    memset(&blk, 0, sizeof blk);
    float *w;
    block_add(&blk, &w, "embed", 2, 2, 3);
    block_alloc(&blk);
    const Block *blocks[] = {&blk};
    SafetensorsMeta meta[] = {{"bpe", text}};
    EXPECT(safetensors_save(path, blocks, NULL, 1, meta, 1, &err) == 0, "%s", err.msg);
    SafetensorsFile f;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    const char *back = safetensors_meta(&f, "bpe");
    EXPECT(back && strcmp(back, text) == 0, "metadata string differs");
    if (back) {
        EXPECT(bpe_from_text(&c, back, strlen(back), path, &err) == 0, "%s", err.msg);
        char *again = bpe_to_text(&c);
        EXPECT(strcmp(again, text) == 0);
        free(again);
        bpe_free(&c);
    }
    safetensors_free(&f);
    block_free(&blk);
    free(text);
    bpe_free(&b);
    scratch_remove(dir);
}

static void expect_refused(const char *text, const char *reason) {
    Bpe b;
    Error err = {{0}};
    EXPECT(bpe_from_text(&b, text, strlen(text), "bad.txt", &err) == -1, "accepted '%s'", text);
    EXPECT(strncmp(err.msg, "bad.txt: ", 9) == 0 && strstr(err.msg, reason) && !strchr(err.msg, '\n'),
           "'%s' -> %s", text, err.msg);
}

static void test_text_form_errors(void) {
    expect_refused("", "ends before the alphabet");
    expect_refused("#attend-bpe 2\nalphabet a\n", "line 1: not a BPE merges text");
    expect_refused("#attend-bpe 1\nalphabet ab\n", "line 2: alphabet entry 1 is not one UTF-8");
    expect_refused("#attend-bpe 1\nalphabet a  b\n", "alphabet entry 2 is not one");
    expect_refused("#attend-bpe 1\nalphabet a a\n", "alphabet entry 2 repeats");
    expect_refused("#attend-bpe 1\nalphabet \xff\n", "not one UTF-8");
    expect_refused("#attend-bpe 1\nalphabet a\tb\n", "not one UTF-8");
    expect_refused("#attend-bpe 1\nletters a\n", "line 2: expected the alphabet line");
    expect_refused("#attend-bpe 1\nalphabet a b\na c\n", "line 3: merge of a symbol not made");
    expect_refused("#attend-bpe 1\nalphabet a b\na b\nab b\nb a b\n", "line 5: a merge is two");
    expect_refused("#attend-bpe 1\nalphabet a b\na b\na b\n", "line 4: merge repeats");
    expect_refused("#attend-bpe 1\nalphabet a b\n\na b\n", "line 3: a merge is two");
    expect_refused("#attend-bpe 1\nalphabet a b\nab\n", "line 3: a merge is two");
    Bpe b;
    Error err = {{0}};
    const char nul[] = "#attend-bpe 1\nalphabet a\0b\n";
    EXPECT(bpe_from_text(&b, nul, sizeof nul - 1, "bad.txt", &err) == -1 && strstr(err.msg, "NUL"));
    const char ok[] = "#attend-bpe 1\nalphabet a b\na b\nab </w>";
    EXPECT(bpe_from_text(&b, ok, strlen(ok), "ok.txt", &err) == 0, "%s", err.msg);
    EXPECT(b.n_merges == 2 && bpe_piece_id(&b, "ab</w>") == BPE_N_SPECIAL + 4);
    expect_pieces(&b, "ab ba", "ab</w>|b|a|</w>");
    bpe_free(&b);
    // Learning refuses the marker inside a word and invalid UTF-8.
    const char *bad1[] = {"x</w>y"}, *bad2[] = {"ok fine\xff"};
    EXPECT(bpe_learn(&b, bad1, 1, 5, 1, "train.txt", &err) == -1 && strstr(err.msg, "train.txt: word 1 holds"),
           "%s", err.msg);
    EXPECT(bpe_learn(&b, bad2, 1, 5, 1, "train.txt", &err) == -1 &&
               strstr(err.msg, "word 2: invalid UTF-8 at byte 5"), "%s", err.msg);
}

int main(void) {
    RUN(test_paper_algorithm_1);
    RUN(test_paper_figure_1);
    RUN(test_incremental_matches_reference);
    RUN(test_round_trips_and_unknown);
    RUN(test_text_form_and_determinism);
    RUN(test_text_form_in_safetensors_metadata);
    RUN(test_text_form_errors);
    return test_summary();
}
