// ptb_lexer.h: the lexer of Stanford's PTBTokenizer 3.4.1 (PTBLexer), the tokenizer
// coco-caption runs before scoring, re-implemented from the rules of its PTBLexer.flex.
//
// The text is UTF-16 code units, as in Java (a code point past U+FFFF is two surrogate
// units, which no rule takes as a letter). Like the JFlex scanner, every rule is tried at
// the current position, the longest match wins and a tie goes to the earlier rule; a
// rule with trailing context "r1/r2" counts the length of r1 r2 for that contest and
// returns r1 (the longest r1 whose rest matches r2). Some rules then give part of their
// text back ("cannot" -> "can", then "not"). The options are PTBTokenizer's defaults as
// coco-caption runs it (ptb3Escaping, americanize off, untokenizable characters deleted):
//   - ( ) [ ] { } become -LRB- -RRB- -LSB- -RSB- -LCB- -RCB-;
//   - quotes become `` '' ` ' (latexQuotes), "&amp;" becomes "&", dashes U+2013..U+2015
//     become "--", an ellipsis (U+2026, "...." ...) becomes "...", cent/pound/euro signs
//     become "cents" "#" "$", fractions U+00BC..U+00BE, U+2153, U+2154 become "1/4" ...;
//   - spaces inside a token (phone numbers, fractions like "2 1/2", SGML tags) become
//     U+00A0;
//   - a character no rule takes (emoji, most symbols outside U+2200..U+2BFF) is deleted.
// Lower-casing and coco-caption's punctuation filter are the caller's (seq/tokenizer.c).
//
// Cost: plain ASCII words and runs of spaces take a shortcut (checked against the full
// rules in the tests); any other lexeme tries all 81 rules. No rule looks past a window of
// 4096 units from the lexeme's start, and the rules that scan a run to its end whatever
// they match (likely URL, e-mail, their host segments and paths, HTHING) look the end up
// in the text's PtbRuns (ptb_next_runs, as tokenize() does) instead of rescanning it at
// every lexeme: on COCO-style captions about 1.8M tokens/s on one core, and a 1 MB run
// without spaces such as "&a&a..." or "a,a,..." about 1 s (bench/bench_tokenizer.c; the
// window alone left it at 20-50 us a unit, minutes for 1 MB). ptb_next without runs
// scans, as before: up to the window per lexeme.
#ifndef SEQ_PTB_LEXER_H
#define SEQ_PTB_LEXER_H

#include <stdint.h>

typedef enum {
    PTB_SKIP,     // white space or a deleted character: no token
    PTB_NEWLINE,  // a line break (PTBTokenizer's *NL* token with -preserveLines)
    PTB_TOKEN,    // a token
} PtbKind;

typedef struct {
    PtbKind kind;
    int advance;  // code units consumed (>= 1)
    int len;      // PTB_TOKEN: units written to the caller's buffer
} PtbLexeme;

// Scans the lexeme at pos (0 <= pos < n) of the n units s. For a token, its normalised
// text (not yet lower-cased) goes to out, which must hold PTB_OUT_MAX(n - pos) units.
// The text s should end with a line break, as each caption but the last does in the file
// coco-caption hands the tokenizer (some rules look one or two characters past a word).
void ptb_next(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out);

// ptb_next without its shortcuts for plain words and spaces: every rule is tried at pos.
// Same results; for tests.
void ptb_next_all_rules(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out);

// The ends of the runs of text some rules scan to the end (URL and e-mail characters, the
// segments of a host name, HTHING's letters), found once for all n units of s, so that the
// lexemes of one long run without spaces do not each rescan it. ptb_next_runs gives the
// lexemes of ptb_next; runs must be ptb_runs_make's of the same s and n. Costs 7 ints a
// unit while it lives.
typedef struct PtbRuns PtbRuns;
PtbRuns *ptb_runs_make(const uint16_t *s, int n);
void ptb_runs_free(PtbRuns *runs);  // NULL is fine
void ptb_next_runs(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out,
                   const PtbRuns *runs);

// Room for one token's normalised text from a rest of r units: the longest growth is a
// bracket inside a phone number, 1 unit -> 5 ("-LRB-"), or U+00A2 -> "cents".
#define PTB_OUT_MAX(r) (5 * (r) + 8)

#endif
