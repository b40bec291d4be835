// test_experiments_index.c: experiments/index.sh (the page over every experiment) and
// experiments/md2html.awk (its markdown converter). The index of the published tables
// and of a made-up reproduction (a run folder whose name needs escaping, a table with
// markup in its cells) must pass the strict checker, link only files that exist, show
// every table of experiments/results/ beside its papers' numbers, and escape what it
// copies. Every table the project publishes in markdown is well formed: its header, one
// rule right below it, then rows of the header's width. Run from the repository root (as
// tests/run.sh is).
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/html_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char dir[256];

static void write_file(const char *path, const char *text) {
    EXPECT(scratch_write_text(path, text) == 0, "cannot write %s", path);
}

static char *run_to_text(const char *cmd) {
    char out[600], full[4096];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(full, sizeof full, "%s > %s 2>&1", cmd, out);
    int st = system(full);
    EXPECT(st == 0, "'%s' failed (status %d)", cmd, st);
    return scratch_read_text(out, NULL);
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++) n++;
    return n;
}

static void test_md2html(void) {
    char md[400], cmd[1000];
    snprintf(md, sizeof md, "%s/t.md", dir);
    write_file(md,
               "# Title with <b> & `code`\n"
               "\n"
               "A paragraph with `a span\n"
               "across lines` and 5 < 6.\n"
               "\n"
               "    bin/draw train --out <dir> && echo\n"
               "\n"
               "    second line\n"
               "\n"
               "| name | value | date | note |\n"
               "|---|---|---|---|\n"
               "| a<b | 0.5 | 2026-11-24 | `--flag` & more |\n"
               "| c | 1,000 | x | 89.21 (10) |\n"
               "\n"
               "- item one\n"
               "- item <two>\n");
    snprintf(cmd, sizeof cmd, "awk -f experiments/md2html.awk %s", md);
    char *html = run_to_text(cmd);
    if (!html) return;
    static const char *const want[] = {
        "<h2>Title with &lt;b&gt; &amp; <code>code</code></h2>",
        "<p>A paragraph with <code>a span\nacross lines</code> and 5 &lt; 6.</p>",
        "<pre>bin/draw train --out &lt;dir&gt; &amp;&amp; echo\n\nsecond line\n",
        "<th>name</th><th>value</th>",
        "<td>a&lt;b</td><td class=\"num\">0.5</td><td class=\"num\">2026-11-24</td><td><code>--flag</code> &amp; more</td>",
        "<td class=\"num\">1,000</td><td>x</td><td class=\"num\">89.21 (10)</td>",
        "<ul>\n<li>item one</li>\n<li>item &lt;two&gt;</li>\n</ul>",
    };
    for (int i = 0; i < (int)(sizeof want / sizeof *want); i++)
        EXPECT(strstr(html, want[i]) != NULL, "md2html output lacks\n%s\n--- got:\n%s", want[i], html);
    // As the body of a page it passes the checker.
    char *page = malloc(strlen(html) + 200);
    sprintf(page, "<!DOCTYPE html>\n<html><head><title>t</title></head><body>\n%s</body></html>\n", html);
    HtmlCheck c;
    EXPECT(html_check(&c, page) == 0, "%s", c.msg);
    html_check_free(&c);
    free(page);
    free(html);
}

