// html_check.c: see html_check.h.
#include "tests/support/html_check.h"

#include <ctype.h>
#include <gif_lib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/error.h"
#include "vision/image.h"

#define MAX_DEPTH 256
#define MAX_NAME 32

static const char *const VOID_ELEMENTS[] = {"area", "base", "br", "col", "embed", "hr", "img",
                                            "input", "link", "meta", "source", "track", "wbr", NULL};
static const char *const NAMED_REFS[] = {"amp", "lt", "gt", "quot", "apos", "nbsp", "middot",
                                         "times", "larr", "rarr", "uarr", "darr", "le", "ge",
                                         "ndash", "mdash", "hellip", "copy", "plusmn", "deg",
                                         "asymp", NULL};
// The characters the named references above stand for, in UTF-8, in the same order.
static const char *const NAMED_TEXT[] = {"&", "<", ">", "\"", "'", "\xC2\xA0", "\xC2\xB7",
                                         "\xC3\x97", "\xE2\x86\x90", "\xE2\x86\x92", "\xE2\x86\x91",
                                         "\xE2\x86\x93", "\xE2\x89\xA4", "\xE2\x89\xA5",
                                         "\xE2\x80\x93", "\xE2\x80\x94", "\xE2\x80\xA6",
                                         "\xC2\xA9", "\xC2\xB1", "\xC2\xB0", "\xE2\x89\x88"};

typedef struct {
    HtmlCheck *c;
    const char *text, *p;
    char stack[MAX_DEPTH][MAX_NAME];
    int depth;
    int seen_html, seen_head, seen_body;
    char **ids, **fragments;
    int n_ids, n_fragments;
} Parser;

static int line_of(const Parser *ps, const char *at) {
    int line = 1;
    for (const char *q = ps->text; q < at; q++) line += *q == '\n';
    return line;
}

__attribute__((format(printf, 3, 4))) static int fail(Parser *ps, const char *at, const char *fmt, ...) {
    if (ps->c->msg[0]) return -1;
    int n = snprintf(ps->c->msg, sizeof ps->c->msg, "line %d: ", line_of(ps, at));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->c->msg + n, sizeof ps->c->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static void push_string(char ***list, int *n, const char *s, size_t len) {
    *list = xrealloc(*list, (size_t)(*n + 1) * sizeof(char *));
    char *copy = xmalloc(len + 1);
    memcpy(copy, s, len);
    copy[len] = 0;
    (*list)[(*n)++] = copy;
}

static int is_void(const char *name) {
    for (int i = 0; VOID_ELEMENTS[i]; i++)
        if (!strcmp(name, VOID_ELEMENTS[i])) return 1;
    return 0;
}

// Length of the valid UTF-8 sequence at s, 0 when invalid.
static int utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4) return 0;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    if ((n == 3 && c == 0xE0 && s[1] < 0xA0) || (n == 3 && c == 0xED && s[1] >= 0xA0) ||
        (n == 4 && c == 0xF0 && s[1] < 0x90) || (n == 4 && c == 0xF4 && s[1] >= 0x90))
        return 0;
    return n;
}

// Checks the character reference at s ('&'); returns its length, 0 when invalid. The
// decoded text goes to out (at least 5 bytes) when not NULL.
static int char_ref(const char *s, char *out) {
    const char *q = s + 1;
    if (*q == '#') {
        q++;
        int hex = *q == 'x' || *q == 'X';
        if (hex) q++;
        unsigned long v = 0;
        int digits = 0;
        while (hex ? isxdigit((unsigned char)*q) : isdigit((unsigned char)*q)) {
            v = v * (hex ? 16 : 10) + (unsigned long)(isdigit((unsigned char)*q) ? *q - '0' : (tolower((unsigned char)*q) - 'a' + 10));
            if (v > 0x10FFFF || ++digits > 8) return 0;
            q++;
        }
        if (!digits || *q != ';' || v == 0 || (v >= 0xD800 && v <= 0xDFFF)) return 0;
        if (out) {
            if (v < 0x80) out[0] = (char)v, out[1] = 0;
            else if (v < 0x800) out[0] = (char)(0xC0 | v >> 6), out[1] = (char)(0x80 | (v & 63)), out[2] = 0;
            else if (v < 0x10000)
                out[0] = (char)(0xE0 | v >> 12), out[1] = (char)(0x80 | ((v >> 6) & 63)), out[2] = (char)(0x80 | (v & 63)), out[3] = 0;
            else
                out[0] = (char)(0xF0 | v >> 18), out[1] = (char)(0x80 | ((v >> 12) & 63)),
                out[2] = (char)(0x80 | ((v >> 6) & 63)), out[3] = (char)(0x80 | (v & 63)), out[4] = 0;
        }
        return (int)(q - s) + 1;
    }
    for (int i = 0; NAMED_REFS[i]; i++) {
        size_t len = strlen(NAMED_REFS[i]);
        if (!strncmp(q, NAMED_REFS[i], len) && q[len] == ';') {
            if (out) strcpy(out, NAMED_TEXT[i]);
            return (int)len + 2;
        }
    }
    return 0;
}

