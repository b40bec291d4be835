// bible.c: SWORD modules exported by mod2imp, OSIS stripping, pairing by reference and the
// seeded split (datasets/bible.h).
#include "datasets/bible.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "core/text_escape.h"

// --- markup ------------------------------------------------------------------------------

#define SOFT '\x01'  // a space that markup made: dropped beside punctuation

static int name_is(const char *name, const char *const *list) {
    for (; *list; list++)
        if (strcmp(name, *list) == 0) return 1;
    return 0;
}

// The tag at s[i] == '<' (len bytes in s): its name, whether it closes (</x>) or is empty
// (<x/>), and the index after its '>' (len when unterminated).
static size_t read_tag(const char *s, size_t len, size_t i, char *name, size_t cap, int *closing,
                       int *empty, int *canonical) {
    size_t j = i + 1;
    *closing = j < len && s[j] == '/';
    j += (size_t)*closing;
    size_t k = 0;
    while (j < len && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z') ||
                       (s[j] >= '0' && s[j] <= '9') || s[j] == ':' || s[j] == '_')) {
        if (k + 1 < cap) name[k++] = s[j];
        j++;
    }
    name[k] = 0;
    const char *gt = memchr(s + j, '>', len - j);
    size_t end = gt ? (size_t)(gt - s) + 1 : len;
    *empty = gt && gt > s + i && gt[-1] == '/';
    *canonical = 0;
    static const char canon[] = "canonical=\"true\"";
    for (size_t a = j; a + sizeof canon - 1 <= end; a++)
        if (memcmp(s + a, canon, sizeof canon - 1) == 0) *canonical = 1;
    return end;
}

// 1 when the tag s[i, end) holds attr (a literal such as type="book").
static int tag_has(const char *s, size_t i, size_t end, const char *attr) {
    size_t n = strlen(attr);
    for (size_t a = i; a + n <= end; a++)
        if (memcmp(s + a, attr, n) == 0) return 1;
    return 0;
}

// A tag after which the module's text is no longer scripture: the end of a book, or the
// start of back matter (the English module appends its glossary to Revelation 22:21).
static int ends_scripture(const char *s, size_t i, size_t end, const char *name) {
    if (strcmp(name, "div") != 0) return 0;
    if (tag_has(s, i, end, "type=\"book\"") && tag_has(s, i, end, "eID=")) return 1;
    return tag_has(s, i, end, "type=\"glossary\"") || tag_has(s, i, end, "type=\"back\"") ||
           tag_has(s, i, end, "type=\"introduction\"") || tag_has(s, i, end, "type=\"front\"");
}

static const char *const SKIPPED[] = {"note", "speaker", NULL};  // with their content
static const char *const SPACED[] = {"l",       "lg",   "lb",   "div",  "p", "milestone",
                                     "chapter", "list", "item", "title", NULL};

// First pass: tags out, notes and headings out with their content, entities decoded, every
// space-like byte a ' ', markup's spaces SOFT.
static void strip_tags(StrBuf *b, const char *s, size_t len) {
    static const struct { const char *name, *text; } ENTITIES[] = {
        {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};
    char name[32];
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '<') {
            int closing, empty, canonical;
            size_t end = read_tag(s, len, i, name, sizeof name, &closing, &empty, &canonical);
            if (ends_scripture(s, i, end, name)) break;
            int skip = !closing && !empty &&
                       (name_is(name, SKIPPED) || (strcmp(name, "title") == 0 && !canonical));
            if (skip) {  // to the matching close tag (same name, nesting counted)
                int depth = 1;
                char inner[32];
                while (end < len && depth > 0) {
                    const char *lt = memchr(s + end, '<', len - end);
                    if (!lt) {
                        end = len;
                        break;
                    }
                    int cl, em, ca;
                    end = read_tag(s, len, (size_t)(lt - s), inner, sizeof inner, &cl, &em, &ca);
                    if (strcmp(inner, name) == 0 && !em) depth += cl ? -1 : 1;
                }
            }
            if (skip || name_is(name, SPACED)) strbuf_put(b, (char[]){SOFT}, 1);
            i = end;
            continue;
        }
        if (c == '&') {
            size_t k = 0;
            for (; k < sizeof ENTITIES / sizeof *ENTITIES; k++) {
                size_t n = strlen(ENTITIES[k].name);
                if (len - i >= n && memcmp(s + i, ENTITIES[k].name, n) == 0) {
                    strbuf_put(b, ENTITIES[k].text, 1);
                    i += n;
                    break;
                }
            }
            if (k < sizeof ENTITIES / sizeof *ENTITIES) continue;
        }
        if ((unsigned char)c < 0x20 || c == 0x7F) c = ' ';
        strbuf_put(b, &c, 1);
        i++;
    }
}

