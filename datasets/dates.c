// dates.c: the synthetic date task (datasets/dates.h).
#include "datasets/dates.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"

// Patterns: YYYY YY (year), MMMM MMM MM M (month: name, short name, two digits, digits),
// DD D Do (day: two digits, digits, ordinal), EEEE EEE (weekday, short weekday); anything
// else is written as it stands (the literals are lower case, so never a code).
const DateFormat DATES_FORMATS[] = {
    {"YYYY-MM-DD", "1987-03-03"},
    {"M/D/YY", "3/3/87"},
    {"MMM D, YYYY", "mar 3, 1987"},
    {"MMMM D, YYYY", "march 3, 1987"},
    {"EEEE, MMMM D, YYYY", "tuesday, march 3, 1987"},
    {"D MMM YYYY", "3 mar 1987"},
    {"D MMMM YYYY", "3 march 1987"},
    {"DD MMM YYYY", "03 mar 1987"},
    {"D MMM, YYYY", "3 mar, 1987"},
    {"D MMMM, YYYY", "3 march, 1987"},
    {"DD, MMM YYYY", "03, mar 1987"},
    {"D MM YY", "3 03 87"},
    {"MMMM D YYYY", "march 3 1987"},
    {"DD.MM.YY", "03.03.87"},
    {"DD.MM.YYYY", "03.03.1987"},
    {"EEEE the Do of MMMM YYYY", "tuesday the 3rd of march 1987"},
    {"the Do of MMMM YYYY", "the 3rd of march 1987"},
    {"D MMM YY", "3 mar 87"},
    {"MMMM Do, YYYY", "march 3rd, 1987"},
    {"EEE D MMM YYYY", "tue 3 mar 1987"},
    {"MM/DD/YYYY", "03/03/1987"},
};
const int DATES_FORMAT_COUNT = (int)(sizeof DATES_FORMATS / sizeof DATES_FORMATS[0]);

static const char *const MONTHS[12] = {"january", "february", "march",     "april",
                                       "may",     "june",     "july",      "august",
                                       "september", "october", "november", "december"};
static const char *const WEEKDAYS[7] = {"monday", "tuesday",  "wednesday", "thursday",
                                        "friday", "saturday", "sunday"};

static int is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int dates_days_in_month(int year, int month) {
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    CHECK(month >= 1 && month <= 12, "month %d", month);
    return days[month - 1] + (month == 2 && is_leap(year));
}

