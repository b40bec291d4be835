// test_tokenizer_ptb.c: the caption tokeniser against Stanford PTBTokenizer 3.4.1 as
// coco-caption runs it (seq/tokenizer.h). The expected tokens of the table below were
// produced by PTBTokenizer 3.4.1 itself (built from CoreNLP's v3.4.1 tag) with
// `-preserveLines -lowerCase`, then coco-caption's punctuation filter, each caption followed
// by another line so that no rule sees a neighbouring caption.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/ptb_chars.h"
#include "seq/ptb_lexer.h"
#include "seq/tokenizer.h"
#include "tests/support/test.h"

// 1 if text tokenises to exactly the space-separated words of expect.
static int tokenizes_to(const char *text, const char *expect) {
    Tokens t;
    Error err;
    CHECK(tokenize(&t, text, TOKENIZE_MAX_TOKENS, &err) == 0, "%s", err.msg);
    char *joined = tokens_join(&t);
    int same = strcmp(joined, expect) == 0 && t.dropped == 0;
    if (!same) fprintf(stderr, "    \"%s\": got \"%s\", expected \"%s\"\n", text, joined, expect);
    free(joined);
    tokens_free(&t);
    return same;
}

static const char *const cases[][2] = {
    {"A dog's ball, red.",
     "a dog 's ball red"},
    {"the dog 's bone",
     "the dog 's bone"},
    {"rock 'n' roll",
     "rock 'n' roll"},
    {"let 'em go",
     "let 'em go"},
    {"music of the '90s",
     "music of the '90s"},
    {"'tis the season",
     "'t is the season"},
    {"'twas the night",
     "'t was the night"},
    {"they 're here and we 'll see",
     "they 're here and we 'll see"},
    {"The dog's ball isn't RED?",
     "the dog 's ball is n't red"},
    {"I can't and won't",
     "i ca n't and wo n't"},
    {"DON'T stop",
     "do n't stop"},
    {"y'all come back",
     "y' all come back"},
    {"o'clock at the O'Neil house",
     "o'clock at the o'neil house"},
    {"cannot stop",
     "can not stop"},
    {"CANNOT stop",
     "can not stop"},
    {"gonna go gotta run",
     "gon na go got ta run"},
    {"gimme that wanna play lemme see",
     "gim me that wan na play lem me see"},
    {"a sign (red) with [square] and {curly} brackets",
     "a sign -lrb- red -rrb- with -lsb- square -rsb- and -lcb- curly -rcb- brackets"},
    {"-LRB- stays",
     "-lrb- stays"},
    {"Mr. Smith and Mrs. Jones",
     "mr. smith and mrs. jones"},
    {"the U.S.A. flag",
     "the u.s.a. flag"},
    {"at 10:30 a.m. in D.C.",
     "at 10:30 a.m. in d.c."},
    {"at 5 p.m.",
     "at 5 p.m."},
    {"Dr. Who vs. the Daleks",
     "dr. who vs. the daleks"},
    {"St. Louis",
     "st. louis"},
    {"a dog etc. and more",
     "a dog etc. and more"},
    {"visit www.example.com today",
     "visit www.example.com today"},
    {"see http://example.org/path/x.html now",
     "see http://example.org/path/x.html now"},
    {"mail foo.bar@baz.com please",
     "mail foo.bar@baz.com please"},
    {"a photo.jpg file",
     "a photo.jpg file"},
    {"at 10:30 and 7:45",
     "at 10:30 and 7:45"},
    {"$5 and US$ 10",
     "$ 5 and us$ 10"},
    {"10% off",
     "10 % off"},
    {"Tom & Jerry",
     "tom & jerry"},
    {"AT&T and S&P 500",
     "at&t and s&p 500"},
    {"A&amp;B signs",
     "a&b signs"},
    {"x=y equation",
     "x = y equation"},
    {"wow!!! really???",
     "wow !!! really ???"},
    {"oh! really? yes.",
     "oh really yes"},
    {"-5 degrees and +3 more",
     "-5 degrees and +3 more"},
    {".5 miles",
     ".5 miles"},
    {"3.50 dollars and 1,000 people",
     "3.50 dollars and 1,000 people"},
    {"1/2 cup and 2 1/2 cups",
     "1/2 cup and 2\xc2\xa0" "1/2 cups"},
    {"\xc2\xbd cup of \xc2\xbc pint",
     "1/2 cup of 1/4 pint"},
    {"call 555-123-4567 now",
     "call 555-123-4567 now"},
    {"12/25/2014 date",
     "12/25/2014 date"},
    {"\xc3\x89" "COLE and \xc3\x96L",
     "\xc3\xa9" "cole and \xc3\xb6l"},
    {"Stra\xc3\x9f" "e in K\xc3\xb6ln",
     "stra\xc3\x9f" "e in k\xc3\xb6ln"},
    {"\xe2\x80\x9c" "curly quotes\xe2\x80\x9d and \xe2\x80\x98single\xe2\x80\x99",
     "curly quotes and single"},
    {"an em\xe2\x80\x94" "dash and en\xe2\x80\x93" "dash",
     "an em dash and en dash"},
    {"wait\xe2\x80\xa6 what",
     "wait what"},
    {"a dog \xf0\x9f\x98\x80 smiling",
     "a dog smiling"},
    {"the \xce\x9f\xce\x94\xce\x9f\xce\xa3 sign",
     "the \xce\xbf\xce\xb4\xce\xbf\xcf\x82 sign"},
    {"\xc4\xb0stanbul at night",
     "i\xcc\x87stanbul at night"},
    {"\xc2\xa2 and \xc2\xa3 and \xe2\x82\xac and \xc2\xa5",
     "cents and # and $ and \xc2\xa5"},
    {"\"quoted\" words here",
     "quoted words here"},
    {"''double'' and ``latex``",
     "double and latex"},
    {"'single' quotes",
     "single quotes"},
    {"a -- b --- c ---- d ----- e",
     "a b c d ----- e"},
    {"he said :) and :-(",
     "he said :-rrb- and :--lrb-"},
    {"^_^ smiley",
     "^_^ smiley"},
    {"<b>bold</b> text",
     "<b> bold </b> text"},
    {"a <end> token",
     "a <end> token"},
    {"the letter b.",
     "the letter b."},
    {"no. 5 and fig. 3",
     "no. 5 and fig. 3"},
    {"co-op and anti-war and pro-choice",
     "co-op and anti-war and pro-choice"},
    {"e-mail and x-ray",
     "e-mail and x-ray"},
    {"black-and-white photo",
     "black-and-white photo"},
    {"2-year-old child",
     "2-year-old child"},
    {"and/or w/o",
     "and/or w/o"},
    {"@user and #topic",
     "@user and #topic"},
    {"c++ and c#",
     "c++ and c#"},
    {"&nbsp;here",
     "here"},
    {"a caf&eacute; sign",
     "a caf&eacute; sign"},
    {"#1 fan",
     "# 1 fan"},
    {"hello...world",
     "hello world"},
    {"a . . . pause",
     "a pause"},
    {"mr",
     "mr"},
    {"thin\xe2\x80\x89space, ideographic\xe3\x80\x80space and no\xc2\xa0" "break",
     "thin space ideographic space and no break"},
    {"zero\xe2\x80\x8bwidth",
     "zero width"},
    {"a dog., a cat",
     "a dog. a cat"},
    {"pics from '90 and '85",
     "pics from '90 and '85"},
    {"the U.S. The end",
     "the u.s. the end"},
    {"a \xe2\x80\x9cquote\xe2\x80\x9d \xc2\xabguillemets\xc2\xbb",
     "a quote guillemets"},
    {"\xc4\xb0I\xc4\xb1i",
     "i\xcc\x87i\xc4\xb1i"},
};

