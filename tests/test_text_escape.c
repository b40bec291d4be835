// test_text_escape.c: core/text_escape.h, the one set of rules by which outputs write file
// names. Round trips: the field form and the escaped name form of any bytes unescape to
// the same bytes (hand-picked awkward names and 20,000 random byte strings); the field
// form is one line of valid UTF-8 without tabs; the name form leaves valid UTF-8 alone;
// JSON strings and name members parse with cJSON to the name form and are valid UTF-8
// (checked by tests/support/utf8_check.h, not the module's own decoder); malformed escapes are refused;
// messages (core/error.h) are escaped once, where they are made.
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "core/text_escape.h"
#include "tests/support/test.h"
#include "tests/support/utf8_check.h"

static int valid_utf8(const unsigned char *s, size_t n) { return utf8_check(s, n, NULL); }

// Awkward names (NUL-terminated, so no NUL inside): Latin-1, newline, tab, CR, backslash
// sequences that look like escapes, control bytes, a lone continuation byte, an overlong
// '/', a surrogate, a code point past U+10FFFF, a truncated sequence at the end, and
// valid multi-byte text.
static const char *const NAMES[] = {
    "plain.png",        "caf\xe9.png",         "new\nline.png",       "tab\there.png",
    "cr\rhere.png",     "back\\slash.png",     "looks\\x41escaped",   "\\n not a newline",
    "bell\x07\x7f.png", "lone\x80.png",        "over\xc0\xaf.png",    "sur\xed\xa0\x80.png",
    "big\xf4\x90\x80\x80", "cut\xe2\x82",      "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x90\xb6.png",
    "-leading dash.png", " spaces  .png",      "\xff\xfe",            "",
};
#define N_NAMES ((int)(sizeof NAMES / sizeof NAMES[0]))

static void expect_round_trip(const char *name) {
    char *field = text_field(name);
    EXPECT(valid_utf8((const unsigned char *)field, strlen(field)), "field form not UTF-8");
    EXPECT(!strchr(field, '\n') && !strchr(field, '\t') && !strchr(field, '\r'),
           "field form holds a line or field break: %s", field);
    char *back;
    size_t len;
    EXPECT(text_unescape(field, &back, &len) == 0, "field form does not unescape: %s", field);
    EXPECT(back && len == strlen(name) && memcmp(back, name, len) == 0,
           "field round trip changed the name: %s", field);
    free(back);
    free(field);

    int escaped;
    char *form = text_name(name, &escaped);
    EXPECT(valid_utf8((const unsigned char *)form, strlen(form)), "name form not UTF-8");
    EXPECT(escaped == !valid_utf8((const unsigned char *)name, strlen(name)),
           "escaped %d for a name that is %svalid UTF-8", escaped, escaped ? "" : "not ");
    if (!escaped) {
        EXPECT(strcmp(form, name) == 0, "a valid UTF-8 name was changed: %s", form);
    } else {
        EXPECT(text_unescape(form, &back, &len) == 0, "name form does not unescape: %s", form);
        EXPECT(back && len == strlen(name) && memcmp(back, name, len) == 0,
               "name round trip changed the name: %s", form);
        free(back);
    }
    free(form);
}

static void test_awkward_names_round_trip(void) {
    for (int i = 0; i < N_NAMES; i++) expect_round_trip(NAMES[i]);
}

static void test_random_bytes_round_trip(void) {
    Rng rng;
    rng_seed(&rng, 23);
    char buf[40];
    for (int t = 0; t < 20000; t++) {
        int n = (int)((uint32_t)rng_u64(&rng) % 32);
        for (int k = 0; k < n; k++) {
            // Mostly bytes where escapes and UTF-8 lead/continuation bytes live.
            uint32_t r = (uint32_t)rng_u64(&rng);
            static const char pick[] = "\\xtn\t\n\r a.";
            buf[k] = (r & 1) ? (char)(1 + (r >> 8) % 255) : pick[(r >> 8) % (sizeof pick - 1)];
        }
        buf[n] = 0;
        expect_round_trip(buf);
    }
}

static void test_field_form_examples(void) {
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a\tb.png", "a\\tb.png"},       {"c:\\x.png", "c:\\\\x.png"},
        {"new\nline", "new\\nline"},     {"cr\r", "cr\\r"},
        {"caf\xe9", "caf\\xe9"},         {"bell\x07", "bell\\x07"},
        {"del\x7f", "del\\x7f"},         {"caf\xc3\xa9", "caf\xc3\xa9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *f = text_field(cases[i].in);
        EXPECT(strcmp(f, cases[i].out) == 0, "field of case %zu: %s, expected %s", i, f, cases[i].out);
        free(f);
    }
    // The name form escapes only names that are not UTF-8, and then backslashes too.
    char *n = text_name("a\\b\xe9\n", NULL);
    EXPECT(strcmp(n, "a\\\\b\\xe9\n") == 0, "name form: %s", n);
    free(n);
    char *h = text_hex("caf\xe9.png");
    EXPECT(strcmp(h, "636166e92e706e67") == 0, "hex: %s", h);
    free(h);
}

// Into a fixed buffer: cut before an escape or a character that does not fit whole; in
// place: the same text.
static void test_field_into_cuts_whole_units(void) {
    char buf[8];
    EXPECT(!strcmp(text_field_into(buf, sizeof buf, "ab\ncd"), "ab\\ncd"), "%s", buf);
    EXPECT(!strcmp(text_field_into(buf, sizeof buf, "abcd\xe9"), "abcd"), "\\xNN cut: %s", buf);
    EXPECT(!strcmp(text_field_into(buf, sizeof buf, "abcde\xc3\xa9" "f"), "abcde\xc3\xa9"), "UTF-8: %s", buf);
    EXPECT(!strcmp(text_field_into(buf, sizeof buf, "abcdef\xc3\xa9"), "abcdef"), "UTF-8 cut: %s", buf);
    EXPECT(!strcmp(text_field_into(buf, 1, "abc"), ""), "cap 1: %s", buf);
    char msg[32] = "f.bin: tensor 'a\nb\t\xff'";
    text_field_in_place(msg, sizeof msg);
    EXPECT(!strcmp(msg, "f.bin: tensor 'a\\nb\\t\\xff'"), "in place: %s", msg);
}

