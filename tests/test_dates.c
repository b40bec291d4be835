// test_dates.c: the synthetic date task (datasets/dates.h): every format writes 1987-03-03
// as documented and appears in every split; weekdays are the dates' own; examples are a
// pure function of (seed, split, index); the splits hold disjoint dates and disjoint source
// strings (every written form names one date); each target character's span covers the
// source characters of its field, and reading the spans back gives the date (round trip).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "datasets/dates.h"
#include "tests/support/test.h"

static const char *const MONTHS[12] = {"january", "february", "march",     "april",
                                       "may",     "june",     "july",      "august",
                                       "september", "october", "november", "december"};
static const char *const WEEKDAYS[7] = {"monday", "tuesday",  "wednesday", "thursday",
                                        "friday", "saturday", "sunday"};

static void test_formats_as_documented(void) {
    EXPECT(DATES_FORMAT_COUNT >= 20, "%d formats", DATES_FORMAT_COUNT);
    for (int f = 0; f < DATES_FORMAT_COUNT; f++) {
        DateExample e;
        dates_render(&e, 1987, 3, 3, f);
        EXPECT(strcmp(e.src, DATES_FORMATS[f].example) == 0, "%s: '%s', expected '%s'",
               DATES_FORMATS[f].name, e.src, DATES_FORMATS[f].example);
        EXPECT(strcmp(e.tgt, "1987-03-03") == 0 && e.src_len == (int)strlen(e.src), "%s", e.tgt);
    }
    // The issue's own examples are among them.
    const char *want[] = {"tuesday the 3rd of march 1987", "3/3/87", "march 3, 1987",
                          "03.03.1987", "3 mar 87", "1987-03-03"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        int found = 0;
        for (int f = 0; f < DATES_FORMAT_COUNT; f++) found |= strcmp(DATES_FORMATS[f].example, want[i]) == 0;
        EXPECT(found, "no format writes '%s'", want[i]);
    }
    DateExample e;
    dates_render(&e, 2049, 9, 22, 15);
    EXPECT(strcmp(e.src, "wednesday the 22nd of september 2049") == 0, "'%s'", e.src);
    dates_render(&e, 2011, 11, 11, 18);
    EXPECT(strcmp(e.src, "november 11th, 2011") == 0, "'%s'", e.src);
    dates_render(&e, 2001, 1, 21, 16);
    EXPECT(strcmp(e.src, "the 21st of january 2001") == 0, "'%s'", e.src);
}

