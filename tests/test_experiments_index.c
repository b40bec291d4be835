// test_experiments_index.c: experiments/index.sh (the page over every experiment) and
// experiments/md2html.awk (its markdown converter). The index of the published tables
// and of a made-up reproduction (a run folder whose name needs escaping, a table with
// markup in its cells) must pass the strict checker, link only files that exist, show
// every table of experiments/results/ beside its papers' numbers, and escape what it
// copies. Run from the repository root (as tests/run.sh is).
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
    FILE *fp = fopen(path, "w");
    EXPECT(fp != NULL, "cannot write %s", path);
    if (!fp) return;
    fputs(text, fp);
    fclose(fp);
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

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_index")) return 1;
    RUN(test_md2html);
    RUN(test_index_of_a_reproduction);
    scratch_remove(dir);
    return test_summary();
}
