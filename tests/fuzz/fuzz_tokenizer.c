// fuzz_tokenizer.c: libFuzzer target for the caption tokeniser (seq/tokenizer.h).
//
// Returns 1 when the tokeniser accepted the input, 0 when it refused it.
// Input: one byte giving max_tokens (0..63), then the text (copied and NUL-terminated,
// so an embedded NUL ends it as it would in a C string). Properties: invalid UTF-8
// fails with one line "invalid UTF-8 at byte N" and N is where utf8_valid says; a success
// keeps at most max_tokens tokens, each non-empty, valid UTF-8, without ASCII white space
// or upper-case ASCII, at most 5 bytes per byte of the text; tokens_join gives the tokens
// separated by single spaces.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_tokenizer_one(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int max_tokens = data[0] & 63;
    char *text = xmalloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    Tokens t;
    Error err = {{0}};
    long bad = -1;
    int valid = utf8_valid(text, &bad);
    int rc = tokenize(&t, text, max_tokens, &err);
    if (!valid) {
        fuzz_require(rc == -1, "invalid UTF-8 accepted");
        fuzz_require_error(&err, NULL);
        char want[64];
        snprintf(want, sizeof want, "invalid UTF-8 at byte %ld", bad);
        fuzz_require(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
        fuzz_require(t.n == 0 && t.tok == NULL, "failed tokenize left tokens");
        tokens_free(&t);
        free(text);
        return 0;
    }
    fuzz_require(rc == 0, "valid UTF-8 refused: %s", err.msg);
    fuzz_require(t.n >= 0 && t.n <= max_tokens && t.dropped >= 0, "n %d dropped %d max %d", t.n,
                 t.dropped, max_tokens);
    fuzz_require(t.dropped == 0 || t.n == max_tokens, "dropped tokens before the cap");
    size_t total = 0;
    for (int i = 0; i < t.n; i++) {
        const char *w = t.tok[i];
        size_t len = strlen(w);
        fuzz_require(len > 0, "empty token %d", i);
        // PTB's normalisation can grow a token ("(" -> "-lrb-", U+00A2 -> "cents"), never
        // by more than 5 bytes a byte.
        fuzz_require(len <= 5 * size, "token of %zu bytes from a text of %zu", len, size);
        fuzz_require(utf8_valid(w, NULL), "token %d is not valid UTF-8", i);
        for (size_t k = 0; k < len; k++) {
            unsigned char c = (unsigned char)w[k];
            fuzz_require(!(c == ' ' || (c >= '\t' && c <= '\r')), "white space in token %d", i);
            fuzz_require(!(c >= 'A' && c <= 'Z'), "upper case in token %d", i);
        }
        total += len + 1;
    }
    char *joined = tokens_join(&t);
    fuzz_require(strlen(joined) + 1 == (t.n ? total : 1), "joined length");
    free(joined);
    tokens_free(&t);
    free(text);
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_tokenizer_one(data, size);
    return 0;
}
#endif
