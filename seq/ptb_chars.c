// ptb_chars.c: see ptb_chars.h.
#include "seq/ptb_chars.h"

#include <stddef.h>

typedef struct {
    unsigned first, last;  // inclusive
} CodeRange;

typedef struct {
    unsigned first, last;  // inclusive
    int stride;            // 1, or 2 for alternating upper/lower pairs
    int delta;             // lower = code + delta
} LowerRun;

#include "seq/ptb_chars_tables.inc"

// The units PTBLexer's LETTER class (PTBLexer.flex, CoreNLP 3.4.1) adds to [:letter:]:
// the soft hyphen, Latin and Greek extensions, combining marks, and vowel signs of
// Hebrew, Arabic, Syriac, Thaana, NKo and the Indic and Thai/Lao scripts.
static const CodeRange word_letter_extra[] = {
    {0x00AD, 0x00AD}, {0x0237, 0x024F}, {0x02C2, 0x02C5}, {0x02D2, 0x02DF}, {0x02E5, 0x02FF},
    {0x0300, 0x036F}, {0x0370, 0x037D}, {0x0384, 0x0385}, {0x03CF, 0x03CF}, {0x03F6, 0x03F6},
    {0x03FC, 0x03FF}, {0x0483, 0x0487}, {0x04CF, 0x04CF}, {0x04F6, 0x04FF}, {0x0510, 0x0525},
    {0x055A, 0x055F}, {0x0591, 0x05BD}, {0x05BF, 0x05BF}, {0x05C1, 0x05C2}, {0x05C4, 0x05C5},
    {0x05C7, 0x05C7}, {0x0615, 0x061A}, {0x063B, 0x063F}, {0x064B, 0x065E}, {0x0670, 0x0670},
    {0x06D6, 0x06EF}, {0x06FA, 0x06FF}, {0x070F, 0x070F}, {0x0711, 0x0711}, {0x0730, 0x074F},
    {0x0750, 0x077F}, {0x07A6, 0x07B1}, {0x07CA, 0x07F5}, {0x07FA, 0x07FA}, {0x0900, 0x0903},
    {0x093C, 0x093C}, {0x093E, 0x094E}, {0x0951, 0x0955}, {0x0962, 0x0963}, {0x0981, 0x0983},
    {0x09BC, 0x09C4}, {0x09C7, 0x09C8}, {0x09CB, 0x09CD}, {0x09D7, 0x09D7}, {0x09E2, 0x09E3},
    {0x0A01, 0x0A03}, {0x0A3C, 0x0A3C}, {0x0A3E, 0x0A4F}, {0x0A81, 0x0A83}, {0x0ABC, 0x0ACF},
    {0x0B82, 0x0B82}, {0x0BBE, 0x0BC2}, {0x0BC6, 0x0BC8}, {0x0BCA, 0x0BCD}, {0x0C01, 0x0C03},
    {0x0C3E, 0x0C56}, {0x0D3E, 0x0D44}, {0x0D46, 0x0D48}, {0x0E30, 0x0E3A}, {0x0E47, 0x0E4E},
    {0x0EB1, 0x0EBC}, {0x0EC8, 0x0ECD},
};

#define LEN(a) (sizeof(a) / sizeof *(a))

// 1 when u lies in one of the n sorted, disjoint ranges r.
static int in_ranges(const CodeRange *r, size_t n, unsigned u) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u < r[mid].first) hi = mid;
        else if (u > r[mid].last) lo = mid + 1;
        else return 1;
    }
    return 0;
}

int ptb_is_letter(unsigned u) {
    if (u < 0x80) return (u | 0x20) >= 'a' && (u | 0x20) <= 'z';
    return in_ranges(ptb_letter_ranges, LEN(ptb_letter_ranges), u);
}

int ptb_is_digit(unsigned u) {
    if (u < 0x80) return u >= '0' && u <= '9';
    return in_ranges(ptb_digit_ranges, LEN(ptb_digit_ranges), u);
}

int ptb_is_word_letter(unsigned u) {
    if (u < 0x80) return (u | 0x20) >= 'a' && (u | 0x20) <= 'z';
    return ptb_is_letter(u) || in_ranges(word_letter_extra, LEN(word_letter_extra), u);
}

unsigned ptb_lower(unsigned cp) {
    if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    size_t lo = 0, hi = LEN(ptb_lower_runs);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const LowerRun *r = &ptb_lower_runs[mid];
        if (cp < r->first) hi = mid;
        else if (cp > r->last) lo = mid + 1;
        else return (cp - r->first) % (unsigned)r->stride == 0 ? (unsigned)((int)cp + r->delta) : cp;
    }
    return cp;
}
