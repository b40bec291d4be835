// test_fuzz_seeds.c: the committed seed corpora (tests/fuzz/corpus/NAME/) are exactly what
// tests/fuzz/make_seeds.c writes through the library today: the same files, byte for byte.
// So `make fuzz-seeds` (which only the fuzz build runs) still compiles against the current
// library, and a change to a writer or a file format that would make the seeds stale fails
// here rather than months later in a fuzzing session. Run from the repository root.

#define MAKE_SEEDS_NO_MAIN
#include "tests/fuzz/make_seeds.c"

#include <dirent.h>

#include "tests/support/scratch.h"
#include "tests/support/test.h"

static const char *const targets[] = {"image",   "idx",       "captions", "safetensors", "tokenizer",
                                      "encoder", "featcache", "classify", "draw",
                                      "eval_record", "sentences", "pairs", "text", "bpe"};
enum { TARGET_COUNT = sizeof targets / sizeof targets[0] };

static char g_dir[256];

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The sorted file names of dir (none if it does not exist); *n gets their count.
static char **list_dir(const char *dir, int *n) {
    char **names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        names = xrealloc(names, (size_t)(*n + 1) * sizeof *names);
        names[(*n)++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (*n > 1) qsort(names, (size_t)*n, sizeof *names, cmp_str);
    return names;
}

static void free_names(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

// 1 when the two files hold the same bytes; a failure names the first that differs.
static int same_file(const char *a, const char *b) {
    unsigned char *x, *y;
    size_t nx, ny;
    Error err = {{0}};
    if (file_read_all(a, &x, &nx, 0, &err) != 0) {
        EXPECT(0, "%s", err.msg);
        return 0;
    }
    if (file_read_all(b, &y, &ny, 0, &err) != 0) {
        free(x);
        EXPECT(0, "%s", err.msg);
        return 0;
    }
    int same = nx == ny && memcmp(x, y, nx) == 0;
    free(x);
    free(y);
    return same;
}

static void test_corpus_is_what_make_seeds_writes(void) {
    write_seeds(g_dir);
    for (int t = 0; t < TARGET_COUNT; t++) {
        char fresh_dir[300], kept_dir[300];
        snprintf(fresh_dir, sizeof fresh_dir, "%s/%s", g_dir, targets[t]);
        snprintf(kept_dir, sizeof kept_dir, "tests/fuzz/corpus/%s", targets[t]);
        int n_fresh, n_kept;
        char **fresh = list_dir(fresh_dir, &n_fresh);
        char **kept = list_dir(kept_dir, &n_kept);
        EXPECT(n_fresh > 0, "make_seeds wrote no %s seeds", targets[t]);
        EXPECT(n_kept == n_fresh, "%s: %d seeds kept, make_seeds writes %d (run make fuzz-seeds)",
               kept_dir, n_kept, n_fresh);
        for (int i = 0; i < n_fresh && i < n_kept; i++) {
            char a[600], b[600];
            snprintf(a, sizeof a, "%s/%s", fresh_dir, fresh[i]);
            snprintf(b, sizeof b, "%s/%s", kept_dir, kept[i]);
            if (strcmp(fresh[i], kept[i]) != 0) {
                EXPECT(0, "%s: kept seed %s, make_seeds writes %s (run make fuzz-seeds)", kept_dir,
                       kept[i], fresh[i]);
                break;
            }
            EXPECT(same_file(a, b), "%s differs from what make_seeds writes (run make fuzz-seeds)", b);
        }
        free_names(fresh, n_fresh);
        free_names(kept, n_kept);
    }
}

int main(void) {
    if (scratch_make(g_dir, sizeof g_dir, "test_fuzz_seeds")) return 1;
    RUN(test_corpus_is_what_make_seeds_writes);
    scratch_remove(g_dir);
    return test_summary();
}