static void test_weekdays_are_right(void) {
    struct { int y, m, d, w; } known[] = {
        {1987, 3, 3, 1}, {1970, 1, 1, 3}, {2000, 1, 1, 5}, {1950, 1, 1, 6},
        {2049, 12, 31, 4}, {2024, 2, 29, 3}, {1969, 7, 20, 6}, {2001, 9, 11, 1},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        EXPECT(dates_weekday(known[i].y, known[i].m, known[i].d) == known[i].w, "%d-%d-%d: %d",
               known[i].y, known[i].m, known[i].d, dates_weekday(known[i].y, known[i].m, known[i].d));
    // Day numbers round-trip and weekdays advance by one a day over the whole range.
    int64_t first = dates_day_number(DATES_FIRST_YEAR, 1, 1), last = dates_day_number(DATES_LAST_YEAR, 12, 31);
    EXPECT(last - first + 1 == 36525, "%lld days", (long long)(last - first + 1));
    int prev = -1, bad = 0;
    for (int64_t n = first; n <= last; n++) {
        int y, m, d;
        dates_from_day_number(n, &y, &m, &d);
        bad += dates_day_number(y, m, d) != n || d > dates_days_in_month(y, m);
        int w = dates_weekday(y, m, d);
        bad += prev >= 0 && w != (prev + 1) % 7;
        prev = w;
    }
    EXPECT(bad == 0, "%d bad days", bad);
    // A written weekday is the date's.
    for (int i = 0; i < 3000; i++) {
        DateExample e;
        dates_example(&e, 5, DATES_TRAIN, (uint64_t)i);
        EXPECT(e.weekday == dates_weekday(e.year, e.month, e.day));
        for (int w = 0; w < 7; w++) {
            if (strncmp(e.src, WEEKDAYS[w], 3) == 0)
                EXPECT(w == e.weekday && (strncmp(e.src, WEEKDAYS[w], strlen(WEEKDAYS[w])) == 0 ||
                                          e.src[3] == ' '),
                       "'%s' for %s", e.src, e.tgt);
        }
    }
}

static void test_pure_function_of_seed_split_index(void) {
    int differ = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 500; i++) {
            DateExample a, b, c;
            dates_example(&a, 42, (DateSplit)s, (uint64_t)i);
            dates_example(&b, 42, (DateSplit)s, (uint64_t)i);
            EXPECT(memcmp(&a, &b, sizeof a) == 0, "split %d index %d not deterministic", s, i);
            dates_example(&c, 43, (DateSplit)s, (uint64_t)i);
            differ += strcmp(a.src, c.src) != 0;
        }
    EXPECT(differ > 1400, "another seed changed only %d of 1500 examples", differ);
    // Indices are independent draws: neighbours differ.
    DateExample a, b;
    dates_example(&a, 42, DATES_TRAIN, 1000000007u);
    dates_example(&b, 42, DATES_TRAIN, 1000000008u);
    EXPECT(strcmp(a.src, b.src) != 0, "'%s'", a.src);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_splits_disjoint(void) {
    // Over every date: the shares are 80/10/10 within half a percent.
    int count[3] = {0};
    int64_t first = dates_day_number(DATES_FIRST_YEAR, 1, 1), last = dates_day_number(DATES_LAST_YEAR, 12, 31);
    for (int64_t n = first; n <= last; n++) {
        int y, m, d;
        dates_from_day_number(n, &y, &m, &d);
        count[dates_split_of(y, m, d)]++;
    }
    double total = (double)(last - first + 1);
    EXPECT(count[0] / total > 0.795 && count[0] / total < 0.805, "train %d", count[0]);
    EXPECT(count[1] / total > 0.095 && count[1] / total < 0.105, "valid %d", count[1]);
    EXPECT(count[2] / total > 0.095 && count[2] / total < 0.105, "test %d", count[2]);
    // Each split's examples have dates of that split, so no source string is in two splits.
    enum { N = 4000 };
    char **src = xmalloc(3 * N * sizeof *src);
    int *from = xmalloc(3 * N * sizeof *from);
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < N; i++) {
            DateExample e;
            dates_example(&e, 9, (DateSplit)s, (uint64_t)i);
            EXPECT(dates_split_of(e.year, e.month, e.day) == (DateSplit)s, "%s in split %d", e.tgt, s);
            // the split tag rides after the string's NUL, so equal strings sort together
            char *t = xmalloc(DATES_MAX_SOURCE + 3);
            memcpy(t, e.src, (size_t)e.src_len + 1);
            t[e.src_len + 1] = (char)('0' + s);
            src[s * N + i] = t;
        }
    qsort(src, 3 * N, sizeof *src, cmp_str);
    int shared = 0;
    for (int i = 1; i < 3 * N; i++)
        if (strcmp(src[i - 1], src[i]) == 0 &&
            src[i - 1][strlen(src[i]) + 1] != src[i][strlen(src[i]) + 1])
            shared++;
    EXPECT(shared == 0, "%d source strings in two splits", shared);
    for (int i = 0; i < 3 * N; i++) free(src[i]);
    free(src);
    free(from);
}

