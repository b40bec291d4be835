// html_check.h: a strict checker for the HTML pages the toolkit writes (reports, the
// experiments index), and checks of the files they link.
//
// html_check accepts a subset of HTML5, the subset those pages are written in, and rejects
// anything outside it with the first problem and its line:
//   - UTF-8 throughout; "<!DOCTYPE html>" first; one <html> holding one <head> then one <body>;
//   - every element closed by its own end tag, properly nested (void elements such as <img>
//     and <meta> have none; a trailing "/>" is allowed on them only);
//   - tag and attribute names lower case; every attribute written name="value" (or with
//     single quotes), no attribute twice on one element, no bare attributes;
//   - '&' in text and attribute values only as a valid character reference (a known name,
//     &#N; or &#xH; of a valid code point); no '<' that does not start a tag or comment;
//   - <script> and <style> content is raw text up to its end tag;
//   - id values unique, and every "#name" link names one of them.
// It collects the values of every src and href attribute (references decoded) for the
// link checks below.
#ifndef TESTS_SUPPORT_HTML_CHECK_H
#define TESTS_SUPPORT_HTML_CHECK_H

#include <stddef.h>

typedef struct {
    char msg[512];   // the first problem, "line N: reason" (empty when none)
    char **links;    // (n_links) src and href values, character references decoded
    int n_links;
    int n_elements;  // start tags seen
    int n_images;    // <img> elements
} HtmlCheck;

// 0 when text is well formed by the rules above; -1 with c->msg set. c is filled either
// way and must be freed.
int html_check(HtmlCheck *c, const char *text);
void html_check_free(HtmlCheck *c);

// Percent-decodes url into out (cap bytes); -1 on a malformed escape, an encoded NUL or
// when out is too small.
int html_url_decode(char *out, size_t cap, const char *url);

// Checks the page's links: fragment-only links are skipped (html_check checks them); any
// other must be relative (no scheme, no leading '/', no "//") and, percent-decoded, name a
// regular file under dir; a .png or .gif must carry the format's signature and decode
// (image_load for PNG; every frame through giflib for GIF). Returns the number of problems,
// the first described in msg (cap bytes).
int html_check_links(const HtmlCheck *c, const char *dir, char *msg, size_t cap);

// The data-value of the element with data-key="key" (as html_metric_cell writes it), or
// NAN when there is none.
double html_data_value(const char *text, const char *key);

#endif
