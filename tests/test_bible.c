// test_bible.c: the SWORD verse pairs (datasets/bible.h) on small mod2imp exports written
// here: OSIS markup stripped (notes and headings with their content, no words joined where
// a tag stood, entities, back matter cut), headings and introductions skipped, pairing by
// reference whatever the order, the unpaired verses counted, each refusal (text before the
// first entry, a key twice, bytes that are not UTF-8, too few verses with text: a truncated
// module) one line naming the file, and the seeded split; and, when `make data` has made
// them, the files in data/bible/: readable by the pair reader, no verse in two splits.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "datasets/bible.h"
#include "datasets/pairs.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static void expect_strip(const char *in, const char *want) {
    char *got = bible_strip_osis(in, strlen(in));
    EXPECT(strcmp(got, want) == 0, "'%s' gave '%s', expected '%s'", in, got, want);
    free(got);
}

static void test_strip_markup(void) {
    expect_strip("<w lemma=\"strong:H7225\">In</w> <w lemma=\"strong:H0853\">the</w> beginning",
                 "In the beginning");
    // A note goes with its content, nested tags and all, and leaves no joined words.
    expect_strip("<w>God</w><note placement=\"foot\"><reference type=\"annotateRef\">1:1 </reference>"
                 "The Hebrew word is \xe2\x80\x9c" "Elohim\xe2\x80\x9d.</note><w>created</w> the earth.",
                 "God created the earth.");
    expect_strip("only born</q><note>x <note>y</note> z</note><q who=\"Jesus\">Son, that", "only born Son, that");
    expect_strip("the earth<note placement=\"foot\">a note</note>. And", "the earth. And");
    // Headings go, psalm superscriptions (canonical) stay.
    expect_strip("<title type=\"x-introduction\">Why</title>Text <title canonical=\"true\" "
                 "type=\"psalm\">A Psalm by David.</title> <lg sID=\"a\"/><l sID=\"b\"/>Yahweh, how!",
                 "Text A Psalm by David. Yahweh, how!");
    expect_strip("<speaker>Beloved</speaker>Let him kiss me", "Let him kiss me");
    // Line and paragraph tags keep words apart; spaces collapse; entities decode.
    expect_strip("increased!<l eID=\"x\" level=\"1\"/><l level=\"2\" sID=\"y\"/>Many", "increased! Many");
    expect_strip("one<lb/>two<div type=\"x-p\" sID=\"p\"/>three\tfour\n five  six", "one two three four five six");
    expect_strip("  A &amp; B &lt;C&gt; &quot;D&quot; &apos;E&apos; &nbsp; ", "A & B <C> \"D\" 'E' &nbsp;");
    expect_strip("\xc2\xa1<w>OH</w> Jehov\xc3\xa1, <w>cu\xc3\xa1nto</w>!", "\xc2\xa1OH Jehov\xc3\xa1, cu\xc3\xa1nto!");
    expect_strip("(<note>n</note>so<note>m</note>)", "(so)");
    // Back matter after the last verse of a book is not scripture.
    expect_strip("saints. Amen. <chapter eID=\"Rev.22\"/><div canonical=\"true\" eID=\"g1\" osisID=\"Rev\" "
                 "type=\"book\"/> <div sID=\"g2\" type=\"glossary\"/> Abba: Father.",
                 "saints. Amen.");
    expect_strip("<note>only a note</note>", "");
    expect_strip("", "");
}

static const char *IMP =
    "$$$[ Module Heading ]\n"
    "\n"
    "$$$[ Testament 1 Heading ]\n"
    "<milestone type=\"x-importer\"/>\n"
    "$$$Genesis 0:0\n"
    "<title>Genesis</title> An introduction.\n"
    "$$$Genesis 1:0\n"
    "<title>The Creation</title>\n"
    "$$$Genesis 1:1\n"
    "<w>In</w> the beginning\r\n"
    "$$$Genesis 1:2\n"
    "first line\n"
    "second line\n"
    "$$$I Samuel 10:12\n"
    "\n"
    "$$$Song of Solomon 2:3\n"
    "Like an apple tree";  // no final newline

