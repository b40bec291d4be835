// test_html.c: the reports' HTML writer (cli/html.h: escaping, percent-encoded links, the
// page frame) and the strict checker the report tests rely on (tests/support/html_check.h),
// which must reject each kind of mistake it claims to catch.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/html.h"
#include "tests/support/html_check.h"
#include "tests/support/test.h"

// What fn writes, as a malloc'd string.
static char *capture(void (*fn)(FILE *, const char *), const char *arg) {
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    fn(fp, arg);
    fclose(fp);
    return buf;
}

static void test_text_and_attribute_escaping(void) {
    char *t = capture(html_text, "a<b> & \"c\" 'd'");
    EXPECT(!strcmp(t, "a&lt;b&gt; &amp; \"c\" 'd'"), "html_text: %s", t);
    char *a = capture(html_attr, "a<b> & \"c\" 'd'");
    EXPECT(!strcmp(a, "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;"), "html_attr: %s", a);
    // Invalid UTF-8 (a lone continuation byte, an overlong '/', a surrogate) and control
    // characters become the text \xNN, byte by byte; valid multi-byte characters pass through.
    char *u = capture(html_text, "x\x80y\xC0\xAFz\xED\xA0\x80w\x01v\xC3\xA9\xE2\x86\x92");
    EXPECT(!strcmp(u, "x\\x80y\\xc0\\xafz\\xed\\xa0\\x80w\\x01v\xC3\xA9\xE2\x86\x92"),
           "html_text on bad UTF-8: %s", u);
    free(t);
    free(a);
    free(u);
}

static void test_url_percent_encoding_round_trips(void) {
    const char *names[] = {"strips/00001.png", "a&b <1> #2%.png", "x:y/z?.gif", "caf\xC3\xA9 \"q\" 'r'.png",
                           "dir with space/file+plus=eq.png"};
    for (int i = 0; i < 5; i++) {
        char *u = capture(html_url, names[i]);
        // Only unreserved characters and '/' stay; so the URL needs no attribute escaping,
        // has no ':' to read as a scheme and no '#' or '?' to cut the path.
        for (const char *p = u; *p; p++)
            EXPECT(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/%", *p),
                   "'%c' left in %s", *p, u);
        char back[512];
        EXPECT(html_url_decode(back, sizeof back, u) == 0 && !strcmp(back, names[i]), "%s -> %s -> %s", names[i], u, back);
        free(u);
    }
    char *u = capture(html_url, "a&b <1> #2%.png");
    EXPECT(!strcmp(u, "a%26b%20%3C1%3E%20%232%25.png"), "%s", u);
    free(u);
    char out[16];
    EXPECT(html_url_decode(out, sizeof out, "a%2") != 0, "a truncated escape decodes");
    EXPECT(html_url_decode(out, sizeof out, "a%00b") != 0, "an encoded NUL decodes");
}

static void write_page(FILE *fp, const char *title) {
    html_page_begin(fp, title);
    html_section(fp, "one", "First & <only>");
    fputs("<p>", fp);
    html_text(fp, "5 < 6 & \"quotes\"");
    fputs("</p>\n<table><tbody><tr>", fp);
    html_metric_cell(fp, "bleu4", 0.8228951, 4);
    html_metric_cell(fp, "none", NAN, 4);
    fputs("</tr></tbody></table>\n", fp);
    html_img(fp, "a&b <1>.png", "an \"image\"", "pixel");
    html_link(fp, "x y/z.html", "a <link>");
    fputs("<a href=\"#one\">up</a>\n", fp);
    html_section_end(fp);
    html_page_end(fp, "var a = 1 < 2 && 3 > 2;\n");
}

static void test_page_frame_passes_the_checker(void) {
    char *page = capture(write_page, "Title <with> & marks");
    HtmlCheck c;
    int r = html_check(&c, page);
    EXPECT(r == 0, "checker: %s", c.msg);
    EXPECT(c.n_links == 2 && !strcmp(c.links[0], "a%26b%20%3C1%3E.png") && !strcmp(c.links[1], "x%20y/z.html"),
           "links: %d", c.n_links);
    EXPECT(c.n_images == 1, "%d images", c.n_images);
    EXPECT(strstr(page, "<title>Title &lt;with&gt; &amp; marks</title>"), "title not escaped");
    EXPECT(fabs(html_data_value(page, "bleu4") - 0.8228951) < 1e-12, "data-value %g", html_data_value(page, "bleu4"));
    EXPECT(strstr(page, ">0.8229</td>"), "shown value not rounded to 4 decimals");
    EXPECT(strstr(page, "data-key=\"none\" data-value=\"nan\">n/a</td>"), "a NaN cell");
    EXPECT(isnan(html_data_value(page, "missing")), "a missing key has a value");
    html_check_free(&c);
    free(page);
}