static void test_ptb_table(void) {
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) bad += !tokenizes_to(cases[i][0], cases[i][1]);
    EXPECT(bad == 0, "%d of %zu captions differ from PTBTokenizer 3.4.1", bad,
           sizeof cases / sizeof *cases);
}

// Each caption is read alone, as if the next line were empty: the rules that look past
// the end of the line see nothing there.
static void test_ptb_caption_end(void) {
    EXPECT(tokenizes_to("a piece of art.", "a piece of art"));  // "art." only before a digit
    EXPECT(tokenizes_to("plan b.", "plan b."));                 // "b." only before "The" etc.
    EXPECT(tokenizes_to("the '90", "the '90"));                 // '90 before a line break
    EXPECT(tokenizes_to("it's", "it 's"));
    EXPECT(tokenizes_to("etc.", "etc."));
}

// The lexer's contract: every lexeme advances, and the normalised text fits the buffer.
static void test_ptb_lexer_advances(void) {
    static const char *const texts[] = {"cannot", "'tis", "(555) 123-4567", "\xc2\xa2", "( ) ( )",
                                        "U.S. The", "I. The", "gonna"};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        uint16_t s[64], out[PTB_OUT_MAX(64)];
        int n = 0;
        for (const char *p = texts[k]; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if (c == 0xc2) continue;  // the one non-ASCII case: U+00A2
            s[n++] = c;
        }
        s[n++] = '\n';
        int tokens = 0;
        for (int pos = 0; pos < n;) {
            PtbLexeme lx;
            ptb_next(&lx, s, n, pos, out);
            EXPECT(lx.advance >= 1 && lx.advance <= n - pos, "case %zu: advance %d at %d", k,
                   lx.advance, pos);
            if (lx.advance < 1) break;
            EXPECT(lx.kind != PTB_TOKEN || (lx.len >= 1 && lx.len <= PTB_OUT_MAX(n - pos)));
            tokens += lx.kind == PTB_TOKEN;
            pos += lx.advance;
        }
        EXPECT(tokens >= 1, "case %zu", k);
    }
}

