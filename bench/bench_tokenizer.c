// bench_tokenizer.c [FILE]: caption tokenisation speed (seq/tokenizer.h), tokens per second.
//
// FILE: captions, one per line (a TSV line counts its second column); without it, a
// built-in set of COCO-style captions. Times tokenize() over the whole set, repeated for at
// least a second after a warm-up, and prints captions/s, tokens/s and MB/s on stdout.
// Without FILE, two long captions follow, each timed the same way on one line of its own:
// one of 1 MB (the built-in captions joined by spaces, over and over) and one of 4,096
// bytes of "&a" repeated, a run without spaces on which every lexeme tries the rules that
// scan the whole run (seq/ptb_lexer.h: their ends are found once per text; before, 400 KB
// of it took `caption score` about 20 s). Both should take time linear in their length.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"
#include "seq/tokenizer.h"

static const char *const builtin[] = {
    "A man riding a wave on top of a surfboard.",
    "Two dogs playing with a frisbee in the park",
    "A kitchen with stainless steel appliances and a wooden table.",
    "The cat is sitting on the laptop's keyboard.",
    "A group of people standing around a red double-decker bus",
    "A close-up of a pizza with mushrooms, olives and peppers.",
    "An old black-and-white photo of a train at the station",
    "A woman holding an umbrella in the rain (on a city street).",
    "Kids don't like broccoli; they're eating it anyway!",
    "A plate of food: rice, beans and a salad at 12:30 p.m.",
    "Mr. Smith's horse grazing near the U.S. flag",
    "a giraffe standing next to a tree in a field",
};

// Reads FILE into captions (one per line; the second column of a TSV line).
static char **read_captions(const char *path, int *n) {
    FILE *fp = fopen(path, "rb");
    CHECK(fp, "cannot open %s", path);
    char line[8192];
    int cap = 1024;
    char **out = xmalloc((size_t)cap * sizeof *out);
    *n = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = 0;
        char *text = line, *tab = strchr(line, '\t');
        if (tab) {
            text = tab + 1;
            text[strcspn(text, "\t")] = 0;
        }
        if (*n == cap) out = xrealloc(out, (size_t)(cap *= 2) * sizeof *out);
        out[(*n)++] = xstrdup(text);
    }
    fclose(fp);
    return out;
}

// One pass over the captions; returns the tokens made (kept, and dropped past
// TOKENIZE_MAX_TOKENS).
static long pass(char *const *caps, int n) {
    long tokens = 0;
    for (int i = 0; i < n; i++) {
        Tokens t;
        Error err;
        CHECK(tokenize(&t, caps[i], TOKENIZE_MAX_TOKENS, &err) == 0, "%s", err.msg);
        tokens += t.n + t.dropped;
        tokens_free(&t);
    }
    return tokens;
}

// Times tokenize() on one caption of bytes bytes: pattern repeated, or (NULL) the built-in
// captions joined by spaces, over and over; one line on stdout.
static void bench_long(const char *what, size_t bytes, const char *pattern) {
    char *text = xmalloc(bytes + 1);
    size_t k = 0;
    for (int i = 0; k < bytes; i++) {
        const char *piece = pattern ? pattern : builtin[i % (int)(sizeof builtin / sizeof *builtin)];
        for (const char *p = piece; *p && k < bytes; p++) text[k++] = *p;
        if (!pattern && k < bytes) text[k++] = ' ';
    }
    text[k] = 0;
    char *one[1] = {text};
    pass(one, 1);  // warm-up
    long tokens = 0, passes = 0;
    double t0 = timer_now(), dt;
    do {
        tokens += pass(one, 1);
        passes++;
        dt = timer_now() - t0;
    } while (dt < 1.0);
    printf("tokenizer: %s: %.3f s a caption, %.0f tokens/s, %.2f MB/s (%ld passes)\n", what,
           dt / passes, tokens / dt, passes * (double)bytes / dt / 1e6, passes);
    free(text);
}

int main(int argc, char **argv) {
    int n;
    char **caps;
    if (argc > 1) {
        caps = read_captions(argv[1], &n);
    } else {
        n = (int)(sizeof builtin / sizeof *builtin);
        caps = xmalloc((size_t)n * sizeof *caps);
        for (int i = 0; i < n; i++) caps[i] = xstrdup(builtin[i]);
    }
    size_t bytes = 0;
    for (int i = 0; i < n; i++) bytes += strlen(caps[i]);
    pass(caps, n);  // warm-up
    long tokens = 0, passes = 0;
    double t0 = timer_now(), dt;
    do {
        tokens += pass(caps, n);
        passes++;
        dt = timer_now() - t0;
    } while (dt < 1.0);
    printf("tokenizer: %d captions (%s), %.0f captions/s, %.0f tokens/s, %.1f MB/s (%ld passes, %.2f s)\n",
           n, argc > 1 ? argv[1] : "built-in", passes * n / dt, tokens / dt, passes * (double)bytes / dt / 1e6,
           passes, dt);
    for (int i = 0; i < n; i++) free(caps[i]);
    free(caps);
    if (argc == 1) {
        bench_long("one 1 MB caption (the built-in captions joined)", 1 << 20, NULL);
        bench_long("one 4096-byte caption of \"&a\" (the longest caption score takes)", 4096, "&a");
    }
    return 0;
}
