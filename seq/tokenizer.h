// tokenizer.h: caption tokeniser giving exactly the tokens coco-caption scores: Stanford
// PTBTokenizer 3.4.1 as pycocoevalcap/tokenizer/ptbtokenizer.py runs it
// (`PTBTokenizer -preserveLines -lowerCase`), then that script's punctuation filter.
//
//   1. The text must be valid UTF-8 (no overlong forms, surrogates or code points past
//      U+10FFFF); otherwise tokenize() fails with "invalid UTF-8 at byte N" and the caller
//      prefixes the file and line.
//   2. PTBTokenizer's lexer splits it (seq/ptb_lexer.h has the rules); among what follows:
//      clitics split off and keep their apostrophe ("dog's" -> dog 's, "don't" -> do n't,
//      "dog 's", "'em", "'n'", "'90s" stay whole); "cannot" -> can not, "gonna" -> gon na,
//      "gimme" -> gim me, "'tis" -> 't is; abbreviations, acronyms, web addresses, numbers
//      and times stay whole ("mr.", "u.s.a.", "a.m.", "www.x.com", "10:30", "-5", ".5",
//      "3.50", "1,000"); $ % & = split off ("$5" -> $ 5, "10%" -> 10 %, but "AT&T" stays);
//      "&amp;" is "&"; ( ) [ ] { } become -LRB- -RRB- -LSB- -RSB- -LCB- -RCB-; quotes become
//      `` '' ` '; dashes and the ellipsis become -- and ...; spaces inside a phone number or
//      "2 1/2" become U+00A0 (one token); Unicode spaces separate words; characters PTB
//      cannot tokenise (emoji, other symbols) are deleted.
//   3. Each token is lower-cased as Java's String.toLowerCase does (all of Unicode).
//   4. coco-caption's filter drops the tokens '' ' `` ` . ? ! , : - -- ... ; exactly (so
//      "!!!", "???", "----" stay). Its list names -LRB- -RRB- -LCB- -RCB- in upper case,
//      which never match the lower-cased tokens: coco-caption keeps -lrb- -rrb- -lcb- -rcb-
//      (and -lsb- -rsb-), and so does this tokeniser.
//   5. A token holding ASCII white space (a vertical tab inside a web address) is split
//      there, as coco-caption's BLEU and CIDEr split on white space.
// coco-caption tokenises all captions in one file, one per line, and two rules look past
// the end of a line: an abbreviation ("art.") keeps its period when the next caption
// starts with a digit, and a one-letter acronym ("b.") loses it before a next caption
// that starts with "The", "A", ... Here each caption is read alone, as if followed by an
// empty line. (Rare: a caption must end in such a word.)
// Limits: at most max_tokens tokens are kept; further tokens are NOT an error, they are
// dropped and counted in Tokens.dropped so the caller can warn or reject.
//
//     Tokens t;
//     if (tokenize(&t, "A dog's ball (red).", TOKENIZE_MAX_TOKENS, &err)) ...
//     // t.tok = {"a", "dog", "'s", "ball", "-lrb-", "red", "-rrb-"}, t.n = 7
//     tokens_free(&t);
#ifndef SEQ_TOKENIZER_H
#define SEQ_TOKENIZER_H

#include "core/error.h"

#define TOKENIZE_MAX_TOKENS 256  // a sensible cap for captions

typedef struct {
    char **tok;   // (n) NUL-terminated UTF-8 strings, owned
    int n;        // tokens kept
    int dropped;  // tokens past max_tokens that were dropped (0 normally)
} Tokens;

// Tokenises text into out (which it initialises; free with tokens_free even after a
// failure is harmless). max_tokens >= 0. Returns 0, or -1 with err set on invalid UTF-8
// (then out is empty).
int tokenize(Tokens *out, const char *text, int max_tokens, Error *err);

// 1 if the NUL-terminated string s is valid UTF-8, else 0 and *bad_offset (if non-NULL)
// the byte offset of the first invalid sequence.
int utf8_valid(const char *s, long *bad_offset);

// Builds an owned Tokens from n borrowed strings (copies them); handy for tests and for
// callers that already hold words.
void tokens_from_words(Tokens *out, const char *const *words, int n);

// Joins the tokens with single spaces into a malloc'd string (free()).
char *tokens_join(const Tokens *t);

void tokens_free(Tokens *t);

#endif
