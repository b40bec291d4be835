#!/bin/sh
# index.sh: one page over every experiment: each table of experiments/results/*.md beside
# the papers' numbers (experiments/papers.md), with the tables and the reports of a
# reproduction (experiments/reproduce.sh) when RUNS names one. reproduce.sh runs it last.
#
#   sh experiments/index.sh                           (the published tables only)
#   RUNS=runs/reproduce-quick sh experiments/index.sh
#
# Environment: RUNS (a reproduction's folder: its steps.tsv, tables/NAME.md and every
# */report.html under it are shown), OUT (default experiments/results/index.html),
# TABLES (default experiments/results), PAPERS (default experiments/papers.md).
# Links are relative to OUT's folder and percent-encoded; text is HTML-escaped; no
# network, no JavaScript. Markdown goes through experiments/md2html.awk.
set -eu
TABLES=${TABLES:-experiments/results}
PAPERS=${PAPERS:-experiments/papers.md}
OUT=${OUT:-$TABLES/index.html}
RUNS=${RUNS:-}
here=$(dirname "$0")
md2html="$here/md2html.awk"
outdir=$(dirname "$OUT")
mkdir -p "$outdir"

esc() { printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g' -e "s/'/\&#39;/g"; }
# A path as a URL path: bytes other than A-Z a-z 0-9 - . _ ~ / percent-encoded.
urlenc() {
    printf '%s' "$1" | od -An -v -tu1 | tr -s ' \n' '\n\n' | awk 'NF {
        c = $1 + 0
        if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 46 || c == 95 || c == 126 || c == 47)
            printf "%c", c
        else
            printf "%%%02X", c
    }'
}
# The path of $1 relative to OUT's folder.
rel() { realpath -m --relative-to="$outdir" "$1"; }
# The section "## NAME" of PAPERS, without its heading.
paper_section() {
    [ -f "$PAPERS" ] || return 0
    awk -v name="$1" '/^## / { on = ($0 == "## " name); next } on' "$PAPERS"
}

