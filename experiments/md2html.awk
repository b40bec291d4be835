# md2html.awk: the markdown of experiments/results/*.md as an HTML fragment, for the
# index that experiments/index.sh writes. POSIX awk.
#
#   awk -f experiments/md2html.awk [-v shift=1] FILE.md
#
# Handles what those files use: "#" headings (shifted down by `shift` levels, default 1,
# so a file's "#" becomes <h2>), paragraphs, "- " lists, pipe tables (a header row, a
# "|---|" row, body rows; cells that are numbers are right-aligned), indented (4 spaces)
# and fenced (```) code blocks, and `code` spans (also across the lines of a paragraph). Text is HTML-escaped (& < >, and " in
# nothing but text); no raw HTML passes through. Wide tables sit in a scrolling box.

function esc(s) {
    gsub(/&/, "\\&amp;", s)
    gsub(/</, "\\&lt;", s)
    gsub(/>/, "\\&gt;", s)
    return s
}

# Escapes s and turns `code` spans into <code> (an unpaired backtick stays as it is).
function inline(s,    out, i, j) {
    s = esc(s)
    out = ""
    while ((i = index(s, "`")) > 0) {
        j = index(substr(s, i + 1), "`")
        if (j == 0) break
        out = out substr(s, 1, i - 1) "<code>" substr(s, i + 1, j - 1) "</code>"
        s = substr(s, i + j + 1)
    }
    return out s
}

function trim(s) {
    sub(/^[ \t]+/, "", s)
    sub(/[ \t]+$/, "", s)
    return s
}

function close_blocks() {
    if (para != "") { print "<p>" inline(para) "</p>"; para = "" }
    if (in_list) { print "</ul>"; in_list = 0 }
    if (in_table) { print "</tbody></table></div>"; in_table = 0 }
    if (in_code) { print "</pre>"; in_code = 0 }
}

# The cells of a table row "| a | b |" into cells[1..n]; returns n.
function row_cells(line, cells,    n, k, parts) {
    line = trim(line)
    sub(/^\|/, "", line)
    sub(/\|$/, "", line)
    n = split(line, parts, "|")
    for (k = 1; k <= n; k++) cells[k] = trim(parts[k])
    return n
}

# Numbers (also "89.21 (10)") and dates are right-aligned and never wrapped.
function is_number(s) {
    return s ~ /^[-+]?[0-9][0-9,]*(\.[0-9]+)?([eE][-+]?[0-9]+)?( \([0-9]+\))?$/ ||
           s ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$/
}

BEGIN {
    if (shift == "") shift = 1
    para = ""; in_list = 0; in_table = 0; in_code = 0; fenced = 0; header = ""
}

fenced {
    if ($0 ~ /^```/) { print "</pre>"; fenced = 0; next }
    print esc($0)
    next
}

/^```/ { close_blocks(); printf "<pre>"; fenced = 1; next }

/^    / && !in_table && !in_list && para == "" {
    if (!in_code) { close_blocks(); printf "<pre>"; in_code = 1 }
    line = $0
    sub(/^    /, "", line)
    print esc(line)
    next
}

in_code && !/^    / && !/^[ \t]*$/ { print "</pre>"; in_code = 0 }

/^[ \t]*$/ {
    if (in_code) { print ""; next }
    close_blocks()
    next
}

/^#+ / {
    close_blocks()
    level = index($0, " ") - 1 + shift
    if (level > 6) level = 6
    text = $0
    sub(/^#+ /, "", text)
    printf "<h%d>%s</h%d>\n", level, inline(text), level
    next
}

/^[ \t]*\|/ {
    if (!in_table) {
        close_blocks()
        n = row_cells($0, cells)
        header = "<div class=\"scroll\"><table><thead><tr>"
        for (k = 1; k <= n; k++) header = header "<th>" inline(cells[k]) "</th>"
        header = header "</tr></thead><tbody>"
        in_table = 1
        seen_rule = 0
        next
    }
    if (!seen_rule && $0 ~ /^[ \t]*\|[-:| \t]+\|?[ \t]*$/) {
        print header
        seen_rule = 1
        next
    }
    if (!seen_rule) { print header; seen_rule = 1 }
    n = row_cells($0, cells)
    printf "<tr>"
    for (k = 1; k <= n; k++) {
        if (is_number(cells[k])) printf "<td class=\"num\">%s</td>", inline(cells[k])
        else printf "<td>%s</td>", inline(cells[k])
    }
    print "</tr>"
    next
}

/^- / {
    if (para != "") { print "<p>" inline(para) "</p>"; para = "" }
    if (in_table) { print "</tbody></table></div>"; in_table = 0 }
    if (!in_list) { print "<ul>"; in_list = 1 }
    text = $0
    sub(/^- /, "", text)
    print "<li>" inline(text) "</li>"
    next
}

{
    if (in_table) { print "</tbody></table></div>"; in_table = 0 }
    if (in_list && $0 ~ /^  /) { print "<li class=\"cont\">" inline(trim($0)) "</li>"; next }
    if (in_list) { print "</ul>"; in_list = 0 }
    para = para (para == "" ? "" : "\n") trim($0)
}

END { close_blocks(); if (fenced) print "</pre>" }
