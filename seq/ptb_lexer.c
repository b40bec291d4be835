// ptb_lexer.c: see ptb_lexer.h. The rules below follow, in order, the rules of PTBLexer.flex
// in CoreNLP 3.4.1 (the order is the tie-break). Each matcher returns the length of its
// longest match at i (0 for none), counting any trailing context, and for a rule "r1/r2"
// sets *tok to the length of r1. JFlex's %caseless makes letters of literal strings match
// either case but leaves character classes alone: lit() below takes "[x]" for a class of
// one character, which matches x only.
#include "seq/ptb_lexer.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/ptb_chars.h"

// A rule never looks further than this many units past the start of a lexeme, so that a
// run of text without spaces cannot make every lexeme in it rescan the whole run (the
// Java scanner does, quadratically). No caption a data set reader accepts is that long
// (CAPTION_MAX_BYTES is 4096 bytes), so the window changes nothing on real captions.
#define PTB_WINDOW 4096

typedef struct {
    const uint16_t *s;    // (n) the text, cut at the window
    int n;
    const PtbRuns *runs;  // the whole text's run ends (ptb_runs_make), or NULL: scan
} Text;

#define LEN(a) ((int)(sizeof(a) / sizeof *(a)))

static int at(const Text *t, int i) { return i >= 0 && i < t->n ? t->s[i] : -1; }
static int max2(int a, int b) { return a > b ? a : b; }

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_upper(int c) { return c >= 'A' && c <= 'Z'; }
static int is_num(int c) { return c >= '0' && c <= '9'; }
static int is_alnum(int c) { return is_alpha(c) || is_num(c); }
static int is_letter(int c) { return c >= 0 && ptb_is_letter((unsigned)c); }
static int is_digit(int c) { return c >= 0 && ptb_is_digit((unsigned)c); }
static int in_set(int c, const char *set) { return c > 0 && c < 128 && strchr(set, c) != NULL; }

// An ASCII set as a 128-bit mask (bit c of bits[c >> 6]), for the loops that run over a
// whole run of text: a call to strchr per unit (in_set) was most of the time on long runs.
// The masks below are constants; each names the set it holds, written as for in_set.
typedef struct {
    uint64_t bits[2];
} CharMask;
static inline int mask_has(const CharMask *m, int c) {
    return c > 0 && c < 128 && ((m->bits[c >> 6] >> (c & 63)) & 1);
}
// " \t\n\f\r\"<>|(){}": what ends a URL or an e-mail address
static const CharMask url_stop = {{0x5000030500003600ULL, 0x3800000000000000ULL}};
// " \t\n\f\r\"<>|()": what ends the path of a likely URL
static const CharMask path_stop = {{0x5000030500003600ULL, 0x1000000000000000ULL}};
// " \t\n\f\r\"<>|.!?(){},": what ends a segment of a www. host
static const CharMask www_seg_stop = {{0xd000530700003600ULL, 0x3800000000000000ULL}};
// " \t\n\f\r\"`'<>|.!?(){}$" and ',' to '_': what ends a segment of a bare host (x.y.com)
static const CharMask bare_seg_stop = {{0xfffff39700003600ULL, 0x38000001ffffffffULL}};
// The runs some rules scan to their end, by what ends them.
enum { RUN_URL, RUN_EMAIL, RUN_PATH, RUN_WWW, RUN_BARE, RUN_HTHING, RUN_KINDS };
static int run_stops(int kind, int c) {
    switch (kind) {
    case RUN_URL: return mask_has(&url_stop, c);
    case RUN_EMAIL: return mask_has(&url_stop, c) || c == 0xA0;
    case RUN_PATH: return mask_has(&path_stop, c);
    case RUN_WWW: return mask_has(&www_seg_stop, c);
    case RUN_BARE: return mask_has(&bare_seg_stop, c);
    default: return !(is_alnum(c) || c == '.' || c == ',' || c == 0xAD);  // RUN_HTHING
    }
}

// For each kind, end[kind][i] is the first b >= i of the whole text where that kind of run
// stops (n when none does); next_at[i] the first '@' at or after i (n when none). Found
// once per text, so that the lexeme at every position of a long run does not rescan it.
struct PtbRuns {
    int n;
    int *end[RUN_KINDS];  // (n + 1) each
    int *next_at;         // (n + 1)
};

PtbRuns *ptb_runs_make(const uint16_t *s, int n) {
    CHECK(n >= 0);
    PtbRuns *r = xmalloc(sizeof *r);
    r->n = n;
    for (int k = 0; k < RUN_KINDS; k++) {
        int *e = r->end[k] = xmalloc(((size_t)n + 1) * sizeof *e);
        e[n] = n;
        for (int i = n - 1; i >= 0; i--) e[i] = run_stops(k, s[i]) ? i : e[i + 1];
    }
    r->next_at = xmalloc(((size_t)n + 1) * sizeof *r->next_at);
    r->next_at[n] = n;
    for (int i = n - 1; i >= 0; i--) r->next_at[i] = s[i] == '@' ? i : r->next_at[i + 1];
    return r;
}

void ptb_runs_free(PtbRuns *r) {
    if (!r) return;
    for (int k = 0; k < RUN_KINDS; k++) free(r->end[k]);
    free(r->next_at);
    free(r);
}

// The first b >= from (0 <= from <= t->n) where at(t, b) < 0 or the run of kind stops: the
// run's end, within the window.
static int run_end(const Text *t, int from, int kind) {
    if (t->runs) {
        int e = t->runs->end[kind][from];
        return e < t->n ? e : t->n;
    }
    int b = from;
    while (b < t->n && !run_stops(kind, t->s[b])) b++;
    return b;
}

// c as the ASCII letter JFlex's %caseless takes it for: besides the two cases, U+0130 and
// U+0131 (dotted capital, dotless small i) count as i, U+017F (long s) as s and U+212A
// (Kelvin sign) as k, since Java maps their case onto those letters.
static int caseless(int c) {
    if (c == 0x130 || c == 0x131) return 'i';
    if (c == 0x17F) return 's';
    if (c == 0x212A) return 'k';
    return ascii_lower(c);
}

// Length of the literal pattern p at i, or 0. ASCII letters of p match either case (as
// caseless() has it); "[x]" matches x only; any other character matches itself.
static int lit_rest(const Text *t, int i, const char *p);
static inline int lit(const Text *t, int i, const char *p) {
    // The first character decides most calls: checked here, inline.
    int c = at(t, i), f = (unsigned char)p[0];
    if (f == '[' ? c != (unsigned char)p[1] : (c < 0 || ascii_lower(f) != caseless(c))) return 0;
    return lit_rest(t, i, p);
}
static int lit_rest(const Text *t, int i, const char *p) {
    int k = 0;
    for (; *p; p++, k++) {
        int c = at(t, i + k);
        if (*p == '[') {
            if (c != (unsigned char)p[1]) return 0;
            p += 2;
        } else if (c < 0 || caseless(c) != ascii_lower((unsigned char)*p)) {
            return 0;
        }
    }
    return k;
}

// The longest of the n literal patterns list at i, or 0.
static int lit_longest(const Text *t, int i, const char *const *list, int n) {
    int best = 0;
    for (int k = 0; k < n; k++) best = max2(best, lit(t, i, list[k]));
    return best;
}

// --- the character classes of PTBLexer.flex ------------------------------------------------

// SPACE: [ \t\u00A0\u2000-\u200A\u3000]
static int is_space(int c) {
    return c == ' ' || c == '\t' || c == 0xA0 || (c >= 0x2000 && c <= 0x200A) || c == 0x3000;
}
// NEWLINE: \r | \r?\n | \u2028 | \u2029 | \u000B | \u000C | \u0085
static int newline_len(const Text *t, int i) {
    int c = at(t, i);
    if (c == '\r') return at(t, i + 1) == '\n' ? 2 : 1;
    return c == '\n' || c == 0x2028 || c == 0x2029 || c == 0x0B || c == 0x0C || c == 0x85;
}
static int spacenl_len(const Text *t, int i) { return is_space(at(t, i)) ? 1 : newline_len(t, i); }

// APOS: ['\u0092\u2019] | &apos;
static int apos_len(const Text *t, int i) {
    int c = at(t, i);
    if (c == '\'' || c == 0x92 || c == 0x2019) return 1;
    return c == '&' ? lit(t, i, "&apos;") : 0;
}
// APOSETCETERA: APOS | [`\u0091\u2018\u201B]
static int aposetc_len(const Text *t, int i) {
    int a = apos_len(t, i), c = at(t, i);
    return a ? a : (c == '`' || c == 0x91 || c == 0x2018 || c == 0x201B);
}