tmp="$OUT.tmp.$$"
trap 'rm -f "$tmp"' EXIT
{
cat <<'HEAD'
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>attend: experiments</title>
<style>
:root{--ink:#1d232b;--muted:#5b6673;--rule:#d8dde3;--card:#f6f8fa;--accent:#1f5fa8}
*{box-sizing:border-box}
html{font-size:15px}
body{margin:0;color:var(--ink);font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;line-height:1.45}
main{max-width:1280px;margin:0 auto;padding:1.5rem 1.5rem 3rem}
header.page{border-bottom:3px solid var(--ink);margin-bottom:1rem}
header.page h1{font-size:1.7rem;margin:0 0 .2rem}
header.page p{margin:.2rem 0 .6rem;color:var(--muted)}
h2{font-size:1.3rem;margin:2.2rem 0 .6rem;padding-bottom:.2rem;border-bottom:1px solid var(--rule)}
h3{font-size:1.05rem;margin:1.2rem 0 .4rem}
a{color:var(--accent)}
nav.toc{display:flex;flex-wrap:wrap;column-gap:1rem}
nav.toc a{text-decoration:none}
code,pre{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:.84rem}
pre{background:var(--card);padding:.6rem .8rem;border-radius:4px;white-space:pre-wrap;word-break:break-all}
.scroll{overflow-x:auto;margin:.4rem 0 1rem}
table{border-collapse:collapse;font-size:.88rem}
th,td{padding:.25rem .55rem;border-bottom:1px solid var(--rule);text-align:left;vertical-align:top}
thead th{border-bottom:2px solid var(--ink);white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.side{display:grid;grid-template-columns:minmax(0,1fr) 320px;gap:1.4rem;align-items:start}
aside.paper{background:#fff8e6;border:1px solid #ecd9a8;border-radius:4px;padding:.5rem .8rem;font-size:.88rem}
aside.paper h3{margin-top:.2rem}
.note{color:var(--muted);font-size:.9rem}
@media (max-width:900px){.side{grid-template-columns:1fr}}
@media print{html{font-size:10pt}main{max-width:none;padding:0}nav.toc{display:none}a{color:inherit;text-decoration:none}
.side{grid-template-columns:1fr}.scroll{overflow:visible}section{break-inside:auto}tr{break-inside:avoid}h2{break-after:avoid}@page{margin:12mm}}
</style>
</head>
<body>
<main>
<header class="page">
<h1>attend: experiments</h1>
HEAD
printf '<p>Every table of %s beside the papers&#39; numbers' "$(esc "$TABLES")"
[ -n "$RUNS" ] && printf ', and the reproduction in %s' "$(esc "$RUNS")"
printf '. Written %s by experiments/index.sh.</p>\n</header>\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"

printf '<nav class="toc">'
[ -n "$RUNS" ] && printf '<a href="#reproduction">Reproduction</a>'
for md in "$TABLES"/*.md; do
    [ -f "$md" ] || continue
    name=$(basename "$md" .md)
    printf '<a href="#t-%s">%s</a>' "$(esc "$name")" "$(esc "$name")"
done
printf '</nav>\n'

if [ -n "$RUNS" ]; then
    printf '<section id="reproduction">\n<h2>Reproduction: %s</h2>\n' "$(esc "$RUNS")"
    if [ -f "$RUNS/steps.tsv" ]; then
        printf '<div class="scroll"><table><thead><tr><th>step</th><th>status</th><th>wall time (s)</th><th>command</th></tr></thead><tbody>\n'
        while IFS='	' read -r step status secs cmd; do
            printf '<tr><td>%s</td><td>%s</td><td class="num">%s</td><td><code>%s</code></td></tr>\n' \
                "$(esc "$step")" "$(esc "$status")" "$(esc "$secs")" "$(esc "$cmd")"
        done < "$RUNS/steps.tsv"
        printf '</tbody></table></div>\n'
    fi
    reports=$(find "$RUNS" -name report.html -type f 2>/dev/null | LC_ALL=C sort)
    if [ -n "$reports" ]; then
        printf '<p>Reports of its runs:</p>\n<ul>\n'
        printf '%s\n' "$reports" | while IFS= read -r r; do
            run=$(dirname "$r")
            printf '<li><a href="%s">%s</a></li>\n' "$(urlenc "$(rel "$r")")" "$(esc "${run#"$RUNS"/}")"
        done
        printf '</ul>\n'
    else
        printf '<p class="note">No report.html under it yet.</p>\n'
    fi
    printf '</section>\n'
fi

for md in "$TABLES"/*.md; do
    [ -f "$md" ] || continue
    name=$(basename "$md" .md)
    printf '<section id="t-%s">\n<div class="side">\n<div>\n' "$(esc "$name")"
    awk -v shift=1 -f "$md2html" "$md"
    if [ -n "$RUNS" ] && [ -f "$RUNS/tables/$name.md" ]; then
        printf '<h3>This reproduction (%s)</h3>\n' "$(esc "$RUNS/tables/$name.md")"
        awk -v shift=3 -f "$md2html" "$RUNS/tables/$name.md"
    fi
    printf '</div>\n<aside class="paper">\n<h3>The papers</h3>\n'
    section=$(paper_section "$name")
    if [ -n "$section" ]; then
        printf '%s\n' "$section" | awk -v shift=2 -f "$md2html"
    else
        printf '<p class="note">No entry for %s in %s.</p>\n' "$(esc "$name")" "$(esc "$PAPERS")"
    fi
    printf '</aside>\n</div>\n</section>\n'
done
printf '</main>\n</body>\n</html>\n'
} > "$tmp"
mv "$tmp" "$OUT"
trap - EXIT
echo "index.sh: wrote $OUT" >&2