static void test_parse_imp(void) {
    BibleVerses v;
    Error err = {{0}};
    EXPECT(bible_parse_imp(&v, IMP, strlen(IMP), "en.imp", 0, &err) == 0, "%s", err.msg);
    EXPECT(v.n == 4, "%d verses", v.n);
    if (v.n == 4) {
        EXPECT(strcmp(v.key[0], "Genesis 1:1") == 0 && strcmp(v.text[0], "In the beginning") == 0,
               "'%s' '%s'", v.key[0], v.text[0]);
        EXPECT(strcmp(v.text[1], "first line second line") == 0, "'%s'", v.text[1]);
        EXPECT(strcmp(v.key[2], "I Samuel 10:12") == 0 && v.text[2][0] == 0, "'%s'", v.text[2]);
        EXPECT(strcmp(v.key[3], "Song of Solomon 2:3") == 0 &&
               strcmp(v.text[3], "Like an apple tree") == 0, "'%s'", v.text[3]);
    }
    bible_verses_free(&v);
    EXPECT(v.n == 0 && v.key == NULL);
    // Three verses with text: enough for 3, not for 4.
    EXPECT(bible_parse_imp(&v, IMP, strlen(IMP), "en.imp", 3, &err) == 0, "%s", err.msg);
    bible_verses_free(&v);
    EXPECT(bible_parse_imp(&v, IMP, strlen(IMP), "en.imp", 4, &err) == -1);
    EXPECT(strcmp(err.msg, "en.imp: 3 verses with text, expected at least 4 (a truncated or damaged "
                           "module?)") == 0, "'%s'", err.msg);
    EXPECT(v.n == 0 && v.key == NULL, "a failed read left verses behind");
}

static void expect_refused(const char *imp, size_t len, const char *want) {
    BibleVerses v;
    Error err = {{0}};
    EXPECT(bible_parse_imp(&v, imp, len, "x.imp", 0, &err) == -1, "accepted (%s)", want);
    EXPECT(strcmp(err.msg, want) == 0, "'%s', expected '%s'", err.msg, want);
    EXPECT(v.n == 0 && v.key == NULL && v.text == NULL);
}

static void test_refusals(void) {
    expect_refused("", 0, "x.imp: empty export (no module entries)");
    expect_refused("hello\n$$$Genesis 1:1\nx\n", 22,
                   "x.imp: line 1: text before the first $$$ entry (not mod2imp's output?)");
    const char *twice = "$$$John 1:1\na\n$$$John 1:2\nb\n$$$John 1:1\nc\n";
    expect_refused(twice, strlen(twice), "x.imp: the verse 'John 1:1' twice");
    const char *latin1 = "$$$John 1:1\na\n$$$John 1:2\ncaf\xe9\n";
    expect_refused(latin1, strlen(latin1), "x.imp: line 4: not valid UTF-8");
    expect_refused("$$$John 1:1\na\0b\n", 16, "x.imp: line 2: not valid UTF-8");
    const char *headings = "$$$[ Module Heading ]\n$$$John 0:0\nintro\n";
    expect_refused(headings, strlen(headings),
                   "x.imp: 0 verses with text, expected at least 1 (a truncated or damaged module?)");
}

static void verses(BibleVerses *v, const char *imp) {
    Error err = {{0}};
    CHECK(bible_parse_imp(v, imp, strlen(imp), "t.imp", 0, &err) == 0, "%s", err.msg);
}

static void test_pair_by_reference(void) {
    BibleVerses en, es;
    // The Spanish side in another order, without Romans 14:24 (its doxology is at 16:25),
    // with an empty verse (Matthew 17:21 kept in English, dropped in Spanish here) and a
    // verse empty on both sides.
    verses(&en, "$$$Genesis 1:1\nIn the beginning\n$$$Genesis 1:2\nThe earth\n"
                "$$$Matthew 17:21\nBut this kind\n$$$Romans 14:24\nNow to him\n$$$Romans 16:25\n\n"
                "$$$Jude 1:25\n\n$$$Tobit 1:1\nThe book\n");
    verses(&es, "$$$Genesis 1:2\nY la tierra\n$$$Romans 16:25\nY al que puede\n"
                "$$$Genesis 1:1\nEN el principio\n$$$Matthew 17:21\n\n$$$Jude 1:25\n\n");
    BiblePairs p;
    bible_pair(&p, &en, &es);
    EXPECT(p.n == 2, "%d pairs", p.n);
    if (p.n == 2) {
        EXPECT(strcmp(p.key[0], "Genesis 1:1") == 0 && strcmp(p.tgt[0], "EN el principio") == 0 &&
               strcmp(p.src[0], "In the beginning") == 0, "%s: '%s'", p.key[0], p.tgt[0]);
        EXPECT(strcmp(p.key[1], "Genesis 1:2") == 0 && strcmp(p.tgt[1], "Y la tierra") == 0);
    }
    EXPECT(p.n_src_only == 3 && p.n_empty_tgt == 1, "English only %d (%d empty)", p.n_src_only,
           p.n_empty_tgt);
    if (p.n_src_only == 3)
        EXPECT(strcmp(p.src_only[0], "Matthew 17:21") == 0 && strcmp(p.src_only[1], "Romans 14:24") == 0 &&
               strcmp(p.src_only[2], "Tobit 1:1") == 0);
    EXPECT(p.n_tgt_only == 1 && p.n_empty_src == 1 && strcmp(p.tgt_only[0], "Romans 16:25") == 0,
           "Spanish only %d", p.n_tgt_only);
    EXPECT(p.n_no_text == 1, "no text %d", p.n_no_text);
    bible_pairs_free(&p);
    bible_verses_free(&en);
    bible_verses_free(&es);
}