static int starts(const char *p, const char *const *list) {
    for (; *list; list++)
        if (strncmp(p, *list, strlen(*list)) == 0) return 1;
    return 0;
}

static int ends(const char *s, size_t n, const char *const *list) {
    for (; *list; list++) {
        size_t k = strlen(*list);
        if (n >= k && memcmp(s + n - k, *list, k) == 0) return 1;
    }
    return 0;
}

char *bible_strip_osis(const char *s, size_t len) {
    static const char *const CLOSE[] = {",", ".", ";", ":", "!", "?", ")", "]",
                                        "\xe2\x80\x9d", "\xe2\x80\x99", "\xc2\xbb",
                                        "\xe2\x80\xa6", NULL};
    static const char *const OPEN[] = {"(", "[", "\xc2\xbf", "\xc2\xa1", "\xe2\x80\x9c",
                                       "\xe2\x80\x98", "\xc2\xab", NULL};
    StrBuf t = {0}, out = {0};
    strbuf_put(&t, "", 0);
    strbuf_put(&out, "", 0);
    strip_tags(&t, s, len);
    for (size_t i = 0; i < t.n;) {
        if (t.s[i] != ' ' && t.s[i] != SOFT) {
            strbuf_put(&out, t.s + i, 1);
            i++;
            continue;
        }
        int hard = 0;
        while (i < t.n && (t.s[i] == ' ' || t.s[i] == SOFT)) hard |= t.s[i++] == ' ';
        if (out.n == 0 || i == t.n) continue;  // trimmed
        if (!hard && (starts(t.s + i, CLOSE) || ends(out.s, out.n, OPEN))) continue;
        strbuf_put(&out, " ", 1);
    }
    free(t.s);
    return out.s;
}

// --- mod2imp's output ---------------------------------------------------------------------

void bible_verses_free(BibleVerses *v) {
    for (int i = 0; i < v->n; i++) {
        free(v->key[i]);
        free(v->text[i]);
    }
    free(v->key);
    free(v->text);
    memset(v, 0, sizeof *v);
}

// "BOOK C:V" with C, V >= 1.
static int is_verse_key(const char *k, size_t n) {
    const char *sp = NULL;
    for (size_t i = 0; i < n; i++)
        if (k[i] == ' ') sp = k + i;
    if (!sp || sp == k) return 0;
    long c = 0, v = 0;
    const char *p = sp + 1, *e = k + n;
    int digits = 0;
    for (; p < e && *p >= '0' && *p <= '9'; p++, digits++)
        if (digits < 5) c = c * 10 + (*p - '0');  // more than 4 digits is refused below
    if (!digits || digits > 4 || p == e || *p != ':') return 0;
    digits = 0;
    for (p++; p < e && *p >= '0' && *p <= '9'; p++, digits++)
        if (digits < 5) v = v * 10 + (*p - '0');
    return digits && digits <= 4 && p == e && c >= 1 && v >= 1;
}

