// imagefolder.c: see imagefolder.h.
#include "datasets/imagefolder.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// Debian's libstb ships the implementation; only the declarations are wanted here.
#include <stb_image.h>

#include "core/check.h"

int image_name_has_image_ext(const char *name) {
    static const char *const exts[] = {"png", "jpg", "jpeg", "bmp", "gif", "tga",
                                       "psd", "pnm", "ppm",  "pgm", "pic", "hdr"};
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        const char *e = exts[i];
        size_t n = strlen(e);
        if (strlen(dot + 1) != n) continue;
        size_t k = 0;
        while (k < n && tolower((unsigned char)dot[1 + k]) == e[k]) k++;
        if (k == n) return 1;
    }
    return 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void image_folder_free(ImageFolder *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) {
        free(f->paths[i]);
        free(f->names[i]);
    }
    free(f->paths);
    free(f->names);
    memset(f, 0, sizeof *f);
}

int image_folder_list(ImageFolder *f, const char *dir, Error *err) {
    memset(f, 0, sizeof *f);
    DIR *d = opendir(dir);
    if (!d) return error_set(err, "%s: cannot open folder: %s", dir, strerror(errno));
    size_t dlen = strlen(dir);
    const char *sep = (dlen > 0 && dir[dlen - 1] == '/') ? "" : "/";
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;  // hidden files, "." and ".."
        size_t plen = dlen + strlen(sep) + strlen(e->d_name) + 1;
        char *path = xmalloc(plen);
        snprintf(path, plen, "%s%s%s", dir, sep, e->d_name);
        struct stat st;
        int keep = stat(path, &st) == 0 && S_ISREG(st.st_mode);
        if (keep && !image_name_has_image_ext(e->d_name)) {
            int w, h, comp;
            keep = stbi_info(path, &w, &h, &comp) != 0;
        }
        free(path);
        if (!keep) {
            f->n_ignored++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = xrealloc(names, (size_t)cap * sizeof *names);
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (n == 0) {
        int ignored = f->n_ignored;
        free(names);
        return error_set(err, "%s: no image files in the folder (%d other entr%s)", dir, ignored,
                         ignored == 1 ? "y" : "ies");
    }
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    f->names = names;
    f->paths = xmalloc((size_t)n * sizeof *f->paths);
    for (int i = 0; i < n; i++) {
        size_t plen = dlen + strlen(sep) + strlen(names[i]) + 1;
        f->paths[i] = xmalloc(plen);
        snprintf(f->paths[i], plen, "%s%s%s", dir, sep, names[i]);
    }
    f->n = n;
    return 0;
}
