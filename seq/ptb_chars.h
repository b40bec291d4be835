// ptb_chars.h: the character classes and lower-casing of Stanford's PTBTokenizer 3.4.1, as
// seq/ptb_lexer.c needs them.
//
// The lexer reads UTF-16 code units, as the Java original does: a code point past U+FFFF
// is two surrogate units, which belong to no class below. The tables in
// ptb_chars_tables.inc are generated (bench/reference/make_ptb_tables.py): [:letter:] and
// [:digit:] were measured on PTBTokenizer 3.4.1 itself (they are those of the Unicode of
// 2014, not today's), the lower-case mapping is Unicode 14's.
#ifndef SEQ_PTB_CHARS_H
#define SEQ_PTB_CHARS_H

// JFlex [:letter:] (Java's Character.isLetter of its day) for a UTF-16 unit.
int ptb_is_letter(unsigned u);
// JFlex [:digit:] (Character.isDigit: decimal digits of every script).
int ptb_is_digit(unsigned u);
// A one-unit LETTER of PTBLexer's words: [:letter:] or one of the marks and signs its
// LETTER class adds (combining accents, Indic vowel signs, the soft hyphen U+00AD, ...).
int ptb_is_word_letter(unsigned u);

// The lower case of one code point (0..0x10FFFF) by Unicode's simple mapping; the
// context-dependent cases (U+0130, final sigma) are left to the caller.
unsigned ptb_lower(unsigned cp);

#endif