// Every written form names one date: no two (date, format) give the same string, over the
// years at the ends of the range and around the century.
static void test_written_forms_name_one_date(void) {
    static const int years[] = {1950, 1951, 1999, 2000, 2001, 2049};
    int n = 0, cap = 6 * 366 * 32;
    char **s = xmalloc((size_t)cap * sizeof *s);
    for (size_t k = 0; k < sizeof years / sizeof *years; k++)
        for (int m = 1; m <= 12; m++)
            for (int d = 1; d <= dates_days_in_month(years[k], m); d++)
                for (int f = 0; f < DATES_FORMAT_COUNT; f++) {
                    DateExample e;
                    dates_render(&e, years[k], m, d, f);
                    CHECK(n < cap);
                    char *t = xmalloc(DATES_MAX_SOURCE + 16);
                    snprintf(t, DATES_MAX_SOURCE + 16, "%s|%s", e.src, e.tgt);
                    s[n++] = t;
                }
    qsort(s, (size_t)n, sizeof *s, cmp_str);
    int clash = 0;
    for (int i = 1; i < n; i++) {
        size_t a = strcspn(s[i - 1], "|"), b = strcspn(s[i], "|");
        if (a == b && strncmp(s[i - 1], s[i], a) == 0 && strcmp(s[i - 1], s[i]) != 0) {
            if (!clash) EXPECT(0, "'%s' and '%s'", s[i - 1], s[i]);
            clash++;
        }
    }
    EXPECT(clash == 0, "%d clashes", clash);
    for (int i = 0; i < n; i++) free(s[i]);
    free(s);
}

// Reads the date back from the spans only: the year's, month's and day's source text.
static void read_back(const DateExample *e, int *y, int *m, int *d) {
    char f[3][DATES_MAX_SOURCE + 1];
    const int at[3] = {0, 5, 8};
    for (int k = 0; k < 3; k++) {
        int s = e->span_start[at[k]], x = e->span_end[at[k]];
        memcpy(f[k], e->src + s, (size_t)(x - s));
        f[k][x - s] = 0;
    }
    *y = atoi(f[0]);
    if (strlen(f[0]) == 2) *y += *y >= 50 ? 1900 : 2000;
    *m = 0;
    if (f[1][0] >= '0' && f[1][0] <= '9') *m = atoi(f[1]);
    else
        for (int k = 0; k < 12; k++)
            if (strcmp(f[1], MONTHS[k]) == 0 || (strlen(f[1]) == 3 && strncmp(f[1], MONTHS[k], 3) == 0))
                *m = k + 1;
    *d = atoi(f[2]);  // "3rd" reads 3
}

static void test_spans_cover_fields_round_trip(void) {
    int seen[3][64] = {{0}};
    CHECK(DATES_FORMAT_COUNT <= 64);
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 3000; i++) {
            DateExample e;
            dates_example(&e, 1, (DateSplit)s, (uint64_t)i);
            seen[s][e.format]++;
            EXPECT(e.src_len >= 6 && e.src_len <= DATES_MAX_SOURCE, "'%s'", e.src);
            EXPECT(strspn(e.src, DATES_SOURCE_ALPHABET) == (size_t)e.src_len, "'%s'", e.src);
            EXPECT(strlen(e.tgt) == DATES_TARGET_LEN &&
                       strspn(e.tgt, DATES_TARGET_ALPHABET) == DATES_TARGET_LEN, "'%s'", e.tgt);
            char iso[16];
            snprintf(iso, sizeof iso, "%04d-%02d-%02d", e.year, e.month, e.day);
            EXPECT(strcmp(iso, e.tgt) == 0, "%s against %s", e.tgt, iso);
            for (int t = 0; t < DATES_TARGET_LEN; t++) {
                int a = e.span_start[t], b = e.span_end[t];
                if (t == 4 || t == 7) {
                    EXPECT(e.tgt[t] == '-' && a == -1 && b == -1, "'-' has span %d..%d", a, b);
                    continue;
                }
                EXPECT(a >= 0 && a < b && b <= e.src_len, "'%s' token %d span %d..%d", e.src, t, a, b);
                // the same field, the same span
                int lead = t < 4 ? 0 : t < 7 ? 5 : 8;
                EXPECT(a == e.span_start[lead] && b == e.span_end[lead]);
            }
            // The three spans do not overlap.
            int ys = e.span_start[0], ms = e.span_start[5], ds = e.span_start[8];
            int ye = e.span_end[0], me = e.span_end[5], de = e.span_end[8];
            EXPECT((ye <= ms || me <= ys) && (ye <= ds || de <= ys) && (me <= ds || de <= ms),
                   "'%s': spans overlap", e.src);
            int y, m, d;
            read_back(&e, &y, &m, &d);
            EXPECT(y == e.year && m == e.month && d == e.day, "'%s' reads back %d-%d-%d, not %s",
                   e.src, y, m, d, e.tgt);
        }
    for (int s = 0; s < 3; s++)
        for (int f = 0; f < DATES_FORMAT_COUNT; f++)
            EXPECT(seen[s][f] > 0, "format %s never in split %d", DATES_FORMATS[f].name, s);
}

