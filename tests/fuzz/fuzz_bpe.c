// fuzz_bpe.c: libFuzzer target for the BPE merges loader (bpe_from_text, seq/bpe.h), the
// text a translator's checkpoint carries its subword merges in.
//
// Returns 1 when the loader accepted the input, 0 when it refused it. Input: the whole
// merges text, parsed under the name "in.bpe". Properties: a failure is one line naming
// the file and leaves an empty model; a success has the four specials and "</w>" first, an
// alphabet of single valid UTF-8 characters, vocabulary strings all distinct, each merge's
// new symbol the join of its two (and a vocabulary entry), its text form canonical (written
// and read back, the same text again, the same vocabulary); segmenting the alphabet and the
// merges' symbols as text gives pieces that join back to that text and ids in range, and
// decoding the ids gives it back too (every character is known).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/text_escape.h"
#include "seq/bpe.h"
#include "tests/fuzz/fuzz_util.h"

// Text of the alphabet's characters and the merges' symbols ("</w>" cut off), one word each
// (a symbol holding "</w>" elsewhere is left out: it does not round-trip, see seq/bpe.h).
static char *fuzz_bpe_words(const Bpe *b) {
    size_t total = 1;
    for (int i = BPE_N_SPECIAL + 1; i < b->n_vocab; i++) total += strlen(b->vocab[i]) + 1;
    char *s = xmalloc(total), *p = s;
    size_t eow = strlen(BPE_EOW);
    for (int i = BPE_N_SPECIAL + 1; i < b->n_vocab; i++) {
        size_t n = strlen(b->vocab[i]);
        if (n > eow && strcmp(b->vocab[i] + n - eow, BPE_EOW) == 0) n -= eow;
        char *w = strstr(b->vocab[i], BPE_EOW);
        if (w && (size_t)(w - b->vocab[i]) < n) continue;
        if (n == 0) continue;
        if (p != s) *p++ = ' ';
        memcpy(p, b->vocab[i], n);
        p += n;
    }
    *p = 0;
    return s;
}

static void fuzz_bpe_check(const Bpe *b) {
    fuzz_require(b->n_vocab >= BPE_N_SPECIAL + 1 + b->n_alphabet, "%d symbols", b->n_vocab);
    fuzz_require(strcmp(b->vocab[BPE_UNK], "<unk>") == 0 && strcmp(b->vocab[BPE_N_SPECIAL], BPE_EOW) == 0,
                 "specials");
    for (int i = 0; i < b->n_alphabet; i++) {
        const char *c = b->vocab[BPE_N_SPECIAL + 1 + i];
        fuzz_require(c[0] && text_is_utf8(c), "alphabet entry %d", i);
    }
    for (int i = BPE_N_SPECIAL; i < b->n_vocab; i++) {
        fuzz_require(bpe_piece_id(b, b->vocab[i]) == i, "vocab %d '%s' not found as itself", i, b->vocab[i]);
    }
    for (int k = 0; k < b->n_merges; k++) {
        const char *l = b->vocab[b->merge_left[k] + BPE_N_SPECIAL];
        const char *r = b->vocab[b->merge_right[k] + BPE_N_SPECIAL];
        const char *o = b->vocab[b->merge_out[k] + BPE_N_SPECIAL];
        size_t nl = strlen(l);
        fuzz_require(strncmp(o, l, nl) == 0 && strcmp(o + nl, r) == 0, "merge %d: %s + %s -> %s", k, l, r, o);
    }
    char *text = bpe_to_text(b);
    Bpe c;
    Error err = {{0}};
    fuzz_require(bpe_from_text(&c, text, strlen(text), "again.bpe", &err) == 0, "own text refused: %s", err.msg);
    char *again = bpe_to_text(&c);
    fuzz_require(strcmp(text, again) == 0, "text form not canonical");
    fuzz_require(c.n_vocab == b->n_vocab && c.n_merges == b->n_merges, "reloaded model differs");
    for (int i = 0; i < b->n_vocab; i++) fuzz_require(strcmp(b->vocab[i], c.vocab[i]) == 0, "vocab %d", i);
    free(again);
    free(text);
    bpe_free(&c);
    char *words = fuzz_bpe_words(b);
    char **pieces;
    int n;
    bpe_segment(b, words, &pieces, &n);
    char *joined = bpe_join(pieces, n);
    fuzz_require(strcmp(joined, words) == 0, "pieces join to '%s', not '%s'", joined, words);
    free(joined);
    bpe_pieces_free(pieces, n);
    int *ids;
    bpe_encode(b, words, &ids, &n);
    for (int i = 0; i < n; i++) fuzz_require(ids[i] > BPE_UNK && ids[i] < b->n_vocab, "id %d", ids[i]);
    char *decoded = bpe_decode(b, ids, n);
    fuzz_require(strcmp(decoded, words) == 0, "ids decode to '%s', not '%s'", decoded, words);
    free(decoded);
    free(ids);
    free(words);
}

int fuzz_bpe_one(const uint8_t *data, size_t size) {
    Bpe b;
    Error err = {{0}};
    int rc = bpe_from_text(&b, (const char *)data, size, "in.bpe", &err);
    if (rc != 0) {
        fuzz_require(rc == -1, "returned %d", rc);
        fuzz_require_error(&err, "in.bpe");
        fuzz_require(b.n_vocab == 0 && b.vocab == NULL && b.n_merges == 0, "failed load left a model behind");
        return 0;
    }
    fuzz_bpe_check(&b);
    bpe_free(&b);
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_bpe_one(data, size);
    return 0;
}
#endif
