// fuzz_pairs.c: libFuzzer target for the translator's readers: SOURCE<TAB>TARGET pair files
// (datasets/pairs.h) and mod2imp exports of SWORD modules (datasets/bible.h).
//
// Returns 1 when the reader accepted the input, 0 when it refused it.
// Input: byte 0 picks the reader (bit 0: 0 pairs, 1 mod2imp export), the rest is the file,
// parsed from memory under the name "in.tsv" / "in.imp". Properties: a failure is one line
// naming the file and leaves the set empty. Pairs: n >= 1, each side non-empty, not all
// spaces, at most PAIRS_MAX_LINE_BYTES with the tab, valid UTF-8, free of tabs, line ends and
// NUL; written back as SOURCE<TAB>TARGET lines, they read back the same. Exports: every key
// holds ' ' and ':', every text is valid UTF-8 without tabs, line ends, double or edge
// spaces; stripping a text again leaves it as it is unless it holds '&' or '<' (decoded
// entities); pairing the export with itself pairs every verse with text and leaves none
// over, with no chapter flagged as numbered differently; each key's split is 0, 1 or 2.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/text_escape.h"
#include "datasets/bible.h"
#include "datasets/pairs.h"
#include "tests/fuzz/fuzz_util.h"

static void fuzz_pairs_check(const PairSet *p) {
    fuzz_require(p->n >= 1, "%d pairs", p->n);
    size_t total = 0;
    for (int i = 0; i < p->n; i++) {
        const char *side[2] = {p->src[i], p->tgt[i]};
        size_t len[2];
        for (int k = 0; k < 2; k++) {
            len[k] = strlen(side[k]);
            fuzz_require(len[k] >= 1 && strspn(side[k], " ") < len[k], "pair %d side %d empty", i, k);
            fuzz_require(text_is_utf8(side[k]), "pair %d side %d not valid UTF-8", i, k);
            fuzz_require(!strpbrk(side[k], "\t\n"), "pair %d side %d keeps a tab or line end", i, k);
        }
        fuzz_require(len[0] + 1 + len[1] <= PAIRS_MAX_LINE_BYTES + 1, "pair %d of %zu bytes", i,
                     len[0] + 1 + len[1]);
        total += len[0] + len[1] + 2;
    }
    // Written back, they read back the same (a trailing CR aside, which the reader drops).
    char *out = xmalloc(total + 1), *w = out;
    for (int i = 0; i < p->n; i++) {
        size_t a = strlen(p->src[i]), b = strlen(p->tgt[i]);
        memcpy(w, p->src[i], a), w += a, *w++ = '\t';
        memcpy(w, p->tgt[i], b), w += b, *w++ = '\n';
    }
    PairSet q;
    Error err = {{0}};
    int rc = pairs_parse(&q, out, (size_t)(w - out), "back.tsv", &err);
    int crlf = 0;
    for (int i = 0; i < p->n; i++) crlf |= p->tgt[i][strlen(p->tgt[i]) - 1] == '\r';
    if (!crlf) {
        fuzz_require(rc == 0 && q.n == p->n, "written back: %s", err.msg);
        for (int i = 0; i < q.n && i < p->n; i++)
            fuzz_require(strcmp(q.src[i], p->src[i]) == 0 && strcmp(q.tgt[i], p->tgt[i]) == 0,
                         "pair %d changed on the way back", i);
    }
    pairs_free(&q);
    free(out);
}

static void fuzz_bible_check(const BibleVerses *v) {
    fuzz_require(v->n >= 1, "%d verses", v->n);
    for (int i = 0; i < v->n; i++) {
        const char *t = v->text[i];
        size_t n = strlen(t);
        fuzz_require(text_is_utf8(v->key[i]) && text_is_utf8(t), "verse %d not valid UTF-8", i);
        fuzz_require(strchr(v->key[i], ':') && strchr(v->key[i], ' '), "key '%s'", v->key[i]);
        fuzz_require(!strpbrk(t, "\t\n\r"), "verse %d keeps a tab or line end", i);
        fuzz_require(!strstr(t, "  ") && (n == 0 || (t[0] != ' ' && t[n - 1] != ' ')),
                     "verse %d: spaces not collapsed: '%s'", i, t);
        if (!strpbrk(t, "&<")) {
            char *again = bible_strip_osis(t, n);
            fuzz_require(strcmp(again, t) == 0, "stripping twice changed '%s' to '%s'", t, again);
            free(again);
        }
        int s = bible_split_of(v->key[i], BIBLE_SPLIT_SEED);
        fuzz_require(s >= 0 && s <= 2, "split %d", s);
    }
    BiblePairs p;
    bible_pair(&p, v, v);
    int with_text = 0;
    for (int i = 0; i < v->n; i++) with_text += v->text[i][0] != 0;
    fuzz_require(p.n == with_text && p.n_src_only == 0 && p.n_tgt_only == 0,
                 "self-pairing: %d pairs of %d verses with text, %d and %d over", p.n, with_text,
                 p.n_src_only, p.n_tgt_only);
    fuzz_require(p.n_no_text == v->n - with_text, "self-pairing: %d without text", p.n_no_text);
    unsigned char *shifted = xmalloc((size_t)(p.n ? p.n : 1));
    fuzz_require(bible_flag_shifted(&p, shifted) == 0, "a module against itself has shifted chapters");
    free(shifted);
    bible_pairs_free(&p);
}

int fuzz_pairs_one(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int imp = data[0] & 1;
    const char *name = imp ? "in.imp" : "in.tsv";
    Error err = {{0}};
    int rc;
    if (imp) {
        BibleVerses v;
        rc = bible_parse_imp(&v, (const char *)data + 1, size - 1, name, 0, &err);
        if (rc == 0) fuzz_bible_check(&v);
        else fuzz_require(v.n == 0 && v.key == NULL && v.text == NULL, "failed read left verses");
        bible_verses_free(&v);
    } else {
        PairSet p;
        rc = pairs_parse(&p, (const char *)data + 1, size - 1, name, &err);
        if (rc == 0) fuzz_pairs_check(&p);
        else fuzz_require(p.n == 0 && p.src == NULL && p.tgt == NULL, "failed read left pairs");
        pairs_free(&p);
    }
    if (rc != 0) {
        fuzz_require(rc == -1, "returned %d", rc);
        fuzz_require_error(&err, name);
        return 0;
    }
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_pairs_one(data, size);
    return 0;
}
#endif