// Checks text up to end for bytes, '&' and '<' rules (attribute values: in_attr).
static int check_text(Parser *ps, const char *s, const char *end, int in_attr) {
    for (const char *q = s; q < end;) {
        int n = utf8_len((const unsigned char *)q);
        if (n == 0) return fail(ps, q, "invalid UTF-8 byte 0x%02X", (unsigned char)*q);
        if (*q == '&') {
            int len = char_ref(q, NULL);
            if (!len) return fail(ps, q, "'&' that is not a character reference: \"%.12s\"", q);
            q += len;
            continue;
        }
        if (*q == '<' && in_attr) return fail(ps, q, "'<' inside an attribute value");
        if ((unsigned char)*q < 0x20 && *q != '\n' && *q != '\t' && *q != '\r')
            return fail(ps, q, "control character 0x%02X", (unsigned char)*q);
        q += n;
    }
    return 0;
}

// value (len) with character references decoded, malloc'd.
static char *decode_refs(const char *s, size_t len) {
    char *out = xmalloc(len + 1);
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        char buf[8];
        int n = s[i] == '&' ? char_ref(s + i, buf) : 0;
        if (n) {
            size_t bl = strlen(buf);
            memcpy(out + k, buf, bl);  // a reference is never shorter than its text
            k += bl;
            i += (size_t)n;
        } else {
            out[k++] = s[i++];
        }
    }
    out[k] = 0;
    return out;
}

