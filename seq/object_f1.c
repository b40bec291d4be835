// object_f1.c: see object_f1.h.
#include "seq/object_f1.h"

#include <string.h>

#include "core/check.h"

// The index of word in list (n), or -1.
static int lookup(const char *word, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(word, list[i])) return i;
    return -1;
}

static int same(ObjectName a, ObjectName b) { return a.colour == b.colour && a.cls == b.cls; }

// 1 when set (n) holds o.
static int holds(const ObjectName *set, int n, ObjectName o) {
    for (int i = 0; i < n; i++)
        if (same(set[i], o)) return 1;
    return 0;
}

int object_names_add(ObjectName *set, int n_set, int cap, ObjectName o) {
    if (holds(set, n_set, o)) return n_set;
    CHECK(n_set < cap, "object set full (%d)", cap);
    set[n_set] = o;
    return n_set + 1;
}

int object_names_parse(ObjectName *out, int cap, char *const *words, int n,
                       const ObjectLexicon *lex) {
    CHECK(n >= 0 && cap >= n / 2 && (n == 0 || words));
    int stored = 0;
    for (int w = 0; w + 1 < n; w++) {
        int colour = lookup(words[w], lex->colours, lex->n_colours);
        if (colour < 0) continue;
        int cls = lookup(words[w + 1], lex->classes, lex->n_classes);
        if (cls < 0) continue;  // "a red left of ...": names nothing
        stored = object_names_add(out, stored, cap, (ObjectName){colour, cls});
        w++;  // the class word is used: it cannot start a name
    }
    return stored;
}

// Distinct entries of a (n).
static int distinct(const ObjectName *a, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += !holds(a, i, a[i]);
    return k;
}

void object_counts(ObjectCounts *c, const ObjectName *named, int n_named,
                   const ObjectName *truth, int n_truth) {
    CHECK(c && n_named >= 0 && n_truth >= 0);
    c->named = distinct(named, n_named);
    c->truth = distinct(truth, n_truth);
    c->right = 0;
    for (int i = 0; i < n_named; i++)
        c->right += !holds(named, i, named[i]) && holds(truth, n_truth, named[i]);
}

void object_f1(ObjectF1 *r, const ObjectCounts *per_image, int n) {
    CHECK(r && n >= 0 && (n == 0 || per_image));
    r->named = r->truth = r->right = 0;
    for (int i = 0; i < n; i++) {
        CHECK(per_image[i].right <= per_image[i].named && per_image[i].right <= per_image[i].truth);
        r->named += per_image[i].named;
        r->truth += per_image[i].truth;
        r->right += per_image[i].right;
    }
    r->precision = r->named ? (double)r->right / (double)r->named : 0.0;
    r->recall = r->truth ? (double)r->right / (double)r->truth : 0.0;
    double s = r->precision + r->recall;
    r->f1 = s > 0 ? 2.0 * r->precision * r->recall / s : 0.0;
}