static int cmp_key(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int bible_parse_imp(BibleVerses *v, const char *data, size_t len, const char *name,
                    int min_verses, Error *err) {
    memset(v, 0, sizeof *v);
    if (len == 0) return error_set(err, "%s: empty export (no module entries)", name);
    int line = 1;
    for (size_t i = 0; i < len;) {  // UTF-8, with the line of the first bad byte
        if (data[i] == '\n') line++;
        unsigned char q[5] = {0};
        memcpy(q, data + i, len - i < 4 ? len - i : 4);
        int n = data[i] == 0 ? 0 : text_utf8_seq_len(q);
        if (n == 0) return error_set(err, "%s: line %d: not valid UTF-8", name, line);
        i += (size_t)n;
    }
    int cap = 0, in_verse = 0;
    line = 0;
    StrBuf text = {0};
    for (size_t at = 0;;) {  // a last pass with at >= len ends the last verse
        const char *s = data + (at < len ? at : len);
        const char *nl = at < len ? memchr(s, '\n', len - at) : NULL;
        size_t l = at < len ? (nl ? (size_t)(nl - s) : len - at) : 0;
        int last = at >= len;
        at += l + 1;
        line++;
        if (l && s[l - 1] == '\r') l--;
        int head = !last && l >= 3 && memcmp(s, "$$$", 3) == 0;
        if ((head || last) && in_verse == 1) {  // the verse before ends
            v->text[v->n - 1] = bible_strip_osis(text.s ? text.s : "", text.n);
            text.n = 0;
            in_verse = 0;
        }
        if (last) break;
        if (head) {
            if (!is_verse_key(s + 3, l - 3)) {
                in_verse = -1;  // a heading: its text is skipped
                continue;
            }
            if (v->n == cap) {
                cap = cap ? 2 * cap : 1024;
                v->key = xrealloc(v->key, (size_t)cap * sizeof *v->key);
                v->text = xrealloc(v->text, (size_t)cap * sizeof *v->text);
            }
            char *k = xmalloc(l - 2);
            memcpy(k, s + 3, l - 3);
            k[l - 3] = 0;
            v->key[v->n] = k;
            v->text[v->n] = NULL;
            v->n++;
            in_verse = 1;
            continue;
        }
        if (in_verse == 0 && l > 0) {
            free(text.s);
            bible_verses_free(v);
            return error_set(err, "%s: line %d: text before the first $$$ entry (not mod2imp's output?)",
                             name, line);
        }
        if (in_verse == 1) {
            if (text.n) strbuf_put(&text, "\n", 1);
            strbuf_put(&text, s, l);
        }
    }
    free(text.s);
    int with_text = 0;
    for (int i = 0; i < v->n; i++) with_text += v->text[i][0] != 0;
    if (with_text < min_verses || with_text == 0) {
        bible_verses_free(v);
        return error_set(err, "%s: %d verses with text, expected at least %d (a truncated or damaged "
                              "module?)",
                         name, with_text, min_verses > 1 ? min_verses : 1);
    }
    char **sorted = xmalloc((size_t)v->n * sizeof *sorted);
    memcpy(sorted, v->key, (size_t)v->n * sizeof *sorted);
    qsort(sorted, (size_t)v->n, sizeof *sorted, cmp_key);
    for (int i = 1; i < v->n; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            error_set(err, "%s: the verse '%s' twice", name, sorted[i]);
            free(sorted);
            bible_verses_free(v);
            return -1;
        }
    free(sorted);
    return 0;
}

int bible_read_imp(BibleVerses *v, const char *path, int min_verses, Error *err) {
    memset(v, 0, sizeof *v);
    unsigned char *data;
    size_t len;
    if (file_read_all(path, &data, &len, BIBLE_MAX_FILE_BYTES, err)) return -1;
    int rc = bible_parse_imp(v, (const char *)data, len, path, min_verses, err);
    free(data);
    return rc;
}

// --- split and pairs ------------------------------------------------------------------------

int bible_split_of(const char *key, uint64_t seed) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu:", (unsigned long long)seed);
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
    for (const char *p = buf; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    h += 0x9E3779B97F4A7C15ull;  // splitmix64's finaliser spreads the low bits
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
    int r = (int)(h % 100);
    return r < 90 ? 0 : r < 95 ? 1 : 2;
}

typedef struct {
    const char *key;
    int index;
} KeyIndex;

static int cmp_key_index(const void *a, const void *b) {
    return strcmp(((const KeyIndex *)a)->key, ((const KeyIndex *)b)->key);
}

void bible_pair(BiblePairs *p, const BibleVerses *src, const BibleVerses *tgt) {
    memset(p, 0, sizeof *p);
    int ns = src->n ? src->n : 1, nt = tgt->n ? tgt->n : 1;
    p->key = xmalloc((size_t)ns * sizeof *p->key);
    p->src = xmalloc((size_t)ns * sizeof *p->src);
    p->tgt = xmalloc((size_t)ns * sizeof *p->tgt);
    p->src_only = xmalloc((size_t)ns * sizeof *p->src_only);
    p->tgt_only = xmalloc((size_t)nt * sizeof *p->tgt_only);
    KeyIndex *t = xmalloc((size_t)nt * sizeof *t);
    unsigned char *used = xcalloc((size_t)nt, 1);
    for (int i = 0; i < tgt->n; i++) t[i] = (KeyIndex){tgt->key[i], i};
    qsort(t, (size_t)tgt->n, sizeof *t, cmp_key_index);
    for (int i = 0; i < src->n; i++) {
        KeyIndex want = {src->key[i], 0};
        const KeyIndex *hit = tgt->n ? bsearch(&want, t, (size_t)tgt->n, sizeof *t, cmp_key_index) : NULL;
        int j = hit ? hit->index : -1;
        if (j >= 0) used[j] = 1;
        int es = src->text[i][0] == 0, et = j >= 0 && tgt->text[j][0] == 0;
        if (j >= 0 && !es && !et) {
            p->key[p->n] = src->key[i], p->src[p->n] = src->text[i], p->tgt[p->n] = tgt->text[j];
            p->n++;
            continue;
        }
        int ht = j >= 0 && !et;  // the target has text
        if (!es) {
            p->src_only[p->n_src_only++] = src->key[i];
            p->n_empty_tgt += et;
        } else if (ht) {
            p->tgt_only[p->n_tgt_only++] = src->key[i];
            p->n_empty_src++;
        } else {
            p->n_no_text++;
        }
    }
    for (int j = 0; j < tgt->n; j++)
        if (!used[j]) {
            if (tgt->text[j][0]) p->tgt_only[p->n_tgt_only++] = tgt->key[j];
            else p->n_no_text++;
        }
    free(used);
    free(t);
}

void bible_pairs_free(BiblePairs *p) {
    free(p->key);
    free(p->src);
    free(p->tgt);
    free(p->src_only);
    free(p->tgt_only);
    memset(p, 0, sizeof *p);
}

// --- chapters numbered differently ----------------------------------------------------------

static int words_in(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++) n += *p != ' ' && (p == s || p[-1] == ' ');
    return n;
}