// LETTER: a letter of a word, or an accented-vowel entity such as "&eacute;" (SPLET).
static int letter_len(const Text *t, int i) {
    int c = at(t, i);
    if (c < 0) return 0;
    if (ptb_is_word_letter((unsigned)c)) return 1;
    if (c != '&' || !in_set(at(t, i + 1), "aeiouAEIOU")) return 0;
    static const char *const accents[] = {"acute;", "grave;", "uml;"};
    int k = lit_longest(t, i + 2, accents, LEN(accents));
    return k ? 2 + k : 0;
}
// LETTER or DIGIT
static int letdig_len(const Text *t, int i) { return is_digit(at(t, i)) ? 1 : letter_len(t, i); }

static int digit_run(const Text *t, int i) {  // DIGIT+ at i (its length, 0 if none)
    int j = i;
    while (is_digit(at(t, j))) j++;
    return j - i;
}
static int ascii_digit_run(const Text *t, int i) {
    int j = i;
    while (is_num(at(t, j))) j++;
    return j - i;
}

// WORD: LETTER (LETTER|DIGIT)* ([.!?] LETTER (LETTER|DIGIT)*)*
static int word_len(const Text *t, int i) {
    int j = i, k = letter_len(t, i);
    if (!k) return 0;
    for (j += k;;) {
        if ((k = letdig_len(t, j))) {
            j += k;
        } else if (in_set(at(t, j), ".!?") && (k = letter_len(t, j + 1))) {
            j += 1 + k;
        } else {
            return j - i;
        }
    }
}

// REDAUX: APOS ([msdMSD] | re | ve | ll)
static int redaux_len(const Text *t, int i) {
    int a = apos_len(t, i);
    if (!a) return 0;
    if (in_set(at(t, i + a), "msdMSD")) return a + 1;
    static const char *const two[] = {"re", "ve", "ll"};
    int k = lit_longest(t, i + a, two, LEN(two));
    return k ? a + k : 0;
}
// SREDAUX: n APOSETCETERA t
static int sredaux_len(const Text *t, int i) {
    if (ascii_lower(at(t, i)) != 'n') return 0;
    int a = aposetc_len(t, i + 1);
    return a && ascii_lower(at(t, i + 1 + a)) == 't' ? a + 2 : 0;
}

// SGML: <!x...>, <?x...>, <name attr attr='v' ... [/]>, </name>, spaces before '>'.
static int is_sgml_name(int c) { return is_alnum(c) || c == '_' || c == ':' || c == '.' || c == '-'; }
static int skip_blanks(const Text *t, int j) {
    while (at(t, j) == ' ') j++;
    return j;
}
static int sgml_len(const Text *t, int i) {
    if (at(t, i) != '<') return 0;
    int c1 = at(t, i + 1), j;
    if (c1 == '!' || c1 == '?') {
        if (!(is_alpha(at(t, i + 2)) || at(t, i + 2) == '-')) return 0;
        for (j = i + 3; j < t->n && t->s[j] != '>' && t->s[j] != '\r' && t->s[j] != '\n'; j++) {}
        return at(t, j) == '>' ? j + 1 - i : 0;
    }
    if (c1 == '/') {
        if (!is_alpha(at(t, i + 2))) return 0;
        for (j = i + 3; is_sgml_name(at(t, j)); j++) {}
    } else {
        if (!is_alpha(c1)) return 0;
        for (j = i + 2; is_sgml_name(at(t, j)); j++) {}
        while (at(t, j) == ' ') {  // attributes: [ ]+ NAME ([ ]* = [ ]* 'v' | "v")?
            int k = skip_blanks(t, j);
            if (!is_alpha(at(t, k))) break;
            for (k++; is_sgml_name(at(t, k)); k++) {}
            int v = skip_blanks(t, k);
            if (at(t, v) == '=') {
                v = skip_blanks(t, v + 1);
                int q = at(t, v);
                if (q == '\'' || q == '"') {
                    int e = v + 1;
                    while (e < t->n && t->s[e] != q) e++;
                    if (e < t->n) k = e + 1;
                }
            }
            j = k;
        }
        j = skip_blanks(t, j);
        if (at(t, j) == '/') j++;
    }
    j = skip_blanks(t, j);
    return at(t, j) == '>' ? j + 1 - i : 0;
}

// ACRO: [A-Za-z](\.[A-Za-z])* | (Canada|Sino|Korean|EU|Japan|non)-U\.S | U\.S\.-(U\.K|U\.S\.S\.R)
// The longest ACRO at i after which follows(t, end) holds; 0 if none.
typedef int (*Follows)(const Text *t, int i);
static int acro_before(const Text *t, int i, Follows follows) {
    static const char *const special[] = {"Canada-U.S", "Sino-U.S", "Korean-U.S", "EU-U.S",
                                          "Japan-U.S", "non-U.S", "U.S.-U.K", "U.S.-U.S.S.R"};
    int best = 0;
    for (int k = 0; k < LEN(special); k++) {
        int l = lit(t, i, special[k]);
        if (l > best && follows(t, i + l)) best = l;
    }
    if (!is_alpha(at(t, i))) return best;
    int m = 0;  // pairs ".x" after the first letter
    while (at(t, i + 2 * m + 1) == '.' && is_alpha(at(t, i + 2 * m + 2))) m++;
    // A shorter chain is followed by '.', as is the chain without its last pair.
    for (int k = m; k >= 0 && k >= m - 1; k--)
        if (2 * k + 1 > best && follows(t, i + 2 * k + 1)) return 2 * k + 1;
    return best;
}
static int follows_period(const Text *t, int i) { return at(t, i) == '.'; }
static int follows_space(const Text *t, int i) { return is_space(at(t, i)); }
static int follows_spacenl(const Text *t, int i) { return spacenl_len(t, i) > 0; }

// ABBREV4: titles and the like (usually followed by a capitalised word), or an ACRO.
static int abbrev4_before(const Text *t, int i, Follows follows) {
    static const char *const list[] = {
        "Mr", "Mrs", "Ms", "[M]iss", "Dr", "Drs", "Prof", "Profs", "Sen", "Sens", "Rep", "Reps",
        "Atty", "Attys", "Lt", "Col", "Gen", "Messrs", "Gov", "Govs", "Adm", "Rev", "Maj", "Sgt",
        "Cpl", "Pvt", "Capt", "St", "Ste", "Ave", "Pres", "Lieut", "Hon", "Brig", "Cmdr", "Comdr",
        "Pfc", "Spc", "Supt", "Supts", "Det", "Mt", "Ft", "Adj", "Adv", "Asst", "Assoc", "Ens",
        "Insp", "Mlle", "Mme", "Msgr", "Sfc", "vs", "Alex", "Wm", "Jos", "Cie", "a.k.a", "cf",
        "TREAS", "Ph", "Invt", "Elec", "Natl", "M[f]g", "M[t]g", "Dept"};
    int best = acro_before(t, i, follows);
    // Each but "a.k.a" is letters followed by '.' or a space: only the whole run of
    // letters at i can be one.
    int e = i;
    while (caseless(at(t, e)) >= 'a' && caseless(at(t, e)) <= 'z') e++;
    if (e - i == 1 && lit(t, i, "a.k.a") && follows(t, i + 5)) best = max2(best, 5);
    if (e - i <= best || !follows(t, e)) return best;
    for (int k = 0; k < LEN(list); k++)
        if (lit(t, i, list[k]) == e - i) return e - i;
    return best;
}

// ABBREV1 without its period: months, days, states, company words, ... (usually followed
// by a lower-case word). Returns the length with the period, 0 if none.
static int abbrev1_len(const Text *t, int i) {
    static const char *const list[] = {
        "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec",
        "Mon", "Tue", "Tues", "Wed", "Thu", "Thurs", "Fri",
        "Ala", "Ariz", "[A]z", "[A]rk", "Calif", "Colo", "Conn", "Ct", "Dak", "[D]el", "Fla", "Ga",
        "[I]ll", "Ind", "Kan", "Kans", "Ky", "[L]a", "[M]ass", "Md", "Mich", "Minn", "[M]iss",
        "Mo", "Mont", "Neb", "Nev", "Okla", "[O]re", "[P]a", "Penn", "Tenn", "[T]ex", "Va", "Vt",
        "[W]ash", "Wis", "Wisc", "Wyo",
        "Inc", "Co", "Cos", "Corp", "Pt[y]", "Pt[y]s", "Pt[e]", "Pt[e]s", "Ppt[y]", "Ppt[y]s",
        "Ppt[e]", "Ppt[e]s", "Ltd", "Plc", "Rt", "Bancorp", "Bhd", "Assn", "Univ", "Intl", "Sys",
        "tel", "est", "ext", "sq", "Jr", "Sr", "Bros", "Ed.D", "Ph.D", "Blvd", "Rd", "Esq",
        "etc", "al", "seq", "Bldg"};
    // Each is letters (or "Ed.D", "Ph.D") and must be followed by '.': only the run of
    // letters at i, whole, can be one.
    int e = i;
    while (caseless(at(t, e)) >= 'a' && caseless(at(t, e)) <= 'z') e++;
    if (e - i == 2 && at(t, e) == '.' && (lit(t, i, "Ed.D") || lit(t, i, "Ph.D")) && at(t, i + 4) == '.')
        return 5;
    if (at(t, e) != '.' || e - i < 2 || e - i > 7) return 0;
    for (int k = 0; k < LEN(list); k++)
        if (lit(t, i, list[k]) == e - i) return e - i + 1;
    return 0;
}

