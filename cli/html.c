// html.c: see html.h.
#include "cli/html.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "core/text_escape.h"

static void escape(FILE *fp, const char *s, int quotes) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = text_utf8_seq_len(p);
        unsigned c = *p;
        if (n == 0 || (c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
            fprintf(fp, "\\x%02x", c);  // core/text_escape.h's notation for one byte
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, (size_t)n, fp);
            p += n;
            continue;
        }
        switch (c) {
        case '&': fputs("&amp;", fp); break;
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '"': fputs(quotes ? "&quot;" : "\"", fp); break;
        case '\'': fputs(quotes ? "&#39;" : "'", fp); break;
        default: fputc((int)c, fp);
        }
        p++;
    }
}

void html_text(FILE *fp, const char *s) { escape(fp, s ? s : "", 0); }
void html_attr(FILE *fp, const char *s) { escape(fp, s ? s : "", 1); }

void html_url(FILE *fp, const char *relpath) {
    static const char keep[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/";
    for (const unsigned char *p = (const unsigned char *)relpath; *p; p++) {
        if (strchr(keep, *p)) fputc(*p, fp);
        else fprintf(fp, "%%%02X", *p);
    }
}

void html_textf(FILE *fp, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    html_text(fp, buf);
}

static const char STYLESHEET[] =
    ":root{--ink:#1d232b;--muted:#5b6673;--rule:#d8dde3;--card:#f6f8fa;--accent:#1f5fa8}\n"
    "*{box-sizing:border-box}\n"
    "html{font-size:15px}\n"
    "body{margin:0;color:var(--ink);background:#fff;"
    "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;line-height:1.45}\n"
    "main{max-width:1180px;margin:0 auto;padding:1.5rem 1.5rem 3rem}\n"
    "header.page{border-bottom:3px solid var(--ink);margin-bottom:1rem}\n"
    "header.page h1{font-size:1.7rem;margin:0 0 .2rem}\n"
    "header.page p{margin:.2rem 0 .6rem;color:var(--muted)}\n"
    "h2{font-size:1.25rem;margin:2rem 0 .6rem;padding-bottom:.2rem;border-bottom:1px solid var(--rule)}\n"
    "h3{font-size:1.05rem;margin:1.2rem 0 .4rem}\n"
    "a{color:var(--accent)}\n"
    "nav.toc{font-size:.92rem;margin:.4rem 0 1rem}\n"
    "nav.toc a{margin-right:1rem;text-decoration:none}\n"
    "code,pre,.mono{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:.86rem}\n"
    "pre{background:var(--card);padding:.6rem .8rem;border-radius:4px;white-space:pre-wrap;"
    "word-break:break-all;margin:.3rem 0}\n"
    "table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.93rem}\n"
    "th,td{padding:.28rem .6rem;border-bottom:1px solid var(--rule);text-align:left;vertical-align:top}\n"
    "thead th{border-bottom:2px solid var(--ink);white-space:nowrap}\n"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "table.facts th{color:var(--muted);font-weight:600;white-space:nowrap}\n"
    "table.wide{width:100%}\n"
    ".note{color:var(--muted);font-size:.9rem}\n"
    ".missing{color:#9a3b00}\n"
    ".figs{display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-start}\n"
    "figure{margin:0 0 1rem}\n"
    "figcaption{color:var(--muted);font-size:.88rem;margin-top:.2rem}\n"
    "img{max-width:100%;height:auto}\n"
    "img.pixel{image-rendering:pixelated}\n"
    "img.plot{width:560px;border:1px solid var(--rule)}\n"
    ".film{display:flex;flex-wrap:wrap;gap:4px}\n"
    ".film figure{margin:0;text-align:center}\n"
    ".film img{width:76px;image-rendering:pixelated;border:1px solid var(--rule)}\n"
    ".film figcaption{font-size:.72rem;margin:0}\n"
    ".controls{display:flex;flex-wrap:wrap;gap:.8rem;align-items:center;margin:.4rem 0 .8rem;"
    "font-size:.92rem}\n"
    ".controls select,.controls input{font:inherit;padding:.15rem .3rem}\n"
    ".cards{display:grid;grid-template-columns:1fr;gap:.8rem}\n"
    ".card{background:var(--card);border:1px solid var(--rule);border-radius:6px;padding:.6rem .7rem}\n"
    ".card img.strip{display:block;max-width:100%;image-rendering:pixelated;background:#fff;"
    "border:1px solid var(--rule)}\n"
    ".card .cap{font-weight:600;font-size:1.05rem;margin:.45rem 0 .15rem}\n"
    ".card ul{margin:.1rem 0 .3rem;padding-left:1.1rem;color:var(--muted);font-size:.88rem}\n"
    ".card .scores{font-size:.85rem;font-variant-numeric:tabular-nums;color:var(--ink)}\n"
    ".card .scores span{margin-right:.9rem}\n"
    ".card .id{color:var(--muted);font-size:.82rem}\n"
    "table.ranked img.strip{max-width:520px;image-rendering:pixelated}\n"
    ".paper{background:#fff8e6;border:1px solid #ecd9a8;border-radius:4px;padding:.4rem .7rem;"
    "font-size:.9rem}\n"
    "@media print{\n"
    "  html{font-size:10.5pt}\n"
    "  main{max-width:none;padding:0}\n"
    "  nav.toc,.controls{display:none}\n"
    "  a{color:inherit;text-decoration:none}\n"
    "  h2{break-after:avoid}\n"
    "  .card,figure,tr{break-inside:avoid}\n"
    "  .card{background:none}\n"
    "  .figs figure{width:48%}\n"
    "  img.plot{width:100%}\n"
    "  @page{margin:14mm}\n"
    "}\n";

void html_page_begin(FILE *fp, const char *title) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          fp);
    html_text(fp, title);
    fprintf(fp, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", STYLESHEET);
}

void html_page_end(FILE *fp, const char *script) {
    fputs("</main>\n", fp);
    if (script) fprintf(fp, "<script>\n%s</script>\n", script);
    fputs("</body>\n</html>\n", fp);
}

void html_section(FILE *fp, const char *id, const char *title) {
    fputs("<section id=\"", fp);
    html_attr(fp, id);
    fputs("\">\n<h2>", fp);
    html_text(fp, title);
    fputs("</h2>\n", fp);
}

void html_section_end(FILE *fp) { fputs("</section>\n", fp); }

void html_img(FILE *fp, const char *relpath, const char *alt, const char *cls) {
    fputs("<img src=\"", fp);
    html_url(fp, relpath);
    fputs("\" alt=\"", fp);
    html_attr(fp, alt);
    fputs("\"", fp);
    if (cls) {
        fputs(" class=\"", fp);
        html_attr(fp, cls);
        fputs("\"", fp);
    }
    fputs(">", fp);
}

void html_link(FILE *fp, const char *relpath, const char *text) {
    fputs("<a href=\"", fp);
    html_url(fp, relpath);
    fputs("\">", fp);
    html_text(fp, text);
    fputs("</a>", fp);
}

void html_fact(FILE *fp, const char *key, const char *value) {
    fputs("<tr><th>", fp);
    html_text(fp, key);
    fputs("</th><td>", fp);
    html_text(fp, value);
    fputs("</td></tr>\n", fp);
}

void html_metric_cell(FILE *fp, const char *key, double value, int decimals) {
    fputs("<td class=\"num\" data-key=\"", fp);
    html_attr(fp, key);
    if (isfinite(value)) fprintf(fp, "\" data-value=\"%.10g\">%.*f</td>", value, decimals, value);
    else fputs("\" data-value=\"nan\">n/a</td>", fp);
}