// ptb_next's shortcuts (plain words, runs of spaces) agree with trying every rule, at
// every position of every ASCII caption of the table.
static void test_ptb_shortcuts_agree(void) {
    int compared = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *text = cases[k][0];
        int n = (int)strlen(text);
        uint16_t s[256], a[PTB_OUT_MAX(256)], b[PTB_OUT_MAX(256)];
        int ascii = n < 255;
        for (int i = 0; i < n && ascii; i++) ascii = (unsigned char)text[i] < 0x80;
        if (!ascii) continue;
        for (int i = 0; i < n; i++) s[i] = (unsigned char)text[i];
        s[n++] = '\n';
        for (int pos = 0; pos < n; pos++, compared++) {
            PtbLexeme x, y;
            ptb_next(&x, s, n, pos, a);
            ptb_next_all_rules(&y, s, n, pos, b);
            int same = x.kind == y.kind && x.advance == y.advance &&
                       (x.kind != PTB_TOKEN || (x.len == y.len && memcmp(a, b, (size_t)x.len * 2) == 0));
            EXPECT(same, "\"%s\" at %d: shortcut kind %d advance %d, rules kind %d advance %d", text, pos,
                   x.kind, x.advance, y.kind, y.advance);
        }
    }
    EXPECT(compared > 1000, "only %d positions compared", compared);
}

// The character classes are those of PTBLexer 3.4.1, not today's Unicode: U+1885 was a
// letter then, U+19B0 (a vowel sign since Unicode 8) was not.
static void test_ptb_char_classes(void) {
    EXPECT(ptb_is_letter('a') && ptb_is_letter(0xE9) && ptb_is_letter(0x65E5));
    EXPECT(!ptb_is_letter('1') && !ptb_is_letter(0xAD) && !ptb_is_letter(0xD83D));
    EXPECT(ptb_is_letter(0x1885) && !ptb_is_letter(0x19B0));
    EXPECT(ptb_is_digit('7') && ptb_is_digit(0x664) && !ptb_is_digit(0xB2));
    EXPECT(ptb_is_word_letter(0x301) && !ptb_is_letter(0x301));  // combining acute accent
    EXPECT(ptb_lower('Q') == 'q' && ptb_lower(0xC9) == 0xE9 && ptb_lower(0x3A3) == 0x3C3);
    EXPECT(ptb_lower(0x10400) == 0x10428 && ptb_lower(0x100) == 0x101 && ptb_lower(0x101) == 0x101);
}