// ACRO2: [A-Za-z](\.[A-Za-z])+ and the U.S. compounds; here followed by '.', the length
// with that period (0 if none).
static int acro2_period_len(const Text *t, int i) {
    static const char *const special[] = {"Canada-U.S.", "Sino-U.S.", "Korean-U.S.", "EU-U.S.",
                                          "Japan-U.S.", "non-U.S.", "U.S.-U.K.", "U.S.-U.S.S.R."};
    int best = lit_longest(t, i, special, LEN(special));
    if (!is_alpha(at(t, i))) return best;
    int m = 0;
    while (at(t, i + 2 * m + 1) == '.' && is_alpha(at(t, i + 2 * m + 2))) m++;
    if (m >= 1 && at(t, i + 2 * m + 1) == '.') return max2(best, 2 * m + 2);
    return m >= 2 ? max2(best, 2 * m) : best;  // the chain less its last letter, then '.'
}

// --- the rules ---------------------------------------------------------------------------

#define RULE(name) static int name(const Text *t, int i, int *tok)

RULE(r_cplusplus) { return lit(t, i, "c[+][+]"); }
RULE(r_csharp) { return max2(lit(t, i, "c[#]"), lit(t, i, "f[#]")); }
RULE(r_cannot) { return lit(t, i, "cannot"); }
RULE(r_twas) { return lit(t, i, "'twas"); }
RULE(r_tis) { return lit(t, i, "'tis"); }
RULE(r_gonna) {
    static const char *const list[] = {"gonna", "gotta", "lemme", "gimme", "wanna"};
    return lit_longest(t, i, list, LEN(list));
}
RULE(r_sgml) { return sgml_len(t, i); }
RULE(r_spmdash) {
    int c = at(t, i);
    if (c == 0x96 || c == 0x97 || (c >= 0x2013 && c <= 0x2015)) return 1;
    static const char *const list[] = {"&MD;", "&mdash;", "&ndash;"};
    return c == '&' ? lit_longest(t, i, list, LEN(list)) : 0;
}
RULE(r_spamp) { return lit(t, i, "&amp;"); }
RULE(r_sppunc) {
    if (at(t, i) != '&') return 0;
    static const char *const list[] = {"&HT;", "&TL;", "&UR;", "&LR;", "&QC;",
                                       "&QL;", "&QR;", "&odq;", "&cdq;"};
    int k = lit_longest(t, i, list, LEN(list));
    if (k) return k;
    int d = at(t, i + 1) == '#' ? ascii_digit_run(t, i + 2) : 0;
    return d && at(t, i + 2 + d) == ';' ? d + 3 : 0;
}
RULE(r_word_redaux) {  // WORD/REDAUX: "dog" of "dog's"
    int w = word_len(t, i), r = w ? redaux_len(t, i + w) : 0;
    *tok = w;
    return r ? w + r : 0;
}
RULE(r_sword_sredaux) {  // SWORD/SREDAUX: "do" of "don't"
    int e = i;
    while (is_alpha(at(t, e)) || at(t, e) == 0xAD) e++;
    int j = e - 1;  // the 'n'
    if (j <= i || !sredaux_len(t, j)) return 0;
    int k = j - 1;
    while (k >= i && t->s[k] == 0xAD) k--;
    if (k < i || !is_alpha(t->s[k]) || ascii_lower(t->s[k]) == 'n') return 0;
    *tok = j - i;
    return j - i + sredaux_len(t, j);
}
RULE(r_word) { return word_len(t, i); }
RULE(r_apoword) {  // words with an apostrophe inside or in front: 'n', l', 'em, y'all, ...
    int best = 0, c = at(t, i), a = apos_len(t, i), k;
    if (a) {
        if (ascii_lower(at(t, i + a)) == 'n') best = a + 1 + apos_len(t, i + a + 1);  // 'n'
        if ((k = lit(t, i + a, "em"))) best = max2(best, a + k);
        if (at(t, i + a) >= '2' && at(t, i + a) <= '9' && lit(t, i + a + 1, "0s")) best = max2(best, a + 3);
        best = max2(best, (k = lit(t, i + a, "till")) ? a + k : (k = lit(t, i + a, "til")) ? a + k : 0);
        if ((k = lit(t, i + a, "cause"))) best = max2(best, a + k);
    }
    if (in_set(c, "lLdDjJ") && (k = apos_len(t, i + 1))) best = max2(best, 1 + k);
    static const char *const stems[] = {"Dunkin", "somethin", "ol"};
    for (int s = 0; s < LEN(stems); s++)
        if ((k = lit(t, i, stems[s])) && apos_len(t, i + k)) best = max2(best, k + apos_len(t, i + k));
    // [A-HJ-XZn] APOSETCETERA [:letter:]{2} [:letter:]*
    if ((is_upper(c) && c != 'I' && c != 'Y') || c == 'n') {
        int p = i + 1 + aposetc_len(t, i + 1), q = p;
        if (p > i + 1) {
            while (is_letter(at(t, q))) q++;
            if (q - p >= 2) best = max2(best, q - i);
        }
    }
    // [:letter:]+ [aeiouyAEIOUY] APOSETCETERA [aeiouA-Z] [:letter:]*
    if (is_letter(c)) {
        int e = i;
        while (is_letter(at(t, e))) e++;
        int ap = aposetc_len(t, e), v = at(t, e + ap);
        if (e - i >= 2 && in_set(t->s[e - 1], "aeiouyAEIOUY") && ap && (in_set(v, "aeiou") || is_upper(v))) {
            int q = e + ap + 1;
            while (is_letter(at(t, q))) q++;
            best = max2(best, q - i);
        }
    }
    static const char *const whole[] = {"cont'd", "cont'd.", "'twas", "nor'easter", "c'mon",
                                        "e'er", "s'mores", "ev'ry", "li'l", "nat'l"};
    best = max2(best, lit_longest(t, i, whole, LEN(whole)));
    if (ascii_lower(c) == 'o' && (k = aposetc_len(t, i + 1)) && ascii_lower(at(t, i + 1 + k)) == 'o')
        best = max2(best, k + 2);  // O'o
    return best;
}
RULE(r_apoword2) {  // y'/[:letter:]: the "y'" of "y'all"
    int a = ascii_lower(at(t, i)) == 'y' ? apos_len(t, i + 1) : 0;
    if (!a || !is_letter(at(t, i + 1 + a))) return 0;
    *tok = 1 + a;
    return a + 2;
}

// Characters that end a URL / e-mail address (they differ a little rule to rule).
static int url_end_bad(int c) { return in_set(c, ".!?,-"); }

RULE(r_fullurl) {  // https?://[^ ...]+[^ ....!?,-]
    int p = lit(t, i, "https://");
    if (!p) p = lit(t, i, "http://");
    if (!p) return 0;
    int b = run_end(t, i + p, RUN_URL);
    for (int e = b; e >= i + p + 2; e--)
        if (!url_end_bad(t->s[e - 1])) return e - i;
    return 0;
}