// The length of the run of letter c in format name (0: none), e.g. 4 for 'M' in "MMMM D".
static int run_of(const char *name, char c) {
    const char *p = strchr(name, c);
    int n = 0;
    while (p && p[n] == c) n++;
    return n;
}

// span_text: e's span of target character t as text (buf holds DATES_MAX_SOURCE + 1).
static const char *span_text(char *buf, const DateExample *e, int t) {
    const int a = e->span_start[t], len = e->span_end[t] - a;
    memcpy(buf, e->src + a, (size_t)len);
    buf[len] = 0;
    return buf;
}

// The spans are the fields' own characters, nothing more or less, in every format, as the
// format writes them: the year's four digits or its two ("87" in "3/3/87": the century
// digits' span too), the month's digits (one or two) or its name (whole or three letters),
// the day's digits with their ordinal suffix ("3rd"); never a separator or a weekday.
static void test_spans_are_exactly_the_fields(void) {
    static const char *const suffix[] = {"th", "st", "nd", "rd"};
    for (int f = 0; f < DATES_FORMAT_COUNT; f++)
        for (int i = 0; i < 400; i++) {
            const char *name = DATES_FORMATS[f].name;
            int y, m, d;
            dates_from_day_number(dates_day_number(DATES_FIRST_YEAR, 1, 1) + i * 91, &y, &m, &d);
            DateExample e;
            dates_render(&e, y, m, d, f);
            char year[8], month[16], day[8], got[3][DATES_MAX_SOURCE + 1];
            snprintf(year, sizeof year, run_of(name, 'Y') == 4 ? "%04d" : "%02d", run_of(name, 'Y') == 4 ? y : y % 100);
            const int mn = run_of(name, 'M');
            if (mn >= 3) snprintf(month, sizeof month, "%.*s", mn == 4 ? 16 : 3, MONTHS[m - 1]);
            else snprintf(month, sizeof month, mn == 2 ? "%02d" : "%d", m);
            const int sx = d >= 11 && d <= 13 ? 0 : d % 10 <= 3 ? d % 10 : 0;
            if (strstr(name, "Do")) snprintf(day, sizeof day, "%d%s", d, suffix[sx]);
            else snprintf(day, sizeof day, run_of(name, 'D') == 2 ? "%02d" : "%d", d);
            EXPECT(strcmp(span_text(got[0], &e, 0), year) == 0 && strcmp(span_text(got[1], &e, 5), month) == 0 &&
                       strcmp(span_text(got[2], &e, 8), day) == 0,
                   "'%s' (%s): spans '%s' '%s' '%s', not '%s' '%s' '%s'", e.src, name, got[0], got[1],
                   got[2], year, month, day);
        }
}