static int is_space(char ch) { return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'; }

static int parse_name(const char **q, char *name, int upper_ok) {
    int n = 0;
    if (!(**q >= 'a' && **q <= 'z')) return -1;
    while ((**q >= 'a' && **q <= 'z') || (**q >= '0' && **q <= '9') || **q == '-') {
        if (n + 1 >= MAX_NAME) return -1;
        name[n++] = *(*q)++;
    }
    name[n] = 0;
    (void)upper_ok;
    return 0;
}

// The attributes of a start tag, from q (after the name) to '>' or "/>".
static int parse_attributes(Parser *ps, const char **qp, const char *tag, int *self_closing) {
    const char *q = *qp;
    char seen[32][MAX_NAME];
    int n_seen = 0;
    *self_closing = 0;
    for (;;) {
        int had_space = 0;
        while (is_space(*q)) q++, had_space = 1;
        if (*q == '>') break;
        if (q[0] == '/' && q[1] == '>') {
            *self_closing = 1;
            q++;
            break;
        }
        if (!*q) return fail(ps, q, "<%s> not closed before the end", tag);
        if (!had_space) return fail(ps, q, "<%s>: attributes must be separated by spaces", tag);
        char name[MAX_NAME];
        const char *at = q;
        if (parse_name(&q, name, 0)) return fail(ps, at, "<%s>: bad attribute name \"%.12s\" (lower case letters, digits, '-')", tag, at);
        for (int i = 0; i < n_seen; i++)
            if (!strcmp(seen[i], name)) return fail(ps, at, "<%s>: attribute %s given twice", tag, name);
        if (n_seen < 32) strcpy(seen[n_seen++], name);
        if (*q != '=') return fail(ps, q, "<%s>: attribute %s has no =\"value\"", tag, name);
        q++;
        char quote = *q;
        if (quote != '"' && quote != '\'') return fail(ps, q, "<%s>: value of %s is not quoted", tag, name);
        const char *v = ++q, *end = strchr(v, quote);
        if (!end) return fail(ps, v, "<%s>: value of %s not closed", tag, name);
        if (check_text(ps, v, end, 1)) return -1;
        char *decoded = decode_refs(v, (size_t)(end - v));
        if (!strcmp(name, "id")) {
            for (int i = 0; i < ps->n_ids; i++)
                if (!strcmp(ps->ids[i], decoded)) {
                    free(decoded);
                    return fail(ps, v, "id \"%s\" used twice", ps->ids[i]);
                }
            push_string(&ps->ids, &ps->n_ids, decoded, strlen(decoded));
        }
        if (!strcmp(name, "href") || !strcmp(name, "src")) {
            if (decoded[0] == '#') push_string(&ps->fragments, &ps->n_fragments, decoded + 1, strlen(decoded + 1));
            else push_string(&ps->c->links, &ps->c->n_links, decoded, strlen(decoded));
        }
        free(decoded);
        q = end + 1;
    }
    *qp = q + 1;
    return 0;
}

// Where elements may appear: <html> first and once; <head> then <body> directly in it.
static int check_structure(Parser *ps, const char *at, const char *name) {
    if (ps->depth == 0) {
        if (strcmp(name, "html") || ps->seen_html) return fail(ps, at, "<%s> outside <html>", name);
        ps->seen_html = 1;
    } else if (ps->depth == 1) {
        if (!strcmp(name, "head") && !ps->seen_head && !ps->seen_body) ps->seen_head = 1;
        else if (!strcmp(name, "body") && ps->seen_head && !ps->seen_body) ps->seen_body = 1;
        else return fail(ps, at, "<%s> directly in <html> (only <head>, then <body>)", name);
    } else if (!strcmp(name, "html") || !strcmp(name, "head") || !strcmp(name, "body")) {
        return fail(ps, at, "<%s> nested inside <%s>", name, ps->stack[ps->depth - 1]);
    }
    return 0;
}

static int parse_tag(Parser *ps) {
    const char *at = ps->p, *q = ps->p + 1;
    char name[MAX_NAME];
    if (*q == '/') {
        q++;
        if (parse_name(&q, name, 0)) return fail(ps, at, "bad end tag \"%.12s\"", at);
        while (is_space(*q)) q++;
        if (*q != '>') return fail(ps, q, "</%s> not closed by '>'", name);
        if (is_void(name)) return fail(ps, at, "</%s>: a void element has no end tag", name);
        if (ps->depth == 0 || strcmp(ps->stack[ps->depth - 1], name))
            return fail(ps, at, "</%s> does not close <%s>", name, ps->depth ? ps->stack[ps->depth - 1] : "(nothing open)");
        ps->depth--;
        ps->p = q + 1;
        return 0;
    }
    if (parse_name(&q, name, 0)) return fail(ps, at, "bad tag \"%.12s\" (lower-case names only)", at);
    if (check_structure(ps, at, name)) return -1;
    int self_closing;
    if (parse_attributes(ps, &q, name, &self_closing)) return -1;
    ps->c->n_elements++;
    if (!strcmp(name, "img")) ps->c->n_images++;
    if (self_closing && !is_void(name)) return fail(ps, at, "<%s/>: only void elements may close themselves", name);
    ps->p = q;
    if (is_void(name)) return 0;
    if (!strcmp(name, "script") || !strcmp(name, "style")) {
        char end_tag[MAX_NAME + 3];
        snprintf(end_tag, sizeof end_tag, "</%s>", name);
        const char *end = strstr(q, end_tag);
        if (!end) return fail(ps, at, "<%s> never closed", name);
        const char *bad = NULL;
        for (const char *r = q; r < end && !bad; r += utf8_len((const unsigned char *)r) ? utf8_len((const unsigned char *)r) : 1)
            if (!utf8_len((const unsigned char *)r)) bad = r;
        if (bad) return fail(ps, bad, "invalid UTF-8 in <%s>", name);
        ps->p = end + strlen(end_tag);
        return 0;
    }
    if (ps->depth == MAX_DEPTH) return fail(ps, at, "elements nested deeper than %d", MAX_DEPTH);
    snprintf(ps->stack[ps->depth++], MAX_NAME, "%s", name);
    return 0;
}

int html_check(HtmlCheck *c, const char *text) {
    memset(c, 0, sizeof *c);
    Parser ps;
    memset(&ps, 0, sizeof ps);
    ps.c = c;
    ps.text = text;
    ps.p = text;
    while (is_space(*ps.p)) ps.p++;
    if (strncasecmp(ps.p, "<!DOCTYPE html>", 15)) {
        fail(&ps, ps.p, "the page does not start with <!DOCTYPE html>");
    } else {
        ps.p += 15;
    }
    while (!c->msg[0] && *ps.p) {
        if (ps.p[0] == '<' && ps.p[1] == '!' && ps.p[2] == '-' && ps.p[3] == '-') {
            const char *end = strstr(ps.p + 4, "-->");
            if (!end) fail(&ps, ps.p, "comment never closed");
            else ps.p = end + 3;
        } else if (ps.p[0] == '<' && (ps.p[1] == '/' || isalpha((unsigned char)ps.p[1]))) {
            parse_tag(&ps);
        } else if (ps.p[0] == '<') {
            fail(&ps, ps.p, "'<' that starts no tag: \"%.12s\"", ps.p);
        } else {
            const char *end = strchr(ps.p, '<');
            if (!end) end = ps.p + strlen(ps.p);
            if (!check_text(&ps, ps.p, end, 0) && ps.depth < 2) {
                for (const char *q = ps.p; q < end; q++)
                    if (!is_space(*q)) {
                        fail(&ps, q, "text outside <body>: \"%.12s\"", q);
                        break;
                    }
            }
            ps.p = end;
        }
    }
    if (!c->msg[0] && ps.depth) fail(&ps, ps.p, "<%s> never closed", ps.stack[ps.depth - 1]);
    if (!c->msg[0] && (!ps.seen_head || !ps.seen_body)) fail(&ps, ps.p, "no <head> or no <body>");
    for (int i = 0; i < ps.n_fragments && !c->msg[0]; i++) {
        int found = 0;
        for (int j = 0; j < ps.n_ids && !found; j++) found = !strcmp(ps.fragments[i], ps.ids[j]);
        if (!found) snprintf(c->msg, sizeof c->msg, "link to #%.200s: no element has that id", ps.fragments[i]);
    }
    for (int i = 0; i < ps.n_ids; i++) free(ps.ids[i]);
    for (int i = 0; i < ps.n_fragments; i++) free(ps.fragments[i]);
    free(ps.ids);
    free(ps.fragments);
    return c->msg[0] ? -1 : 0;
}

void html_check_free(HtmlCheck *c) {
    for (int i = 0; i < c->n_links; i++) free(c->links[i]);
    free(c->links);
    memset(c, 0, sizeof *c);
}

int html_url_decode(char *out, size_t cap, const char *url) {
    size_t k = 0;
    for (const char *q = url; *q; q++) {
        if (k + 1 >= cap) return -1;
        if (*q == '%') {
            if (!isxdigit((unsigned char)q[1]) || !isxdigit((unsigned char)q[2])) return -1;
            char hex[3] = {q[1], q[2], 0};
            long v = strtol(hex, NULL, 16);
            if (v == 0) return -1;
            out[k++] = (char)v;
            q += 2;
        } else {
            out[k++] = *q;
        }
    }
    out[k] = 0;
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcasecmp(s + a - b, suffix);
}

// 0 when path holds a PNG or GIF that decodes; -1 with msg.
static int check_image(const char *path, char *msg, size_t cap) {
    unsigned char head[8] = {0};
    FILE *fp = fopen(path, "rb");
    size_t got = fp ? fread(head, 1, 8, fp) : 0;
    if (fp) fclose(fp);
    if (ends_with(path, ".png")) {
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
        if (got < 8 || memcmp(head, sig, 8)) return snprintf(msg, cap, "%s: no PNG signature", path), -1;
        Image img;
        Error err;
        if (image_load(path, &img, 0, &err)) return snprintf(msg, cap, "%s: does not decode: %s", path, err.msg), -1;
        int ok = img.w > 0 && img.h > 0;
        image_free(&img);
        if (!ok) return snprintf(msg, cap, "%s: empty image", path), -1;
        return 0;
    }
    if (got < 6 || (memcmp(head, "GIF87a", 6) && memcmp(head, "GIF89a", 6)))
        return snprintf(msg, cap, "%s: no GIF signature", path), -1;
    int e = 0;
    GifFileType *g = DGifOpenFileName(path, &e);
    if (!g) return snprintf(msg, cap, "%s: giflib cannot open it: %s", path, GifErrorString(e)), -1;
    int r = DGifSlurp(g);
    int frames = g->ImageCount;
    int close_err = 0;
    DGifCloseFile(g, &close_err);
    if (r != GIF_OK || frames < 1) return snprintf(msg, cap, "%s: does not decode (%d frames)", path, frames), -1;
    return 0;
}

int html_check_links(const HtmlCheck *c, const char *dir, char *msg, size_t cap) {
    int problems = 0;
    msg[0] = 0;
    for (int i = 0; i < c->n_links; i++) {
        const char *url = c->links[i];
        char decoded[2048], path[4096], why[1024] = "";
        const char *colon = strchr(url, ':'), *slash = strchr(url, '/');
        if (url[0] == '/' || (colon && (!slash || colon < slash)))
            snprintf(why, sizeof why, "link \"%.200s\" is not relative", url);
        else if (strchr(url, '?') || strchr(url, '#'))
            snprintf(why, sizeof why, "link \"%.200s\" has a query or fragment", url);
        else if (html_url_decode(decoded, sizeof decoded, url))
            snprintf(why, sizeof why, "link \"%.200s\": bad percent-encoding", url);
        else {
            snprintf(path, sizeof path, "%s/%s", dir, decoded);
            struct stat st;
            if (stat(path, &st) || !S_ISREG(st.st_mode))
                snprintf(why, sizeof why, "link \"%.200s\": no file %.300s", url, path);
            else if (ends_with(decoded, ".png") || ends_with(decoded, ".gif"))
                check_image(path, why, sizeof why);
        }
        if (why[0]) {
            if (!problems) snprintf(msg, cap, "%s", why);
            problems++;
        }
    }
    return problems;
}

double html_data_value(const char *text, const char *key) {
    char want[256];
    snprintf(want, sizeof want, "data-key=\"%s\" data-value=\"", key);
    const char *at = strstr(text, want);
    return at ? strtod(at + strlen(want), NULL) : NAN;
}