// The "/path" a LIKELYURL may end with: /[^ \t\n\f\r"<>|()]+[^ \t\n\f\r"<>|.!?(){},-]
static int url_path_len(const Text *t, int e) {
    if (at(t, e) != '/') return 0;
    int b = run_end(t, e + 1, RUN_PATH);
    for (int x = b; x >= e + 3; x--)
        if (!in_set(t->s[x - 1], ".!?{},-")) return x - e;
    return 0;
}
// The longest "seg.seg.tld[/path]" from p, segments of characters that do not end one
// (www_seg_stop, bare_seg_stop); www: the tld is 2-4 ASCII letters, else com, net, org or
// edu.
static int likely_url_from(const Text *t, int i, int p, int www) {
    int best = 0;
    for (;;) {  // each "seg." in turn
        int q = run_end(t, p, www ? RUN_WWW : RUN_BARE);
        if (q == p || at(t, q) != '.') break;
        int a = q + 1, e = 0;
        if (www) {
            int m = 0;
            while (m < 4 && is_alpha(at(t, a + m))) m++;
            if (m >= 2) e = a + m;
        } else {
            static const char *const tld[] = {"com", "net", "org", "edu"};
            if (lit_longest(t, a, tld, LEN(tld))) e = a + 3;
        }
        if (e) best = max2(best, e - i + url_path_len(t, e));
        p = a;
    }
    return best;
}
RULE(r_likelyurl) {  // www.(seg.)+[a-zA-Z]{2,4} | (seg.)+(com|net|org|edu), then a path
    int best = likely_url_from(t, i, i, 0);
    if (lit(t, i, "www.")) best = max2(best, likely_url_from(t, i, i + 4, 1));
    return best;
}
RULE(r_email) {  // (&lt;|<)? [a-zA-Z0-9][^ ...]* @ (seg.)* seg (&gt;|>)?
    int best = 0;
    int starts[2] = {i, at(t, i) == '<' ? i + 1 : lit(t, i, "&lt;") ? i + 4 : -1};
    for (int s = 0; s < 2; s++) {
        int i0 = starts[s];
        if (i0 < 0 || !is_alnum(at(t, i0))) continue;
        int b = run_end(t, i0 + 1, RUN_EMAIL), any_at = 0;
        if (t->runs)
            any_at = t->runs->next_at[i0 + 1] < b;
        else
            for (int k = i0 + 1; k < b && !any_at; k++) any_at = t->s[k] == '@';
        if (!any_at) continue;
        for (int e = b; e >= i0 + 3 && e - i > best; e--) {
            if (t->s[e - 1] == '.') continue;
            // the domain t->s[k..e): no "..", not starting with '.', after an '@' at k-1 > i0
            int found = 0;
            for (int k = e - 1; k >= i0 + 2; k--) {
                if (t->s[k] == '.' && t->s[k + 1] == '.' && k + 1 < e) break;
                if (t->s[k - 1] == '@' && t->s[k] != '.') {
                    found = 1;
                    break;
                }
            }
            if (found) {
                int gt = e == b && at(t, b) == '>' ? 1 : 0;
                best = max2(best, e + gt - i);
                break;
            }
        }
    }
    return best;
}
RULE(r_twitter) {  // @name or #topic
    int c = at(t, i), j = i + 1, k;
    if (c == '@' && (is_alpha(at(t, j)) || at(t, j) == '_')) {
        while (is_alnum(at(t, j)) || at(t, j) == '_') j++;
        return j - i;
    }
    if (c != '#') return 0;
    while ((k = letter_len(t, j))) j += k;
    return j > i + 1 ? j - i : 0;
}
RULE(r_redaux_ctx) {  // REDAUX/[^A-Za-z]
    int r = redaux_len(t, i), c = at(t, i + r);
    *tok = r;
    return r && c >= 0 && !is_alpha(c) ? r + 1 : 0;
}
RULE(r_sredaux_ctx) {  // SREDAUX/[^A-Za-z]
    int r = sredaux_len(t, i), c = at(t, i + r);
    *tok = r;
    return r && c >= 0 && !is_alpha(c) ? r + 1 : 0;
}
RULE(r_date) {  // DIGIT{1,2} [-/] DIGIT{1,2} [-/] DIGIT{2,4}
    int a = digit_run(t, i);
    if (a < 1 || a > 2 || !in_set(at(t, i + a), "-/")) return 0;
    int p = i + a + 1, b = digit_run(t, p);
    if (b < 1 || b > 2 || !in_set(at(t, p + b), "-/")) return 0;
    p += b + 1;
    int c = digit_run(t, p);
    return c >= 2 ? p + (c < 4 ? c : 4) - i : 0;
}
RULE(r_number) {  // [-+]? (DIGIT+ | DIGIT* ([.:,\u00AD\u066B\u066C] DIGIT+)+)
    int j = i + in_set(at(t, i), "+-"), d = digit_run(t, j), k, groups = 0;
    for (j += d;; groups++) {
        int c = at(t, j);
        if (!(c == '.' || c == ':' || c == ',' || c == 0xAD || c == 0x66B || c == 0x66C)) break;
        if (!(k = digit_run(t, j + 1))) break;
        j += 1 + k;
    }
    return d || groups ? j - i : 0;
}
RULE(r_subsupnum) {  // signed superscript or subscript digits
    int c = at(t, i), j = i + (c == 0x207A || c == 0x207B || c == 0x208A || c == 0x208B);
#define SUPER(c) ((c) == 0x2070 || (c) == 0xB9 || (c) == 0xB2 || (c) == 0xB3 || ((c) >= 0x2074 && (c) <= 0x2079))
#define SUB(c) ((c) >= 0x2080 && (c) <= 0x2089)
    int k = j;
    if (SUPER(at(t, k))) {
        while (SUPER(at(t, k))) k++;
    } else {
        while (SUB(at(t, k))) k++;
    }
#undef SUPER
#undef SUB
    return k > j ? k - i : 0;
}
// DIGIT{1,4} (\\?\/|\u2044) DIGIT{1,4} at p: its end, or -1
static int frac_tail(const Text *t, int p) {
    int a = digit_run(t, p);
    if (a < 1 || a > 4) return -1;
    int q = p + a;
    if (at(t, q) == '\\' && at(t, q + 1) == '/') q += 2;
    else if (at(t, q) == '/' || at(t, q) == 0x2044) q += 1;
    else return -1;
    int b = digit_run(t, q);
    return b ? q + (b < 4 ? b : 4) : -1;
}
RULE(r_frac) {  // (DIGIT{1,4}[- \u00A0])? DIGIT{1,4}(\\?\/|\u2044)DIGIT{1,4}
    int best = frac_tail(t, i), a = digit_run(t, i), c = at(t, i + a);
    if (a >= 1 && a <= 4 && (c == '-' || c == ' ' || c == 0xA0)) best = max2(best, frac_tail(t, i + a + 1));
    return best > i ? best - i : 0;
}
RULE(r_frac2) {
    int c = at(t, i);
    return c == 0xBC || c == 0xBD || c == 0xBE || (c >= 0x2153 && c <= 0x215E);
}
RULE(r_tbspec) {  // -LRB- and friends, C.D.s, pro-, anti-, S&P-500, S&Ls, Cap'n, c'est
    static const char *const list[] = {"-RRB-", "-LRB-", "-RCB-", "-LCB-", "-RSB-", "-LSB-",
                                       "C.D.s", "pro-", "anti-", "S&P-500", "S&amp;P-500",
                                       "S&Ls", "S&amp;Ls"};
    int best = lit_longest(t, i, list, LEN(list)), a, k;
    if ((k = lit(t, i, "Cap")) && (a = apos_len(t, i + k)) && lit(t, i + k + a, "n")) best = max2(best, k + a + 1);
    if ((k = lit(t, i, "c")) && (a = apos_len(t, i + k)) && lit(t, i + k + a, "est")) best = max2(best, k + a + 3);
    return best;
}
// [A-Za-z0-9]+ (-[A-Za-z]+){0,2} at p: its end
static int thing3_part(const Text *t, int p) {
    while (is_alnum(at(t, p))) p++;
    for (int g = 0; g < 2 && at(t, p) == '-' && is_alpha(at(t, p + 1)); g++)
        for (p++; is_alpha(at(t, p)); p++) {}
    return p;
}
RULE(r_thing3) {  // and/or, w/o: part (\\?\/ part){1,2}
    if (!is_alnum(at(t, i))) return 0;
    int p = thing3_part(t, i), groups = 0;
    for (; groups < 2; groups++) {
        int q = p + (at(t, p) == '\\');
        if (at(t, q) != '/' || !is_alnum(at(t, q + 1))) break;
        p = thing3_part(t, q + 1);
    }
    return groups ? p - i : 0;
}
RULE(r_dolsign) {  // [A-Z]*\$ | #
    int j = i;
    while (is_upper(at(t, j))) j++;
    if (at(t, j) == '$') return j + 1 - i;
    return at(t, i) == '#';
}
RULE(r_dolsign2) {  // cent, pound, euro, yen and other currency signs
    static const uint16_t signs[] = {0xA2, 0xA3, 0xA4, 0xA5, 0x80, 0x20A0, 0x20AC, 0x060B,
                                     0x0E3F, 0x20A4, 0xFFE0, 0xFFE1, 0xFFE5, 0xFFE6};
    int c = at(t, i);
    for (int k = 0; k < LEN(signs); k++)
        if (c == signs[k]) return 1;
    return 0;
}
RULE(r_acronym_ctx) {  // ACRONYM/(SPACENLS)(About|...|You|SGML){SPACENL}
    int a = acro_before(t, i, follows_period);
    if (!a) return 0;
    int p = i + a + 1, q = p, k;
    while ((k = spacenl_len(t, q))) q += k;
    if (q == p) return 0;
    static const char *const next[] = {
        "[A]bout", "[A]ccording", "[A]dditionally", "[A]fter", "[A]n", "[A]", "[A]s", "[A]t",
        "[B]ut", "[E]arlier", "[H]e", "[H]er", "[H]ere", "[H]owever", "[I]f", "[I]n", "[I]t",
        "[L]ast", "[M]any", "[M]ore", "[M]r.", "[M]s.", "[N]ow", "[O]nce", "[O]ne", "[O]ther",
        "[O]ur", "[S]he", "[S]ince", "[S]o", "[S]ome", "[S]uch", "[T]hat", "[T]he", "[T]heir",
        "[T]hen", "[T]here", "[T]hese", "[T]hey", "[T]his", "[W]e", "[W]hen", "[W]hile",
        "[W]hat", "[Y]et", "[Y]ou"};
    int best = 0;
    for (int w = 0; w < LEN(next); w++)
        if ((k = lit(t, q, next[w])) && spacenl_len(t, q + k)) best = max2(best, k + spacenl_len(t, q + k));
    if ((k = sgml_len(t, q)) && spacenl_len(t, q + k)) best = max2(best, k + spacenl_len(t, q + k));
    *tok = a + 1;
    return best ? q + best - i : 0;
}
RULE(r_abbrev3_ctx) {  // (ca|figs?|prop|nos?|art|bldg|pp|op)\. / {SPACENL}?[:digit:]
    static const char *const list[] = {"ca.", "fig.", "figs.", "prop.", "no.", "nos.",
                                       "art.", "bldg.", "pp.", "op."};
    int a = lit_longest(t, i, list, LEN(list)), sn = spacenl_len(t, i + a);
    if (!a) return 0;
    *tok = a;
    if (sn && is_digit(at(t, i + a + sn))) return a + sn + 1;
    return is_digit(at(t, i + a)) ? a + 1 : 0;
}
RULE(r_pty_ltd) {  // (pt[eyEY]|co)\./{SPACE}(ltd|lim)
    static const char *const list[] = {"pt[e].", "pt[y].", "pt[E].", "pt[Y].", "co."};
    int a = lit_longest(t, i, list, LEN(list));
    if (!a || !is_space(at(t, i + a))) return 0;
    *tok = a;
    return lit(t, i + a + 1, "ltd") || lit(t, i + a + 1, "lim") ? a + 4 : 0;
}
RULE(r_abbrev1_sentend) {  // ABBREV1/{SENTEND}: SPACENL (SPACENL | [:uppercase:] | SGML)
    int a = abbrev1_len(t, i), s1 = a ? spacenl_len(t, i + a) : 0;
    if (!s1) return 0;
    int p = i + a + s1, c = at(t, p), s2 = spacenl_len(t, p);
    if (!s2 && is_letter(c) && ptb_lower((unsigned)c) != (unsigned)c) s2 = 1;
    s2 = max2(s2, sgml_len(t, p));
    *tok = a;
    return s2 ? p + s2 - i : 0;
}
RULE(r_abbrev1_two) {  // ABBREV1/[^][^]
    int a = abbrev1_len(t, i);
    *tok = a;
    return a && i + a + 2 <= t->n ? a + 2 : 0;
}
RULE(r_abbrev1) { return abbrev1_len(t, i); }
RULE(r_abbrev2) {  // ABBREV4 .
    int a = abbrev4_before(t, i, follows_period);
    return a ? a + 1 : 0;
}
RULE(r_abbrev4_space) {  // ABBREV4/{SPACE}
    int a = abbrev4_before(t, i, follows_space);
    *tok = a;
    return a ? a + 1 : 0;
}
RULE(r_acro_spacenl) {  // ACRO/{SPACENL}
    int a = acro_before(t, i, follows_spacenl);
    *tok = a;
    return a ? a + spacenl_len(t, i + a) : 0;
}
RULE(r_tbspec2) {  // APOS[0-9][0-9]/{SPACENL}: '90
    int a = apos_len(t, i);
    if (!a || !is_num(at(t, i + a)) || !is_num(at(t, i + a + 1))) return 0;
    int sn = spacenl_len(t, i + a + 2);
    *tok = a + 2;
    return sn ? a + 2 + sn : 0;
}
RULE(r_filename) {  // (LETTER|DIGIT)+ ([.](LETTER|DIGIT)+)* [.]EXT / ({SPACENL}|[.?!,])
    static const char *const ext[] = {
        "bat", "bmp", "c", "class", "cgi", "cpp", "dll", "doc", "docx", "exe", "gif", "gz",
        "h", "htm", "html", "jar", "java", "jpeg", "jpg", "mov", "mp3", "pdf", "php", "pl",
        "png", "ppt", "ps", "py", "sql", "tar", "txt", "wav", "x", "xml", "zip"};
    int best = 0, p = i, segs = 0, k;
    for (;;) {
        int q = p;
        while ((k = letdig_len(t, q))) q += k;
        if (q == p) break;
        if (segs++ >= 1) {
            int after = spacenl_len(t, q);
            if (!after && in_set(at(t, q), ".?!,")) after = 1;
            for (int e = 0; e < LEN(ext) && after; e++)
                if (lit(t, p, ext[e]) == q - p) {
                    best = q + after - i;
                    *tok = q - i;
                    break;
                }
        }
        if (at(t, q) != '.') break;
        p = q + 1;
    }
    return best;
}
static int is_insentp(int c) { return in_set(c, ",;:") || c == 0x3001; }
RULE(r_word_period_insentp) {  // WORD\./{INSENTP}: "dog.," keeps its period
    int w = word_len(t, i);
    if (!w || at(t, i + w) != '.' || !is_insentp(at(t, i + w + 1))) return 0;
    *tok = w + 1;
    return w + 2;
}
// PHONE, with [0-9] digits d: the "(dd) " or "[++][dd-]dd-" start, then ddd[-]ddd, or the
// dotted form [[++]dd.]dd.ddd.ddd. Group sizes are bounded, so this enumerates them.
static int plus_count(const Text *t, int i) { return at(t, i) == '+' ? (at(t, i + 1) == '+' ? 2 : 1) : 0; }
static int phone_sep(int c) { return c == '-' || c == ' ' || c == 0xA0; }
// d{lo,hi} that must be followed by a non-digit: its length if the whole run fits, else 0
static int group(const Text *t, int p, int lo, int hi) {
    int r = ascii_digit_run(t, p);
    return r >= lo && r <= hi ? r : 0;
}
static int phone_tail(const Text *t, int p) {  // [0-9]{3,4}[- \u00A0]?[0-9]{3,5}: end or -1
    int r = ascii_digit_run(t, p), best = -1;
    if (r >= 6) best = p + (r < 9 ? r : 9);
    if (r >= 3 && r <= 4 && phone_sep(at(t, p + r))) {
        int r2 = ascii_digit_run(t, p + r + 1);
        if (r2 >= 3) best = max2(best, p + r + 1 + (r2 < 5 ? r2 : 5));
    }
    return best;
}
RULE(r_phone) {
    int best = -1, g, g2;
    if (at(t, i) == '(' && (g = group(t, i + 1, 2, 3)) && at(t, i + 1 + g) == ')') {
        int p = i + 2 + g;
        best = max2(best, phone_tail(t, p));
        if (at(t, p) == ' ' || at(t, p) == 0xA0) best = max2(best, phone_tail(t, p + 1));
    }
    for (int plus = 0; plus <= plus_count(t, i); plus++) {
        int p = i + plus;
        if (!(g = group(t, p, 2, 4)) || !phone_sep(at(t, p + g))) continue;
        best = max2(best, phone_tail(t, p + g + 1));  // [++]dd-ddd-dddd
        int q = p + g + 1;
        if ((g2 = group(t, q, 2, 4)) && phone_sep(at(t, q + g2)))
            best = max2(best, phone_tail(t, q + g2 + 1));  // [++]dd-dd-ddd-dddd
    }
    // dotted: ((\+\+?)?[0-9]{2,4}\.)?[0-9]{2,4}\.[0-9]{3,4}\.[0-9]{3,5}
    for (int plus = 0; plus <= plus_count(t, i); plus++) {
        for (int lead = 0; lead < 2; lead++) {
            int p = i + plus;
            if (lead) {
                if (!(g = group(t, p, 2, 4)) || at(t, p + g) != '.') continue;
                p += g + 1;
            } else if (plus) {
                continue;
            }
            if (!(g = group(t, p, 2, 4)) || at(t, p + g) != '.') continue;
            p += g + 1;
            if (!(g = group(t, p, 3, 4)) || at(t, p + g) != '.') continue;
            p += g + 1;
            int r = ascii_digit_run(t, p);
            if (r >= 3) best = max2(best, p + (r < 5 ? r : 5));
        }
    }
    return best > i ? best - i : 0;
}
static int dblquot_len(const Text *t, int i) { return at(t, i) == '"' ? 1 : lit(t, i, "&quot;"); }
RULE(r_dblquot_left) {  // DBLQUOT/[A-Za-z0-9$]
    int q = dblquot_len(t, i), c = at(t, i + q);
    *tok = q;
    return q && (is_alnum(c) || c == '$') ? q + 1 : 0;
}
RULE(r_dblquot) { return dblquot_len(t, i); }
RULE(r_delete7f) { return at(t, i) == 0x7F; }
RULE(r_lessthan) { return at(t, i) == '<' ? 1 : lit(t, i, "&lt;"); }
RULE(r_greaterthan) { return at(t, i) == '>' ? 1 : lit(t, i, "&gt;"); }
RULE(r_smiley) {  // [<>]?[:;=][\-o\*']?[\(\)DPdpO\\{@\|\[\]] / [^A-Za-z0-9]
    int best = 0;
    for (int hat = 0; hat < 2; hat++) {
        int p = i;
        if (hat && !in_set(at(t, p++), "<>")) continue;
        if (!in_set(at(t, p++), ":;=")) continue;
        for (int nose = 0; nose < 2; nose++) {
            int q = p;
            if (nose && !in_set(at(t, q++), "-o*'")) continue;
            int c = at(t, q + 1);
            if (in_set(at(t, q), "()DPdpO\\{@|[]") && c >= 0 && !is_alnum(c) && q + 2 - i > best) {
                best = q + 2 - i;
                *tok = q + 1 - i;
            }
        }
    }
    return best;
}
RULE(r_asiansmiley) {  // ^_^ (^_^) (^-^) and the like
    int c = at(t, i);
    if (in_set(c, "^x=~<>") && lit(t, i + 1, ".[[]^x=~<>[]]")) return 10;
    if (in_set(c, "-^x=~<>'") && at(t, i + 1) == '_' && in_set(at(t, i + 2), "-^x=~<>'")) return 3;
    if (c != '(') return 0;
    int best = 0, p = i + 2;
    if (in_set(at(t, i + 1), "-^x=~<>'")) {
        if (in_set(at(t, p), "-^x=~<>'") && at(t, p + 1) == ')') best = 4;
        if (in_set(at(t, p), "_.") && in_set(at(t, p + 1), "-^x=~<>'") && at(t, p + 2) == ')') best = 5;
    }
    if (in_set(at(t, i + 1), "^x=~<>'") && at(t, p) == '-' && in_set(at(t, p + 1), "^x=~<>'`") && at(t, p + 2) == ')')
        best = 5;
    return best;
}
RULE(r_lcb) { return at(t, i) == '{'; }
RULE(r_rcb) { return at(t, i) == '}'; }
RULE(r_lsb) { return at(t, i) == '['; }
RULE(r_rsb) { return at(t, i) == ']'; }
RULE(r_lrb) { return at(t, i) == '('; }
RULE(r_rrb) { return at(t, i) == ')'; }
RULE(r_hyphens) {
    int j = i;
    while (at(t, j) == '-') j++;
    return j - i;
}
RULE(r_ldots) {  // \.{3,5} | (\.[ \u00A0]){2,4}\. | [\u0085\u2026]
    int c = at(t, i);
    if (c == 0x85 || c == 0x2026) return 1;
    int d = 0, pairs = 0, best = 0;
    while (d < 5 && at(t, i + d) == '.') d++;
    if (d >= 3) best = d;
    while (pairs < 4 && at(t, i + 2 * pairs) == '.' && (at(t, i + 2 * pairs + 1) == ' ' || at(t, i + 2 * pairs + 1) == 0xA0))
        pairs++;
    if (pairs >= 2 && at(t, i + 2 * pairs) == '.') best = max2(best, 2 * pairs + 1);
    else if (pairs >= 3) best = max2(best, 2 * pairs - 1);
    return best;
}
RULE(r_fnmarks) {  // @+ | #+ | _+
    int c = at(t, i), j = i;
    if (!in_set(c, "@#_")) return 0;
    while (at(t, j) == c) j++;
    return j - i;
}
RULE(r_asts) {  // \*+ | (\\\*){1,3}
    int j = i;
    while (at(t, j) == '*') j++;
    if (j > i) return j - i;
    while (j - i < 6 && at(t, j) == '\\' && at(t, j + 1) == '*') j += 2;
    return j - i;
}
RULE(r_insentp) { return is_insentp(at(t, i)); }
RULE(r_exclaims) {  // [?!]+
    int j = i;
    while (in_set(at(t, j), "?!")) j++;
    return j - i;
}
RULE(r_period) {  // [.¡¿\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002]
    int c = at(t, i);
    return c == '.' || c == 0xA1 || c == 0xBF || c == 0x37E || c == 0x589 || c == 0x61F ||
           c == 0x6D4 || (c >= 0x700 && c <= 0x702) || c == 0x7FA || c == 0x3002;
}
RULE(r_equals) { return at(t, i) == '='; }
RULE(r_slash) { return at(t, i) == '/'; }
// HTHING: [A-Za-z0-9][A-Za-z0-9.,\u00AD]* (-([A-Za-z0-9\u00AD]+ | ACRO2\.))+ : its length
static int hthing_len(const Text *t, int i) {
    if (!is_alnum(at(t, i))) return 0;
    int j = i + 1, groups = 0;
    j = run_end(t, j, RUN_HTHING);
    while (at(t, j) == '-') {
        int k = j + 1;
        while (is_alnum(at(t, k)) || at(t, k) == 0xAD) k++;
        int a = acro2_period_len(t, j + 1);
        k = max2(k, j + 1 + a);
        if (k == j + 1) break;
        j = k;
        groups++;
    }
    return groups ? j - i : 0;
}
RULE(r_hthing_period) {  // HTHING\./{INSENTP}
    int h = hthing_len(t, i);
    if (!h || at(t, i + h) != '.' || !is_insentp(at(t, i + h + 1))) return 0;
    *tok = h + 1;
    return h + 2;
}
RULE(r_hthing) { return hthing_len(t, i); }
// THING: ([dDoOlL]{APOSETCETERA}([:letter:]|[:digit:]))?([:letter:]|[:digit:])+ joined by
// HYPHEN [-_\u058A\u2010\u2011]: one part at p, its end (p when none).
static int is_letdig(int c) { return is_letter(c) || is_digit(c); }
static int thing_part(const Text *t, int p) {
    int end = p;
    while (is_letdig(at(t, end))) end++;
    int a = in_set(at(t, p), "dDoOlL") ? aposetc_len(t, p + 1) : 0;
    if (a && is_letdig(at(t, p + 1 + a)) && is_letdig(at(t, p + 2 + a))) {
        int q = p + 2 + a;
        while (is_letdig(at(t, q))) q++;
        end = max2(end, q);
    }
    return end;
}
static int thing_len(const Text *t, int i) {
    int j = thing_part(t, i);
    if (j == i) return 0;
    for (;;) {
        int c = at(t, j);
        if (!(c == '-' || c == '_' || c == 0x58A || c == 0x2010 || c == 0x2011)) break;
        int k = thing_part(t, j + 1);
        if (k == j + 1) break;
        j = k;
    }
    return j - i;
}
RULE(r_thing_period) {  // THING\./{INSENTP}
    int h = thing_len(t, i);
    if (!h || at(t, i + h) != '.' || !is_insentp(at(t, i + h + 1))) return 0;
    *tok = h + 1;
    return h + 2;
}
RULE(r_thing) { return thing_len(t, i); }
// THINGA: [A-Z]+(([+&]|&amp;)[A-Z]+)+ : AT&T, S&P
static int thinga_len(const Text *t, int i) {
    int j = i, groups = 0;
    while (is_upper(at(t, j))) j++;
    if (j == i) return 0;
    for (;; groups++) {
        int s = 0;
        if (lit(t, j, "&amp;") && is_upper(at(t, j + 5))) s = 5;  // longer than "&" + "AMP"
        else if (in_set(at(t, j), "+&") && is_upper(at(t, j + 1))) s = 1;
        if (!s) break;
        for (j += s; is_upper(at(t, j)); j++) {}
    }
    return groups ? j - i : 0;
}
RULE(r_thinga_period) {  // THINGA\./{INSENTP}
    int h = thinga_len(t, i);
    if (!h || at(t, i + h) != '.' || !is_insentp(at(t, i + h + 1))) return 0;
    *tok = h + 1;
    return h + 2;
}
RULE(r_thinga) { return thinga_len(t, i); }
RULE(r_quote_left) {  // '/[A-Za-z][^ \t\n\r\u00A0]
    int c = at(t, i + 2);
    *tok = 1;
    return at(t, i) == '\'' && is_alpha(at(t, i + 1)) && c >= 0 && !in_set(c, " \t\n\r") && c != 0xA0 ? 3 : 0;
}
RULE(r_redaux) { return redaux_len(t, i); }
RULE(r_sredaux) { return sredaux_len(t, i); }
static int is_quote_char(int c) {
    return c == '`' || c == 0x2018 || c == 0x2019 || c == 0x201A || c == 0x201B || c == 0x201C ||
           c == 0x201D || (c >= 0x91 && c <= 0x94) || c == 0x201E || c == 0x201F || c == 0x2039 ||
           c == 0x203A || c == 0xAB || c == 0xBB;
}
RULE(r_quotes) {  // APOS | '' | [`\u2018...\u00BB]{1,2}
    int best = apos_len(t, i);
    if (at(t, i) == '\'' && at(t, i + 1) == '\'') best = 2;
    if (is_quote_char(at(t, i))) best = max2(best, is_quote_char(at(t, i + 1)) ? 2 : 1);
    return best;
}
RULE(r_fakeduckfeet) { return lit(t, i, "<<") || lit(t, i, ">>") ? 2 : 0; }
RULE(r_miscsymbol) {
    static const uint16_t ranges[][2] = {
        {'+', '+'}, {'%', '%'}, {'&', '&'}, {'~', '~'}, {'^', '^'}, {'|', '|'}, {'\\', '\\'},
        {0xA6, 0xA7}, {0xA8, 0xA9}, {0xAC, 0xAC}, {0xAE, 0xAF}, {0xB0, 0xBA}, {0xD7, 0xD7},
        {0xF7, 0xF7}, {0x387, 0x387}, {0x5BE, 0x5BE}, {0x5C0, 0x5C0}, {0x5C3, 0x5C3},
        {0x5C6, 0x5C6}, {0x5F3, 0x5F4}, {0x600, 0x603}, {0x606, 0x60A}, {0x60C, 0x60C},
        {0x614, 0x614}, {0x61B, 0x61B}, {0x61E, 0x61E}, {0x66A, 0x66A}, {0x66D, 0x66D},
        {0x703, 0x70D}, {0x7F6, 0x7F8}, {0x964, 0x965}, {0xE4F, 0xE4F}, {0x1FBD, 0x1FBD},
        {0x2016, 0x2017}, {0x2020, 0x2023}, {0x2030, 0x2038}, {0x203B, 0x203B},
        {0x203E, 0x2042}, {0x2044, 0x2044}, {0x207A, 0x207F}, {0x208A, 0x208E},
        {0x2100, 0x214F}, {0x2190, 0x21FF}, {0x2200, 0x2BFF}, {0x3012, 0x3012},
        {0x30FB, 0x30FB}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF20}, {0xFF3B, 0xFF40},
        {0xFF5B, 0xFF65}};
    int c = at(t, i);
    for (int k = 0; k < LEN(ranges); k++)
        if (c >= ranges[k][0] && c <= ranges[k][1]) return 1;
    return 0;
}
RULE(r_spaces) {  // \0 | SPACES | [\u200B\u200E\u200F\uFEFF]
    int c = at(t, i), j = i;
    if (c == 0 || c == 0x200B || c == 0x200E || c == 0x200F || c == 0xFEFF) return 1;
    while (is_space(at(t, j))) j++;
    return j - i;
}
RULE(r_newline) { return newline_len(t, i); }
RULE(r_nbsp) { return lit(t, i, "&nbsp;"); }
RULE(r_any) { return i < t->n; }

