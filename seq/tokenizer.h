// tokenizer.h: caption tokeniser in the style coco-caption applies before scoring
// (Stanford PTBTokenizer, lower-cased, then punctuation tokens dropped).
//
// Rules, in order:
//   - the text must be valid UTF-8 (no overlong forms, surrogates or code points past
//     U+10FFFF); otherwise tokenize() fails with "invalid UTF-8 at byte N" and the caller
//     prefixes the file and line;
//   - ASCII letters are lower-cased; other code points are kept as they are;
//   - whitespace (ASCII space, tab, CR, LF, VT, FF) separates tokens;
//   - punctuation . , ! ? ; : " ( ) [ ] { } ` and standalone ' - -- ... is split off and
//     DROPPED (coco-caption removes these tokens after PTB tokenisation);
//     kept inside a word: a hyphen between letters/digits ("black-and-white"), a period
//     or comma between digits ("3.5", "1,000");
//   - PTB clitics are split off and KEPT: "dog's" -> "dog" "'s", "don't" -> "do" "n't",
//     likewise 're 've 'll 'd 'm; an apostrophe between letters stays ("o'clock"); any
//     other quote is dropped;
//   - every other character (letters, digits, / & $ % # + = < > _ and non-ASCII) is part
//     of a word.
// Limits: at most max_tokens tokens are kept; further tokens are NOT an error, they are
// dropped and counted in Tokens.dropped so the caller can warn or reject.
// Differences from the full Stanford PTBTokenizer, all rare in captions: abbreviations
// ("st.") lose their period; $ and % stay attached to their word; square brackets are
// dropped (PTB makes them -lsb- / -rsb-, which coco-caption keeps); non-ASCII letters
// keep their case.
//
//     Tokens t;
//     if (tokenize(&t, "A dog's ball, red.", TOKENIZE_MAX_TOKENS, &err)) ...
//     // t.tok = {"a", "dog", "'s", "ball", "red"}, t.n = 5
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