// A run of text without spaces costs a bounded amount per token (the lexer's window).
static void test_ptb_long_run(void) {
    int pairs = 20000;
    char *text = xmalloc((size_t)2 * pairs + 1);
    for (int i = 0; i < pairs; i++) text[2 * i] = 'a', text[2 * i + 1] = ',';
    text[2 * pairs] = 0;
    Tokens t;
    Error err;
    EXPECT(tokenize(&t, text, pairs + 1, &err) == 0);
    EXPECT(t.n == pairs && t.dropped == 0, "n %d", t.n);
    for (int i = 0; i < t.n; i++)
        if (strcmp(t.tok[i], "a") != 0) {
            EXPECT(0, "token %d is '%s'", i, t.tok[i]);
            break;
        }
    tokens_free(&t);
    free(text);
}


// ptb_next_runs (the run ends found once per text) gives ptb_next's lexemes at every
// position: on the table's captions, and on texts of URL, e-mail and HTHING characters with
// runs longer than the lexer's window (4096 units), where a run's end lies past the window.
static int same_lexeme(const PtbLexeme *x, const PtbLexeme *y, const uint16_t *a, const uint16_t *b) {
    return x->kind == y->kind && x->advance == y->advance &&
           (x->kind != PTB_TOKEN || (x->len == y->len && memcmp(a, b, (size_t)x->len * 2) == 0));
}
static void test_ptb_runs_agree(void) {
    static const char alphabet[] = "ab.,@&-/'<>w:1_Z(\" \n";
    enum { N = 6000 };
    uint16_t *s = xmalloc(N * sizeof *s);
    uint16_t *a = xmalloc(PTB_OUT_MAX(N) * sizeof *a), *b = xmalloc(PTB_OUT_MAX(N) * sizeof *b);
    uint32_t x = 12345;
    int compared = 0, bad = 0;
    // Runs that end past the window: what lies beyond must not count.
    static const char *const longs[][2] = {{"a", ".com"}, {"&a", "@b.org"}, {"x", "-y"},
                                            {"a,", "-b"}, {"w", "/path"}};
    const int n_table = (int)(sizeof cases / sizeof *cases), n_long = 5;
    for (int k = 0; k < n_table + n_long + 40 && !bad; k++) {
        int n = 0;
        if (k < n_table) {  // a caption of the table (ASCII ones)
            for (const char *p = cases[k][0]; *p && n < N - 1; p++) s[n++] = (unsigned char)*p;
        } else if (k < n_table + n_long) {  // "http://" or "www." then a run, then its end
            const char *head = k % 2 ? "www." : "http://", *unit = longs[k - n_table][0];
            const char *tail = longs[k - n_table][1];
            for (const char *p = head; *p; p++) s[n++] = (unsigned char)*p;
            while (n < 5000)
                for (const char *p = unit; *p && n < 5000; p++) s[n++] = (unsigned char)*p;
            for (const char *p = tail; *p; p++) s[n++] = (unsigned char)*p;
        } else {  // short texts of every character, then long ones without spaces
            int len = k % 4 == 0 ? N - 1 : 1 + (int)(x % 200), width = k % 4 == 0 ? 12 : 20;
            for (; n < len; n++) {
                x = x * 1103515245u + 12345u;
                s[n] = (unsigned char)alphabet[(x >> 16) % (uint32_t)width];
            }
        }
        s[n++] = '\n';
        PtbRuns *runs = ptb_runs_make(s, n);
        // Long texts: the first positions (whose runs the window cuts), then a sample (ptb_next
        // without runs costs up to the window at each).
        for (int pos = 0; pos < n && !bad; pos += n < 1000 || pos < 400 ? 1 : 37, compared++) {
            PtbLexeme p, q;
            ptb_next_runs(&p, s, n, pos, a, runs);
            ptb_next(&q, s, n, pos, b);
            if (!same_lexeme(&p, &q, a, b)) {
                bad = 1;
                EXPECT(0, "text %d at %d of %d: with runs kind %d advance %d, without kind %d advance %d",
                       k, pos, n, p.kind, p.advance, q.kind, q.advance);
            }
        }
        ptb_runs_free(runs);
    }
    EXPECT(compared > 10000, "only %d positions compared", compared);
    free(s);
    free(a);
    free(b);
}

int main(void) {
    RUN(test_ptb_table);
    RUN(test_ptb_caption_end);
    RUN(test_ptb_lexer_advances);
    RUN(test_ptb_shortcuts_agree);
    RUN(test_ptb_char_classes);
    RUN(test_ptb_long_run);
    RUN(test_ptb_runs_agree);
    return test_summary();
}