#undef RULE

// --- actions -------------------------------------------------------------------------------

typedef enum {
    ACT_RAW,          // the matched text (r1) as it is
    ACT_SOFT,         // without soft hyphens (U+00AD); "-" if nothing is left
    ACT_BACK2,        // give the last 2 units back: "gon" of "gonna", "'t" of "'tis"
    ACT_BACK3,        // give the last 3 back: "can" of "cannot"
    ACT_NBSP,         // spaces become U+00A0 (SGML tags, fractions)
    ACT_PHONE,        // spaces become U+00A0, ( ) become -LRB- -RRB-
    ACT_PARENS,       // ( ) become -LRB- -RRB- (smileys)
    ACT_AMP,          // "&amp;" (any case) becomes "&"
    ACT_QUOTE_RIGHT,  // quotes to `` '' ` ' as a closing quote
    ACT_QUOTE_LEFT,   // ... as an opening quote
    ACT_FRACTION,     // U+00BC -> "1/4" ...
    ACT_CURRENCY,     // U+00A2 -> "cents", U+00A3 -> "#", euro -> "$"
    ACT_ACRONYM,      // "U.S." before "The": "U.S." then the period again; "I." -> "I" "."
    ACT_PERIOD_AGAIN, // the text, then its final period is read again
    ACT_HYPHENS,      // "---" and "----" become "--"
    ACT_FIXED,        // the rule's fixed text
    ACT_SKIP,         // no token
    ACT_NEWLINE,      // a line break
} Action;