// The verse number after the last ':' of a key, and the length of the chapter part before it.
static int verse_of(const char *key, size_t *chapter_len) {
    const char *colon = strrchr(key, ':');
    CHECK(colon, "key %s", key);
    *chapter_len = (size_t)(colon - key);
    return atoi(colon + 1);
}

int bible_flag_shifted(const BiblePairs *p, unsigned char *shifted) {
    memset(shifted, 0, (size_t)(p->n ? p->n : 1));
    int flagged = 0;
    for (int i = 0; i < p->n;) {
        size_t cl, cj;
        verse_of(p->key[i], &cl);
        int j = i;
        while (j < p->n && (verse_of(p->key[j], &cj), cj == cl) &&
               strncmp(p->key[j], p->key[i], cl) == 0)
            j++;
        // pairs i..j-1 are one chapter: cost of pairing English v with Spanish v + s
        int m = j - i, maxv = 0;
        for (int k = i; k < j; k++) {
            int v = verse_of(p->key[k], &cj);
            if (v > maxv) maxv = v;
        }
        int *at = xmalloc((size_t)(maxv + 2) * sizeof *at);  // verse -> pair index, or -1
        for (int v = 0; v <= maxv + 1; v++) at[v] = -1;
        for (int k = i; k < j; k++) at[verse_of(p->key[k], &cj)] = k;
        double cost[2 * BIBLE_MAX_SHIFT + 1];
        int count[2 * BIBLE_MAX_SHIFT + 1];
        for (int s = -BIBLE_MAX_SHIFT; s <= BIBLE_MAX_SHIFT; s++) {
            double c = 0;
            int n = 0;
            for (int v = 1; v <= maxv; v++) {
                int a = at[v], b = v + s >= 1 && v + s <= maxv ? at[v + s] : -1;
                if (a < 0 || b < 0) continue;
                c += fabs(log((words_in(p->src[a]) + 1.0) / (words_in(p->tgt[b]) + 1.0)));
                n++;
            }
            cost[s + BIBLE_MAX_SHIFT] = n ? c / n : 1e9;
            count[s + BIBLE_MAX_SHIFT] = n;
        }
        double c0 = cost[BIBLE_MAX_SHIFT], best = 1e9;
        for (int s = 0; s < 2 * BIBLE_MAX_SHIFT + 1; s++)
            if (s != BIBLE_MAX_SHIFT && count[s] >= 3 && cost[s] < best) best = cost[s];
        if (m >= 3 && c0 > BIBLE_SHIFT_MIN_COST && best < BIBLE_SHIFT_RATIO * c0) {
            for (int k = i; k < j; k++) shifted[k] = 1;
            flagged += m;
        }
        free(at);
        i = j;
    }
    return flagged;
}