// Alignment counts: a peak inside the span hits, one beside it misses, the '-' never count;
// character ids follow the alphabets.
static void test_alignment_counts_and_ids(void) {
    DateExample e;
    dates_render(&e, 1987, 3, 3, 15);  // "tuesday the 3rd of march 1987"
    int peak[DATES_TARGET_LEN];
    for (int t = 0; t < DATES_TARGET_LEN; t++) peak[t] = e.span_start[t] < 0 ? 0 : e.span_end[t] - 1;
    int hits = 0, counted = 0;
    dates_alignment_count(&e, peak, &hits, &counted);
    EXPECT(hits == 8 && counted == 8, "%d of %d", hits, counted);
    EXPECT(e.span_start[8] == 12 && e.span_end[8] == 15, "day span %d..%d", e.span_start[8], e.span_end[8]);
    EXPECT(e.span_start[5] == 19 && e.span_end[5] == 24, "month span %d..%d", e.span_start[5], e.span_end[5]);
    EXPECT(e.span_start[0] == 25 && e.span_end[0] == 29, "year span %d..%d", e.span_start[0], e.span_end[0]);
    peak[0] = e.span_end[0];  // past the year
    peak[9] = e.span_start[9] - 1;
    hits = counted = 0;
    dates_alignment_count(&e, peak, &hits, &counted);
    EXPECT(hits == 6 && counted == 8, "%d of %d", hits, counted);
    EXPECT(strlen(DATES_SOURCE_ALPHABET) == 41 && strlen(DATES_TARGET_ALPHABET) == 11);
    EXPECT(dates_char_id(DATES_SOURCE_ALPHABET, ' ') == 0 && dates_char_id(DATES_SOURCE_ALPHABET, 'z') == 40);
    EXPECT(dates_char_id(DATES_TARGET_ALPHABET, '-') == 0 && dates_char_id(DATES_TARGET_ALPHABET, '9') == 10);
    EXPECT(dates_char_id(DATES_SOURCE_ALPHABET, 'A') == -1 && dates_char_id(DATES_SOURCE_ALPHABET, 0) == -1);
}

// The peaks of a hand-made attention history: step t's weights (the step that wrote target
// character t) peak inside target t's span, the '-' steps and the <end> step (10) elsewhere;
// all eight digits count. The same weights credited one step late (step t + 1's peak to
// character t, the off-by-one of recording the step after) miss the field changes.
static void test_attention_peaks_credit_their_step(void) {
    DateExample e;
    dates_render(&e, 1987, 3, 3, 3);  // "march 3, 1987"
    enum { T = DATES_TARGET_LEN + 1, B = 2, L = DATES_MAX_SOURCE };
    static float alpha[T * B * L];  // (T, B, L), this example in row 1
    memset(alpha, 0, sizeof alpha);
    for (int t = 0; t < T; t++) {
        float *a = alpha + ((size_t)t * B + 1) * L;
        const int at = t < DATES_TARGET_LEN && e.span_start[t] >= 0 ? e.span_start[t] + (t == 3)
                       : 7;  // the ','
        for (int s = 0; s < e.src_len; s++) a[s] = 0.02f;
        a[at] = 0.6f;
        a[e.src_len] = 0.9f;  // past the source: never a peak
    }
    int peak[DATES_TARGET_LEN], hits = 0, counted = 0;
    dates_attention_peaks(peak, alpha + L, (size_t)B * L, e.src_len);
    EXPECT(peak[0] == 9 && peak[3] == 10 && peak[5] == 0 && peak[8] == 6, "peaks %d %d %d %d",
           peak[0], peak[3], peak[5], peak[8]);
    dates_alignment_count(&e, peak, &hits, &counted);
    EXPECT(hits == 8 && counted == 8, "%d of %d", hits, counted);
    dates_attention_peaks(peak, alpha + (size_t)B * L + L, (size_t)B * L, e.src_len);
    hits = counted = 0;
    dates_alignment_count(&e, peak, &hits, &counted);
    EXPECT(hits == 5 && counted == 8, "one step late: %d of %d", hits, counted);
}

int main(void) {
    RUN(test_formats_as_documented);
    RUN(test_weekdays_are_right);
    RUN(test_pure_function_of_seed_split_index);
    RUN(test_splits_disjoint);
    RUN(test_written_forms_name_one_date);
    RUN(test_spans_cover_fields_round_trip);
    RUN(test_spans_are_exactly_the_fields);
    RUN(test_alignment_counts_and_ids);
    RUN(test_attention_peaks_credit_their_step);
    return test_summary();
}
