// test_core_sha256.c: core/sha256.h against the FIPS 180-4 / NIST example digests, the same
// digests fed in uneven pieces, and a file's digest.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sha256.h"
#include "tests/support/test.h"

static void digest_hex(char *hex, const void *data, size_t len) {
    Sha256 s;
    unsigned char d[SHA256_DIGEST_BYTES];
    sha256_init(&s);
    sha256_update(&s, data, len);
    sha256_final(&s, d);
    sha256_hex(hex, d);
}

// The NIST examples (FIPS 180-4 appendix / "SHA-256 example" sheets): one block, empty,
// two blocks (448 bits: the padding needs a block of its own), 896 bits.
static void test_sha256_nist_vectors(void) {
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char hex[SHA256_HEX_CHARS + 1];
        digest_hex(hex, v[i].msg, strlen(v[i].msg));
        EXPECT(strcmp(hex, v[i].hex) == 0, "\"%s\": %s, expected %s", v[i].msg, hex, v[i].hex);
    }
}

// One million 'a', fed in pieces of varying length (1..97 bytes) so every partial-block
// path of sha256_update runs.
static void test_sha256_million_a_in_pieces(void) {
    char chunk[97];
    memset(chunk, 'a', sizeof chunk);
    Sha256 s;
    sha256_init(&s);
    size_t left = 1000000, k = 0;
    while (left) {
        size_t n = 1 + (k++ * 37) % sizeof chunk;
        if (n > left) n = left;
        sha256_update(&s, chunk, n);
        left -= n;
    }
    unsigned char d[SHA256_DIGEST_BYTES];
    char hex[SHA256_HEX_CHARS + 1];
    sha256_final(&s, d);
    sha256_hex(hex, d);
    EXPECT(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
           "%s", hex);
}

// Every length 0..200 gives the same digest whole and split at every point.
static void test_sha256_split_agrees(void) {
    unsigned char msg[200];
    for (int i = 0; i < 200; i++) msg[i] = (unsigned char)(i * 131 + 7);
    int bad = 0;
    for (int len = 0; len <= 200 && !bad; len++) {
        char whole[SHA256_HEX_CHARS + 1];
        digest_hex(whole, msg, (size_t)len);
        for (int cut = 0; cut <= len; cut += 13) {
            Sha256 s;
            unsigned char d[SHA256_DIGEST_BYTES];
            char hex[SHA256_HEX_CHARS + 1];
            sha256_init(&s);
            sha256_update(&s, msg, (size_t)cut);
            sha256_update(&s, msg + cut, (size_t)(len - cut));
            sha256_final(&s, d);
            sha256_hex(hex, d);
            if (strcmp(hex, whole) != 0) bad = len;
        }
    }
    EXPECT(!bad, "length %d: split digest differs", bad);
}

static void test_sha256_file(void) {
    char path[] = "/tmp/attend_sha256_XXXXXX";
    int fd = mkstemp(path);
    EXPECT(fd >= 0);
    if (fd < 0) return;
    EXPECT(write(fd, "abc", 3) == 3);
    close(fd);
    unsigned char d[SHA256_DIGEST_BYTES];
    char hex[SHA256_HEX_CHARS + 1];
    Error err = {{0}};
    EXPECT(sha256_file(d, path, &err) == 0, "%s", err.msg);
    sha256_hex(hex, d);
    EXPECT(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
           "%s", hex);
    unlink(path);
    EXPECT(sha256_file(d, path, &err) == -1);
    EXPECT(strstr(err.msg, path) != NULL, "'%s'", err.msg);
}

int main(void) {
    RUN(test_sha256_nist_vectors);
    RUN(test_sha256_million_a_in_pieces);
    RUN(test_sha256_split_agrees);
    RUN(test_sha256_file);
    return test_summary();
}