static void test_split(void) {
    int count[3] = {0}, moved = 0;
    char key[64];
    for (int b = 0; b < 40; b++)
        for (int c = 1; c <= 25; c++)
            for (int v = 1; v <= 25; v++) {
                snprintf(key, sizeof key, "Book%d %d:%d", b, c, v);
                int s = bible_split_of(key, BIBLE_SPLIT_SEED);
                EXPECT(s >= 0 && s <= 2 && s == bible_split_of(key, BIBLE_SPLIT_SEED));
                count[s]++;
                moved += s != bible_split_of(key, BIBLE_SPLIT_SEED + 1);
            }
    double n = 40 * 25 * 25;
    EXPECT(count[0] / n > 0.89 && count[0] / n < 0.91, "train %d", count[0]);
    EXPECT(count[1] / n > 0.045 && count[1] / n < 0.055, "valid %d", count[1]);
    EXPECT(count[2] / n > 0.045 && count[2] / n < 0.055, "test %d", count[2]);
    EXPECT(moved > n * 0.1, "another seed moved only %d verses", moved);
}

// A chapter whose Spanish verses are its English verses moved on by one (as the Spanish
// module numbers Numbers 13) is flagged, pairs and all; one that lines up, however uneven its
// verse lengths, is not.
static void test_flag_shifted_chapters(void) {
    static const int words[12] = {4, 30, 9, 22, 6, 40, 12, 3, 27, 15, 8, 35};
    enum { V = 12 };
    char *key[2 * V], *src[2 * V], *tgt[2 * V];
    for (int c = 0; c < 2; c++)
        for (int v = 1; v <= V; v++) {
            int k = c * V + v - 1;
            char buf[64];
            snprintf(buf, sizeof buf, "Numbers %d:%d", 12 + c, v);
            key[k] = xstrdup(buf);
            // chapter 12 lines up; in chapter 13 the Spanish verse v holds English verse v - 1
            int ew = words[v - 1], sw = c == 0 ? words[v - 1] + 1 : words[(v + V - 2) % V];
            src[k] = xmalloc(8 * (size_t)ew + 1), tgt[k] = xmalloc(8 * (size_t)sw + 1);
            src[k][0] = tgt[k][0] = 0;
            for (int w = 0; w < ew; w++) strcat(src[k], w ? " word" : "word");
            for (int w = 0; w < sw; w++) strcat(tgt[k], w ? " palabra" : "palabra");
        }
    BiblePairs p = {.n = 2 * V, .key = key, .src = src, .tgt = tgt};
    unsigned char shifted[2 * V];
    EXPECT(bible_flag_shifted(&p, shifted) == V, "flagged %d", bible_flag_shifted(&p, shifted));
    for (int k = 0; k < 2 * V; k++) EXPECT(shifted[k] == (k >= V), "%s: %d", key[k], shifted[k]);
    for (int k = 0; k < 2 * V; k++) free(key[k]), free(src[k]), free(tgt[k]);
}

// When `make data` has run: the three files read through the pair reader, and no verse in
// two splits (by the .keys files beside them).
static void test_made_files(void) {
    char path[256];
    int total = 0, n_keys = 0;
    char **keys = NULL;
    static const char *const splits[] = {"train", "valid", "test"};
    for (int s = 0; s < 3; s++) {
        pairs_bible_path(path, sizeof path, "data", splits[s]);
        if (!file_exists(path)) {
            printf("  (no %s: make data makes it; skipped)\n", path);
            return;
        }
        PairSet p;
        Error err = {{0}};
        EXPECT(pairs_read(&p, path, &err) == 0, "%s", err.msg);
        total += p.n;
        snprintf(path, sizeof path, "data/bible/%s.keys", splits[s]);
        unsigned char *data;
        size_t len;
        EXPECT(file_read_all(path, &data, &len, 0, &err) == 0, "%s", err.msg);
        int lines = 0;
        for (char *line = strtok((char *)data, "\n"); line; line = strtok(NULL, "\n")) {
            keys = xrealloc(keys, (size_t)(n_keys + 1) * sizeof *keys);
            keys[n_keys++] = xstrdup(line);
            lines++;
            EXPECT(bible_split_of(line, BIBLE_SPLIT_SEED) == s, "%s in %s", line, splits[s]);
        }
        EXPECT(lines == p.n, "%s: %d keys for %d pairs", path, lines, p.n);
        free(data);
        pairs_free(&p);
    }
    EXPECT(total > 30000, "%d pairs", total);
    qsort(keys, (size_t)n_keys, sizeof *keys, (int (*)(const void *, const void *))strcmp);
    for (int i = 1; i < n_keys; i++) EXPECT(strcmp(keys[i - 1], keys[i]) != 0, "%s twice", keys[i]);
    for (int i = 0; i < n_keys; i++) free(keys[i]);
    free(keys);
}