typedef struct {
    int (*match)(const Text *t, int i, int *tok);
    Action act;
    const char *fixed;  // ACT_FIXED's text
} Rule;

static const Rule rules[] = {
    {r_cplusplus, ACT_RAW, NULL},
    {r_csharp, ACT_RAW, NULL},
    {r_cannot, ACT_BACK3, NULL},
    {r_twas, ACT_BACK3, NULL},
    {r_tis, ACT_BACK2, NULL},
    {r_gonna, ACT_BACK2, NULL},
    {r_sgml, ACT_NBSP, NULL},
    {r_spmdash, ACT_FIXED, "--"},
    {r_spamp, ACT_AMP, NULL},
    {r_sppunc, ACT_RAW, NULL},
    {r_word_redaux, ACT_SOFT, NULL},
    {r_sword_sredaux, ACT_SOFT, NULL},
    {r_word, ACT_SOFT, NULL},
    {r_apoword, ACT_RAW, NULL},
    {r_apoword2, ACT_RAW, NULL},
    {r_fullurl, ACT_RAW, NULL},
    {r_likelyurl, ACT_RAW, NULL},
    {r_email, ACT_RAW, NULL},
    {r_twitter, ACT_RAW, NULL},
    {r_redaux_ctx, ACT_QUOTE_RIGHT, NULL},
    {r_sredaux_ctx, ACT_QUOTE_RIGHT, NULL},
    {r_date, ACT_RAW, NULL},
    {r_number, ACT_SOFT, NULL},
    {r_subsupnum, ACT_RAW, NULL},
    {r_frac, ACT_NBSP, NULL},
    {r_frac2, ACT_FRACTION, NULL},
    {r_tbspec, ACT_AMP, NULL},
    {r_thing3, ACT_RAW, NULL},
    {r_dolsign, ACT_RAW, NULL},
    {r_dolsign2, ACT_CURRENCY, NULL},
    {r_acronym_ctx, ACT_ACRONYM, NULL},
    {r_abbrev3_ctx, ACT_RAW, NULL},
    {r_pty_ltd, ACT_RAW, NULL},
    {r_abbrev1_sentend, ACT_PERIOD_AGAIN, NULL},
    {r_abbrev1_two, ACT_RAW, NULL},
    {r_abbrev1, ACT_PERIOD_AGAIN, NULL},
    {r_abbrev2, ACT_RAW, NULL},
    {r_abbrev4_space, ACT_RAW, NULL},
    {r_acro_spacenl, ACT_RAW, NULL},
    {r_tbspec2, ACT_RAW, NULL},
    {r_filename, ACT_RAW, NULL},
    {r_word_period_insentp, ACT_SOFT, NULL},
    {r_phone, ACT_PHONE, NULL},
    {r_dblquot_left, ACT_QUOTE_LEFT, NULL},
    {r_dblquot, ACT_QUOTE_RIGHT, NULL},
    {r_delete7f, ACT_SKIP, NULL},
    {r_lessthan, ACT_FIXED, "<"},
    {r_greaterthan, ACT_FIXED, ">"},
    {r_smiley, ACT_PARENS, NULL},
    {r_asiansmiley, ACT_PARENS, NULL},
    {r_lcb, ACT_FIXED, "-LCB-"},
    {r_rcb, ACT_FIXED, "-RCB-"},
    {r_lsb, ACT_FIXED, "-LSB-"},
    {r_rsb, ACT_FIXED, "-RSB-"},
    {r_lrb, ACT_FIXED, "-LRB-"},
    {r_rrb, ACT_FIXED, "-RRB-"},
    {r_hyphens, ACT_HYPHENS, NULL},
    {r_ldots, ACT_FIXED, "..."},
    {r_fnmarks, ACT_RAW, NULL},
    {r_asts, ACT_RAW, NULL},
    {r_insentp, ACT_RAW, NULL},
    {r_exclaims, ACT_RAW, NULL},
    {r_period, ACT_RAW, NULL},
    {r_equals, ACT_RAW, NULL},
    {r_slash, ACT_RAW, NULL},
    {r_hthing_period, ACT_SOFT, NULL},
    {r_hthing, ACT_SOFT, NULL},
    {r_thing_period, ACT_RAW, NULL},
    {r_thing, ACT_RAW, NULL},
    {r_thinga_period, ACT_AMP, NULL},
    {r_thinga, ACT_AMP, NULL},
    {r_quote_left, ACT_QUOTE_LEFT, NULL},
    {r_redaux, ACT_QUOTE_RIGHT, NULL},
    {r_sredaux, ACT_QUOTE_RIGHT, NULL},
    {r_quotes, ACT_QUOTE_RIGHT, NULL},
    {r_fakeduckfeet, ACT_RAW, NULL},
    {r_miscsymbol, ACT_RAW, NULL},
    {r_spaces, ACT_SKIP, NULL},
    {r_newline, ACT_NEWLINE, NULL},
    {r_nbsp, ACT_SKIP, NULL},
    {r_any, ACT_SKIP, NULL},
};