// Howard Hinnant's days_from_civil and civil_from_days (proleptic Gregorian).
int64_t dates_day_number(int year, int month, int day) {
    CHECK(month >= 1 && month <= 12 && day >= 1 && day <= dates_days_in_month(year, month),
          "%d-%d-%d", year, month, day);
    int64_t y = year - (month <= 2);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void dates_from_day_number(int64_t n, int *year, int *month, int *day) {
    n += 719468;
    int64_t era = (n >= 0 ? n : n - 146096) / 146097;
    int64_t doe = n - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = (int)(yoe + era * 400 + (m <= 2));
    *month = m;
    *day = d;
}

int dates_weekday(int year, int month, int day) {
    int64_t n = dates_day_number(year, month, day);  // 1970-01-01 was a Thursday (3)
    return (int)(((n % 7) + 7 + 3) % 7);
}

static uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

DateSplit dates_split_of(int year, int month, int day) {
    uint64_t h = mix64((uint64_t)dates_day_number(year, month, day) ^ 0x6461746573ull);  // "dates"
    int r = (int)(h % 10);
    return r == 0 ? DATES_TEST : r == 1 ? DATES_VALID : DATES_TRAIN;
}

// Appends text to e->src; returns its start offset.
static int put(DateExample *e, const char *text, int len) {
    CHECK(e->src_len + len <= DATES_MAX_SOURCE, "source too long");
    int at = e->src_len;
    memcpy(e->src + at, text, (size_t)len);
    e->src_len += len;
    e->src[e->src_len] = 0;
    return at;
}

static const char *ordinal_suffix(int d) {
    if (d >= 11 && d <= 13) return "th";
    switch (d % 10) {
    case 1: return "st";
    case 2: return "nd";
    case 3: return "rd";
    default: return "th";
    }
}

void dates_render(DateExample *e, int year, int month, int day, int f) {
    CHECK(f >= 0 && f < DATES_FORMAT_COUNT, "format %d", f);
    CHECK(year >= DATES_FIRST_YEAR && year <= DATES_LAST_YEAR, "year %d", year);
    memset(e, 0, sizeof *e);
    e->year = year, e->month = month, e->day = day, e->format = f;
    e->weekday = dates_weekday(year, month, day);
    int ys = -1, ye = -1, ms = -1, me = -1, ds = -1, de = -1;
    char buf[24];
    for (const char *p = DATES_FORMATS[f].name; *p;) {
        int n = 0, at;
        while (p[n] == p[0] && (p[0] == 'Y' || p[0] == 'M' || p[0] == 'D' || p[0] == 'E')) n++;
        if (p[0] == 'Y' && (n == 4 || n == 2)) {
            snprintf(buf, sizeof buf, n == 4 ? "%04d" : "%02d", n == 4 ? year : year % 100);
            ys = put(e, buf, n), ye = ys + n;
        } else if (p[0] == 'M' && n >= 1 && n <= 4) {
            if (n >= 3) {
                int len = n == 4 ? (int)strlen(MONTHS[month - 1]) : 3;
                ms = put(e, MONTHS[month - 1], len), me = ms + len;
            } else {
                int len = snprintf(buf, sizeof buf, n == 2 ? "%02d" : "%d", month);
                ms = put(e, buf, len), me = ms + len;
            }
        } else if (p[0] == 'D' && n == 1 && p[1] == 'o') {
            int len = snprintf(buf, sizeof buf, "%d%s", day, ordinal_suffix(day));
            ds = put(e, buf, len), de = ds + len;
            n = 2;
        } else if (p[0] == 'D' && (n == 1 || n == 2)) {
            int len = snprintf(buf, sizeof buf, n == 2 ? "%02d" : "%d", day);
            ds = put(e, buf, len), de = ds + len;
        } else if (p[0] == 'E' && (n == 3 || n == 4)) {
            const char *w = WEEKDAYS[e->weekday];
            at = put(e, w, n == 4 ? (int)strlen(w) : 3);
            (void)at;
        } else {
            CHECK(n == 0, "bad pattern %s", DATES_FORMATS[f].name);
            put(e, p, 1);
            n = 1;
        }
        p += n;
    }
    CHECK(ys >= 0 && ms >= 0 && ds >= 0, "pattern %s lacks a field", DATES_FORMATS[f].name);
    snprintf(e->tgt, sizeof e->tgt, "%04d-%02d-%02d", year, month, day);
    for (int t = 0; t < DATES_TARGET_LEN; t++) {
        int s = -1, x = -1;
        if (t < 4) s = ys, x = ye;
        else if (t == 5 || t == 6) s = ms, x = me;
        else if (t == 8 || t == 9) s = ds, x = de;
        e->span_start[t] = s, e->span_end[t] = x;
    }
}

void dates_example(DateExample *e, uint64_t seed, DateSplit split, uint64_t index) {
    CHECK(split == DATES_TRAIN || split == DATES_VALID || split == DATES_TEST, "split %d", split);
    Rng rng;
    rng_seed(&rng, mix64(mix64(seed ^ 0x646174u) ^ ((uint64_t)split << 56)) ^ mix64(index));
    int64_t first = dates_day_number(DATES_FIRST_YEAR, 1, 1);
    int64_t count = dates_day_number(DATES_LAST_YEAR, 12, 31) - first + 1;
    int y, m, d;
    for (;;) {  // rejection: a tenth of the dates (valid, test) takes ten draws on average
        dates_from_day_number(first + rng_below(&rng, (uint32_t)count), &y, &m, &d);
        if (dates_split_of(y, m, d) == split) break;
    }
    dates_render(e, y, m, d, (int)rng_below(&rng, (uint32_t)DATES_FORMAT_COUNT));
}

void dates_alignment_count(const DateExample *e, const int *peak, int *hits, int *counted) {
    for (int t = 0; t < DATES_TARGET_LEN; t++) {
        if (e->span_start[t] < 0) continue;
        (*counted)++;
        *hits += peak[t] >= e->span_start[t] && peak[t] < e->span_end[t];
    }
}

void dates_attention_peaks(int *peak, const float *alpha, size_t stride, int src_len) {
    CHECK(src_len >= 1, "source length %d", src_len);
    for (int t = 0; t < DATES_TARGET_LEN; t++) {
        const float *a = alpha + (size_t)t * stride;
        int best = 0;
        for (int s = 1; s < src_len; s++)
            if (a[s] > a[best]) best = s;
        peak[t] = best;
    }
}

int dates_char_id(const char *alphabet, char c) {
    if (c == 0) return -1;
    const char *p = strchr(alphabet, c);
    return p ? (int)(p - alphabet) : -1;
}
