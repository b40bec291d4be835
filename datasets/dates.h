// dates.h: the synthetic date task for the translator, a task with known alignments.
//
// Dates written in many human ways ("tuesday the 3rd of march 1987", "3/3/87",
// "march 3, 1987", "03.03.1987", "3 mar 87", "1987-03-03") are mapped to ISO 8601
// ("1987-03-03"), as in the well-known date-normalisation attention demo (whose formats are
// Babel's short, medium, long and full en_US patterns and a dozen day-month-year orders;
// its inputs are lower-cased). DATES_FORMATS lists ours, each named.
//
// Tokens are characters on both sides: the demo's choice, a closed alphabet with no <unk>
// (DATES_SOURCE_ALPHABET, 41 symbols; the target's is "0123456789-"), and alignments finer
// than words (the decoder must find the day's digits inside "3rd"). Sources are lower-case
// ASCII, at most DATES_MAX_SOURCE characters; targets are always 10 characters.
//
// Alignment: each target character knows its source span [span_start, span_end) (character
// offsets): the four year digits the year's characters ("87" in "3/3/87": the century is
// inferred), the month digits the month's (the number, or the name "march" / "mar"), the
// day digits the day's (with an ordinal suffix: "3rd"). The two '-' have no span (-1, -1)
// and are left out of alignment accuracy. Weekdays, when written, are the date's own.
//
// Examples are a pure function of (seed, split, index). Dates run from 1950-01-01 to
// 2049-12-31 (two-digit years are unambiguous: 50..99 are 19xx, 00..49 are 20xx). The split
// is a property of the date, whatever the seed: a fixed hash of its day number puts 80 % of
// the dates in train, 10 % in valid and 10 % in test (dates_split_of). A split's example
// draws its date (uniform over the split's dates) and its format (uniform over
// DATES_FORMATS) from a stream seeded by (seed, split, index). Every written form names one
// date only ('/' forms are month first, '.' and numeric ' ' forms day first, '-' is ISO), so
// no source string is in two splits.
//
//     DateExample e;
//     dates_example(&e, seed, DATES_TRAIN, i);   // e.src "3 mar 87", e.tgt "1987-03-03"
#ifndef DATASETS_DATES_H
#define DATASETS_DATES_H

#include <stddef.h>
#include <stdint.h>

#define DATES_MAX_SOURCE 40
#define DATES_TARGET_LEN 10
#define DATES_SOURCE_ALPHABET " ,-./0123456789abcdefghijklmnopqrstuvwxyz"
#define DATES_TARGET_ALPHABET "-0123456789"
#define DATES_FIRST_YEAR 1950
#define DATES_LAST_YEAR 2049

typedef enum { DATES_TRAIN = 0, DATES_VALID = 1, DATES_TEST = 2 } DateSplit;

typedef struct {
    const char *name;     // e.g. "d MMM yy"
    const char *example;  // 1987-03-03 in this format
} DateFormat;

// The formats, indexed 0..DATES_FORMAT_COUNT-1.
extern const DateFormat DATES_FORMATS[];
extern const int DATES_FORMAT_COUNT;

typedef struct {
    char src[DATES_MAX_SOURCE + 1];  // NUL-terminated
    int src_len;
    char tgt[DATES_TARGET_LEN + 1];  // "YYYY-MM-DD"
    int span_start[DATES_TARGET_LEN], span_end[DATES_TARGET_LEN];  // [start, end) or -1, -1
    int year, month, day;  // month 1..12, day 1..31
    int weekday;           // 0 Monday .. 6 Sunday
    int format;            // index into DATES_FORMATS
} DateExample;

// Days since 1970-01-01 (negative before), and back; valid Gregorian dates only.
int64_t dates_day_number(int year, int month, int day);
void dates_from_day_number(int64_t n, int *year, int *month, int *day);
int dates_weekday(int year, int month, int day);  // 0 Monday .. 6 Sunday
int dates_days_in_month(int year, int month);

// The split a date belongs to (seed-independent).
DateSplit dates_split_of(int year, int month, int day);

// Writes a valid date in format f (0..DATES_FORMAT_COUNT-1), with its target and spans.
void dates_render(DateExample *e, int year, int month, int day, int f);

// Example index of split (any index >= 0): its date lies in split.
void dates_example(DateExample *e, uint64_t seed, DateSplit split, uint64_t index);

// Alignment accuracy's counts for one example: peak[t] (DATES_TARGET_LEN) is the source
// position where target character t's attention peaks. Adds to *counted the target characters
// that have a span (the eight digits) and to *hits those whose peak lies inside it.
void dates_alignment_count(const DateExample *e, const int *peak, int *hits, int *counted);

// The attention peaks of one example's target characters: peak[t] (DATES_TARGET_LEN) = the
// source position s < src_len where alpha[t * stride + s] is largest (the first such), for
// decoding step t, the step that wrote target character t (step 0 reads <start>). alpha
// holds at least DATES_TARGET_LEN steps of stride floats (e.g. a batch's (T, B, L) weights
// from row b's: alpha + b L, stride B L).
void dates_attention_peaks(int *peak, const float *alpha, size_t stride, int src_len);

// The id of character c in alphabet (DATES_SOURCE_ALPHABET or DATES_TARGET_ALPHABET), or -1.
int dates_char_id(const char *alphabet, char c);

#endif