static int put_ascii(uint16_t *out, int k, const char *s) {
    while (*s) out[k++] = (unsigned char)*s++;
    return k;
}

// The units s[0..len) with "&amp;" (any case) as "&".
static int copy_amp(uint16_t *out, const uint16_t *s, int len) {
    Text t = {s, len, NULL};
    int k = 0;
    for (int j = 0; j < len;) {
        int a = lit(&t, j, "&amp;");
        out[k++] = s[j];
        j += a ? a : 1;
    }
    return k;
}

// latexQuotes: ' and &apos; -> ` (left) or ' (right); " and &quot; -> `` or ''; curly and
// angle quotes to ` ' `` '' by their direction. (&apos; and &quot; in lower case only.)
static int copy_quotes(uint16_t *out, const uint16_t *s, int len, int left) {
    static const char apos_ent[] = "&apos;", quot_ent[] = "&quot;";
    int k = 0;
    for (int j = 0; j < len;) {
        int c = s[j], ent = 0;
        if (c == '&' && j + 6 <= len) {
            int ea = 1, eq = 1;
            for (int m = 0; m < 6; m++) {
                ea &= s[j + m] == (unsigned char)apos_ent[m];
                eq &= s[j + m] == (unsigned char)quot_ent[m];
            }
            ent = ea ? 1 : eq ? 2 : 0;
        }
        if (c == '\'' || ent == 1) k = put_ascii(out, k, left ? "`" : "'");
        else if (c == '"' || ent == 2) k = put_ascii(out, k, left ? "``" : "''");
        else if (c == 0x91 || c == 0x2018 || c == 0x201B || c == 0x2039) k = put_ascii(out, k, "`");
        else if (c == 0x92 || c == 0x2019 || c == 0x203A) k = put_ascii(out, k, "'");
        else if (c == 0x93 || c == 0x201C || c == 0xAB) k = put_ascii(out, k, "``");
        else if (c == 0x94 || c == 0x201D || c == 0xBB) k = put_ascii(out, k, "''");
        else out[k++] = (uint16_t)c;
        j += ent ? 6 : 1;
    }
    return k;
}