#define DOC(body) "<!DOCTYPE html>\n<html lang=\"en\"><head><title>t</title></head><body>" body "</body></html>\n"

static void test_checker_accepts_good_pages(void) {
    static const char *const good[] = {
        DOC("<p>plain</p>"),
        DOC("<p>a &amp; b &lt; c &#8594; &#x2192; &nbsp;&middot;</p>"),
        DOC("<img src=\"a.png\" alt=\"x\"><br><img src='b.png' alt='y' />"),
        DOC("<!-- a comment <b> -->\n<div id=\"a\"><a href=\"#a\">self</a></div>"),
        DOC("<script>if (1 < 2 && '<b>') {}</script><style>a>b{}</style>"),
        DOC("<p>caf\xC3\xA9</p>"),
    };
    for (int i = 0; i < (int)(sizeof good / sizeof *good); i++) {
        HtmlCheck c;
        EXPECT(html_check(&c, good[i]) == 0, "good page %d rejected: %s", i, c.msg);
        html_check_free(&c);
    }
}

static void test_checker_rejects_each_mistake(void) {
    static const char *const bad[][2] = {
        {"<html><head></head><body></body></html>", "DOCTYPE"},
        {DOC("<p>unclosed"), "</body> does not close <p>"},
        {"<!DOCTYPE html>\n<html><head></head><body><div>", "never closed"},
        {DOC("<p><b>x</p></b>"), "does not close"},
        {DOC("<p>x</p></p>"), "does not close"},
        {DOC("<img src=a.png alt=\"x\">"), "not quoted"},
        {DOC("<input disabled>"), "no =\"value\""},
        {DOC("<p class=\"a\" class=\"b\">x</p>"), "twice"},
        {DOC("<p>a & b</p>"), "character reference"},
        {DOC("<p>&bogus;</p>"), "character reference"},
        {DOC("<p>&#xD800;</p>"), "character reference"},
        {DOC("<p>&#0;</p>"), "character reference"},
        {DOC("<p title=\"a & b\">x</p>"), "character reference"},
        {DOC("<p>1 < 2</p>"), "starts no tag"},
        {DOC("<P>x</P>"), "lower-case"},
        {DOC("<p>bad \xC3 byte</p>"), "UTF-8"},
        {DOC("<img src=\"a.png\" alt=\"x\"></img>"), "void element"},
        {DOC("<div/>"), "only void elements"},
        {DOC("<p id=\"a\">x</p><p id=\"a\">y</p>"), "used twice"},
        {DOC("<a href=\"#nowhere\">x</a>"), "no element has that id"},
        {DOC("<p title=\"x\"class=\"y\">z</p>"), "separated"},
        {DOC("<script>never closed"), "never closed"},
        {"<!DOCTYPE html>\n<html><body><head></head></body></html>", "directly in <html>"},
        {"<!DOCTYPE html>\nstray<html><head></head><body></body></html>", "outside"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
        HtmlCheck c;
        int r = html_check(&c, bad[i][0]);
        EXPECT(r != 0, "bad page %d accepted: %s", i, bad[i][0]);
        EXPECT(r == 0 || strstr(c.msg, bad[i][1]), "bad page %d: message \"%s\" lacks \"%s\"", i, c.msg, bad[i][1]);
        EXPECT(r == 0 || !strncmp(c.msg, "line ", 5) || strstr(c.msg, "#nowhere"), "no line number: %s", c.msg);
        html_check_free(&c);
    }
}

static void test_link_check_rejects_absolute_and_missing(void) {
    static const char *const page = DOC("<img src=\"http://x/a.png\" alt=\"a\"><img src=\"/etc/passwd\" alt=\"b\">"
                                        "<a href=\"nothing-here.html\">c</a><a href=\"x.png?v=1\">d</a>");
    HtmlCheck c;
    EXPECT(html_check(&c, page) == 0, "%s", c.msg);
    char msg[1024];
    int problems = html_check_links(&c, ".", msg, sizeof msg);
    EXPECT(problems == 4, "%d problems (%s)", problems, msg);
    EXPECT(strstr(msg, "not relative"), "%s", msg);
    html_check_free(&c);
}

int main(void) {
    RUN(test_text_and_attribute_escaping);
    RUN(test_url_percent_encoding_round_trips);
    RUN(test_page_frame_passes_the_checker);
    RUN(test_checker_accepts_good_pages);
    RUN(test_checker_rejects_each_mistake);
    RUN(test_link_check_rejects_absolute_and_missing);
    return test_summary();
}
