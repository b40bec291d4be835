// test_pairs.c: the sentence-pair reader (datasets/pairs.h) on small inputs written here:
// CR line ends, blank lines and UTF-8 kept as written; each refusal (no tab, two tabs, an
// empty side, bytes that are not UTF-8, a NUL byte, a 100,000-character line, an empty or
// missing file) as one line naming the file, the line and the reason; and the --data specs
// of `text translate`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "datasets/pairs.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char g_dir[256];

static int parse(PairSet *p, const char *text, size_t len, Error *err) {
    return pairs_parse(p, text, len, "x.tsv", err);
}

static void test_reads_pairs(void) {
    PairSet p;
    Error err = {{0}};
    const char *t = "the dog\tel perro\r\n\n  \t \nCaf\xc3\xa9 ok\tcaf\xc3\xa9 bien\nlast\tno newline";
    EXPECT(parse(&p, t, strlen(t), &err) == 0, "%s", err.msg);
    EXPECT(p.n == 3, "n %d", p.n);
    if (p.n == 3) {
        EXPECT(strcmp(p.src[0], "the dog") == 0 && strcmp(p.tgt[0], "el perro") == 0, "'%s' '%s'",
               p.src[0], p.tgt[0]);
        EXPECT(strcmp(p.src[1], "Caf\xc3\xa9 ok") == 0, "%s", p.src[1]);
        EXPECT(strcmp(p.tgt[2], "no newline") == 0, "%s", p.tgt[2]);
    }
    pairs_free(&p);
    EXPECT(p.n == 0 && p.src == NULL && p.tgt == NULL);
}

// Each bad line after a good one: the message is exactly "x.tsv: line 2: " + why.
static void expect_refused(const char *body, size_t len, const char *why) {
    char *t = xmalloc(len + 16);
    memcpy(t, "ok\tbien\n", 8);
    memcpy(t + 8, body, len);
    PairSet p;
    Error err = {{0}};
    EXPECT(parse(&p, t, len + 8, &err) == -1, "accepted (%s)", why);
    EXPECT(p.n == 0 && p.src == NULL, "a failed read left pairs behind");
    char want[256];
    snprintf(want, sizeof want, "x.tsv: line 2: %s", why);
    EXPECT(strcmp(err.msg, want) == 0, "'%s', expected '%s'", err.msg, want);
    EXPECT(strchr(err.msg, '\n') == NULL, "not one line: '%s'", err.msg);
    free(t);
}

static void test_refusals_name_file_line_reason(void) {
    expect_refused("no tab here\n", 12, "no tab between the source and the target");
    expect_refused("a\tb\tc\n", 6, "more than one tab (one SOURCE<TAB>TARGET a line)");
    expect_refused("\tel perro\n", 10, "empty source");
    expect_refused("  \tel perro\n", 12, "empty source");
    expect_refused("the dog\t\n", 9, "empty target");
    expect_refused("the dog\t  \r\n", 12, "empty target");
    expect_refused("caf\xe9\tx\n", 7, "not valid UTF-8 at byte 4");
    expect_refused("ab\t\xc3\n", 5, "not valid UTF-8 at byte 4");
    expect_refused("\xed\xa0\x80\tx\n", 6, "not valid UTF-8 at byte 1");  // a surrogate
    expect_refused("a\0b\tx\n", 6, "a NUL byte at byte 2");
    size_t n = 100000;
    char *big = xmalloc(n + 4);
    memset(big, 'a', n);
    big[10] = '\t';
    big[n] = '\n';
    expect_refused(big, n + 1, "a line of 100000 bytes (at most 16384)");
    free(big);
}

static void test_whole_file_refusals(void) {
    PairSet p;
    Error err = {{0}};
    EXPECT(parse(&p, "", 0, &err) == -1 && strcmp(err.msg, "x.tsv: empty file") == 0, "'%s'",
           err.msg);
    EXPECT(parse(&p, "\n \n", 3, &err) == -1 && strcmp(err.msg, "x.tsv: no sentence pairs") == 0,
           "'%s'", err.msg);
    char path[600];
    snprintf(path, sizeof path, "%s/none.tsv", g_dir);
    EXPECT(pairs_read(&p, path, &err) == -1 && strncmp(err.msg, path, strlen(path)) == 0, "'%s'",
           err.msg);
    snprintf(path, sizeof path, "%s/two.tsv", g_dir);
    CHECK(scratch_write_text(path, "one\tuno\ntwo\tdos\n") == 0);
    EXPECT(pairs_read(&p, path, &err) == 0 && p.n == 2 && strcmp(p.tgt[1], "dos") == 0, "%s",
           err.msg);
    pairs_free(&p);
}

static void test_specs(void) {
    PairsSpec s;
    Error err = {{0}};
    EXPECT(pairs_spec_parse(&s, "dates", &err) == 0 && s.kind == PAIRS_SPEC_DATES && !s.file);
    EXPECT(pairs_spec_parse(&s, "bible-en-es", &err) == 0 && s.kind == PAIRS_SPEC_BIBLE);
    EXPECT(pairs_spec_parse(&s, "pairs:my/file.tsv", &err) == 0 && s.kind == PAIRS_SPEC_FILE &&
           strcmp(s.file, "my/file.tsv") == 0);
    const char *bad[] = {"pairs:", "pairs", "date", "bible", "bible-en-es:x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        EXPECT(pairs_spec_parse(&s, bad[i], &err) == -1, "'%s' accepted", bad[i]);
        char want[128];
        snprintf(want, sizeof want,
                 "--data: '%s' is not a translation data set (dates, bible-en-es, pairs:FILE)",
                 bad[i]);
        EXPECT(strcmp(err.msg, want) == 0, "'%s'", err.msg);
    }
    char buf[64];
    EXPECT(strcmp(pairs_bible_path(buf, sizeof buf, "data", "valid"), "data/bible/valid.tsv") == 0);
    // A missing split says how to make it; a present one reads.
    PairSet p;
    char want[600];
    snprintf(want, sizeof want, "%s/bible/test.tsv: missing (make data extracts the Bible verse pairs)", g_dir);
    EXPECT(pairs_read_bible(&p, g_dir, "test", &err) == -1 && strcmp(err.msg, want) == 0, "'%s'", err.msg);
    snprintf(want, sizeof want, "%s/bible", g_dir);
    CHECK(make_dirs(want, &err) == 0, "%s", err.msg);
    snprintf(want, sizeof want, "%s/bible/test.tsv", g_dir);
    CHECK(scratch_write_text(want, "In the beginning\tEN el principio\n") == 0);
    EXPECT(pairs_read_bible(&p, g_dir, "test", &err) == 0 && p.n == 1, "%s", err.msg);
    pairs_free(&p);
}

int main(void) {
    if (scratch_make(g_dir, sizeof g_dir, "test_pairs")) return 1;
    RUN(test_reads_pairs);
    RUN(test_refusals_name_file_line_reason);
    RUN(test_whole_file_refusals);
    RUN(test_specs);
    scratch_remove(g_dir);
    return test_summary();
}