static void test_index_of_a_reproduction(void) {
    char path[1200], runs[600], cmd[2000];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    snprintf(path, sizeof path, "%s/run & <x> #1%%", runs);
    EXPECT(system(NULL) != 0, "no shell");
    mkdir(runs, 0755);
    mkdir(path, 0755);
    strcat(path, "/report.html");
    write_file(path, "<!DOCTYPE html>\n<html><head><title>r</title></head><body><p>r</p></body></html>\n");
    snprintf(path, sizeof path, "%s/tables", runs);
    mkdir(path, 0755);
    strcat(path, "/draw_mnist.md");
    write_file(path, "# Reproduced\n\n| config | bound |\n|---|---|\n| quick <&> | 123.45 |\n");
    snprintf(path, sizeof path, "%s/steps.tsv", runs);
    write_file(path, "draw-attention\tdone\t61\tenv QUICK_STEPS=300 sh experiments/draw_mnist.sh quick\n"
                     "sat-scenes\tfailed\t5\tenv STEPS=600 sh experiments/sat_scenes.sh\n");
    snprintf(cmd, sizeof cmd, "RUNS='%s' OUT='%s/site/index.html' sh experiments/index.sh", runs, dir);
    char *log = run_to_text(cmd);
    free(log);
    snprintf(path, sizeof path, "%s/site", dir);
    char *page = NULL;
    {
        char p[1300];
        snprintf(p, sizeof p, "%s/index.html", path);
        page = scratch_read_text(p, NULL);
    }
    EXPECT(page != NULL, "index.html not written");
    if (!page) return;
    HtmlCheck c;
    EXPECT(html_check(&c, page) == 0, "index.html: %s", c.msg);
    char msg[1024];
    int bad = html_check_links(&c, path, msg, sizeof msg);
    EXPECT(bad == 0, "%d bad links: %s", bad, msg);
    EXPECT(c.n_links == 1, "%d links, expected the one report", c.n_links);
    html_check_free(&c);
    EXPECT(strstr(page, "href=\"../runs/run%20%26%20%3Cx%3E%20%231%25/report.html\">run &amp; &lt;x&gt; #1%</a>"),
           "the report link is not relative, percent-encoded and escaped");
    EXPECT(strstr(page, "<td>quick &lt;&amp;&gt;</td><td class=\"num\">123.45</td>"), "the reproduction's table");
    EXPECT(strstr(page, "<td>sat-scenes</td><td>failed</td>"), "the steps");
    // Every published table, each beside its papers' section.
    int tables = 0;
    DIR *d = opendir("experiments/results");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md")) continue;
        tables++;
        char id[300];
        snprintf(id, sizeof id, "<section id=\"t-%.*s\">", (int)(n - 3), e->d_name);
        EXPECT(strstr(page, id) != NULL, "no section for %s", e->d_name);
    }
    if (d) closedir(d);
    EXPECT(tables >= 3 && count(page, "<aside class=\"paper\">") == tables, "%d tables, %d paper boxes", tables,
           count(page, "<aside class=\"paper\">"));
    EXPECT(strstr(page, "80.97") && strstr(page, "0.195"), "the papers' numbers are missing");
    EXPECT(!strstr(page, "No entry for"), "a table without its papers' section");
    free(page);
}

// The cells of a table line: its unescaped '|' less one.
static int table_cells(const char *line, size_t len) {
    int bars = 0;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) bars++;
    return bars - 1;
}

// A table's rule line: bars, dashes, colons and blanks only, with a dash.
static int is_table_rule(const char *line, size_t len) {
    int dash = 0;
    for (size_t i = 0; i < len; i++) {
        if (line[i] == '-') dash = 1;
        else if (line[i] != '|' && line[i] != ':' && !isspace((unsigned char)line[i])) return 0;
    }
    return dash;
}

// Checks every table of the markdown file at path; returns how many it saw, failing the
// test at the first malformed line.
static int check_tables(const char *path) {
    char *text = scratch_read_text(path, NULL);
    EXPECT(text != NULL, "cannot read %s", path);
    if (!text) return 0;
    int tables = 0, row = 0, width = 0, line_no = 0;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        line_no++;
        if (len == 0 || line[0] != '|') {
            row = 0;
        } else if (row++ == 0) {
            tables++;
            width = table_cells(line, len);
        } else {
            int rule = is_table_rule(line, len);
            EXPECT(rule == (row == 2), "%s:%d: %s", path, line_no,
                   rule ? "a rule inside a table's rows" : "a table's header without its rule below it");
            EXPECT(table_cells(line, len) == width, "%s:%d: %d cells in a table of %d", path, line_no,
                   table_cells(line, len), width);
            if (rule != (row == 2) || table_cells(line, len) != width) break;
        }
        line = end ? end + 1 : line + len;
    }
    free(text);
    return tables;
}

static void test_published_tables_are_well_formed(void) {
    static const char *const pages[] = {"README.md", "experiments/README.md", "experiments/papers.md",
                                        "bench/RESULTS.md"};
    int tables = 0;
    for (int i = 0; i < (int)(sizeof pages / sizeof *pages); i++) tables += check_tables(pages[i]);
    DIR *d = opendir("experiments/results");
    EXPECT(d != NULL, "cannot list experiments/results");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md")) continue;
        char path[600];
        snprintf(path, sizeof path, "experiments/results/%s", e->d_name);
        tables += check_tables(path);
    }
    if (d) closedir(d);
    EXPECT(tables >= 20, "only %d tables found", tables);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_index")) return 1;
    RUN(test_md2html);
    RUN(test_index_of_a_reproduction);
    RUN(test_published_tables_are_well_formed);
    scratch_remove(dir);
    return test_summary();
}
