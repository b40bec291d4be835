// html.h: writing the reports' HTML pages (cli/report_caption.c, cli/report_draw.c):
// escaping, relative links, and the page frame with its stylesheet.
//
// Every string that comes from a file or the command line (captions, file names, a
// configuration) goes through html_text or html_attr; every link through html_url, so a
// file named "a&b <1> #2%.png" links as "a%26b%20%3C1%3E%20%232%25.png". Pages are HTML5
// in UTF-8 with one inline stylesheet (screen and print), no network and no framework.
// (experiments/index.sh writes its page in sh, with a shorter copy of the same styles.)
//
//     FILE *fp = ...;
//     html_page_begin(fp, "DRAW run runs/draw");
//     html_section(fp, "results", "Test results");
//     fputs("<p>", fp); html_text(fp, caption); fputs("</p>\n", fp);
//     html_img(fp, "samples/final.png", "generated digits", "grid");
//     html_page_end(fp, NULL);
#ifndef CLI_HTML_H
#define CLI_HTML_H

#include <stdio.h>

// s as HTML text: & < > escaped; a byte that is not part of valid UTF-8, and a control
// character other than tab and newline, is shown as the text \xNN (core/text_escape.h's
// notation), so a file name that is not UTF-8 reads as it does in the other outputs.
void html_text(FILE *fp, const char *s);
// s as the inside of a double-quoted attribute value: html_text plus " and '.
void html_attr(FILE *fp, const char *s);
// A relative path as a URL path: every byte but A-Z a-z 0-9 - . _ ~ and / is
// percent-encoded (so ':' cannot start a scheme, '#' and '?' stay part of the name).
void html_url(FILE *fp, const char *relpath);
// html_text of a printf-formatted string (up to 4 KiB).
void html_textf(FILE *fp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// <!DOCTYPE html>, <head> (charset, viewport, title, the stylesheet), <body>, <main>.
void html_page_begin(FILE *fp, const char *title);
// Closes <main>; script (may be NULL) goes in one <script> element before </body>.
void html_page_end(FILE *fp, const char *script);

// <section id=ID><h2>TITLE</h2> (both escaped); html_section_end closes it.
void html_section(FILE *fp, const char *id, const char *title);
void html_section_end(FILE *fp);

// <img src=URL alt=ALT class=CLS> (cls may be NULL). Not lazy: print views and
// screenshots show every image.
void html_img(FILE *fp, const char *relpath, const char *alt, const char *cls);
// <a href=URL>TEXT</a>.
void html_link(FILE *fp, const char *relpath, const char *text);

// One row of a two-column table of facts: <tr><th>KEY</th><td>VALUE</td></tr>, both escaped.
void html_fact(FILE *fp, const char *key, const char *value);

// A number cell that tests can find: <td class="num" data-key="KEY" data-value="%.10g">
// then the value with `decimals` decimals (or "n/a" when not finite) and </td>.
void html_metric_cell(FILE *fp, const char *key, double value, int decimals);

#endif