static void test_malformed_escapes_refused(void) {
    static const char *const bad[] = {"\\", "a\\q", "\\x", "\\x4", "\\xg0", "end\\"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = (char *)1;
        EXPECT(text_unescape(bad[i], &out, NULL) == -1 && out == NULL, "accepted %s", bad[i]);
    }
    char *out;
    size_t len;
    EXPECT(text_unescape("a\\x00b\\X", &out, &len) == -1, "\\X is not an escape");
    EXPECT(text_unescape("a\\x00b\\x4A", &out, &len) == 0 && len == 4 && memcmp(out, "a\0bJ", 4) == 0,
           "\\x00 and upper-case hex");
    free(out);
}

// Writes through fp into a string (open_memstream).
static char *json_of(const char *key, const char *name) {
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    fputc('{', fp);
    if (key) {
        text_json_name(fp, key, name);
    } else {
        fputs("\"s\": ", fp);
        text_json_string(fp, name);
    }
    fputc('}', fp);
    fclose(fp);
    return buf;
}

static void test_json_parses_to_the_name_form(void) {
    for (int i = 0; i < N_NAMES; i++) {
        for (int member = 0; member < 2; member++) {
            char *js = json_of(member ? "image_id" : NULL, NAMES[i]);
            EXPECT(valid_utf8((const unsigned char *)js, strlen(js)), "JSON not UTF-8 for name %d", i);
            cJSON *doc = cJSON_Parse(js);
            EXPECT(doc != NULL, "JSON does not parse: %s", js);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, member ? "image_id" : "s");
            EXPECT(cJSON_IsString(v), "no string in %s", js);
            int escaped;
            char *form = text_name(NAMES[i], &escaped);
            if (cJSON_IsString(v))
                EXPECT(strcmp(v->valuestring, form) == 0, "parsed '%s', name form '%s'", v->valuestring, form);
            const cJSON *hex = cJSON_GetObjectItemCaseSensitive(doc, "image_id_hex");
            if (member) {
                EXPECT(!hex == !escaped, "image_id_hex %s for name %d", hex ? "present" : "absent", i);
                if (hex) {
                    char *want = text_hex(NAMES[i]);
                    EXPECT(cJSON_IsString(hex) && strcmp(hex->valuestring, want) == 0, "hex of name %d", i);
                    free(want);
                }
            }
            free(form);
            cJSON_Delete(doc);
            free(js);
        }
    }
}

// Messages are escaped once, where they are made (core/error.h): error_set writes the
// field form; error_prefix and error_wrap escape only the text they add; text_write_linef
// escapes a line it formats.
static void test_messages_escaped_once(void) {
    Error e, inner;
    error_set(&e, "%s: truncated", "dir\nx\\y\xe9.bin");
    EXPECT(!strcmp(e.msg, "dir\\nx\\\\y\\xe9.bin: truncated"), "error_set: %s", e.msg);
    error_prefix(&e, "load %s", "a\tb");
    EXPECT(!strcmp(e.msg, "load a\\tb: dir\\nx\\\\y\\xe9.bin: truncated"), "error_prefix: %s", e.msg);
    error_set(&inner, "bad \\ value");
    error_wrap(&e, &inner, "%s", "m\n.st");
    EXPECT(!strcmp(e.msg, "m\\n.st: bad \\\\ value"), "error_wrap: %s", e.msg);
    // A prefix that leaves room for 497 bytes of an old message whose escape \xe9 spans
    // bytes 495-498: the message is cut before the escape, not inside it.
    char longest[500];
    memset(longest, 'a', sizeof longest - 1);
    longest[495] = (char)0xe9;
    longest[sizeof longest - 1] = 0;
    error_set(&e, "%s", longest);
    EXPECT(strlen(e.msg) == 502 && strstr(e.msg, "a\\xe9aaa"), "error_set of a long message: %zu", strlen(e.msg));
    error_prefix(&e, "%s", "twelve chars");
    EXPECT(!strncmp(e.msg, "twelve chars: aaa", 17) && !strchr(e.msg, '\\') && strlen(e.msg) == 12 + 2 + 495,
           "cut inside an escape: ...%s", e.msg + 500);
    error_wrap(&inner, &inner, "again");  // inner may be err's own Error
    EXPECT(!strcmp(inner.msg, "again: bad \\\\ value"), "error_wrap in place: %s", inner.msg);
    FILE *fp = tmpfile();
    EXPECT(fp != NULL, "tmpfile");
    if (!fp) return;
    text_write_linef(fp, "wrote %s/%d", "o\nut\\", 7);
    rewind(fp);
    char line[64] = "";
    EXPECT(fgets(line, sizeof line, fp) && !strcmp(line, "wrote o\\nut\\\\/7\n"), "linef: %s", line);
    fclose(fp);
}

int main(void) {
    RUN(test_awkward_names_round_trip);
    RUN(test_random_bytes_round_trip);
    RUN(test_field_form_examples);
    RUN(test_field_into_cuts_whole_units);
    RUN(test_malformed_escapes_refused);
    RUN(test_json_parses_to_the_name_form);
    RUN(test_messages_escaped_once);
    return test_summary();
}
