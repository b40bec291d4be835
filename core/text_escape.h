// text_escape.h: how every output writes a file name (or any text that did not come from
// us) so that the output stays well-formed whatever bytes the name holds: a POSIX name is
// any bytes but '/' and NUL, so it may hold a newline, a tab, a backslash, control
// characters or bytes that are not UTF-8.
//
// Three forms, one notation. The escapes are \\ (a backslash), \t, \n, \r and \xNN (two
// lower-case hex digits: one byte); text_unescape reverses all of them, so each form gives
// the original bytes back exactly.
//
//   field form (TSV fields, the lines of messages on stderr): a backslash is written \\,
//     tab \t, newline \n, carriage return \r, every other control character (0x00-0x1F,
//     0x7F) and every byte that is not part of valid UTF-8 \xNN; all else as it is. The
//     result is one line of valid UTF-8 without tabs. Example: the name "a<TAB>b.png" is
//     written "a\tb.png", "c:\x.png" is "c:\\x.png".
//
//   name form (the string a JSON output gives for a file name, e.g. "image_id"): a name
//     that is valid UTF-8 is written as it is (JSON's own escapes carry its newlines and
//     tabs), so it matches the same name in a captions file; a name that is not valid UTF-8
//     is written in the escape notation: a backslash as \\, each byte not part of valid
//     UTF-8 as \xNN, all else as it is (after JSON decoding: "caf\xe9.png" for the Latin-1
//     name caf<0xE9>.png), and beside it the JSON object gets a second member KEY_hex
//     holding the name's bytes in lower-case hex ("image_id_hex": "636166e92e706e67"), so a
//     reader can tell escaped names from names that merely contain a backslash, and get the
//     bytes back without parsing escapes (Python: bytes.fromhex(item["image_id_hex"])).
//
//   JSON strings (text_json_string): the name form of the text with JSON's escapes for ",
//     \ and control characters: always valid UTF-8 and valid JSON. (Captions and other
//     text we made are valid UTF-8, so they are written as they are.)
//
// UTF-8 here is strict (RFC 3629): no overlong forms, no surrogates, nothing above
// U+10FFFF.
//
// Messages are escaped at one layer only, where they are made: error_set and error_prefix
// (core/error.h) and caption_set_warn (datasets/captions.h) write the field form, so an
// Error's message or a warning is one line of valid UTF-8 from the reader that made it on
// (the fuzz targets check that), and the programs print it as it is, prefixed with plain
// text of their own ("caption train: %s"). A line a program formats itself from a path
// (status lines, "wrote DIR/...") goes through text_write_linef. A made message is never
// formatted into another through "%s" (its backslashes would be escaped twice): it is
// wrapped with error_wrap / error_prefix or caption_set_warn_error, or printed beside the
// escaped parts with text_write_field. So a backslash in a name shows as \ (one escape)
// in every message, whichever layer made it.
#ifndef CORE_TEXT_ESCAPE_H
#define CORE_TEXT_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

// Length (1..4) of the valid UTF-8 sequence starting at s (NUL-terminated), or 0 when the
// bytes there are not one.
int text_utf8_seq_len(const unsigned char *s);
// 1 when the NUL-terminated s is valid UTF-8.
int text_is_utf8(const char *s);

// The field form of s (above), newly allocated.
char *text_field(const char *s);
// Writes the field form of s to fp.
void text_write_field(FILE *fp, const char *s);
// The field form of s into buf (cap >= 1 bytes, NUL-terminated), cut before an escape or a
// character that does not fit whole; returns buf.
char *text_field_into(char *buf, size_t cap, const char *s);
// Rewrites msg (a buffer of cap bytes) as its field form, in place, cut to fit: a message
// quoting names from a file (safetensors tensor names, caption file names) stays one line
// of valid UTF-8.
void text_field_in_place(char *msg, size_t cap);
// Writes a message line: the field form of msg, then a newline (so a message naming a file
// stays one line whatever the name holds).
void text_write_line(FILE *fp, const char *msg);
// The same for a formatted message (no trailing newline in fmt): how the programs print a
// status or error line that names a path or a name read from a file. Never give it an
// Error's message or a CaptionSet warning: those are in the field form already (below).
void text_write_linef(FILE *fp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The name form of name (above), newly allocated; *escaped (may be NULL) is 1 when the name
// was not valid UTF-8 and so was escaped.
char *text_name(const char *name, int *escaped);
// Writes s as a JSON string (quotes included), valid UTF-8 always (above).
void text_json_string(FILE *fp, const char *s);
// Writes the JSON members `"key": NAME` for a file name in the name form and, when it was
// escaped, `, "key_hex": "HEX"` (no leading or trailing comma).
void text_json_name(FILE *fp, const char *key, const char *name);

// Reverses the escapes \\ \t \n \r \xNN in s: *out (newly allocated, NUL-terminated) and
// *len (its bytes; a \x00 escape gives an embedded NUL). Other characters are copied. -1 for
// a backslash followed by anything else or by \x without two hex digits (*out NULL).
int text_unescape(const char *s, char **out, size_t *len);

// The bytes of s in lower-case hex, newly allocated.
char *text_hex(const char *s);

#endif