// Runs fetch.sh for the Bible alone with SWORD_PATH=sword into out; returns its exit status and
// puts its stderr into err (cap bytes).
static int fetch_bible(const char *dir, const char *sword, char *err, size_t cap) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "SWORD_PATH='%s' DATA_SETS=bible BIBLE_PAIRS=/nonexistent sh datasets/fetch.sh '%s/out' "
             ">'%s/stdout.txt' 2>'%s/stderr.txt'",
             sword, dir, dir, dir);
    int status = system(cmd);
    snprintf(cmd, sizeof cmd, "%s/stderr.txt", dir);
    unsigned char *data = NULL;
    size_t len = 0;
    Error e = {{0}};
    err[0] = 0;
    if (file_read_all(cmd, &data, &len, 0, &e) == 0) {
        snprintf(err, cap, "%.*s", (int)len, (const char *)data);
        free(data);
    }
    return status;
}

// `make data` on a missing or truncated module (a copy of the installed one under a SWORD_PATH of
// its own): one line naming the module and the reason, a non-zero exit, nothing written.
static void test_fetch_refuses_damaged_modules(void) {
    const char *sys = "/usr/share/sword";
    char path[600];
    snprintf(path, sizeof path, "%s/mods.d/spaRV1909eb.conf", sys);
    if (!file_exists(path) || system("command -v mod2imp >/dev/null 2>&1") != 0) {
        printf("  (no SWORD modules or mod2imp: make deps installs them; skipped)\n");
        return;
    }
    char dir[256], sword[400], cmd[4800], err[1024];
    CHECK(scratch_make(dir, sizeof dir, "test_bible") == 0);
    snprintf(sword, sizeof sword, "%s/sword", dir);
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/mods.d' '%s/modules/texts/ztext' && cp %s/mods.d/spaRV1909eb.conf "
             "%s/mods.d/engWEB2015eb.conf '%s/mods.d' && cp -r %s/modules/texts/ztext/spaRV1909eb "
             "'%s/modules/texts/ztext/' && ln -s %s/modules/texts/ztext/engWEB2015eb "
             "'%s/modules/texts/ztext/' && truncate -s 300000 '%s/modules/texts/ztext/spaRV1909eb/nt.bzz'",
             sword, sword, sys, sys, sword, sys, sword, sys, sword, sword);
    CHECK(system(cmd) == 0, "%s", cmd);
    struct { const char *damage, *want; } cases[] = {
        {"true", "data: SWORD module spaRV1909eb is damaged or truncated: mod2imp: "},
        {"rm '%s/modules/texts/ztext/spaRV1909eb/nt.bzz'",
         "data: SWORD module spaRV1909eb is damaged or truncated: mod2imp: "},
        {"rm '%s/mods.d/spaRV1909eb.conf'", "data: SWORD module spaRV1909eb is missing ("},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        snprintf(cmd, sizeof cmd, cases[k].damage, sword);
        CHECK(system(cmd) == 0, "%s", cmd);
        int status = fetch_bible(dir, sword, err, sizeof err);
        EXPECT(status != 0, "case %zu: exit 0", k);
        EXPECT(strncmp(err, cases[k].want, strlen(cases[k].want)) == 0, "case %zu: '%s'", k, err);
        char *nl = strchr(err, '\n');
        EXPECT(nl && nl[1] == 0, "case %zu: not one line: '%s'", k, err);
        snprintf(path, sizeof path, "%s/out/bible/train.tsv", dir);
        EXPECT(!file_exists(path), "case %zu: wrote %s", k, path);
    }
    scratch_remove(dir);
}

int main(void) {
    RUN(test_strip_markup);
    RUN(test_parse_imp);
    RUN(test_refusals);
    RUN(test_pair_by_reference);
    RUN(test_split);
    RUN(test_flag_shifted_chapters);
    RUN(test_made_files);
    RUN(test_fetch_refuses_damaged_modules);
    return test_summary();
}