static int copy_text(uint16_t *out, const uint16_t *s, int len, Action act) {
    int k = 0;
    switch (act) {
    case ACT_SOFT:
        for (int j = 0; j < len; j++)
            if (s[j] != 0xAD) out[k++] = s[j];
        return k ? k : put_ascii(out, 0, "-");
    case ACT_NBSP:
    case ACT_PHONE:
    case ACT_PARENS:
        for (int j = 0; j < len; j++) {
            if (act != ACT_PARENS && s[j] == ' ') out[k++] = 0xA0;
            else if (act != ACT_NBSP && s[j] == '(') k = put_ascii(out, k, "-LRB-");
            else if (act != ACT_NBSP && s[j] == ')') k = put_ascii(out, k, "-RRB-");
            else out[k++] = s[j];
        }
        return k;
    case ACT_AMP: return copy_amp(out, s, len);
    case ACT_QUOTE_LEFT:
    case ACT_QUOTE_RIGHT: return copy_quotes(out, s, len, act == ACT_QUOTE_LEFT);
    case ACT_FRACTION: {
        static const uint16_t from[] = {0xBC, 0xBD, 0xBE, 0x2153, 0x2154};
        static const char *const to[] = {"1/4", "1/2", "3/4", "1/3", "2/3"};
        for (int f = 0; f < LEN(from); f++)
            if (s[0] == from[f]) return put_ascii(out, 0, to[f]);
        break;
    }
    case ACT_CURRENCY:
        if (s[0] == 0xA2) return put_ascii(out, 0, "cents");
        if (s[0] == 0xA3) return put_ascii(out, 0, "#");
        if (s[0] == 0x80 || s[0] == 0xA4 || s[0] == 0x20A0 || s[0] == 0x20AC) return put_ascii(out, 0, "$");
        break;
    case ACT_HYPHENS:
        if (len >= 3 && len <= 4) return put_ascii(out, 0, "--");
        break;
    default: break;
    }
    memcpy(out, s, (size_t)len * sizeof *s);
    return len;
}

// The two lexemes most of a caption is made of, found without trying every rule:
//   - a run of spaces or tabs: no rule but the white-space one starts with either;
//   - ASCII letters followed by a space, tab or line break, other than the five words a rule
//     splits (cannot, gonna, ...): every rule that could match there either matches the
//     same letters (WORD, THING, tied: WORD is first) or adds the space as trailing context
//     (ABBREV4/{SPACE}, ACRO/{SPACENL}) and returns the same letters as the token. Rules
//     that could read on need '.', '-', '/', '\'', '@', '&', '+', '$' or a digit.
// Returns 1 when lx (and out) are filled.
static int ptb_shortcut(PtbLexeme *lx, const Text *t, int pos, uint16_t *out) {
    int c = t->s[pos], j = pos;
    if (c == ' ' || c == '\t') {
        while (at(t, j) == ' ' || at(t, j) == '\t') j++;
        if (is_space(at(t, j))) return 0;  // other spaces join the run: the full rules
        *lx = (PtbLexeme){PTB_SKIP, j - pos, 0};
        return 1;
    }
    while (is_alpha(at(t, j))) j++;
    int end = at(t, j);
    if (j == pos || !(end == ' ' || end == '\t' || end == '\n')) return 0;
    static const char *const split[] = {"cannot", "gonna", "gotta", "lemme", "gimme", "wanna"};
    for (int k = 0; k < LEN(split); k++)
        if (lit(t, pos, split[k]) == j - pos) return 0;
    memcpy(out, t->s + pos, (size_t)(j - pos) * sizeof *out);
    *lx = (PtbLexeme){PTB_TOKEN, j - pos, j - pos};
    return 1;
}

static void next_all_rules(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out,
                           const PtbRuns *runs);

void ptb_next_runs(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out,
                   const PtbRuns *runs) {
    CHECK(pos >= 0 && pos < n && (!runs || runs->n == n));
    Text t = {s, n - pos > PTB_WINDOW ? pos + PTB_WINDOW : n, runs};
    if (!ptb_shortcut(lx, &t, pos, out)) next_all_rules(lx, s, n, pos, out, runs);
}

void ptb_next(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out) {
    ptb_next_runs(lx, s, n, pos, out, NULL);
}

void ptb_next_all_rules(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out) {
    next_all_rules(lx, s, n, pos, out, NULL);
}

static void next_all_rules(PtbLexeme *lx, const uint16_t *s, int n, int pos, uint16_t *out,
                           const PtbRuns *runs) {
    CHECK(pos >= 0 && pos < n);
    Text t = {s, n - pos > PTB_WINDOW ? pos + PTB_WINDOW : n, runs};
    int best = -1, best_len = 0, best_tok = 0;
    for (int r = 0; r < LEN(rules); r++) {
        int tok = -1;
        int len = rules[r].match(&t, pos, &tok);
        if (len > best_len) {
            best = r;
            best_len = len;
            best_tok = tok < 0 ? len : tok;
        }
    }
    CHECK(best >= 0 && best_tok >= 1 && best_tok <= best_len);  // r_any matches one unit
    const Rule *rule = &rules[best];
    lx->kind = PTB_TOKEN;
    lx->advance = best_tok;
    lx->len = 0;
    const uint16_t *text = s + pos;
    switch (rule->act) {
    case ACT_SKIP: lx->kind = PTB_SKIP; return;
    case ACT_NEWLINE: lx->kind = PTB_NEWLINE; return;
    case ACT_FIXED: lx->len = put_ascii(out, 0, rule->fixed); return;
    case ACT_BACK2:
    case ACT_BACK3:
        lx->advance = best_tok - (rule->act == ACT_BACK2 ? 2 : 3);
        lx->len = copy_text(out, text, lx->advance, ACT_RAW);
        return;
    case ACT_ACRONYM:  // "I." -> "I", the period next; "U.S." -> "U.S.", the period again
    case ACT_PERIOD_AGAIN:
        lx->advance = best_tok - 1;
        lx->len = copy_text(out, text, rule->act == ACT_ACRONYM && best_tok == 2 ? 1 : best_tok, ACT_RAW);
        return;
    default: lx->len = copy_text(out, text, best_tok, rule->act); return;
    }
}
